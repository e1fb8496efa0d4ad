package capsnet

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// netState is everything a pass leaves for the caller: loss, norms,
// predictions, reconstruction, capsules and couplings of every layer and
// every gradient.
func netState(t *testing.T, n *Net) [][]float32 {
	t.Helper()
	m, r, _ := n.Loss()
	out := [][]float32{{float32(m), float32(r)}, n.Norms(), n.Recon()}
	for l := range n.Layers() {
		v, _, err := n.Capsules(l)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, slices.Clone(v))
		if l > 0 {
			c, _, err := n.Couplings(l)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, slices.Clone(c))
		}
	}
	for _, g := range n.Grads {
		out = append(out, slices.Clone(g.Data()))
	}
	for i := range out {
		out[i] = slices.Clone(out[i])
	}
	return out
}

func sameBits(a, b [][]float32) error {
	if len(a) != len(b) {
		return fmt.Errorf("%d tensors vs %d", len(a), len(b))
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return fmt.Errorf("tensor %d: %d values vs %d", i, len(a[i]), len(b[i]))
		}
		for k := range a[i] {
			if math.Float32bits(a[i][k]) != math.Float32bits(b[i][k]) {
				return fmt.Errorf("tensor %d [%d]: %v vs %v", i, k, a[i][k], b[i][k])
			}
		}
	}
	return nil
}

// TestSharedPlanMatchesUnshared runs forward, backward and the margin-only
// backward on the lifetime-shared plan in debug mode (every buffer filled
// with NaN before its first and after its last declared use, so a step that
// touches a buffer it does not declare reads NaN or clobbers a live buffer)
// and on the unshared plan, and requires bitwise identical results. The
// shared plan must also be smaller, for training and inference.
func TestSharedPlanMatchesUnshared(t *testing.T) {
	for _, name := range []string{"tiny-deep3", "tiny-sabour", "tiny-deep", "tiny-deep-uniform"} {
		p, err := NewParams(Presets()[name])
		if err != nil {
			t.Fatal(err)
		}
		p.Init(5)
		for _, inference := range []bool{false, true} {
			var states [2][][][]float32
			var totals [2]int64
			for k, mode := range []planMode{planUnshared, planDebug} {
				n, err := newNet(p, 3, inference, mode)
				if err != nil {
					t.Fatal(err)
				}
				x := make([]float32, n.Batch*n.InputLen())
				for i := range x {
					x[i] = float32((i*29)%13) / 13
				}
				for rep := 0; rep < 2; rep++ { // twice: nothing may carry over from one step to the next
					if err := n.Forward(x, []int{2, 0, 7}); err != nil {
						t.Fatal(err)
					}
					states[k] = append(states[k], netState(t, n))
					if inference {
						continue
					}
					if rep == 0 { // the second round runs forward and backward alone
						if err := n.BackwardMargin(); err != nil {
							t.Fatal(err)
						}
						states[k] = append(states[k], netState(t, n))
					}
					if err := n.Backward(); err != nil {
						t.Fatal(err)
					}
					states[k] = append(states[k], netState(t, n))
				}
				totals[k] = n.Plan().Total
				if err := n.Arena.Validate(); err != nil {
					t.Fatal(err)
				}
			}
			for i := range states[0] {
				if err := sameBits(states[0][i], states[1][i]); err != nil {
					t.Errorf("%s inference=%v pass %d: shared plan differs from unshared: %v", name, inference, i, err)
				}
			}
			if totals[1] >= totals[0] {
				t.Errorf("%s inference=%v: shared plan %d bytes, unshared %d", name, inference, totals[1], totals[0])
			}
		}
	}
}

// TestBackwardMargin checks the margin-only gradient of the votes matrices:
// with α = 0 it equals Backward's bit for bit (the reconstruction term
// contributes nothing), with α > 0 it differs (the pass really leaves the
// reconstruction out), the decoder's gradients are zero after it, and it is
// refused after Backward.
func TestBackwardMargin(t *testing.T) {
	for _, alpha := range []float32{0, 0.5} {
		cfg := Presets()["tiny-deep3"]
		cfg.Loss.Alpha = alpha
		p, err := NewParams(cfg)
		if err != nil {
			t.Fatal(err)
		}
		p.Init(6)
		n, err := NewNet(p, 2)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, n.Batch*n.InputLen())
		for i := range x {
			x[i] = float32((i*17)%23) / 23
		}
		if err := n.Forward(x, []int{4, 1}); err != nil {
			t.Fatal(err)
		}
		if err := n.BackwardMargin(); err != nil {
			t.Fatal(err)
		}
		var margin [][]float32
		for l := 1; l < len(n.Layers()); l++ {
			g, _, _ := n.VotesGrad(l)
			margin = append(margin, slices.Clone(g))
			nz := false
			for _, v := range g {
				nz = nz || v != 0
			}
			if !nz {
				t.Errorf("α=%v layer %d: margin gradient is all zero", alpha, l)
			}
		}
		for i, q := range p.List {
			if q.Name[:4] == "dec." && slices.ContainsFunc(n.Grads[i].Data(), func(v float32) bool { return v != 0 }) {
				t.Errorf("α=%v: %s has a gradient after BackwardMargin", alpha, q.Name)
			}
		}
		if err := n.Backward(); err != nil {
			t.Fatal(err)
		}
		var full [][]float32
		for l := 1; l < len(n.Layers()); l++ {
			g, _, err := n.VotesGrad(l)
			if err != nil {
				t.Fatal(err)
			}
			full = append(full, slices.Clone(g))
		}
		if err := n.BackwardMargin(); err == nil {
			t.Error("BackwardMargin after Backward: no error")
		}
		err = sameBits(full, margin)
		if alpha == 0 && err != nil {
			t.Errorf("α=0: margin-only gradient differs from the full one: %v", err)
		}
		if alpha != 0 && err == nil {
			t.Errorf("α=%v: margin-only gradient equals the full one", alpha)
		}
	}
}

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
			continue
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
	if err := n.Backward(); err != nil {
		t.Fatal(err)
	}
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
