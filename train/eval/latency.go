package eval

import (
	"fmt"
	"time"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/quant"
	"github.com/capstan-ml/capstan/train/data"
)

// Latency sums up the wall times of single forward passes.
type Latency struct {
	// N is the number of passes timed.
	N int
	// P50, P90 and P99 are the percentiles of their times (Percentile),
	// in seconds.
	P50, P90, P99 float64
}

// LatencyOf returns the percentiles of times (seconds), e.g. a Report's
// Latency at batch 1.
func LatencyOf(times []float64) Latency {
	return Latency{N: len(times), P50: Percentile(times, 50), P90: Percentile(times, 90), P99: Percentile(times, 99)}
}

// String formats the percentiles in milliseconds: "p50 0.123 ms, p90 …,
// p99 …".
func (l Latency) String() string {
	return fmt.Sprintf("p50 %.3f ms, p90 %.3f ms, p99 %.3f ms", 1000*l.P50, 1000*l.P90, 1000*l.P99)
}

// MeasureLatency runs repeat forward passes of the batch x (Batch()
// images, NCHW) through e, a float32 (New) or int8 (NewInt8) evaluator,
// and returns the percentiles of their wall times.
func (e *Evaluator) MeasureLatency(x []float32, repeat int) (Latency, error) {
	if repeat < 1 {
		return Latency{}, fmt.Errorf("latency: %d passes, want at least 1", repeat)
	}
	pred := make([]int, e.batch)
	times := make([]float64, repeat)
	for i := range times {
		t0 := time.Now()
		if err := e.Predict(x, nil, pred); err != nil {
			return Latency{}, fmt.Errorf("latency: %w", err)
		}
		times[i] = time.Since(t0).Seconds()
	}
	return LatencyOf(times), nil
}

// Classify classifies the batch x (Batch() images, NCHW) and returns the
// predicted classes and the capsule lengths, (Batch(), classes)
// row-major.
func (e *Evaluator) Classify(x []float32) (pred []int, norms []float32, err error) {
	pred, norms = make([]int, e.batch), make([]float32, e.batch*e.cfg.Classes)
	if err := e.Predict(x, nil, pred); err != nil {
		return nil, nil, err
	}
	if err := e.Norms(norms); err != nil {
		return nil, nil, err
	}
	return pred, norms, nil
}

// BatcherFor returns a batcher of ds in batches of size for a model cfg:
// its images placed as the model takes them (data.PlacementFor: as they
// are, or centred or rescaled on the model's canvas), in order. A data
// set of another channel count than the model's is an error naming both.
func BatcherFor(cfg capsnet.Config, ds *data.Dataset, size int) (*data.Batcher, error) {
	in := cfg.Input
	if in[0] != ds.C {
		return nil, fmt.Errorf("model %s takes %d channel(s), %s has %d", cfg.Name, in[0], ds.Name, ds.C)
	}
	return data.NewBatcher(ds, data.BatchConfig{Size: size, Placement: data.PlacementFor(ds.H, ds.W, in[1], in[2]), CanvasH: in[1], CanvasW: in[2]})
}

// CompareInt8 evaluates the float32 model p and its int8 quantization m
// on every image of ds (batches of at most batch, threads replicas, one
// model after the other) and compares their predictions.
func CompareInt8(p *capsnet.Params, m *quant.Model, ds *data.Dataset, batch, threads int) (Comparison, error) {
	b := min(batch, ds.N)
	vb, err := BatcherFor(p.Config, ds, b)
	if err != nil {
		return Comparison{}, err
	}
	var preds [2][]Prediction
	for k, mk := range []func() (*Evaluator, error){
		func() (*Evaluator, error) { return New(p, b, threads) },
		func() (*Evaluator, error) { return NewInt8(m, b, threads) },
	} {
		ev, err := mk()
		if err != nil {
			return Comparison{}, err
		}
		preds[k], err = ev.Predictions(vb)
		ev.Close()
		if err != nil {
			return Comparison{}, err
		}
	}
	return ComparePredictions(preds[0], preds[1]), nil
}
