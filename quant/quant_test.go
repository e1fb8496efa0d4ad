package quant

import (
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/safetensors"
)

// newParams returns a freshly initialised model of a preset.
func newParams(t testing.TB, preset string, seed uint64) *capsnet.Params {
	t.Helper()
	p, err := capsnet.NewParams(capsnet.Presets()[preset])
	if err != nil {
		t.Fatal(err)
	}
	p.Init(seed)
	return p
}

// torch returns a parameter's values in PyTorch layout.
func torch(q *capsnet.Param) []float32 {
	w := make([]float32, q.Buf.Len())
	q.ToTorch(w)
	return w
}

// TestRoundTrip quantizes a model (with a zero channel, a channel of
// subnormal weights and non-zero priors), saves, loads and dequantizes it,
// for both granularities, and checks:
//   - the loaded model equals the saved one;
//   - each channel's scale is max|w|/127 over exactly that channel (1 for
//     the zero and subnormal channels), and the largest |q| of a non-zero
//     channel is 127;
//   - each dequantized weight is within s/2 + 2^-22·127·s of the original.
//     Tolerance: Quantize rounds w/s in float64 (|w/s − q| ≤ 1/2 exactly,
//     except the clamp to ±127, which costs at most 127·2^-24·s since
//     s = fl(m/127) is within a relative 2^-24 of m/127), and Dequantize
//     rounds q·s to float32 once (≤ 2^-24·|q·s| ≤ 2^-24·127·s); the sum is
//     below 2^-22·127·s;
//   - biases and priors are unchanged, bit for bit.
func TestRoundTrip(t *testing.T) {
	for _, g := range []Granularity{PerCapsule, PerBlock} {
		t.Run(g.String(), func(t *testing.T) {
			p := newParams(t, "tiny-deep3", 7)
			conv := p.List[0]
			w := torch(conv)
			per := len(w) / conv.TorchShape[0]
			clear(w[per : 2*per]) // channel 1: all zero
			for i := 2 * per; i < 3*per; i++ {
				w[i] = math.Float32frombits(uint32(i % 3)) // channel 2: subnormal (max|w|/127 underflows)
			}
			conv.FromTorch(w)
			for _, q := range p.List {
				if q.Role == capsnet.RolePrior {
					d := q.Buf.Data()
					for i := range d {
						d[i] = float32(i%7) - 3
					}
				}
			}
			m, err := Quantize(p, Options{Granularity: g})
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "m.int8.safetensors")
			if err := m.Save(path); err != nil {
				t.Fatal(err)
			}
			got, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if got.Granularity != g || got.Config.JSON() != p.Config.JSON() || len(got.Tensors) != len(m.Tensors) {
				t.Fatalf("loaded granularity %v, %d tensors; saved %v, %d", got.Granularity, len(got.Tensors), g, len(m.Tensors))
			}
			for i, a := range m.Tensors {
				b := got.Tensors[i]
				if a.Name != b.Name || a.Role != b.Role || a.ChannelDims != b.ChannelDims || !slices.Equal(a.Shape, b.Shape) ||
					!slices.Equal(a.Q, b.Q) || !slices.Equal(a.Scales, b.Scales) || !slices.Equal(a.Float, b.Float) {
					t.Fatalf("tensor %q changed through Save and Load", a.Name)
				}
			}
			dq, err := got.Dequantize()
			if err != nil {
				t.Fatal(err)
			}
			quantized := 0
			for k, q := range p.List {
				orig, back, qt := torch(q), torch(dq.List[k]), got.Tensors[k]
				if qt.Float != nil {
					if q.Role != capsnet.RoleConvBias && q.Role != capsnet.RolePrior && q.Role != capsnet.RoleFCBias {
						t.Errorf("%s: role %v left in float32", q.Name, q.Role)
					}
					if !slices.Equal(orig, back) {
						t.Errorf("%s: float tensor changed", q.Name)
					}
					continue
				}
				quantized++
				wantDims := 1
				if q.Role == capsnet.RoleVotes && g == PerBlock {
					wantDims = 2
				}
				if qt.ChannelDims != wantDims || len(qt.Scales) != safetensors.NumElements(q.TorchShape[:wantDims]) {
					t.Fatalf("%s: %d channel dims, %d scales", q.Name, qt.ChannelDims, len(qt.Scales))
				}
				per := len(orig) / len(qt.Scales)
				for c, s := range qt.Scales {
					var mx float32
					var mq int8
					for _, v := range orig[c*per : (c+1)*per] {
						mx = max(mx, float32(math.Abs(float64(v))))
					}
					for _, v := range qt.Q[c*per : (c+1)*per] {
						mq = max(mq, v, -v)
					}
					want := mx / 127
					if want == 0 {
						want = 1
					}
					if s != want || (mx/127 > 0 && mq != 127) || (mx/127 == 0 && mq != 0) {
						t.Fatalf("%s channel %d: scale %v, max|q| %d; max|w| %v wants scale %v", q.Name, c, s, mq, mx, want)
					}
					tol := float64(s)/2 + math.Ldexp(127*float64(s), -22)
					for i := c * per; i < (c+1)*per; i++ {
						if e := math.Abs(float64(orig[i]) - float64(back[i])); e > tol || (mx/127 == 0 && e > float64(mx)) {
							t.Fatalf("%s element %d: %v dequantized to %v (q %d, scale %v), error %g > %g", q.Name, i, orig[i], back[i], qt.Q[i], s, e, tol)
						}
					}
				}
			}
			if want := len(p.Config.Convs) + len(p.Config.Caps) + len(p.Config.Decoder) + 1; quantized != want {
				t.Errorf("%d tensors quantized, want %d", quantized, want)
			}
		})
	}
}

// TestQuantizeRefusesNonFinite: a NaN weight is an error naming the tensor.
func TestQuantizeRefusesNonFinite(t *testing.T) {
	p := newParams(t, "tiny-deep3", 1)
	q := p.Get(p.Config.Caps[0].Name + ".W")
	q.Buf.Data()[5] = float32(math.NaN())
	if _, err := Quantize(p, Options{}); err == nil || !strings.Contains(err.Error(), q.Name) {
		t.Errorf("NaN weight: %v", err)
	}
	if _, err := Quantize(p, Options{Granularity: 9}); err == nil {
		t.Error("unknown granularity accepted")
	}
}

// TestLoadRejectsHostileFiles: each damaged file is a one-line error
// naming the file and the tensor at fault (or what the file is instead).
func TestLoadRejectsHostileFiles(t *testing.T) {
	dir := t.TempDir()
	p := newParams(t, "tiny-deep3", 2)
	m, err := Quantize(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.safetensors")
	if err := m.Save(good); err != nil {
		t.Fatal(err)
	}
	st, err := safetensors.Read(good)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range hostileFiles(p, st) {
		path := filepath.Join(dir, tc.name+".safetensors")
		if err := tc.write(path); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		_, err := Load(path)
		t.Logf("%s: %v", tc.name, err)
		if err == nil {
			t.Errorf("%s: file accepted", tc.name)
			continue
		}
		for _, w := range append(tc.want, path) {
			if !strings.Contains(err.Error(), w) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: error %q: want one line containing %q", tc.name, err, w)
			}
		}
	}
	// And the reverse: the int8 model given where a float checkpoint is
	// expected.
	if _, err := capsnet.ReadCheckpoint(good); err == nil || !strings.Contains(err.Error(), good) || !strings.Contains(err.Error(), "int8 model") {
		t.Errorf("int8 model read as a checkpoint: %v", err)
	}
	if _, err := Load(good); err != nil {
		t.Errorf("the unedited file: %v", err)
	}
}

// hostileFile is one damaged file of TestLoadRejectsHostileFiles: write
// makes it at path, and Load's error must contain every string of want.
type hostileFile struct {
	name  string
	write func(path string) error
	want  []string
}

// hostileFiles returns the damaged variants of st, the int8 model of p.
func hostileFiles(p *capsnet.Params, st *safetensors.File) []hostileFile {
	conv := p.List[0].Name
	votes := p.Config.Caps[1].Name + ".W"
	fc := "dec.fc1.weight"
	edit := func(f func(ts map[string]safetensors.Tensor, meta map[string]string)) func(string) error {
		return func(path string) error {
			ts := map[string]safetensors.Tensor{}
			for k, v := range st.Tensors {
				v.Data, v.I8 = slices.Clone(v.Data), slices.Clone(v.I8)
				ts[k] = v
			}
			meta := map[string]string{}
			for k, v := range st.Metadata {
				meta[k] = v
			}
			f(ts, meta)
			return safetensors.Write(path, ts, meta)
		}
	}
	setScale := func(name string, i int, v float32) func(string) error {
		return edit(func(ts map[string]safetensors.Tensor, _ map[string]string) { ts[name+".scale"].Data[i] = v })
	}
	return []hostileFile{
		{"scale-count", edit(func(ts map[string]safetensors.Tensor, _ map[string]string) {
			s := ts[votes+".scale"]
			ts[votes+".scale"] = safetensors.Tensor{Shape: []int{s.Shape[0] + 1}, Data: append(s.Data, 1)}
		}), []string{votes + ".scale", "shape"}},
		{"nan-scale", setScale(conv, 1, float32(math.NaN())), []string{conv + ".scale", "NaN"}},
		{"inf-scale", setScale(fc, 0, float32(math.Inf(1))), []string{fc + ".scale", "Inf"}},
		{"zero-scale", setScale(votes, 0, 0), []string{votes + ".scale", "> 0"}},
		{"negative-scale", setScale(fc, 2, -0.5), []string{fc + ".scale", "> 0"}},
		{"i8-shape", edit(func(ts map[string]safetensors.Tensor, _ map[string]string) {
			w := ts[conv]
			ts[conv] = safetensors.Tensor{Shape: []int{w.Shape[0] - 1, w.Shape[1], w.Shape[2], w.Shape[3]}, I8: w.I8[:len(w.I8)/w.Shape[0]*(w.Shape[0]-1)]}
		}), []string{conv, "shape"}},
		{"i8-as-f32", edit(func(ts map[string]safetensors.Tensor, _ map[string]string) {
			w := ts[fc]
			ts[fc] = safetensors.Tensor{Shape: w.Shape, Data: make([]float32, len(w.I8))}
		}), []string{fc, "is F32, want I8"}},
		{"minus-128", edit(func(ts map[string]safetensors.Tensor, _ map[string]string) { ts[votes].I8[3] = -128 }), []string{votes, "-128"}},
		{"nan-bias", edit(func(ts map[string]safetensors.Tensor, _ map[string]string) {
			ts["dec.fc1.bias"].Data[0] = float32(math.NaN())
		}), []string{"dec.fc1.bias", "NaN"}},
		{"missing", edit(func(ts map[string]safetensors.Tensor, _ map[string]string) { delete(ts, fc+".scale") }), []string{fc + ".scale", "missing"}},
		{"extra", edit(func(ts map[string]safetensors.Tensor, _ map[string]string) {
			ts["dec.fc9.weight"] = safetensors.Tensor{Shape: []int{1}, I8: []int8{1}}
		}), []string{"dec.fc9.weight", "unexpected"}},
		{"format", edit(func(_ map[string]safetensors.Tensor, meta map[string]string) { meta["format"] = "capstan-int8/2" }), []string{"capstan-int8/2", "not an int8 model"}},
		{"no-format", edit(func(_ map[string]safetensors.Tensor, meta map[string]string) { delete(meta, "format") }), []string{"not an int8 model"}},
		{"granularity", edit(func(_ map[string]safetensors.Tensor, meta map[string]string) { meta["granularity"] = "row" }), []string{"granularity", "row"}},
		{"block-scales-for-capsule", edit(func(_ map[string]safetensors.Tensor, meta map[string]string) { meta["granularity"] = "block" }), []string{".W.scale", "shape"}},
		{"config", edit(func(_ map[string]safetensors.Tensor, meta map[string]string) { meta["config"] = `{"name":` }), []string{"metadata"}},
		{"float-checkpoint", func(path string) error { return p.SaveCheckpoint(path, nil) }, []string{"float checkpoint", "quant.Quantize"}},
		{"i8-byte-size", func(path string) error {
			// A header whose I8 tensor's data_offsets disagree with its shape.
			h := `{"__metadata__":{"format":"` + Format + `"},"` + conv + `":{"dtype":"I8","shape":[2,3],"data_offsets":[0,8]}}`
			raw := append(make([]byte, 8), h...)
			raw[0] = byte(len(h))
			return os.WriteFile(path, append(raw, make([]byte, 8)...), 0o644)
		}, []string{conv, "needs 6 bytes"}},
	}
}

// TestFileSize measures the int8 model file against the float checkpoint
// of freshly initialised deep and sabour-small models, both granularities:
// the int8 target is at most 0.27× (int8 weights are a quarter of the
// float bytes; scales, biases, priors and the header add the rest).
func TestFileSize(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 10-20 MB of files")
	}
	dir := t.TempDir()
	for _, preset := range []string{"deep", "sabour-small"} {
		p := newParams(t, preset, 1)
		fp := filepath.Join(dir, preset+".safetensors")
		if err := p.SaveCheckpoint(fp, nil); err != nil {
			t.Fatal(err)
		}
		fs, err := os.Stat(fp)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range []Granularity{PerCapsule, PerBlock} {
			m, err := Quantize(p, Options{Granularity: g})
			if err != nil {
				t.Fatal(err)
			}
			qp := filepath.Join(dir, preset+"-"+g.String()+".int8.safetensors")
			if err := m.Save(qp); err != nil {
				t.Fatal(err)
			}
			qs, err := os.Stat(qp)
			if err != nil {
				t.Fatal(err)
			}
			ratio := float64(qs.Size()) / float64(fs.Size())
			t.Logf("%s per-%s: float %d bytes, int8 %d bytes, ratio %.4f", preset, g, fs.Size(), qs.Size(), ratio)
			if ratio > 0.27 {
				t.Errorf("%s per-%s: int8 file %.4f× the float one, more than 0.27×", preset, g, ratio)
			}
		}
	}
}

// TestSource: the provenance of the float checkpoint survives Save and
// Load; a bad provenance key is refused on both sides, naming it.
func TestSource(t *testing.T) {
	p := newParams(t, "tiny-deep", 1)
	m, err := Quantize(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	m.Source = CopySource(map[string]string{"data": "mnist", "seed": "2", "epoch": "13", "command": "train …", "format": "capstan/1"}, "runs/x/checkpoint.safetensors")
	want := map[string]string{"data": "mnist", "seed": "2", "epoch": "13", "checkpoint": "runs/x/checkpoint.safetensors"}
	if !maps.Equal(m.Source, want) {
		t.Fatalf("CopySource: %v", m.Source)
	}
	path := filepath.Join(t.TempDir(), "m.int8.safetensors")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got.Source, want) {
		t.Errorf("loaded source %v, want %v", got.Source, want)
	}
	m.Source = map[string]string{"Bad Key": "x"}
	if err := m.Save(path); err == nil || !strings.Contains(err.Error(), "Bad Key") {
		t.Errorf("bad key saved: %v", err)
	}
	m.Source = nil
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	if got, err := Load(path); err != nil || got.Source != nil {
		t.Errorf("no source: %v, %v", got.Source, err)
	}
}
