package capsnet

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet/safetensors"
)

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
	// A Checkpoint built by hand whose data does not fill its shape: an
	// error, not a panic in the layout conversion.
	short := &Checkpoint{Path: "by-hand", Tensors: p.TorchTensors(), Meta: map[string]string{}}
	w := short.Tensors["caps.0.W"]
	w.Data = w.Data[:len(w.Data)-1]
	short.Tensors["caps.0.W"] = w
	if err := q.Load(short); err == nil || !strings.Contains(err.Error(), `by-hand: tensor "caps.0.W" has`) {
		t.Errorf("short tensor data: %v", err)
	}
}

// TestInitKeras checks the Keras initialisers of the votes matrices with
// Keras' fan rules for a 4-D (n_out, n_in, d_in, d_out) weight: he_normal
// has std sqrt(2/fan_in) and no value beyond the truncation, glorot_uniform
// stays within ±sqrt(6/(fan_in+fan_out)) with the uniform's std limit/√3;
// an unknown name is refused by Validate.
func TestInitKeras(t *testing.T) {
	cfg := Deep(16, 8, 3, 3, false)
	cfg.Caps[0].Init, cfg.Caps[1].Init = "he_normal", "glorot_uniform"
	p, err := NewParams(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.Init(5)
	for l, c := range cfg.Caps[:2] {
		w := p.Get(c.Name + ".W").Buf.Data()
		nIn := 16 // the deep model's primary and intermediate layers have n = 16 capsules of d = 8
		fanIn, fanOut := float64(8*c.Out*nIn), float64(c.Dim*c.Out*nIn)
		ss, mx := 0.0, 0.0
		for _, v := range w {
			ss += float64(v) * float64(v)
			mx = max(mx, math.Abs(float64(v)))
		}
		std := math.Sqrt(ss / float64(len(w)))
		want, bound := math.Sqrt(2/fanIn), 2*math.Sqrt(2/fanIn)/0.87962566103423978
		if l == 1 {
			bound = math.Sqrt(6 / (fanIn + fanOut))
			want = bound / math.Sqrt(3)
		}
		// n = 2048 values: the sample std is within 5/sqrt(2n) of its target
		if math.Abs(std/want-1) > 5/math.Sqrt(2*float64(len(w))) || mx > bound {
			t.Errorf("%s (%s): std %.5f, max |w| %.5f; want std %.5f, max ≤ %.5f", c.Name, c.Init, std, mx, want, bound)
		}
	}
	cfg.Caps[2].Init = "lecun"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "init") {
		t.Errorf("unknown init: %v", err)
	}
}

// TestReadCheckpointRefusesInt8: an int8 model (format capstan-int8/…) is
// refused from its header with one line naming the file and what it is,
// and an I8 tensor where a float parameter is expected names the tensor.
func TestReadCheckpointRefusesInt8(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.int8.safetensors")
	ts := map[string]safetensors.Tensor{"conv1.weight": {Shape: []int{2}, I8: []int8{1, -1}}}
	if err := safetensors.Write(path, ts, map[string]string{"format": Int8FormatPrefix + "1"}); err != nil {
		t.Fatal(err)
	}
	_, err := ReadCheckpoint(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "int8 model") || strings.Contains(err.Error(), "\n") {
		t.Errorf("int8 model as a checkpoint: %v", err)
	}
	p, err := NewParams(Presets()["tiny-deep3"])
	if err != nil {
		t.Fatal(err)
	}
	state := p.TorchTensors()
	q := p.List[0]
	state[q.Name] = safetensors.Tensor{Shape: q.TorchShape, I8: make([]int8, q.Buf.Len())}
	float := filepath.Join(dir, "f.safetensors")
	if err := safetensors.Write(float, state, nil); err != nil {
		t.Fatal(err)
	}
	ck, err := ReadCheckpoint(float)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Load(ck); err == nil || !strings.Contains(err.Error(), float) || !strings.Contains(err.Error(), q.Name) || !strings.Contains(err.Error(), "I8") {
		t.Errorf("I8 tensor in a float checkpoint: %v", err)
	}
}
