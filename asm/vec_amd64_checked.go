//go:build amd64 && !noasm

package asm

// The exported amd64 vector kernels. Each checks its operands through the
// bounds layer (bounds.go; its fast paths in bounds_fast.go), which panics with a BoundsError on a length or
// stride that the equivalent loop would take out of range and returns false
// on an empty shape, then calls the generated assembly body (vec_amd64.s,
// stubs in vec_amd64.go, both written by asm/_gen/amd64vec).

// GemvNAVX2 computes y += A·x for the m×n row-major A with row stride lda,
// with AVX2+FMA. It is equivalent to
//
//	for r := 0; r < m; r++ {
//		var s float32
//		for c := 0; c < n; c++ {
//			s += a[r*lda+c] * x[c]
//		}
//		y[r] += s
//	}
func GemvNAVX2(m, n int, a []float32, lda int, x, y []float32) {
	if fastGemv(false, m, n, a, lda, x, y) || checkGemv("GemvNAVX2", false, m, n, a, lda, x, y) {
		gemvNAVX2(m, n, a, lda, x, y)
	}
}

// GemvTAVX2 computes y += Aᵀ·x for the m×n row-major A with row stride lda,
// with AVX2+FMA. It is equivalent to
//
//	for c := 0; c < n; c++ {
//		for r := 0; r < m; r++ {
//			y[c] += x[r] * a[r*lda+c]
//		}
//	}
func GemvTAVX2(m, n int, a []float32, lda int, x, y []float32) {
	if fastGemv(true, m, n, a, lda, x, y) || checkGemv("GemvTAVX2", true, m, n, a, lda, x, y) {
		gemvTAVX2(m, n, a, lda, x, y)
	}
}

// GerAVX2 computes A += x·yᵀ for the m×n row-major A with row stride lda,
// with AVX2+FMA. It is equivalent to
//
//	for r := 0; r < m; r++ {
//		for c := 0; c < n; c++ {
//			a[r*lda+c] += x[r] * y[c]
//		}
//	}
func GerAVX2(m, n int, x, y, a []float32, lda int) {
	if fastGer(m, n, x, y, a, lda) || checkGer("GerAVX2", m, n, x, y, a, lda) {
		gerAVX2(m, n, x, y, a, lda)
	}
}

// MulAddRowsAVX2 adds the element-wise products of k row pairs to y, with
// AVX2+FMA. It is equivalent to
//
//	for c := 0; c < n; c++ {
//		for l := 0; l < k; l++ {
//			y[c] += a[l*lda+c] * x[l*ldx+c]
//		}
//	}
func MulAddRowsAVX2(k, n int, a []float32, lda int, x []float32, ldx int, y []float32) {
	if fastMulAddRows(k, n, a, lda, x, ldx, y) || checkMulAddRows("MulAddRowsAVX2", k, n, a, lda, x, ldx, y) {
		mulAddRowsAVX2(k, n, a, lda, x, ldx, y)
	}
}

// SoftmaxColsAVX2 writes to c the softmax over the rows of every column of
// the rows×n row-major l (row stride n), with AVX2+FMA and a polynomial exp
// (the exp of ExpAVX2, within 2 ulp). c may be l. It is equivalent to
//
//	for i := 0; i < n; i++ {
//		mx := l[i]
//		for r := 1; r < rows; r++ {
//			mx = max(mx, l[r*n+i])
//		}
//		var sum float32
//		for r := 0; r < rows; r++ {
//			c[r*n+i] = exp(l[r*n+i] - mx)
//			sum += c[r*n+i]
//		}
//		inv := 1 / sum
//		for r := 0; r < rows; r++ {
//			c[r*n+i] *= inv
//		}
//	}
func SoftmaxColsAVX2(rows, n int, l, c []float32) {
	if fastCols2(rows, n, l, c) || checkCols("SoftmaxColsAVX2", rows, n, "lc", l, c) {
		softmaxColsAVX2(rows, n, l, c)
	}
}

// SoftmaxColsGradAVX2 writes to dl the softmax input gradient of every
// column of the rows×n row-major c (row stride n), with AVX2+FMA. dl may be
// dc. It is equivalent to
//
//	for i := 0; i < n; i++ {
//		var dot float32
//		for r := 0; r < rows; r++ {
//			dot += c[r*n+i] * dc[r*n+i]
//		}
//		for r := 0; r < rows; r++ {
//			dl[r*n+i] = c[r*n+i] * (dc[r*n+i] - dot)
//		}
//	}
func SoftmaxColsGradAVX2(rows, n int, c, dc, dl []float32) {
	if fastCols3(rows, n, c, dc, dl) || checkCols("SoftmaxColsGradAVX2", rows, n, "cdl", c, dc, dl) {
		softmaxColsGradAVX2(rows, n, c, dc, dl)
	}
}

// SquashAVX2 squashes n capsules of dimension d stored component-major
// (s[l*n+i] is component l of capsule i), with AVX2+FMA; kind 0 is
// Mazzia's squash, 1 Sabour's. v may be s. It is equivalent to
//
//	for i := 0; i < n; i++ {
//		var q float32
//		for l := 0; l < d; l++ {
//			q += s[l*n+i] * s[l*n+i]
//		}
//		nrm := sqrt(q + 1e-7)
//		f := (1 - exp(-nrm)) / nrm // kind 0
//		if kind == 1 {
//			f = q / (1 + q) / nrm
//		}
//		for l := 0; l < d; l++ {
//			v[l*n+i] = f * s[l*n+i]
//		}
//	}
func SquashAVX2(kind, d, n int, s, v []float32) {
	checkSquashKind("SquashAVX2", kind)
	if fastCols2(d, n, s, v) || checkCols("SquashAVX2", d, n, "sv", s, v) {
		squashAVX2(kind, d, n, s, v)
	}
}

// SquashGradAVX2 writes ds = (∂v/∂s)ᵀ·dv for the squash of SquashAVX2, with
// AVX2+FMA. ds may be dv. It is equivalent to
//
//	for i := 0; i < n; i++ {
//		var q, dot float32
//		for l := 0; l < d; l++ {
//			q += s[l*n+i] * s[l*n+i]
//			dot += s[l*n+i] * dv[l*n+i]
//		}
//		nrm := sqrt(q + 1e-7)
//		var f, h float32 // v = f(nrm)·s, h = f'(nrm)/nrm
//		if kind == 0 {
//			e := exp(-nrm)
//			f = (1 - e) / nrm
//			h = (e - f) / (nrm * nrm)
//		} else {
//			t := 1 + q
//			f = q / t / nrm
//			h = 2/(t*t*nrm) - q/t/(nrm*nrm*nrm)
//		}
//		for l := 0; l < d; l++ {
//			ds[l*n+i] = f*dv[l*n+i] + h*dot*s[l*n+i]
//		}
//	}
func SquashGradAVX2(kind, d, n int, s, dv, ds []float32) {
	checkSquashKind("SquashGradAVX2", kind)
	if fastCols3(d, n, s, dv, ds) || checkCols("SquashGradAVX2", d, n, "svd", s, dv, ds) {
		squashGradAVX2(kind, d, n, s, dv, ds)
	}
}

// AVX-512F versions: the same contracts as the AVX2 kernels above, on
// 16-lane registers with K-masked tails.

// GemvNAVX512 is GemvNAVX2 with AVX-512F.
func GemvNAVX512(m, n int, a []float32, lda int, x, y []float32) {
	if fastGemv(false, m, n, a, lda, x, y) || checkGemv("GemvNAVX512", false, m, n, a, lda, x, y) {
		gemvNAVX512(m, n, a, lda, x, y)
	}
}

// GemvTAVX512 is GemvTAVX2 with AVX-512F.
func GemvTAVX512(m, n int, a []float32, lda int, x, y []float32) {
	if fastGemv(true, m, n, a, lda, x, y) || checkGemv("GemvTAVX512", true, m, n, a, lda, x, y) {
		gemvTAVX512(m, n, a, lda, x, y)
	}
}

// GerAVX512 is GerAVX2 with AVX-512F.
func GerAVX512(m, n int, x, y, a []float32, lda int) {
	if fastGer(m, n, x, y, a, lda) || checkGer("GerAVX512", m, n, x, y, a, lda) {
		gerAVX512(m, n, x, y, a, lda)
	}
}

// MulAddRowsAVX512 is MulAddRowsAVX2 with AVX-512F.
func MulAddRowsAVX512(k, n int, a []float32, lda int, x []float32, ldx int, y []float32) {
	if fastMulAddRows(k, n, a, lda, x, ldx, y) || checkMulAddRows("MulAddRowsAVX512", k, n, a, lda, x, ldx, y) {
		mulAddRowsAVX512(k, n, a, lda, x, ldx, y)
	}
}

// SoftmaxColsAVX512 is SoftmaxColsAVX2 with AVX-512F.
func SoftmaxColsAVX512(rows, n int, l, c []float32) {
	if fastCols2(rows, n, l, c) || checkCols("SoftmaxColsAVX512", rows, n, "lc", l, c) {
		softmaxColsAVX512(rows, n, l, c)
	}
}

// SoftmaxColsGradAVX512 is SoftmaxColsGradAVX2 with AVX-512F.
func SoftmaxColsGradAVX512(rows, n int, c, dc, dl []float32) {
	if fastCols3(rows, n, c, dc, dl) || checkCols("SoftmaxColsGradAVX512", rows, n, "cdl", c, dc, dl) {
		softmaxColsGradAVX512(rows, n, c, dc, dl)
	}
}

// SoftmaxRowsAVX2 writes to c the softmax along every row of the rows×n
// row-major l (row stride n), with AVX2+FMA and the exp of ExpAVX2 (within
// 2 ulp). c may be l. Each row's max and sum are folded across the lanes
// as a tree, so the sum's rounding differs from the loop's. It is
// equivalent to
//
//	for r := 0; r < rows; r++ {
//		row, out := l[r*n:r*n+n], c[r*n:r*n+n]
//		mx := row[0]
//		for i := 1; i < n; i++ {
//			mx = max(mx, row[i])
//		}
//		var sum float32
//		for i := 0; i < n; i++ {
//			out[i] = exp(row[i] - mx)
//			sum += out[i]
//		}
//		inv := 1 / sum
//		for i := 0; i < n; i++ {
//			out[i] *= inv
//		}
//	}
func SoftmaxRowsAVX2(rows, n int, l, c []float32) {
	if fastCols2(rows, n, l, c) || checkCols("SoftmaxRowsAVX2", rows, n, "lc", l, c) {
		softmaxRowsAVX2(rows, n, l, c)
	}
}

// SoftmaxRowsGradAVX2 writes to dl the input gradient of the softmax along
// every row of the rows×n row-major c (row stride n), with AVX2+FMA. dl
// may be dc. It is equivalent to
//
//	for r := 0; r < rows; r++ {
//		var dot float32
//		for i := 0; i < n; i++ {
//			dot += c[r*n+i] * dc[r*n+i]
//		}
//		for i := 0; i < n; i++ {
//			dl[r*n+i] = c[r*n+i] * (dc[r*n+i] - dot)
//		}
//	}
func SoftmaxRowsGradAVX2(rows, n int, c, dc, dl []float32) {
	if fastCols3(rows, n, c, dc, dl) || checkCols("SoftmaxRowsGradAVX2", rows, n, "cdl", c, dc, dl) {
		softmaxRowsGradAVX2(rows, n, c, dc, dl)
	}
}

// SoftmaxRowsAVX512 is SoftmaxRowsAVX2 with AVX-512F.
func SoftmaxRowsAVX512(rows, n int, l, c []float32) {
	if fastCols2(rows, n, l, c) || checkCols("SoftmaxRowsAVX512", rows, n, "lc", l, c) {
		softmaxRowsAVX512(rows, n, l, c)
	}
}

// SoftmaxRowsGradAVX512 is SoftmaxRowsGradAVX2 with AVX-512F.
func SoftmaxRowsGradAVX512(rows, n int, c, dc, dl []float32) {
	if fastCols3(rows, n, c, dc, dl) || checkCols("SoftmaxRowsGradAVX512", rows, n, "cdl", c, dc, dl) {
		softmaxRowsGradAVX512(rows, n, c, dc, dl)
	}
}

// SquashAVX512 is SquashAVX2 with AVX-512F.
func SquashAVX512(kind, d, n int, s, v []float32) {
	checkSquashKind("SquashAVX512", kind)
	if fastCols2(d, n, s, v) || checkCols("SquashAVX512", d, n, "sv", s, v) {
		squashAVX512(kind, d, n, s, v)
	}
}

// SquashGradAVX512 is SquashGradAVX2 with AVX-512F.
func SquashGradAVX512(kind, d, n int, s, dv, ds []float32) {
	checkSquashKind("SquashGradAVX512", kind)
	if fastCols3(d, n, s, dv, ds) || checkCols("SquashGradAVX512", d, n, "svd", s, dv, ds) {
		squashGradAVX512(kind, d, n, s, dv, ds)
	}
}

// GerGroupsAVX2 does ng rank-1 updates of the d×n blocks stacked in the
// row-major a (row stride lda; block j is rows j·d … j·d+d−1), block j with
// x[j·xs + k·xk] (k < d) and row j of y (row stride ldy), with AVX2+FMA.
// It is equivalent to
//
//	for j := 0; j < ng; j++ {
//		for k := 0; k < d; k++ {
//			for c := 0; c < n; c++ {
//				a[(j*d+k)*lda+c] += x[j*xs+k*xk] * y[j*ldy+c]
//			}
//		}
//	}
func GerGroupsAVX2(ng, d, n int, x []float32, xs, xk int, y []float32, ldy int, a []float32, lda int) {
	if fastGerGroups(ng, d, n, x, x, xs, xk, y, y, ldy, a, lda) || checkGerGroups("GerGroupsAVX2", ng, d, n, x, nil, xs, xk, y, nil, ldy, a, lda, false) {
		gerGroupsAVX2(ng, d, n, x, xs, xk, y, ldy, a, lda)
	}
}

// GemvTGroupsAVX2 adds to row j of y (row stride ldy) the product of the
// transposed d×n block j of a (as in GerGroupsAVX2) with x[j·xs + k·xk]
// (k < d), for every j < g, with AVX2+FMA. It is equivalent to
//
//	for j := 0; j < ng; j++ {
//		for k := 0; k < d; k++ {
//			for c := 0; c < n; c++ {
//				y[j*ldy+c] += x[j*xs+k*xk] * a[(j*d+k)*lda+c]
//			}
//		}
//	}
func GemvTGroupsAVX2(ng, d, n int, a []float32, lda int, x []float32, xs, xk int, y []float32, ldy int) {
	if fastGemvTGroups(ng, d, n, a, lda, x, xs, xk, y, ldy) || checkGemvTGroups("GemvTGroupsAVX2", ng, d, n, a, lda, x, xs, xk, y, ldy) {
		gemvTGroupsAVX2(ng, d, n, a, lda, x, xs, xk, y, ldy)
	}
}

// GemvNGroupsAVX2 adds to y[j·ys + k·yk] (k < d) the product of the d×n
// block j of a (as in GerGroupsAVX2) with row j of x (row stride ldx), for
// every j < ng, with AVX2+FMA. It is equivalent to
//
//	for j := 0; j < ng; j++ {
//		for k := 0; k < d; k++ {
//			var s float32
//			for c := 0; c < n; c++ {
//				s += a[(j*d+k)*lda+c] * x[j*ldx+c]
//			}
//			y[j*ys+k*yk] += s
//		}
//	}
func GemvNGroupsAVX2(ng, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int) {
	if fastGemvNGroups(ng, d, n, a, lda, x, ldx, y, ys, yk) || checkGemvNGroups("GemvNGroupsAVX2", ng, d, n, a, lda, x, ldx, y, ys, yk) {
		gemvNGroupsAVX2(ng, d, n, a, lda, x, ldx, y, ys, yk)
	}
}

// GerGroupsAVX512 is GerGroupsAVX2 with AVX-512F.
func GerGroupsAVX512(ng, d, n int, x []float32, xs, xk int, y []float32, ldy int, a []float32, lda int) {
	if fastGerGroups(ng, d, n, x, x, xs, xk, y, y, ldy, a, lda) || checkGerGroups("GerGroupsAVX512", ng, d, n, x, nil, xs, xk, y, nil, ldy, a, lda, false) {
		gerGroupsAVX512(ng, d, n, x, xs, xk, y, ldy, a, lda)
	}
}

// GemvTGroupsAVX512 is GemvTGroupsAVX2 with AVX-512F.
func GemvTGroupsAVX512(ng, d, n int, a []float32, lda int, x []float32, xs, xk int, y []float32, ldy int) {
	if fastGemvTGroups(ng, d, n, a, lda, x, xs, xk, y, ldy) || checkGemvTGroups("GemvTGroupsAVX512", ng, d, n, a, lda, x, xs, xk, y, ldy) {
		gemvTGroupsAVX512(ng, d, n, a, lda, x, xs, xk, y, ldy)
	}
}

// GemvNGroupsAVX512 is GemvNGroupsAVX2 with AVX-512F.
func GemvNGroupsAVX512(ng, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int) {
	if fastGemvNGroups(ng, d, n, a, lda, x, ldx, y, ys, yk) || checkGemvNGroups("GemvNGroupsAVX512", ng, d, n, a, lda, x, ldx, y, ys, yk) {
		gemvNGroupsAVX512(ng, d, n, a, lda, x, ldx, y, ys, yk)
	}
}

// Ger2GroupsAVX2 is GerGroupsAVX2 for two operand pairs (x, y) and (x2, y2)
// sharing their strides, in one pass over a, with AVX2+FMA. It is
// equivalent to
//
//	for j := 0; j < ng; j++ {
//		for k := 0; k < d; k++ {
//			for c := 0; c < n; c++ {
//				r := (j*d+k)*lda + c
//				a[r] += x[j*xs+k*xk] * y[j*ldy+c]
//				a[r] += x2[j*xs+k*xk] * y2[j*ldy+c]
//			}
//		}
//	}
func Ger2GroupsAVX2(ng, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int) {
	if fastGerGroups(ng, d, n, x, x2, xs, xk, y, y2, ldy, a, lda) || checkGerGroups("Ger2GroupsAVX2", ng, d, n, x, x2, xs, xk, y, y2, ldy, a, lda, true) {
		ger2GroupsAVX2(ng, d, n, x, x2, xs, xk, y, y2, ldy, a, lda)
	}
}

// Ger2GroupsAVX512 is Ger2GroupsAVX2 with AVX-512F.
func Ger2GroupsAVX512(ng, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int) {
	if fastGerGroups(ng, d, n, x, x2, xs, xk, y, y2, ldy, a, lda) || checkGerGroups("Ger2GroupsAVX512", ng, d, n, x, x2, xs, xk, y, y2, ldy, a, lda, true) {
		ger2GroupsAVX512(ng, d, n, x, x2, xs, xk, y, y2, ldy, a, lda)
	}
}

// Ger2GroupsSetAVX2 is Ger2GroupsAVX2 overwriting a (a is not read), with
// AVX2+FMA. It is equivalent to
//
//	for j := 0; j < ng; j++ {
//		for k := 0; k < d; k++ {
//			for c := 0; c < n; c++ {
//				a[(j*d+k)*lda+c] = x[j*xs+k*xk]*y[j*ldy+c] + x2[j*xs+k*xk]*y2[j*ldy+c]
//			}
//		}
//	}
func Ger2GroupsSetAVX2(ng, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int) {
	if fastGerGroups(ng, d, n, x, x2, xs, xk, y, y2, ldy, a, lda) || checkGerGroups("Ger2GroupsSetAVX2", ng, d, n, x, x2, xs, xk, y, y2, ldy, a, lda, true) {
		ger2GroupsSetAVX2(ng, d, n, x, x2, xs, xk, y, y2, ldy, a, lda)
	}
}

// Ger2GroupsSetAVX512 is Ger2GroupsSetAVX2 with AVX-512F.
func Ger2GroupsSetAVX512(ng, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int) {
	if fastGerGroups(ng, d, n, x, x2, xs, xk, y, y2, ldy, a, lda) || checkGerGroups("Ger2GroupsSetAVX512", ng, d, n, x, x2, xs, xk, y, y2, ldy, a, lda, true) {
		ger2GroupsSetAVX512(ng, d, n, x, x2, xs, xk, y, y2, ldy, a, lda)
	}
}

// Ger2GemvGroupsAVX2 is GemvNGroupsAVX2 of a against y2, scaled by alpha
// and broadcast along the row, fused with Ger2GroupsSetAVX2 starting from
// that row bias instead of zero, with AVX2+FMA: each row of a is read once
// and the same row of out (row stride lda) written once.
// The dot product is folded across the lanes as a tree, so its rounding
// differs from the loop's. It is equivalent to
//
//	for j := 0; j < ng; j++ {
//		for k := 0; k < d; k++ {
//			r := j*d + k
//			var dot float32
//			for c := 0; c < n; c++ {
//				dot += a[r*lda+c] * y2[j*ldy+c]
//			}
//			t := alpha * dot
//			for c := 0; c < n; c++ {
//				out[r*lda+c] = t + x[j*xs+k*xk]*y[j*ldy+c] + x2[j*xs+k*xk]*y2[j*ldy+c]
//			}
//		}
//	}
func Ger2GemvGroupsAVX2(ng, d, n int, alpha float32, a []float32, lda int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, out []float32) {
	if checkGer2GemvGroups("Ger2GemvGroupsAVX2", ng, d, n, a, lda, x, x2, xs, xk, y, y2, ldy, out) {
		ger2GemvGroupsAVX2(ng, d, n, alpha, a, lda, x, x2, xs, xk, y, y2, ldy, out)
	}
}

// Ger2GemvGroupsAVX512 is Ger2GemvGroupsAVX2 with AVX-512F.
func Ger2GemvGroupsAVX512(ng, d, n int, alpha float32, a []float32, lda int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, out []float32) {
	if checkGer2GemvGroups("Ger2GemvGroupsAVX512", ng, d, n, a, lda, x, x2, xs, xk, y, y2, ldy, out) {
		ger2GemvGroupsAVX512(ng, d, n, alpha, a, lda, x, x2, xs, xk, y, y2, ldy, out)
	}
}

// GemvNTGroupsAVX2 is GemvNGroupsAVX2 overwriting y, followed by
// GemvTGroupsAVX2 of that y overwriting z, in one call with AVX2+FMA (each
// group's rows of a are read twice from L1). The dot products are folded
// across the lanes as a tree, so their rounding differs from the loop's.
// It is equivalent to
//
//	for j := 0; j < ng; j++ {
//		for k := 0; k < d; k++ {
//			var dot float32
//			for c := 0; c < n; c++ {
//				dot += a[(j*d+k)*lda+c] * x[j*ldx+c]
//			}
//			y[j*ys+k*yk] = dot
//		}
//		for c := 0; c < n; c++ {
//			var sum float32
//			for k := 0; k < d; k++ {
//				sum += y[j*ys+k*yk] * a[(j*d+k)*lda+c]
//			}
//			z[j*ldz+c] = sum
//		}
//	}
//
// y must not overlap a, x or z.
func GemvNTGroupsAVX2(ng, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int, z []float32, ldz int) {
	if checkGemvNTGroups("GemvNTGroupsAVX2", ng, d, n, a, lda, x, ldx, y, ys, yk, z, ldz) {
		gemvNTGroupsAVX2(ng, d, n, a, lda, x, ldx, y, ys, yk, z, ldz)
	}
}

// GemvNTGroupsAVX512 is GemvNTGroupsAVX2 with AVX-512F.
func GemvNTGroupsAVX512(ng, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int, z []float32, ldz int) {
	if checkGemvNTGroups("GemvNTGroupsAVX512", ng, d, n, a, lda, x, ldx, y, ys, yk, z, ldz) {
		gemvNTGroupsAVX512(ng, d, n, a, lda, x, ldx, y, ys, yk, z, ldz)
	}
}

// checkGemvNTGroups checks the operands of GemvNTGroups: those of
// GemvNGroups (a, x, y) and z, ng rows of n values with row stride ldz.
// It reports whether there is work to do, and panics as checkGemvNGroups.
func checkGemvNTGroups(kernel string, ng, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int, z []float32, ldz int) bool {
	if fastGemvNGroups(ng, d, n, a, lda, x, ldx, y, ys, yk) && fastGemvTGroups(ng, d, n, a, lda, y, ys, yk, z, ldz) {
		return true
	}
	strides(kernel, ldz)
	if !checkGemvNGroups(kernel, ng, d, n, a, lda, x, ldx, y, ys, yk) {
		return false
	}
	need(kernel, "z", z, (ng-1)*ldz+n-1)
	return true
}

// checkGer2GemvGroups checks the operands of Ger2GemvGroups: those of
// Ger2GroupsSet with out as its a, and a with out's shape. It reports
// whether there is work to do, and panics as checkGerGroups.
func checkGer2GemvGroups(kernel string, ng, d, n int, a []float32, lda int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, out []float32) bool {
	if fastGerGroups(ng, d, n, x, x2, xs, xk, y, y2, ldy, out, lda) && (ng*d-1)*lda+n <= len(a) {
		return true
	}
	if !checkGerGroups(kernel, ng, d, n, x, x2, xs, xk, y, y2, ldy, out, lda, true) {
		return false
	}
	need(kernel, "a", a, (ng*d-1)*lda+n-1)
	return true
}

// MulAddRowsBatchAVX2 adds, for each of nb samples b, the element-wise
// products of k ≤ 8 row pairs to row b of y, the rows of a being shared by
// every sample, with AVX2+FMA. It holds the rows of a for 8 columns in
// registers while it walks the samples, so a is read once per call. k must
// be at most 8 (k = 0 does nothing). It is equivalent to
//
//	for b := 0; b < nb; b++ {
//		for c := 0; c < n; c++ {
//			for l := 0; l < k; l++ {
//				y[b*ystride+c] += a[l*lda+c] * x[b*xstride+l*ldx+c]
//			}
//		}
//	}
func MulAddRowsBatchAVX2(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int) {
	if fastMulAddRowsBatch(8, nb, k, n, a, lda, x, ldx, xstride, y, ystride) || checkMulAddRowsBatch("MulAddRowsBatchAVX2", 8, nb, k, n, a, lda, x, ldx, xstride, y, ystride) {
		mulAddRowsBatchAVX2(nb, k, n, a, lda, x, ldx, xstride, y, ystride)
	}
}

// MulAddRowsBatchAVX512 is MulAddRowsBatchAVX2 with AVX-512F (16 columns
// per register, K-masked tail).
func MulAddRowsBatchAVX512(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int) {
	if fastMulAddRowsBatch(8, nb, k, n, a, lda, x, ldx, xstride, y, ystride) || checkMulAddRowsBatch("MulAddRowsBatchAVX512", 8, nb, k, n, a, lda, x, ldx, xstride, y, ystride) {
		mulAddRowsBatchAVX512(nb, k, n, a, lda, x, ldx, xstride, y, ystride)
	}
}

// MulAddRowsBatchSetAVX2 is MulAddRowsBatchAVX2 overwriting y instead of
// adding to it (y is not read), with AVX2+FMA. k must be 1 to 8: for k = 0
// it writes nothing (the caller clears y). It is equivalent to
//
//	for b := 0; b < nb; b++ {
//		for c := 0; c < n; c++ {
//			var s float32
//			for l := 0; l < k; l++ {
//				s += a[l*lda+c] * x[b*xstride+l*ldx+c]
//			}
//			y[b*ystride+c] = s
//		}
//	}
func MulAddRowsBatchSetAVX2(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int) {
	if fastMulAddRowsBatch(8, nb, k, n, a, lda, x, ldx, xstride, y, ystride) || checkMulAddRowsBatch("MulAddRowsBatchSetAVX2", 8, nb, k, n, a, lda, x, ldx, xstride, y, ystride) {
		mulAddRowsBatchSetAVX2(nb, k, n, a, lda, x, ldx, xstride, y, ystride)
	}
}

// MulAddRowsBatchSetAVX512 is MulAddRowsBatchSetAVX2 with AVX-512F.
func MulAddRowsBatchSetAVX512(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int) {
	if fastMulAddRowsBatch(8, nb, k, n, a, lda, x, ldx, xstride, y, ystride) || checkMulAddRowsBatch("MulAddRowsBatchSetAVX512", 8, nb, k, n, a, lda, x, ldx, xstride, y, ystride) {
		mulAddRowsBatchSetAVX512(nb, k, n, a, lda, x, ldx, xstride, y, ystride)
	}
}

// ExpAVX2 writes y[i] = exp(x[i]) for i < len(x), with AVX2+FMA, within
// 2 ulp of float32(math.Exp(x)): x is clamped to [−105, 88.7228394]
// (expconst.Lo, Hi), results below about −87.3 are subnormal (kept) and 0
// below about −103.97, +Inf above 88.7228394, NaN stays NaN. y may be x. It
// is equivalent to
//
//	for i := range x {
//		y[i] = float32(math.Exp(float64(min(max(x[i], -105), 88.7228394))))
//	}
func ExpAVX2(x, y []float32) {
	if checkExp("ExpAVX2", x, y) {
		expAVX2(x, y)
	}
}

// ExpAVX512 is ExpAVX2 with AVX-512F.
func ExpAVX512(x, y []float32) {
	if checkExp("ExpAVX512", x, y) {
		expAVX512(x, y)
	}
}

// The accumulators of the FMA throughput loops (asm/_gen/amd64vec/fma.go
// says why: at least latency × pipes independent FMAs, within the 16 ymm or
// 32 zmm registers besides the two operands).
const (
	FMAPeakAccAVX2   = 12
	FMAPeakAccAVX512 = 24
)

// checkFMAPeak checks an FMA throughput loop of w lanes: out holds w
// values, in 2w, iters ≥ 0. iters = 0 is a valid call (it writes out = 0).
func checkFMAPeak(kernel string, w int, out, in []float32, iters int) {
	dims(kernel, iters)
	need(kernel, "out", out, w-1)
	need(kernel, "in", in, 2*w-1)
}

// FMAPeakAVX2 is the FMA throughput loop with AVX2+FMA: FMAPeakAccAVX2 (12)
// independent accumulators of 8 lanes, each updated once per iteration by
// one VFMADD231PS, with no memory access in the loop, so that it runs at
// the FMA issue rate of the core; it does 2·12·8·iters flops. The result
// only exists to be checked. It is equivalent to
//
//	var acc [12][8]float32
//	for range iters {
//		for k := range acc {
//			for l := range 8 {
//				acc[k][l] += in[l] * in[8+l] // fused: one rounding
//			}
//		}
//	}
//	for l := range 8 {
//		s := acc[0][l]
//		for k := 1; k < 12; k++ {
//			s += acc[k][l]
//		}
//		out[l] = s
//	}
func FMAPeakAVX2(out, in []float32, iters int) {
	checkFMAPeak("FMAPeakAVX2", 8, out, in, iters)
	fmaPeakAVX2(out, in, iters)
}

// FMAPeakAVX512 is FMAPeakAVX2 with AVX-512F: FMAPeakAccAVX512 (24)
// accumulators of 16 lanes (in holds 32 values, out 16), 2·24·16·iters
// flops. It is equivalent to
//
//	var acc [24][16]float32
//	for range iters {
//		for k := range acc {
//			for l := range 16 {
//				acc[k][l] += in[l] * in[16+l] // fused: one rounding
//			}
//		}
//	}
//	for l := range 16 {
//		s := acc[0][l]
//		for k := 1; k < 24; k++ {
//			s += acc[k][l]
//		}
//		out[l] = s
//	}
func FMAPeakAVX512(out, in []float32, iters int) {
	checkFMAPeak("FMAPeakAVX512", 16, out, in, iters)
	fmaPeakAVX512(out, in, iters)
}

// BiasActAVX2 adds bias[r] to row r of the rows×n matrix y of row stride
// ldy and, when relu ≠ 0, applies the ReLU as Go's max(v, 0) computes it
// on amd64 (v for v > 0, +0 for any other number, −0 included, a NaN with
// its sign bit cleared), with AVX2. It is equivalent to
//
//	for r := 0; r < rows; r++ {
//		for c := 0; c < n; c++ {
//			v := y[r*ldy+c] + bias[r]
//			if relu != 0 {
//				v = max(v, 0)
//			}
//			y[r*ldy+c] = v
//		}
//	}
func BiasActAVX2(rows, n int, y []float32, ldy int, bias []float32, relu int) {
	if fastBiasAct(rows, n, y, ldy, bias) || checkBiasAct("BiasActAVX2", rows, n, y, ldy, bias) {
		biasActAVX2(rows, n, y, ldy, bias, relu)
	}
}

// BiasActAVX512 is BiasActAVX2 with AVX-512F.
func BiasActAVX512(rows, n int, y []float32, ldy int, bias []float32, relu int) {
	if fastBiasAct(rows, n, y, ldy, bias) || checkBiasAct("BiasActAVX512", rows, n, y, ldy, bias) {
		biasActAVX512(rows, n, y, ldy, bias, relu)
	}
}

// CompactActAVX2 writes the dense rows of a direct convolution's output
// from its wide grid src, with the bias of each channel and, when
// relu ≠ 0, the ReLU as BiasActAVX2 computes them, with AVX2. It is
// equivalent to
//
//	for o := 0; o < ch; o++ {
//		for r := 0; r < rows; r++ {
//			for c := 0; c < n; c++ {
//				v := src[o*ldc+r*lds+c] + bias[o]
//				if relu != 0 {
//					v = max(v, 0)
//				}
//				y[(o*rows+r)*n+c] = v
//			}
//		}
//	}
func CompactActAVX2(ch, rows, n int, y, src []float32, lds, ldc int, bias []float32, relu int) {
	if fastCompactAct(ch, rows, n, y, src, lds, ldc, bias) || checkCompactAct("CompactActAVX2", ch, rows, n, y, src, lds, ldc, bias) {
		compactActAVX2(ch, rows, n, y, src, lds, ldc, bias, relu)
	}
}

// CompactActAVX512 is CompactActAVX2 with AVX-512F.
func CompactActAVX512(ch, rows, n int, y, src []float32, lds, ldc int, bias []float32, relu int) {
	if fastCompactAct(ch, rows, n, y, src, lds, ldc, bias) || checkCompactAct("CompactActAVX512", ch, rows, n, y, src, lds, ldc, bias) {
		compactActAVX512(ch, rows, n, y, src, lds, ldc, bias, relu)
	}
}

// DeinterleaveRowsAVX512 splits every row of src into its even and odd
// values, with AVX-512F (a stride-2 convolution's column phases): it is
// equivalent to
//
//	for r := 0; r < rows; r++ {
//		for j := 0; j < (n+1)/2; j++ {
//			d0[r*ldd+j] = src[r*lds+2*j]
//			d1[r*ldd+j] = 0
//			if 2*j+1 < n {
//				d1[r*ldd+j] = src[r*lds+2*j+1]
//			}
//		}
//	}
func DeinterleaveRowsAVX512(rows, n int, src []float32, lds int, d0, d1 []float32, ldd int) {
	if fastDeinterleaveRows(rows, n, src, lds, d0, d1, ldd) || checkDeinterleaveRows("DeinterleaveRowsAVX512", rows, n, src, lds, d0, d1, ldd) {
		deinterleaveRowsAVX512(rows, n, src, lds, d0, d1, ldd)
	}
}

// Transpose16AVX512 transposes 16 channels' rows into rows of positions
// of 16 channels, with AVX-512F (the direct filter gradient's dY panels):
// it is equivalent to
//
//	for r := 0; r < rows; r++ {
//		for t := 0; t < n; t++ {
//			for j := 0; j < 16; j++ {
//				dst[r*drow+t*ldd+j] = src[j*lds+r*srow+t]
//			}
//		}
//	}
func Transpose16AVX512(rows, n int, src []float32, lds, srow int, dst []float32, ldd, drow int) {
	if fastTranspose16(rows, n, src, lds, srow, dst, ldd, drow) || checkTranspose16("Transpose16AVX512", rows, n, src, lds, srow, dst, ldd, drow) {
		transpose16AVX512(rows, n, src, lds, srow, dst, ldd, drow)
	}
}

// ReluMaskAVX2 writes dx = dy where y > 0 and +0 elsewhere (y NaN or ≤ 0;
// dy's bits pass through, NaN included, where y > 0), with AVX2. dx may
// be dy (not a partial overlap). It is equivalent to
//
//	for i := 0; i < n; i++ {
//		if y[i] > 0 {
//			dx[i] = dy[i]
//		} else {
//			dx[i] = 0
//		}
//	}
func ReluMaskAVX2(n int, y, dy, dx []float32) {
	if fastReluMask(n, y, dy, dx) || checkReluMask("ReluMaskAVX2", n, y, dy, dx) {
		reluMaskAVX2(n, y, dy, dx)
	}
}

// ReluMaskAVX512 is ReluMaskAVX2 with AVX-512F.
func ReluMaskAVX512(n int, y, dy, dx []float32) {
	if fastReluMask(n, y, dy, dx) || checkReluMask("ReluMaskAVX512", n, y, dy, dx) {
		reluMaskAVX512(n, y, dy, dx)
	}
}

// AdamStepAVX2 applies one Adam step to n weights w with gradient g (or,
// when h is not empty, the sum g + h, rounded once; g is not written) and
// moments m and v, with AVX2: with decoupled = 0, torch.optim.Adam's L2 weight
// decay (wd·w added to g); otherwise AdamW's, wd then being the factor
// 1 − lr·wd that w is scaled by. The scalars are precomputed by the caller
// (package kernels: b1 = β1, c1 = 1 − β1, b2 = β2, c2 = 1 − β2, step =
// lr/(1 − β1ᵗ), rbc2 = 1/sqrt(1 − β2ᵗ)). Every product is rounded before
// its sum, the square root is correctly rounded and the division is a true
// one, so the result equals that loop bit for bit as Go compiles it
// on amd64 (GOAMD64 below v3, where Go does not fuse multiply-adds). It is equivalent to
//
//	for i := 0; i < n; i++ {
//		gi := g[i]
//		if len(h) > 0 {
//			gi += h[i]
//		}
//		if decoupled == 0 {
//			gi += wd * w[i]
//		}
//		mi := b1*m[i] + c1*gi
//		vi := b2*v[i] + c2*gi*gi
//		m[i], v[i] = mi, vi
//		den := float32(math.Sqrt(float64(vi)))*rbc2 + eps
//		if decoupled == 0 {
//			w[i] = w[i] - step*mi/den
//		} else {
//			w[i] = w[i]*wd - step*mi/den
//		}
//	}
func AdamStepAVX2(n, decoupled int, w, g, h, m, v []float32, b1, c1, b2, c2, wd, step, rbc2, eps float32) {
	if fastAdamStep(n, w, g, h, m, v) || checkAdamStep("AdamStepAVX2", n, w, g, h, m, v) {
		adamStepAVX2(n, decoupled, w, g, h, m, v, b1, c1, b2, c2, wd, step, rbc2, eps)
	}
}

// AdamStepAVX512 is AdamStepAVX2 with AVX-512F.
func AdamStepAVX512(n, decoupled int, w, g, h, m, v []float32, b1, c1, b2, c2, wd, step, rbc2, eps float32) {
	if fastAdamStep(n, w, g, h, m, v) || checkAdamStep("AdamStepAVX512", n, w, g, h, m, v) {
		adamStepAVX512(n, decoupled, w, g, h, m, v, b1, c1, b2, c2, wd, step, rbc2, eps)
	}
}
