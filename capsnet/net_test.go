package capsnet

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/graph"
)

// TestReconMean checks loss.recon "mean": the total loss weighs L_r with
// α/pixels, and the decoder's gradients (which only the reconstruction
// term reaches) are exactly the "sum" ones divided by the pixel count.
func TestReconMean(t *testing.T) {
	run := func(recon string) (*Net, float64, float64) {
		cfg := Presets()["tiny-deep"]
		cfg.Loss.Recon = recon
		p, err := NewParams(cfg)
		if err != nil {
			t.Fatal(err)
		}
		p.Init(4)
		n, err := NewNet(p, 3)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, n.Batch*n.InputLen())
		for i := range x {
			x[i] = float32((i*13)%11) / 11
		}
		if err := n.Forward(x, []int{1, 4, 8}); err != nil {
			t.Fatal(err)
		}
		if err := n.Backward(); err != nil {
			t.Fatal(err)
		}
		m, r, total := n.Loss()
		if want := m + float64(cfg.Loss.ReconWeight(p.Geo.Pixels))*r; total != want {
			t.Errorf("recon %q: total %v, want %v", recon, total, want)
		}
		return n, total, r
	}
	sum, totalSum, rSum := run("")
	mean, totalMean, rMean := run("mean")
	px := float64(sum.P.Geo.Pixels)
	if rSum != rMean || totalMean >= totalSum {
		t.Fatalf("L_r %v vs %v, totals %v (sum) vs %v (mean)", rSum, rMean, totalSum, totalMean)
	}
	checked := 0
	for i, q := range sum.P.List {
		if !strings.HasPrefix(q.Name, "dec.") {
			continue
		}
		gs, gm := sum.Grads[i].Data(), mean.Grads[i].Data()
		scale := 0.0
		for _, v := range gs {
			scale = max(scale, math.Abs(float64(v)))
		}
		for k := range gs {
			// The seeds differ by one float32 rounding per pixel; the
			// backward reductions then round differently and can cancel
			// (a weight gradient sums terms of both signs), so the
			// error is bounded relative to the tensor's largest entry,
			// not to each entry (float32 ε·√terms ≈ 1e-6; allow 1e-5).
			if d := math.Abs(float64(gm[k])*px - float64(gs[k])); d > 1e-5*scale {
				t.Fatalf("%s[%d]: mean %g × %v pixels ≠ sum %g (largest %g)", q.Name, k, gm[k], px, gs[k], scale)
			}
			if gs[k] != 0 {
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no non-zero decoder gradient compared")
	}
}

// TestNetNoAllocs: a training step, the margin backward with the analysis
// accessors, and inference allocate nothing, for routing by agreement and
// both self-attention kinds.
func TestNetNoAllocs(t *testing.T) {
	for _, name := range []string{"tiny-deep3", "tiny-deep-selfattn", "tiny-deep-selfattn-in"} {
		t.Run(name, func(t *testing.T) { checkNetNoAllocs(t, name) })
	}
}

// tinyTrainingNet compiles preset at batch 3 with seed 1 and returns it
// with a fixed batch and labels and a step (Forward and Backward on them)
// that fails t on an error.
func tinyTrainingNet(t *testing.T, preset string) (n *Net, x []float32, labels []int, step func()) {
	t.Helper()
	p, err := NewParams(Presets()[preset])
	if err != nil {
		t.Fatal(err)
	}
	p.Init(1)
	n, err = NewNet(p, 3)
	if err != nil {
		t.Fatal(err)
	}
	x = make([]float32, n.Batch*n.InputLen())
	for i := range x {
		x[i] = float32(i%7) / 7
	}
	labels = []int{1, 5, 9}
	step = func() {
		if err := n.Forward(x, labels); err != nil {
			t.Fatal(err)
		}
		if err := n.Backward(); err != nil {
			t.Fatal(err)
		}
	}
	return n, x, labels, step
}

func checkNetNoAllocs(t *testing.T, preset string) {
	n, x, labels, step := tinyTrainingNet(t, preset)
	step()
	if a := testing.AllocsPerRun(5, step); a != 0 {
		t.Errorf("forward+backward allocates %.1f times per step", a)
	}
	margin := func() {
		if err := n.Forward(x, labels); err != nil {
			t.Fatal(err)
		}
		if err := n.BackwardMargin(); err != nil {
			t.Fatal(err)
		}
		for l := range n.Layers() {
			if _, _, err := n.Capsules(l); err != nil {
				t.Fatal(err)
			}
			if l > 0 {
				_, _, err1 := n.Couplings(l)
				_, _, err2 := n.VotesGrad(l)
				if err1 != nil || err2 != nil {
					t.Fatal(err1, err2)
				}
			}
		}
	}
	if a := testing.AllocsPerRun(5, margin); a != 0 {
		t.Errorf("forward+margin backward+accessors allocate %.1f times per step", a)
	}
	n.SetMaskByLabel(false)
	infer := func() {
		if err := n.Forward(x, labels); err != nil {
			t.Fatal(err)
		}
	}
	if a := testing.AllocsPerRun(5, infer); a != 0 {
		t.Errorf("inference allocates %.1f times per batch", a)
	}
}

// TestInferenceNet checks that a forward-only Net computes what a training
// Net masked by prediction does, holds no gradient memory, does not
// allocate and refuses Backward.
func TestInferenceNet(t *testing.T) {
	for _, name := range []string{"tiny-deep3", "tiny-sabour"} {
		p, err := NewParams(Presets()[name])
		if err != nil {
			t.Fatal(err)
		}
		p.Init(2)
		tr, err := NewNet(p, 4)
		if err != nil {
			t.Fatal(err)
		}
		inf, err := NewInferenceNet(p, 4)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, tr.Batch*tr.InputLen())
		for i := range x {
			x[i] = float32((i*31)%17) / 17
		}
		labels := []int{0, 3, 7, 9}
		tr.SetMaskByLabel(false)
		if err := tr.Forward(x, labels); err != nil {
			t.Fatal(err)
		}
		if err := inf.Forward(x, labels); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(tr.Norms(), inf.Norms()) || !slices.Equal(tr.Recon(), inf.Recon()) || !slices.Equal(tr.Pred(), inf.Pred()) {
			t.Errorf("%s: inference net differs from the training net", name)
		}
		pl, tp := inf.Plan(), tr.Plan()
		if pl.Bytes[graph.Grad] != 0 || pl.Bytes[graph.ActGrad] != 0 || len(inf.Grads) != 0 {
			t.Errorf("%s: inference net holds gradients: %+v", name, pl)
		}
		if pl.Total >= tp.Total {
			t.Errorf("%s: inference arena %d bytes, training %d", name, pl.Total, tp.Total)
		}
		if err := inf.Backward(); err == nil {
			t.Errorf("%s: Backward on an inference net: no error", name)
		}
		if a := testing.AllocsPerRun(5, func() { _ = inf.Forward(x, labels) }); a != 0 {
			t.Errorf("%s: inference allocates %.1f times per batch", name, a)
		}
	}
}

func TestNetRejectsNaNAndBadLabels(t *testing.T) {
	p, _ := NewParams(Presets()["tiny-deep"])
	p.Init(1)
	n, _ := NewNet(p, 2)
	x := make([]float32, n.Batch*n.InputLen())
	if err := n.Forward(x, []int{3, 11}); err == nil || !strings.Contains(err.Error(), "labels[1]") {
		t.Errorf("label 11: %v", err)
	}
	if err := n.Forward(x[1:], []int{3, 2}); err == nil || !strings.Contains(err.Error(), "x has") {
		t.Errorf("short x: %v", err)
	}
	if err := n.Forward(x, []int{3}); err == nil || !strings.Contains(err.Error(), "labels") {
		t.Errorf("one label for two images: %v", err)
	}
	x[5] = float32(math.NaN())
	if err := n.Forward(x, []int{3, 2}); err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Errorf("NaN input: %v", err)
	}
}

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
	// sabour-small's primary capsules train by Winograd (on avx2 and
	// avx512): what its forward keeps for the backward must survive the
	// shared plan and the margin-only backward in between.
	for _, name := range []string{"tiny-deep3", "tiny-sabour", "tiny-deep", "tiny-deep-uniform", "sabour-small"} {
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

// TestHostileConfigSizes: a config whose sizes would need terabytes (huge
// decoder layers, huge batches) is refused with an error before anything
// large is allocated, never with a panic.
func TestHostileConfigSizes(t *testing.T) {
	cfg, err := LoadConfig("tiny-deep")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Decoder = []int{math.MaxInt, 128}
	if _, err := NewParams(cfg); err == nil {
		t.Error("a decoder of MaxInt units was accepted")
	}
	cfg, _ = LoadConfig("tiny-deep")
	p, err := NewParams(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewNet(p, math.MaxInt); err == nil {
		t.Error("a batch of MaxInt was accepted")
	}
	t.Setenv(MemoryEnv, "")
	// Sabour's inference Net: tiny-deep's, whose intermediate convolution
	// outputs hold one chunk of images (convChunk), needs 10.5 GiB at
	// MaxBatch, under the limit of a machine of 14 GiB or more.
	cfg, _ = LoadConfig("sabour")
	if p, err = NewParams(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := NewInferenceNet(p, MaxBatch); err == nil || !strings.Contains(err.Error(), "more than the limit of") {
		t.Errorf("a batch of MaxBatch (946 GiB of activations): %v", err)
	}
}

// TestWinogradConvs checks which convolutions a Net runs by Winograd:
// sabour-small's primary capsules in a training Net where the
// implementation has a direct kernel for them, nothing in its inference
// Net or in the deep model.
func TestWinogradConvs(t *testing.T) {
	for _, c := range []struct {
		preset    string
		inference bool
		want      string
	}{{"sabour-small", false, "prim"}, {"sabour-small", true, ""}, {"tiny-deep3", false, ""}} {
		p, err := NewParams(Presets()[c.preset])
		if err != nil {
			t.Fatal(err)
		}
		var n *Net
		if c.inference {
			n, err = NewInferenceNet(p, 2)
		} else {
			n, err = NewNet(p, 2)
		}
		if err != nil {
			t.Fatal(err)
		}
		want := c.want
		if want != "" {
			sh, err := p.Layout.Convs[len(p.Layout.Convs)-1].At(2)
			if err != nil {
				t.Fatal(err)
			}
			if !sh.WinogradRuns() {
				want = "" // ref, neon, or CAPSTAN_WINOGRAD=off
			}
		}
		if got := strings.Join(n.WinogradConvs(), ","); got != want {
			t.Errorf("%s inference=%v: WinogradConvs %q, want %q", c.preset, c.inference, got, want)
		}
	}
}
