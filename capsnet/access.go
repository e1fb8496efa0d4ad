package capsnet

import (
	"fmt"

	"github.com/capstan-ml/capstan/graph"
)

// This file is the read-only view of a compiled Net that the parse-tree
// analysis and telemetry use. Every accessor returns a view of the Net's
// memory (no copy, no allocation) in the engine's internal layout, valid
// until the next Forward, Backward or BackwardMargin; callers must not
// modify it. Layer 0 is the primary capsules; layer l ≥ 1 is capsule layer
// l (Config.Caps[l-1]).

// LayerInfo describes one capsule layer: its name ("primary" for layer 0,
// else the config's), its number of capsules N and their dimension D.
type LayerInfo struct {
	Name string
	N, D int
}

// Layers returns the capsule layers' metadata, layer 0 (primary capsules)
// first. The slice is shared: do not modify it.
func (n *Net) Layers() []LayerInfo { return n.info }

// CapsShape is the layout of Capsules: B samples of N capsules of
// dimension D, stored component-major per sample, v[(b·D + k)·N + i] is
// component k of capsule i of sample b.
type CapsShape struct{ B, N, D int }

// At returns component k of capsule i of sample b of v.
func (s CapsShape) At(v []float32, b, i, k int) float32 { return v[(b*s.D+k)*s.N+i] }

// Capsule copies capsule i of sample b of v (D components) into dst, which
// must hold at least D values, and returns dst[:D].
func (s CapsShape) Capsule(v []float32, b, i int, dst []float32) []float32 {
	dst = dst[:s.D]
	for k := range dst {
		dst[k] = v[(b*s.D+k)*s.N+i]
	}
	return dst
}

// CouplingShape is the layout of Couplings: per sample b, the couplings
// c[b, i, j] of input capsule i (of NIn) to output capsule j (of NOut) are
// stored output-major, c[(b·NOut + j)·NIn + i].
type CouplingShape struct{ B, NIn, NOut int }

// At returns the coupling of input capsule i to output capsule j in sample b.
func (s CouplingShape) At(c []float32, b, i, j int) float32 { return c[(b*s.NOut+j)*s.NIn+i] }

// VotesShape is the layout of a votes matrix W and its gradients: for
// output capsule j and input capsule i, the D_out×D_in matrix W[j,i] is
// stored as w[((j·DOut + r)·DIn + c)·NIn + i] (internal (n_out, d_out, d_in,
// n_in); PyTorch's is (n_out, n_in, d_out, d_in)).
type VotesShape struct{ NIn, NOut, DIn, DOut int }

// At returns element (r, c) of matrix W[j,i] of w.
func (s VotesShape) At(w []float32, j, i, r, c int) float32 {
	return w[((j*s.DOut+r)*s.DIn+c)*s.NIn+i]
}

// layer checks a capsule layer index for the accessors.
func (n *Net) layer(fn string, l, lo int) error {
	if l < lo || l >= len(n.info) {
		return fmt.Errorf("capsnet: %s(%d): the net has capsule layers %d..%d", fn, l, lo, len(n.info)-1)
	}
	return nil
}

// Capsules returns the capsules of layer l (0: primary) of the last Forward
// and their layout (see CapsShape).
func (n *Net) Capsules(l int) ([]float32, CapsShape, error) {
	if err := n.layer("Capsules", l, 0); err != nil {
		return nil, CapsShape{}, err
	}
	v := n.prim.v
	if l > 0 {
		v = n.caps[l-1].V
	}
	return v.Data(), CapsShape{B: n.Batch, N: n.info[l].N, D: n.info[l].D}, nil
}

// Couplings returns the last routing iteration's couplings into layer l ≥ 1
// (from layer l−1) of the last Forward and their layout (see
// CouplingShape).
func (n *Net) Couplings(l int) ([]float32, CouplingShape, error) {
	if err := n.layer("Couplings", l, 1); err != nil {
		return nil, CouplingShape{}, err
	}
	L := n.caps[l-1]
	return L.C.Data(), CouplingShape{B: n.Batch, NIn: L.Route.NIn, NOut: L.Route.NOut}, nil
}

// VotesGrad returns the gradient of layer l's (l ≥ 1) votes matrices W
// (see VotesShape): ∂L/∂W of the total loss after Backward, ∂L_m/∂W of the
// margin loss alone after BackwardMargin. An inference Net has none (an
// error).
func (n *Net) VotesGrad(l int) ([]float32, VotesShape, error) {
	if err := n.layer("VotesGrad", l, 1); err != nil {
		return nil, VotesShape{}, err
	}
	if n.Inference {
		return nil, VotesShape{}, fmt.Errorf("capsnet: VotesGrad on an inference net (no gradients)")
	}
	L := n.caps[l-1]
	return L.DW.Data(), VotesShape{NIn: L.Votes.NIn, NOut: L.Votes.NOut, DIn: L.Votes.DIn, DOut: L.Votes.DOut}, nil
}

// Votes returns layer l's (l ≥ 1) votes matrices W (see VotesShape), a
// view of the shared parameters.
func (n *Net) Votes(l int) ([]float32, VotesShape, error) {
	if err := n.layer("Votes", l, 1); err != nil {
		return nil, VotesShape{}, err
	}
	L := n.caps[l-1]
	return L.W.Buf.Data(), VotesShape{NIn: L.Votes.NIn, NOut: L.Votes.NOut, DIn: L.Votes.DIn, DOut: L.Votes.DOut}, nil
}

// input is the arena buffer of the input batch (for tests in this package).
func (n *Net) input() *graph.Buf { return n.x }

// ConvInput returns the input of convolution k (Config.Convs[k]) of the
// last Forward: B samples of (C, H, W), NCHW; convolution 0's is the image
// batch. Only a training Net (NewNet) keeps it after Forward (its
// backward needs it); an inference Net's memory plan reuses it, so there
// it is an error.
func (n *Net) ConvInput(k int) ([]float32, error) {
	if k < 0 || k >= len(n.convs) {
		return nil, fmt.Errorf("capsnet: ConvInput(%d): the net has convolutions 0..%d", k, len(n.convs)-1)
	}
	if n.Inference {
		return nil, fmt.Errorf("capsnet: ConvInput on an inference net (its memory plan reuses the inputs): use a Net from NewNet")
	}
	return n.convs[k].x.Data(), nil
}

// FCInput returns the input of decoder layer i (dec.fc{i+1}) of the last
// Forward: B rows of its input width (layer 0's is the masked top
// capsules). Like ConvInput, only a training Net keeps it.
func (n *Net) FCInput(i int) ([]float32, error) {
	if i < 0 || i >= len(n.dec) {
		return nil, fmt.Errorf("capsnet: FCInput(%d): the decoder has layers 0..%d", i, len(n.dec)-1)
	}
	if n.Inference {
		return nil, fmt.Errorf("capsnet: FCInput on an inference net (its memory plan reuses the inputs): use a Net from NewNet")
	}
	return n.dec[i].x.Data(), nil
}
