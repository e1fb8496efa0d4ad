package capsnet

import (
	"fmt"
	"math"

	"github.com/capstan-ml/capstan/graph"
	"github.com/capstan-ml/capstan/kernels"
)

// Net is one compiled CapsNet for a fixed batch size: every activation,
// gradient and scratch buffer lives in its own arena, sized before the first
// step; parameters come from a shared Params. Forward and Backward are fixed
// schedules of kernel calls and never allocate.
//
// Several Nets may share one Params (data-parallel replicas); each has its
// own gradient buffers, which the trainer reduces in a fixed order.
//
// An inference Net (NewInferenceNet) has no gradient buffers at all: its
// arena holds only activations and scratch, and Backward returns an error.
type Net struct {
	P     *Params
	Batch int
	Arena *graph.Arena
	// Inference is set for a Net compiled by NewInferenceNet.
	Inference bool

	// X is the input batch (B, C, H, W); Labels the classes (set before
	// Forward; used by the loss and, when MaskByLabel, by the decoder mask).
	X      *graph.Buf
	Labels []int
	// MaskByLabel masks the decoder input by the true label (training, and
	// the PyTorch reference's dump); otherwise by the predicted class.
	MaskByLabel bool

	// Grads holds one gradient buffer per parameter, in P.List order, in the
	// parameters' internal layouts.
	Grads []*graph.Buf

	convs []*convLayer
	prim  primaryLayer
	caps  []*CapsLayer
	dec   []*fcLayer

	norms, dNorms  *graph.Buf // (B, classes)
	decIn, dDecIn  *graph.Buf // (B, classes·d) j-major
	recon          *graph.Buf // (B, pixels)
	pred           []int
	dvDec          *graph.Buf // decoder's gradient w.r.t. the top capsules
	work           *graph.Buf
	lossM, lossR   float64
	forward, backw graph.Schedule
}

type convLayer struct {
	cfg    ConvConfig
	sh     kernels.ConvShape
	w, b   *Param
	dw, db *graph.Buf
	x, dx  *graph.Buf // input and its gradient (dx nil for the first conv)
	y, dy  *graph.Buf
}

type primaryLayer struct {
	maps, d, hw int
	kind        kernels.Squash
	s, v, dv    *graph.Buf // (B, d, N) component-major
	ds          *graph.Buf
}

// CapsLayer is one capsule layer of a compiled Net; its buffers are exposed
// for the parse-tree analysis and telemetry (capsules, couplings, weight
// gradients), all in the engine's internal layouts (see docs/kernels.md).
type CapsLayer struct {
	Cfg   CapsConfig
	Votes kernels.VotesShape
	Route kernels.RoutingShape
	W     *Param
	Prior *Param // the routing prior (zero and fixed unless learned)
	// U is the input capsules (B, d_in, n_in); V the output (B, d, n_out);
	// C the last iteration's couplings (B, n_out, n_in).
	U, V, C     *graph.Buf
	Uhat, DUhat *graph.Buf
	DU, DV      *graph.Buf
	DW, DPrior  *graph.Buf
	work        *graph.Buf
}

type fcLayer struct {
	in, out int
	w, b    *Param
	dw, db  *graph.Buf
	x, dx   *graph.Buf
	y, dy   *graph.Buf
	act     string // "relu" or "sigmoid"
}

// NewNet compiles a training Net of the given batch size over p.
func NewNet(p *Params, batch int) (*Net, error) { return newNet(p, batch, false) }

// NewInferenceNet compiles a forward-only Net of the given batch size over
// p: no gradient buffers (the arena holds activations and scratch only, the
// memory an inference on a board needs), the decoder masked by the
// predicted class, and no Backward.
func NewInferenceNet(p *Params, batch int) (*Net, error) { return newNet(p, batch, true) }

func newNet(p *Params, batch int, inference bool) (*Net, error) {
	if batch <= 0 {
		return nil, fmt.Errorf("capsnet: batch %d must be positive", batch)
	}
	cfg, geo := p.Config, p.Geo
	n := &Net{P: p, Batch: batch, Arena: graph.NewArena(), Labels: make([]int, batch), pred: make([]int, batch), MaskByLabel: !inference, Inference: inference}
	B := batch
	a := &netAlloc{Arena: n.Arena, inference: inference}
	gradOf := map[*Param]*graph.Buf{}
	for _, q := range p.List {
		g := a.Alloc("grad."+q.Name, graph.Grad, q.Buf.Shape...)
		if g != nil {
			n.Grads = append(n.Grads, g)
		}
		gradOf[q] = g
	}
	in := geo.ConvIn[0]
	n.X = a.Alloc("x", graph.Activation, B, in[0], in[1], in[2])
	work := 0
	x, dx := n.X, (*graph.Buf)(nil)
	for k, cv := range cfg.Convs {
		ci, co := geo.ConvIn[k], geo.ConvOut[k]
		groups := 1
		if cv.Depthwise {
			groups = ci[0]
		}
		sh := kernels.ConvShape{Batch: B, InC: ci[0], InH: ci[1], InW: ci[2], OutC: co[0], KH: geo.Kernel[k], KW: geo.Kernel[k],
			StrideH: cv.Stride, StrideW: cv.Stride, PadH: cv.Pad, PadW: cv.Pad, Groups: groups}
		if err := sh.Validate(); err != nil {
			return nil, fmt.Errorf("capsnet: conv %s: %w", cv.Name, err)
		}
		work = max(work, sh.WorkSize())
		L := &convLayer{cfg: cv, sh: sh, w: p.Get(cv.Name + ".weight"), b: p.Get(cv.Name + ".bias"), x: x, dx: dx}
		L.dw, L.db = gradOf[L.w], gradOf[L.b]
		L.y = a.Alloc(cv.Name+".y", graph.Activation, B, co[0], co[1], co[2])
		L.dy = a.Alloc(cv.Name+".dy", graph.ActGrad, B, co[0], co[1], co[2])
		n.convs = append(n.convs, L)
		x, dx = L.y, L.dy
	}
	last := geo.ConvOut[len(geo.ConvOut)-1]
	d := cfg.PrimaryDim
	kind, _ := parseSquash(cfg.PrimarySquash)
	n.prim = primaryLayer{maps: last[0] / d, d: d, hw: last[1] * last[2], kind: kind,
		s:  a.Alloc("primary.s", graph.Activation, B, d, geo.PrimaryN),
		v:  a.Alloc("primary.v", graph.Activation, B, d, geo.PrimaryN),
		dv: a.Alloc("primary.dv", graph.ActGrad, B, d, geo.PrimaryN),
		ds: a.Alloc("primary.ds", graph.ActGrad, B, d, geo.PrimaryN)}
	u, du := n.prim.v, n.prim.dv
	for l, cc := range cfg.Caps {
		nIn, dIn := geo.CapsIn[l][0], geo.CapsIn[l][1]
		sq, _ := parseSquash(cc.Squash)
		L := &CapsLayer{Cfg: cc, W: p.Get(cc.Name + ".W"), Prior: p.Get(cc.Name + ".b"), U: u, DU: du,
			Votes: kernels.VotesShape{Batch: B, NIn: nIn, NOut: cc.Out, DIn: dIn, DOut: cc.Dim},
			Route: kernels.RoutingShape{Batch: B, NIn: nIn, NOut: cc.Out, D: cc.Dim, Iters: cc.Iters, Squash: sq, Uniform: cc.Routing == "uniform"}}
		L.DW = gradOf[L.W]
		if L.Prior.Trainable {
			L.DPrior = gradOf[L.Prior]
		}
		L.Uhat = a.Alloc(cc.Name+".uhat", graph.Activation, B, cc.Out, cc.Dim, nIn)
		L.DUhat = a.Alloc(cc.Name+".duhat", graph.ActGrad, B, cc.Out, cc.Dim, nIn)
		L.V = a.Alloc(cc.Name+".v", graph.Activation, B, cc.Dim, cc.Out)
		L.DV = a.Alloc(cc.Name+".dv", graph.ActGrad, B, cc.Dim, cc.Out)
		L.C = a.Alloc(cc.Name+".c", graph.Activation, B, cc.Out, nIn)
		L.work = a.Alloc(cc.Name+".work", graph.Scratch, L.Route.WorkSize())
		n.caps = append(n.caps, L)
		u, du = L.V, L.DV
	}
	top := n.caps[len(n.caps)-1]
	classes, dOut := cfg.Classes, top.Cfg.Dim
	n.norms = a.Alloc("norms", graph.Activation, B, classes)
	n.dNorms = a.Alloc("dnorms", graph.ActGrad, B, classes)
	n.dvDec = a.Alloc("dec.dv", graph.ActGrad, B, dOut, classes)
	n.decIn = a.Alloc("dec.in", graph.Activation, B, classes*dOut)
	n.dDecIn = a.Alloc("dec.din", graph.ActGrad, B, classes*dOut)
	x, dx = n.decIn, n.dDecIn
	sizes := append(append([]int(nil), cfg.Decoder...), geo.Pixels)
	inSz := classes * dOut
	for i, out := range sizes {
		name := fmt.Sprintf("dec.fc%d", i+1)
		L := &fcLayer{in: inSz, out: out, w: p.Get(name + ".weight"), b: p.Get(name + ".bias"), x: x, dx: dx, act: "relu"}
		if i == len(sizes)-1 {
			L.act = "sigmoid"
		}
		L.dw, L.db = gradOf[L.w], gradOf[L.b]
		L.y = a.Alloc(name+".y", graph.Activation, B, out)
		L.dy = a.Alloc(name+".dy", graph.ActGrad, B, out)
		n.dec = append(n.dec, L)
		x, dx, inSz = L.y, L.dy, out
	}
	n.recon = x
	n.work = a.Alloc("work", graph.Scratch, max(work, 1))
	if err := n.Arena.Seal(); err != nil {
		return nil, err
	}
	n.schedule()
	return n, nil
}

// netAlloc allocates from a Net's arena, skipping gradients (Grad and
// ActGrad buffers come back nil) in an inference Net.
type netAlloc struct {
	*graph.Arena
	inference bool
}

func (a *netAlloc) Alloc(name string, kind graph.Kind, shape ...int) *graph.Buf {
	if a.inference && (kind == graph.Grad || kind == graph.ActGrad) {
		return nil
	}
	return a.Arena.Alloc(name, kind, shape...)
}

// Caps returns the capsule layers, input side first.
func (n *Net) Caps() []*CapsLayer { return n.caps }

// Primary returns the primary capsules (B, d, N) component-major.
func (n *Net) Primary() *graph.Buf { return n.prim.v }

// Norms returns the output capsule lengths (B, classes) of the last Forward.
func (n *Net) Norms() []float32 { return n.norms.Data() }

// Recon returns the decoder's reconstruction (B, pixels).
func (n *Net) Recon() []float32 { return n.recon.Data() }

// Pred returns the predicted classes (largest norm) of the last Forward.
func (n *Net) Pred() []int { return n.pred }

// Loss returns the last Forward's batch-mean margin and reconstruction
// losses and their total L_m + α·L_r (spec §4; α/pixels when the config's
// loss.recon is "mean"). recon is always the per-image sum L_r.
func (n *Net) Loss() (margin, recon, total float64) {
	return n.lossM, n.lossR, n.lossM + float64(n.P.Config.Loss.ReconWeight(n.P.Geo.Pixels))*n.lossR
}

// Plan is this replica's memory plan (parameters excluded: they are shared).
func (n *Net) Plan() graph.Plan { return n.Arena.Plan() }

// Forward runs the forward schedule on X and Labels and computes the loss.
func (n *Net) Forward() error { return n.forward.Run() }

// Backward zeroes this replica's gradients and runs the backward schedule;
// it needs a Forward on the same batch first.
func (n *Net) Backward() error {
	if n.Inference {
		return fmt.Errorf("capsnet: Backward on an inference net (compile it with NewNet to train)")
	}
	n.Arena.Zero(graph.Grad)
	return n.backw.Run()
}

// ForwardSteps and BackwardSteps name the schedule's steps.
func (n *Net) ForwardSteps() []string  { return n.forward.Names() }
func (n *Net) BackwardSteps() []string { return n.backw.Names() }

func (n *Net) schedule() {
	f := func(name string, run func() error) { n.forward = append(n.forward, graph.Step{Name: name, Run: run}) }
	b := func(name string, run func() error) { n.backw = append(n.backw, graph.Step{Name: name, Run: run}) }
	work := n.work.Data()
	for _, L := range n.convs {
		f("conv "+L.cfg.Name, func() error {
			if err := kernels.ConvForward(L.sh, L.y.Data(), L.x.Data(), L.w.Buf.Data(), L.b.Buf.Data(), work); err != nil {
				return err
			}
			if L.cfg.ReLU {
				return kernels.ReLU(L.y.Data(), L.y.Data())
			}
			return nil
		})
	}
	f("primary capsules", n.primaryForward)
	for _, L := range n.caps {
		f("votes "+L.Cfg.Name, func() error { return kernels.VotesForward(L.Votes, L.Uhat.Data(), L.W.Buf.Data(), L.U.Data()) })
		f("routing "+L.Cfg.Name, func() error {
			return kernels.RoutingForward(L.Route, L.V.Data(), L.C.Data(), L.Uhat.Data(), L.Prior.Buf.Data(), L.work.Data())
		})
	}
	f("margin loss and mask", n.headForward)
	for _, L := range n.dec {
		f("fc "+L.w.Name, L.forward)
	}
	f("reconstruction loss", n.reconForward)
	if n.Inference {
		return
	}

	b("reconstruction loss", n.reconBackward)
	for i := len(n.dec) - 1; i >= 0; i-- {
		L := n.dec[i]
		b("fc "+L.w.Name, L.backward)
	}
	b("margin loss and mask", n.headBackward)
	for i := len(n.caps) - 1; i >= 0; i-- {
		L := n.caps[i]
		b("routing "+L.Cfg.Name, func() error {
			var dpr []float32
			if L.DPrior != nil {
				dpr = L.DPrior.Data()
			}
			return kernels.RoutingBackward(L.Route, L.DUhat.Data(), dpr, L.DV.Data(), L.Uhat.Data(), L.Prior.Buf.Data(), L.work.Data())
		})
		b("votes "+L.Cfg.Name, func() error {
			return kernels.VotesBackward(L.Votes, L.DW.Data(), L.DU.Data(), L.W.Buf.Data(), L.U.Data(), L.DUhat.Data())
		})
	}
	b("primary capsules", n.primaryBackward)
	for i := len(n.convs) - 1; i >= 0; i-- {
		L := n.convs[i]
		b("conv "+L.cfg.Name, func() error {
			if L.cfg.ReLU {
				if err := kernels.ReLUBackward(L.y.Data(), L.dy.Data(), L.dy.Data()); err != nil {
					return err
				}
			}
			if err := kernels.ConvBackwardFilter(L.sh, L.dw.Data(), L.db.Data(), L.x.Data(), L.dy.Data(), work); err != nil {
				return err
			}
			if L.dx == nil {
				return nil
			}
			return kernels.ConvBackwardData(L.sh, L.dx.Data(), L.dy.Data(), L.w.Buf.Data(), work)
		})
	}
}

// primaryForward views the last conv's channels as (maps, d) and gathers
// them component-major: s[b, l, m·HW + pos] = y[b, m·d + l, pos], then
// squashes every capsule.
func (n *Net) primaryForward() error {
	P := &n.prim
	y := n.convs[len(n.convs)-1].y.Data()
	s := P.s.Data()
	N := P.maps * P.hw
	for bi := 0; bi < n.Batch; bi++ {
		for m := 0; m < P.maps; m++ {
			for l := 0; l < P.d; l++ {
				src := y[((bi*P.maps+m)*P.d+l)*P.hw:][:P.hw]
				copy(s[(bi*P.d+l)*N+m*P.hw:][:P.hw], src)
			}
		}
	}
	return kernels.SquashForward(P.kind, n.Batch, P.d, N, s, P.v.Data())
}

func (n *Net) primaryBackward() error {
	P := &n.prim
	N := P.maps * P.hw
	if err := kernels.SquashBackward(P.kind, n.Batch, P.d, N, P.s.Data(), P.dv.Data(), P.ds.Data()); err != nil {
		return err
	}
	dy := n.convs[len(n.convs)-1].dy.Data()
	ds := P.ds.Data()
	for bi := 0; bi < n.Batch; bi++ {
		for m := 0; m < P.maps; m++ {
			for l := 0; l < P.d; l++ {
				copy(dy[((bi*P.maps+m)*P.d+l)*P.hw:][:P.hw], ds[(bi*P.d+l)*N+m*P.hw:][:P.hw])
			}
		}
	}
	return nil
}

// headForward computes the output norms, predictions, the margin loss (and
// its gradient, written to the top layer's DV, to which headBackward adds
// the decoder's part) and the decoder input masked by the label (or the
// prediction).
func (n *Net) headForward() error {
	cfg := n.P.Config
	top := n.caps[len(n.caps)-1]
	classes, d := cfg.Classes, top.Cfg.Dim
	mp := kernels.MarginParams{MPlus: cfg.Loss.MPlus, MMinus: cfg.Loss.MMinus, Lambda: cfg.Loss.Lambda, Eps: kernels.SquashEps}
	lm, err := kernels.MarginLoss(mp, n.Batch, d, classes, top.V.Data(), n.Labels, n.norms.Data(), top.DV.Data())
	if err != nil {
		return err
	}
	n.lossM = float64(lm)
	if math.IsNaN(n.lossM) || math.IsInf(n.lossM, 0) {
		return fmt.Errorf("margin loss is %v: training diverged or the input holds NaN", n.lossM)
	}
	if err := kernels.PredictLabels(n.Batch, classes, n.norms.Data(), n.pred); err != nil {
		return err
	}
	return kernels.MaskCapsules(n.Batch, d, classes, top.V.Data(), n.maskLabels(), n.decIn.Data())
}

func (n *Net) maskLabels() []int {
	if n.MaskByLabel {
		return n.Labels
	}
	return n.pred
}

// headBackward adds the decoder's gradient, through the mask, to the margin
// loss gradient headForward left in the top layer's DV.
func (n *Net) headBackward() error {
	top := n.caps[len(n.caps)-1]
	classes, d := n.P.Config.Classes, top.Cfg.Dim
	dvDec := n.dvDec.Data()
	if err := kernels.MaskCapsulesBackward(n.Batch, d, classes, n.dDecIn.Data(), n.maskLabels(), dvDec); err != nil {
		return err
	}
	dv := top.DV.Data()
	for i, g := range dvDec {
		dv[i] += g
	}
	return nil
}

func (L *fcLayer) forward() error {
	B := L.x.Len() / L.in
	y := L.y.Data()
	if err := kernels.Sgemm(false, true, B, L.out, L.in, 1, L.x.Data(), L.in, L.w.Buf.Data(), L.in, 0, y, L.out); err != nil {
		return err
	}
	if err := kernels.BiasAddCols(B, L.out, y, L.b.Buf.Data()); err != nil {
		return err
	}
	if L.act == "sigmoid" {
		return kernels.Sigmoid(y, y)
	}
	return kernels.ReLU(y, y)
}

func (L *fcLayer) backward() error {
	B := L.x.Len() / L.in
	dy, y := L.dy.Data(), L.y.Data()
	var err error
	if L.act == "sigmoid" {
		err = kernels.SigmoidBackward(y, dy, dy)
	} else {
		err = kernels.ReLUBackward(y, dy, dy)
	}
	if err != nil {
		return err
	}
	if err := kernels.Sgemm(true, false, L.out, L.in, B, 1, dy, L.out, L.x.Data(), L.in, 1, L.dw.Data(), L.in); err != nil {
		return err
	}
	if err := kernels.BiasGradCols(B, L.out, dy, L.db.Data()); err != nil {
		return err
	}
	return kernels.Sgemm(false, false, B, L.in, L.out, 1, dy, L.out, L.w.Buf.Data(), L.in, 0, L.dx.Data(), L.in)
}

// reconForward computes L_r, the batch mean of Σ_pixels (recon − x)².
func (n *Net) reconForward() error {
	lr, err := kernels.ReconLoss(1, n.Batch, n.P.Geo.Pixels, n.recon.Data(), n.X.Data(), nil)
	n.lossR = float64(lr)
	return err
}

// reconBackward seeds the decoder's gradient: d(α·L_r)/d recon.
func (n *Net) reconBackward() error {
	_, err := kernels.ReconLoss(n.P.Config.Loss.ReconWeight(n.P.Geo.Pixels), n.Batch, n.P.Geo.Pixels, n.recon.Data(), n.X.Data(), n.dec[len(n.dec)-1].dy.Data())
	return err
}
