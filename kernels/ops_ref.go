package kernels

import "math"

// refOps is the pure-Go reference implementation of every primitive. It is
// compiled on every GOARCH and is what all SIMD implementations are tested
// against. Loops are written for clarity first; they accumulate in float32
// in the natural index order.
var refOps = ops{
	name:             "ref",
	sgemm:            sgemmRef,
	sgemmWork:        sgemmWorkRef,
	sgemmWorkSize:    sgemmWorkSizeRef,
	gemvN:            gemvNRef,
	gemvT:            gemvTRef,
	ger:              gerRef,
	axpy:             axpyRef,
	mulAddRows:       mulAddRowsRef,
	softmaxCols:      softmaxColsRef,
	softmaxColsGrad:  softmaxColsGradRef,
	softmaxRows:      softmaxRowsRef,
	softmaxRowsGrad:  softmaxRowsGradRef,
	squash:           squashRef,
	squashGrad:       squashGradRef,
	gerGroups:        gerGroupsRef,
	ger2Groups:       ger2GroupsRef,
	ger2GroupsSet:    ger2GroupsSetRef,
	ger2GemvGroups:   ger2GemvGroupsRef,
	gemvNTGroups:     gemvNTGroupsRef,
	gemvTGroups:      gemvTGroupsRef,
	gemvNGroups:      gemvNGroupsRef,
	exp:              expRef,
	biasAct:          biasActRef,
	reluMask:         reluMaskRef,
	compactAct:       compactActRef,
	deinterleaveRows: deinterleaveRowsRef,
	adamStep:         adamStepRef,
	fmaPeak:          fmaLoop{fn: fmaPeakRef, w: fmaRefW, a: fmaRefA},
	i8Name:           "ref",
	gemmI8:           gemmI8PackedRef,
	requant:          requantRef,
}

// sgemmWorkRef is sgemmRef; the plain loops need no work space.
func sgemmWorkRef(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, _ []float32) {
	sgemmRef(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// sgemmWorkSizeRef is 0: the reference loops use no work space.
func sgemmWorkSizeRef(m, n, k int) int { return 0 }

func gemvNRef(m, n int, a []float32, lda int, x, y []float32) {
	for r := 0; r < m; r++ {
		row := a[r*lda : r*lda+n]
		var s float32
		for c, v := range row {
			s += v * x[c]
		}
		y[r] += s
	}
}

func gemvTRef(m, n int, a []float32, lda int, x, y []float32) {
	for r := 0; r < m; r++ {
		row := a[r*lda : r*lda+n]
		xr := x[r]
		for c, v := range row {
			y[c] += xr * v
		}
	}
}

func gerRef(m, n int, x, y, a []float32, lda int) {
	for r := 0; r < m; r++ {
		row := a[r*lda : r*lda+n]
		xr := x[r]
		for c := range row {
			row[c] += xr * y[c]
		}
	}
}

func mulAddRowsRef(k, n int, a []float32, lda int, x []float32, ldx int, y []float32) {
	y = y[:n]
	for l := 0; l < k; l++ {
		ar := a[l*lda : l*lda+n]
		xr := x[l*ldx : l*ldx+n]
		for c := range y {
			y[c] += ar[c] * xr[c]
		}
	}
}

// mulAddRowsBatchRef is the reference of ops.mulAddRowsBatch (refOps leaves
// the field nil: the votes kernels then keep their mulAddRows loops). The
// tests compare the SIMD kernels with it.
func mulAddRowsBatchRef(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int) {
	for b := 0; b < nb; b++ {
		yb := y[b*ystride : b*ystride+n]
		for l := 0; l < k; l++ {
			ar := a[l*lda : l*lda+n]
			xr := x[b*xstride+l*ldx : b*xstride+l*ldx+n]
			for c := range yb {
				yb[c] += ar[c] * xr[c]
			}
		}
	}
}

// mulAddRowsBatchSetRef is the reference of ops.mulAddRowsBatchSet.
func mulAddRowsBatchSetRef(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int) {
	for b := 0; b < nb; b++ {
		clear(y[b*ystride : b*ystride+n])
	}
	mulAddRowsBatchRef(nb, k, n, a, lda, x, ldx, xstride, y, ystride)
}

func gerGroupsRef(g, d, n int, x []float32, xs, xk int, y []float32, ldy int, a []float32, lda int) {
	for j := 0; j < g; j++ {
		yj := y[j*ldy : j*ldy+n]
		for k := 0; k < d; k++ {
			r := j*d + k
			row := a[r*lda : r*lda+n]
			xr := x[j*xs+k*xk]
			yj := yj[:len(row)]
			for c := range row {
				row[c] += xr * yj[c]
			}
		}
	}
}

func ger2GroupsRef(g, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int) {
	for j := 0; j < g; j++ {
		yj := y[j*ldy : j*ldy+n]
		y2j := y2[j*ldy : j*ldy+n]
		for k := 0; k < d; k++ {
			r := j*d + k
			row := a[r*lda : r*lda+n]
			xr, x2r := x[j*xs+k*xk], x2[j*xs+k*xk]
			yj, y2j := yj[:len(row)], y2j[:len(row)]
			for c := range row {
				row[c] = row[c] + xr*yj[c] + x2r*y2j[c]
			}
		}
	}
}

func ger2GroupsSetRef(g, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int) {
	for j := 0; j < g; j++ {
		yj := y[j*ldy : j*ldy+n]
		y2j := y2[j*ldy : j*ldy+n]
		for k := 0; k < d; k++ {
			r := j*d + k
			row := a[r*lda : r*lda+n]
			xr, x2r := x[j*xs+k*xk], x2[j*xs+k*xk]
			yj, y2j := yj[:len(row)], y2j[:len(row)]
			for c := range row {
				row[c] = xr*yj[c] + x2r*y2j[c]
			}
		}
	}
}

func ger2GemvGroupsRef(g, d, n int, alpha float32, a []float32, lda int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, out []float32) {
	for j := 0; j < g; j++ {
		yj := y[j*ldy : j*ldy+n]
		y2j := y2[j*ldy : j*ldy+n]
		for k := 0; k < d; k++ {
			r := j*d + k
			ar, or := a[r*lda:r*lda+n], out[r*lda:r*lda+n]
			var dot float32
			for c, v := range ar {
				dot += v * y2j[c]
			}
			t := alpha * dot
			xr, x2r := x[j*xs+k*xk], x2[j*xs+k*xk]
			for c := range or {
				or[c] = t + xr*yj[c] + x2r*y2j[c]
			}
		}
	}
}

func gemvNTGroupsRef(g, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int, z []float32, ldz int) {
	if d == 0 || n == 0 {
		return // nothing is written (as the SIMD kernels)
	}
	for j := 0; j < g; j++ {
		xj := x[j*ldx : j*ldx+n]
		for k := 0; k < d; k++ {
			r := j*d + k
			var dot float32
			for c, v := range a[r*lda : r*lda+n] {
				dot += v * xj[c]
			}
			y[j*ys+k*yk] = dot
		}
		zj := z[j*ldz : j*ldz+n]
		clear(zj)
		for k := 0; k < d; k++ {
			r := j*d + k
			yr := y[j*ys+k*yk]
			for c, v := range a[r*lda : r*lda+n] {
				zj[c] += yr * v
			}
		}
	}
}

func gemvTGroupsRef(g, d, n int, a []float32, lda int, x []float32, xs, xk int, y []float32, ldy int) {
	for j := 0; j < g; j++ {
		yj := y[j*ldy : j*ldy+n]
		for k := 0; k < d; k++ {
			r := j*d + k
			row := a[r*lda : r*lda+n]
			xr := x[j*xs+k*xk]
			yj := yj[:len(row)]
			for c, v := range row {
				yj[c] += xr * v
			}
		}
	}
}

func gemvNGroupsRef(g, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int) {
	for j := 0; j < g; j++ {
		xj := x[j*ldx : j*ldx+n]
		for k := 0; k < d; k++ {
			r := j*d + k
			row := a[r*lda : r*lda+n]
			xj := xj[:len(row)]
			var s float32
			for c, v := range row {
				s += v * xj[c]
			}
			y[j*ys+k*yk] += s
		}
	}
}

func softmaxColsRef(rows, n int, l, c []float32) {
	for i := 0; i < n; i++ {
		mx := float32(math.Inf(-1))
		for r := 0; r < rows; r++ {
			if v := l[r*n+i]; v > mx {
				mx = v
			}
		}
		var sum float32
		for r := 0; r < rows; r++ {
			e := float32(math.Exp(float64(l[r*n+i] - mx)))
			c[r*n+i] = e
			sum += e
		}
		inv := 1 / sum
		for r := 0; r < rows; r++ {
			c[r*n+i] *= inv
		}
	}
}

func softmaxColsGradRef(rows, n int, c, dc, dl []float32) {
	for i := 0; i < n; i++ {
		var dot float32
		for r := 0; r < rows; r++ {
			dot += c[r*n+i] * dc[r*n+i]
		}
		for r := 0; r < rows; r++ {
			dl[r*n+i] = c[r*n+i] * (dc[r*n+i] - dot)
		}
	}
}

func softmaxRowsRef(rows, n int, l, c []float32) {
	for r := 0; r < rows; r++ {
		row, out := l[r*n:][:n], c[r*n:][:n]
		mx := float32(math.Inf(-1))
		for _, v := range row {
			if v > mx {
				mx = v
			}
		}
		var sum float32
		for i, v := range row {
			e := float32(math.Exp(float64(v - mx)))
			out[i] = e
			sum += e
		}
		inv := 1 / sum
		for i := range out {
			out[i] *= inv
		}
	}
}

func softmaxRowsGradRef(rows, n int, c, dc, dl []float32) {
	for r := 0; r < rows; r++ {
		cr, dcr, dlr := c[r*n:][:n], dc[r*n:][:n], dl[r*n:][:n]
		var dot float32
		for i, v := range cr {
			dot += v * dcr[i]
		}
		for i, v := range cr {
			dlr[i] = v * (dcr[i] - dot)
		}
	}
}

// squashScale returns, for one capsule with squared length q = |s|², the
// factor f with v = f·s and the derivative term h = f'(n)/n, where
// n = sqrt(q + ε), so that ds = f·dv + h·(s·dv)·s.
func squashScale(kind Squash, q float32) (f, h float32) {
	n := float32(math.Sqrt(float64(q + SquashEps)))
	switch kind {
	case SquashSabour:
		// f = q/((1+q)·n); with q = n² − ε treated as a function of s:
		// df/dq via q and n: f = q/(1+q)/n.
		a := q / (1 + q)
		f = a / n
		// d f/ds = (da/dq·2s)/n − a/n²·(s/n)
		//        = s·(2/((1+q)²·n) − a/n³)
		h = 2/((1+q)*(1+q)*n) - a/(n*n*n)
	default: // Mazzia
		e := float32(math.Exp(float64(-n)))
		f = (1 - e) / n
		// f(n) = (1−e^{−n})/n, f'(n) = e^{−n}/n − (1−e^{−n})/n²; h = f'/n.
		h = (e/n - (1-e)/(n*n)) / n
	}
	return f, h
}

func squashRef(kind Squash, d, n int, s, v []float32) {
	for i := 0; i < n; i++ {
		var q float32
		for l := 0; l < d; l++ {
			x := s[l*n+i]
			q += x * x
		}
		f, _ := squashScale(kind, q)
		for l := 0; l < d; l++ {
			v[l*n+i] = f * s[l*n+i]
		}
	}
}

func squashGradRef(kind Squash, d, n int, s, dv, ds []float32) {
	for i := 0; i < n; i++ {
		var q, dot float32
		for l := 0; l < d; l++ {
			x := s[l*n+i]
			q += x * x
			dot += x * dv[l*n+i]
		}
		f, h := squashScale(kind, q)
		for l := 0; l < d; l++ {
			ds[l*n+i] = f*dv[l*n+i] + h*dot*s[l*n+i]
		}
	}
}

// Clamps of the SIMD exp (asm/_gen/expconst): inputs are clamped to
// [expLo, expHi] so that exp is 0 (after gradual underflow) far below and
// +Inf just above ln(MaxFloat32), identically on every implementation.
const (
	expLo = -105
	expHi = 88.7228394
)

// expRef is the reference of ops.exp: the correctly rounded float32 of
// math.Exp of the clamped argument (NaN stays NaN).
func expRef(x, y []float32) {
	for i, v := range x {
		if v < expLo {
			v = expLo
		} else if v > expHi {
			v = expHi
		}
		y[i] = float32(math.Exp(float64(v)))
	}
}

// biasActRef is the bias and ReLU epilogue, the loop convImplicitForward
// ran on every output row before it had a kernel.
func biasActRef(rows, n int, y []float32, ldy int, bias []float32, relu int) {
	for r := 0; r < rows; r++ {
		row := y[r*ldy : r*ldy+n]
		b := bias[r]
		if relu != 0 {
			for j, v := range row {
				row[j] = max(v+b, 0)
			}
		} else {
			for j := range row {
				row[j] += b
			}
		}
	}
}

// compactActRef is compactAct's loop: each row copied, then biasActRef
// on the channel (the direct forward's epilogue before it had a kernel).
var compactActRef = compactActVia(biasActRef)

// deinterleaveRowsRef is deinterleaveRows' loop (deinterleave on every
// row, d1's last value 0 for an odd n). AVX2 and NEON run it too: the
// stride-2 phases are a few percent of a step, measured worth a kernel
// on AVX-512 only (docs/kernels.md).
func deinterleaveRowsRef(rows, n int, src []float32, lds int, d0, d1 []float32, ldd int) {
	n0, n1 := (n+1)/2, n/2
	for r := 0; r < rows; r++ {
		r0, r1 := d0[r*ldd:r*ldd+n0], d1[r*ldd:r*ldd+n0]
		deinterleave(src[r*lds:r*lds+n], r0, r1[:n1])
		clear(r1[n1:])
	}
}

// transpose16Ref is transpose16's loop (the tests' reference; the ref
// implementation leaves transpose16 nil and runs transposePanels' loops).
func transpose16Ref(rows, n int, src []float32, lds, srow int, dst []float32, ldd, drow int) {
	for r := 0; r < rows; r++ {
		for t := 0; t < n; t++ {
			for j := 0; j < 16; j++ {
				dst[r*drow+t*ldd+j] = src[j*lds+r*srow+t]
			}
		}
	}
}

// compactActVia is compactAct as the copy of every row and an
// implementation's biasAct on the channel (NEON: the vector ReLU without
// a kernel of its own).
func compactActVia(biasAct func(rows, n int, y []float32, ldy int, bias []float32, relu int)) func(ch, rows, n int, y, src []float32, lds, ldc int, bias []float32, relu int) {
	return func(ch, rows, n int, y, src []float32, lds, ldc int, bias []float32, relu int) {
		for o := 0; o < ch; o++ {
			yo := y[o*rows*n : (o+1)*rows*n]
			for r := 0; r < rows; r++ {
				copy(yo[r*n:(r+1)*n], src[o*ldc+r*lds:])
			}
			biasAct(1, rows*n, yo, 0, bias[o:o+1], relu)
		}
	}
}

// reluMaskRef writes dx = dy where y > 0 and +0 elsewhere, as a bit mask
// (a conditional move, no branch to mispredict; a NaN dy where y ≤ 0
// gives 0, as the branchy loop did). dx may alias dy.
func reluMaskRef(n int, y, dy, dx []float32) {
	y, dy, dx = y[:n], dy[:n], dx[:n]
	for i, v := range y {
		var m uint32
		if v > 0 {
			m = ^uint32(0)
		}
		dx[i] = math.Float32frombits(math.Float32bits(dy[i]) & m)
	}
}

// axpyRef is Axpy's loop: y[i] += alpha·x[i], rounded twice (the product,
// then the sum).
func axpyRef(alpha float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}
