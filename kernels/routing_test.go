package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"path/filepath"
	"testing"

	"github.com/capstan-ml/capstan/capsnet/safetensors"
)

// The routing references below are straight loops written from docs/semantics.md §3,
// generic over float32 and float64 like votesRef (votes_test.go).

// squashRefFactor returns f and df/dq for v = f(q)·s, q = |s|², written
// from docs/semantics.md §3 directly (independently of squashScale): with
// n = sqrt(q + ε), dn/dq = 1/(2n).
func squashRefFactor[T capsFloat](kind Squash, q T) (f, dfdq T) {
	qq := float64(q)
	n := math.Sqrt(qq + SquashEps)
	var ff, df float64
	switch kind {
	case SquashSabour:
		// f = q/(1+q) · 1/n
		ff = qq / (1 + qq) / n
		df = 1/((1+qq)*(1+qq))/n + qq/(1+qq)*(-1/(n*n))/(2*n)
	default:
		// f = (1 − e^{−n})/n, df/dn = e^{−n}/n − (1 − e^{−n})/n²
		e := math.Exp(-n)
		ff = (1 - e) / n
		df = (e/n - (1-e)/(n*n)) / (2 * n)
	}
	return T(ff), T(df)
}

// routingTrace holds one sample's per-iteration couplings c[t][j][i], squash
// inputs s[t][j][k] and outputs v[t][j][k].
type routingTrace[T capsFloat] struct {
	c, s, v [][][]T
}

func capsMat[T capsFloat](r, c int) [][]T {
	m := make([][]T, r)
	for i := range m {
		m[i] = make([]T, c)
	}
	return m
}

// routingRefSample runs the loop of docs/semantics.md §3 for sample b and returns its
// trace.
func routingRefSample[T capsFloat](sh RoutingShape, b int, uhat, prior []T) routingTrace[T] {
	nIn, nOut, d := sh.NIn, sh.NOut, sh.D
	U := func(j, k, i int) T { return uhat[((b*nOut+j)*d+k)*nIn+i] }
	r := sh.Iters
	if !sh.Kind.Iterative() {
		r = 1
	}
	var tr routingTrace[T]
	if sh.Kind.Attention() {
		c, _, _ := attnRefCouplings(sh, b, uhat, prior)
		s, v := routingRefSV(sh, b, uhat, c)
		tr.c, tr.s, tr.v = [][][]T{c}, [][][]T{s}, [][][]T{v}
		return tr
	}
	logits := capsMat[T](nOut, nIn)
	if prior != nil && sh.Kind != RoutingUniform {
		for j := range nOut {
			for i := range nIn {
				logits[j][i] = prior[j*nIn+i]
			}
		}
	}
	for t := 0; t < r; t++ {
		c := capsMat[T](nOut, nIn)
		for i := 0; i < nIn; i++ {
			if sh.Kind == RoutingUniform {
				for j := range nOut {
					c[j][i] = 1 / T(nOut)
				}
				continue
			}
			mx := logits[0][i]
			for j := 1; j < nOut; j++ {
				mx = max(mx, logits[j][i])
			}
			var sum T
			for j := range nOut {
				c[j][i] = T(math.Exp(float64(logits[j][i] - mx)))
				sum += c[j][i]
			}
			for j := range nOut {
				c[j][i] /= sum
			}
		}
		s, v := routingRefSV(sh, b, uhat, c)
		if t < r-1 {
			for j := 0; j < nOut; j++ {
				for i := 0; i < nIn; i++ {
					var a T
					for k := 0; k < d; k++ {
						a += U(j, k, i) * v[j][k]
					}
					logits[j][i] += a
				}
			}
		}
		tr.c = append(tr.c, c)
		tr.s = append(tr.s, s)
		tr.v = append(tr.v, v)
	}
	return tr
}

// routingRefSV returns s[j][k] = Σ_i c[j][i]·û[i,j,k] and v = squash(s)
// for sample b.
func routingRefSV[T capsFloat](sh RoutingShape, b int, uhat []T, c [][]T) (s, v [][]T) {
	nIn, nOut, d := sh.NIn, sh.NOut, sh.D
	U := func(j, k, i int) T { return uhat[((b*nOut+j)*d+k)*nIn+i] }
	s, v = capsMat[T](nOut, d), capsMat[T](nOut, d)
	for j := 0; j < nOut; j++ {
		var q T
		for k := 0; k < d; k++ {
			var acc T
			for i := 0; i < nIn; i++ {
				acc += c[j][i] * U(j, k, i)
			}
			s[j][k] = acc
			q += acc * acc
		}
		f, _ := squashRefFactor(sh.Squash, q)
		for k := 0; k < d; k++ {
			v[j][k] = f * s[j][k]
		}
	}
	return s, v
}

// attnRefCouplings computes self-attention routing's couplings for sample b
// straight from docs/semantics.md §3 (in the index order of the PyTorch
// reference): S[j][k] = Σ_i û[i,j,k], a[j][i] = <û[i,j,:], S[j]>/√D, p the
// softmax of a over j (RoutingSelfAttention) or over i
// (RoutingSelfAttentionIn), c = p + prior. It returns c, p and S.
func attnRefCouplings[T capsFloat](sh RoutingShape, b int, uhat, prior []T) (c, p, S [][]T) {
	nIn, nOut, d := sh.NIn, sh.NOut, sh.D
	U := func(j, k, i int) T { return uhat[((b*nOut+j)*d+k)*nIn+i] }
	S = capsMat[T](nOut, d)
	for j := range nOut {
		for k := range d {
			for i := range nIn {
				S[j][k] += U(j, k, i)
			}
		}
	}
	a := capsMat[T](nOut, nIn)
	for j := range nOut {
		for i := range nIn {
			var x T
			for k := range d {
				x += U(j, k, i) * S[j][k]
			}
			a[j][i] = x / T(math.Sqrt(float64(d)))
		}
	}
	p = capsMat[T](nOut, nIn)
	// softmax over the index set idx(m) of one group m
	soft := func(groups, size int, at func(m, x int) (int, int)) {
		for m := range groups {
			j0, i0 := at(m, 0)
			mx := a[j0][i0]
			for x := range size {
				j, i := at(m, x)
				mx = max(mx, a[j][i])
			}
			var sum T
			for x := range size {
				j, i := at(m, x)
				p[j][i] = T(math.Exp(float64(a[j][i] - mx)))
				sum += p[j][i]
			}
			for x := range size {
				j, i := at(m, x)
				p[j][i] /= sum
			}
		}
	}
	if sh.Kind == RoutingSelfAttention {
		soft(nIn, nOut, func(i, j int) (int, int) { return j, i })
	} else {
		soft(nOut, nIn, func(j, i int) (int, int) { return j, i })
	}
	c = capsMat[T](nOut, nIn)
	for j := range nOut {
		for i := range nIn {
			c[j][i] = p[j][i]
			if prior != nil {
				c[j][i] += prior[j*nIn+i]
			}
		}
	}
	return c, p, S
}

// attnBackwardRef is routingBackwardRef for sample b of an attention kind:
// plain reverse-mode differentiation of attnRefCouplings and routingRefSV.
func attnBackwardRef[T capsFloat](sh RoutingShape, b int, duhat, dprior, dv, uhat, prior []T) {
	nIn, nOut, d := sh.NIn, sh.NOut, sh.D
	U := func(j, k, i int) T { return uhat[((b*nOut+j)*d+k)*nIn+i] }
	dU := func(j, k, i int) *T { return &duhat[((b*nOut+j)*d+k)*nIn+i] }
	c, p, S := attnRefCouplings(sh, b, uhat, prior)
	s, _ := routingRefSV(sh, b, uhat, c)
	// v = f(q)·s: ds = f·dv + 2·f'(q)·(s·dv)·s
	gs := capsMat[T](nOut, d)
	for j := range nOut {
		var q, dot T
		for k := range d {
			q += s[j][k] * s[j][k]
			dot += s[j][k] * dv[(b*d+k)*nOut+j]
		}
		f, df := squashRefFactor(sh.Squash, q)
		for k := range d {
			gs[j][k] = f*dv[(b*d+k)*nOut+j] + 2*df*dot*s[j][k]
		}
	}
	dc := capsMat[T](nOut, nIn)
	for j := range nOut {
		for k := range d {
			for i := range nIn {
				*dU(j, k, i) = gs[j][k] * c[j][i]
				dc[j][i] += gs[j][k] * U(j, k, i)
			}
		}
	}
	if dprior != nil {
		for j := range nOut {
			for i := range nIn {
				dprior[j*nIn+i] += dc[j][i]
			}
		}
	}
	// p = softmax(a): da = p ⊙ (dc − <p, dc>) over the softmax's group,
	// at(m, x) the (j, i) of member x of group m
	da := capsMat[T](nOut, nIn)
	grad := func(groups, size int, at func(m, x int) (int, int)) {
		for m := range groups {
			var dot T
			for x := range size {
				j, i := at(m, x)
				dot += p[j][i] * dc[j][i]
			}
			for x := range size {
				j, i := at(m, x)
				da[j][i] = p[j][i] * (dc[j][i] - dot)
			}
		}
	}
	if sh.Kind == RoutingSelfAttention {
		grad(nIn, nOut, func(i, j int) (int, int) { return j, i })
	} else {
		grad(nOut, nIn, func(j, i int) (int, int) { return j, i })
	}
	// a[j][i] = Σ_k U(j,k,i)·S[j][k]/√D with S[j][k] = Σ_i' U(j,k,i'):
	// ∂a[j][i]/∂U(j,k,i') = (δ_ii'·S[j][k] + U(j,k,i))/√D
	rs := 1 / T(math.Sqrt(float64(d)))
	for j := range nOut {
		for k := range d {
			var g T
			for i := range nIn {
				g += da[j][i] * U(j, k, i)
			}
			for i := range nIn {
				*dU(j, k, i) += rs * (da[j][i]*S[j][k] + g)
			}
		}
	}
}

// routingRef: v (B, D, NOut), c (B, NOut, NIn) or nil.
func routingRef[T capsFloat](sh RoutingShape, v, c, uhat, prior []T) {
	nIn, nOut, d := sh.NIn, sh.NOut, sh.D
	for b := 0; b < sh.Batch; b++ {
		tr := routingRefSample(sh, b, uhat, prior)
		last := len(tr.v) - 1
		for j := 0; j < nOut; j++ {
			for k := 0; k < d; k++ {
				v[(b*d+k)*nOut+j] = tr.v[last][j][k]
			}
			if c != nil {
				for i := 0; i < nIn; i++ {
					c[(b*nOut+j)*nIn+i] = tr.c[last][j][i]
				}
			}
		}
	}
}

// routingBackwardRef: duhat overwritten, dprior (may be nil) accumulated.
// It re-runs the forward of every sample and differentiates it in reverse.
func routingBackwardRef[T capsFloat](sh RoutingShape, duhat, dprior, dv, uhat, prior []T) {
	nIn, nOut, d := sh.NIn, sh.NOut, sh.D
	for b := 0; b < sh.Batch; b++ {
		if sh.Kind.Attention() {
			attnBackwardRef(sh, b, duhat, dprior, dv, uhat, prior)
			continue
		}
		U := func(j, k, i int) T { return uhat[((b*nOut+j)*d+k)*nIn+i] }
		dU := func(j, k, i int) *T { return &duhat[((b*nOut+j)*d+k)*nIn+i] }
		for j := 0; j < nOut; j++ {
			for k := 0; k < d; k++ {
				for i := 0; i < nIn; i++ {
					*dU(j, k, i) = 0
				}
			}
		}
		tr := routingRefSample(sh, b, uhat, prior)
		r := len(tr.c)
		gL := capsMat[T](nOut, nIn) // ∂L/∂logits after iteration t
		for t := r - 1; t >= 0; t-- {
			gv := capsMat[T](nOut, d)
			if t == r-1 {
				for j := range nOut {
					for k := range d {
						gv[j][k] = dv[(b*d+k)*nOut+j]
					}
				}
			} else {
				// logits[j][i] += Σ_k U(j,k,i)·v_t[j][k]
				for j := range nOut {
					for k := range d {
						for i := range nIn {
							gv[j][k] += gL[j][i] * U(j, k, i)
							*dU(j, k, i) += gL[j][i] * tr.v[t][j][k]
						}
					}
				}
			}
			// v = f(q)·s: ds = f·dv + 2·f'(q)·(s·dv)·s
			gs := capsMat[T](nOut, d)
			for j := range nOut {
				var q, dot T
				for k := range d {
					q += tr.s[t][j][k] * tr.s[t][j][k]
					dot += tr.s[t][j][k] * gv[j][k]
				}
				f, df := squashRefFactor(sh.Squash, q)
				for k := range d {
					gs[j][k] = f*gv[j][k] + 2*df*dot*tr.s[t][j][k]
				}
			}
			// s[j][k] = Σ_i c[j][i]·U(j,k,i)
			dc := capsMat[T](nOut, nIn)
			for j := range nOut {
				for k := range d {
					for i := range nIn {
						*dU(j, k, i) += gs[j][k] * tr.c[t][j][i]
						dc[j][i] += gs[j][k] * U(j, k, i)
					}
				}
			}
			if sh.Kind == RoutingUniform {
				continue
			}
			// c[:,i] = softmax(logits[:,i]): dlogits = c ⊙ (dc − <c, dc>)
			for i := range nIn {
				var dot T
				for j := range nOut {
					dot += tr.c[t][j][i] * dc[j][i]
				}
				for j := range nOut {
					gL[j][i] += tr.c[t][j][i] * (dc[j][i] - dot)
				}
			}
		}
		if dprior != nil && sh.Kind != RoutingUniform {
			for j := range nOut {
				for i := range nIn {
					dprior[j*nIn+i] += gL[j][i]
				}
			}
		}
	}
}

// capsRoutingTol is the tolerance of the routing comparisons, per tensor:
// |got − want| <= 4·u·K·scale·cond with K = r·(NIn + D + NOut), scale the
// largest |want| of the tensor (at least 1e-3) and cond the conditioning of
// the float32 Mazzia squash. Why: each iteration is a chain of float32
// reductions of length NIn (s and the coupling gradient), D (agreement,
// squash norms) and NOut (softmax), each within γ_len·Σ|terms| of exact; the
// logits and their gradient carry these errors from one iteration to the
// next, so they add up over the r iterations. Softmax, squash and their
// gradients are Lipschitz with constants of order one at these magnitudes
// (inputs in [−1, 1]), and Σ|terms| is bounded by a small multiple of the
// largest output. The Mazzia squash computes 1 − e^{−n} in float32 (the formula
// of docs/semantics.md §3), which cancels for a short capsule: its factor and derivative
// have relative errors of order u/n, so cond = max(1, 1/n_min) with n_min
// the shortest squash input over all iterations (1 for Sabour's squash,
// which does not cancel). The largest observed ratio is logged; a wrong
// iteration count, index or missing gradient term is off by orders of
// magnitude more, see TestCapsCompareCanFail.
//
// An attention kind makes one pass but chains two reductions of each
// length (the vote sums S and s over NIn, the logits and the squash over
// D, the softmax over NOut or NIn), so K = 2·(NIn + D + NOut); its inputs
// are scaled (capsRoutingInputsFor) so that the logits are of order one,
// where the softmax is Lipschitz with constant one as for routing by
// agreement.
func capsRoutingTol(sh RoutingShape, want []float64, cond float64) func(int) float64 {
	r := sh.Iters
	switch {
	case sh.Kind.Attention():
		r = 2
	case !sh.Kind.Iterative():
		r = 1
	}
	k := float64(r * (sh.NIn + sh.D + sh.NOut))
	scale := max(capsMaxAbs(want), 1e-3)
	tol := 4 * capsU32 * k * scale * cond
	return func(int) float64 { return tol }
}

// capsSquashCond returns the cond factor of capsRoutingTol for these inputs,
// from the float64 reference's squash inputs.
func capsSquashCond(in capsRoutingInputs) float64 {
	if in.sh.Squash != SquashMazzia {
		return 1
	}
	nMin := math.Inf(1)
	uh, pr := caps64(in.uhat), caps64(in.prior)
	for b := 0; b < in.sh.Batch; b++ {
		tr := routingRefSample(in.sh, b, uh, pr)
		for _, s := range tr.s {
			for _, cap := range s {
				q := 0.0
				for _, x := range cap {
					q += x * x
				}
				nMin = min(nMin, math.Sqrt(q+SquashEps))
			}
		}
	}
	return max(1, 1/nMin)
}

type capsRoutingInputs struct {
	sh      RoutingShape
	uhat    []float32
	prior   []float32 // nil: zeros
	dv      []float32
	dprior0 []float32 // nil: prior gradient not requested
}

func capsRoutingInputsFor(rng *rand.Rand, sh RoutingShape, withPrior, withDPrior bool) capsRoutingInputs {
	in := capsRoutingInputs{sh: sh}
	scale := 1.0
	if sh.Kind.Attention() {
		// |a| <= NIn·D·scale²/√D: logits of order one (at most 2), as a
		// trained layer's are; larger ones make the softmax one-hot and
		// the comparison a test of rounding in the logits.
		scale = math.Sqrt(2 / (float64(sh.NIn) * math.Sqrt(float64(sh.D))))
	}
	in.uhat = capsRand(rng, sh.Batch*sh.NOut*sh.D*sh.NIn, rng.Intn(4), scale)
	if withPrior {
		in.prior = capsRand(rng, sh.NOut*sh.NIn, rng.Intn(4), 1)
	}
	in.dv = capsRand(rng, sh.Batch*sh.D*sh.NOut, rng.Intn(4), 1)
	if withDPrior {
		in.dprior0 = capsRand(rng, sh.NOut*sh.NIn, 0, 1)
	}
	return in
}

// capsRoutingWant runs the float64 reference.
func capsRoutingWant(in capsRoutingInputs) (v, c, duhat, dprior []float64) {
	sh := in.sh
	v = make([]float64, sh.Batch*sh.D*sh.NOut)
	c = make([]float64, sh.Batch*sh.NOut*sh.NIn)
	routingRef(sh, v, c, caps64(in.uhat), caps64(in.prior))
	duhat = make([]float64, len(in.uhat))
	dprior = caps64(in.dprior0)
	routingBackwardRef(sh, duhat, dprior, caps64(in.dv), caps64(in.uhat), caps64(in.prior))
	return
}

// capsRoutingGot runs the kernels.
func capsRoutingGot(rng *rand.Rand, in capsRoutingInputs) (v, c, duhat, dprior []float32, err error) {
	sh := in.sh
	nan := float32(math.NaN())
	v = capsFill(capsBuf(sh.Batch*sh.D*sh.NOut, rng.Intn(4)), nan)
	c = capsFill(capsBuf(sh.Batch*sh.NOut*sh.NIn, rng.Intn(4)), nan)
	// NaN everywhere in work: a kernel that reads what it did not write fails.
	work := capsFill(capsBuf(sh.WorkSize(), rng.Intn(4)), nan)
	if err = RoutingForward(sh, v, c, in.uhat, in.prior, work); err != nil {
		return
	}
	duhat = capsFill(capsBuf(len(in.uhat), rng.Intn(4)), nan)
	if in.dprior0 != nil {
		dprior = capsBuf(len(in.dprior0), rng.Intn(4))
		copy(dprior, in.dprior0)
	}
	err = RoutingBackward(sh, duhat, dprior, in.dv, in.uhat, in.prior, work)
	return
}

func capsRoutingCheck(rng *rand.Rand, in capsRoutingInputs) (float64, error) {
	wv, wc, wdu, wdp := capsRoutingWant(in)
	gv, gc, gdu, gdp, err := capsRoutingGot(rng, in)
	if err != nil {
		return 0, err
	}
	worst, cond := 0.0, capsSquashCond(in)
	for _, x := range []struct {
		name string
		got  []float32
		want []float64
	}{{"v", gv, wv}, {"c", gc, wc}, {"duhat", gdu, wdu}, {"dprior", gdp, wdp}} {
		if x.got == nil {
			continue
		}
		r, err := capsCompare(x.name, x.got, x.want, capsRoutingTol(in.sh, x.want, cond))
		if err != nil {
			return worst, err
		}
		worst = max(worst, r)
	}
	return worst, nil
}

func TestRoutingVsRef(t *testing.T) {
	forEachImpl(t, func(t *testing.T, _ string) {
		rng := rand.New(rand.NewSource(2))
		worst, n, blocked := 0.0, 0, 0
		// Some cases force blocks of 16 input capsules (routingWholeBytes =
		// routingBlockBytes = 0), so that NIn = 100 runs in 7 blocks with a
		// tail of 4.
		defer func(w, b int) { routingWholeBytes, routingBlockBytes = w, b }(routingWholeBytes, routingBlockBytes)
		iters := []int{1, 2, 3, 5}
		for _, nIn := range []int{1, 3, 17, 100} {
			for _, nOut := range []int{1, 2, 5, 10} {
				for _, d := range []int{1, 3, 4, 5, 8, 16} {
					if capsSmall() && rng.Intn(4) != 0 {
						continue
					}
					sh := RoutingShape{Batch: 1 + rng.Intn(3), NIn: nIn, NOut: nOut, D: d,
						Iters: iters[rng.Intn(len(iters))], Squash: Squash(rng.Intn(2)), Kind: routingKindFor(rng)}
					in := capsRoutingInputsFor(rng, sh, rng.Intn(2) == 0, rng.Intn(2) == 0)
					routingWholeBytes, routingBlockBytes = 1<<20, 256<<10
					if rng.Intn(4) < 1+2*(nIn/100) { // NIn = 100: 3 cases in 4
						routingWholeBytes, routingBlockBytes = 0, 0
					}
					if routingChunk(sh) < nIn {
						blocked++
					}
					r, err := capsRoutingCheck(rng, in)
					if err != nil {
						t.Fatalf("%+v prior=%v dprior=%v: %v", sh, in.prior != nil, in.dprior0 != nil, err)
					}
					worst = max(worst, r)
					n++
				}
			}
		}
		if blocked == 0 {
			t.Error("no shape exercised the blocking of the routing")
		}
		t.Logf("%d shapes (%d blocked), largest |diff|/tol %.3f", n, blocked, worst)
	})
}

// TestCapsCompareCanFail shows that the tolerances catch plausible bugs: one
// routing iteration too few, a missing agreement gradient, and a wrong
// vote, each on a shape where the correct results pass.
func TestCapsCompareCanFail(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	sh := RoutingShape{Batch: 2, NIn: 17, NOut: 5, D: 4, Iters: 3, Squash: SquashMazzia}
	in := capsRoutingInputsFor(rng, sh, true, true)
	if _, err := capsRoutingCheck(rng, in); err != nil {
		t.Fatalf("correct kernels fail: %v", err)
	}
	wv, _, _, _ := capsRoutingWant(in)
	// One iteration less.
	in2 := in
	in2.sh.Iters--
	gv, _, _, _, err := capsRoutingGot(rng, in2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := capsCompare("v", gv, wv, capsRoutingTol(sh, wv, capsSquashCond(in))); err == nil {
		t.Error("Iters-1 not detected")
	} else {
		t.Logf("Iters-1 detected: %v", err)
	}
	// The gradient without the agreement path into uhat (the t < r terms
	// dÛ_j += v_t ⊗ gL): the reference with that term removed by
	// differentiating only the last iteration's s = Σ c·û with c fixed.
	_, _, gdu, _, err := capsRoutingGot(rng, in)
	if err != nil {
		t.Fatal(err)
	}
	uni := in
	uni.sh.Kind = RoutingUniform // gradient of s through uhat only, c uniform: wrong for RBA
	_, _, partial, _ := capsRoutingWant(uni)
	if _, err := capsCompare("duhat", gdu, partial, capsRoutingTol(sh, partial, capsSquashCond(in))); err == nil {
		t.Error("wrong duhat not detected")
	}
	// Self-attention with the softmax over the wrong axis, and without the
	// gradient through the vote sums (the κ·(Û_j·da)⊗1 term).
	at := capsRoutingInputsFor(rng, RoutingShape{Batch: 2, NIn: 9, NOut: 4, D: 3, Squash: SquashMazzia, Kind: RoutingSelfAttention}, true, true)
	if _, err := capsRoutingCheck(rng, at); err != nil {
		t.Fatalf("correct attention kernels fail: %v", err)
	}
	wv, _, wdu, _ := capsRoutingWant(at)
	other := at
	other.sh.Kind = RoutingSelfAttentionIn
	gv, _, _, _, err = capsRoutingGot(rng, other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := capsCompare("v", gv, wv, capsRoutingTol(at.sh, wv, capsSquashCond(at))); err == nil {
		t.Error("softmax over the wrong axis not detected")
	}
	_, _, gdu, _, err = capsRoutingGot(rng, at)
	if err != nil {
		t.Fatal(err)
	}
	for j := range at.sh.NOut * at.sh.D {
		for b := range at.sh.Batch {
			row := gdu[(b*at.sh.NOut*at.sh.D+j)*at.sh.NIn:][:at.sh.NIn]
			row[0] += 1e-3 // a constant row offset, as the missing term is
		}
	}
	if _, err := capsCompare("duhat", gdu, wdu, capsRoutingTol(at.sh, wdu, capsSquashCond(at))); err == nil {
		t.Error("wrong attention duhat not detected")
	}
	// A single perturbed vote.
	vs := VotesShape{Batch: 2, NIn: 17, NOut: 3, DIn: 4, DOut: 5}
	w := capsRand(rng, vs.NOut*vs.DOut*vs.DIn*vs.NIn, 0, 1)
	u := capsRand(rng, vs.Batch*vs.DIn*vs.NIn, 0, 1)
	want := make([]float64, vs.Batch*vs.NOut*vs.DOut*vs.NIn)
	abs := make([]float64, len(want))
	votesRef(vs, want, caps64(w), caps64(u))
	votesRef(vs, abs, capsAbs64(w), capsAbs64(u))
	got := capsBuf(len(want), 0)
	if err := VotesForward(vs, got, w, u); err != nil {
		t.Fatal(err)
	}
	got[37] += 1e-4 * float32(1+math.Abs(want[37]))
	if _, err := capsCompare("uhat", got, want, func(e int) float64 { return gammaTol(vs.DIn, abs[e]) }); err == nil {
		t.Error("perturbed vote not detected")
	}
}

// TestCapsFiniteDifferences checks the reference gradients (which the
// kernels are compared with) against central differences of
// L = <R, v(votes(W, u), prior)> along random directions, for û, the prior,
// W and u. Everything runs in float64: with h = 1e-5 the truncation error of
// the central difference is O(h²·|L”'|) ≈ 1e-10 and the rounding error
// O(ε₆₄·|L|/h) ≈ 1e-10 for |L| of order 10, so a relative tolerance of 1e-6
// is loose for a correct gradient while a missing term (the agreement path,
// the prior, a squash derivative) changes the directional derivative by
// percents.
func TestCapsFiniteDifferences(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	const h = 1e-5
	cases := []RoutingShape{
		{Batch: 2, NIn: 5, NOut: 3, D: 4, Iters: 3, Squash: SquashMazzia},
		{Batch: 2, NIn: 7, NOut: 4, D: 3, Iters: 4, Squash: SquashSabour},
		{Batch: 1, NIn: 3, NOut: 2, D: 5, Iters: 1, Squash: SquashMazzia},
		{Batch: 2, NIn: 6, NOut: 3, D: 2, Iters: 2, Squash: SquashSabour, Kind: RoutingUniform},
		{Batch: 2, NIn: 5, NOut: 3, D: 4, Squash: SquashMazzia, Kind: RoutingSelfAttention},
		{Batch: 2, NIn: 7, NOut: 4, D: 3, Squash: SquashSabour, Kind: RoutingSelfAttentionIn},
		{Batch: 1, NIn: 3, NOut: 1, D: 5, Squash: SquashMazzia, Kind: RoutingSelfAttentionIn},
	}
	for _, sh := range cases {
		vs := VotesShape{Batch: sh.Batch, NIn: sh.NIn, NOut: sh.NOut, DIn: 3, DOut: sh.D}
		rnd := func(n int, scale float64) []float64 {
			x := make([]float64, n)
			for i := range x {
				x[i] = scale * (2*rng.Float64() - 1)
			}
			return x
		}
		nW, nU, nV := vs.NOut*vs.DOut*vs.DIn*vs.NIn, vs.Batch*vs.DIn*vs.NIn, vs.Batch*vs.NOut*vs.DOut*vs.NIn
		w, u, prior := rnd(nW, 0.8), rnd(nU, 1), rnd(sh.NOut*sh.NIn, 1)
		R := rnd(sh.Batch*sh.D*sh.NOut, 1)
		loss := func(w, u, prior []float64) float64 {
			uhat := make([]float64, nV)
			votesRef(vs, uhat, w, u)
			v := make([]float64, len(R))
			routingRef(sh, v, nil, uhat, prior)
			s := 0.0
			for i := range v {
				s += R[i] * v[i]
			}
			return s
		}
		// Analytic gradients.
		uhat := make([]float64, nV)
		votesRef(vs, uhat, w, u)
		duhat := make([]float64, nV)
		dprior := make([]float64, len(prior))
		routingBackwardRef(sh, duhat, dprior, R, uhat, prior)
		dw, du := make([]float64, nW), make([]float64, nU)
		votesBackwardRef(vs, dw, du, w, u, duhat)

		dot := func(a, b []float64) float64 {
			s := 0.0
			for i := range a {
				s += a[i] * b[i]
			}
			return s
		}
		step := func(x, dir []float64, sign float64) []float64 {
			y := make([]float64, len(x))
			for i := range x {
				y[i] = x[i] + sign*h*dir[i]
			}
			return y
		}
		check := func(name string, grad, fd float64) {
			t.Helper()
			if math.Abs(grad-fd) > 1e-6*(math.Abs(grad)+math.Abs(fd))+1e-9 {
				t.Errorf("%+v: d%s·dir = %.12g, finite difference %.12g", sh, name, grad, fd)
			}
		}
		// u and W through the votes.
		dirW, dirU, dirP := rnd(nW, 1), rnd(nU, 1), rnd(len(prior), 1)
		check("W", dot(dw, dirW), (loss(step(w, dirW, 1), u, prior)-loss(step(w, dirW, -1), u, prior))/(2*h))
		check("u", dot(du, dirU), (loss(w, step(u, dirU, 1), prior)-loss(w, step(u, dirU, -1), prior))/(2*h))
		fdP := (loss(w, u, step(prior, dirP, 1)) - loss(w, u, step(prior, dirP, -1))) / (2 * h)
		check("prior", dot(dprior, dirP), fdP)
		if sh.Kind != RoutingUniform && sh.NOut > 1 && math.Abs(fdP) < 1e-4 {
			t.Errorf("%+v: prior derivative %g too small for the check to mean anything", sh, fdP)
		}
		// û directly.
		dirV := rnd(nV, 1)
		lossU := func(uh []float64) float64 {
			v := make([]float64, len(R))
			routingRef(sh, v, nil, uh, prior)
			return dot(R, v)
		}
		check("uhat", dot(duhat, dirV), (lossU(step(uhat, dirV, 1))-lossU(step(uhat, dirV, -1)))/(2*h))
	}
}

// TestCapsOracle reproduces the PyTorch reference's capsule layers
// (testdata/oracle, written by the PyTorch reference implementation, an external peer not in this repository): for every
// capsule layer K, votes and routing applied to the recorded input
// trace.(K-1).v with the layer's weights must give trace.K.v and trace.K.c.
// The weights, prior and capsules go through the exported converters.
// Tolerance: |diff| <= 1e-5·max|want| per tensor (and 1e-5 absolute for the
// couplings, which are at most 1): float32 on both sides, reductions of a
// few hundred terms in different orders; the measured error is logged.
// The chained run (each layer fed with our own previous output) is checked
// with a tolerance 10 times larger.
func TestCapsOracle(t *testing.T) {
	models := []oracleModel{
		// Iteration counts and squash kinds as in MODELS of torch_capsnet.py.
		{"tiny-deep", "caps.%d", 2, 3, SquashMazzia, RoutingRBA},
		{"tiny-deep-uniform", "caps.%d", 2, 3, SquashMazzia, RoutingUniform},
		{"tiny-deep3", "caps.%d", 3, 5, SquashMazzia, RoutingRBA},
		{"tiny-deep-selfattn", "caps.%d", 2, 1, SquashMazzia, RoutingSelfAttention},
		{"tiny-deep-selfattn-in", "caps.%d", 3, 1, SquashMazzia, RoutingSelfAttentionIn},
		// Sabour's prior is not learned, but the oracle filled digit.b with
		// random values like every ".b" and its forward used them.
		{"tiny-sabour", "digit", 1, 3, SquashSabour, RoutingRBA},
	}
	dir := filepath.Join("..", "testdata", "oracle")
	for _, m := range models {
		wts, err := readSafetensors(filepath.Join(dir, m.name+"-weights.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		exp, err := readSafetensors(filepath.Join(dir, m.name+"-expected.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		t.Run(m.name, func(t *testing.T) {
			forEachImpl(t, func(t *testing.T, _ string) {
				var chained []float32 // our own output of the previous layer, (B, d, n)
				worst, worstChain := 0.0, 0.0
				for k := 1; k <= m.layers; k++ {
					var w, wc float64
					w, wc, chained = m.checkLayer(t, k, wts, exp, chained)
					worst, worstChain = max(worst, w), max(worstChain, wc)
				}
				t.Logf("%s: largest |diff|/max|want| %.2g per layer, %.2g chained", m.name, worst, worstChain)
			})
		})
	}
}

// oracleModel is one model of TestCapsOracle: its name in testdata/oracle,
// the format of its layers' parameter prefix, its capsule layer count and
// routing settings.
type oracleModel struct {
	name   string
	weight string // format of the layer's parameter prefix
	layers int
	iters  int
	squash Squash
	kind   RoutingKind
}

// oracleGet returns tensor name of ts, failing the test when it is missing
// or not of that rank.
func oracleGet(t *testing.T, model string, ts map[string]stTensor, name string, rank int) stTensor {
	t.Helper()
	x, ok := ts[name]
	if !ok || len(x.Shape) != rank {
		t.Fatalf("%s: tensor %s missing or not of rank %d", model, name, rank)
	}
	return x
}

// checkLayer compares capsule layer k (1-based) of the model with the
// oracle, on the oracle's input and on chained (our output of the previous
// layer; nil for the first layer). It returns the largest relative
// differences on both inputs and our output of this layer, for the next.
func (m oracleModel) checkLayer(t *testing.T, k int, wts, exp map[string]stTensor, chained []float32) (worst, worstChain float64, out []float32) {
	prefix := m.weight
	if m.layers > 1 || m.weight != "digit" {
		prefix = fmt.Sprintf(m.weight, k-1)
	}
	in := oracleGet(t, m.name, exp, fmt.Sprintf("trace.%d.v", k-1), 3)
	W := oracleGet(t, m.name, wts, prefix+".W", 4)
	bt := oracleGet(t, m.name, wts, prefix+".b", 2)
	wantV := oracleGet(t, m.name, exp, fmt.Sprintf("trace.%d.v", k), 3)
	wantC := oracleGet(t, m.name, exp, fmt.Sprintf("trace.%d.c", k), 3)
	bs, nIn, dIn := in.Shape[0], in.Shape[1], in.Shape[2]
	nOut, dOut := W.Shape[0], W.Shape[2]
	if W.Shape[1] != nIn || W.Shape[3] != dIn || bt.Shape[0] != nIn || bt.Shape[1] != nOut ||
		wantV.Shape[0] != bs || wantV.Shape[1] != nOut || wantV.Shape[2] != dOut {
		t.Fatalf("%s layer %d: inconsistent shapes in %v %v %v %v", m.name, k, in.Shape, W.Shape, bt.Shape, wantV.Shape)
	}
	vs := VotesShape{Batch: bs, NIn: nIn, NOut: nOut, DIn: dIn, DOut: dOut}
	rs := RoutingShape{Batch: bs, NIn: nIn, NOut: nOut, D: dOut, Iters: m.iters, Squash: m.squash, Kind: m.kind}
	w := make([]float32, len(W.Data))
	if err := VotesWeightsFromTorch(vs, w, W.Data); err != nil {
		t.Fatal(err)
	}
	prior := make([]float32, nOut*nIn)
	if err := PriorFromTorch(nIn, nOut, prior, bt.Data); err != nil {
		t.Fatal(err)
	}
	u := make([]float32, len(in.Data))
	if err := CapsFromTorch(bs, nIn, dIn, u, in.Data); err != nil {
		t.Fatal(err)
	}
	cmp := func(what string, factor float64, got []float32, want []float32, floor float64) float64 {
		w64 := caps64(want)
		tol := factor * max(1e-5*capsMaxAbs(w64), floor)
		r, err := capsCompare(what, got, w64, func(int) float64 { return tol })
		if err != nil {
			t.Errorf("%s layer %d: %v", m.name, k, err)
		}
		return r * tol / capsMaxAbs(w64)
	}
	gv, gc := oracleRun(t, vs, rs, w, prior, u)
	worst = max(cmp("v", 1, gv, wantV.Data, 0), cmp("c", 1, gc, wantC.Data, 1e-5))
	if chained == nil {
		chained = u
	}
	cv, cc := oracleRun(t, vs, rs, w, prior, chained)
	worstChain = max(cmp("chained v", 10, cv, wantV.Data, 0), cmp("chained c", 10, cc, wantC.Data, 1e-5))
	// Our output (B, d, n) is directly the next layer's input.
	out = make([]float32, len(cv))
	if err := CapsFromTorch(bs, nOut, dOut, out, cv); err != nil {
		t.Fatal(err)
	}
	return worst, worstChain, out
}

// oracleRun runs votes and routing on u and returns v and c in PyTorch
// layouts.
func oracleRun(t *testing.T, vs VotesShape, rs RoutingShape, w, prior, u []float32) (vTorch, cTorch []float32) {
	bs, nIn, nOut, dOut := vs.Batch, vs.NIn, vs.NOut, vs.DOut
	uhat := make([]float32, bs*nOut*dOut*nIn)
	if err := VotesForward(vs, uhat, w, u); err != nil {
		t.Fatal(err)
	}
	v := make([]float32, bs*dOut*nOut)
	c := make([]float32, bs*nOut*nIn)
	work := make([]float32, rs.WorkSize())
	if err := RoutingForward(rs, v, c, uhat, prior, work); err != nil {
		t.Fatal(err)
	}
	vTorch = make([]float32, len(v))
	if err := CapsToTorch(bs, nOut, dOut, vTorch, v); err != nil {
		t.Fatal(err)
	}
	cTorch = make([]float32, len(c))
	for b := 0; b < bs; b++ {
		if err := PriorToTorch(nIn, nOut, cTorch[b*nIn*nOut:][:nIn*nOut], c[b*nOut*nIn:][:nOut*nIn]); err != nil {
			t.Fatal(err)
		}
	}
	return vTorch, cTorch
}

// TestRoutingNaN: a NaN vote reaches the output capsule it votes for in the
// first iteration, and every output of its sample through the agreement
// update; other samples are unaffected.
func TestRoutingNaN(t *testing.T) {
	forEachImpl(t, func(t *testing.T, _ string) {
		for _, iters := range []int{1, 3} {
			rng := rand.New(rand.NewSource(5))
			sh := RoutingShape{Batch: 2, NIn: 9, NOut: 4, D: 3, Iters: iters, Squash: SquashMazzia}
			uhat := capsRand(rng, sh.Batch*sh.NOut*sh.D*sh.NIn, 0, 1)
			const bNaN, jNaN = 1, 2
			uhat[((bNaN*sh.NOut+jNaN)*sh.D+1)*sh.NIn+5] = float32(math.NaN())
			v := capsBuf(sh.Batch*sh.D*sh.NOut, 0)
			work := capsBuf(sh.WorkSize(), 0)
			if err := RoutingForward(sh, v, nil, uhat, nil, work); err != nil {
				t.Fatal(err)
			}
			for b := 0; b < sh.Batch; b++ {
				for k := 0; k < sh.D; k++ {
					for j := 0; j < sh.NOut; j++ {
						x := v[(b*sh.D+k)*sh.NOut+j]
						wantNaN := b == bNaN && (j == jNaN || iters > 1)
						if math.IsNaN(float64(x)) != wantNaN {
							t.Errorf("iters %d: v[%d,%d,%d] = %g, want NaN: %v", iters, b, k, j, x, wantNaN)
						}
					}
				}
			}
		}
	})
}

// TestCapsShapeErrors: bad shapes and lengths are errors, not panics;
// Batch = 0 is a no-op.
func TestCapsShapeErrors(t *testing.T) {
	// 2^40 and 2^62, or the largest int on a 32-bit GOARCH.
	const huge40, huge62 = min(1<<40, math.MaxInt), min(1<<62, math.MaxInt)
	vs := VotesShape{Batch: 2, NIn: 3, NOut: 2, DIn: 2, DOut: 4}
	nW, nU, nV := 2*4*2*3, 2*2*3, 2*2*4*3
	w, u, uhat := make([]float32, nW), make([]float32, nU), make([]float32, nV)
	if err := VotesForward(vs, uhat, w, u); err != nil {
		t.Fatal(err)
	}
	if err := VotesBackward(vs, w, u, w, u, uhat); err != nil {
		t.Fatal(err)
	}
	if err := VotesBackward(vs, nil, nil, w, u, uhat); err != nil {
		t.Fatal(err)
	}
	bad := []error{
		VotesForward(VotesShape{Batch: 2, NIn: 0, NOut: 2, DIn: 2, DOut: 4}, uhat, w, u),
		VotesForward(VotesShape{Batch: -1, NIn: 3, NOut: 2, DIn: 2, DOut: 4}, uhat, w, u),
		VotesForward(VotesShape{Batch: 2, NIn: huge40, NOut: 1 << 30, DIn: 2, DOut: 4}, nil, nil, nil),
		VotesBackward(VotesShape{Batch: huge62, NIn: 4, NOut: 2, DIn: 2, DOut: 4}, nil, nil, nil, nil, nil),
		VotesForward(vs, uhat[1:], w, u),
		VotesForward(vs, uhat, w[1:], u),
		VotesForward(vs, uhat, w, u[1:]),
		VotesForward(vs, uhat, w, nil),
		VotesBackward(vs, w[1:], u, w, u, uhat),
		VotesBackward(vs, w, u[1:], w, u, uhat),
		VotesBackward(vs, w, u, w, u, uhat[1:]),
		VotesWeightsFromTorch(vs, w, w[1:]),
		VotesWeightsToTorch(VotesShape{NIn: 3, NOut: 2, DIn: 2, DOut: -4}, w, w),
		CapsFromTorch(2, 3, 2, u, u[2:]),
		CapsToTorch(-2, 3, 2, u, u),
		CapsFromTorch(huge40, huge40, 2, u, u),
		PriorFromTorch(3, 2, w[:5], w[:6]),
		PriorToTorch(3, 2, w[:6], w[:7]),
	}
	rs := RoutingShape{Batch: 2, NIn: 3, NOut: 2, D: 4, Iters: 2}
	v, c, prior := make([]float32, 2*4*2), make([]float32, 2*2*3), make([]float32, 2*3)
	work := make([]float32, rs.WorkSize())
	if err := RoutingForward(rs, v, c, uhat, prior, work); err != nil {
		t.Fatal(err)
	}
	if err := RoutingBackward(rs, uhat, prior, v, uhat, prior, work); err != nil {
		t.Fatal(err)
	}
	withIters := func(n int) RoutingShape { s := rs; s.Iters = n; return s }
	withSquash := func(k Squash) RoutingShape { s := rs; s.Squash = k; return s }
	bad = append(bad,
		RoutingForward(withIters(0), v, c, uhat, prior, work),
		RoutingForward(withSquash(7), v, c, uhat, prior, work),
		RoutingForward(RoutingShape{Batch: 2, NIn: 3, NOut: 0, D: 4, Iters: 2}, v, c, uhat, prior, work),
		RoutingForward(RoutingShape{Batch: 1 << 20, NIn: 1 << 20, NOut: 1 << 20, D: 4, Iters: 2}, nil, nil, nil, nil, nil),
		RoutingBackward(RoutingShape{Batch: 2, NIn: 3, NOut: 2, D: 4, Iters: huge62}, nil, nil, nil, nil, nil, nil),
		RoutingForward(rs, v[1:], c, uhat, prior, work),
		RoutingForward(rs, v, c[1:], uhat, prior, work),
		RoutingForward(rs, v, c, uhat[1:], prior, work),
		RoutingForward(rs, v, c, uhat, prior[1:], work),
		RoutingForward(rs, v, c, uhat, prior, work[1:]),
		RoutingBackward(rs, uhat[1:], prior, v, uhat, prior, work),
		RoutingBackward(rs, uhat, prior[1:], v, uhat, prior, work),
		RoutingBackward(rs, uhat, prior, v[1:], uhat, prior, work),
		RoutingBackward(rs, uhat, prior, v, uhat, prior, work[1:]),
	)
	for i, err := range bad {
		if err == nil {
			t.Errorf("bad call %d: no error", i)
		}
	}
	if got := withIters(0).WorkSize(); got != 0 {
		t.Errorf("WorkSize of an invalid shape = %d", got)
	}
	// Batch = 0: nothing to do, nil slices are fine.
	if err := VotesForward(VotesShape{NIn: 3, NOut: 2, DIn: 2, DOut: 4}, nil, w, nil); err != nil {
		t.Error(err)
	}
	if err := VotesBackward(VotesShape{NIn: 3, NOut: 2, DIn: 2, DOut: 4}, w, nil, w, nil, nil); err != nil {
		t.Error(err)
	}
	zs := RoutingShape{NIn: 3, NOut: 2, D: 4, Iters: 2}
	zw := make([]float32, zs.WorkSize())
	if err := RoutingForward(zs, nil, nil, nil, nil, zw); err != nil {
		t.Error(err)
	}
	if err := RoutingBackward(zs, nil, nil, nil, nil, nil, zw); err != nil {
		t.Error(err)
	}
}

func TestCapsNoAlloc(t *testing.T) {
	forEachImpl(t, func(t *testing.T, _ string) {
		rng := rand.New(rand.NewSource(6))
		// NOut·DOut·NIn·4 = 8 KiB: the dW sum is split by votesGroup.
		vs := VotesShape{Batch: 9, NIn: 256, NOut: 2, DIn: 4, DOut: 4}
		w := capsRand(rng, vs.NOut*vs.DOut*vs.DIn*vs.NIn, 0, 1)
		u := capsRand(rng, vs.Batch*vs.DIn*vs.NIn, 0, 1)
		uhat := capsBuf(vs.Batch*vs.NOut*vs.DOut*vs.NIn, 0)
		dw, du := capsBuf(len(w), 0), capsBuf(len(u), 0)
		rs := RoutingShape{Batch: 9, NIn: 256, NOut: 2, D: 4, Iters: 3, Squash: SquashSabour}
		v, c := capsBuf(rs.Batch*rs.D*rs.NOut, 0), capsBuf(rs.Batch*rs.NOut*rs.NIn, 0)
		prior, dprior := capsRand(rng, rs.NOut*rs.NIn, 0, 1), capsBuf(rs.NOut*rs.NIn, 0)
		duhat := capsBuf(len(uhat), 0)
		calls := []struct {
			name string
			f    func() error
		}{
			{"VotesForward", func() error { return VotesForward(vs, uhat, w, u) }},
			{"VotesBackward", func() error { return VotesBackward(vs, dw, du, w, u, uhat) }},
		}
		for k := range NumRoutingKinds {
			rs := rs
			rs.Kind = k
			work := capsBuf(rs.WorkSize(), 0)
			calls = append(calls, []struct {
				name string
				f    func() error
			}{
				{"RoutingForward/" + k.String(), func() error { return RoutingForward(rs, v, c, uhat, prior, work) }},
				{"RoutingBackward/" + k.String(), func() error { return RoutingBackward(rs, duhat, dprior, v, uhat, prior, work) }},
			}...)
		}
		for _, f := range calls {
			var err error
			if n := testing.AllocsPerRun(5, func() { err = f.f() }); n != 0 {
				t.Errorf("%s: %v allocations per call", f.name, n)
			}
			if err != nil {
				t.Errorf("%s: %v", f.name, err)
			}
		}
	})
}

// stTensor is one F32 tensor of an oracle file.
type stTensor = safetensors.Tensor

// readSafetensors reads the tensors of an oracle file with the project's
// validating reader (capsnet/safetensors, a leaf package: no import cycle).
func readSafetensors(path string) (map[string]stTensor, error) {
	f, err := safetensors.Read(path)
	if err != nil {
		return nil, err
	}
	return f.Tensors, nil
}

// routingKindFor draws a routing kind: routing by agreement half of the
// time, each other kind equally often.
func routingKindFor(rng *rand.Rand) RoutingKind {
	if rng.Intn(2) == 0 {
		return RoutingRBA
	}
	return RoutingKind(1 + rng.Intn(int(NumRoutingKinds)-1))
}

// TestRoutingKindNames: every kind has a name, and a kind out of range is
// refused by the kernels' entry checks.
func TestRoutingKindNames(t *testing.T) {
	for k := range NumRoutingKinds {
		if s := k.String(); s == "" || s == fmt.Sprintf("RoutingKind(%d)", int(k)) {
			t.Errorf("routing kind %d has no name", int(k))
		}
	}
	for _, k := range []RoutingKind{-1, NumRoutingKinds} {
		sh := RoutingShape{Batch: 1, NIn: 2, NOut: 2, D: 2, Iters: 1, Kind: k}
		if sh.WorkSize() != 0 {
			t.Errorf("kind %v: WorkSize %d, want 0", k, sh.WorkSize())
		}
		if err := RoutingForward(sh, make([]float32, 4), nil, make([]float32, 8), nil, make([]float32, 64)); err == nil {
			t.Errorf("kind %v: RoutingForward accepted it", k)
		}
	}
}
