package asm

import "math/bits"

// Fast paths of the bounds layer. The checks of bounds.go cost about 8 ns
// per call (variadic helpers, a non-inlined call of up to 19 arguments),
// which is a quarter of the time of the small grouped and batched calls the
// capsule layers make by the thousand. Each fastX below is a conservative
// pre-test of checkX: it returns true only for a non-empty shape whose
// every dimension is at most fastMax and every stride below it (so that no
// index product can overflow) and whose operands hold every index the
// kernel touches, that is only when checkX would return true. Each must
// stay within the compiler's inlining budget (check with
// go build -gcflags=-m ./asm/): a fast path that is not inlined is a call
// of up to 19 arguments, most of them on the stack (about 4 ns of the
// 17 ns of a MulAddRowsBatch of 4×8×16). Hence the terse forms: d-1 ≥ 0 folded
// into one unsigned range test, last+1 <= len instead of fits. Wrappers call
//
//	if fastX(...) || checkX(...) { kernel(...) }
//
// so that empty shapes, huge arguments and every error still go through
// checkX, which stays the one place that defines the contract and its
// panics. bounds_fast_test.go checks the implication on random shapes.

// fastMax bounds the dimensions and strides the fast paths accept: three
// of them multiplied stay far below 2^63 (2^20; 2^10 where int has 32
// bits, so that they stay below 2^31 there).
const fastMax = 1 << min(20, (bits.UintSize-2)/3)

// fits reports whether index last is inside s.
func fits(s []float32, last int) bool { return uint(last) < uint(len(s)) }

func fastGemv(trans bool, m, n int, a []float32, lda int, x, y []float32) bool {
	if uint(m|n|lda) >= fastMax || m == 0 || n == 0 || !fits(a, (m-1)*lda+n-1) {
		return false
	}
	if trans {
		m, n = n, m
	}
	return fits(x, n-1) && fits(y, m-1)
}

func fastGer(m, n int, x, y, a []float32, lda int) bool {
	return uint(m|n|lda) < fastMax && m > 0 && n > 0 &&
		fits(a, (m-1)*lda+n-1) && fits(x, m-1) && fits(y, n-1)
}

func fastMulAddRows(k, n int, a []float32, lda int, x []float32, ldx int, y []float32) bool {
	return uint(k|n|lda|ldx) < fastMax && k > 0 && n > 0 &&
		fits(a, (k-1)*lda+n-1) && fits(x, (k-1)*ldx+n-1) && fits(y, n-1)
}

func fastMulAddRowsBatch(maxK, nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int) bool {
	nb, k = nb-1, k-1 // last batch and row
	return uint(nb|k|(n-1)|lda|ldx|xstride|ystride) < fastMax && k < maxK &&
		k*lda+n <= len(a) && nb*xstride+k*ldx+n <= len(x) && nb*ystride+n <= len(y)
}

func fastCols2(rows, n int, p, q []float32) bool {
	return uint(rows|n) < fastMax && rows > 0 && n > 0 && fits(p, rows*n-1) && fits(q, rows*n-1)
}

func fastCols3(rows, n int, p, q, r []float32) bool {
	return fastCols2(rows, n, p, q) && fits(r, rows*n-1)
}

// fastGerGroups checks the pairs (x, y) and (x2, y2) of checkGerGroups with
// two; for one pair (two false) pass x2 = x and y2 = y.
func fastGerGroups(ng, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int) bool {
	lx, ly := (ng-1)*xs+(d-1)*xk, (ng-1)*ldy+n // wrapping is harmless: used only in range
	return uint((ng-1)|(d-1)|(n-1)|xs|xk|ldy|lda) < fastMax && (ng*d-1)*lda+n <= len(a) &&
		lx < min(len(x), len(x2)) && ly <= min(len(y), len(y2))
}

func fastGemvTGroups(ng, d, n int, a []float32, lda int, x []float32, xs, xk int, y []float32, ldy int) bool {
	return uint((ng-1)|(d-1)|(n-1)|lda|xs|xk|ldy) < fastMax &&
		(ng*d-1)*lda+n <= len(a) && (ng-1)*xs+(d-1)*xk < len(x) && (ng-1)*ldy+n <= len(y)
}

func fastGemvNGroups(ng, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int) bool {
	return uint((ng-1)|(d-1)|(n-1)|lda|ldx|ys|yk) < fastMax &&
		(ng*d-1)*lda+n <= len(a) && (ng-1)*ldx+n <= len(x) && (ng-1)*ys+(d-1)*yk < len(y)
}

// fastBiasAct is the fast path of checkBiasAct: true only when
// checkBiasAct would return true.
func fastBiasAct(rows, n int, y []float32, ldy int, bias []float32) bool {
	return uint(rows|n|ldy) < fastMax && rows > 0 && n > 0 && fits(y, (rows-1)*ldy+n-1) && fits(bias, rows-1)
}

// fastCompactAct is the fast path of checkCompactAct: true only when
// checkCompactAct would return true.
func fastCompactAct(ch, rows, n int, y, src []float32, lds, ldc int, bias []float32) bool {
	return uint(ch|rows|n|lds|ldc) < fastMax && ch > 0 && rows > 0 && n > 0 &&
		fits(y, ch*rows*n-1) && fits(src, (ch-1)*ldc+(rows-1)*lds+n-1) && fits(bias, ch-1)
}

// fastDeinterleaveRows is the fast path of checkDeinterleaveRows: true
// only when checkDeinterleaveRows would return true.
func fastDeinterleaveRows(rows, n int, src []float32, lds int, d0, d1 []float32, ldd int) bool {
	return uint(rows|n|lds|ldd) < fastMax && rows > 0 && n > 0 && fits(src, (rows-1)*lds+n-1) &&
		fits(d0, (rows-1)*ldd+(n+1)/2-1) && fits(d1, (rows-1)*ldd+(n+1)/2-1)
}

// fastTranspose16 is the fast path of checkTranspose16: true only when
// checkTranspose16 would return true.
func fastTranspose16(rows, n int, src []float32, lds, srow int, dst []float32, ldd, drow int) bool {
	return uint(rows|n|lds|srow|ldd|drow) < fastMax && rows > 0 && n > 0 &&
		fits(src, 15*lds+(rows-1)*srow+n-1) && fits(dst, (rows-1)*drow+(n-1)*ldd+15)
}

// fastReluMask is the fast path of checkReluMask: true only when
// checkReluMask would return true.
func fastReluMask(n int, y, dy, dx []float32) bool {
	return uint(n-1) < maxDim && n <= len(y) && n <= len(dy) && n <= len(dx)
}

// fastAdamStep is the fast path of checkAdamStep: true only when
// checkAdamStep would return true.
func fastAdamStep(n int, w, g, h, m, v []float32) bool {
	return uint(n-1) < maxDim && n <= len(w) && n <= len(g) && n <= len(m) && n <= len(v) && (len(h) == 0 || n <= len(h))
}
