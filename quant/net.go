package quant

import (
	"fmt"
	"math"

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
}

type i8Conv struct {
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
	maps, d, hw int
	kind        kernels.Squash
	s, v        *graph.Buf
}

type i8Caps struct {
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
	if batch <= 0 || batch > capsnet.MaxBatch {
		return nil, fmt.Errorf("quant: batch %d must be between 1 and %d", batch, capsnet.MaxBatch)
	}
	cfg := m.Config
	if m.Calibration == nil {
		return nil, fmt.Errorf("quant: model %s has no activation scales: calibrate it (quant.Calibrate, or tools/quantize) before running it in int8", cfg.Name)
	}
	geo, err := cfg.Geometry()
	if err != nil {
		return nil, fmt.Errorf("quant: model %s: %w", cfg.Name, err)
	}
	specs, err := cfg.ParamSpecs()
	if err != nil {
		return nil, fmt.Errorf("quant: model %s: %w", cfg.Name, err)
	}
	if len(m.Tensors) != len(specs) {
		return nil, fmt.Errorf("quant: model %s has %d tensors, its config %d", cfg.Name, len(m.Tensors), len(specs))
	}
	byName := map[string]*Tensor{}
	for k, sp := range specs {
		t := &m.Tensors[k]
		if err := t.check(sp.Name, sp.TorchShape); err != nil {
			return nil, fmt.Errorf("quant: model %s: %w", cfg.Name, err)
		}
		if (t.Q != nil) != (channelDims(sp.Role, m.Granularity) > 0) {
			return nil, fmt.Errorf("quant: model %s: tensor %q is quantized where it should not be, or the reverse", cfg.Name, sp.Name)
		}
		byName[sp.Name] = t
	}
	act := map[string]float32{}
	for _, s := range m.Calibration.Scales {
		if !(s.Scale > 0) || math.IsInf(float64(s.Scale), 0) {
			return nil, fmt.Errorf("quant: model %s: activation scale of %q is %v", cfg.Name, s.Name, s.Scale)
		}
		act[s.Name] = s.Scale
	}
	for _, sp := range specs {
		if channelDims(sp.Role, m.Granularity) > 0 && act[sp.Name] == 0 {
			return nil, fmt.Errorf("quant: model %s: no activation scale for %q", cfg.Name, sp.Name)
		}
	}
	limit, source, err := capsnet.ModelMemoryLimit()
	if err != nil {
		return nil, err
	}
	n := &Net{Config: cfg, Batch: batch, Arena: graph.NewArena(), pred: make([]int, batch), zeroLabels: make([]int, batch)}
	B := batch
	a := n.Arena
	in := geo.ConvIn[0]
	n.inLen = in[0] * in[1] * in[2]

	// Convolutions.
	var prevNext *graph.Buf
	for k, cv := range cfg.Convs {
		ci, co := geo.ConvIn[k], geo.ConvOut[k]
		groups := 1
		if cv.Depthwise {
			groups = ci[0]
		}
		sh := kernels.ConvShape{Batch: 1, InC: ci[0], InH: ci[1], InW: ci[2], OutC: co[0], KH: geo.Kernel[k], KW: geo.Kernel[k],
			StrideH: cv.Stride, StrideW: cv.Stride, PadH: cv.Pad, PadW: cv.Pad, Groups: groups}
		if err := sh.Validate(); err != nil {
			return nil, fmt.Errorf("quant: conv %s: %w", cv.Name, err)
		}
		wt, bt := byName[cv.Name+".weight"], byName[cv.Name+".bias"]
		L := &i8Conv{sh: sh, depthwise: cv.Depthwise, relu: cv.ReLU, in: prevNext}
		if L.in == nil {
			L.in = a.AllocI8(cv.Name+".xq", graph.Activation, B, ci[1], ci[2], ci[0])
		}
		K := sh.KH * sh.KW * (sh.InC / groups)
		r := reorderHWC(wt.Q, sh.OutC, sh.InC/groups, sh.KH*sh.KW)
		if cv.Depthwise {
			// (C, KH·KW) → (KH·KW, C).
			L.wdw = make([]int8, len(wt.Q))
			for c := range sh.InC {
				for p := range sh.KH * sh.KW {
					L.wdw[p*sh.InC+c] = wt.Q[c*sh.KH*sh.KW+p]
				}
			}
			n.weights += int64(len(L.wdw))
		} else {
			if L.w, err = kernels.PackI8(sh.OutC, K, r, K); err != nil {
				return nil, fmt.Errorf("quant: conv %s: %w", cv.Name, err)
			}
			n.weights += int64(L.w.Bytes())
			L.cols = a.AllocI8(cv.Name+".cols", graph.Scratch, sh.I8ColsLen())
		}
		L.acc = a.AllocI32(cv.Name+".acc", graph.Scratch, sh.I8AccLen())
		sa := act[cv.Name+".weight"]
		L.inScale = sa
		var sn float32 = 1
		if k+1 < len(cfg.Convs) {
			sn = act[cfg.Convs[k+1].Name+".weight"]
			L.next = a.AllocI8(cfg.Convs[k+1].Name+".xq", graph.Activation, B, co[1], co[2], co[0])
		} else {
			L.y = a.Alloc(cv.Name+".y", graph.Activation, B, co[0], co[1], co[2])
		}
		L.mul, L.add = make([]float32, sh.OutC), make([]float32, sh.OutC)
		for c := range sh.OutC {
			L.mul[c] = sa * wt.Scales[c] / sn
			L.add[c] = bt.Float[c] / sn
		}
		n.weights += 8 * int64(sh.OutC)
		n.convs = append(n.convs, L)
		prevNext = L.next
	}

	// Primary capsules.
	last := geo.ConvOut[len(geo.ConvOut)-1]
	d := cfg.PrimaryDim
	kind, err := squashKind(cfg.PrimarySquash)
	if err != nil {
		return nil, fmt.Errorf("quant: model %s: %w", cfg.Name, err)
	}
	n.prim = i8Primary{maps: last[0] / d, d: d, hw: last[1] * last[2], kind: kind,
		s: a.Alloc("primary.s", graph.Activation, B, d, geo.PrimaryN),
		v: a.Alloc("primary.v", graph.Activation, B, d, geo.PrimaryN)}

	// Capsule layers.
	u := n.prim.v
	for l, cc := range cfg.Caps {
		nIn, dIn := geo.CapsIn[l][0], geo.CapsIn[l][1]
		sq, err := squashKind(cc.Squash)
		if err != nil {
			return nil, fmt.Errorf("quant: model %s: %w", cfg.Name, err)
		}
		L := &i8Caps{u: u,
			votes: kernels.VotesShape{Batch: B, NIn: nIn, NOut: cc.Out, DIn: dIn, DOut: cc.Dim},
			route: kernels.RoutingShape{Batch: B, NIn: nIn, NOut: cc.Out, D: cc.Dim, Iters: cc.Iters, Squash: sq, Uniform: cc.Routing == "uniform"}}
		wt, pt := byName[cc.Name+".W"], byName[cc.Name+".b"]
		cols := cc.Out * cc.Dim
		rows := make([]int8, cols*dIn)
		L.w = make([]*kernels.PackedI8, nIn)
		L.mul = make([]float32, nIn*cc.Out)
		sa := act[cc.Name+".W"]
		L.scale = sa
		for i := range nIn {
			// W (n_out, n_in, d_out, d_in): the rows (j, k) of capsule i.
			for j := range cc.Out {
				for k := range cc.Dim {
					copy(rows[(j*cc.Dim+k)*dIn:][:dIn], wt.Q[((j*nIn+i)*cc.Dim+k)*dIn:][:dIn])
				}
				s := wt.Scales[j]
				if m.Granularity == PerBlock {
					s = wt.Scales[j*nIn+i]
				}
				L.mul[i*cc.Out+j] = sa * s
			}
			if L.w[i], err = kernels.PackI8(cols, dIn, rows, dIn); err != nil {
				return nil, fmt.Errorf("quant: %s: %w", cc.Name, err)
			}
			n.weights += int64(L.w[i].Bytes())
		}
		L.prior = make([]float32, nIn*cc.Out)
		for i := range nIn {
			for j := range cc.Out {
				L.prior[j*nIn+i] = pt.Float[i*cc.Out+j]
			}
		}
		n.weights += 4 * int64(len(L.mul)+len(L.prior))
		L.uq = a.AllocI8(cc.Name+".uq", graph.Activation, nIn, B, dIn)
		L.acc = a.AllocI32(cc.Name+".acc", graph.Scratch, min(votesBlock, nIn), B, cols)
		L.uhat = a.Alloc(cc.Name+".uhat", graph.Activation, B, cc.Out, cc.Dim, nIn)
		L.v = a.Alloc(cc.Name+".v", graph.Activation, B, cc.Dim, cc.Out)
		L.c = a.Alloc(cc.Name+".c", graph.Activation, B, cc.Out, nIn)
		L.work = a.Alloc(cc.Name+".work", graph.Scratch, L.route.WorkSize())
		n.caps = append(n.caps, L)
		u = L.v
	}

	// Head and decoder.
	top := n.caps[len(n.caps)-1]
	classes, dOut := cfg.Classes, top.route.D
	n.norms = a.Alloc("norms", graph.Activation, B, classes)
	n.decIn = a.Alloc("dec.in", graph.Activation, B, classes*dOut)
	sizes := append(append([]int(nil), cfg.Decoder...), geo.Pixels)
	inSz := classes * dOut
	var xq *graph.Buf
	for i, out := range sizes {
		name := fmt.Sprintf("dec.fc%d", i+1)
		wt, bt := byName[name+".weight"], byName[name+".bias"]
		L := &i8FC{in: inSz, out: out, xq: xq}
		if L.xq == nil {
			L.x = n.decIn
			L.inv = 1 / act[name+".weight"]
			L.xq = a.AllocI8(name+".xq", graph.Activation, B, inSz)
		}
		if L.w, err = kernels.PackI8(out, inSz, wt.Q, inSz); err != nil {
			return nil, fmt.Errorf("quant: %s: %w", name, err)
		}
		n.weights += int64(L.w.Bytes()) + 8*int64(out)
		L.acc = a.AllocI32(name+".acc", graph.Scratch, B, out)
		sa := act[name+".weight"]
		var sn float32 = 1
		if i+1 < len(sizes) {
			next := fmt.Sprintf("dec.fc%d", i+2)
			sn = act[next+".weight"]
			L.next = a.AllocI8(next+".xq", graph.Activation, B, out)
		} else {
			L.y = a.Alloc(name+".y", graph.Activation, B, out)
		}
		L.mul, L.add = make([]float32, out), make([]float32, out)
		for c := range out {
			L.mul[c] = sa * wt.Scales[c] / sn
			L.add[c] = bt.Float[c] / sn
		}
		n.dec = append(n.dec, L)
		xq, inSz = L.next, out
	}
	n.recon = n.dec[len(n.dec)-1].y
	n.schedule()
	n.Arena.Pin(n.norms, n.recon)
	for _, L := range n.caps { // small; kept for inspection after Forward
		n.Arena.Pin(L.v)
	}
	var tooBig error
	n.Arena.SetSizeCheck(func(plan int64) error {
		if need := n.weights + plan; need > limit {
			tooBig = fmt.Errorf("quant: model %s at batch %d needs %s (weights %s + memory plan %s), more than the limit of one model %s (%s)",
				cfg.Name, batch, graph.MiB(need), graph.MiB(n.weights), graph.MiB(plan), graph.MiB(limit), source)
			return tooBig
		}
		return nil
	})
	if err := n.Arena.SealShared(n.forward); err != nil {
		if err == tooBig {
			return nil, err
		}
		return nil, fmt.Errorf("quant: memory plan: %w", err)
	}
	return n, nil
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

func squashKind(s string) (kernels.Squash, error) {
	switch s {
	case "mazzia":
		return kernels.SquashMazzia, nil
	case "sabour":
		return kernels.SquashSabour, nil
	}
	return 0, fmt.Errorf("%q is not a squash kind (mazzia or sabour)", s)
}

func bufs(b ...*graph.Buf) []*graph.Buf { return b }

func (n *Net) schedule() {
	f := func(name string, run func() error, reads, writes []*graph.Buf) {
		n.forward = append(n.forward, graph.Step{Name: name, Run: run, Reads: reads, Writes: writes})
	}
	first := n.convs[0]
	f("quantize input", func() error {
		return kernels.QuantizeNHWC(n.Batch, first.sh.InC, first.sh.InH*first.sh.InW, first.in.I8(), n.x, 1/n.firstScale())
	}, nil, bufs(first.in))
	for k, L := range n.convs {
		f("conv "+n.Config.Convs[k].Name, func() error { return L.forward(n.Batch) }, bufs(L.in), bufs(L.cols, L.acc, L.next, L.y))
	}
	lastY := n.convs[len(n.convs)-1].y
	f("primary capsules", func() error {
		P := &n.prim
		if err := kernels.PrimaryCapsules(n.Batch, P.maps, P.d, P.hw, lastY.Data(), P.s.Data()); err != nil {
			return err
		}
		return kernels.SquashForward(P.kind, n.Batch, P.d, P.maps*P.hw, P.s.Data(), P.v.Data())
	}, bufs(lastY), bufs(n.prim.s, n.prim.v))
	for l, L := range n.caps {
		name := n.Config.Caps[l].Name
		f("votes "+name, L.votesForward, bufs(L.u), bufs(L.uq, L.acc, L.uhat))
		f("routing "+name, func() error {
			return kernels.RoutingForward(L.route, L.v.Data(), L.c.Data(), L.uhat.Data(), L.prior, L.work.Data())
		}, bufs(L.uhat), bufs(L.v, L.c, L.work))
	}
	top := n.caps[len(n.caps)-1]
	f("norms and mask", n.headForward, bufs(top.v), bufs(n.norms, n.decIn))
	for i, L := range n.dec {
		f(fmt.Sprintf("fc dec.fc%d", i+1), L.forward, bufs(L.x, L.xq), bufs(L.xq, L.acc, L.next, L.y))
	}
}

// firstScale is the first convolution's activation scale, which
// quantizes the input.
func (n *Net) firstScale() float32 { return n.convs[0].inScale }

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
	cfg := n.Config
	top := n.caps[len(n.caps)-1]
	d := top.route.D
	mp := kernels.MarginParams{MPlus: cfg.Loss.MPlus, MMinus: cfg.Loss.MMinus, Lambda: cfg.Loss.Lambda, Eps: kernels.SquashEps}
	if _, err := kernels.MarginLoss(mp, n.Batch, d, cfg.Classes, top.v.Data(), n.zeroLabels, n.norms.Data(), nil); err != nil {
		return err
	}
	if err := kernels.PredictLabels(n.Batch, cfg.Classes, n.norms.Data(), n.pred); err != nil {
		return err
	}
	return kernels.MaskCapsules(n.Batch, d, cfg.Classes, top.v.Data(), n.pred, n.decIn.Data())
}

// forward runs one decoder layer.
func (L *i8FC) forward() error {
	B := L.acc.Len() / L.out
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
