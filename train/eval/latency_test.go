package eval

import (
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/quant"
	"github.com/capstan-ml/capstan/train/data"
)

// tinyInt8 quantizes fp, calibrated on a synthetic batch.
func tinyInt8(t *testing.T, fp *capsnet.Params) *quant.Model {
	t.Helper()
	m, err := quant.Quantize(fp, quant.Options{})
	if err != nil {
		t.Fatal(err)
	}
	calib := make([]float32, 8*28*28)
	for i := range calib {
		calib[i] = float32(i%13) / 13
	}
	if m.Calibration, err = quant.Calibrate(fp, calib, quant.CalibOptions{}); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestLatencyOf(t *testing.T) {
	l := LatencyOf([]float64{0.005, 0.001, 0.004, 0.002, 0.003, 0.010, 0.009, 0.008, 0.007, 0.006})
	if l.N != 10 || l.P50 != 0.005 || l.P90 != 0.009 || l.P99 != 0.010 {
		t.Errorf("%+v", l)
	}
	if got := l.String(); got != "p50 5.000 ms, p90 9.000 ms, p99 10.000 ms" {
		t.Errorf("String() = %q", got)
	}
}

// TestMeasureLatency: a float32 and an int8 evaluator at batch 1 classify
// an image as Predict does and time the asked number of passes.
func TestMeasureLatency(t *testing.T) {
	p := tinyParams(t, 2)
	m := tinyInt8(t, p)
	x := embeddedTest(t, 1).Image(0).Pix
	fe, err := New(p, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer fe.Close()
	ie, err := NewInt8(m, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ie.Close()
	for _, ev := range []*Evaluator{fe, ie} {
		pred, norms, err := ev.Classify(x)
		if err != nil || len(pred) != 1 || len(norms) != 10 {
			t.Fatalf("Classify: %v, %v, %v", pred, norms, err)
		}
		want := make([]int, 1)
		if err := ev.Predict(x, nil, want); err != nil || want[0] != pred[0] {
			t.Errorf("Classify %d, Predict %d (%v)", pred[0], want[0], err)
		}
		l, err := ev.MeasureLatency(x, 7)
		if err != nil || l.N != 7 || l.P50 <= 0 || l.P50 > l.P90 || l.P90 > l.P99 {
			t.Errorf("MeasureLatency: %+v, %v", l, err)
		}
		if _, err := ev.MeasureLatency(x, 0); err == nil {
			t.Error("0 passes: no error")
		}
		if _, err := ev.MeasureLatency(x[:10], 1); err == nil || !strings.HasPrefix(err.Error(), "latency: ") {
			t.Errorf("a short batch: %v", err)
		}
	}
}

// TestCompareInt8 compares the models as two evaluators' Predictions do,
// and refuses a data set of other channels naming the model.
func TestCompareInt8(t *testing.T) {
	p := tinyParams(t, 2)
	m := tinyInt8(t, p)
	ds := embeddedTest(t, 45)
	c, err := CompareInt8(p, m, ds, 16, 2)
	if err != nil {
		t.Fatal(err)
	}
	vb, err := BatcherFor(p.Config, ds, 16)
	if err != nil {
		t.Fatal(err)
	}
	fe, _ := New(p, 16, 1)
	ie, _ := NewInt8(m, 16, 1)
	defer fe.Close()
	defer ie.Close()
	a, err := fe.Predictions(vb)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ie.Predictions(vb)
	if err != nil {
		t.Fatal(err)
	}
	if want := ComparePredictions(a, b); c != want || c.Total != 45 {
		t.Errorf("CompareInt8 %+v, want %+v", c, want)
	}
	colour, err := data.NewDataset("colour", 2, 3, 28, 28, 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CompareInt8(p, m, colour, 16, 1); err == nil || err.Error() != "model tiny-deep takes 1 channel(s), colour has 3" {
		t.Errorf("3 channels: %v", err)
	}
}
