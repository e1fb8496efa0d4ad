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
//
// The arena's memory plan follows the buffers' lifetimes over the forward
// and backward schedules (graph.Arena.SealShared): an activation no later
// step reads shares memory with later ones. What the accessors expose
// (Capsules, Couplings, Norms, Recon, the gradients) is pinned, so it stays
// valid after Forward (and Backward) until the next pass.
//
// A Net is used through Forward(x, labels), Backward, BackwardMargin and the
// read-only accessors; it is not safe for concurrent use.
type Net struct {
	P     *Params
	Batch int
	Arena *graph.Arena
	// Inference is set for a Net compiled by NewInferenceNet.
	Inference bool

	// x is the input batch (B, C, H, W); labels the classes (set by Forward;
	// used by the loss and, when maskByLabel, by the decoder mask).
	x      *graph.Buf
	labels []int
	// maskByLabel masks the decoder input by the true label (training, and
	// the PyTorch reference's dump); otherwise by the predicted class.
	maskByLabel bool

	// Grads holds one gradient buffer per parameter, in P.List order, in the
	// parameters' internal layouts.
	Grads []*graph.Buf

	convs []*convLayer
	prim  primaryLayer
	caps  []*capsLayer
	dec   []*fcLayer
	info  []LayerInfo

	norms, dNorms  *graph.Buf // (B, classes)
	decIn, dDecIn  *graph.Buf // (B, classes·d) j-major
	recon          *graph.Buf // (B, pixels)
	pred           []int
	dvDec          *graph.Buf // decoder's gradient w.r.t. the top capsules
	lossM, lossR   float64
	forward, backw graph.Schedule
	margin         graph.Schedule // BackwardMargin
	// backwardDone is set by Backward and cleared by Forward: Backward may
	// reuse what BackwardMargin reads (see BackwardMargin).
	backwardDone bool
	// forwardDone is set by a Forward that succeeded (Reconstruct needs its
	// output capsules); reconstructed by Reconstruct, cleared by Forward (the
	// decoder then holds a perturbed pass, see Reconstruct).
	forwardDone, reconstructed bool
}

type convLayer struct {
	cfg    ConvConfig
	sh     kernels.ConvShape
	w, b   *Param
	dw, db *graph.Buf
	x, dx  *graph.Buf // input and its gradient (dx nil for the first conv)
	y, dy  *graph.Buf
	// work and bwork are the forward's and the backward's scratch (im2col
	// and SGEMM packing): separate buffers, so each lives in its own step.
	work, bwork *graph.Buf
}

type primaryLayer struct {
	maps, d, hw int
	kind        kernels.Squash
	s, v, dv    *graph.Buf // (B, d, N) component-major
	ds          *graph.Buf
}

// capsLayer is one capsule layer of a compiled Net; the accessors
// (Capsules, Couplings, VotesGrad) expose its buffers read-only.
type capsLayer struct {
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
	// work and bwork are the SGEMM packing space of the forward and the
	// backward step.
	work, bwork *graph.Buf
}

// NewNet compiles a training Net of the given batch size over p.
func NewNet(p *Params, batch int) (*Net, error) { return newNet(p, batch, false, planShared) }

// NewInferenceNet compiles a forward-only Net of the given batch size over
// p: no gradient buffers (the arena holds activations and scratch only, the
// memory an inference on a board needs), the decoder masked by the
// predicted class, and no Backward.
func NewInferenceNet(p *Params, batch int) (*Net, error) { return newNet(p, batch, true, planShared) }

// MaxBatch bounds the batch of one Net (one replica), checked before
// anything is allocated; the memory limit of one model (MaxModelBytes, see
// ModelMemoryLimit) then refuses a Net whose parameters and memory plan
// need more, before the plan is allocated.
const MaxBatch = 1 << 20

// planMode selects the arena's memory plan (tests compare them).
type planMode int

const (
	planShared   planMode = iota // lifetimes: SealShared
	planUnshared                 // every buffer its own memory: Seal
	planDebug                    // SealShared with NaN poisoning (graph.Arena.SetDebug)
	planOnly                     // SealShared's plan, not allocated, no memory limit (TrainingPlan)
)

func newNet(p *Params, batch int, inference bool, mode planMode) (*Net, error) {
	if batch <= 0 || batch > MaxBatch {
		return nil, fmt.Errorf("capsnet: batch %d must be between 1 and %d", batch, MaxBatch)
	}
	cfg, geo := p.Config, p.Geo
	limit, source, err := ModelMemoryLimit()
	if err != nil {
		return nil, err
	}
	if mode == planOnly {
		limit, source = math.MaxInt64, "none (a plan only)"
	}
	if err := checkWorkSizes(p, batch, limit, source); err != nil {
		return nil, err
	}
	n := &Net{P: p, Batch: batch, Arena: graph.NewArena(), labels: make([]int, batch), pred: make([]int, batch), maskByLabel: !inference, Inference: inference}
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
	n.x = a.Alloc("x", graph.Activation, B, in[0], in[1], in[2])
	x, dx := n.x, (*graph.Buf)(nil)
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
		L := &convLayer{cfg: cv, sh: sh, w: p.Get(cv.Name + ".weight"), b: p.Get(cv.Name + ".bias"), x: x, dx: dx}
		L.work = a.Alloc(cv.Name+".work", graph.Scratch, sh.ArenaWorkSize())
		L.bwork = a.AllocBackward(cv.Name+".bwork", graph.Scratch, sh.ArenaWorkSize())
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
		L := &capsLayer{Cfg: cc, W: p.Get(cc.Name + ".W"), Prior: p.Get(cc.Name + ".b"), U: u, DU: du,
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
		L.work = a.Alloc(name+".work", graph.Scratch, kernels.SgemmWorkSize(B, out, inSz))
		L.bwork = a.AllocBackward(name+".bwork", graph.Scratch, max(kernels.SgemmWorkSize(out, inSz, B), kernels.SgemmWorkSize(B, inSz, out)))
		L.y = a.Alloc(name+".y", graph.Activation, B, out)
		L.dy = a.Alloc(name+".dy", graph.ActGrad, B, out)
		n.dec = append(n.dec, L)
		x, dx, inSz = L.y, L.dy, out
	}
	n.recon = x
	n.info = append(n.info, LayerInfo{Name: "primary", N: geo.PrimaryN, D: d})
	for _, L := range n.caps {
		n.info = append(n.info, LayerInfo{Name: L.Cfg.Name, N: L.Route.NOut, D: L.Route.D})
	}
	n.schedule()
	// Pinned: the input (written by Forward outside the schedules) and
	// everything an accessor exposes after a pass.
	n.Arena.Pin(n.x, n.prim.v, n.norms, n.recon)
	for _, L := range n.caps {
		n.Arena.Pin(L.V, L.C)
	}
	// The memory limit of one model: parameters plus this Net's plan,
	// checked by the arena once the plan is made, before it is allocated.
	var tooBig error
	paramBytes := p.Arena.Bytes()
	n.Arena.SetSizeCheck(func(plan int64) error {
		if need := paramBytes + plan; need > limit {
			tooBig = memoryError(cfg.Name, fmt.Sprintf("batch %d needs %s (parameters %s + memory plan %s)", batch, fmtBytes(need), fmtBytes(paramBytes), fmtBytes(plan)),
				need, limit, source)
			return tooBig
		}
		return nil
	})
	if mode == planOnly {
		n.Arena.SetSizeCheck(stopAtPlan)
	}
	n.Arena.SetDebug(mode == planDebug)
	switch {
	case mode == planUnshared:
		err = n.Arena.Seal()
	case inference:
		err = n.Arena.SealShared(n.forward)
	default:
		err = n.Arena.SealShared(n.forward, n.margin, n.backw)
	}
	if err == errPlanned {
		return n, nil
	}
	if err != nil {
		if err == tooBig {
			return nil, err
		}
		return nil, fmt.Errorf("capsnet: memory plan: %w", err)
	}
	return n, nil
}

// checkWorkSizes refuses a batch whose kernel work spaces could not even be
// computed in an int (the kernels' size formulas do not check overflow):
// the routing's per-iteration store and the convolutions' im2col columns,
// bounded here with checked products. Such sizes are far beyond any memory
// limit; what passes is sized exactly by the arena's plan.
func checkWorkSizes(p *Params, batch int, limit int64, source string) error {
	cfg, geo := p.Config, p.Geo
	over := func(what string) error {
		return memoryError(cfg.Name, fmt.Sprintf("batch %d needs more than %s (%s alone)", batch, fmtBytes(4*maxElems), what), 4*maxElems, limit, source)
	}
	for l, cc := range cfg.Caps {
		nIn := geo.CapsIn[l][0]
		c, ok1 := mulSize(cc.Out, nIn)
		v, ok2 := mulSize(2, cc.Dim, cc.Out)
		if _, ok3 := mulSize(batch, max(cc.Iters, 1), c+v); !ok1 || !ok2 || !ok3 {
			return over(fmt.Sprintf("the routing work space of %s", cc.Name))
		}
	}
	for k, cv := range cfg.Convs {
		in, out, ks := geo.ConvIn[k], geo.ConvOut[k], geo.Kernel[k]
		cg := in[0]
		if cv.Depthwise {
			cg = 1
		}
		col, ok1 := mulSize(cg, ks, ks)
		_, ok2 := mulSize(batch, out[1], out[2], col+out[0])
		_, ok3 := mulSize(batch, in[0], in[1], in[2])
		if !ok1 || !ok2 || !ok3 {
			return over(fmt.Sprintf("the work space of %s", cv.Name))
		}
	}
	return nil
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

// AllocBackward allocates a buffer only the backward schedule uses (nil in
// an inference Net).
func (a *netAlloc) AllocBackward(name string, kind graph.Kind, shape ...int) *graph.Buf {
	if a.inference {
		return nil
	}
	return a.Arena.Alloc(name, kind, shape...)
}

// Norms returns the output capsule lengths (B, classes) of the last
// Forward: a view of the Net's memory, valid until the next pass; do not
// modify it.
func (n *Net) Norms() []float32 { return n.norms.Data() }

// Recon returns the decoder's reconstruction (B, pixels) of the last
// Forward: a view, valid until the next pass; do not modify it.
func (n *Net) Recon() []float32 { return n.recon.Data() }

// Pred returns the predicted classes (largest norm) of the last Forward: a
// view; do not modify it.
func (n *Net) Pred() []int { return n.pred }

// Labels returns the labels of the last Forward (zeros when it got nil): a
// view; do not modify it.
func (n *Net) Labels() []int { return n.labels }

// InputLen is the number of values of one input image (C·H·W); Forward's x
// holds Batch·InputLen values.
func (n *Net) InputLen() int { return n.x.Len() / n.Batch }

// MaskByLabel reports how the decoder input is masked: by the true label
// (true: training, and the PyTorch reference's dump) or by the predicted
// class (false: inference). A Net from NewNet starts with true, one from
// NewInferenceNet with false.
func (n *Net) MaskByLabel() bool { return n.maskByLabel }

// SetMaskByLabel sets how the next Forward masks the decoder input (see
// MaskByLabel); evaluation on a training Net sets false.
func (n *Net) SetMaskByLabel(on bool) { n.maskByLabel = on }

// Loss returns the last Forward's batch-mean margin and reconstruction
// losses and their total L_m + α·L_r (spec §4; α/pixels when the config's
// loss.recon is "mean"). recon is always the per-image sum L_r.
func (n *Net) Loss() (margin, recon, total float64) {
	return n.lossM, n.lossR, n.lossM + float64(n.P.Config.Loss.ReconWeight(n.P.Geo.Pixels))*n.lossR
}

// Plan is this replica's memory plan (parameters excluded: they are shared).
func (n *Net) Plan() graph.Plan { return n.Arena.Plan() }

// Forward copies the input batch x (Batch images, NCHW: Batch·InputLen
// values) and labels (Batch classes, used by the margin loss and, with
// MaskByLabel, by the decoder mask; nil means all zeros, for an inference
// whose loss is not wanted) into the Net, runs the forward schedule and
// computes the loss. It does not allocate.
func (n *Net) Forward(x []float32, labels []int) error {
	if len(x) != n.x.Len() {
		return fmt.Errorf("capsnet: forward: x has %d values, a batch of %d images of %v needs %d", len(x), n.Batch, n.P.Config.Input, n.x.Len())
	}
	switch {
	case labels == nil:
		clear(n.labels)
	case len(labels) != n.Batch:
		return fmt.Errorf("capsnet: forward: %d labels for a batch of %d", len(labels), n.Batch)
	default:
		copy(n.labels, labels)
	}
	copy(n.x.Data(), x)
	n.backwardDone, n.forwardDone, n.reconstructed = false, false, false
	if err := n.forward.Run(); err != nil {
		return err
	}
	n.forwardDone = true
	return nil
}

// Backward zeroes this replica's gradients and runs the backward schedule
// of the total loss L_m + α·L_r; it needs a Forward on the same batch first.
func (n *Net) Backward() error {
	if n.Inference {
		return fmt.Errorf("capsnet: Backward on an inference net (compile it with NewNet to train)")
	}
	if n.reconstructed {
		return fmt.Errorf("capsnet: Backward after Reconstruct: the decoder holds a reconstruction of other capsules; run Forward first")
	}
	n.Arena.Zero(graph.Grad)
	n.backwardDone = true
	return n.backw.Run()
}

// BackwardMargin zeroes this replica's gradients and runs the backward pass
// of the margin loss L_m alone (no reconstruction term) from the output
// capsules down to the first capsule layer's votes: afterwards VotesGrad(l)
// holds ∂L_m/∂W of every capsule layer (and the learned priors' gradients
// ∂L_m/∂b); the convolution and decoder gradients are zero. The parse-tree
// analysis reads |∂L_m/∂W[j,i]| from it. It does not allocate.
//
// It must follow a Forward with no Backward in between (an error
// otherwise): the memory plan orders the schedules forward, margin-only,
// backward, so Backward may reuse the memory of the routing state
// BackwardMargin reads. Forward, BackwardMargin (read the margin
// gradients), Backward (read the full ones) gives both at the cost of two
// backward passes.
func (n *Net) BackwardMargin() error {
	if n.Inference {
		return fmt.Errorf("capsnet: BackwardMargin on an inference net (compile it with NewNet)")
	}
	if n.backwardDone {
		return fmt.Errorf("capsnet: BackwardMargin after Backward: call it between Forward and Backward")
	}
	if n.reconstructed {
		return fmt.Errorf("capsnet: BackwardMargin after Reconstruct: run Forward first")
	}
	n.Arena.Zero(graph.Grad)
	return n.margin.Run()
}

// ForwardSteps and BackwardSteps name the schedule's steps.
func (n *Net) ForwardSteps() []string  { return n.forward.Names() }
func (n *Net) BackwardSteps() []string { return n.backw.Names() }

// bufs lists buffers for a step's Reads or Writes (nil entries are
// ignored by the planner).
func bufs(b ...*graph.Buf) []*graph.Buf { return b }

func (n *Net) schedule() {
	f := func(name string, run func() error, reads, writes []*graph.Buf) {
		n.forward = append(n.forward, graph.Step{Name: name, Run: run, Reads: reads, Writes: writes})
	}
	b := func(name string, run func() error, reads, writes []*graph.Buf) {
		n.backw = append(n.backw, graph.Step{Name: name, Run: run, Reads: reads, Writes: writes})
	}
	m := func(name string, run func() error, reads, writes []*graph.Buf) {
		n.margin = append(n.margin, graph.Step{Name: name, Run: run, Reads: reads, Writes: writes})
	}
	for _, L := range n.convs {
		f("conv "+L.cfg.Name, func() error {
			if err := kernels.ConvForward(L.sh, L.y.Data(), L.x.Data(), L.w.Buf.Data(), L.b.Buf.Data(), L.work.Data()); err != nil {
				return err
			}
			if L.cfg.ReLU {
				return kernels.ReLU(L.y.Data(), L.y.Data())
			}
			return nil
		}, bufs(L.x, L.w.Buf, L.b.Buf), bufs(L.y, L.work))
	}
	lastY := n.convs[len(n.convs)-1].y
	f("primary capsules", n.primaryForward, bufs(lastY), bufs(n.prim.s, n.prim.v))
	for _, L := range n.caps {
		f("votes "+L.Cfg.Name, func() error { return kernels.VotesForward(L.Votes, L.Uhat.Data(), L.W.Buf.Data(), L.U.Data()) },
			bufs(L.W.Buf, L.U), bufs(L.Uhat))
		f("routing "+L.Cfg.Name, func() error {
			return kernels.RoutingForward(L.Route, L.V.Data(), L.C.Data(), L.Uhat.Data(), L.Prior.Buf.Data(), L.work.Data())
		}, bufs(L.Uhat, L.Prior.Buf), bufs(L.V, L.C, L.work))
	}
	top := n.caps[len(n.caps)-1]
	f("margin loss and mask", n.headForward, bufs(top.V), bufs(n.norms, n.decIn))
	for _, L := range n.dec {
		f("fc "+L.w.Name, L.forward, bufs(L.x, L.w.Buf, L.b.Buf), bufs(L.y, L.work))
	}
	f("reconstruction loss", n.reconForward, bufs(n.recon, n.x), nil)
	if n.Inference {
		return
	}

	last := n.dec[len(n.dec)-1]
	b("reconstruction loss", n.reconBackward, bufs(n.recon, n.x), bufs(last.dy))
	for i := len(n.dec) - 1; i >= 0; i-- {
		L := n.dec[i]
		b("fc "+L.w.Name, L.backward, bufs(L.y, L.dy, L.x, L.w.Buf), bufs(L.dy, L.dw, L.db, L.dx, L.bwork))
	}
	b("margin loss and mask", n.headBackward, bufs(top.V, n.dDecIn), bufs(n.dvDec, top.DV))
	m("margin loss", n.marginBackward, bufs(top.V), bufs(top.DV))
	for i := len(n.caps) - 1; i >= 0; i-- {
		L := n.caps[i]
		routing := func() error {
			var dpr []float32
			if L.DPrior != nil {
				dpr = L.DPrior.Data()
			}
			return kernels.RoutingBackward(L.Route, L.DUhat.Data(), dpr, L.DV.Data(), L.Uhat.Data(), L.Prior.Buf.Data(), L.work.Data())
		}
		b("routing "+L.Cfg.Name, routing, bufs(L.DV, L.Uhat, L.Prior.Buf, L.work), bufs(L.DUhat, L.DPrior, L.work))
		m("routing "+L.Cfg.Name, routing, bufs(L.DV, L.Uhat, L.Prior.Buf, L.work), bufs(L.DUhat, L.DPrior, L.work))
		b("votes "+L.Cfg.Name, func() error {
			return kernels.VotesBackward(L.Votes, L.DW.Data(), L.DU.Data(), L.W.Buf.Data(), L.U.Data(), L.DUhat.Data())
		}, bufs(L.W.Buf, L.U, L.DUhat), bufs(L.DW, L.DU))
		// The margin-only pass stops at the first capsule layer's votes: it
		// wants ∂L_m/∂W, not the primary capsules' gradient.
		du := L.DU
		if i == 0 {
			du = nil
		}
		m("votes "+L.Cfg.Name, func() error {
			return kernels.VotesBackward(L.Votes, L.DW.Data(), du.Data(), L.W.Buf.Data(), L.U.Data(), L.DUhat.Data())
		}, bufs(L.W.Buf, L.U, L.DUhat), bufs(L.DW, du))
	}
	b("primary capsules", n.primaryBackward, bufs(n.prim.s, n.prim.dv), bufs(n.prim.ds, n.convs[len(n.convs)-1].dy))
	for i := len(n.convs) - 1; i >= 0; i-- {
		L := n.convs[i]
		b("conv "+L.cfg.Name, func() error {
			work := L.bwork.Data()
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
		}, bufs(L.y, L.dy, L.x, L.w.Buf), bufs(L.dy, L.dw, L.db, L.dx, L.bwork))
	}
}

// primaryForward views the last conv's channels as (maps, d) and gathers
// them component-major: s[b, l, m·HW + pos] = y[b, m·d + l, pos], then
// squashes every capsule.
func (n *Net) primaryForward() error {
	P := &n.prim
	if err := kernels.PrimaryCapsules(n.Batch, P.maps, P.d, P.hw, n.convs[len(n.convs)-1].y.Data(), P.s.Data()); err != nil {
		return err
	}
	return kernels.SquashForward(P.kind, n.Batch, P.d, P.maps*P.hw, P.s.Data(), P.v.Data())
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

// headForward computes the output norms, predictions, the margin loss and
// the decoder input masked by the label (or the prediction).
func (n *Net) headForward() error {
	cfg := n.P.Config
	top := n.caps[len(n.caps)-1]
	classes, d := cfg.Classes, top.Cfg.Dim
	mp := kernels.MarginParams{MPlus: cfg.Loss.MPlus, MMinus: cfg.Loss.MMinus, Lambda: cfg.Loss.Lambda, Eps: kernels.SquashEps}
	lm, err := kernels.MarginLoss(mp, n.Batch, d, classes, top.V.Data(), n.labels, n.norms.Data(), nil)
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
	if n.maskByLabel {
		return n.labels
	}
	return n.pred
}

// marginBackward writes the margin loss gradient ∂L_m/∂v to the top
// layer's DV (the seed of BackwardMargin, and the first half of
// headBackward).
func (n *Net) marginBackward() error {
	cfg := n.P.Config
	top := n.caps[len(n.caps)-1]
	mp := kernels.MarginParams{MPlus: cfg.Loss.MPlus, MMinus: cfg.Loss.MMinus, Lambda: cfg.Loss.Lambda, Eps: kernels.SquashEps}
	_, err := kernels.MarginLoss(mp, n.Batch, top.Cfg.Dim, cfg.Classes, top.V.Data(), n.labels, nil, top.DV.Data())
	return err
}

// headBackward writes the margin loss gradient to the top layer's DV and
// adds the decoder's gradient, through the mask.
func (n *Net) headBackward() error {
	if err := n.marginBackward(); err != nil {
		return err
	}
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
	if err := kernels.SgemmWork(false, true, B, L.out, L.in, 1, L.x.Data(), L.in, L.w.Buf.Data(), L.in, 0, y, L.out, L.work.Data()); err != nil {
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
	if err := kernels.SgemmWork(true, false, L.out, L.in, B, 1, dy, L.out, L.x.Data(), L.in, 1, L.dw.Data(), L.in, L.bwork.Data()); err != nil {
		return err
	}
	if err := kernels.BiasGradCols(B, L.out, dy, L.db.Data()); err != nil {
		return err
	}
	return kernels.SgemmWork(false, false, B, L.in, L.out, 1, dy, L.out, L.w.Buf.Data(), L.in, 0, L.dx.Data(), L.in, L.bwork.Data())
}

// reconForward computes L_r, the batch mean of Σ_pixels (recon − x)².
func (n *Net) reconForward() error {
	lr, err := kernels.ReconLoss(1, n.Batch, n.P.Geo.Pixels, n.recon.Data(), n.x.Data(), nil)
	n.lossR = float64(lr)
	return err
}

// reconBackward seeds the decoder's gradient: d(α·L_r)/d recon.
func (n *Net) reconBackward() error {
	_, err := kernels.ReconLoss(n.P.Config.Loss.ReconWeight(n.P.Geo.Pixels), n.Batch, n.P.Geo.Pixels, n.recon.Data(), n.x.Data(), n.dec[len(n.dec)-1].dy.Data())
	return err
}
