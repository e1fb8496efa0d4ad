package capsnet

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// TestAccessors checks the layouts the accessors document against the
// PyTorch-layout dump, and their errors.
func TestAccessors(t *testing.T) {
	p, err := NewParams(Presets()["tiny-deep3"])
	if err != nil {
		t.Fatal(err)
	}
	p.Init(7)
	n, err := NewNet(p, 2)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, n.Batch*n.InputLen())
	for i := range x {
		x[i] = float32((i*7)%19) / 19
	}
	labels := []int{3, 8}
	dump, err := Dump(p, x, labels)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Forward(x, labels); err != nil {
		t.Fatal(err)
	}
	if got := len(n.Layers()); got != len(p.Config.Caps)+1 {
		t.Fatalf("%d layers, want %d", got, len(p.Config.Caps)+1)
	}
	buf := make([]float32, 64)
	for l, li := range n.Layers() {
		checkLayerAccessors(t, n, dump, l, li, buf)
	}
	if err := n.Backward(); err != nil {
		t.Fatal(err)
	}
	checkVotesGrad(t, n, p, dump)
	checkAccessorErrors(t, n, p)
}

// checkLayerAccessors checks Capsules and Couplings of capsule layer l
// (info li) of n after a Forward against the PyTorch-layout dump of the
// same pass (buf holds a capsule); layer 0 has no couplings.
func checkLayerAccessors(t *testing.T, n *Net, dump map[string]Tensor, l int, li LayerInfo, buf []float32) {
	v, vs, err := n.Capsules(l)
	if err != nil {
		t.Fatal(err)
	}
	ref := dump[fmt.Sprintf("trace.%d.v", l)]
	if vs.B != 2 || vs.N != li.N || vs.D != li.D || ref.Shape[1] != vs.N || ref.Shape[2] != vs.D {
		t.Fatalf("layer %d: shape %+v, info %+v, dump %v", l, vs, li, ref.Shape)
	}
	for b := 0; b < vs.B; b++ {
		for i := 0; i < vs.N; i++ {
			c := vs.Capsule(v, b, i, buf)
			for k := range c {
				if c[k] != ref.Data[(b*vs.N+i)*vs.D+k] || vs.At(v, b, i, k) != c[k] {
					t.Fatalf("layer %d sample %d capsule %d [%d]: %v, dump %v", l, b, i, k, c[k], ref.Data[(b*vs.N+i)*vs.D+k])
				}
			}
		}
	}
	if l == 0 {
		if _, _, err := n.Couplings(0); err == nil {
			t.Error("Couplings(0): no error")
		}
		return
	}
	c, cs, err := n.Couplings(l)
	if err != nil {
		t.Fatal(err)
	}
	cref := dump[fmt.Sprintf("trace.%d.c", l)]
	for b := 0; b < cs.B; b++ {
		for i := 0; i < cs.NIn; i++ {
			for j := 0; j < cs.NOut; j++ {
				if got, want := cs.At(c, b, i, j), cref.Data[(b*cs.NIn+i)*cs.NOut+j]; got != want {
					t.Fatalf("layer %d c[%d,%d,%d] = %v, dump %v", l, b, i, j, got, want)
				}
			}
		}
	}
}

// checkVotesGrad checks VotesGrad of every routed layer of n (model p)
// after a Backward against the PyTorch-layout gradients of the dump.
func checkVotesGrad(t *testing.T, n *Net, p *Params, dump map[string]Tensor) {
	for l := 1; l < len(n.Layers()); l++ {
		g, ws, err := n.VotesGrad(l)
		if err != nil {
			t.Fatal(err)
		}
		ref := dump[fmt.Sprintf("grad.%s.W", p.Config.Caps[l-1].Name)] // torch (n_out, n_in, d_out, d_in)
		for j := 0; j < ws.NOut; j++ {
			for i := 0; i < ws.NIn; i++ {
				for r := 0; r < ws.DOut; r++ {
					for c := 0; c < ws.DIn; c++ {
						if got, want := ws.At(g, j, i, r, c), ref.Data[((j*ws.NIn+i)*ws.DOut+r)*ws.DIn+c]; got != want {
							t.Fatalf("layer %d dW[%d,%d,%d,%d] = %v, dump %v", l, j, i, r, c, got, want)
						}
					}
				}
			}
		}
	}
}

// checkAccessorErrors checks the accessors' errors: layers out of range,
// and VotesGrad and BackwardMargin on an inference Net of model p.
func checkAccessorErrors(t *testing.T, n *Net, p *Params) {
	last := len(n.Layers())
	if _, _, err := n.Capsules(last); err == nil {
		t.Error("Capsules past the last layer: no error")
	}
	if _, _, err := n.VotesGrad(-1); err == nil {
		t.Error("VotesGrad(-1): no error")
	}
	inf, _ := NewInferenceNet(p, 2)
	if _, _, err := inf.VotesGrad(1); err == nil {
		t.Error("VotesGrad on an inference net: no error")
	}
	if err := inf.BackwardMargin(); err == nil {
		t.Error("BackwardMargin on an inference net: no error")
	}
}

// TestGemmInputs checks ConvInput and FCInput after a Forward of a
// training Net: convolution 0's input is the image batch, each later
// convolution's input has the size the geometry gives and (after a ReLU
// convolution) no negative value; the decoder's first input is the top
// capsule of the label, zero elsewhere, and each later FC input is
// ReLU(previous input · Wᵀ + b) computed here in float64. An inference
// Net and out-of-range indices are errors.
func TestGemmInputs(t *testing.T) {
	p, err := NewParams(Presets()["tiny-deep3"])
	if err != nil {
		t.Fatal(err)
	}
	p.Init(5)
	n, err := NewNet(p, 2)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, n.Batch*n.InputLen())
	for i := range x {
		x[i] = float32((i*5)%17) / 17
	}
	labels := []int{4, 1}
	if err := n.Forward(x, labels); err != nil {
		t.Fatal(err)
	}
	for k, cv := range p.Config.Convs {
		in, err := n.ConvInput(k)
		if err != nil {
			t.Fatal(err)
		}
		ci := p.Geo.ConvIn[k]
		if want := n.Batch * ci[0] * ci[1] * ci[2]; len(in) != want {
			t.Fatalf("conv %d: input of %d values, want %d", k, len(in), want)
		}
		if k == 0 && !slices.Equal(in, x) {
			t.Error("conv 0: input is not the image batch")
		}
		if k > 0 && p.Config.Convs[k-1].ReLU && slices.Min(in) < 0 {
			t.Errorf("conv %d (%s): negative input after a ReLU", k, cv.Name)
		}
	}
	top, vs, err := n.Capsules(len(n.Layers()) - 1)
	if err != nil {
		t.Fatal(err)
	}
	in0, err := n.FCInput(0)
	if err != nil {
		t.Fatal(err)
	}
	width := p.Config.Classes * vs.D
	for b := range n.Batch {
		for j := range p.Config.Classes {
			for k := range vs.D {
				want := float32(0)
				if j == labels[b] {
					want = vs.At(top, b, j, k)
				}
				if got := in0[b*width+j*vs.D+k]; got != want {
					t.Fatalf("decoder input [%d, %d, %d] = %v, want %v", b, j, k, got, want)
				}
			}
		}
	}
	for i := 1; i <= len(p.Config.Decoder); i++ {
		prev, _ := n.FCInput(i - 1)
		in, err := n.FCInput(i)
		if err != nil {
			t.Fatal(err)
		}
		w := p.Get(fmt.Sprintf("dec.fc%d.weight", i)).Buf.Data()
		bias := p.Get(fmt.Sprintf("dec.fc%d.bias", i)).Buf.Data()
		nIn, nOut := len(prev)/n.Batch, len(in)/n.Batch
		for b := range n.Batch {
			for o := range nOut {
				s := float64(bias[o])
				for c := range nIn {
					s += float64(prev[b*nIn+c]) * float64(w[o*nIn+c])
				}
				if got, want := float64(in[b*nOut+o]), math.Max(s, 0); math.Abs(got-want) > 1e-4*(1+math.Abs(want)) {
					t.Fatalf("FC input %d [%d, %d] = %v, want %v", i, b, o, got, want)
				}
			}
		}
	}
	if _, err := n.ConvInput(len(p.Config.Convs)); err == nil {
		t.Error("ConvInput out of range: no error")
	}
	if _, err := n.FCInput(-1); err == nil {
		t.Error("FCInput(-1): no error")
	}
	inf, err := NewInferenceNet(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inf.ConvInput(0); err == nil {
		t.Error("ConvInput on an inference net: no error")
	}
	if _, err := inf.FCInput(0); err == nil {
		t.Error("FCInput on an inference net: no error")
	}
}
