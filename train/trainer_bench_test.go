package train

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/graph"
	"github.com/capstan-ml/capstan/kernels"
	"github.com/capstan-ml/capstan/train/eval"
)

// BenchmarkTrainStep times a full training step (forward, backward,
// gradient reduction, Adam) on the shapes the PyTorch peer's bench uses
// (the external PyTorch reference's bench MODEL BATCH THREADS; docs/benchmarks.md), reporting
// img/s so the two can be compared in one session.
func BenchmarkTrainStep(b *testing.B) {
	for _, c := range benchCases() {
		b.Run(c.name, func(b *testing.B) { benchModel(b, c.model, c.batch, true) })
	}
}

// BenchmarkInfer times inference (forward only, decoder masked by the
// prediction) on the same shapes, and batch-1 latency with one and with
// two threads asked for (./build.sh bench-peer reports the better of the
// two, as for the PyTorch peer; eval.New runs at most one replica per
// image, so at batch 1 both run one today).
func BenchmarkInfer(b *testing.B) {
	for _, c := range benchCases() {
		b.Run(c.name, func(b *testing.B) { benchModel(b, c.model, c.batch, false) })
	}
	for _, m := range []string{"sabour", "deep"} {
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("model=%s/batch=1/threads=%d", m, threads), func(b *testing.B) { benchModelThreads(b, m, 1, threads, false) })
		}
	}
}

// BenchmarkTrainStepTelemetry measures what the training telemetry costs
// (Options.Telemetry): the deep model at batch 128 on 2 replicas,
// alternating steps without and with collection (the margin-only backward
// pass, the norms, the reduction), so that the load of a machine shared
// with other jobs weighs on both alike. It reports the img/s of each from
// the median step time (wall clock) and the cost in percent of the img/s
// without, and the cost in CPU time (user+system of this process, less
// sensitive to other jobs).
func BenchmarkTrainStepTelemetry(b *testing.B) {
	const model, batch, threads = "deep", 128, 2
	cfg := capsnet.Presets()[model]
	p, err := capsnet.NewParams(cfg)
	if err != nil {
		b.Fatal(err)
	}
	p.Init(1)
	tr, err := NewTrainer(p, batch, threads, kernels.DefaultAdamParams())
	if err != nil {
		b.Fatal(err)
	}
	defer tr.Close()
	x, labels := benchBatch(cfg, batch)
	var wall [2][]float64
	var cpu [2]time.Duration
	step := func(on bool) {
		k := 0
		if on {
			k = 1
		}
		tr.SetTelemetry(on)
		c0, start := cpuTime(), time.Now()
		if _, _, err := tr.TrainStep(x, labels, 1e-4); err != nil {
			b.Fatal(err)
		}
		wall[k] = append(wall[k], time.Since(start).Seconds())
		cpu[k] += cpuTime() - c0
	}
	step(true)
	step(false)
	wall, cpu = [2][]float64{}, [2]time.Duration{}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		step(i%2 == 0)
		step(i%2 != 0)
	}
	b.StopTimer()
	off, on := batch/median(wall[0]), batch/median(wall[1])
	b.ReportMetric(off, "img/s-off")
	b.ReportMetric(on, "img/s-on")
	b.ReportMetric(100*(1-on/off), "cost-%")
	b.ReportMetric(100*(cpu[1].Seconds()/cpu[0].Seconds()-1), "cpu-cost-%")
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// benchBatch is a fixed batch of inputs and labels for a model.
func benchBatch(cfg capsnet.Config, batch int) ([]float32, []int) {
	img := cfg.Input[0] * cfg.Input[1] * cfg.Input[2]
	x := make([]float32, batch*img)
	for i := range x {
		x[i] = float32(i*7%101) / 101
	}
	labels := make([]int, batch)
	for i := range labels {
		labels[i] = i % cfg.Classes
	}
	return x, labels
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
	x, labels := benchBatch(cfg, batch)
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

// BenchmarkTrainStepRouting compares the deep model's training step
// (forward, backward, Adam; batch 128 on one thread) under every routing
// kind of capsnet.RoutingKinds (the presets deep, deep-uniform,
// deep-self-attention, deep-self-attention-in). The kinds' steps
// alternate, so that the load of a shared machine weighs on all alike; it
// reports each kind's img/s from its median step time and its speed-up
// over routing by agreement ("KIND-vs-rba", > 1: faster).
func BenchmarkTrainStepRouting(b *testing.B) {
	const batch, threads = 128, 1
	kinds := capsnet.RoutingKinds
	trs := make([]*Trainer, len(kinds))
	times := make([][]float64, len(kinds))
	var x []float32
	var labels []int
	for i := range kinds {
		cfg := capsnet.Presets()[capsnet.PresetTwin("deep", kinds[i].Name)]
		p, err := capsnet.NewParams(cfg)
		if err != nil {
			b.Fatal(err)
		}
		p.Init(1)
		if trs[i], err = NewTrainer(p, batch, threads, kernels.DefaultAdamParams()); err != nil {
			b.Fatal(err)
		}
		defer trs[i].Close()
		x, labels = benchBatch(cfg, batch)
	}
	step := func(i int) {
		start := time.Now()
		if _, _, err := trs[i].TrainStep(x, labels, 1e-4); err != nil {
			b.Fatal(err)
		}
		times[i] = append(times[i], time.Since(start).Seconds())
	}
	for i := range trs {
		step(i) // warm-up
		times[i] = times[i][:0]
	}
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		for i := range trs {
			step(i)
		}
	}
	b.StopTimer()
	rba := median(times[0])
	for i, k := range kinds {
		m := median(times[i])
		b.ReportMetric(batch/m, k.Name+"-img/s")
		if i > 0 {
			b.ReportMetric(rba/m, k.Name+"-vs-rba")
		}
	}
}
