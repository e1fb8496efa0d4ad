package capsnet

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
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
		if name == "deep-sum-loss" { // the variant with the paper's literal loss
			if c.Loss.Recon != "sum" {
				t.Errorf("preset deep-sum-loss: loss.recon %q, want sum", c.Loss.Recon)
			}
			continue
		}
		if want := map[bool]string{true: "mean", false: ""}[full]; c.Loss.Recon != want {
			t.Errorf("preset %s: loss.recon %q, want %q (40×40 deep models: the paper's α on the MSE; others: docs/semantics.md §4's sum)", name, c.Loss.Recon, want)
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
		{`{"input":[1,28,28],"convs":[{"name":"c","out":8,"kernel":3,"stride":1}],"primary_dim":4,"primary_squash":"sabour","caps":[{"name":"d","out":10,"dim":4,"routing":"rba","iters":1000000000,"squash":"sabour"}],"classes":10}`, "iters 1000000000 is not between 0 and 1000"},
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

// TestHostileGeometry: sizes near MaxInt in every field (input, kernel,
// stride, pad, channels, capsules, decoder) are errors naming the field,
// never a wrapped product or a panic; sizes that pass are products Geometry
// checked.
func TestHostileGeometry(t *testing.T) {
	big := math.MaxInt
	// wide: a size that passes alone (maxDim) but whose product with
	// another overflows maxElems; 2^30 is past maxDim on a 32-bit GOARCH,
	// and 2^16 fits a first layer's product there but not a second's.
	wide := 1 << 30
	if strconv.IntSize == 32 {
		wide = 1 << 16
	}
	for _, tc := range []struct {
		name string
		edit func(c *Config)
		want string
	}{
		{"input", func(c *Config) { c.Input = [3]int{big, 1, 1} }, "input"},
		{"input-product", func(c *Config) { c.Input = [3]int{1 << 20, 1 << 20, 1 << 20} }, "input"},
		{"pad", func(c *Config) { c.Convs[0].Pad = big }, "convs[0]"},
		{"pad-product", func(c *Config) { c.Convs[0].Pad = 1 << 29 }, "convs[0]"},
		{"kernel", func(c *Config) { c.Convs[0].Kernel = big }, "convs[0]"},
		{"stride", func(c *Config) { c.Convs[0].Stride = big }, "convs[0]"},
		{"out", func(c *Config) { c.Convs[0].Out = big }, "convs[0]"},
		{"out-weights", func(c *Config) { c.Convs[0].Out, c.Convs[1].Out = wide, wide }, "convs[1]"},
		{"caps-out", func(c *Config) { c.Caps[0].Out = big }, "caps[0]"},
		{"caps-dim", func(c *Config) { c.Caps[1].Dim = wide; c.Caps[0].Dim = wide }, "caps[1]"},
		{"iters", func(c *Config) { c.Caps[0].Iters = big }, "caps[0]"},
		{"iters-negative", func(c *Config) { c.Caps[0].Iters = -1 }, "caps[0]"},
		{"decoder", func(c *Config) { c.Decoder = []int{big} }, "decoder[0]"},
		{"decoder-product", func(c *Config) { c.Decoder = []int{wide, wide} }, "decoder layer 2"},
		{"primary-dim", func(c *Config) { c.PrimaryDim = big }, "primary_dim"},
		{"classes", func(c *Config) { c.Classes = big }, "classes"},
	} {
		c := Presets()["tiny-deep"]
		tc.edit(&c)
		_, err := c.ParamCount()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %s", tc.name, err, tc.want)
		}
		if _, err := NewParams(c); err == nil {
			t.Errorf("%s: NewParams accepted the config", tc.name)
		}
	}
}

// TestParamCount: the count from the config is what NewParams declares.
func TestParamCount(t *testing.T) {
	for _, name := range []string{"sabour", "tiny-deep", "tiny-deep-uniform", "tiny-deep3", "deep", "deep-n16-d8-L1"} {
		c := Presets()[name]
		n, err := c.ParamCount()
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewParams(c)
		if err != nil {
			t.Fatal(err)
		}
		if int64(p.Count()) != n {
			t.Errorf("%s: ParamCount %d, NewParams declares %d", name, n, p.Count())
		}
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

// TestConfigFileTooLarge: a config file over MaxConfigBytes is refused
// without reading it whole, naming the file.
func TestConfigFileTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(path, bytes.Repeat([]byte(" "), MaxConfigBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "not a model config") {
		t.Fatalf("LoadConfig of %d bytes: %v", MaxConfigBytes+1, err)
	}
}

// TestDuplicateLayerNames: two layers whose parameters would share a name
// are refused, naming both (a fuzz finding: "convs.2" twice reached the
// graph as "buffer declared twice").
func TestDuplicateLayerNames(t *testing.T) {
	for _, tc := range []struct {
		edit func(c *Config)
		want string
	}{
		{func(c *Config) { c.Convs[1].Name = c.Convs[0].Name }, `convs[1] (convs.0): parameter "convs.0.weight" is also convs[0] (convs.0)'s`},
		{func(c *Config) { c.Caps[1].Name = c.Caps[0].Name }, `caps[1] (caps.0): parameter "caps.0.W" is also caps[0] (caps.0)'s`},
		{func(c *Config) { c.Convs[0].Name = "dec.fc1" }, `parameter "dec.fc1.weight" is also decoder layer 1's`},
	} {
		c := Presets()["tiny-deep"]
		c.Convs = append([]ConvConfig(nil), c.Convs...)
		c.Caps = append([]CapsConfig(nil), c.Caps...)
		tc.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate: %v, want %q", err, tc.want)
		}
	}
}

// TestUniformGridPresets: every grid preset deep-nN-dD-LL (routing by
// agreement) has a twin deep-nN-dD-LL-KIND per other routing kind (the
// uniform baseline, the self-attention kinds) of the same architecture
// that differs only in its routing kind.
func TestUniformGridPresets(t *testing.T) {
	p := Presets()
	twins := 0
	for name, c := range p {
		if !strings.HasPrefix(name, "deep-n") || c.Caps[0].Routing != DefaultRouting().Name {
			continue
		}
		for _, kind := range RoutingNames()[1:] {
			u, ok := p[name+"-"+kind]
			if !ok {
				t.Errorf("%s: no preset %s-%s", name, name, kind)
				continue
			}
			twins++
			if len(u.Caps) != len(c.Caps) {
				t.Fatalf("%s-%s: %d capsule layers, %s %d", name, kind, len(u.Caps), name, len(c.Caps))
			}
			for i := range c.Caps {
				if u.Caps[i].Routing != kind || c.Caps[i].Routing != "rba" {
					t.Errorf("%s layer %d: routing %q, its twin %q", name, i, c.Caps[i].Routing, u.Caps[i].Routing)
				}
				uc := u.Caps[i]
				uc.Routing = c.Caps[i].Routing
				if !reflect.DeepEqual(uc, c.Caps[i]) {
					t.Errorf("%s layer %d: the %s twin differs in more than routing: %+v vs %+v", name, i, kind, u.Caps[i], c.Caps[i])
				}
			}
		}
	}
	if want := 96 * (len(RoutingKinds) - 1); twins != want {
		t.Errorf("%d grid twins, want %d (8 depths × 3 capsule counts × 4 dimensions × %d kinds)", twins, want, len(RoutingKinds)-1)
	}
}

// TestGridCoords: the grid presets and their routing twins give their n,
// d and L; other names, and grid-like names off the grid, give none.
func TestGridCoords(t *testing.T) {
	for _, c := range []struct {
		name    string
		n, d, L int
		ok      bool
	}{
		{"deep-n16-d8-L1", 16, 8, 1, true},
		{"deep-n64-d32-L6-uniform", 64, 32, 6, true},
		{"deep-n32-d16-L8-self-attention", 32, 16, 8, true},
		{"deep-n16-d8-L9", 0, 0, 0, false},
		{"deep-n16-d8-L1-nonsense", 0, 0, 0, false},
		{"deep", 0, 0, 0, false},
		{"", 0, 0, 0, false},
	} {
		n, d, L, ok := GridCoords(c.name)
		if n != c.n || d != c.d || L != c.L || ok != c.ok {
			t.Errorf("GridCoords(%q) = %d, %d, %d, %v; want %d, %d, %d, %v", c.name, n, d, L, ok, c.n, c.d, c.L, c.ok)
		}
	}
	for name := range Presets() {
		if _, _, _, ok := GridCoords(name); ok != strings.HasPrefix(name, "deep-n") {
			t.Errorf("preset %s: GridCoords ok %v", name, ok)
		}
	}
}
