package kernels

import (
	"fmt"
	"math"
)

// Sgemm computes C = alpha·op(A)·op(B) + beta·C on row-major matrices, where
// op(X) is X, or Xᵀ when the matching trans flag is set. op(A) is m×k, op(B)
// is k×n and C is m×n; lda, ldb and ldc are the row strides of A, B and C as
// stored. When beta is 0, C is overwritten and never read (NaN or Inf in C do
// not propagate), as in BLAS. NaN and Inf in A or B propagate as in IEEE
// arithmetic. m, n or k of 0 are valid: with k = 0 the result is beta·C.
//
// It runs on one goroutine, does not allocate, and returns an error (never
// panics) when a dimension is negative, a stride is too small or a slice is
// too short.
func Sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) error {
	if err := sgemmCheck(transA, transB, m, n, k, a, lda, b, ldb, c, ldc); err != nil {
		return err
	}
	if m == 0 || n == 0 {
		return nil
	}
	if sgemmByRows(transA, transB, m, k, alpha) {
		sgemmGemvRows(m, n, k, a, lda, b, ldb, beta, c, ldc)
		return nil
	}
	cur.sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	return nil
}

// sgemmGemvMaxRows is the largest m that sgemmByRows hands to the
// matrix-vector kernel: a fully connected layer at batch 1 or 2, where the
// blocked driver would pack the whole weight matrix to use each packed
// value once or twice (the deep model's decoder ran at 2 GFLOP/s at batch
// 1; its GEMV reads the weights once per row, at memory speed).
const sgemmGemvMaxRows = 2

// sgemmByRows reports whether C = A·Bᵀ runs row by row on the gemvN
// primitive: A not transposed, B transposed (both then contiguous along
// k), alpha 1, at most sgemmGemvMaxRows rows, on an implementation with a
// blocked driver (the reference keeps its loops).
func sgemmByRows(transA, transB bool, m, k int, alpha float32) bool {
	return !transA && transB && alpha == 1 && m <= sgemmGemvMaxRows && k > 0 && cur.sgemmDriver != nil
}

// sgemmGemvRows computes C = A·Bᵀ + beta·C one row at a time:
// C[i, :] = beta·C[i, :] + B·A[i, :] with B read as the n×k row-major
// matrix b (row stride ldb).
func sgemmGemvRows(m, n, k int, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		sgemmScaleC(1, n, beta, row, n)
		cur.gemvN(n, k, b, ldb, a[i*lda:i*lda+k], row)
	}
}

// SgemmWorkSize returns the number of float32 of work space SgemmWork needs
// for an m×n×k product: the packing buffers of the blocked driver, a
// function of its micro-kernel tile (mr×nr) and blocking (kc, mc, nc),
// clipped to the product. It is the largest over every implementation this
// binary can Use, so work sized once stays enough after kernels.Use; 0 for a
// negative dimension or a product small enough for the plain loops.
func SgemmWorkSize(m, n, k int) int {
	if m < 0 || n < 0 || k < 0 {
		return 0
	}
	ws := 0
	for _, o := range tables {
		ws = max(ws, o.sgemmWorkSize(m, n, k))
	}
	return ws
}

// SgemmWork is Sgemm with caller-owned work space: work (at least
// SgemmWorkSize(m, n, k) floats, contents ignored and clobbered) holds the
// packing buffers, so the product uses no memory outside its arguments (a
// static graph plans work as scratch in its arena). The result is bitwise
// that of Sgemm. A short work is an error.
func SgemmWork(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, work []float32) error {
	if err := sgemmCheck(transA, transB, m, n, k, a, lda, b, ldb, c, ldc); err != nil {
		return err
	}
	if ws := cur.sgemmWorkSize(m, n, k); len(work) < ws {
		return fmt.Errorf("kernels.SgemmWork: work has %d elements, SgemmWorkSize(%d, %d, %d) is %d", len(work), m, n, k, ws)
	}
	if m == 0 || n == 0 {
		return nil
	}
	if sgemmByRows(transA, transB, m, k, alpha) {
		sgemmGemvRows(m, n, k, a, lda, b, ldb, beta, c, ldc)
		return nil
	}
	cur.sgemmWork(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, work)
	return nil
}

// sgemmCheck validates the arguments of Sgemm and SgemmWork.
func sgemmCheck(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) error {
	if m < 0 || n < 0 || k < 0 {
		return fmt.Errorf("kernels.Sgemm: negative dimension m=%d n=%d k=%d", m, n, k)
	}
	ar, ac := m, k
	if transA {
		ar, ac = k, m
	}
	br, bc := k, n
	if transB {
		br, bc = n, k
	}
	if err := checkMatrix("A", a, ar, ac, lda); err != nil {
		return err
	}
	if err := checkMatrix("B", b, br, bc, ldb); err != nil {
		return err
	}
	return checkMatrix("C", c, m, n, ldc)
}

// checkMatrix verifies that x holds a rows×cols row-major matrix with row
// stride ld.
func checkMatrix(name string, x []float32, rows, cols, ld int) error {
	if ld < max(cols, 1) {
		return fmt.Errorf("kernels.Sgemm: ld%s=%d smaller than its %d columns", name, ld, cols)
	}
	if rows == 0 || cols == 0 {
		return nil
	}
	// (rows−1)·ld + cols must not wrap: a stride and a row count whose
	// product is past what an int holds describe no slice there is.
	if rows-1 > (math.MaxInt-cols)/ld {
		return fmt.Errorf("kernels.Sgemm: %s of %d rows with stride %d is larger than an int can index", name, rows, ld)
	}
	if need := (rows-1)*ld + cols; len(x) < need {
		return fmt.Errorf("kernels.Sgemm: %s has %d elements, a %d×%d matrix with stride %d needs %d", name, len(x), rows, cols, ld, need)
	}
	return nil
}
