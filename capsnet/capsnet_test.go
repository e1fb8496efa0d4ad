package capsnet

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet/safetensors"
	"github.com/capstan-ml/capstan/graph"
)

func TestPresetsValidate(t *testing.T) {
	ps := Presets()
	if len(ps) < 100 {
		t.Fatalf("only %d presets; the paper's grid alone has 96", len(ps))
	}
	for name, c := range ps {
		if err := c.Validate(); err != nil {
			t.Errorf("preset %s: %v", name, err)
		}
	}
	for name, c := range ps {
		full := c.Input[1] == 40
		if want := map[bool]string{true: "mean", false: ""}[full]; c.Loss.Recon != want {
			t.Errorf("preset %s: loss.recon %q, want %q (40×40 deep models: the paper's α on the MSE; others: spec §4's sum)", name, c.Loss.Recon, want)
		}
	}
	g, err := Sabour().Geometry()
	if err != nil {
		t.Fatal(err)
	}
	if g.PrimaryN != 1152 || g.ConvOut[1] != [3]int{256, 6, 6} {
		t.Errorf("Sabour geometry: %d primary capsules, prim output %v; want 1152, [256 6 6]", g.PrimaryN, g.ConvOut[1])
	}
	g, err = Deep(16, 8, 4, 10, false).Geometry()
	if err != nil {
		t.Fatal(err)
	}
	if g.PrimaryN != 16 || g.Kernel[4] != 7 || g.ConvOut[4] != [3]int{128, 1, 1} {
		t.Errorf("deep geometry: %d primary capsules, dw kernel %d, output %v", g.PrimaryN, g.Kernel[4], g.ConvOut[4])
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		json, want string
	}{
		{`{"name":"x"`, "unexpected EOF"},
		{`{"bogus":1}`, "unknown field"},
		{`{"input":[1,28,28],"convs":[{"name":"c","out":8,"kernel":40,"stride":1}]}`, "kernel 40 larger"},
		{`{"input":[1,28,28],"convs":[{"name":"c","out":10,"kernel":3,"stride":1}],"primary_dim":4}`, "primary_dim 4"},
		{`{"input":[1,28,28],"convs":[{"name":"c","out":8,"kernel":3,"stride":0}]}`, "stride"},
		{`{"input":[1,28,28],"convs":[{"name":"c","out":8,"kernel":3,"stride":1}],"primary_dim":4,"primary_squash":"sabour","caps":[{"name":"d","out":10,"dim":4,"routing":"magic","iters":3,"squash":"sabour"}]}`, "routing \"magic\""},
		{`{"input":[1,28,28],"convs":[{"name":"c","out":8,"kernel":3,"stride":1}],"primary_dim":4,"primary_squash":"sabour","caps":[{"name":"d","out":9,"dim":4,"routing":"rba","iters":3,"squash":"sabour"}],"classes":10}`, "last capsule layer has 9"},
		{`{"input":[1,28,28],"convs":[{"name":"c","out":8,"kernel":3,"stride":1}],"primary_dim":4,"primary_squash":"sabour","caps":[{"name":"d","out":10,"dim":4,"routing":"rba","iters":3,"squash":"sabour","init_std":-1}],"classes":10}`, "init_std -1"},
		{`{"input":[1,28,28],"convs":[{"name":"c","out":8,"kernel":3,"stride":1}],"primary_dim":4,"primary_squash":"sabour","caps":[{"name":"d","out":10,"dim":4,"routing":"rba","iters":3,"squash":"sabour"}],"classes":10,"loss":{"m_plus":0.9,"m_minus":0.1,"lambda":0.5,"alpha":0.4,"recon":"median"}}`, "loss.recon: \"median\""},
	} {
		_, err := ParseConfig([]byte(tc.json), "test.json")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "test.json") {
			t.Errorf("config %s: error %v, want one naming test.json and containing %q", tc.json, err, tc.want)
		}
	}
	if _, err := LoadConfig("no-such-model"); err == nil || !strings.Contains(err.Error(), "no-such-model") {
		t.Errorf("unknown preset: %v", err)
	}
}

// TestInitStd checks that Init draws each layer's votes matrix with its
// init_std (DefaultInitStd when unset) and that the seed fixes the draw.
func TestInitStd(t *testing.T) {
	cfg := Presets()["tiny-deep3"]
	cfg.Caps[0].InitStd = 0.7
	cfg.Caps[1].InitStd = 0 // the default
	if cfg.Caps[2].InitStd == 0 {
		t.Fatal("tiny-deep3 preset: no init_std (deep presets set DeepInitStd)")
	}
	p, err := NewParams(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.Init(3)
	for l, c := range cfg.Caps {
		w := p.Get(c.Name + ".W").Buf.Data()
		ss := 0.0
		for _, v := range w {
			ss += float64(v) * float64(v)
		}
		got, want := math.Sqrt(ss/float64(len(w))), c.InitStd
		if want == 0 {
			want = DefaultInitStd
		}
		if l == 2 && want != DeepInitStd(cfg.Caps[1].Dim) {
			t.Errorf("%s: init_std %v, want DeepInitStd %v", c.Name, want, DeepInitStd(cfg.Caps[1].Dim))
		}
		// the sample std of n normals is within 5/sqrt(2n) of σ (relative) with overwhelming probability
		if math.Abs(got/want-1) > 5/math.Sqrt(2*float64(len(w))) {
			t.Errorf("%s: std %.4f over %d values, want %.4f", c.Name, got, len(w), want)
		}
	}
	q, _ := NewParams(cfg)
	q.Init(3)
	if !slices.Equal(p.Get("caps.0.W").Buf.Data(), q.Get("caps.0.W").Buf.Data()) {
		t.Error("same seed, different votes matrices")
	}
}

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

func TestConfigJSONRoundTrip(t *testing.T) {
	for _, name := range []string{"sabour", "deep", "tiny-deep3"} {
		c := Presets()[name]
		back, err := ParseConfig([]byte(c.JSON()), name)
		if err != nil {
			t.Fatal(err)
		}
		if back.JSON() != c.JSON() {
			t.Errorf("%s: JSON round trip changed the config", name)
		}
	}
}

func TestCheckpointRoundTripAndLayouts(t *testing.T) {
	p, err := NewParams(Presets()["tiny-deep3"])
	if err != nil {
		t.Fatal(err)
	}
	p.Init(3)
	// Make the (zero-initialised) priors non-trivial so the transpose is tested.
	for _, q := range p.List {
		if q.kind == prior {
			for i := range q.Buf.Data() {
				q.Buf.Data()[i] = float32(i)
			}
		}
	}
	path := filepath.Join(t.TempDir(), "ck.safetensors")
	if err := p.SaveCheckpoint(path, map[string]string{"epoch": "7"}); err != nil {
		t.Fatal(err)
	}
	ck, err := ReadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	if ck.Meta["epoch"] != "7" || ck.Meta["format"] != CheckpointFormat || !ck.HasConfig() || ck.Config.JSON() != p.Config.JSON() {
		t.Errorf("metadata %v, config %s", ck.Meta, ck.Config.Name)
	}
	q, err := ck.Params(nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range p.List {
		b := q.List[i]
		for k, v := range a.Buf.Data() {
			if b.Buf.Data()[k] != v {
				t.Fatalf("%s[%d]: %v after round trip, want %v", a.Name, k, b.Buf.Data()[k], v)
			}
		}
	}
	// The torch layout of a prior is (n_in, n_out): element (i, j) = internal (j, i).
	ts := p.TorchTensors()
	pr := p.Get("caps.0.b")
	nIn, nOut := pr.TorchShape[0], pr.TorchShape[1]
	if ts["caps.0.b"].Data[1*nOut+2] != pr.Buf.Data()[2*nIn+1] {
		t.Errorf("prior layout conversion wrong")
	}
}

func TestCheckpointBadFiles(t *testing.T) {
	dir := t.TempDir()
	p, _ := NewParams(Presets()["tiny-deep"])
	p.Init(1)
	good := filepath.Join(dir, "good.safetensors")
	if err := p.SaveCheckpoint(good, nil); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(good)
	write := func(name string, b []byte) string {
		path := filepath.Join(dir, name)
		os.WriteFile(path, b, 0o644)
		return path
	}
	for _, tc := range []struct {
		path, want string
	}{
		{write("trunc.safetensors", raw[:len(raw)-100]), "truncated"},
		{write("short.safetensors", raw[:5]), "truncated"},
		{write("hdr.safetensors", raw[:40]), "truncated"},
		{write("junk.safetensors", []byte("\x10\x00\x00\x00\x00\x00\x00\x00{not json at all")), "corrupt JSON"},
		{write("huge.safetensors", []byte("\xff\xff\xff\xff\xff\xff\xff\xff")), "header length"},
		{filepath.Join(dir, "missing.safetensors"), "no such file"},
	} {
		_, err := ReadCheckpoint(tc.path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), filepath.Base(tc.path)) {
			t.Errorf("%s: error %v, want one naming the file and containing %q", filepath.Base(tc.path), err, tc.want)
		}
	}
	// The metadata's config wins over a hint; without metadata the hint is
	// needed.
	ck, err := ReadCheckpoint(good)
	if err != nil {
		t.Fatal(err)
	}
	other := Presets()["tiny-deep3"]
	if q, err := ck.Params(&other); err != nil || q.Config.Name != "tiny-deep" {
		t.Fatalf("metadata config must win over the hint: %v", err)
	}
	ts := p.TorchTensors()
	bare := filepath.Join(dir, "bare.safetensors")
	if err := safetensors.Write(bare, ts, nil); err != nil {
		t.Fatal(err)
	}
	ckb, err := ReadCheckpoint(bare)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ckb.Params(nil); err == nil || !strings.Contains(err.Error(), "no model config") {
		t.Errorf("state dict without config and no hint: %v", err)
	}
	if _, err := ckb.Params(&other); err == nil || !strings.Contains(err.Error(), "model tiny-deep3 needs") {
		t.Errorf("state dict of tiny-deep loaded as tiny-deep3: %v", err)
	}
	// Load into existing parameters: same configuration only.
	q3, _ := NewParams(other)
	if err := q3.Load(ck); err == nil || !strings.Contains(err.Error(), "holds model tiny-deep, not tiny-deep3") {
		t.Errorf("Load into another model: %v", err)
	}
	changed := p.Config
	changed.Loss.Recon = "mean"
	qc, _ := NewParams(changed)
	if err := qc.Load(ck); err == nil || !strings.Contains(err.Error(), "another configuration of model tiny-deep") {
		t.Errorf("Load into a changed configuration: %v", err)
	}
	// A checkpoint holding NaN, and one with a tensor missing: errors, and
	// Load leaves the parameters unchanged.
	q, _ := NewParams(p.Config)
	ts["caps.0.W"].Data[3] = float32(math.NaN())
	nan := filepath.Join(dir, "nan.safetensors")
	safetensors.Write(nan, ts, map[string]string{"config": p.Config.JSON()})
	if ck, err := ReadCheckpoint(nan); err != nil {
		t.Fatal(err)
	} else if err := q.Load(ck); err == nil || !strings.Contains(err.Error(), "caps.0.W") {
		t.Errorf("NaN weights: %v", err)
	}
	for _, v := range q.List[0].Buf.Data() {
		if v != 0 {
			t.Fatal("a failed Load changed the parameters")
		}
	}
	ts["caps.0.W"].Data[3] = 0
	delete(ts, "dec.fc1.bias")
	miss := filepath.Join(dir, "miss.safetensors")
	safetensors.Write(miss, ts, map[string]string{"config": p.Config.JSON()})
	if ck, err := ReadCheckpoint(miss); err != nil {
		t.Fatal(err)
	} else if _, err := ck.Params(nil); err == nil || !strings.Contains(err.Error(), "dec.fc1.bias") {
		t.Errorf("missing tensor: %v", err)
	}
}

func TestNetNoAllocs(t *testing.T) {
	p, err := NewParams(Presets()["tiny-deep3"])
	if err != nil {
		t.Fatal(err)
	}
	p.Init(1)
	n, err := NewNet(p, 3)
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, n.Batch*n.InputLen())
	for i := range x {
		x[i] = float32(i%7) / 7
	}
	labels := []int{1, 5, 9}
	step := func() {
		if err := n.Forward(x, labels); err != nil {
			t.Fatal(err)
		}
		if err := n.Backward(); err != nil {
			t.Fatal(err)
		}
	}
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

// TestDeepInitReachesEveryLayer guards the deep presets' initialisation
// (DeepInitStd): at initialisation the capsules of every layer must keep a
// usable length and every votes matrix must get a gradient well above the
// weight decay's pull (1e-6·|W|) and Adam's ε (1e-8). With Sabour's 0.05
// the deep model's top capsules start near 5e-7 long and its gradients
// near 1e-9, and training never leaves chance accuracy: the check must
// fail on that initialisation.
func TestDeepInitReachesEveryLayer(t *testing.T) {
	for _, name := range []string{"deep", "deep-n32-d16-L4"} {
		cfg, err := LoadConfig(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, msg := range starvedLayers(t, cfg) {
			t.Errorf("%s: %s", name, msg)
		}
		for l := range cfg.Caps {
			cfg.Caps[l].InitStd = 0 // DefaultInitStd, 0.05
		}
		if len(starvedLayers(t, cfg)) == 0 {
			t.Errorf("%s with init_std 0.05: no starved layer found; the check cannot fail", name)
		}
	}
}

// starvedLayers runs one forward and backward pass at initialisation on two
// synthetic 40×40 images and describes every capsule layer whose capsules
// or votes-matrix gradients are too small to train.
func starvedLayers(t *testing.T, cfg Config) []string {
	t.Helper()
	p, err := NewParams(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.Init(1)
	n, err := NewNet(p, 2)
	if err != nil {
		t.Fatal(err)
	}
	// two "digits": a bright disc and a bar
	x := make([]float32, n.Batch*n.InputLen())
	for y := 0; y < 40; y++ {
		for c := 0; c < 40; c++ {
			if (y-20)*(y-20)+(c-18)*(c-18) < 64 {
				x[y*40+c] = 1
			}
			if c >= 18 && c < 22 && y > 8 && y < 32 {
				x[1600+y*40+c] = 1
			}
		}
	}
	if err := n.Forward(x, []int{0, 1}); err != nil {
		t.Fatal(err)
	}
	if err := n.Backward(); err != nil {
		t.Fatal(err)
	}
	var out []string
	for l := 1; l < len(n.Layers()); l++ {
		v, vs, err := n.Capsules(l)
		if err != nil {
			t.Fatal(err)
		}
		maxLen := 0.0
		for s := 0; s < 2; s++ {
			for j := 0; j < vs.N; j++ {
				q := 0.0
				for k := 0; k < vs.D; k++ {
					e := float64(vs.At(v, s, j, k))
					q += e * e
				}
				maxLen = math.Max(maxLen, math.Sqrt(q))
			}
		}
		W, _, _ := n.Votes(l)
		dW, _, err := n.VotesGrad(l)
		if err != nil {
			t.Fatal(err)
		}
		var w, g float64
		for i, e := range W {
			w += math.Abs(float64(e))
			g += math.Abs(float64(dW[i]))
		}
		w /= float64(len(W))
		g /= float64(len(W))
		// thresholds: 10× the weight decay's pull and 100× Adam's ε; the
		// deep preset sits at ~90× and ~3000×, Sabour's 0.05 at ~0.03×
		// and ~0.1×.
		if maxLen < 1e-3 || g < 10*1e-6*w || g < 100*1e-8 {
			out = append(out, fmt.Sprintf("%s at init: longest capsule %.3g, mean |dW| %.3g, mean |W| %.3g: the signal does not reach this layer", n.Layers()[l].Name, maxLen, g, w))
		}
	}
	return out
}
