package train

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/graph"
	"github.com/capstan-ml/capstan/kernels"
	"github.com/capstan-ml/capstan/train/eval"
)

// BenchmarkTrainStep times a full training step (forward, backward,
// gradient reduction, Adam) on the shapes the PyTorch peer's bench uses
// (../shared/peers/torch_capsnet.py bench MODEL BATCH THREADS), reporting
// img/s so the two can be compared in one session.
func BenchmarkTrainStep(b *testing.B) {
	for _, c := range benchCases() {
		b.Run(c.name, func(b *testing.B) { benchModel(b, c.model, c.batch, true) })
	}
}

// BenchmarkInfer times inference (forward only, decoder masked by the
// prediction) on the same shapes, and batch-1 latency.
func BenchmarkInfer(b *testing.B) {
	for _, c := range benchCases() {
		b.Run(c.name, func(b *testing.B) { benchModel(b, c.model, c.batch, false) })
	}
	for _, m := range []string{"sabour", "deep"} {
		b.Run(fmt.Sprintf("model=%s/batch=1/threads=1", m), func(b *testing.B) { benchModelThreads(b, m, 1, 1, false) })
	}
}

// BenchmarkTrainStepTelemetry measures what the training telemetry costs
// (Options.Telemetry): the deep model at batch 128 on 2 replicas, without
// and with collection at every step (the margin-only backward pass, the
// norms, the reduction). Compare the img/s of the pair.
func BenchmarkTrainStepTelemetry(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("model=deep/batch=128/threads=2/telemetry=%v", on), func(b *testing.B) {
			benchTrain(b, "deep", 128, 2, on)
		})
	}
}

type benchCase struct {
	name, model string
	batch       int
}

func benchCases() []benchCase {
	var cs []benchCase
	for _, c := range []struct {
		m string
		b int
	}{{"sabour", 32}, {"deep", 128}, {"sabour-small", 64}} {
		cs = append(cs, benchCase{fmt.Sprintf("model=%s/batch=%d/threads=%d", c.m, c.b, runtime.GOMAXPROCS(0)), c.m, c.b})
	}
	return cs
}

func benchModel(b *testing.B, model string, batch int, train bool) {
	benchModelThreads(b, model, batch, runtime.GOMAXPROCS(0), train)
}

func benchModelThreads(b *testing.B, model string, batch, threads int, train bool) {
	benchTrainTelemetry(b, model, batch, threads, train, false)
}

func benchTrain(b *testing.B, model string, batch, threads int, telemetry bool) {
	benchTrainTelemetry(b, model, batch, threads, true, telemetry)
}

func benchTrainTelemetry(b *testing.B, model string, batch, threads int, train, telemetry bool) {
	cfg := capsnet.Presets()[model]
	p, err := capsnet.NewParams(cfg)
	if err != nil {
		b.Fatal(err)
	}
	p.Init(1)
	var tr *Trainer
	var ev *eval.Evaluator
	var plan graph.Plan
	if train {
		tr, err = NewTrainer(p, batch, threads, kernels.DefaultAdamParams())
		if err == nil {
			defer tr.Close()
			plan = tr.Plan()
			tr.SetTelemetry(telemetry)
		}
	} else {
		ev, err = eval.New(p, batch, threads) // forward-only graphs, as tools/infer uses
		if err == nil {
			defer ev.Close()
			plan = ev.Plan()
		}
	}
	if err != nil {
		b.Fatal(err)
	}
	img := cfg.Input[0] * cfg.Input[1] * cfg.Input[2]
	x := make([]float32, batch*img)
	for i := range x {
		x[i] = float32(i*7%101) / 101
	}
	labels := make([]int, batch)
	for i := range labels {
		labels[i] = i % cfg.Classes
	}
	pred := make([]int, batch)
	step := func() {
		var err error
		if train {
			_, _, err = tr.TrainStep(x, labels, 1e-4)
		} else {
			err = ev.Predict(x, labels, pred)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	step()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		step()
	}
	b.ReportMetric(float64(batch)*float64(b.N)/b.Elapsed().Seconds(), "img/s")
	b.ReportMetric(float64(plan.Total)/(1<<20), "MiB") // parameters, replicas, optimizer state
}
