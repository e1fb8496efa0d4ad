package asm

// Fast paths of the bounds layer. The checks of bounds.go cost about 8 ns
// per call (variadic helpers, a non-inlined call of up to 19 arguments),
// which is a quarter of the time of the small grouped and batched calls the
// capsule layers make by the thousand. Each fastX below is a conservative
// pre-test of checkX: it returns true only for a non-empty shape whose
// every dimension and stride is below fastMax (so that no index product can
// overflow) and whose operands hold every index the kernel touches, that
// is only when checkX would return true. Wrappers call
//
//	if fastX(...) || checkX(...) { kernel(...) }
//
// so that empty shapes, huge arguments and every error still go through
// checkX, which stays the one place that defines the contract and its
// panics. bounds_fast_test.go checks the implication on random shapes.

// fastMax bounds the dimensions and strides the fast paths accept: three
// of them multiplied stay far below 2^63.
const fastMax = 1 << 20

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
	return uint(nb|k|n|lda|ldx|xstride|ystride) < fastMax && nb > 0 && k > 0 && n > 0 && k <= maxK &&
		fits(a, (k-1)*lda+n-1) && fits(x, (nb-1)*xstride+(k-1)*ldx+n-1) && fits(y, (nb-1)*ystride+n-1)
}

func fastCols2(rows, n int, p, q []float32) bool {
	return uint(rows|n) < fastMax && rows > 0 && n > 0 && fits(p, rows*n-1) && fits(q, rows*n-1)
}

func fastCols3(rows, n int, p, q, r []float32) bool {
	return fastCols2(rows, n, p, q) && fits(r, rows*n-1)
}

func fastGerGroups(ng, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int, two bool) bool {
	if uint(ng|d|n|xs|xk|ldy|lda) >= fastMax || ng == 0 || d == 0 || n == 0 {
		return false
	}
	lx, ly := stridedLast(ng, d, xs, xk), (ng-1)*ldy+n-1
	return fits(a, (ng*d-1)*lda+n-1) && fits(x, lx) && fits(y, ly) && (!two || fits(x2, lx) && fits(y2, ly))
}

func fastGemvTGroups(ng, d, n int, a []float32, lda int, x []float32, xs, xk int, y []float32, ldy int) bool {
	return uint(ng|d|n|lda|xs|xk|ldy) < fastMax && ng > 0 && d > 0 && n > 0 &&
		fits(a, (ng*d-1)*lda+n-1) && fits(x, stridedLast(ng, d, xs, xk)) && fits(y, (ng-1)*ldy+n-1)
}

func fastGemvNGroups(ng, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int) bool {
	return uint(ng|d|n|lda|ldx|ys|yk) < fastMax && ng > 0 && d > 0 && n > 0 &&
		fits(a, (ng*d-1)*lda+n-1) && fits(x, (ng-1)*ldx+n-1) && fits(y, stridedLast(ng, d, ys, yk))
}
