package kernels

import (
	"fmt"
	"math"
)

// The Adam update. AdamStep checks its arguments and computes the scalars
// of step t in float64; the element-wise pass is the adamStep primitive of
// the implementation in use: adamStepRef below (every GOARCH, and the
// noasm build), or the AVX2, AVX-512 and NEON kernels of package asm,
// which run the same float32 operations in the same order (no fused
// multiply-add, a correctly rounded sqrt, a true division). On amd64 they
// equal adamStepRef bit for bit; on arm64 Go may fuse the reference's
// multiply-adds, so the two can differ in the last bits there.

// AdamParams are the hyper-parameters of AdamStep.
// They are float64 like PyTorch's Python scalars, so that 1−β2 is 0.001
// rounded once to float32 rather than 1 − float32(0.999), which is off by
// 1.3e-5 relative.
type AdamParams struct {
	LR          float64 // learning rate (1e-3)
	Beta1       float64 // first-moment decay β1 (0.9)
	Beta2       float64 // second-moment decay β2 (0.999)
	Eps         float64 // ε added to sqrt(v̂) (1e-8)
	WeightDecay float64 // weight-decay coefficient (1e-6), in the form Decoupled chooses
	// Decoupled applies WeightDecay as AdamW does (torch.optim.AdamW,
	// Loshchilov & Hutter): the weights shrink by the factor 1 − LR·wd
	// before the Adam update, which sees the loss's gradient alone. false
	// (the default, torch.optim.Adam's weight_decay, a Keras L2
	// regulariser) adds wd·w to the gradient, so Adam normalises it with
	// the rest.
	Decoupled bool
	// GradScale, when neither 0 nor 1, is a factor of the gradient: the
	// step uses GradScale·g for g. It is folded into the step's scalars
	// (1 − β1 times it, 1 − β2 times its square and, for L2 decay, the
	// coefficient divided by it), so with a power of two the update equals
	// the one of the scaled gradient bit for bit (barring values that the
	// scaling makes subnormal). The trainer passes the sum of two
	// replicas' gradients with 0.5 instead of their mean.
	GradScale float64
}

// DefaultAdamParams returns the training defaults of docs/semantics.md §5: lr 1e-3,
// β1 0.9, β2 0.999, ε 1e-8, weight decay 1e-6.
func DefaultAdamParams() AdamParams {
	return AdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 1e-6}
}

// AdamStep applies step t (t ≥ 1, counting from 1) of Adam to the weights
// w with gradient g and moment buffers m and v (zero before step 1),
// following torch.optim.Adam with weight_decay (L2 added to the gradient)
// or, with p.Decoupled, torch.optim.AdamW:
//
//	L2 (default):                 decoupled (AdamW):
//	g' = g + wd·w                 g' = g;  w = w·(1 − lr·wd)
//	m  = β1·m + (1−β1)·g'
//	v  = β2·v + (1−β2)·g'²
//	w -= lr/(1−β1ᵗ) · m / (sqrt(v)/sqrt(1−β2ᵗ) + ε)    (= lr·m̂/(sqrt(v̂)+ε))
//
// The bias corrections, the step size and 1 − lr·wd are computed in
// float64, the element-wise update in float32. w, g, m and v must have
// the same length; g is not modified. NaN in g propagates into w, m, v.
func AdamStep(p AdamParams, t int, w, g, m, v []float32) error {
	if t < 1 {
		return fmt.Errorf("kernels.AdamStep: step t=%d, must be ≥ 1", t)
	}
	if len(g) != len(w) || len(m) != len(w) || len(v) != len(w) {
		return fmt.Errorf("kernels.AdamStep: lengths w %d, g %d, m %d, v %d differ", len(w), len(g), len(m), len(v))
	}
	if len(w) == 0 {
		return nil
	}
	k := newAdamConsts(p, t)
	cur.adamStep(k, w, g, nil, m, v)
	return nil
}

// AdamStepSum is AdamStep with the gradient g + h, each element summed in
// float32 (one rounding) in the same pass as the update; g and h are not
// modified. It equals Axpy(1, h, g) followed by AdamStep(p, t, w, g, m, v)
// bit for bit, in one pass over memory instead of two: the trainer steps
// two replicas' gradients with it (with GradScale ½ for their mean).
func AdamStepSum(p AdamParams, t int, w, g, h, m, v []float32) error {
	if t < 1 {
		return fmt.Errorf("kernels.AdamStepSum: step t=%d, must be ≥ 1", t)
	}
	if len(g) != len(w) || len(h) != len(w) || len(m) != len(w) || len(v) != len(w) {
		return fmt.Errorf("kernels.AdamStepSum: lengths w %d, g %d, h %d, m %d, v %d differ", len(w), len(g), len(h), len(m), len(v))
	}
	if len(w) == 0 {
		return nil
	}
	k := newAdamConsts(p, t)
	cur.adamStep(k, w, g, h, m, v)
	return nil
}

// adamConsts are the float32 scalars of one Adam step, computed in float64
// by newAdamConsts.
type adamConsts struct {
	b1, c1, b2, c2 float32 // β1, 1 − β1, β2, 1 − β2
	// wd is the L2 coefficient added to the gradient, or with decoupled
	// the factor 1 − lr·wd of the weights.
	wd         float32
	step       float32 // lr/(1 − β1ᵗ)
	invSqrtBC2 float32 // 1/sqrt(1 − β2ᵗ)
	eps        float32
	decoupled  bool
}

func newAdamConsts(p AdamParams, t int) adamConsts {
	bc1 := 1 - math.Pow(p.Beta1, float64(t))
	bc2 := 1 - math.Pow(p.Beta2, float64(t))
	k := adamConsts{
		b1: float32(p.Beta1), b2: float32(p.Beta2),
		c1: float32(1 - p.Beta1), c2: float32(1 - p.Beta2),
		wd:         float32(p.WeightDecay),
		step:       float32(p.LR / bc1),
		invSqrtBC2: float32(1 / math.Sqrt(bc2)),
		eps:        float32(p.Eps),
		decoupled:  p.Decoupled,
	}
	if p.Decoupled {
		k.wd = float32(1 - p.LR*p.WeightDecay)
	}
	if s := float32(p.GradScale); s != 0 && s != 1 {
		k.c1 *= s
		k.c2 *= s * s
		if !p.Decoupled {
			k.wd /= s
		}
	}
	return k
}

// decoupledFlag is k.decoupled as the int flag of the asm kernels.
func (k adamConsts) decoupledFlag() int {
	if k.decoupled {
		return 1
	}
	return 0
}

// adamStepRef is the reference adamStep: the element-wise update of
// AdamStep for len(w) elements (g, m and v at least as long), in float32;
// with h not empty (at least as long), of the gradient g + h, each sum
// rounded to float32 before anything else (AdamStepSum, as Axpy(1, h, g)
// would store it).
func adamStepRef(k adamConsts, w, g, h, m, v []float32) {
	b1, c1, b2, c2 := k.b1, k.c1, k.b2, k.c2
	step, invSqrtBC2, eps := k.step, k.invSqrtBC2, k.eps
	g, m, v = g[:len(w)], m[:len(w)], v[:len(w)]
	sum := len(h) > 0
	if sum {
		h = h[:len(w)]
	}
	// keep scales w (AdamW: 1 − lr·wd; L2: 1); wd is added to the gradient
	// (L2) or 0.
	keep, wd := float32(1), k.wd
	if k.decoupled {
		keep, wd = k.wd, 0
	}
	for i, wi := range w {
		gi := g[i]
		if sum {
			gi = float32(gi + h[i])
		}
		if !k.decoupled {
			gi += wd * wi
		}
		mi := b1*m[i] + c1*gi
		vi := b2*v[i] + c2*gi*gi
		m[i], v[i] = mi, vi
		den := float32(math.Sqrt(float64(vi)))*invSqrtBC2 + eps
		if k.decoupled {
			w[i] = wi*keep - step*mi/den
		} else {
			w[i] = wi - step*mi/den
		}
	}
}
