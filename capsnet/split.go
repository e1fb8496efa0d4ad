package capsnet

import (
	"fmt"
	"time"

	"github.com/capstan-ml/capstan/kernels"
)

// Intra-operation threads (SetConvThreads): at batch 1 there is one image
// to share between the cores, and its convolutions are most of the work;
// each convolution's output channels are split in two halves computed at
// the same time, the second on a helper goroutine the Net owns. The halves
// are convolutions of their own (rows of the OIHW weights, of the bias and
// of the NCHW output are contiguous at batch 1), so every output element is
// computed as by the whole convolution, with the same bits.

// convSplitMinFLOPs is the work (FLOPs at batch 1) below which a
// convolution stays whole with SetConvThreads(2): handing half of it to
// the helper goroutine and waiting for it cost more than the half saved.
// The deep model's convolutions (3.6 to 38 MFLOP) split ran slower on two
// threads than on one, on Zen 4 (1.28 against 1.22 ms) and on Zen 5 with
// the direct convolutions (0.97 against 0.75 ms, `./build.sh benchcmp`,
// n = 6); Sabour's primary capsules (382 MFLOP) split ran 1.5× faster.
// (A variable for the tests.)
var convSplitMinFLOPs = 5e7

// convSplit is the second half of one convolution's output channels.
type convSplit struct {
	lo       int               // first output channel of the second half
	sh1, sh2 kernels.ConvShape // the halves' shapes
	work     []float32         // the second half's scratch (ArenaWorkSize)
	err      error             // the second half's result
	run      func()            // computes the second half into err
}

// helper runs the second halves on its own goroutine.
type helper struct {
	req  chan *convSplit
	done chan struct{}
}

func (h *helper) loop() {
	for s := range h.req {
		s.run()
		h.done <- struct{}{}
	}
}

// SetConvThreads sets the threads that compute each convolution of an
// inference Net of batch 1: 1 (the default) or 2, the output channels split
// in two halves (convolutions of fewer than 16 output channels or 50
// MFLOP stay whole: the deep model's all do).
// With 2 the Net starts a goroutine, which Close stops, and allocates the
// second halves' scratch once, here; Forward still allocates nothing. The
// results are bit for bit those of 1 thread.
func (n *Net) SetConvThreads(threads int) error {
	switch {
	case threads != 1 && threads != 2:
		return fmt.Errorf("capsnet: conv threads %d: want 1 or 2", threads)
	case threads == 2 && (!n.Inference || n.Batch != 1):
		return fmt.Errorf("capsnet: conv threads 2 need an inference Net of batch 1 (this one: batch %d, inference %v)", n.Batch, n.Inference)
	}
	if threads == 1 {
		for _, L := range n.convs {
			L.split = nil
		}
		n.Close()
		return nil
	}
	for _, L := range n.convs {
		if L.split != nil {
			continue
		}
		lo, sh1, sh2, ok := convSplitShapes(L.sh)
		if !ok {
			continue
		}
		s := &convSplit{lo: lo, sh1: sh1, sh2: sh2}
		s.work = make([]float32, s.sh2.ArenaWorkSize())
		k := L.sh.WLen() / L.sh.OutC
		p := L.sh.OutH() * L.sh.OutW()
		conv, convP := convFunc(L), convPackedFunc(L)
		s.run = func() {
			if L.pack.usable(true) {
				s.err = convP(s.sh2, L.y.Data()[lo*p:], L.x.Data(), L.pack.h2, L.b.Buf.Data()[lo:], s.work)
				return
			}
			s.err = conv(s.sh2, L.y.Data()[lo*p:], L.x.Data(), L.w.Buf.Data()[lo*k:], L.b.Buf.Data()[lo:], s.work)
		}
		L.split = s
	}
	if n.help == nil {
		n.help = &helper{req: make(chan *convSplit), done: make(chan struct{})}
		go n.help.loop()
	}
	return nil
}

// Close stops the goroutine SetConvThreads(2) started (a no-op otherwise);
// the Net then runs its convolutions on one thread.
func (n *Net) Close() {
	if n.help == nil {
		return
	}
	close(n.help.req)
	n.help = nil
	for _, L := range n.convs {
		L.split = nil
	}
}

// convSplitShapes returns where SetConvThreads(2) splits the convolution
// sh (at batch 1) and the shapes of its two halves, ok false where it
// stays whole: fewer than 16 output channels, groups, or less work than
// convSplitMinFLOPs.
func convSplitShapes(sh kernels.ConvShape) (lo int, sh1, sh2 kernels.ConvShape, ok bool) {
	if sh.OutC < 16 || sh.Groups != 1 || sh.FLOPs() < convSplitMinFLOPs {
		return 0, sh, sh, false
	}
	lo = (sh.OutC/2 + 7) / 8 * 8 // a multiple of the SGEMM tiles' rows
	sh1, sh2 = sh, sh
	sh1.OutC, sh2.OutC = lo, sh.OutC-lo
	return lo, sh1, sh2, true
}

// convFunc is the convolution of layer L: with its ReLU fused, or not.
func convFunc(L *convLayer) func(sh kernels.ConvShape, y, x, w, bias, work []float32) error {
	if L.ReLU {
		return kernels.ConvForwardReLU // the ReLU fused into the convolution's epilogue
	}
	return kernels.ConvForward
}

// convPackedFunc is convFunc on packed weights.
func convPackedFunc(L *convLayer) func(sh kernels.ConvShape, y, x []float32, p kernels.ConvPacked, bias, work []float32) error {
	if L.ReLU {
		return kernels.ConvForwardPackedReLU
	}
	return kernels.ConvForwardPacked
}

// convForward runs layer L's convolution: whole, or in two halves at once;
// on its packed weights where it has them, packed first if they are not
// up to date (repack).
func (n *Net) convForward(L *convLayer) error {
	s := L.split
	split := s != nil && n.help != nil
	if err := n.repack(L, split); err != nil {
		return err
	}
	if !split {
		if L.pack.usable(false) {
			return convPackedFunc(L)(L.sh, L.y.Data(), L.x.Data(), L.pack.whole, L.b.Buf.Data(), L.work.Data())
		}
		if L.save != nil {
			return kernels.ConvForwardTrain(L.sh, L.y.Data(), L.x.Data(), L.w.Buf.Data(), L.b.Buf.Data(), L.save.Data(), L.work.Data(), L.ReLU)
		}
		return convFunc(L)(L.sh, L.y.Data(), L.x.Data(), L.w.Buf.Data(), L.b.Buf.Data(), L.work.Data())
	}
	n.help.req <- s
	var err error
	if L.pack.usable(true) {
		err = convPackedFunc(L)(s.sh1, L.y.Data(), L.x.Data(), L.pack.h1, L.b.Buf.Data(), L.work.Data())
	} else {
		err = convFunc(L)(s.sh1, L.y.Data(), L.x.Data(), L.w.Buf.Data(), L.b.Buf.Data(), L.work.Data())
	}
	<-n.help.done
	if err != nil {
		return err
	}
	return s.err
}

// convChunk is the images a Net of a batch of 4·convChunk or more runs
// through all its convolutions before the next ones (Net.convChunks;
// below that an inference Net's chunk buffers would save little memory,
// or cost some). Layer by layer over the whole batch, every convolution's
// output went to memory and came back for the next (the deep model's
// second one is 16 MB per 64 images): at batch 128 on two threads the
// stride-2 layers' phase split and the epilogues' stores ran at memory
// speed, 9% of the deep model's inference. An inference Net's
// intermediate outputs then hold one chunk, and its convolutions share
// one scratch; a training Net keeps every output whole (its backward
// reads them) and only runs them in this order. Measured on Zen 4 (AMD
// EPYC family 25 model 17, avx512, BenchmarkInfer and BenchmarkTrainStep,
// model deep, batch 128, threads 2): inference 2270 img/s layer by layer,
// 2372 in chunks of 4 images, 2374 of 8, 2323 of 16, and 2390 against
// 2172 with the plan of chunks (27.7 MiB against 66.6); Sabour's two
// convolutions the same within 1% (426, 424, 426 img/s); training 761
// against 773 img/s (three alternating runs each). Nets whose
// convolutions run by Winograd in training (a save per batch: Sabour's)
// stay layer by layer. (A variable for the tests.)
var convChunk = 8

// convChunks runs the convolutions on n.chunk images at a time. In an
// inference Net each layer's input and output are one chunk's buffers,
// but for the first layer's input (the batch) and the last layer's output
// (read by the primary capsules); in a training Net every buffer is the
// whole batch's. Each image's outputs are computed as by the whole batch,
// with the same bits (the convolutions compute image by image). When
// profiling, each layer's time is added to its own timer (Profile gives
// the layers' rows, not this step's).
func (n *Net) convChunks() error {
	for _, L := range n.convs {
		if err := n.repack(L, false); err != nil {
			return err
		}
	}
	last := len(n.convs) - 1
	prof := n.prof.on
	var t0 time.Time
	for n0 := 0; n0 < n.Batch; n0 += n.chunk {
		nb := min(n.chunk, n.Batch-n0)
		for i, L := range n.convs {
			sh := L.sh
			sh.Batch = nb
			xi, yi := L.sh.XLen()/L.sh.Batch, L.sh.YLen()/L.sh.Batch
			x, y := L.x.Data(), L.y.Data()
			if i == 0 || !n.Inference {
				x = x[n0*xi:]
			}
			if i == last || !n.Inference {
				y = y[n0*yi:]
			}
			x, y = x[:nb*xi], y[:nb*yi]
			if prof {
				t0 = time.Now()
			}
			var err error
			if L.pack.usable(false) {
				err = convPackedFunc(L)(sh, y, x, L.pack.whole, L.b.Buf.Data(), L.work.Data())
			} else {
				err = convFunc(L)(sh, y, x, L.w.Buf.Data(), L.b.Buf.Data(), L.work.Data())
			}
			if err != nil {
				return fmt.Errorf("capsnet: %s, images %d to %d: %w", L.Name, n0, n0+nb-1, err)
			}
			if prof {
				n.prof.convNs[i] += int64(time.Since(t0))
			}
		}
	}
	return nil
}

// Packed weights: an inference Net keeps a copy of each convolution's
// weights in the layout its forward reads (kernels.PackConv), in a
// graph.Packed buffer of its arena, so that the convolutions do not pack
// them on every call (at batch 1, 17% of Sabour's forward). The copy is
// made at the first Forward and again at the start of a Forward after
// Params.Modified, after kernels.Use switched to an implementation that
// reads another layout, and when SetConvThreads changes the halves the
// convolution runs in (each half has its packing of its own). The results
// are the same bits as on the unpacked weights.

// convPack is what a layer's packed buffer holds.
type convPack struct {
	valid bool   // packed at generation gen, split as split
	gen   uint64 // the Params generation packed (Params.Modified)
	split bool   // packed as SetConvThreads' two halves (h1, h2), else whole
	// ok is false where the buffer holds nothing usable: the halves of a
	// split that packedLen did not plan for (convSplitMinFLOPs changed).
	ok     bool
	whole  kernels.ConvPacked
	h1, h2 kernels.ConvPacked
}

// usable reports whether the packed weights of the arrangement (split or
// whole) can be read.
func (pk *convPack) usable(split bool) bool { return pk.valid && pk.ok && pk.split == split }

// current reports whether the packed weights are in the layout the
// implementation in use reads (kernels.ConvPacked.Current; true when
// nothing is packed).
func (pk *convPack) current() bool {
	switch {
	case !pk.ok:
		return true
	case pk.split:
		return pk.h1.Current() && pk.h2.Current()
	}
	return pk.whole.Current()
}

// packedLen is the size of the packed buffer of the convolution sh in an
// inference Net: its packed weights (0 where there is nothing to pack) or,
// at batch 1 where SetConvThreads(2) would split it, those of its two
// halves if they need more.
func packedLen(sh kernels.ConvShape) int {
	n := sh.PackedSize()
	if n == 0 {
		return 0
	}
	if _, sh1, sh2, ok := convSplitShapes(sh); ok && sh.Batch == 1 {
		n = max(n, sh1.PackedSize()+sh2.PackedSize())
	}
	return n
}

// repack packs layer L's weights into its packed buffer, whole or as the
// two halves of a split, unless they are already packed that way from the
// current parameters (Params.Modified) in the layout of the implementation
// in use. A layer without a packed buffer is left alone. It does not
// allocate.
func (n *Net) repack(L *convLayer, split bool) error {
	if L.pw == nil {
		return nil
	}
	pk := &L.pack
	gen := n.P.generation()
	if pk.valid && pk.gen == gen && pk.split == split && pk.current() {
		return nil
	}
	buf, w := L.pw.Data(), L.w.Buf.Data()
	*pk = convPack{valid: true, gen: gen, split: split}
	if !split {
		if L.sh.PackedSize() > len(buf) {
			return nil
		}
		p, err := kernels.PackConv(L.sh, buf, w)
		if err != nil {
			return fmt.Errorf("capsnet: packing the weights of %s: %w", L.Name, err)
		}
		pk.whole, pk.ok = p, true
		return nil
	}
	s := L.split
	n1, n2 := s.sh1.PackedSize(), s.sh2.PackedSize()
	if n1+n2 > len(buf) {
		return nil
	}
	h1, err := kernels.PackConv(s.sh1, buf[:n1], w)
	if err != nil {
		return fmt.Errorf("capsnet: packing the weights of %s: %w", L.Name, err)
	}
	k := L.sh.WLen() / L.sh.OutC
	h2, err := kernels.PackConv(s.sh2, buf[n1:n1+n2], w[s.lo*k:])
	if err != nil {
		return fmt.Errorf("capsnet: packing the weights of %s: %w", L.Name, err)
	}
	pk.h1, pk.h2, pk.ok = h1, h2, true
	return nil
}
