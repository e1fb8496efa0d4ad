package kernels

import (
	"fmt"
	"math"
	"math/rand"
	randv2 "math/rand/v2"
	"runtime"
	"testing"
)

// capsU32 is the unit roundoff of float32, 2⁻²⁴: a correctly rounded
// operation has relative error at most capsU32.
const capsU32 = 1.0 / (1 << 24)

func capsSmall() bool { return runtime.GOARCH == "arm64" || testing.Short() }

// capsBuf returns n floats starting at offset off of a larger allocation
// (so that kernels see unaligned slices), with its capacity limited to n.
func capsBuf(n, off int) []float32 {
	a := make([]float32, n+off+3)
	return a[off : off+n : off+n]
}

func capsRand(rng *rand.Rand, n, off int, scale float64) []float32 {
	x := capsBuf(n, off)
	for i := range x {
		x[i] = float32(scale * (2*rng.Float64() - 1))
	}
	return x
}

func capsFill(x []float32, val float32) []float32 {
	for i := range x {
		x[i] = val
	}
	return x
}

func caps64(x []float32) []float64 {
	if x == nil {
		return nil
	}
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

func capsAbs64(x []float32) []float64 {
	y := caps64(x)
	for i := range y {
		y[i] = math.Abs(y[i])
	}
	return y
}

func capsMaxAbs(x []float64) float64 {
	m := 0.0
	for _, v := range x {
		m = max(m, math.Abs(v))
	}
	return m
}

// capsCompare reports the first element with |got − want| > tol(e) (or a
// NaN in got), and returns the largest ratio |got − want|/tol seen, so the
// tests can show how much margin the tolerances leave.
func capsCompare(what string, got []float32, want []float64, tol func(e int) float64) (float64, error) {
	if len(got) != len(want) {
		return 0, fmt.Errorf("%s: length %d, want %d", what, len(got), len(want))
	}
	worst := 0.0
	for e := range want {
		d := math.Abs(float64(got[e]) - want[e])
		tl := tol(e)
		if !(d <= tl) {
			return worst, fmt.Errorf("%s[%d] = %g, want %.9g (|diff| %.3g > tol %.3g)", what, e, got[e], want[e], d, tl)
		}
		if tl > 0 {
			worst = max(worst, d/tl)
		}
	}
	return worst, nil
}

// gammaTol is the classical bound for a float32 sum of k products
// accumulated in any order, with or without FMA: |error| <= γ_k·Σ|terms|,
// γ_k = k·u/(1 − k·u). A factor 2 covers the rounding of the float64
// reference and of the final store.
func gammaTol(k int, absSum float64) float64 {
	g := float64(k) * capsU32 / (1 - float64(k)*capsU32)
	return 2*g*absSum + 1e-30
}

// Straight-loop references of the capsule kernels, written from docs/semantics.md §3 over
// the internal layouts without the primitive table, so that the tests do not
// depend on it. They are generic: float32 to compare with the kernels in the
// same precision, float64 as the accurate value the kernels are checked
// against and for finite differences. They allocate freely.

type capsFloat interface{ ~float32 | ~float64 }

// votesRef: uhat[b,j,k,i] = Σ_l W[j,k,l,i]·u[b,l,i].
func votesRef[T capsFloat](sh VotesShape, uhat, w, u []T) {
	B, nIn, nOut, dIn, dOut := sh.Batch, sh.NIn, sh.NOut, sh.DIn, sh.DOut
	for b := 0; b < B; b++ {
		for j := 0; j < nOut; j++ {
			for k := 0; k < dOut; k++ {
				for i := 0; i < nIn; i++ {
					var s T
					for l := 0; l < dIn; l++ {
						s += w[((j*dOut+k)*dIn+l)*nIn+i] * u[(b*dIn+l)*nIn+i]
					}
					uhat[((b*nOut+j)*dOut+k)*nIn+i] = s
				}
			}
		}
	}
}

// votesBackwardRef: du overwritten, dw accumulated.
func votesBackwardRef[T capsFloat](sh VotesShape, dw, du, w, u, duhat []T) {
	B, nIn, nOut, dIn, dOut := sh.Batch, sh.NIn, sh.NOut, sh.DIn, sh.DOut
	for b := 0; b < B; b++ {
		for l := 0; l < dIn; l++ {
			for i := 0; i < nIn; i++ {
				var s T
				for j := 0; j < nOut; j++ {
					for k := 0; k < dOut; k++ {
						s += w[((j*dOut+k)*dIn+l)*nIn+i] * duhat[((b*nOut+j)*dOut+k)*nIn+i]
					}
				}
				du[(b*dIn+l)*nIn+i] = s
			}
		}
	}
	for j := 0; j < nOut; j++ {
		for k := 0; k < dOut; k++ {
			for l := 0; l < dIn; l++ {
				for i := 0; i < nIn; i++ {
					var s T
					for b := 0; b < B; b++ {
						s += duhat[((b*nOut+j)*dOut+k)*nIn+i] * u[(b*dIn+l)*nIn+i]
					}
					dw[((j*dOut+k)*dIn+l)*nIn+i] += s
				}
			}
		}
	}
}

// capsVotesCase checks VotesForward and VotesBackward against the float64
// reference for one shape. Each element is compared with the γ_k bound of
// its own reduction: k = DIn for the votes, NOut·DOut for du, Batch + 1 for
// dw (the accumulation into the previous dw counts as one more term), with
// Σ|terms| computed by running the reference on absolute values.
func capsVotesCase(rng *rand.Rand, sh VotesShape) (float64, error) {
	nIn, nOut, dIn, dOut, bs := sh.NIn, sh.NOut, sh.DIn, sh.DOut, sh.Batch
	nW, nU, nV := nOut*dOut*dIn*nIn, bs*dIn*nIn, bs*nOut*dOut*nIn
	w := capsRand(rng, nW, rng.Intn(4), 1)
	u := capsRand(rng, nU, rng.Intn(4), 1)
	duhat := capsRand(rng, nV, rng.Intn(4), 1)
	dw0 := capsRand(rng, nW, 0, 1)

	want := make([]float64, nV)
	votesRef(sh, want, caps64(w), caps64(u))
	wantAbs := make([]float64, nV)
	votesRef(sh, wantAbs, capsAbs64(w), capsAbs64(u))
	wantDu := make([]float64, nU)
	wantDw := caps64(dw0)
	votesBackwardRef(sh, wantDw, wantDu, caps64(w), caps64(u), caps64(duhat))
	absDu := make([]float64, nU)
	absDw := capsAbs64(dw0)
	votesBackwardRef(sh, absDw, absDu, capsAbs64(w), capsAbs64(u), capsAbs64(duhat))

	uhat := capsFill(capsBuf(nV, rng.Intn(4)), float32(math.NaN())) // must be overwritten
	if err := VotesForward(sh, uhat, w, u); err != nil {
		return 0, err
	}
	du := capsFill(capsBuf(nU, rng.Intn(4)), float32(math.NaN()))
	dw := capsBuf(nW, rng.Intn(4))
	copy(dw, dw0)
	if err := VotesBackward(sh, dw, du, w, u, duhat); err != nil {
		return 0, err
	}
	worst := 0.0
	for _, c := range []struct {
		name string
		got  []float32
		want []float64
		abs  []float64
		k    int
	}{
		{"uhat", uhat, want, wantAbs, dIn},
		{"du", du, wantDu, absDu, nOut * dOut},
		{"dw", dw, wantDw, absDw, bs + 1},
	} {
		r, err := capsCompare(c.name, c.got, c.want, func(e int) float64 { return gammaTol(c.k, c.abs[e]) })
		if err != nil {
			return 0, err
		}
		worst = max(worst, r)
	}
	return worst, nil
}

func TestVotesVsRef(t *testing.T) {
	forEachImpl(t, func(t *testing.T, _ string) {
		rng := rand.New(rand.NewSource(1))
		worst := 0.0
		// NIn = 300 is run with blocking forced on (votesWholeBytes = 0 and
		// votesBlockBytes = 0: blocks of 64), so that it spans several blocks
		// and a tail.
		// NIn = 17 is run with the backward sums split into groups of 3 rows
		// (votesGroupForce), as votesGroup does for 4 KiB-aliased strides.
		defer func(w, b, g int) {
			votesWholeBytes, votesBlockBytes, votesGroupForce = w, b, g
		}(votesWholeBytes, votesBlockBytes, votesGroupForce)
		nIns := []int{1, 3, 17, 100, 300}
		n, blocked := 0, 0
		for _, nIn := range nIns {
			votesWholeBytes, votesBlockBytes, votesGroupForce = 8<<20, 256<<10, 0
			if nIn == 300 {
				votesWholeBytes, votesBlockBytes = 0, 0
			}
			if nIn == 17 {
				votesGroupForce = 3
			}
			for _, nOut := range []int{1, 2, 5, 10} {
				for _, dIn := range []int{1, 4, 8} {
					for _, dOut := range []int{1, 3, 4, 5, 8, 16} {
						if capsSmall() && rng.Intn(6) != 0 || nIn == 300 && dOut != 3 && dOut != 16 {
							continue
						}
						sh := VotesShape{Batch: 1 + rng.Intn(3), NIn: nIn, NOut: nOut, DIn: dIn, DOut: dOut}
						if votesChunk(sh) < nIn {
							blocked++
						}
						r, err := capsVotesCase(rng, sh)
						if err != nil {
							t.Fatalf("%+v: %v", sh, err)
						}
						worst = max(worst, r)
						n++
					}
				}
			}
		}
		if blocked == 0 {
			t.Error("no shape exercised the blocking of the votes")
		}
		t.Logf("%d shapes (%d blocked), largest |diff|/tol %.3f", n, blocked, worst)
	})
}

// TestCapsConverters: the PyTorch converters are inverse of each other and
// map the documented index pairs.
func TestCapsConverters(t *testing.T) {
	vs := VotesShape{NIn: 5, NOut: 3, DIn: 2, DOut: 4}
	n := vs.NOut * vs.NIn * vs.DOut * vs.DIn
	src := make([]float32, n)
	for i := range src {
		src[i] = float32(i)
	}
	in, back := make([]float32, n), make([]float32, n)
	if err := VotesWeightsFromTorch(vs, in, src); err != nil {
		t.Fatal(err)
	}
	j, i, k, l := 2, 4, 3, 1
	if got, want := in[((j*vs.DOut+k)*vs.DIn+l)*vs.NIn+i], src[((j*vs.NIn+i)*vs.DOut+k)*vs.DIn+l]; got != want {
		t.Errorf("W[j,k,l,i] = %g, want torch W[j,i,k,l] = %g", got, want)
	}
	if err := VotesWeightsToTorch(vs, back, in); err != nil {
		t.Fatal(err)
	}
	for e := range src {
		if back[e] != src[e] {
			t.Fatalf("VotesWeightsToTorch(FromTorch(x))[%d] = %g, want %g", e, back[e], src[e])
		}
	}
	// Capsules (B=2, n=5, d=3) and priors (nIn=5, nOut=3).
	c := src[:30]
	ci, cb := make([]float32, 30), make([]float32, 30)
	if err := CapsFromTorch(2, 5, 3, ci, c); err != nil {
		t.Fatal(err)
	}
	if got, want := ci[(1*3+2)*5+4], c[(1*5+4)*3+2]; got != want {
		t.Errorf("u[b,l,i] = %g, want torch u[b,i,l] = %g", got, want)
	}
	if err := CapsToTorch(2, 5, 3, cb, ci); err != nil {
		t.Fatal(err)
	}
	p, pi, pb := src[:15], make([]float32, 15), make([]float32, 15)
	if err := PriorFromTorch(5, 3, pi, p); err != nil {
		t.Fatal(err)
	}
	if got, want := pi[2*5+4], p[4*3+2]; got != want {
		t.Errorf("prior[j,i] = %g, want torch b[i,j] = %g", got, want)
	}
	if err := PriorToTorch(5, 3, pb, pi); err != nil {
		t.Fatal(err)
	}
	for e := range cb {
		if cb[e] != c[e] {
			t.Fatalf("CapsToTorch(CapsFromTorch(x))[%d] = %g, want %g", e, cb[e], c[e])
		}
	}
	for e := range pb {
		if pb[e] != p[e] {
			t.Fatalf("PriorToTorch(PriorFromTorch(x))[%d] = %g, want %g", e, pb[e], p[e])
		}
	}
}

// TestVotesBatchedGroups checks VotesForward and VotesBackward of every
// implementation against impl=ref on batches that leave partial sample
// groups in the mulAddRowsBatch paths (votesFwdGroup, votesBwdGroup and the
// 8 samples of a dW call), DIn beyond 8 and NIn with vector tails, with
// blocking over NIn forced on and off. Tolerance: every output is a sum of
// K products (K = DIn, NOut·DOut or Batch, plus the accumulated dw), summed
// in a different order and grouping, so |got−want| ≤ 2·eps32·(K+1)·Σ|terms|,
// Σ|terms| being the reference run on |inputs|.
func TestVotesBatchedGroups(t *testing.T) {
	abs := func(x []float32) []float32 {
		y := make([]float32, len(x))
		for i, v := range x {
			y[i] = float32(math.Abs(float64(v)))
		}
		return y
	}
	type result struct{ uhat, du, dw []float32 }
	run := func(sh VotesShape, w, u, duhat, dw0 []float32) (result, error) {
		r := result{make([]float32, sh.Batch*sh.NOut*sh.DOut*sh.NIn), make([]float32, len(u)), append([]float32(nil), dw0...)}
		if err := VotesForward(sh, r.uhat, w, u); err != nil {
			return r, err
		}
		return r, VotesBackward(sh, r.dw, r.du, w, u, duhat)
	}
	shapes := []VotesShape{
		{Batch: 5, NIn: 37, NOut: 3, DIn: 8, DOut: 5},
		{Batch: 9, NIn: 19, NOut: 2, DIn: 9, DOut: 3},
		{Batch: 11, NIn: 64, NOut: 3, DIn: 3, DOut: 4},
		{Batch: 17, NIn: 33, NOut: 1, DIn: 16, DOut: 7},
	}
	prevWhole, prevBlock := votesWholeBytes, votesBlockBytes
	defer func() { votesWholeBytes, votesBlockBytes = prevWhole, prevBlock }()
	// Every implementation sees the same data (the generator restarts) and
	// is compared with impl=ref run on it just before.
	forEachImpl(t, func(t *testing.T, name string) {
		rng := randv2.New(randv2.NewPCG(11, 12))
		for _, blocked := range []bool{false, true} {
			votesWholeBytes, votesBlockBytes = prevWhole, prevBlock
			if blocked {
				votesWholeBytes, votesBlockBytes = 0, 0
			}
			for _, sh := range shapes {
				gen := func(n int) []float32 {
					v := make([]float32, n)
					for i := range v {
						v[i] = uni(rng)
					}
					return v
				}
				w, u := gen(sh.NOut*sh.DOut*sh.DIn*sh.NIn), gen(sh.Batch*sh.DIn*sh.NIn)
				duhat, dw0 := gen(sh.Batch*sh.NOut*sh.DOut*sh.NIn), gen(len(w))
				if err := Use("ref"); err != nil {
					t.Fatal(err)
				}
				want, err := run(sh, w, u, duhat, dw0)
				if err != nil {
					t.Fatal(err)
				}
				mag, err := run(sh, abs(w), abs(u), abs(duhat), abs(dw0))
				if err != nil {
					t.Fatal(err)
				}
				if err := Use(name); err != nil {
					t.Fatal(err)
				}
				got, err := run(sh, w, u, duhat, dw0)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range []struct {
					what      string
					got, want []float32
					mag       []float32
					k         int
				}{
					{"uhat", got.uhat, want.uhat, mag.uhat, sh.DIn},
					{"du", got.du, want.du, mag.du, sh.NOut * sh.DOut},
					{"dw", got.dw, want.dw, mag.dw, sh.Batch + 1},
				} {
					for i := range c.want {
						if tol := 2 * eps32 * float64(c.k+1) * float64(c.mag[i]); !within(c.got[i], c.want[i], tol) {
							t.Fatal(mismatch(c.got[i], c.want[i], tol, "impl=%s blocked=%v %+v: %s[%d]", name, blocked, sh, c.what, i))
						}
					}
				}
			}
		}
	})
}
