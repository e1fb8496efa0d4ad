package kernels

import "fmt"

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
	if err := checkMatrix("C", c, m, n, ldc); err != nil {
		return err
	}
	if m == 0 || n == 0 {
		return nil
	}
	cur.sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
	return nil
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
	if need := (rows-1)*ld + cols; len(x) < need {
		return fmt.Errorf("kernels.Sgemm: %s has %d elements, a %d×%d matrix with stride %d needs %d", name, len(x), rows, cols, ld, need)
	}
	return nil
}
