package asm

import (
	"fmt"
	"math"
)

// The bounds-checking layer. Every exported kernel of every ISA calls one of
// the check functions below before its unexported assembly body, so a length
// or stride bug in a caller panics here, in Go, with a message naming the
// kernel and the operand, instead of reaching assembly that would read or
// write out of bounds. The checks are the same for every ISA (one file, no
// build tags, tested on every GOARCH by bounds_test.go).
//
// A check returns false when the shape is empty (some dimension is 0): the
// kernel then does nothing and the assembly is not called. Negative
// dimensions or strides, and shapes whose extent overflows int, panic.

// maxDim bounds every dimension and stride so that the index arithmetic
// below cannot overflow int (2^31 · 2^31 fits in 63 bits for the products
// the checks form, which have at most two large factors). On a 32-bit
// GOARCH it is math.MaxInt (2^31 − 1), the largest an int holds; there the
// package has no assembly to guard (the checks run only in its tests), and
// a product of two large factors can wrap.
const maxDim = min(1<<31, math.MaxInt)

// BoundsError is the panic value of a failed check.
type BoundsError struct {
	Kernel string // e.g. "GemvN"
	What   string // the operand or argument, e.g. "a" or "lda"
	Need   int    // the length needed (or the bad value)
	Have   int    // the length there is
}

// Error formats the failure.
func (e BoundsError) Error() string {
	if e.Have < 0 {
		return fmt.Sprintf("asm.%s: bad argument %s = %d", e.Kernel, e.What, e.Need)
	}
	return fmt.Sprintf("asm.%s: %s holds %d values, the kernel touches %d", e.Kernel, e.What, e.Have, e.Need)
}

// dims panics if any argument is negative or too large and reports whether
// all of them are positive.
func dims(kernel string, vals ...int) bool {
	pos := true
	for _, v := range vals {
		if v < 0 || v > maxDim {
			panic(BoundsError{Kernel: kernel, What: "dimension or stride", Need: v, Have: -1})
		}
		if v == 0 {
			pos = false
		}
	}
	return pos
}

// strides panics if any stride is negative or too large (0 is allowed).
func strides(kernel string, vals ...int) {
	for _, v := range vals {
		if v < 0 || v > maxDim {
			panic(BoundsError{Kernel: kernel, What: "stride", Need: v, Have: -1})
		}
	}
}

// need panics unless s holds index last (that is, n = last+1 values).
func need[T any](kernel, what string, s []T, last int) {
	if last < 0 || last >= len(s) {
		panic(BoundsError{Kernel: kernel, What: what, Need: last + 1, Have: len(s)})
	}
}

// checkGemv checks y += A·x (trans false: x has n values, y m) or
// y += Aᵀ·x (trans true: x has m, y n) for the m×n A of row stride lda.
func checkGemv(kernel string, trans bool, m, n int, a []float32, lda int, x, y []float32) bool {
	strides(kernel, lda)
	if !dims(kernel, m, n) {
		return false
	}
	need(kernel, "a", a, (m-1)*lda+n-1)
	if trans {
		need(kernel, "x", x, m-1)
		need(kernel, "y", y, n-1)
	} else {
		need(kernel, "x", x, n-1)
		need(kernel, "y", y, m-1)
	}
	return true
}

// checkGer checks A += x·yᵀ for the m×n A of row stride lda.
func checkGer(kernel string, m, n int, x, y, a []float32, lda int) bool {
	strides(kernel, lda)
	if !dims(kernel, m, n) {
		return false
	}
	need(kernel, "a", a, (m-1)*lda+n-1)
	need(kernel, "x", x, m-1)
	need(kernel, "y", y, n-1)
	return true
}

// checkMulAddRows checks y[c] += Σ_l a[l*lda+c]·x[l*ldx+c], l < k, c < n.
func checkMulAddRows(kernel string, k, n int, a []float32, lda int, x []float32, ldx int, y []float32) bool {
	strides(kernel, lda, ldx)
	if !dims(kernel, k, n) {
		return false
	}
	need(kernel, "a", a, (k-1)*lda+n-1)
	need(kernel, "x", x, (k-1)*ldx+n-1)
	need(kernel, "y", y, n-1)
	return true
}

// checkMulAddRowsBatch checks the batched mulAddRows of nb samples with
// k ≤ maxK shared rows of a: y[b*ystride+c] (+)= Σ_l a[l*lda+c]·x[b*xstride+l*ldx+c].
func checkMulAddRowsBatch(kernel string, maxK, nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int) bool {
	strides(kernel, lda, ldx, xstride, ystride)
	if k > maxK {
		panic(BoundsError{Kernel: kernel, What: "k (at most 8 rows per call)", Need: k, Have: -1})
	}
	if !dims(kernel, nb, k, n) {
		return false
	}
	need(kernel, "a", a, (k-1)*lda+n-1)
	need(kernel, "x", x, (nb-1)*xstride+(k-1)*ldx+n-1)
	need(kernel, "y", y, (nb-1)*ystride+n-1)
	return true
}

// checkCols checks operands of rows×n values each (softmax over columns,
// squash of n capsules of dimension rows).
func checkCols(kernel string, rows, n int, names string, ops ...[]float32) bool {
	if !dims(kernel, rows, n) {
		return false
	}
	for i, s := range ops {
		need(kernel, names[i:i+1], s, rows*n-1)
	}
	return true
}

// checkSquashKind panics unless kind is 0 (Mazzia) or 1 (Sabour).
func checkSquashKind(kernel string, kind int) {
	if kind != 0 && kind != 1 {
		panic(BoundsError{Kernel: kernel, What: "kind", Need: kind, Have: -1})
	}
}

// groupRows returns ng·d, the rows of a grouped kernel's matrix, and
// panics if it is larger than maxDim: (ng·d−1)·lda would otherwise have
// three large factors and could wrap.
func groupRows(kernel string, ng, d int) int {
	if d > 0 && ng > maxDim/d {
		panic(BoundsError{Kernel: kernel, What: "groups × rows", Need: ng, Have: -1})
	}
	return ng * d
}

// stridedLast is the last index of an operand read as element (j, k) at
// j·s + k·sk for j < ng, k < d.
func stridedLast(ng, d, s, sk int) int { return (ng-1)*s + (d-1)*sk }

// checkGerGroups checks the grouped rank-1 (or rank-2, with x2 and y2
// non-nil) update a[(j*d+k)*lda+c] += x[j*xs+k*xk]·y[j*ldy+c].
func checkGerGroups(kernel string, ng, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int, two bool) bool {
	strides(kernel, xs, xk, ldy, lda)
	if !dims(kernel, ng, d, n) {
		return false
	}
	need(kernel, "a", a, (groupRows(kernel, ng, d)-1)*lda+n-1)
	need(kernel, "x", x, stridedLast(ng, d, xs, xk))
	need(kernel, "y", y, (ng-1)*ldy+n-1)
	if two {
		need(kernel, "x2", x2, stridedLast(ng, d, xs, xk))
		need(kernel, "y2", y2, (ng-1)*ldy+n-1)
	}
	return true
}

// checkGemvTGroups checks y[j*ldy+c] += Σ_k x[j*xs+k*xk]·a[(j*d+k)*lda+c].
func checkGemvTGroups(kernel string, ng, d, n int, a []float32, lda int, x []float32, xs, xk int, y []float32, ldy int) bool {
	strides(kernel, lda, xs, xk, ldy)
	if !dims(kernel, ng, d, n) {
		return false
	}
	need(kernel, "a", a, (groupRows(kernel, ng, d)-1)*lda+n-1)
	need(kernel, "x", x, stridedLast(ng, d, xs, xk))
	need(kernel, "y", y, (ng-1)*ldy+n-1)
	return true
}

// checkGemvNGroups checks y[j*ys+k*yk] += Σ_c a[(j*d+k)*lda+c]·x[j*ldx+c].
func checkGemvNGroups(kernel string, ng, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int) bool {
	strides(kernel, lda, ldx, ys, yk)
	if !dims(kernel, ng, d, n) {
		return false
	}
	need(kernel, "a", a, (groupRows(kernel, ng, d)-1)*lda+n-1)
	need(kernel, "x", x, (ng-1)*ldx+n-1)
	need(kernel, "y", y, stridedLast(ng, d, ys, yk))
	return true
}

// checkExp checks y = exp(x) elementwise: y holds at least len(x) values.
func checkExp(kernel string, x, y []float32) bool {
	if len(x) == 0 {
		return false
	}
	need(kernel, "y", y, len(x)-1)
	return true
}

// checkSgemmKernel checks an mr×nr GEMM micro-kernel call on packed panels:
// a holds kc·mr values, b kc·nr, c (mr−1)·ldc+nr. It never returns false:
// kc = 0 still scales the tile of C by beta.
func checkSgemmKernel(kernel string, mr, nr, kc int, a, b, c []float32, ldc int) bool {
	strides(kernel, ldc)
	if ldc < nr {
		panic(BoundsError{Kernel: kernel, What: "ldc (less than the tile width)", Need: ldc, Have: -1})
	}
	if dims(kernel, kc) { // kc = 0 is valid: C = beta·C
		need(kernel, "a", a, kc*mr-1)
		need(kernel, "b", b, kc*nr-1)
	}
	need(kernel, "c", c, (mr-1)*ldc+nr-1)
	return true
}

// checkGemmI8Kernel checks an int8 micro-kernel of mr rows (1 ≤ mr ≤ maxMR)
// and nr columns: a holds (mr−1)·lda + 4·kg values, tail none or at least
// mr, b the groups read (kg, plus one when tail is given) with groupBytes
// bytes between groups and used bytes in each, corr nCorr values and c
// (mr−1)·ldc + nr. The shape is never empty (mr ≥ 1), so it never returns
// false.
func checkGemmI8Kernel(kernel string, maxMR, nr, used, nCorr, mr, kg int, a []int8, lda int, tail []uint32, b []int8, corr []int32, c []int32, ldc int) bool {
	if mr < 1 || mr > maxMR {
		panic(BoundsError{Kernel: kernel, What: "mr", Need: mr, Have: -1})
	}
	dims(kernel, kg)
	strides(kernel, lda, ldc)
	if ldc < nr {
		panic(BoundsError{Kernel: kernel, What: "ldc (less than the tile width)", Need: ldc, Have: -1})
	}
	if kg > 0 {
		need(kernel, "a", a, (mr-1)*lda+4*kg-1)
	}
	groups := kg
	if len(tail) > 0 {
		need(kernel, "tail", tail, mr-1)
		groups++
	}
	if groups > 0 {
		need(kernel, "b", b, (groups-1)*I8GroupBytes+used-1)
	}
	if nCorr > 0 {
		need(kernel, "corr", corr, nCorr-1)
	}
	need(kernel, "c", c, (mr-1)*ldc+nr-1)
	return true
}

// checkBiasAct checks a biasAct call: y holds the rows×n matrix of row
// stride ldy, bias one value per row. It panics on a negative or too large
// argument or a short operand and returns false on an empty shape.
func checkBiasAct(kernel string, rows, n int, y []float32, ldy int, bias []float32) bool {
	strides(kernel, ldy)
	if !dims(kernel, rows, n) {
		return false
	}
	need(kernel, "y", y, (rows-1)*ldy+n-1)
	need(kernel, "bias", bias, rows-1)
	return true
}

// checkCompactAct checks a compactAct call: y holds the ch·rows×n
// dense output, src the ch channels of rows rows (channel stride ldc, row
// stride lds), bias one value per channel. It panics on a negative or too
// large argument or a short operand and returns false on an empty shape.
func checkCompactAct(kernel string, ch, rows, n int, y, src []float32, lds, ldc int, bias []float32) bool {
	strides(kernel, lds, ldc)
	if !dims(kernel, ch, rows, n) {
		return false
	}
	if rows*n > maxDim { // so that ch·rows·n cannot overflow
		panic(BoundsError{Kernel: kernel, What: "rows×n", Need: rows * n, Have: -1})
	}
	need(kernel, "y", y, ch*rows*n-1)
	need(kernel, "src", src, (ch-1)*ldc+(rows-1)*lds+n-1)
	need(kernel, "bias", bias, ch-1)
	return true
}

// checkDeinterleaveRows checks a deinterleaveRows call: src holds rows
// rows of n values (row stride lds), d0 and d1 rows of ⌈n/2⌉ values (row
// stride ldd). It panics on a negative or too large argument or a short
// operand and returns false on an empty shape.
func checkDeinterleaveRows(kernel string, rows, n int, src []float32, lds int, d0, d1 []float32, ldd int) bool {
	strides(kernel, lds, ldd)
	if !dims(kernel, rows, n) {
		return false
	}
	need(kernel, "src", src, (rows-1)*lds+n-1)
	need(kernel, "d0", d0, (rows-1)*ldd+(n+1)/2-1)
	need(kernel, "d1", d1, (rows-1)*ldd+(n+1)/2-1)
	return true
}

// checkTranspose16 checks a transpose16 call: src holds 16 channels
// (stride lds) of rows rows (stride srow) of n values, dst rows rows
// (stride drow) of n positions (stride ldd) of 16 values. It panics on a
// negative or too large argument or a short operand and returns false on
// an empty shape.
func checkTranspose16(kernel string, rows, n int, src []float32, lds, srow int, dst []float32, ldd, drow int) bool {
	strides(kernel, lds, srow, ldd, drow)
	if !dims(kernel, rows, n) {
		return false
	}
	need(kernel, "src", src, 15*lds+(rows-1)*srow+n-1)
	need(kernel, "dst", dst, (rows-1)*drow+(n-1)*ldd+15)
	return true
}

// checkReluMask checks a reluMask call: y, dy and dx hold n values each.
func checkReluMask(kernel string, n int, y, dy, dx []float32) bool {
	if !dims(kernel, n) {
		return false
	}
	need(kernel, "y", y, n-1)
	need(kernel, "dy", dy, n-1)
	need(kernel, "dx", dx, n-1)
	return true
}

// checkAdamStep checks an adamStep call: w, g, m and v hold n values each,
// and so does h unless it is empty.
func checkAdamStep(kernel string, n int, w, g, h, m, v []float32) bool {
	if !dims(kernel, n) {
		return false
	}
	need(kernel, "w", w, n-1)
	need(kernel, "g", g, n-1)
	if len(h) > 0 {
		need(kernel, "h", h, n-1)
	}
	need(kernel, "m", m, n-1)
	need(kernel, "v", v, n-1)
	return true
}
