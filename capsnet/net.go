package capsnet

import (
	"fmt"
	"math"
	"slices"

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
// arena holds only activations, scratch and a packed copy of the
// convolutions' weights (refreshed after Params.Modified), and Backward
// returns an error.
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
	// chunk is the images the Net runs through all its convolutions at a
	// time (convChunk, Net.convChunks), 0 where it runs them layer by layer
	// over the whole batch.
	chunk int
	prim  primaryLayer
	caps  []*capsLayer
	dec   []*fcLayer
	info  []LayerInfo

	norms, dNorms *graph.Buf // (B, classes)
	decIn, dDecIn *graph.Buf // (B, classes·d) j-major
	recon         *graph.Buf // (B, pixels)
	pred          []int
	dvDec         *graph.Buf // decoder's gradient w.r.t. the top capsules
	lossM, lossR  float64
	// marginParams and reconWeight are the loss constants of the layout.
	marginParams   kernels.MarginParams
	reconWeight    float32
	forward, backw graph.Schedule
	margin         graph.Schedule // BackwardMargin
	// backwardDone is set by Backward and cleared by Forward: Backward may
	// reuse what BackwardMargin reads (see BackwardMargin).
	backwardDone bool
	// forwardDone is set by a Forward that succeeded (Reconstruct needs its
	// output capsules); reconstructed by Reconstruct, cleared by Forward (the
	// decoder then holds a perturbed pass, see Reconstruct).
	forwardDone, reconstructed bool
	// prof holds the per-step timers (SetProfiling).
	prof profile
	// help runs the second halves of split convolutions (SetConvThreads).
	help *helper
}

type convLayer struct {
	ConvLayer
	sh     kernels.ConvShape // at the Net's batch
	w, b   *Param
	dw, db *graph.Buf
	x, dx  *graph.Buf // input and its gradient (dx nil for the first conv)
	y, dy  *graph.Buf
	// work and bwork are the forward's and the backward's scratch (im2col
	// and SGEMM packing): separate buffers, so each lives in its own step.
	work, bwork *graph.Buf
	// save is what the forward keeps for the backward on the Winograd
	// path (kernels.ConvForwardTrain: the transformed weights and input),
	// in a training Net and for the shapes that take it; else nil.
	save *graph.Buf
	// split is the second half of the output channels when the forward
	// runs on two threads (SetConvThreads), else nil.
	split *convSplit
	// pw is the packed copy of the weights (graph.Packed) of an inference
	// Net, nil in a training Net, with InferenceOptions.NoPackedWeights
	// and where the shape has nothing to pack (depthwise); pack says what
	// it holds.
	pw   *graph.Buf
	pack convPack
}

type primaryLayer struct {
	PrimaryLayer
	s, v, dv *graph.Buf // (B, d, N) component-major
	ds       *graph.Buf
}

// capsLayer is one capsule layer of a compiled Net; the accessors
// (Capsules, Couplings, VotesGrad) expose its buffers read-only.
type capsLayer struct {
	Name  string
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
	batch   int
	in, out int
	w, b    *Param
	dw, db  *graph.Buf
	x, dx   *graph.Buf
	y, dy   *graph.Buf
	act     Activation
	// work and bwork are the SGEMM packing space of the forward and the
	// backward step.
	work, bwork *graph.Buf
}

// NewNet compiles a training Net of the given batch size over p.
func NewNet(p *Params, batch int) (*Net, error) { return newNet(p, batch, false, planShared) }

// NewInferenceNet compiles a forward-only Net of the given batch size over
// p: no gradient buffers (the arena holds activations, scratch and a
// packed copy of the convolutions' weights only, the memory an inference
// on a board needs), the decoder masked by the predicted class, and no
// Backward. It is NewInferenceNetOptions with the zero InferenceOptions:
// the weights are packed once (kernels.PackConv) and packed again at the
// start of a Forward after Params.Modified.
func NewInferenceNet(p *Params, batch int) (*Net, error) {
	return NewInferenceNetOptions(p, batch, InferenceOptions{})
}

// InferenceOptions are the options of NewInferenceNetOptions.
type InferenceOptions struct {
	// NoPackedWeights makes the convolutions pack their weights on every
	// call, as a training Net's do, instead of reading a packed copy: the
	// arena holds no copy (less memory, more time per Forward), and
	// Params.Modified need not be called. The results are the same bits
	// either way.
	NoPackedWeights bool
}

// NewInferenceNetOptions is NewInferenceNet with options.
func NewInferenceNetOptions(p *Params, batch int, o InferenceOptions) (*Net, error) {
	if p == nil {
		return nil, fmt.Errorf("capsnet: inference net: no parameters")
	}
	return newNetPacked(p, batch, true, planShared, !o.NoPackedWeights)
}

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

// CheckBatch refuses a batch outside 1 … MaxBatch (what names the
// compiler in the error).
func CheckBatch(what string, batch int) error {
	if batch <= 0 || batch > MaxBatch {
		return fmt.Errorf("%s: batch %d must be between 1 and %d", what, batch, MaxBatch)
	}
	return nil
}

// newNet compiles a Net; an inference Net packs its convolutions' weights.
func newNet(p *Params, batch int, inference bool, mode planMode) (*Net, error) {
	return newNetPacked(p, batch, inference, mode, inference)
}

// newNetPacked is newNet with the packed weights of an inference Net on
// (pack) or off.
func newNetPacked(p *Params, batch int, inference bool, mode planMode, pack bool) (*Net, error) {
	if err := CheckBatch("capsnet", batch); err != nil {
		return nil, err
	}
	l := p.Layout
	budget, err := ModelMemoryBudget()
	if err != nil {
		return nil, err
	}
	if mode == planOnly {
		budget = MemoryBudget{Limit: math.MaxInt64, Source: "none (a plan only)"}
	}
	if err := l.CheckWorkSizes(batch, budget); err != nil {
		return nil, err
	}
	n := &Net{P: p, Batch: batch, Arena: graph.NewArena(), labels: make([]int, batch), pred: make([]int, batch), maskByLabel: !inference, Inference: inference,
		marginParams: l.Margin, reconWeight: l.ReconWeight}
	a := &netAlloc{Arena: n.Arena, inference: inference}
	gradOf := map[*Param]*graph.Buf{}
	for _, q := range p.List {
		g := a.Alloc("grad."+q.Name, graph.Grad, q.Buf.Shape...)
		if g != nil {
			n.Grads = append(n.Grads, g)
		}
		gradOf[q] = g
	}
	in := l.Convs[0].Shape
	n.x = a.Alloc("x", graph.Activation, batch, in.InC, in.InH, in.InW)
	if err := n.compileConvs(a, gradOf, pack && inference); err != nil {
		return nil, err
	}
	n.compileCaps(a, gradOf)
	n.compileDecoder(a, gradOf)
	n.schedule()
	// Pinned: the input (written by Forward outside the schedules) and
	// everything an accessor exposes after a pass.
	n.Arena.Pin(n.x, n.prim.v, n.norms, n.recon)
	for _, L := range n.caps {
		n.Arena.Pin(L.V, L.C)
	}
	if err := n.seal(mode, budget); err != nil {
		return nil, err
	}
	return n, nil
}

// compileConvs compiles the convolutions and the primary capsules, with a
// packed copy of each convolution's weights when pack (see packedLen).
func (n *Net) compileConvs(a *netAlloc, gradOf map[*Param]*graph.Buf, pack bool) error {
	l, p, B := n.P.Layout, n.P, n.Batch
	x, dx := n.x, (*graph.Buf)(nil)
	var work *graph.Buf // the convolutions' shared scratch when chunked
	if a.inference && convChunk > 0 && B >= 4*convChunk && len(l.Convs) > 1 {
		n.chunk = convChunk
		ws := 0
		for _, cv := range l.Convs {
			sh, err := cv.At(B)
			if err != nil {
				return fmt.Errorf("capsnet: %w", err)
			}
			ws = max(ws, sh.ArenaWorkSize())
		}
		work = a.Alloc("convs.work", graph.Scratch, ws)
	}
	for i, cv := range l.Convs {
		sh, err := cv.At(B)
		if err != nil {
			return fmt.Errorf("capsnet: %w", err)
		}
		L := &convLayer{ConvLayer: cv, sh: sh, w: p.Get(cv.Name + ".weight"), b: p.Get(cv.Name + ".bias"), x: x, dx: dx}
		// A training Net runs the convolutions that take it by Winograd
		// (kernels.ConvForwardTrain: Sabour's primary capsules), with its
		// save and work; an inference Net keeps the GEMM paths (the same
		// bits with and without packed weights).
		ws := sh.ArenaWorkSize()
		if !a.inference {
			ws = sh.WinogradWorkSize()
			if size := sh.WinogradSaveSize(); size > 0 {
				L.save = a.Alloc(cv.Name+".winograd", graph.Activation, size)
			}
		}
		if L.work = work; work == nil {
			L.work = a.Alloc(cv.Name+".work", graph.Scratch, ws)
		}
		L.bwork = a.AllocBackward(cv.Name+".bwork", graph.Scratch, ws)
		L.dw, L.db = gradOf[L.w], gradOf[L.b]
		if pack {
			if size := packedLen(sh); size > 0 {
				L.pw = a.Alloc(cv.Name+".packed", graph.Packed, size)
			}
		}
		yb := B // the images of the output buffer: a chunk's but for the last layer's
		if n.chunk > 0 && i < len(l.Convs)-1 {
			yb = n.chunk
		}
		L.y = a.Alloc(cv.Name+".y", graph.Activation, yb, sh.OutC, sh.OutH(), sh.OutW())
		L.dy = a.Alloc(cv.Name+".dy", graph.ActGrad, B, sh.OutC, sh.OutH(), sh.OutW())
		n.convs = append(n.convs, L)
		x, dx = L.y, L.dy
	}
	if !a.inference && convChunk > 0 && B >= 4*convChunk && len(n.convs) > 1 && !slices.ContainsFunc(n.convs, func(L *convLayer) bool { return L.save != nil }) {
		n.chunk = convChunk // whole buffers, the layers in chunks of images
	}
	P := l.Primary
	n.prim = primaryLayer{PrimaryLayer: P,
		s:  a.Alloc("primary.s", graph.Activation, B, P.D, P.N),
		v:  a.Alloc("primary.v", graph.Activation, B, P.D, P.N),
		dv: a.Alloc("primary.dv", graph.ActGrad, B, P.D, P.N),
		ds: a.Alloc("primary.ds", graph.ActGrad, B, P.D, P.N)}
	n.info = append(n.info, LayerInfo{Name: "primary", N: P.N, D: P.D})
	return nil
}

// compileCaps compiles the capsule layers.
func (n *Net) compileCaps(a *netAlloc, gradOf map[*Param]*graph.Buf) {
	p, B := n.P, n.Batch
	u, du := n.prim.v, n.prim.dv
	for _, cl := range p.Layout.Caps {
		L := &capsLayer{Name: cl.Name, W: p.Get(cl.Name + ".W"), Prior: p.Get(cl.Name + ".b"), U: u, DU: du,
			Votes: cl.Votes(B), Route: cl.Route(B)}
		L.DW = gradOf[L.W]
		if L.Prior.Trainable {
			L.DPrior = gradOf[L.Prior]
		}
		L.Uhat = a.Alloc(cl.Name+".uhat", graph.Activation, B, cl.Out, cl.Dim, cl.NIn)
		L.DUhat = a.Alloc(cl.Name+".duhat", graph.ActGrad, B, cl.Out, cl.Dim, cl.NIn)
		L.V = a.Alloc(cl.Name+".v", graph.Activation, B, cl.Dim, cl.Out)
		L.DV = a.Alloc(cl.Name+".dv", graph.ActGrad, B, cl.Dim, cl.Out)
		L.C = a.Alloc(cl.Name+".c", graph.Activation, B, cl.Out, cl.NIn)
		L.work = a.Alloc(cl.Name+".work", graph.Scratch, L.Route.WorkSize())
		n.caps = append(n.caps, L)
		n.info = append(n.info, LayerInfo{Name: cl.Name, N: cl.Out, D: cl.Dim})
		u, du = L.V, L.DV
	}
}

// compileDecoder compiles the head (norms, mask) and the decoder.
func (n *Net) compileDecoder(a *netAlloc, gradOf map[*Param]*graph.Buf) {
	p, B := n.P, n.Batch
	top := n.caps[len(n.caps)-1]
	classes, dOut := top.Route.NOut, top.Route.D
	n.norms = a.Alloc("norms", graph.Activation, B, classes)
	n.dNorms = a.Alloc("dnorms", graph.ActGrad, B, classes)
	n.dvDec = a.Alloc("dec.dv", graph.ActGrad, B, dOut, classes)
	n.decIn = a.Alloc("dec.in", graph.Activation, B, classes*dOut)
	n.dDecIn = a.Alloc("dec.din", graph.ActGrad, B, classes*dOut)
	x, dx := n.decIn, n.dDecIn
	for _, fc := range p.Layout.Decoder {
		L := &fcLayer{batch: B, in: fc.In, out: fc.Out, w: p.Get(fc.Name + ".weight"), b: p.Get(fc.Name + ".bias"), x: x, dx: dx, act: fc.Act}
		L.dw, L.db = gradOf[L.w], gradOf[L.b]
		L.work = a.Alloc(fc.Name+".work", graph.Scratch, kernels.SgemmWorkSize(B, fc.Out, fc.In))
		L.bwork = a.AllocBackward(fc.Name+".bwork", graph.Scratch, max(kernels.SgemmWorkSize(fc.Out, fc.In, B), kernels.SgemmWorkSize(B, fc.In, fc.Out)))
		L.y = a.Alloc(fc.Name+".y", graph.Activation, B, fc.Out)
		L.dy = a.Alloc(fc.Name+".dy", graph.ActGrad, B, fc.Out)
		n.dec = append(n.dec, L)
		x, dx = L.y, L.dy
	}
	n.recon = x
}

// seal plans (and, but for planOnly, allocates) the Net's arena as mode
// says, within the memory limit of one model: parameters plus this Net's
// plan, checked by the arena once the plan is made, before it is
// allocated.
func (n *Net) seal(mode planMode, budget MemoryBudget) error {
	isLimit := budget.Guard(n.Arena, n.P.Config.Name, n.Batch, "parameters", n.P.Arena.Bytes())
	if mode == planOnly {
		n.Arena.SetSizeCheck(stopAtPlan)
	}
	n.Arena.SetDebug(mode == planDebug)
	var err error
	switch {
	case mode == planUnshared:
		err = n.Arena.Seal()
	case n.Inference:
		err = n.Arena.SealShared(n.forward)
	default:
		err = n.Arena.SealShared(n.forward, n.margin, n.backw)
	}
	switch {
	case err == nil, err == errPlanned:
		return nil
	case isLimit(err):
		return err
	}
	return fmt.Errorf("capsnet: memory plan: %w", err)
}

// CheckWorkSizes refuses a batch whose kernel work spaces could not even be
// computed in an int (the kernels' size formulas do not check overflow):
// the routing's per-iteration store and the convolutions' im2col columns,
// bounded here with checked products. Such sizes are far beyond any memory
// limit; what passes is sized exactly by the arena's plan.
func (l *Layout) CheckWorkSizes(batch int, budget MemoryBudget) error {
	over := func(what string) error {
		return memoryError(l.Config.Name, fmt.Sprintf("batch %d needs more than %s (%s alone)", batch, fmtBytes(4*maxElems), what), 4*maxElems, budget.Limit, budget.Source)
	}
	for _, cl := range l.Caps {
		c, ok1 := mulSize(cl.Out, cl.NIn)
		v, ok2 := mulSize(2, cl.Dim, cl.Out)
		if _, ok3 := mulSize(batch, max(cl.Iters, 1), c+v); !ok1 || !ok2 || !ok3 {
			return over(fmt.Sprintf("the routing work space of %s", cl.Name))
		}
	}
	for _, cv := range l.Convs {
		sh := cv.Shape
		col, ok1 := mulSize(sh.InC/sh.Groups, sh.KH, sh.KW)
		_, ok2 := mulSize(batch, sh.OutH(), sh.OutW(), col+sh.OutC)
		_, ok3 := mulSize(batch, sh.InC, sh.InH, sh.InW)
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

// WinogradConvs names the convolutions that this Net runs by Winograd
// (kernels.ConvForwardTrain: a training Net, a shape that takes it, and an
// implementation with a direct kernel for it; Sabour's primary capsules on
// avx2 and avx512), in order; none in an inference Net.
func (n *Net) WinogradConvs() []string {
	var names []string
	for _, L := range n.convs {
		if L.save != nil && L.sh.WinogradRuns() {
			names = append(names, L.Name)
		}
	}
	return names
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
// losses and their total L_m + α·L_r (docs/semantics.md §4; α/pixels when the config's
// loss.recon is "mean"). recon is always the per-image sum L_r.
func (n *Net) Loss() (margin, recon, total float64) {
	return n.lossM, n.lossR, n.lossM + float64(n.reconWeight)*n.lossR
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
	if err := n.runForward(); err != nil {
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
	return n.runBackward()
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

// ForwardSteps names the forward schedule's steps, in order.
// The convolutions run in chunks of images (one step) are named one by
// one, as Profile gives them.
func (n *Net) ForwardSteps() []string {
	names := n.forward.Names()
	if n.chunk == 0 {
		return names
	}
	rows := make([]string, len(n.convs))
	for i, L := range n.convs {
		rows[i] = "conv " + L.Name
	}
	return append(rows, names[1:]...)
}

// BackwardSteps names the backward schedule's steps, in order.
func (n *Net) BackwardSteps() []string { return n.backw.Names() }

// bufs lists buffers for a step's Reads or Writes (nil entries are
// ignored by the planner).
func bufs(b ...*graph.Buf) []*graph.Buf { return b }

// schedule builds the forward schedule and, for a training Net, the
// backward and margin-only ones. Every step records its FLOPs (a
// multiply-add counts 2) where its work is a product: convolutions, votes
// and decoder layers; element-wise steps and the routing loops record 0.
func (n *Net) schedule() {
	n.scheduleForward()
	if !n.Inference {
		n.scheduleBackward()
	}
}

// stepAdder returns a function that appends a step to *s.
func stepAdder(s *graph.Schedule) func(name string, flops float64, run func() error, reads, writes []*graph.Buf) {
	return func(name string, flops float64, run func() error, reads, writes []*graph.Buf) {
		*s = append(*s, graph.Step{Name: name, Run: run, Reads: reads, Writes: writes, FLOPs: flops})
	}
}

// votesFLOPs is 2·B·NIn·NOut·DIn·DOut, the forward product of the votes
// (and each of the two backward products).
func votesFLOPs(v kernels.VotesShape) float64 {
	return 2 * float64(v.Batch) * float64(v.NIn) * float64(v.NOut) * float64(v.DIn) * float64(v.DOut)
}

// fcFLOPs is 2·B·in·out, one product of a decoder layer.
func (L *fcLayer) fcFLOPs() float64 { return 2 * float64(L.batch) * float64(L.in) * float64(L.out) }

func (n *Net) scheduleForward() {
	f := stepAdder(&n.forward)
	if n.chunk > 0 {
		var rd, wr []*graph.Buf
		fl := 0.0
		for _, L := range n.convs {
			rd = append(rd, bufs(L.x, L.w.Buf, L.b.Buf, L.pw)...)
			wr = append(wr, bufs(L.y, L.work, L.pw)...)
			fl += L.sh.FLOPs()
		}
		f(fmt.Sprintf("convs (%d images at a time)", n.chunk), fl, n.convChunks, rd, wr)
	} else {
		for _, L := range n.convs {
			f("conv "+L.Name, L.sh.FLOPs(), func() error { return n.convForward(L) }, bufs(L.x, L.w.Buf, L.b.Buf, L.pw), bufs(L.y, L.work, L.pw, L.save))
		}
	}
	lastY := n.convs[len(n.convs)-1].y
	f("primary capsules", 0, n.primaryForward, bufs(lastY), bufs(n.prim.s, n.prim.v))
	for _, L := range n.caps {
		f("votes "+L.Name, votesFLOPs(L.Votes), func() error { return kernels.VotesForward(L.Votes, L.Uhat.Data(), L.W.Buf.Data(), L.U.Data()) },
			bufs(L.W.Buf, L.U), bufs(L.Uhat))
		f("routing "+L.Name, 0, func() error {
			return kernels.RoutingForward(L.Route, L.V.Data(), L.C.Data(), L.Uhat.Data(), L.Prior.Buf.Data(), L.work.Data())
		}, bufs(L.Uhat, L.Prior.Buf), bufs(L.V, L.C, L.work))
	}
	top := n.caps[len(n.caps)-1]
	f("margin loss and mask", 0, n.headForward, bufs(top.V), bufs(n.norms, n.decIn))
	for _, L := range n.dec {
		f("fc "+L.w.Name, L.fcFLOPs(), L.forward, bufs(L.x, L.w.Buf, L.b.Buf), bufs(L.y, L.work))
	}
	f("reconstruction loss", 0, n.reconForward, bufs(n.recon, n.x), nil)
}

func (n *Net) scheduleBackward() {
	b, m := stepAdder(&n.backw), stepAdder(&n.margin)
	top := n.caps[len(n.caps)-1]
	last := n.dec[len(n.dec)-1]
	b("reconstruction loss", 0, n.reconBackward, bufs(n.recon, n.x), bufs(last.dy))
	for i := len(n.dec) - 1; i >= 0; i-- {
		L := n.dec[i]
		b("fc "+L.w.Name, 2*L.fcFLOPs(), L.backward, bufs(L.y, L.dy, L.x, L.w.Buf), bufs(L.dy, L.dw, L.db, L.dx, L.bwork))
	}
	b("margin loss and mask", 0, n.headBackward, bufs(top.V, n.dDecIn), bufs(n.dvDec, top.DV))
	m("margin loss", 0, n.marginBackward, bufs(top.V), bufs(top.DV))
	for i := len(n.caps) - 1; i >= 0; i-- {
		L := n.caps[i]
		routing := func() error {
			var dpr []float32
			if L.DPrior != nil {
				dpr = L.DPrior.Data()
			}
			return kernels.RoutingBackward(L.Route, L.DUhat.Data(), dpr, L.DV.Data(), L.Uhat.Data(), L.Prior.Buf.Data(), L.work.Data())
		}
		b("routing "+L.Name, 0, routing, bufs(L.DV, L.Uhat, L.Prior.Buf, L.work), bufs(L.DUhat, L.DPrior, L.work))
		m("routing "+L.Name, 0, routing, bufs(L.DV, L.Uhat, L.Prior.Buf, L.work), bufs(L.DUhat, L.DPrior, L.work))
		b("votes "+L.Name, 2*votesFLOPs(L.Votes), func() error {
			return kernels.VotesBackward(L.Votes, L.DW.Data(), L.DU.Data(), L.W.Buf.Data(), L.U.Data(), L.DUhat.Data())
		}, bufs(L.W.Buf, L.U, L.DUhat), bufs(L.DW, L.DU))
		// The margin-only pass stops at the first capsule layer's votes: it
		// wants ∂L_m/∂W, not the primary capsules' gradient.
		du, mf := L.DU, 2*votesFLOPs(L.Votes)
		if i == 0 {
			du, mf = nil, votesFLOPs(L.Votes)
		}
		m("votes "+L.Name, mf, func() error {
			return kernels.VotesBackward(L.Votes, L.DW.Data(), du.Data(), L.W.Buf.Data(), L.U.Data(), L.DUhat.Data())
		}, bufs(L.W.Buf, L.U, L.DUhat), bufs(L.DW, du))
	}
	b("primary capsules", 0, n.primaryBackward, bufs(n.prim.s, n.prim.dv), bufs(n.prim.ds, n.convs[len(n.convs)-1].dy))
	for i := len(n.convs) - 1; i >= 0; i-- {
		L := n.convs[i]
		fl := L.sh.FLOPs() // the filter gradient
		if L.dx != nil {
			fl *= 2 // and the data gradient
		}
		b("conv "+L.Name, fl, func() error {
			var y []float32 // the ReLU's output, whose mask ConvBackward applies to dy
			if L.ReLU {
				y = L.y.Data()
			}
			if L.save != nil {
				return kernels.ConvBackwardTrain(L.sh, L.dw.Data(), L.db.Data(), L.dx.Data(), L.x.Data(), L.dy.Data(), L.w.Buf.Data(), y, L.save.Data(), L.bwork.Data())
			}
			return kernels.ConvBackward(L.sh, L.dw.Data(), L.db.Data(), L.dx.Data(), L.x.Data(), L.dy.Data(), L.w.Buf.Data(), y, L.bwork.Data())
		}, bufs(L.y, L.dy, L.x, L.w.Buf, L.save), bufs(L.dy, L.dw, L.db, L.dx, L.bwork, L.save))
	}
}

// primaryForward views the last conv's channels as (maps, d) and gathers
// them component-major: s[b, l, m·HW + pos] = y[b, m·d + l, pos], then
// squashes every capsule.
func (n *Net) primaryForward() error {
	return n.prim.Forward(n.Batch, n.convs[len(n.convs)-1].y.Data(), n.prim.s.Data(), n.prim.v.Data())
}

func (n *Net) primaryBackward() error {
	P := &n.prim
	N := P.N
	if err := kernels.SquashBackward(P.Squash, n.Batch, P.D, N, P.s.Data(), P.dv.Data(), P.ds.Data()); err != nil {
		return err
	}
	dy := n.convs[len(n.convs)-1].dy.Data()
	ds := P.ds.Data()
	for bi := 0; bi < n.Batch; bi++ {
		for m := 0; m < P.Maps; m++ {
			for l := 0; l < P.D; l++ {
				copy(dy[((bi*P.Maps+m)*P.D+l)*P.HW:][:P.HW], ds[(bi*P.D+l)*N+m*P.HW:][:P.HW])
			}
		}
	}
	return nil
}

// headForward computes the output norms, predictions, the margin loss and
// the decoder input masked by the label (or the prediction).
func (n *Net) headForward() error {
	top := n.caps[len(n.caps)-1]
	classes, d := top.Route.NOut, top.Route.D
	lm, err := kernels.MarginLoss(n.marginParams, n.Batch, d, classes, top.V.Data(), n.labels, n.norms.Data(), nil)
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
	top := n.caps[len(n.caps)-1]
	_, err := kernels.MarginLoss(n.marginParams, n.Batch, top.Route.D, top.Route.NOut, top.V.Data(), n.labels, nil, top.DV.Data())
	return err
}

// headBackward writes the margin loss gradient to the top layer's DV and
// adds the decoder's gradient, through the mask.
func (n *Net) headBackward() error {
	if err := n.marginBackward(); err != nil {
		return err
	}
	top := n.caps[len(n.caps)-1]
	classes, d := top.Route.NOut, top.Route.D
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
	B := L.batch
	y := L.y.Data()
	if err := kernels.SgemmWork(false, true, B, L.out, L.in, 1, L.x.Data(), L.in, L.w.Buf.Data(), L.in, 0, y, L.out, L.work.Data()); err != nil {
		return err
	}
	if err := kernels.BiasAddCols(B, L.out, y, L.b.Buf.Data()); err != nil {
		return err
	}
	if L.act == ActSigmoid {
		return kernels.Sigmoid(y, y)
	}
	return kernels.ReLU(y, y)
}

func (L *fcLayer) backward() error {
	B := L.batch
	dy, y := L.dy.Data(), L.y.Data()
	var err error
	if L.act == ActSigmoid {
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
	_, err := kernels.ReconLoss(n.reconWeight, n.Batch, n.P.Geo.Pixels, n.recon.Data(), n.x.Data(), n.dec[len(n.dec)-1].dy.Data())
	return err
}
