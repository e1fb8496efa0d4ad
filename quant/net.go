package quant

import (
	"errors"
	"fmt"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/graph"
	"github.com/capstan-ml/capstan/kernels"
)

// Net is an int8 model compiled for inference at a fixed batch size: the
// int8 counterpart of capsnet.NewInferenceNet. Convolutions, votes and the
// decoder's FC layers run as int8 GEMMs (kernels.GemmI8Packed) on weights
// packed once by NewNet; primary capsules, routing, squash and the class
// norms run in float32 on the dequantized votes, as in the float model.
//
// Data flow: the input is quantized with the first convolution's
// activation scale into NHWC int8; each convolution's int32 sums go
// straight to the next convolution's int8 input (Requant: bias, ReLU and
// the next scale folded into one multiply-add per channel), the last one's
// to float32 NCHW (Dequant); the capsules are quantized per layer
// (QuantizeCaps) and every input capsule's votes are one GEMM; the decoder
// is masked by the predicted class, its hidden layers requantized directly
// and the last one dequantized and passed through the sigmoid.
//
// Every activation and scratch buffer lives in one arena planned over the
// buffers' lifetimes (graph.Arena.SealShared), sized before the first
// image; Forward never allocates. A Net is not safe for concurrent use;
// its packed weights are read-only.
type Net struct {
	// Config is the model's config; Batch the images per Forward.
	Config capsnet.Config
	Batch  int
	// Arena holds the activations and scratch.
	Arena *graph.Arena

	inLen      int
	x          []float32 // the input of the running Forward
	convs      []*i8Conv
	prim       i8Primary
	caps       []*i8Caps
	dec        []*i8FC
	norms      *graph.Buf // (B, classes)
	decIn      *graph.Buf // (B, classes·d)
	recon      *graph.Buf // (B, pixels)
	pred       []int
	zeroLabels []int
	forward    graph.Schedule
	weights    int64
	// margin is the layout's margin constants (the norms' epsilon).
	margin kernels.MarginParams
}

type i8Conv struct {
	name      string
	sh        kernels.ConvShape // one image (Batch 1)
	depthwise bool
	w         *kernels.PackedI8 // GEMM convolution: (OutC, KH·KW·InC)
	wdw       []int8            // depthwise: (KH, KW, C)
	in        *graph.Buf        // int8 NHWC (B, H, W, C)
	cols, acc *graph.Buf        // one image's im2col (int8) and sums (int32)
	// next is the following convolution's int8 input, or nil for the last
	// convolution, whose float32 NCHW output is y.
	next *graph.Buf
	y    *graph.Buf
	relu bool
	// inScale is the input's activation scale.
	inScale float32
	// mul, add per output channel: the sums' scale and the bias, divided by
	// the next input's scale when next is set.
	mul, add []float32
}

type i8Primary struct {
	capsnet.PrimaryLayer
	s, v *graph.Buf
}

type i8Caps struct {
	name  string
	votes kernels.VotesShape
	route kernels.RoutingShape
	w     []*kernels.PackedI8 // per input capsule i: (n_out·d_out, d_in)
	scale float32             // the input capsules' activation scale
	mul   []float32           // (n_in, n_out): input scale × weight scale
	prior []float32           // internal (n_out, n_in)
	u     *graph.Buf          // float input capsules (B, d_in, n_in)
	uq    *graph.Buf          // int8 (n_in, B, d_in)
	acc   *graph.Buf          // int32 (votesBlock, B, n_out·d_out)
	uhat  *graph.Buf
	v, c  *graph.Buf
	work  *graph.Buf
}

type i8FC struct {
	name     string
	in, out  int
	w        *kernels.PackedI8
	inv      float32    // 1/input scale (first layer: quantizes x)
	x        *graph.Buf // float input (first layer only)
	xq       *graph.Buf // int8 input (B, in)
	acc      *graph.Buf // int32 (B, out)
	next     *graph.Buf // the next layer's int8 input, or nil (last: y)
	y        *graph.Buf
	mul, add []float32
}

// Footprint is the static memory of a compiled Net: what it holds from
// NewNet on, whatever it runs.
type Footprint struct {
	// Arena is the activation and scratch arena (the memory plan), in bytes.
	Arena int64
	// Weights is the packed int8 weights, their scales and the float32
	// biases and priors, in bytes.
	Weights int64
}

// Total is Arena + Weights.
func (f Footprint) Total() int64 { return f.Arena + f.Weights }

// String formats the footprint as "3.2 MiB (arena 0.4 MiB + weights 2.8 MiB)".
func (f Footprint) String() string {
	return fmt.Sprintf("%s (arena %s + weights %s)", graph.MiB(f.Total()), graph.MiB(f.Arena), graph.MiB(f.Weights))
}

// NewNet compiles m for inference at batch images per Forward. m must be
// calibrated (its activation scales are the int8 inputs' scales); its
// tensors are checked against its config, the weights packed (m is not
// retained: it may be dropped after NewNet) and the arena planned and
// allocated, within the memory limit of one model
// (capsnet.ModelMemoryLimit).
func NewNet(m *Model, batch int) (*Net, error) {
	budget, err := capsnet.ModelMemoryBudget()
	if err != nil {
		return nil, err
	}
	return compile(m, batch, &budget)
}

// errPlanned stops an arena's Seal once its plan is made (PlanNet).
var errPlanned = errors.New("quant: planned, not allocated")

// PlanNet returns the footprint NewNet(m, batch) would have, its arena's
// memory plan and its packed weights, without allocating the arena and
// without the memory limit: the weights are packed once to be measured.
func PlanNet(m *Model, batch int) (Footprint, error) {
	n, err := compile(m, batch, nil)
	if err != nil {
		return Footprint{}, err
	}
	return Footprint{Arena: n.Arena.Plan().Total, Weights: n.weights}, nil
}

// ProcessMemory returns the memory of a process running threads int8
// replicas of m (NewNet) splitting batch as eval.NewInt8 splits it: each
// distinct replica batch planned once (PlanNet), nothing allocated but
// one replica's packed weights; Eval is the replicas' sum, Data one batch
// of input images. Check it (capsnet.ProcessMemory.Check) before
// compiling the replicas.
func ProcessMemory(m *Model, batch, threads int) (capsnet.ProcessMemory, error) {
	pm := capsnet.ProcessMemory{Model: m.Config.Name, Batch: batch, Threads: threads}
	if err := capsnet.CheckBatch("quant", batch); err != nil {
		return pm, err
	}
	if err := capsnet.CheckThreads(threads, batch); err != nil {
		return pm, fmt.Errorf("quant: %w", err)
	}
	n := min(threads, batch)
	sizes := map[int]int{batch / n: n - batch%n}
	if batch%n > 0 {
		sizes[batch/n+1] = batch % n
	}
	for b, count := range sizes {
		n, err := compile(m, b, nil)
		if err != nil {
			return pm, err
		}
		pm.Eval += int64(count) * (n.Arena.Plan().Total + n.weights)
		pm.Data = int64(batch) * 4 * int64(n.inLen)
	}
	return pm, nil
}

// compile compiles m at batch images: allocated within budget, or, with
// budget nil, planned only (the arena's Seal stops at its plan).
func compile(m *Model, batch int, budget *capsnet.MemoryBudget) (*Net, error) {
	if err := capsnet.CheckBatch("quant", batch); err != nil {
		return nil, err
	}
	cfg := m.Config
	if m.Calibration == nil {
		return nil, fmt.Errorf("quant: model %s has no activation scales: calibrate it (quant.Calibrate, or tools/quantize) before running it in int8", cfg.Name)
	}
	l, err := cfg.Resolve()
	if err != nil {
		return nil, fmt.Errorf("quant: model %s: %w", cfg.Name, err)
	}
	c, err := newCompiler(m, l)
	if err != nil {
		return nil, fmt.Errorf("quant: model %s: %w", cfg.Name, err)
	}
	n := &Net{Config: cfg, Batch: batch, Arena: graph.NewArena(), pred: make([]int, batch), zeroLabels: make([]int, batch),
		margin: l.Margin}
	in := l.Convs[0].Shape
	n.inLen = in.InC * in.InH * in.InW
	if err := c.convs(n); err != nil {
		return nil, err
	}
	P := l.Primary
	n.prim = i8Primary{PrimaryLayer: P,
		s: n.Arena.Alloc("primary.s", graph.Activation, batch, P.D, P.N),
		v: n.Arena.Alloc("primary.v", graph.Activation, batch, P.D, P.N)}
	if err := c.caps(n); err != nil {
		return nil, err
	}
	if err := c.decoder(n); err != nil {
		return nil, err
	}
	n.schedule()
	n.Arena.Pin(n.norms, n.recon)
	for _, L := range n.caps { // small; kept for inspection after Forward
		n.Arena.Pin(L.v)
	}
	if budget == nil {
		n.Arena.SetSizeCheck(func(int64) error { return errPlanned })
		if err := n.Arena.SealShared(n.forward); err != errPlanned {
			return nil, fmt.Errorf("quant: memory plan: %v", err)
		}
		return n, nil
	}
	isLimit := budget.Guard(n.Arena, cfg.Name, batch, "weights", n.weights)
	if err := n.Arena.SealShared(n.forward); err != nil {
		if isLimit(err) {
			return nil, fmt.Errorf("quant: %w", err)
		}
		return nil, fmt.Errorf("quant: memory plan: %w", err)
	}
	return n, nil
}

// compiler is the state of one NewNet: the model's layout, its tensors by
// name (checked against the layout's parameters) and its activation
// scales by weight name.
type compiler struct {
	m      *Model
	l      *capsnet.Layout
	byName map[string]*Tensor
	act    map[string]float32
}

// newCompiler checks m's tensors and activation scales against the layout.
func newCompiler(m *Model, l *capsnet.Layout) (*compiler, error) {
	specs := l.Params
	if len(m.Tensors) != len(specs) {
		return nil, fmt.Errorf("%d tensors, its config %d", len(m.Tensors), len(specs))
	}
	c := &compiler{m: m, l: l, byName: map[string]*Tensor{}, act: map[string]float32{}}
	for k, sp := range specs {
		t := &m.Tensors[k]
		if err := t.check(sp.Name, sp.TorchShape); err != nil {
			return nil, err
		}
		if (t.Q != nil) != (channelDims(sp.Role, m.Granularity) > 0) {
			return nil, fmt.Errorf("tensor %q is quantized where it should not be, or the reverse", sp.Name)
		}
		c.byName[sp.Name] = t
	}
	if err := m.checkScales(); err != nil {
		return nil, err
	}
	for _, s := range m.Calibration.Scales {
		c.act[s.Name] = s.Scale
	}
	for _, sp := range specs {
		if channelDims(sp.Role, m.Granularity) > 0 && c.act[sp.Name] == 0 {
			return nil, fmt.Errorf("no activation scale for %q", sp.Name)
		}
	}
	return c, nil
}

// convs compiles the convolutions.
func (c *compiler) convs(n *Net) error {
	a, B := n.Arena, n.Batch
	var prevNext *graph.Buf
	for k, cv := range c.l.Convs {
		sh, err := cv.At(1)
		if err != nil {
			return fmt.Errorf("quant: %w", err)
		}
		wt, bt := c.byName[cv.Name+".weight"], c.byName[cv.Name+".bias"]
		L := &i8Conv{name: cv.Name, sh: sh, depthwise: cv.Depthwise, relu: cv.ReLU, in: prevNext}
		if L.in == nil {
			L.in = a.AllocI8(cv.Name+".xq", graph.Activation, B, sh.InH, sh.InW, sh.InC)
		}
		if err := n.packConv(L, wt); err != nil {
			return fmt.Errorf("quant: conv %s: %w", cv.Name, err)
		}
		L.acc = a.AllocI32(cv.Name+".acc", graph.Scratch, sh.I8AccLen())
		sa := c.act[cv.Name+".weight"]
		L.inScale = sa
		var sn float32 = 1
		if k+1 < len(c.l.Convs) {
			next := c.l.Convs[k+1].Name
			sn = c.act[next+".weight"]
			L.next = a.AllocI8(next+".xq", graph.Activation, B, sh.OutH(), sh.OutW(), sh.OutC)
		} else {
			L.y = a.Alloc(cv.Name+".y", graph.Activation, B, sh.OutC, sh.OutH(), sh.OutW())
		}
		if L.mul, L.add, err = requantConsts(sa, sn, wt.Scales, bt.Float); err != nil {
			return fmt.Errorf("quant: conv %s: %w", cv.Name, err)
		}
		n.weights += 8 * int64(sh.OutC)
		n.convs = append(n.convs, L)
		prevNext = L.next
	}
	return nil
}

// packConv packs a convolution's weights: (KH·KW, C) for a depthwise one,
// a packed GEMM matrix with its im2col scratch otherwise.
func (n *Net) packConv(L *i8Conv, wt *Tensor) error {
	sh := L.sh
	groups := sh.Groups
	K := sh.KH * sh.KW * (sh.InC / groups)
	if L.depthwise {
		// (C, KH·KW) → (KH·KW, C).
		L.wdw = make([]int8, len(wt.Q))
		for c := range sh.InC {
			for p := range sh.KH * sh.KW {
				L.wdw[p*sh.InC+c] = wt.Q[c*sh.KH*sh.KW+p]
			}
		}
		n.weights += int64(len(L.wdw))
		return nil
	}
	r := reorderHWC(wt.Q, sh.OutC, sh.InC/groups, sh.KH*sh.KW)
	var err error
	if L.w, err = kernels.PackI8(sh.OutC, K, r, K); err != nil {
		return err
	}
	n.weights += int64(L.w.Bytes())
	L.cols = n.Arena.AllocI8(L.name+".cols", graph.Scratch, sh.I8ColsLen())
	return nil
}

// requantConsts returns the per-channel multiply-add of a layer's int32
// sums: the input scale sa times the weight scales, and the biases, both
// divided by the next input's scale sn (1 for a dequantized output); an
// error when a sum of the int32 range would dequantize to ±Inf
// (checkRequant).
func requantConsts(sa, sn float32, scales, bias []float32) (mul, add []float32, err error) {
	mul, add = make([]float32, len(bias)), make([]float32, len(bias))
	for c := range bias {
		mul[c] = sa * scales[c] / sn
		add[c] = bias[c] / sn
	}
	return mul, add, checkRequant(mul, add)
}

// caps compiles the capsule layers.
func (c *compiler) caps(n *Net) error {
	a, B := n.Arena, n.Batch
	u := n.prim.v
	for _, cl := range c.l.Caps {
		L := &i8Caps{name: cl.Name, u: u, votes: cl.Votes(B), route: cl.Route(B)}
		if err := c.packVotes(n, L, cl); err != nil {
			return fmt.Errorf("quant: %s: %w", cl.Name, err)
		}
		cols := cl.Out * cl.Dim
		L.uq = a.AllocI8(cl.Name+".uq", graph.Activation, cl.NIn, B, cl.DIn)
		L.acc = a.AllocI32(cl.Name+".acc", graph.Scratch, min(votesBlock, cl.NIn), B, cols)
		L.uhat = a.Alloc(cl.Name+".uhat", graph.Activation, B, cl.Out, cl.Dim, cl.NIn)
		L.v = a.Alloc(cl.Name+".v", graph.Activation, B, cl.Dim, cl.Out)
		L.c = a.Alloc(cl.Name+".c", graph.Activation, B, cl.Out, cl.NIn)
		L.work = a.Alloc(cl.Name+".work", graph.Scratch, L.route.WorkSize())
		n.caps = append(n.caps, L)
		u = L.v
	}
	return nil
}

// packVotes packs a capsule layer's votes matrices, one per input capsule
// i: (n_out·d_out, d_in), with their scales, and its prior.
func (c *compiler) packVotes(n *Net, L *i8Caps, cl capsnet.CapsLayer) error {
	wt, pt := c.byName[cl.Name+".W"], c.byName[cl.Name+".b"]
	nIn, dIn := cl.NIn, cl.DIn
	cols := cl.Out * cl.Dim
	rows := make([]int8, cols*dIn)
	L.w = make([]*kernels.PackedI8, nIn)
	L.mul = make([]float32, nIn*cl.Out)
	sa := c.act[cl.Name+".W"]
	L.scale = sa
	for i := range nIn {
		// W (n_out, n_in, d_out, d_in): the rows (j, k) of capsule i.
		for j := range cl.Out {
			for k := range cl.Dim {
				copy(rows[(j*cl.Dim+k)*dIn:][:dIn], wt.Q[((j*nIn+i)*cl.Dim+k)*dIn:][:dIn])
			}
			s := wt.Scales[j]
			if c.m.Granularity == PerBlock {
				s = wt.Scales[j*nIn+i]
			}
			L.mul[i*cl.Out+j] = sa * s
		}
		var err error
		if L.w[i], err = kernels.PackI8(cols, dIn, rows, dIn); err != nil {
			return err
		}
		n.weights += int64(L.w[i].Bytes())
	}
	if err := checkRequant(L.mul, nil); err != nil {
		return err
	}
	L.prior = make([]float32, nIn*cl.Out)
	for i := range nIn {
		for j := range cl.Out {
			L.prior[j*nIn+i] = pt.Float[i*cl.Out+j]
		}
	}
	n.weights += 4 * int64(len(L.mul)+len(L.prior))
	return nil
}

// decoder compiles the head (norms, mask) and the decoder.
func (c *compiler) decoder(n *Net) error {
	a, B := n.Arena, n.Batch
	top := n.caps[len(n.caps)-1]
	classes, dOut := top.route.NOut, top.route.D
	n.norms = a.Alloc("norms", graph.Activation, B, classes)
	n.decIn = a.Alloc("dec.in", graph.Activation, B, classes*dOut)
	var xq *graph.Buf
	dec := c.l.Decoder
	for i, fc := range dec {
		wt, bt := c.byName[fc.Name+".weight"], c.byName[fc.Name+".bias"]
		L := &i8FC{name: fc.Name, in: fc.In, out: fc.Out, xq: xq}
		if L.xq == nil {
			L.x = n.decIn
			L.inv = 1 / c.act[fc.Name+".weight"]
			L.xq = a.AllocI8(fc.Name+".xq", graph.Activation, B, fc.In)
		}
		var err error
		if L.w, err = kernels.PackI8(fc.Out, fc.In, wt.Q, fc.In); err != nil {
			return fmt.Errorf("quant: %s: %w", fc.Name, err)
		}
		n.weights += int64(L.w.Bytes()) + 8*int64(fc.Out)
		L.acc = a.AllocI32(fc.Name+".acc", graph.Scratch, B, fc.Out)
		var sn float32 = 1
		if i+1 < len(dec) {
			sn = c.act[dec[i+1].Name+".weight"]
			L.next = a.AllocI8(dec[i+1].Name+".xq", graph.Activation, B, fc.Out)
		} else {
			L.y = a.Alloc(fc.Name+".y", graph.Activation, B, fc.Out)
		}
		if L.mul, L.add, err = requantConsts(c.act[fc.Name+".weight"], sn, wt.Scales, bt.Float); err != nil {
			return fmt.Errorf("quant: %s: %w", fc.Name, err)
		}
		n.dec = append(n.dec, L)
		xq = L.next
	}
	n.recon = n.dec[len(n.dec)-1].y
	return nil
}

// reorderHWC reorders OIHW weights (out rows of cin·khw, c-major) into
// rows of (kh, kw, c), the column order of kernels.Im2colI8.
func reorderHWC(q []int8, out, cin, khw int) []int8 {
	r := make([]int8, len(q))
	for o := range out {
		src, dst := q[o*cin*khw:][:cin*khw], r[o*cin*khw:][:cin*khw]
		for c := range cin {
			for p := range khw {
				dst[p*cin+c] = src[c*khw+p]
			}
		}
	}
	return r
}

func bufs(b ...*graph.Buf) []*graph.Buf { return b }

func (n *Net) schedule() {
	f := func(name string, run func() error, reads, writes []*graph.Buf) {
		n.forward = append(n.forward, graph.Step{Name: name, Run: run, Reads: reads, Writes: writes})
	}
	first := n.convs[0]
	inv := 1 / first.inScale // the input's quantization, fixed at compile time
	f("quantize input", func() error {
		return kernels.QuantizeNHWC(n.Batch, first.sh.InC, first.sh.InH*first.sh.InW, first.in.I8(), n.x, inv)
	}, nil, bufs(first.in))
	for _, L := range n.convs {
		f("conv "+L.name, func() error { return L.forward(n.Batch) }, bufs(L.in), bufs(L.cols, L.acc, L.next, L.y))
	}
	lastY := n.convs[len(n.convs)-1].y
	f("primary capsules", func() error {
		return n.prim.Forward(n.Batch, lastY.Data(), n.prim.s.Data(), n.prim.v.Data())
	}, bufs(lastY), bufs(n.prim.s, n.prim.v))
	for _, L := range n.caps {
		name := L.name
		f("votes "+name, L.votesForward, bufs(L.u), bufs(L.uq, L.acc, L.uhat))
		f("routing "+name, func() error {
			return kernels.RoutingForward(L.route, L.v.Data(), L.c.Data(), L.uhat.Data(), L.prior, L.work.Data())
		}, bufs(L.uhat), bufs(L.v, L.c, L.work))
	}
	top := n.caps[len(n.caps)-1]
	f("norms and mask", n.headForward, bufs(top.v), bufs(n.norms, n.decIn))
	for _, L := range n.dec {
		f("fc "+L.name, func() error { return L.forward(n.Batch) }, bufs(L.x, L.xq), bufs(L.xq, L.acc, L.next, L.y))
	}
}

// forward runs the convolution on every image of the batch.
func (L *i8Conv) forward(batch int) error {
	sh := L.sh
	inLen := sh.InH * sh.InW * sh.InC
	outHW := sh.OutH() * sh.OutW()
	outLen := outHW * sh.OutC
	in, acc := L.in.I8(), L.acc.I32()
	for b := range batch {
		x := in[b*inLen:][:inLen]
		if L.depthwise {
			if err := kernels.DepthwiseI8(sh, acc, x, L.wdw); err != nil {
				return err
			}
		} else {
			cols := L.cols.I8()
			if err := kernels.Im2colI8(sh, cols, x); err != nil {
				return err
			}
			clear(acc)
			if err := kernels.GemmI8Packed(outHW, cols, L.w.K(), L.w, acc, sh.OutC); err != nil {
				return err
			}
		}
		if L.next != nil {
			if err := kernels.Requant(outHW, sh.OutC, L.next.I8()[b*outLen:], acc, L.mul, L.add, L.relu); err != nil {
				return err
			}
			continue
		}
		y := L.y.Data()[b*outLen:][:outLen]
		if err := kernels.Dequant(outHW, sh.OutC, y, acc, L.mul, L.add, true); err != nil {
			return err
		}
		if L.relu {
			if err := kernels.ReLU(y, y); err != nil {
				return err
			}
		}
	}
	return nil
}

// votesBlock is the number of input capsules whose votes are computed
// before they are dequantized together (kernels.DequantVotes).
const votesBlock = 16

// votesForward quantizes the input capsules and computes every input
// capsule's votes as one int8 GEMM, dequantized into uhat in blocks of
// votesBlock capsules.
func (L *i8Caps) votesForward() error {
	sh := L.votes
	B, dIn, row := sh.Batch, sh.DIn, sh.NOut*sh.DOut
	uq, acc := L.uq.I8(), L.acc.I32()
	if err := kernels.QuantizeCaps(B, dIn, sh.NIn, uq, L.u.Data(), 1/L.scale); err != nil {
		return err
	}
	for i0 := 0; i0 < sh.NIn; i0 += votesBlock {
		ni := min(votesBlock, sh.NIn-i0)
		clear(acc[:ni*B*row])
		for ii := range ni {
			i := i0 + ii
			if err := kernels.GemmI8Packed(B, uq[i*B*dIn:], dIn, L.w[i], acc[ii*B*row:], row); err != nil {
				return err
			}
		}
		if err := kernels.DequantVotes(B, sh.NOut, sh.DOut, sh.NIn, i0, ni, L.uhat.Data(), acc, L.mul); err != nil {
			return err
		}
	}
	return nil
}

// headForward computes the class norms, the predictions and the decoder
// input masked by the prediction.
func (n *Net) headForward() error {
	top := n.caps[len(n.caps)-1]
	d, classes := top.route.D, top.route.NOut
	if _, err := kernels.MarginLoss(n.margin, n.Batch, d, classes, top.v.Data(), n.zeroLabels, n.norms.Data(), nil); err != nil {
		return err
	}
	// As the float Net refuses a NaN or infinite loss, refuse capsule
	// lengths that are not finite: predictions from them are noise.
	if err := finiteNorms(n.norms.Data(), classes); err != nil {
		return err
	}
	if err := kernels.PredictLabels(n.Batch, classes, n.norms.Data(), n.pred); err != nil {
		return err
	}
	return kernels.MaskCapsules(n.Batch, d, classes, top.v.Data(), n.pred, n.decIn.Data())
}

// finiteNorms returns an error naming the first capsule length of norms
// (images × classes) that is NaN or infinite, nil when there is none.
func finiteNorms(norms []float32, classes int) error {
	for i, v := range norms {
		if !isFinite32(v) {
			return fmt.Errorf("quant: capsule length %v (image %d, class %d) is not finite: the model's scales overflow float32 in the routing", v, i/classes, i%classes)
		}
	}
	return nil
}

// forward runs one decoder layer on B images.
func (L *i8FC) forward(B int) error {
	xq, acc := L.xq.I8(), L.acc.I32()
	if L.x != nil {
		if err := kernels.QuantizeI8(xq, L.x.Data(), L.inv); err != nil {
			return err
		}
	}
	clear(acc)
	if err := kernels.GemmI8Packed(B, xq, L.in, L.w, acc, L.out); err != nil {
		return err
	}
	if L.next != nil {
		return kernels.Requant(B, L.out, L.next.I8(), acc, L.mul, L.add, true)
	}
	y := L.y.Data()
	if err := kernels.Dequant(B, L.out, y, acc, L.mul, L.add, false); err != nil {
		return err
	}
	return kernels.Sigmoid(y, y)
}

// Forward runs the model on x, Batch images (NCHW, Batch·InputLen values).
// It does not allocate.
func (n *Net) Forward(x []float32) error {
	if len(x) != n.Batch*n.inLen {
		return fmt.Errorf("quant: Forward: %d input values, want %d (batch %d of %d)", len(x), n.Batch*n.inLen, n.Batch, n.inLen)
	}
	n.x = x
	err := n.forward.Run()
	n.x = nil
	return err
}

// InputLen is the number of values of one input image (C·H·W).
func (n *Net) InputLen() int { return n.inLen }

// Norms returns the class norms of the last Forward (Batch·classes: the
// output capsules' lengths, the class scores).
func (n *Net) Norms() []float32 { return n.norms.Data() }

// Pred returns the predicted classes of the last Forward.
func (n *Net) Pred() []int { return n.pred }

// Recon returns the reconstructions of the last Forward (Batch·pixels),
// decoded from the predicted class's capsule.
func (n *Net) Recon() []float32 { return n.recon.Data() }

// Footprint returns the Net's static memory.
func (n *Net) Footprint() Footprint { return Footprint{Arena: n.Arena.Bytes(), Weights: n.weights} }

// Steps lists the forward schedule's step names.
func (n *Net) Steps() []string { return n.forward.Names() }
