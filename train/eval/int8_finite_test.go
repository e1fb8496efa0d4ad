package eval

import (
	"math"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/quant"
	"github.com/capstan-ml/capstan/train/data"
)

// TestInt8EvaluatorRefusesNaN: an int8 model whose scales pass the load
// checks but overflow float32 in the routing gives NaN capsule lengths;
// the evaluator's Confusion is then an error, as the float evaluator's is
// on a NaN loss, never an accuracy computed from NaN.
func TestInt8EvaluatorRefusesNaN(t *testing.T) {
	p, err := capsnet.NewParams(capsnet.Presets()["tiny-sabour"])
	if err != nil {
		t.Fatal(err)
	}
	p.Init(1)
	m, err := quant.Quantize(p, quant.Options{})
	if err != nil {
		t.Fatal(err)
	}
	calib := make([]float32, 8*28*28)
	for i := range calib {
		calib[i] = float32(i%13) / 13
	}
	if m.Calibration, err = quant.Calibrate(p, calib, quant.CalibOptions{}); err != nil {
		t.Fatal(err)
	}
	top := p.Config.Caps[len(p.Config.Caps)-1].Name + ".W"
	var act float32
	for _, s := range m.Calibration.Scales {
		if s.Name == top {
			act = s.Scale
		}
	}
	for i := range m.Tensors {
		if m.Tensors[i].Name == top {
			for j := range m.Tensors[i].Scales {
				m.Tensors[i].Scales[j] = 0.9 * math.MaxFloat32 / float32(1<<31) / act
			}
		}
	}
	ev, err := NewInt8(m, 16, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	vb, err := data.NewBatcher(embeddedTest(t, 32), data.BatchConfig{Size: 16})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ev.Confusion(vb)
	if err == nil || !strings.Contains(err.Error(), "not finite") || strings.Contains(err.Error(), "\n") {
		acc := math.NaN()
		if rep != nil {
			acc = rep.Accuracy()
		}
		t.Errorf("Confusion: accuracy %v, error %v: want one line saying the capsule lengths are not finite", acc, err)
	}
}
