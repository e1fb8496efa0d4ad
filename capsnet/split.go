package capsnet

import (
	"fmt"

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
		if L.split != nil || L.sh.OutC < 16 || L.sh.Groups != 1 || L.sh.FLOPs() < convSplitMinFLOPs {
			continue
		}
		lo := (L.sh.OutC/2 + 7) / 8 * 8 // a multiple of the SGEMM tiles' rows
		s := &convSplit{lo: lo, sh1: L.sh, sh2: L.sh}
		s.sh1.OutC, s.sh2.OutC = lo, L.sh.OutC-lo
		s.work = make([]float32, s.sh2.ArenaWorkSize())
		k := L.sh.WLen() / L.sh.OutC
		p := L.sh.OutH() * L.sh.OutW()
		conv := convFunc(L)
		s.run = func() {
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

// convFunc is the convolution of layer L: with its ReLU fused, or not.
func convFunc(L *convLayer) func(sh kernels.ConvShape, y, x, w, bias, work []float32) error {
	if L.ReLU {
		return kernels.ConvForwardReLU // the ReLU fused into the convolution's epilogue
	}
	return kernels.ConvForward
}

// convForward runs layer L's convolution: whole, or in two halves at once.
func (n *Net) convForward(L *convLayer) error {
	conv := convFunc(L)
	s := L.split
	if s == nil || n.help == nil {
		return conv(L.sh, L.y.Data(), L.x.Data(), L.w.Buf.Data(), L.b.Buf.Data(), L.work.Data())
	}
	n.help.req <- s
	err := conv(s.sh1, L.y.Data(), L.x.Data(), L.w.Buf.Data(), L.b.Buf.Data(), L.work.Data())
	<-n.help.done
	if err != nil {
		return err
	}
	return s.err
}
