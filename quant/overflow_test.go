package quant

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet/safetensors"
)

// TestLoadRefusesOverflowingScales: finite scales whose products the
// kernels form overflow float32 (a weight scale times 127, weight scale
// times activation scale times the int32 accumulators' range, an
// activation scale times 127 or its inverse) are refused at load, one
// line naming the tensor.
func TestLoadRefusesOverflowingScales(t *testing.T) {
	dir := t.TempDir()
	p := newParams(t, "tiny-deep3", 2)
	m := calibrated(t, p, digitImages(p, 4, 1), PerCapsule)
	good := filepath.Join(dir, "good.safetensors")
	if err := m.Save(good); err != nil {
		t.Fatal(err)
	}
	st, err := safetensors.Read(good)
	if err != nil {
		t.Fatal(err)
	}
	conv, votes, fc := p.List[0].Name, p.Config.Caps[1].Name+".W", "dec.fc2.weight"
	act := st.Tensors[votes+actSuffix].Data[0]
	for _, tc := range []struct {
		name, tensor string
		i            int
		v            float32
	}{
		{"weight-scale-times-127", conv + scaleSuffix, 1, 3e37},
		{"weight-times-act-times-acc", votes + scaleSuffix, 0, 2 * (math.MaxFloat32 / float32(1<<31) / act)},
		{"act-scale-times-127", fc + actSuffix, 0, 1e37},
		{"act-scale-inverse", conv + actSuffix, 0, 1e-39},
	} {
		path := filepath.Join(dir, tc.name+".safetensors")
		ts := map[string]safetensors.Tensor{}
		for k, v := range st.Tensors {
			v.Data = append([]float32(nil), v.Data...)
			ts[k] = v
		}
		ts[tc.tensor].Data[tc.i] = tc.v
		if err := safetensors.Write(path, ts, st.Metadata); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		t.Logf("%s: %v", tc.name, err)
		if err == nil || !strings.Contains(err.Error(), tc.tensor) || !strings.Contains(err.Error(), path) ||
			!strings.Contains(err.Error(), "overflow") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s (%s = %v): error %v, want one line naming the file and tensor and saying overflow", tc.name, tc.tensor, tc.v, err)
		}
	}
	if _, err := Load(good); err != nil {
		t.Errorf("the unedited file: %v", err)
	}
	// Save refuses what Load would.
	m.Tensors[0].Scales[0] = 3e37
	if err := m.Save(filepath.Join(dir, "saved.safetensors")); err == nil || !strings.Contains(err.Error(), m.Tensors[0].Name+scaleSuffix) {
		t.Errorf("Save of an overflowing scale: %v", err)
	}
}

// TestNetRefusesNonFiniteNorms: scales that pass the load checks but
// make the routing overflow give capsule lengths that are not finite;
// Forward refuses them (as the float Net refuses a NaN loss) instead of
// predicting from NaN, and so does the evaluator above it.
func TestNetRefusesNonFiniteNorms(t *testing.T) {
	p := newParams(t, "tiny-sabour", 1)
	images := digitImages(p, 4, 1)
	m := calibrated(t, p, images, PerCapsule)
	top := p.Config.Caps[len(p.Config.Caps)-1].Name + ".W"
	var act float32
	for _, s := range m.Calibration.Scales {
		if s.Name == top {
			act = s.Scale
		}
	}
	for i := range m.Tensors {
		if m.Tensors[i].Name == top {
			m.Tensors[i].Scales = append([]float32(nil), m.Tensors[i].Scales...)
			for j := range m.Tensors[i].Scales {
				// The largest weight scale the bound allows.
				m.Tensors[i].Scales[j] = 0.9 * math.MaxFloat32 / float32(1<<31) / act
			}
		}
	}
	if err := m.checkScales(); err != nil {
		t.Fatalf("scales at the bound refused: %v", err)
	}
	if err := m.checkScales(); err != nil {
		t.Fatalf("scales at the bound refused: %v", err)
	}
	n, err := NewNet(m, 4)
	if err != nil {
		t.Fatal(err)
	}
	err = n.Forward(images)
	t.Logf("norms %v: %v", n.Norms()[:4], err)
	if err == nil || !strings.Contains(err.Error(), "not finite") || strings.Contains(err.Error(), "\n") {
		t.Errorf("Forward with overflowing routing: error %v, want one line saying the capsule lengths are not finite", err)
	}
}

// TestNetRefusesOverflowingRequant: a next layer's activation scale so
// small that a layer's requantization multiplier (input scale × weight
// scale / next scale) times the int32 range overflows is refused when
// the Net is compiled, naming the layer, though each scale alone passes.
func TestNetRefusesOverflowingRequant(t *testing.T) {
	p := newParams(t, "tiny-deep3", 1)
	m := calibrated(t, p, digitImages(p, 4, 1), PerCapsule)
	next := p.Config.Convs[1].Name + ".weight"
	cal := *m.Calibration
	cal.Scales = append([]ActScale(nil), cal.Scales...)
	for i := range cal.Scales {
		if cal.Scales[i].Name == next {
			cal.Scales[i].Scale = 1e-37
		}
	}
	m.Calibration = &cal
	if err := m.checkScales(); err != nil {
		t.Fatalf("an activation scale of 1e-37 refused alone: %v", err)
	}
	_, err := NewNet(m, 1)
	t.Log(err)
	if err == nil || !strings.Contains(err.Error(), p.Config.Convs[0].Name) || !strings.Contains(err.Error(), "overflows") {
		t.Errorf("NewNet: error %v, want one naming conv %s and saying overflows", err, p.Config.Convs[0].Name)
	}
}
