package quant

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/safetensors"
)

// calibImages returns n deterministic images for model p.
func calibImages(p *capsnet.Params, n int) []float32 {
	inLen := safetensors.NumElements(p.Config.Input[:])
	x := make([]float32, n*inLen)
	for i := range x {
		x[i] = float32((i*13)%29) / 29
	}
	return x
}

// observed runs each image alone through a batch-1 Net masked by the
// predicted class and returns, per int8 GEMM input, every |x| seen.
func observed(t *testing.T, p *capsnet.Params, images []float32) [][]float64 {
	t.Helper()
	ins := gemmInputs(p.Layout)
	n, err := capsnet.NewNet(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	n.SetMaskByLabel(false)
	inLen := n.InputLen()
	out := make([][]float64, len(ins))
	for s := 0; s < len(images); s += inLen {
		if err := n.Forward(images[s:s+inLen], nil); err != nil {
			t.Fatal(err)
		}
		for k, in := range ins {
			x, err := in.get(n)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range x {
				out[k] = append(out[k], math.Abs(float64(v)))
			}
		}
	}
	return out
}

// TestCalibrate: over 5 images in batches of 2 (and a remainder of 1),
// MinMax gives each GEMM input max|x|/127 of what each image alone shows,
// Percentile 100 gives the same scales, and Percentile 50 gives the median
// of |x| within the histogram's resolution (max|x|/histBins); the inputs
// are the quantized weights' (conv, votes, FC) in order.
func TestCalibrate(t *testing.T) {
	p := newParams(t, "tiny-deep3", 3)
	images := calibImages(p, 5)
	obs := observed(t, p, images)
	mm, err := Calibrate(p, images, CalibOptions{Method: MinMax, Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	m, err := Quantize(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, q := range m.Tensors {
		if q.Float == nil {
			names = append(names, q.Name)
		}
	}
	if mm.Images != 5 || len(mm.Scales) != len(names) {
		t.Fatalf("%d images, %d scales; want 5, %d", mm.Images, len(mm.Scales), len(names))
	}
	// Batched and single-image forwards may round differently in the last
	// bits (SGEMM blocking): relative 1e-5.
	for k, s := range mm.Scales {
		want := slices.Max(obs[k]) / 127
		if s.Name != names[k] || math.Abs(float64(s.Scale)-want) > 1e-5*want {
			t.Errorf("minmax %s: scale %v, want %s %v", s.Name, s.Scale, names[k], want)
		}
	}
	p100, err := Calibrate(p, images, CalibOptions{Method: Percentile, Percentile: 100, Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p100.Scales, mm.Scales) {
		t.Errorf("percentile 100: %v, minmax %v", p100.Scales, mm.Scales)
	}
	p50, err := Calibrate(p, images, CalibOptions{Method: Percentile, Percentile: 50, Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	for k, s := range p50.Scales {
		v := slices.Clone(obs[k])
		slices.Sort(v)
		median := v[int(math.Ceil(0.5*float64(len(v))))-1]
		hi := v[len(v)-1]
		if got := float64(s.Scale) * 127; got < median-1e-5*hi || got > median+hi/histBins+1e-5*hi {
			t.Errorf("percentile 50 %s: range %v, median of |x| %v (max %v)", s.Name, got, median, hi)
		}
	}
	for _, bad := range []CalibOptions{{Method: Percentile, Percentile: 101}, {Method: Percentile, Percentile: -1}, {Method: 7}, {Batch: -1}} {
		if _, err := Calibrate(p, images, bad); err == nil {
			t.Errorf("options %+v accepted", bad)
		}
	}
	if _, err := Calibrate(p, images[:len(images)-1], CalibOptions{}); err == nil {
		t.Error("a partial image accepted")
	}
}

// TestCalibratedRoundTrip: a calibrated model saves and loads with its
// activation scales and settings, and damaged activation entries are
// one-line errors naming the file and the tensor or entry.
func TestCalibratedRoundTrip(t *testing.T) {
	dir := t.TempDir()
	p := newParams(t, "tiny-deep3", 4)
	m, err := Quantize(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m.Calibration, err = Calibrate(p, calibImages(p, 3), CalibOptions{Method: Percentile, Percentile: 99.9}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "cal.safetensors")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	c, g := m.Calibration, got.Calibration
	if g == nil || g.Method != c.Method || g.Percentile != c.Percentile || g.Images != c.Images || !slices.Equal(g.Scales, c.Scales) {
		t.Fatalf("calibration %+v loaded as %+v", c, g)
	}
	st, err := safetensors.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	act := c.Scales[1].Name + actSuffix
	for _, tc := range []struct {
		name string
		f    func(ts map[string]safetensors.Tensor, meta map[string]string)
		want string
	}{
		{"nan", func(ts map[string]safetensors.Tensor, _ map[string]string) {
			ts[act] = safetensors.Tensor{Shape: []int{}, Data: []float32{float32(math.NaN())}}
		}, act},
		{"zero", func(ts map[string]safetensors.Tensor, _ map[string]string) {
			ts[act] = safetensors.Tensor{Shape: []int{}, Data: []float32{0}}
		}, act},
		{"missing", func(ts map[string]safetensors.Tensor, _ map[string]string) { delete(ts, act) }, act},
		{"uncalibrated", func(_ map[string]safetensors.Tensor, meta map[string]string) {
			delete(meta, "activation_method")
			delete(meta, "activation_images")
			delete(meta, "activation_percentile")
		}, actSuffix},
		{"percentile", func(_ map[string]safetensors.Tensor, meta map[string]string) { meta["activation_percentile"] = "120" }, "activation_percentile"},
		{"method", func(_ map[string]safetensors.Tensor, meta map[string]string) { meta["activation_method"] = "kl" }, "kl"},
		{"images", func(_ map[string]safetensors.Tensor, meta map[string]string) { meta["activation_images"] = "0" }, "activation_images"},
	} {
		ts := map[string]safetensors.Tensor{}
		for k, v := range st.Tensors {
			ts[k] = v
		}
		meta := map[string]string{}
		for k, v := range st.Metadata {
			meta[k] = v
		}
		tc.f(ts, meta)
		bad := filepath.Join(dir, tc.name+".safetensors")
		if err := safetensors.Write(bad, ts, meta); err != nil {
			t.Fatal(err)
		}
		_, err := Load(bad)
		if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line naming %s and %q", tc.name, err, bad, tc.want)
		}
	}
	m.Calibration.Scales = m.Calibration.Scales[1:]
	if err := m.Save(filepath.Join(dir, "short.safetensors")); err == nil {
		t.Error("a calibration of another model saved")
	}
}
