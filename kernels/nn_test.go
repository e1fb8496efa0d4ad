package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// nnCheckFD compares directional derivatives <grad, δ> with central
// differences (L(p+hδ) − L(p−hδ))/(2h), for a random dense direction δ and
// for the coordinate directions of the first, the last and a random
// element of p (a dense direction alone would hide an error in a single
// element). terms evaluates L at the current contents of p (perturbed in
// place, restored afterwards) as a list of float64 terms whose sum is L;
// differences are taken term by term, so unaffected terms cancel exactly.
// The tolerance is the truncation error, 1e-3 relative (h is chosen so that
// h²·L‴ is far below that), plus the float32 rounding of the terms that
// changed, 8·eps32·Σ(|t⁺|+|t⁻|).
func nnCheckFD(t *testing.T, name string, rng *rand.Rand, p, grad []float32, h float64, terms func() []float64) {
	t.Helper()
	if len(p) == 0 {
		return
	}
	dirs := [][]float32{convRand(rng, len(p), 0)}
	for _, i := range []int{0, len(p) - 1, rng.IntN(len(p))} {
		e := make([]float32, len(p))
		e[i] = 1
		dirs = append(dirs, e)
	}
	orig := append([]float32(nil), p...)
	for di, d := range dirs {
		for i := range p {
			p[i] = orig[i] + float32(h)*d[i]
		}
		tp := terms()
		for i := range p {
			p[i] = orig[i] - float32(h)*d[i]
		}
		tm := terms()
		copy(p, orig)
		// The perturbation actually applied is float32(orig ± hδ); use it
		// rather than hδ so that rounding of p does not count as error.
		var an float64
		for i := range p {
			dp := float64(orig[i]+float32(h)*d[i]) - float64(orig[i]-float32(h)*d[i])
			an += float64(grad[i]) * dp / 2
		}
		var fd, noise float64
		for i := range tp {
			if tp[i] != tm[i] {
				fd += (tp[i] - tm[i]) / 2
				noise += math.Abs(tp[i]) + math.Abs(tm[i])
			}
		}
		tol := 1e-3*math.Abs(an) + 8*convEps32*noise
		if !(math.Abs(fd-an) <= tol) {
			t.Errorf("%s, direction %d: finite difference %g, backward %g (|diff| %.3g > tol %.3g)", name, di, fd/h, an/h, math.Abs(fd-an)/h, tol/h)
		}
	}
}

// nnTerms returns the terms r[i]·y[i] of <r, y>.
func nnTerms(r, y []float32) []float64 {
	out := make([]float64, len(r))
	for i := range r {
		out[i] = float64(r[i]) * float64(y[i])
	}
	return out
}

// nnScalar wraps a scalar loss as a one-term list.
func nnScalar(l float32, err error) []float64 {
	if err != nil {
		panic(err)
	}
	return []float64{float64(l)}
}

func TestSquashForwardBackwardFD(t *testing.T) {
	forEachImpl(t, func(t *testing.T, _ string) {
		rng := rand.New(rand.NewPCG(11, 12))
		for _, kind := range []Squash{SquashMazzia, SquashSabour} {
			for _, sh := range [][3]int{{1, 1, 1}, {2, 3, 5}, {3, 8, 17}, {1, 16, 10}, {2, 5, 3}} {
				b, d, n := sh[0], sh[1], sh[2]
				name := fmt.Sprintf("%v b=%d d=%d n=%d", kind, b, d, n)
				s := convRand(rng, b*d*n, 1)
				r := convRand(rng, b*d*n, 2)
				v := convNaN(b*d*n, 3)
				if err := SquashForward(kind, b, d, n, s, v); err != nil {
					t.Fatal(err)
				}
				// Forward against the scalar formula, sample by sample.
				for k := 0; k < b; k++ {
					for i := 0; i < n; i++ {
						var q float64
						for l := 0; l < d; l++ {
							x := float64(s[(k*d+l)*n+i])
							q += x * x
						}
						nr := math.Sqrt(q + SquashEps)
						f := (1 - math.Exp(-nr)) / nr
						if kind == SquashSabour {
							f = q / (1 + q) / nr
						}
						for l := 0; l < d; l++ {
							want := f * float64(s[(k*d+l)*n+i])
							if got := float64(v[(k*d+l)*n+i]); math.Abs(got-want) > 1e-5*(math.Abs(want)+1e-3) {
								t.Fatalf("%s: v[%d,%d,%d] = %g, want %g", name, k, l, i, got, want)
							}
						}
					}
				}
				ds := convNaN(b*d*n, 1)
				if err := SquashBackward(kind, b, d, n, s, r, ds); err != nil {
					t.Fatal(err)
				}
				nnCheckFD(t, name, rng, s, ds, 1e-2, func() []float64 {
					if err := SquashForward(kind, b, d, n, s, v); err != nil {
						t.Fatal(err)
					}
					return nnTerms(r, v)
				})
			}
		}
	})
}

func TestMarginLoss(t *testing.T) {
	p := DefaultMarginParams()
	if p.MPlus != 0.9 || p.MMinus != 0.1 || p.Lambda != 0.5 || p.Eps != 1e-7 {
		t.Fatalf("DefaultMarginParams = %+v", p)
	}
	// Hand example, one sample, d = 2, two classes, component-major:
	// capsule 0 = (0.3, 0.4), |v| = 0.5, true class: (0.9 − 0.5)² = 0.16;
	// capsule 1 = (0.6, 0.8), |v| = 1: 0.5·(1 − 0.1)² = 0.405. Sum 0.565.
	// Second sample: the same capsules, label 1: capsule 0 gives
	// 0.5·(0.5−0.1)² = 0.08, capsule 1 (|v| ≥ m⁺) 0. Mean (0.565+0.08)/2.
	v := []float32{0.3, 0.6, 0.4, 0.8, 0.3, 0.6, 0.4, 0.8}
	norms := make([]float32, 4)
	dv := make([]float32, 8)
	loss, err := MarginLoss(p, 2, 2, 2, v, []int{0, 1}, norms, dv)
	if err != nil {
		t.Fatal(err)
	}
	if want := (0.565 + 0.08) / 2; math.Abs(float64(loss)-want) > 1e-6 {
		t.Errorf("loss = %g, want %g", loss, want)
	}
	for i, want := range []float32{0.5, 1, 0.5, 1} {
		if math.Abs(float64(norms[i]-want)) > 1e-6 {
			t.Errorf("norms[%d] = %g, want %g", i, norms[i], want)
		}
	}
	labels := make([]int, 2)
	if err := PredictLabels(2, 2, norms, labels); err != nil || labels[0] != 1 || labels[1] != 1 {
		t.Errorf("PredictLabels = %v, %v; want [1 1]", labels, err)
	}
	// Sample 2, capsule 1 has |v| = 1 > m⁺: zero gradient.
	if dv[5] != 0 || dv[7] != 0 {
		t.Errorf("dv of a satisfied capsule = %g, %g; want 0", dv[5], dv[7])
	}

	// Finite differences on random capsules whose norms straddle m⁻ and m⁺.
	rng := rand.New(rand.NewPCG(13, 14))
	for _, sh := range [][3]int{{1, 1, 1}, {3, 4, 10}, {2, 8, 5}, {4, 16, 3}} {
		b, d, nc := sh[0], sh[1], sh[2]
		v := convRand(rng, b*d*nc, 1)
		for i := range v {
			v[i] *= 0.6
		}
		labels := make([]int, b)
		for k := range labels {
			labels[k] = rng.IntN(nc)
		}
		dv := convNaN(b*d*nc, 2)
		if _, err := MarginLoss(p, b, d, nc, v, labels, nil, dv); err != nil {
			t.Fatal(err)
		}
		nnCheckFD(t, fmt.Sprintf("margin b=%d d=%d n=%d", b, d, nc), rng, v, dv, 1e-3, func() []float64 {
			return nnScalar(MarginLoss(p, b, d, nc, v, labels, nil, nil))
		})
	}

	// Errors and NaN.
	if _, err := MarginLoss(p, 2, 2, 2, v, []int{0, 2}, nil, nil); err == nil {
		t.Error("label 2 of 2 classes accepted")
	}
	if _, err := MarginLoss(p, 2, 2, 2, v, []int{-1, 0}, nil, nil); err == nil {
		t.Error("label -1 accepted")
	}
	if _, err := MarginLoss(p, 2, 2, 2, v, []int{0}, nil, nil); err == nil {
		t.Error("short labels accepted")
	}
	if _, err := MarginLoss(p, 2, 2, 2, v[:7], []int{0, 0}, nil, nil); err == nil {
		t.Error("short v accepted")
	}
	if _, err := MarginLoss(p, 2, 2, 2, v, []int{0, 0}, norms[:3], nil); err == nil {
		t.Error("short norms accepted")
	}
	if _, err := MarginLoss(p, 2, 2, 2, v, []int{0, 0}, nil, dv[:7]); err == nil {
		t.Error("short dv accepted")
	}
	for _, at := range []int{0, 1} { // true class and other class
		vn := append([]float32(nil), v...)
		vn[at] = float32(math.NaN())
		if l, err := MarginLoss(p, 2, 2, 2, vn, []int{0, 0}, nil, dv); err != nil || !math.IsNaN(float64(l)) || !math.IsNaN(float64(dv[at])) {
			t.Errorf("NaN in v[%d]: loss %g, dv %g, err %v; want NaN", at, l, dv[at], err)
		}
	}
}

func TestPredictLabelsNaN(t *testing.T) {
	nan := float32(math.NaN())
	labels := make([]int, 3)
	if err := PredictLabels(3, 3, []float32{nan, 0.2, 0.1, 0.3, nan, 0.5, nan, nan, nan}, labels); err != nil {
		t.Fatal(err)
	}
	if labels[0] != 1 || labels[1] != 2 || labels[2] != 0 {
		t.Errorf("labels = %v, want [1 2 0]", labels)
	}
	if err := PredictLabels(2, 3, make([]float32, 5), labels); err == nil {
		t.Error("short norms accepted")
	}
}

func TestReconLoss(t *testing.T) {
	// Hand example: b = 2, n = 2: errors (1, −2) and (0, 3): sums 5 and 9,
	// mean 7, times α = 0.5 → 3.5; gradient 2·0.5·e/2 = e/2.
	recon := []float32{1, 0, 2, 3}
	x := []float32{0, 2, 2, 0}
	d := make([]float32, 4)
	l, err := ReconLoss(0.5, 2, 2, recon, x, d)
	if err != nil || l != 3.5 {
		t.Fatalf("ReconLoss = %g, %v; want 3.5", l, err)
	}
	for i, want := range []float32{0.5, -1, 0, 1.5} {
		if d[i] != want {
			t.Errorf("drecon[%d] = %g, want %g", i, d[i], want)
		}
	}
	rng := rand.New(rand.NewPCG(15, 16))
	b, n := 3, 50
	recon, x = convRand(rng, b*n, 1), convRand(rng, b*n, 2)
	d = convNaN(b*n, 0)
	if _, err := ReconLoss(0.392, b, n, recon, x, d); err != nil {
		t.Fatal(err)
	}
	nnCheckFD(t, "recon", rng, recon, d, 1e-2, func() []float64 {
		return nnScalar(ReconLoss(0.392, b, n, recon, x, nil))
	})
	recon[7] = float32(math.NaN())
	if l, _ := ReconLoss(1, b, n, recon, x, nil); !math.IsNaN(float64(l)) {
		t.Errorf("NaN recon: loss %g", l)
	}
	if _, err := ReconLoss(1, b, n, recon[:b*n-1], x, nil); err == nil {
		t.Error("short recon accepted")
	}
	if _, err := ReconLoss(1, b, n, recon, x[:1], nil); err == nil {
		t.Error("short x accepted")
	}
	if _, err := ReconLoss(1, b, n, recon, x, d[:2]); err == nil {
		t.Error("short drecon accepted")
	}
}

func TestMaskCapsules(t *testing.T) {
	// b = 1, d = 2, 3 classes, component-major v: capsule j = (v[j], v[3+j]).
	v := []float32{1, 2, 3, 4, 5, 6}
	out := convNaN(6, 1)
	if err := MaskCapsules(1, 2, 3, v, []int{1}, out); err != nil {
		t.Fatal(err)
	}
	for i, want := range []float32{0, 0, 2, 5, 0, 0} { // j-major: capsule 1 at 2..3
		if out[i] != want {
			t.Errorf("out[%d] = %g, want %g", i, out[i], want)
		}
	}
	// Adjoint: <dout, Mask(v)> = <MaskBackward(dout), v> (the mask is
	// linear, so this is its finite-difference check with any step).
	rng := rand.New(rand.NewPCG(17, 18))
	b, d, nc := 3, 4, 5
	v = convRand(rng, b*d*nc, 2)
	dout := convRand(rng, b*d*nc, 3)
	labels := []int{4, 0, 2}
	out = convNaN(b*d*nc, 0)
	dv := convNaN(b*d*nc, 1)
	if err := MaskCapsules(b, d, nc, v, labels, out); err != nil {
		t.Fatal(err)
	}
	if err := MaskCapsulesBackward(b, d, nc, dout, labels, dv); err != nil {
		t.Fatal(err)
	}
	if l, r := convDot64(dout, out), convDot64(dv, v); math.Abs(l-r) > 1e-5*(convAbsDot64(dout, out)+1e-6) {
		t.Errorf("<dout, mask(v)> = %g, <mask'(dout), v> = %g", l, r)
	}
	nnCheckFD(t, "mask", rng, v, dv, 1, func() []float64 {
		if err := MaskCapsules(b, d, nc, v, labels, out); err != nil {
			t.Fatal(err)
		}
		return nnTerms(dout, out)
	})
	if err := MaskCapsules(b, d, nc, v, []int{0, 5, 0}, out); err == nil {
		t.Error("label out of range accepted")
	}
	if err := MaskCapsulesBackward(b, d, nc, dout, []int{0, 1}, dv); err == nil {
		t.Error("short labels accepted")
	}
	if err := MaskCapsules(b, d, nc, v, labels, out[:5]); err == nil {
		t.Error("short out accepted")
	}
	if err := MaskCapsulesBackward(b, d, nc, dout[:3], labels, dv); err == nil {
		t.Error("short dout accepted")
	}
}

func TestSoftmaxRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	for _, sh := range [][2]int{{1, 1}, {3, 7}, {4, 10}, {2, 33}} {
		rows, cols := sh[0], sh[1]
		x := convRand(rng, rows*cols, 1)
		for i := range x {
			x[i] *= 4
		}
		y := convNaN(rows*cols, 2)
		if err := SoftmaxRows(rows, cols, x, y); err != nil {
			t.Fatal(err)
		}
		for r := 0; r < rows; r++ {
			var s float64
			for _, v := range y[r*cols : (r+1)*cols] {
				s += float64(v)
			}
			if math.Abs(s-1) > 1e-5 {
				t.Errorf("row %d sums to %g", r, s)
			}
		}
		dy := convRand(rng, rows*cols, 3)
		dx := convNaN(rows*cols, 0)
		if err := SoftmaxRowsBackward(rows, cols, y, dy, dx); err != nil {
			t.Fatal(err)
		}
		yy := make([]float32, rows*cols)
		nnCheckFD(t, fmt.Sprintf("softmax %dx%d", rows, cols), rng, x, dx, 1e-2, func() []float64 {
			if err := SoftmaxRows(rows, cols, x, yy); err != nil {
				t.Fatal(err)
			}
			return nnTerms(dy, yy)
		})
	}
	// Large inputs do not overflow; NaN poisons its row only.
	x := []float32{1000, 999, -1000, 1, float32(math.NaN()), 2}
	y := make([]float32, 6)
	if err := SoftmaxRows(2, 3, x, y); err != nil {
		t.Fatal(err)
	}
	if math.Abs(float64(y[0])-1/(1+math.Exp(-1))) > 1e-6 || y[2] != 0 {
		t.Errorf("large row = %v", y[:3])
	}
	for _, v := range y[3:] {
		if !math.IsNaN(float64(v)) {
			t.Errorf("NaN row = %v, want all NaN", y[3:])
		}
	}
	if err := SoftmaxRows(2, 3, x[:5], y); err == nil {
		t.Error("short x accepted")
	}
	if err := SoftmaxRowsBackward(2, 3, y, y, y[:5]); err == nil {
		t.Error("short dx accepted")
	}
}

func TestActivations(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	n := 101
	x := convRand(rng, n, 1)
	for i := range x { // keep away from the ReLU kink at 0 (step 1e-2)
		if math.Abs(float64(x[i])) < 0.05 {
			x[i] += 0.1
		}
		x[i] *= 3
	}
	r := convRand(rng, n, 2)
	y, dx := make([]float32, n), convNaN(n, 3)

	if err := ReLU(x, y); err != nil {
		t.Fatal(err)
	}
	if err := ReLUBackward(x, r, dx); err != nil {
		t.Fatal(err)
	}
	nnCheckFD(t, "relu", rng, x, dx, 1e-2, func() []float64 {
		if err := ReLU(x, y); err != nil {
			t.Fatal(err)
		}
		return nnTerms(r, y)
	})
	if err := Sigmoid(x, y); err != nil {
		t.Fatal(err)
	}
	if err := SigmoidBackward(y, r, dx); err != nil {
		t.Fatal(err)
	}
	nnCheckFD(t, "sigmoid", rng, x, dx, 1e-2, func() []float64 {
		if err := Sigmoid(x, y); err != nil {
			t.Fatal(err)
		}
		return nnTerms(r, y)
	})

	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	ex := []float32{nan, -1e30, -100, -inf, 100, 1e30, inf, 0}
	ey := make([]float32, len(ex))
	if err := Sigmoid(ex, ey); err != nil {
		t.Fatal(err)
	}
	want := []float32{nan, 0, float32(math.Exp(-100)), 0, 1, 1, 1, 0.5}
	for i := range ex {
		if !(ey[i] == want[i] || (math.IsNaN(float64(ey[i])) && math.IsNaN(float64(want[i])))) {
			t.Errorf("Sigmoid(%g) = %g, want %g", ex[i], ey[i], want[i])
		}
	}
	if err := ReLU(ex, ey); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(float64(ey[0])) || ey[1] != 0 || ey[5] != 1e30 {
		t.Errorf("ReLU(%v) = %v", ex, ey)
	}
	// In place.
	z := []float32{-1, 2}
	if err := ReLU(z, z); err != nil || z[0] != 0 || z[1] != 2 {
		t.Errorf("in-place ReLU = %v, %v", z, err)
	}
	for i, err := range []error{
		ReLU(x, y[:n-1]), ReLUBackward(x, r[:1], dx), ReLUBackward(x, r, dx[:1]),
		Sigmoid(x[:1], y), SigmoidBackward(y, r[:2], dx), SigmoidBackward(y, r, dx[:2]),
	} {
		if err == nil {
			t.Errorf("length mismatch %d accepted", i)
		}
	}
}

func TestBias(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	// NCHW: the bias add is linear in the bias with adjoint BiasGradNCHW:
	// <R, x + bias> − <R, x> = <BiasGrad(R), bias>.
	n, c, hw := 3, 4, 7
	x := convRand(rng, n*c*hw, 1)
	bias := convRand(rng, c, 2)
	r := convRand(rng, n*c*hw, 3)
	y := append([]float32(nil), x...)
	if err := BiasAddNCHW(n, c, hw, y, bias); err != nil {
		t.Fatal(err)
	}
	for i := range y {
		if ch := i / hw % c; y[i] != x[i]+bias[ch] {
			t.Fatalf("BiasAddNCHW y[%d] = %g, want %g", i, y[i], x[i]+bias[ch])
		}
	}
	db := []float32{1, 2, 3, 4} // accumulated into
	if err := BiasGradNCHW(n, c, hw, r, db); err != nil {
		t.Fatal(err)
	}
	for i := range db {
		db[i] -= float32(i + 1)
	}
	nnCheckFD(t, "bias nchw", rng, bias, db, 1, func() []float64 {
		copy(y, x)
		if err := BiasAddNCHW(n, c, hw, y, bias); err != nil {
			t.Fatal(err)
		}
		return nnTerms(r, y)
	})
	// Columns.
	rows, cols := 5, 6
	x = convRand(rng, rows*cols, 1)
	bias = convRand(rng, cols, 2)
	r = convRand(rng, rows*cols, 3)
	y = append([]float32(nil), x...)
	if err := BiasAddCols(rows, cols, y, bias); err != nil {
		t.Fatal(err)
	}
	for i := range y {
		if y[i] != x[i]+bias[i%cols] {
			t.Fatalf("BiasAddCols y[%d] = %g, want %g", i, y[i], x[i]+bias[i%cols])
		}
	}
	db = make([]float32, cols)
	if err := BiasGradCols(rows, cols, r, db); err != nil {
		t.Fatal(err)
	}
	nnCheckFD(t, "bias cols", rng, bias, db, 1, func() []float64 {
		copy(y, x)
		if err := BiasAddCols(rows, cols, y, bias); err != nil {
			t.Fatal(err)
		}
		return nnTerms(r, y)
	})
	for i, err := range []error{
		BiasAddNCHW(n, c, hw, make([]float32, n*c*hw-1), make([]float32, c)),
		BiasAddNCHW(n, c, hw, make([]float32, n*c*hw), make([]float32, c-1)),
		BiasGradNCHW(n, c, hw, make([]float32, n*c*hw-1), make([]float32, c)),
		BiasGradNCHW(n, c, hw, make([]float32, n*c*hw), make([]float32, c-1)),
		BiasAddCols(rows, cols, x[:3], bias), BiasAddCols(rows, cols, x, bias[:2]),
		BiasGradCols(rows, cols, r[:3], db), BiasGradCols(rows, cols, r, db[:2]),
		BiasAddCols(-1, cols, x, bias),
	} {
		if err == nil {
			t.Errorf("bad length %d accepted", i)
		}
	}
}

func TestAdamStep(t *testing.T) {
	p := DefaultAdamParams()
	if p.LR != 1e-3 || p.Beta1 != 0.9 || p.Beta2 != 0.999 || p.Eps != 1e-8 || p.WeightDecay != 1e-6 {
		t.Fatalf("DefaultAdamParams = %+v", p)
	}
	// Hand-computed two steps, lr 0.1, wd 0.01:
	// w = 1, g = 0.5 then −0.25:
	//   t=1: g' = 0.51, m = 0.051, v = 2.601e-4, m̂ = 0.51, v̂ = 0.2601,
	//        w = 1 − 0.1·0.51/(0.51+1e-8) = 0.9000000020
	//   t=2: g' = −0.25 + 0.009 = −0.241, m = 0.0459 − 0.0241 = 0.0218,
	//        v = 2.598399e-4 + 5.8081e-5 = 3.179209e-4,
	//        m̂ = 0.0218/0.19 = 0.11473684, v̂ = 3.179209e-4/0.001999 = 0.15904,
	//        w = 0.9 − 0.1·0.11473684/(0.3987980+1e-8) = 0.87122935
	// w = −2, g = 0 (weight decay alone):
	//   t=1: g' = −0.02, m̂ = −0.02, v̂ = 4e-4, w = −2 + 0.1 = −1.9000000500
	//   t=2: g' = −0.019, m = −0.0037, v = 7.606e-7,
	//        w = −1.9 + 0.1·0.019473684/0.019506207 = −1.80016659
	p = AdamParams{LR: 0.1, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01}
	w := []float32{1, -2}
	m, v := make([]float32, 2), make([]float32, 2)
	if err := AdamStep(p, 1, w, []float32{0.5, 0}, m, v); err != nil {
		t.Fatal(err)
	}
	check := func(step int, want, wantM, wantV []float64) {
		t.Helper()
		for i := range w {
			for _, c := range []struct {
				what      string
				got, want float64
			}{{"w", float64(w[i]), want[i]}, {"m", float64(m[i]), wantM[i]}, {"v", float64(v[i]), wantV[i]}} {
				if math.Abs(c.got-c.want) > 2e-6*math.Abs(c.want) {
					t.Errorf("step %d: %s[%d] = %.9g, want %.9g", step, c.what, i, c.got, c.want)
				}
			}
		}
	}
	check(1, []float64{0.9000000020, -1.9000000500}, []float64{0.051, -0.002}, []float64{2.601e-4, 4e-7})
	if err := AdamStep(p, 2, w, []float32{-0.25, 0}, m, v); err != nil {
		t.Fatal(err)
	}
	check(2, []float64{0.87122935, -1.80016659}, []float64{0.0218, -0.0037}, []float64{3.179209e-4, 7.606e-7})

	// Decoupled (AdamW), lr 0.1, wd 0.01: the weights shrink by 0.999
	// before the update, which sees g alone:
	// w = 1, g = 0.5 then −0.25:
	//   t=1: m = 0.05, v = 2.5e-4, w = 0.999 − 0.1·0.5/(0.5+1e-8) = 0.899000002
	//   t=2: w·0.999 = 0.898101002, m = 0.02, v = 3.1225e-4,
	//        m̂ = 0.10526316, v̂ = 0.15620310, w = 0.87146730
	// w = −2, g = 0: m = v = 0, the decay alone: −1.998, then −1.996002
	// (where L2 moved it by lr per step, Adam's normalised decay).
	p.Decoupled = true
	w = []float32{1, -2}
	clear(m)
	clear(v)
	if err := AdamStep(p, 1, w, []float32{0.5, 0}, m, v); err != nil {
		t.Fatal(err)
	}
	check(1, []float64{0.899000002, -1.998}, []float64{0.05, 0}, []float64{2.5e-4, 0})
	if err := AdamStep(p, 2, w, []float32{-0.25, 0}, m, v); err != nil {
		t.Fatal(err)
	}
	check(2, []float64{0.8714672987, -1.996002}, []float64{0.02, 0}, []float64{3.1225e-4, 0})
	p.Decoupled = false

	// NaN gradient propagates; errors.
	g := []float32{float32(math.NaN()), 0}
	if err := AdamStep(p, 3, w, g, m, v); err != nil || !math.IsNaN(float64(w[0])) || math.IsNaN(float64(w[1])) {
		t.Errorf("NaN gradient: w = %v, err %v", w, err)
	}
	if err := AdamStep(p, 0, w, g, m, v); err == nil {
		t.Error("step 0 accepted")
	}
	if err := AdamStep(p, 1, w, g[:1], m, v); err == nil {
		t.Error("short g accepted")
	}
	if err := AdamStep(p, 1, w, g, m, v[:1]); err == nil {
		t.Error("short v accepted")
	}
}

func TestSquashErrors(t *testing.T) {
	s := make([]float32, 24)
	for i, err := range []error{
		SquashForward(Squash(7), 1, 2, 3, s, s),
		SquashForward(SquashMazzia, 2, 3, 4, s[:23], s),
		SquashForward(SquashMazzia, 2, 3, 4, s, s[:5]),
		SquashForward(SquashSabour, -1, 3, 4, s, s),
		SquashBackward(SquashMazzia, 2, 3, 4, s, s[:23], s),
		SquashBackward(SquashMazzia, 2, 3, 4, s, s, s[:23]),
		SquashBackward(Squash(-1), 2, 3, 4, s, s, s),
	} {
		if err == nil {
			t.Errorf("bad call %d accepted", i)
		}
	}
	if err := SquashForward(SquashMazzia, 0, 3, 4, nil, nil); err != nil {
		t.Errorf("b = 0: %v", err)
	}
}

func TestNNAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	b, d, nc := 4, 8, 10
	v := convRand(rng, b*d*nc, 0)
	dv, norms := make([]float32, b*d*nc), make([]float32, b*nc)
	labels := []int{1, 2, 3, 4}
	x, y := convRand(rng, 200, 0), make([]float32, 200)
	w, g, m, s2 := convRand(rng, 200, 0), convRand(rng, 200, 0), make([]float32, 200), make([]float32, 200)
	bias := convRand(rng, 10, 0)
	var err error
	for name, f := range map[string]func(){
		"SquashForward":        func() { err = SquashForward(SquashMazzia, b, d, nc, v, dv) },
		"SquashBackward":       func() { err = SquashBackward(SquashSabour, b, d, nc, v, v, dv) },
		"MarginLoss":           func() { _, err = MarginLoss(DefaultMarginParams(), b, d, nc, v, labels, norms, dv) },
		"PredictLabels":        func() { err = PredictLabels(b, nc, norms, labels) },
		"ReconLoss":            func() { _, err = ReconLoss(0.5, 4, 50, x, w, y) },
		"MaskCapsules":         func() { err = MaskCapsules(b, d, nc, v, labels, dv) },
		"MaskCapsulesBackward": func() { err = MaskCapsulesBackward(b, d, nc, v, labels, dv) },
		"SoftmaxRows":          func() { err = SoftmaxRows(20, 10, x, y) },
		"SoftmaxRowsBackward":  func() { err = SoftmaxRowsBackward(20, 10, x, w, y) },
		"ReLU":                 func() { err = ReLU(x, y) },
		"ReLUBackward":         func() { err = ReLUBackward(x, w, y) },
		"Sigmoid":              func() { err = Sigmoid(x, y) },
		"SigmoidBackward":      func() { err = SigmoidBackward(x, w, y) },
		"BiasAddNCHW":          func() { err = BiasAddNCHW(2, 10, 10, y, bias) },
		"BiasGradNCHW":         func() { err = BiasGradNCHW(2, 10, 10, x, bias) },
		"BiasAddCols":          func() { err = BiasAddCols(20, 10, y, bias) },
		"BiasGradCols":         func() { err = BiasGradCols(20, 10, x, bias) },
		"AdamStep":             func() { err = AdamStep(DefaultAdamParams(), 3, w, g, m, s2) },
	} {
		if a := testing.AllocsPerRun(10, f); a != 0 || err != nil {
			t.Errorf("%s: %v allocations per call, err %v", name, a, err)
		}
	}
}

func TestPrimaryCapsules(t *testing.T) {
	b, maps, d, hw := 2, 3, 4, 5
	y := make([]float32, b*maps*d*hw)
	for i := range y {
		y[i] = float32(i)
	}
	s := make([]float32, len(y))
	if err := PrimaryCapsules(b, maps, d, hw, y, s); err != nil {
		t.Fatal(err)
	}
	for k := range b {
		for m := range maps {
			for l := range d {
				for p := range hw {
					if got, want := s[(k*d+l)*maps*hw+m*hw+p], y[((k*maps+m)*d+l)*hw+p]; got != want {
						t.Fatalf("s[%d,%d,%d,%d] = %v, want %v", k, l, m, p, got, want)
					}
				}
			}
		}
	}
	if PrimaryCapsules(b, maps, d, hw, y[:len(y)-1], s) == nil || PrimaryCapsules(b, maps, d, hw, y, s[:3]) == nil || PrimaryCapsules(-1, maps, d, hw, y, s) == nil {
		t.Error("a short slice or a negative size is not an error")
	}
}

// TestReLUValues checks the branchless ReLU and its mask on the special
// values: NaN stays NaN forward; −0 and negative inputs give +0; the
// backward passes dy only where x > 0, so a NaN dy where x ≤ 0 gives 0,
// and a NaN x blocks the gradient.
func TestReLUValues(t *testing.T) {
	nan := float32(math.NaN())
	neg0 := float32(math.Copysign(0, -1))
	x := []float32{-2, neg0, 0, 1.5, nan, float32(math.Inf(1)), float32(math.Inf(-1))}
	y := make([]float32, len(x))
	if err := ReLU(x, y); err != nil {
		t.Fatal(err)
	}
	want := []float32{0, 0, 0, 1.5, nan, float32(math.Inf(1)), 0}
	for i := range x {
		same := y[i] == want[i] && math.Signbit(float64(y[i])) == math.Signbit(float64(want[i]))
		if !same && !(want[i] != want[i] && y[i] != y[i]) {
			t.Errorf("ReLU(%v) = %v, want %v", x[i], y[i], want[i])
		}
	}
	dy := []float32{nan, 3, 4, 5, 6, 7, 8}
	dx := make([]float32, len(x))
	if err := ReLUBackward(x, dy, dx); err != nil {
		t.Fatal(err)
	}
	wantDx := []float32{0, 0, 0, 5, 0, 7, 0}
	for i := range x {
		if dx[i] != wantDx[i] || math.Signbit(float64(dx[i])) {
			t.Errorf("ReLUBackward at x = %v, dy = %v: %v, want %v", x[i], dy[i], dx[i], wantDx[i])
		}
	}
}
