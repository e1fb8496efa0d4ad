//go:build arm64 && !noasm

package asm

// The NEON kernels below vectorize over the contiguous column index (4
// float32 per register, blocks of 16 and 4 columns, then single columns).
// Reductions are split over several accumulators, so sums may differ from
// the Go loops by rounding.
//
// Every kernel checks the lengths and strides of its operands against the
// equivalent Go loop (bounds.go) before calling its assembly body (the
// unexported function of the same name, generated in vec_arm64.s by
// asm/_gen/arm64): a short operand, a negative dimension or stride, or a
// bad kind panics with a BoundsError; an empty shape does nothing.

// checkColsNEON is checkCols for operands whose names are longer than one
// letter.
func checkColsNEON(kernel string, rows, n int, names []string, ops ...[]float32) bool {
	if !checkCols(kernel, rows, n, "") {
		return false
	}
	for i, s := range ops {
		need(kernel, names[i], s, rows*n-1)
	}
	return true
}

// ExpNEON sets y[i] = exp(x[i]) for i < len(x); y holds at least len(x)
// values. The result is within 2 ulp of float32(math.Exp(x[i])) (1 ulp
// measured over [-110, 90]), subnormal results below -87.3 included; it is
// exactly 0 below about -103.9 and for -Inf, +Inf above 88.73, and NaN for
// NaN. It is equivalent to
//
//	for i, v := range x {
//		y[i] = float32(math.Exp(float64(v)))
//	}
func ExpNEON(x, y []float32) {
	if checkExp("ExpNEON", x, y) {
		expNEON(x, y)
	}
}

// GemvNNEON computes y += A·x for the m×n row-major A with row stride lda.
// It is equivalent to
//
//	for r := 0; r < m; r++ {
//		var s float32
//		for c := 0; c < n; c++ {
//			s += a[r*lda+c] * x[c]
//		}
//		y[r] += s
//	}
func GemvNNEON(m, n int, a []float32, lda int, x, y []float32) {
	if checkGemv("GemvNNEON", false, m, n, a, lda, x, y) {
		gemvNNEON(m, n, a, lda, x, y)
	}
}

// GemvTNEON computes y += Aᵀ·x for the m×n row-major A with row stride lda.
// It is equivalent to
//
//	for r := 0; r < m; r++ {
//		for c := 0; c < n; c++ {
//			y[c] += x[r] * a[r*lda+c]
//		}
//	}
func GemvTNEON(m, n int, a []float32, lda int, x, y []float32) {
	if checkGemv("GemvTNEON", true, m, n, a, lda, x, y) {
		gemvTNEON(m, n, a, lda, x, y)
	}
}

// GerNEON computes the rank-1 update A += x·yᵀ of the m×n row-major A with
// row stride lda. It is equivalent to
//
//	for r := 0; r < m; r++ {
//		for c := 0; c < n; c++ {
//			a[r*lda+c] += x[r] * y[c]
//		}
//	}
func GerNEON(m, n int, x, y, a []float32, lda int) {
	if checkGer("GerNEON", m, n, x, y, a, lda) {
		gerNEON(m, n, x, y, a, lda)
	}
}

// MulAddRowsNEON adds the element-wise products of k row pairs of a and x
// (row strides lda and ldx) to y. It is equivalent to
//
//	for l := 0; l < k; l++ {
//		for c := 0; c < n; c++ {
//			y[c] += a[l*lda+c] * x[l*ldx+c]
//		}
//	}
func MulAddRowsNEON(k, n int, a []float32, lda int, x []float32, ldx int, y []float32) {
	if checkMulAddRows("MulAddRowsNEON", k, n, a, lda, x, ldx, y) {
		mulAddRowsNEON(k, n, a, lda, x, ldx, y)
	}
}

// SoftmaxColsNEON sets every column of the rows×n row-major c to the
// softmax of the same column of l (rows ≥ 1 or nothing is done), with exp
// as in ExpNEON. It is equivalent to
//
//	for i := 0; i < n; i++ {
//		mx := l[i]
//		for r := 1; r < rows; r++ {
//			mx = max(mx, l[r*n+i]) // NaN propagates
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
func SoftmaxColsNEON(rows, n int, l, c []float32) {
	if checkCols("SoftmaxColsNEON", rows, n, "lc", l, c) {
		softmaxColsNEON(rows, n, l, c)
	}
}

// SoftmaxColsGradNEON computes the gradient of SoftmaxColsNEON with
// respect to its logits, for rows×n row-major matrices. It is equivalent to
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
func SoftmaxColsGradNEON(rows, n int, c, dc, dl []float32) {
	if checkColsNEON("SoftmaxColsGradNEON", rows, n, []string{"c", "dc", "dl"}, c, dc, dl) {
		softmaxColsGradNEON(rows, n, c, dc, dl)
	}
}

// SoftmaxRowsNEON sets every row of the rows×n row-major c to the softmax
// of the same row of l, with exp as in ExpNEON. c may be l. The max and the
// sum of each row's 4-column blocks are folded across the lanes, the last
// n%4 columns' added after, so the sum's rounding differs from the loop's.
// It is equivalent to
//
//	for r := 0; r < rows; r++ {
//		row, out := l[r*n:r*n+n], c[r*n:r*n+n]
//		mx := row[0]
//		for i := 1; i < n; i++ {
//			mx = max(mx, row[i]) // NaN propagates
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
func SoftmaxRowsNEON(rows, n int, l, c []float32) {
	if checkCols("SoftmaxRowsNEON", rows, n, "lc", l, c) {
		softmaxRowsNEON(rows, n, l, c)
	}
}

// SoftmaxRowsGradNEON computes the gradient of SoftmaxRowsNEON with
// respect to its logits, for rows×n row-major matrices. dl may be dc. It
// is equivalent to
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
func SoftmaxRowsGradNEON(rows, n int, c, dc, dl []float32) {
	if checkColsNEON("SoftmaxRowsGradNEON", rows, n, []string{"c", "dc", "dl"}, c, dc, dl) {
		softmaxRowsGradNEON(rows, n, c, dc, dl)
	}
}

// SquashNEON squashes n capsules of dimension d stored component-major
// (s[l*n+i] is component l of capsule i) into v. kind 0 is Mazzia's squash,
// f = (1 − exp(−m))/m, kind 1 is Sabour's, f = q/(1+q)/m, where q = |s|²
// and m = sqrt(q + 1e-7); exp is as in ExpNEON. It is equivalent to
//
//	for i := 0; i < n; i++ {
//		var q float32
//		for l := 0; l < d; l++ {
//			q += s[l*n+i] * s[l*n+i]
//		}
//		m := sqrt(q + 1e-7)
//		f := (1 - exp(-m)) / m // kind 0
//		f = q / (1 + q) / m    // kind 1
//		for l := 0; l < d; l++ {
//			v[l*n+i] = f * s[l*n+i]
//		}
//	}
func SquashNEON(kind, d, n int, s, v []float32) {
	checkSquashKind("SquashNEON", kind)
	if checkCols("SquashNEON", d, n, "sv", s, v) {
		squashNEON(kind, d, n, s, v)
	}
}

// SquashGradNEON computes ds = (∂v/∂s)ᵀ·dv for SquashNEON, same layout and
// kinds, overwriting ds. With m = sqrt(q + 1e-7) and, for kind 0,
// e = exp(−m), f = (1−e)/m, h = (e/m − (1−e)/(m·m))/m, and for kind 1,
// a = q/(1+q), f = a/m, h = 2/((1+q)·(1+q)·m) − a/(m·m·m), it is equivalent to
//
//	for i := 0; i < n; i++ {
//		var q, dot float32
//		for l := 0; l < d; l++ {
//			q += s[l*n+i] * s[l*n+i]
//			dot += s[l*n+i] * dv[l*n+i]
//		}
//		f, h := scale(kind, q)
//		for l := 0; l < d; l++ {
//			ds[l*n+i] = f*dv[l*n+i] + h*dot*s[l*n+i]
//		}
//	}
func SquashGradNEON(kind, d, n int, s, dv, ds []float32) {
	checkSquashKind("SquashGradNEON", kind)
	if checkColsNEON("SquashGradNEON", d, n, []string{"s", "dv", "ds"}, s, dv, ds) {
		squashGradNEON(kind, d, n, s, dv, ds)
	}
}

// GerGroupsNEON does ng rank-1 updates of the d×n blocks stacked in the
// row-major a (row stride lda; block j is rows j·d … j·d+d−1), block j with
// x[j·xs + k·xk] (k < d) and row j of y (row stride ldy). It is equivalent
// to
//
//	for j := 0; j < ng; j++ {
//		for k := 0; k < d; k++ {
//			for c := 0; c < n; c++ {
//				a[(j*d+k)*lda+c] += x[j*xs+k*xk] * y[j*ldy+c]
//			}
//		}
//	}
func GerGroupsNEON(ng, d, n int, x []float32, xs, xk int, y []float32, ldy int, a []float32, lda int) {
	if checkGerGroups("GerGroupsNEON", ng, d, n, x, nil, xs, xk, y, nil, ldy, a, lda, false) {
		gerGroupsNEON(ng, d, n, x, xs, xk, y, ldy, a, lda)
	}
}

// GemvTGroupsNEON adds to row j of y (row stride ldy) the product of the
// transposed d×n block j of a (as in GerGroupsNEON) with x[j·xs + k·xk]
// (k < d), for every j < ng. It is equivalent to
//
//	for j := 0; j < ng; j++ {
//		for k := 0; k < d; k++ {
//			for c := 0; c < n; c++ {
//				y[j*ldy+c] += x[j*xs+k*xk] * a[(j*d+k)*lda+c]
//			}
//		}
//	}
func GemvTGroupsNEON(ng, d, n int, a []float32, lda int, x []float32, xs, xk int, y []float32, ldy int) {
	if checkGemvTGroups("GemvTGroupsNEON", ng, d, n, a, lda, x, xs, xk, y, ldy) {
		gemvTGroupsNEON(ng, d, n, a, lda, x, xs, xk, y, ldy)
	}
}

// GemvNGroupsNEON adds to y[j·ys + k·yk] (k < d) the product of the d×n
// block j of a (as in GerGroupsNEON) with row j of x (row stride ldx), for
// every j < ng. It is equivalent to
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
func GemvNGroupsNEON(ng, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int) {
	if checkGemvNGroups("GemvNGroupsNEON", ng, d, n, a, lda, x, ldx, y, ys, yk) {
		gemvNGroupsNEON(ng, d, n, a, lda, x, ldx, y, ys, yk)
	}
}

// Ger2GroupsNEON is GerGroupsNEON for two operand pairs (x, y) and (x2, y2)
// sharing their strides, in one pass over a. It is equivalent to
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
func Ger2GroupsNEON(ng, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int) {
	if checkGerGroups("Ger2GroupsNEON", ng, d, n, x, x2, xs, xk, y, y2, ldy, a, lda, true) {
		ger2GroupsNEON(ng, d, n, x, x2, xs, xk, y, y2, ldy, a, lda)
	}
}

// Ger2GroupsSetNEON is Ger2GroupsNEON overwriting a (a is not read). It is
// equivalent to
//
//	for j := 0; j < ng; j++ {
//		for k := 0; k < d; k++ {
//			for c := 0; c < n; c++ {
//				a[(j*d+k)*lda+c] = x[j*xs+k*xk]*y[j*ldy+c] + x2[j*xs+k*xk]*y2[j*ldy+c]
//			}
//		}
//	}
func Ger2GroupsSetNEON(ng, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int) {
	if checkGerGroups("Ger2GroupsSetNEON", ng, d, n, x, x2, xs, xk, y, y2, ldy, a, lda, true) {
		ger2GroupsSetNEON(ng, d, n, x, x2, xs, xk, y, y2, ldy, a, lda)
	}
}

// Ger2GemvGroupsNEON is GemvNGroupsNEON of a against y2, scaled by alpha
// and broadcast along the row, fused with Ger2GroupsSetNEON starting from
// that row bias instead of zero: each row of a is read once and the same
// row of out (row stride lda) written once. The dot
// product of each row's 4-column blocks is folded across the lanes, the
// last n%4 columns' added after. It is equivalent to
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
func Ger2GemvGroupsNEON(ng, d, n int, alpha float32, a []float32, lda int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, out []float32) {
	if checkGerGroups("Ger2GemvGroupsNEON", ng, d, n, x, x2, xs, xk, y, y2, ldy, out, lda, true) {
		need("Ger2GemvGroupsNEON", "a", a, (ng*d-1)*lda+n-1)
		ger2GemvGroupsNEON(ng, d, n, alpha, a, lda, x, x2, xs, xk, y, y2, ldy, out)
	}
}

// GemvNTGroupsNEON is GemvNGroupsNEON overwriting y, followed by
// GemvTGroupsNEON of that y overwriting z, in one call. Each row's dot
// product of 4-column blocks is folded across the lanes, the last n%4
// columns' added after. It is equivalent to
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
func GemvNTGroupsNEON(ng, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int, z []float32, ldz int) {
	strides("GemvNTGroupsNEON", ldz)
	if checkGemvNGroups("GemvNTGroupsNEON", ng, d, n, a, lda, x, ldx, y, ys, yk) {
		need("GemvNTGroupsNEON", "z", z, (ng-1)*ldz+n-1)
		gemvNTGroupsNEON(ng, d, n, a, lda, x, ldx, y, ys, yk, z, ldz)
	}
}

// FMAPeakAccNEON is the number of accumulators of FMAPeakNEON
// (asm/_gen/arm64/fmapeak.s.tmpl says why: at least latency × pipes = 16
// independent FMLAs on the widest current cores).
const FMAPeakAccNEON = 24

// FMAPeakNEON is the FMA throughput loop with NEON: FMAPeakAccNEON (24)
// independent accumulators of 4 lanes, each updated once per iteration by
// one FMLA, with no memory access in the loop, so that it runs at the FMA
// issue rate of the core; it does 2·24·4·iters flops. out holds 4 values,
// in 8, iters ≥ 0 (0 writes out = 0). It is equivalent to
//
//	var acc [24][4]float32
//	for range iters {
//		for k := range acc {
//			for l := range 4 {
//				acc[k][l] += in[l] * in[4+l] // fused: one rounding
//			}
//		}
//	}
//	for l := range 4 {
//		s := acc[0][l]
//		for k := 1; k < 24; k++ {
//			s += acc[k][l]
//		}
//		out[l] = s
//	}
func FMAPeakNEON(out, in []float32, iters int) {
	dims("FMAPeakNEON", iters)
	need("FMAPeakNEON", "out", out, 3)
	need("FMAPeakNEON", "in", in, 7)
	fmaPeakNEON(out, in, iters)
}

// BiasActNEON adds bias[r] to row r of the rows×n matrix y of row stride
// ldy and, when relu ≠ 0, applies the ReLU as Go's max(v, 0) computes it
// on arm64 (FMAX: v for v > 0, +0 for any other number, −0 included, a
// NaN quieted). It is equivalent to
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
func BiasActNEON(rows, n int, y []float32, ldy int, bias []float32, relu int) {
	if fastBiasAct(rows, n, y, ldy, bias) || checkBiasAct("BiasActNEON", rows, n, y, ldy, bias) {
		biasActNEON(rows, n, y, ldy, bias, relu)
	}
}

// ReluMaskNEON writes dx = dy where y > 0 and +0 elsewhere (y NaN or ≤ 0;
// dy's bits pass through, NaN included, where y > 0). dx may be dy (not a
// partial overlap). It is equivalent to
//
//	for i := 0; i < n; i++ {
//		if y[i] > 0 {
//			dx[i] = dy[i]
//		} else {
//			dx[i] = 0
//		}
//	}
func ReluMaskNEON(n int, y, dy, dx []float32) {
	if fastReluMask(n, y, dy, dx) || checkReluMask("ReluMaskNEON", n, y, dy, dx) {
		reluMaskNEON(n, y, dy, dx)
	}
}

// AdamStepNEON applies one Adam step to n weights w with gradient g (or,
// when h is not empty, the sum g + h, rounded once; g is not written) and
// moments m and v: with decoupled = 0, torch.optim.Adam's L2 weight
// decay (wd·w added to g); otherwise AdamW's, wd then being the factor
// 1 − lr·wd that w is scaled by. The scalars are precomputed by the caller
// (package kernels: b1 = β1, c1 = 1 − β1, b2 = β2, c2 = 1 − β2, step =
// lr/(1 − β1ᵗ), rbc2 = 1/sqrt(1 − β2ᵗ)). Every product is rounded before
// its sum, the square root is correctly rounded and the division is a true
// one (no FMLA; Go itself may fuse the loop's multiply-adds on arm64, so
// the two may differ in the last bits). It is equivalent to
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
func AdamStepNEON(n, decoupled int, w, g, h, m, v []float32, b1, c1, b2, c2, wd, step, rbc2, eps float32) {
	if fastAdamStep(n, w, g, h, m, v) || checkAdamStep("AdamStepNEON", n, w, g, h, m, v) {
		adamStepNEON(n, decoupled, w, g, h, m, v, b1, c1, b2, c2, wd, step, rbc2, eps)
	}
}
