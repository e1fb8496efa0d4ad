package eval

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/safetensors"
	"github.com/capstan-ml/capstan/graph"
	"github.com/capstan-ml/capstan/quant"
	"github.com/capstan-ml/capstan/train/data"
)

func tinyParams(t *testing.T, seed uint64) *capsnet.Params {
	t.Helper()
	p, err := capsnet.NewParams(capsnet.Presets()["tiny-deep"])
	if err != nil {
		t.Fatal(err)
	}
	p.Init(seed)
	return p
}

// TestEvaluator checks that the forward-only evaluator predicts what the
// training graphs do (run forward only through FromNets), holds neither
// gradients nor optimizer state, and does not allocate.
func TestEvaluator(t *testing.T) {
	p := tinyParams(t, 4)
	var nets []*capsnet.Net
	for range 2 {
		n, err := capsnet.NewNet(p, 4)
		if err != nil {
			t.Fatal(err)
		}
		nets = append(nets, n)
	}
	tr, err := FromNets(p, nets)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ev, err := New(p, 8, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	if ev.Batch() != 8 || ev.Replicas() != 2 || ev.Params() != p {
		t.Fatalf("batch %d, replicas %d", ev.Batch(), ev.Replicas())
	}
	x := make([]float32, 8*28*28)
	for i := range x {
		x[i] = float32((i*7)%19) / 19
	}
	labels := []int{9, 8, 7, 6, 5, 4, 3, 2}
	want, got := make([]int, 8), make([]int, 8)
	if err := tr.Predict(x, labels, want); err != nil {
		t.Fatal(err)
	}
	if err := ev.Predict(x, labels, got); err != nil {
		t.Fatal(err)
	}
	nw, ng := make([]float32, 80), make([]float32, 80)
	if err := tr.Norms(nw); err != nil {
		t.Fatal(err)
	}
	if err := ev.Norms(ng); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(nw, ng) {
		t.Errorf("evaluator norms differ from the training graphs'")
	}
	if !slices.Equal(want, got) {
		t.Errorf("evaluator predicts %v, training graphs %v", got, want)
	}
	// Labels only feed the loss: nil gives the same predictions.
	if err := ev.Predict(x, nil, got); err != nil || !slices.Equal(want, got) {
		t.Errorf("nil labels: %v, %v", got, err)
	}
	pe, pt := ev.Plan(), tr.Plan()
	if pe.Bytes[graph.Grad] != 0 || pe.Bytes[graph.ActGrad] != 0 || pe.Bytes[graph.State] != 0 {
		t.Errorf("evaluator plan holds gradients or optimizer state: %+v", pe)
	}
	if pe.Total >= pt.Total {
		t.Errorf("evaluator %d bytes, training graphs %d", pe.Total, pt.Total)
	}
	if a := testing.AllocsPerRun(5, func() { _ = ev.Predict(x, labels, got) }); a != 0 {
		t.Errorf("evaluator allocates %.1f times per batch", a)
	}
	// Thread count does not change the result.
	one, err := New(p, 8, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	n1 := make([]float32, 80)
	if err := one.Predict(x, labels, got); err != nil || !slices.Equal(want, got) {
		t.Errorf("one thread predicts %v (%v), two %v", got, err, want)
	}
	if one.Norms(n1); !slices.Equal(n1, ng) {
		t.Error("one thread: norms differ from two threads'")
	}
}

func embeddedTest(t *testing.T, n int) *data.Dataset {
	t.Helper()
	_, te, err := data.LoadEmbeddedMNIST()
	if err != nil {
		t.Fatal(err)
	}
	te, err = te.Slice(0, n)
	if err != nil {
		t.Fatal(err)
	}
	return te
}

// TestConfusion evaluates a data set whose size is not a multiple of the
// batch (the last batch is padded) and checks the report against
// per-sample predictions made one batch at a time.
func TestConfusion(t *testing.T) {
	p := tinyParams(t, 2)
	ds := embeddedTest(t, 45)
	ev, err := New(p, 16, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	vb, err := data.NewBatcher(ds, data.BatchConfig{Size: 16})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ev.Confusion(vb)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Total != 45 || rep.Seconds <= 0 {
		t.Fatalf("report: %d images, %v s", rep.Total, rep.Seconds)
	}
	preds, err := ev.Predictions(vb)
	if err != nil || len(preds) != 45 {
		t.Fatalf("%d predictions, %v", len(preds), err)
	}
	conf := make([][]int, 10)
	for i := range conf {
		conf[i] = make([]int, 10)
	}
	correct := 0
	for i, pr := range preds {
		if pr.Index != i || pr.Label != int(ds.Y[i]) {
			t.Fatalf("prediction %d: %+v", i, pr)
		}
		conf[pr.Label][pr.Pred]++
		if pr.Label == pr.Pred {
			correct++
		}
	}
	for i := range conf {
		if !slices.Equal(conf[i], rep.Confusion[i]) {
			t.Errorf("confusion row %d: %v, from the predictions %v", i, rep.Confusion[i], conf[i])
		}
	}
	if rep.Correct != correct {
		t.Errorf("%d correct, from the predictions %d", rep.Correct, correct)
	}
	acc, err := ev.Accuracy(vb)
	if err != nil || acc != float64(correct)/45 {
		t.Errorf("accuracy %v (%v), want %v", acc, err, float64(correct)/45)
	}
	// A smaller batcher batch than the evaluator's is padded the same way.
	small, _ := data.NewBatcher(ds, data.BatchConfig{Size: 5})
	if r2, err := ev.Confusion(small); err != nil || r2.Correct != rep.Correct || r2.Total != 45 {
		t.Errorf("batches of 5: %+v, %v", r2, err)
	}
}

func TestEvaluatorErrors(t *testing.T) {
	p := tinyParams(t, 1)
	if _, err := New(p, 0, 1); err == nil {
		t.Error("batch 0 accepted")
	}
	if _, err := New(p, 4, 0); err == nil {
		t.Error("0 threads accepted")
	}
	if _, err := New(nil, 4, 1); err == nil {
		t.Error("nil parameters accepted")
	}
	other := tinyParams(t, 1)
	n, _ := capsnet.NewNet(other, 2)
	if _, err := FromNets(p, []*capsnet.Net{n}); err == nil {
		t.Error("a net of other parameters accepted")
	}
	ev, err := New(p, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	x, pred := make([]float32, 4*28*28), make([]int, 4)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{ev.Predict(x[:10], nil, pred), "x has 10 values"},
		{ev.Predict(x, nil, pred[:3]), "must hold 4"},
		{ev.Predict(x, []int{0, 1, 10, 2}, pred), "label 10"},
		{ev.Norms(make([]float32, 3)), "norms"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("error %v, want one mentioning %q", tc.err, tc.want)
		}
	}
	ds := embeddedTest(t, 10)
	big, _ := data.NewBatcher(ds, data.BatchConfig{Size: 8})
	if _, err := ev.Confusion(big); err == nil || !strings.Contains(err.Error(), "compiled for 4") {
		t.Errorf("batcher batch larger than the evaluator's: %v", err)
	}
	canvas, _ := data.NewBatcher(ds, data.BatchConfig{Size: 4, Placement: data.PlacementCenter})
	if _, err := ev.Confusion(canvas); err == nil || !strings.Contains(err.Error(), "40×40") {
		t.Errorf("40×40 data on a 28×28 model: %v", err)
	}
	bad := embeddedTest(t, 10)
	bad.Classes = 20
	bad.Y = slices.Clone(bad.Y)
	bad.Y[3] = 15
	bb, _ := data.NewBatcher(bad, data.BatchConfig{Size: 4})
	if _, err := ev.Confusion(bb); err == nil || !strings.Contains(err.Error(), "label 15") {
		t.Errorf("label outside the model's classes: %v", err)
	}
	ev.Close()
	ev.Close() // idempotent
	if err := ev.Predict(x, nil, pred); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("predict after Close: %v", err)
	}
}

// TestOracleNorms runs the evaluator on the PyTorch oracle's weights and
// batch and compares the capsule lengths and predictions with PyTorch's
// (the lengths do not depend on the decoder mask, so the forward-only
// graph must give the oracle's). Tolerance: capsnet's oracleTolOut, 1e-4
// of the largest length (float32 sums in another order).
func TestOracleNorms(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "oracle")
	for _, name := range []string{"tiny-sabour", "tiny-deep", "tiny-deep-uniform", "tiny-deep3", "tiny-deep-selfattn", "tiny-deep-selfattn-in"} {
		t.Run(name, func(t *testing.T) {
			cfg := capsnet.Presets()[name]
			ck, err := capsnet.ReadCheckpoint(filepath.Join(dir, name+"-weights.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			p, err := ck.Params(&cfg)
			if err != nil {
				t.Fatal(err)
			}
			exp, err := safetensors.Read(filepath.Join(dir, name+"-expected.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			x, y, want := exp.Tensors["x"], exp.Tensors["y"], exp.Tensors["norms"]
			B := len(y.Data)
			ev, err := New(p, B, 2)
			if err != nil {
				t.Fatal(err)
			}
			defer ev.Close()
			labels, pred := make([]int, B), make([]int, B)
			for i, v := range y.Data {
				labels[i] = int(v)
			}
			if err := ev.Predict(x.Data, labels, pred); err != nil {
				t.Fatal(err)
			}
			got := make([]float32, len(want.Data))
			if err := ev.Norms(got); err != nil {
				t.Fatal(err)
			}
			scale := 0.0
			for _, v := range want.Data {
				scale = math.Max(scale, math.Abs(float64(v)))
			}
			for i := range want.Data {
				if e := math.Abs(float64(got[i]-want.Data[i])) / scale; !(e <= 1e-4) {
					t.Fatalf("norm %d: %v, PyTorch %v (error %.1e of %.3g)", i, got[i], want.Data[i], e, scale)
				}
			}
			classes := p.Config.Classes
			for b := 0; b < B; b++ {
				row := want.Data[b*classes : (b+1)*classes]
				best := 0
				for j, v := range row {
					if v > row[best] {
						best = j
					}
				}
				if pred[b] != best {
					t.Errorf("sample %d: predicted %d, PyTorch's longest capsule %d", b, pred[b], best)
				}
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	v := []float64{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	for _, c := range []struct{ p, want float64 }{{50, 5}, {90, 9}, {99, 10}, {100, 10}, {0, 1}, {10, 1}, {11, 2}} {
		if got := Percentile(v, c.p); got != c.want {
			t.Errorf("Percentile(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if v[0] != 5 || Percentile(nil, 50) != 0 {
		t.Error("Percentile modified its input or failed on an empty one")
	}
}

// TestInt8Evaluator: an evaluator over int8 replicas predicts what one
// int8 Net predicts batch by batch, whatever the thread count; it reports
// one latency per batch and its footprint.
func TestInt8Evaluator(t *testing.T) {
	p := tinyParams(t, 2)
	ds := embeddedTest(t, 45)
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
	vb, err := data.NewBatcher(ds, data.BatchConfig{Size: 16})
	if err != nil {
		t.Fatal(err)
	}
	var preds [][]Prediction
	for _, threads := range []int{1, 3} {
		ev, err := NewInt8(m, 16, threads)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := ev.Confusion(vb)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Total != 45 || len(rep.Latency) != 3 || ev.Params() != nil || ev.Config().Name != "tiny-deep" {
			t.Errorf("threads %d: %d images, %d latencies, params %v", threads, rep.Total, len(rep.Latency), ev.Params())
		}
		if arena, weights := ev.Footprint(); arena <= 0 || weights <= 0 {
			t.Errorf("footprint %d + %d", arena, weights)
		}
		pr, err := ev.Predictions(vb)
		if err != nil {
			t.Fatal(err)
		}
		preds = append(preds, pr)
		ev.Close()
	}
	n, err := quant.NewNet(m, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, pr := range preds[0] {
		img := ds.Image(pr.Index)
		if err := n.Forward(img.Pix); err != nil {
			t.Fatal(err)
		}
		if n.Pred()[0] != pr.Pred || preds[1][i] != pr {
			t.Fatalf("image %d: evaluator %v (3 threads: %v), one Net %d", pr.Index, pr, preds[1][i], n.Pred()[0])
		}
	}
}

func TestComparePredictions(t *testing.T) {
	a := []Prediction{{0, 1, 1}, {1, 2, 2}, {2, 3, 0}, {3, 4, 5}, {4, 5, 5}}
	b := []Prediction{{0, 1, 1}, {1, 2, 7}, {2, 3, 3}, {3, 4, 6}, {4, 5, 5}}
	c := ComparePredictions(a, b)
	if c.Total != 5 || c.Differ != 3 || c.Fixed != 1 || c.Broken != 1 || c.AccA != 0.6 || c.AccB != 0.6 || c.Agreement() != 0.4 {
		t.Errorf("%+v, agreement %v", c, c.Agreement())
	}
}
