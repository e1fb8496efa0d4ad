package capsnet

import (
	"fmt"
	"math"

	"github.com/capstan-ml/capstan/kernels"
)

// Dump runs one forward and backward pass of the model on a batch (x in
// NCHW, labels as the classes) with the decoder masked by the label, as the
// PyTorch reference does, and returns the tensors of docs/semantics.md §8 under their
// names and PyTorch layouts: loss (1), norms (B, classes), recon
// (B, pixels), trace.0.v (primary capsules, (B, n, d)), per capsule layer K
// trace.K.v (B, n_out, d) and trace.K.c (B, n_in, n_out, last-iteration
// couplings), and grad.NAME for every trainable parameter. x and y are
// included too.
func Dump(p *Params, x []float32, labels []int) (map[string]Tensor, error) {
	B := len(labels)
	if B == 0 {
		return nil, fmt.Errorf("dump: empty batch")
	}
	n, err := NewNet(p, B)
	if err != nil {
		return nil, err
	}
	if len(x) != n.x.Len() {
		return nil, fmt.Errorf("dump: x has %d values, a batch of %d images of %v needs %d", len(x), B, p.Config.Input, n.x.Len())
	}
	for i, v := range x {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("dump: x[%d] is %v", i, v)
		}
	}
	n.SetMaskByLabel(true)
	if err := n.Forward(x, labels); err != nil {
		return nil, fmt.Errorf("dump: forward: %w", err)
	}
	if err := n.Backward(); err != nil {
		return nil, fmt.Errorf("dump: backward: %w", err)
	}
	out := map[string]Tensor{}
	_, _, total := n.Loss()
	out["loss"] = Tensor{Shape: []int{1}, Data: []float32{float32(total)}}
	ys := make([]float32, B)
	for i, l := range labels {
		ys[i] = float32(l)
	}
	out["y"] = Tensor{Shape: []int{B}, Data: ys}
	out["x"] = Tensor{Shape: append([]int(nil), n.x.Shape...), Data: append([]float32(nil), x...)}
	out["norms"] = Tensor{Shape: []int{B, p.Config.Classes}, Data: append([]float32(nil), n.Norms()...)}
	out["recon"] = Tensor{Shape: []int{B, p.Geo.Pixels}, Data: append([]float32(nil), n.Recon()...)}
	out["trace.0.v"] = capsToTorch(n.prim.v.Data(), B, n.prim.D, p.Geo.PrimaryN)
	for k, L := range n.caps {
		out[fmt.Sprintf("trace.%d.v", k+1)] = capsToTorch(L.V.Data(), B, L.Route.D, L.Route.NOut)
		// Couplings (B, NOut, NIn) → PyTorch (B, NIn, NOut): the same
		// per-sample transpose as capsules.
		c := capsToTorch(L.C.Data(), B, L.Route.NOut, L.Route.NIn).Data
		out[fmt.Sprintf("trace.%d.c", k+1)] = Tensor{Shape: []int{B, L.Route.NIn, L.Route.NOut}, Data: c}
	}
	for i, q := range p.List {
		if !q.Trainable {
			continue
		}
		g := make([]float32, q.Buf.Len())
		toTorch(q.kind, q.TorchShape, n.Grads[i].Data(), g)
		out["grad."+q.Name] = Tensor{Shape: append([]int(nil), q.TorchShape...), Data: g}
	}
	return out, nil
}

// capsToTorch turns (B, d, n) component-major capsules into PyTorch's (B, n, d).
func capsToTorch(src []float32, B, d, n int) Tensor {
	dst := make([]float32, B*n*d)
	mustConvert(kernels.CapsToTorch(B, n, d, dst, src))
	return Tensor{Shape: []int{B, n, d}, Data: dst}
}
