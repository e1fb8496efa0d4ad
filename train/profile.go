package train

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/kernels"
)

// Profile is the per-operation profile of training steps (Trainer.Profile):
// every forward and backward step of the schedules as timed on replica 0,
// and the optimizer (gradient reduction and Adam) as timed on the caller's
// goroutine. Replicas run in parallel, one per thread, so replica 0's
// schedule time is the per-core cost of its share of the batch.
type Profile struct {
	Model   string
	Kernels string // the kernels implementation (kernels.Impl)
	Batch   int    // total batch
	Threads int    // replicas
	Steps   int    // timed training steps
	// RepBatch is replica 0's share of the batch.
	RepBatch int
	// Forward and Backward are replica 0's steps, in schedule order.
	Forward, Backward []capsnet.StepTime
	// Optimizer is the time of the gradient reduction and the Adam steps;
	// Wall the wall-clock time of the timed steps in total.
	Optimizer, Wall time.Duration
	// FLOPs is the counted work of one training step of all replicas.
	FLOPs float64
	// Peak1 and PeakAll are the measured FMA peaks in GFLOP/s of one core
	// and of Threads cores (kernels.FMAPeak); 0 leaves the columns out.
	Peak1, PeakAll float64
	// PeakLoop describes the loop that measured them (kernels.FMAPeakInfo).
	PeakLoop string
}

// Profile runs steps timed training steps on x and labels (after one
// untimed warm-up step) with learning rate lr and returns the per-step
// profile. The steps change the parameters like any training step.
func (t *Trainer) Profile(x []float32, labels []int, lr float64, steps int) (*Profile, error) {
	if steps <= 0 {
		return nil, fmt.Errorf("profile: %d steps, want at least 1", steps)
	}
	if _, _, err := t.TrainStep(x, labels, lr); err != nil {
		return nil, fmt.Errorf("profile warm-up step: %w", err)
	}
	for _, n := range t.Reps {
		n.SetProfiling(true)
	}
	defer func() {
		for _, n := range t.Reps {
			n.SetProfiling(false)
		}
	}()
	t.optNs = 0
	t0 := time.Now()
	for i := 0; i < steps; i++ {
		if _, _, err := t.TrainStep(x, labels, lr); err != nil {
			return nil, fmt.Errorf("profile step %d: %w", i+1, err)
		}
	}
	p := &Profile{Batch: t.Batch, Threads: len(t.Reps), Steps: steps, RepBatch: t.Reps[0].Batch,
		Wall: time.Since(t0), Optimizer: time.Duration(t.optNs)}
	p.Forward, p.Backward = t.Reps[0].Profile()
	for _, n := range t.Reps {
		f, b := n.Profile()
		for _, s := range append(f, b...) {
			p.FLOPs += s.FLOPs
		}
	}
	return p, nil
}

// ProfileModel compiles cfg for batch images on threads replicas,
// initialises it from seed and profiles steps training steps (Trainer.Profile)
// on a synthetic batch (pixels uniform in [0, 1), labels cycling over the
// classes): the time of each operation does not depend on the images. The
// process memory is checked first (CheckMemory).
func ProfileModel(cfg capsnet.Config, batch, threads, steps int, seed uint64) (*Profile, error) {
	if err := CheckMemory(cfg, batch, threads); err != nil {
		return nil, err
	}
	p, err := capsnet.NewParams(cfg)
	if err != nil {
		return nil, err
	}
	p.Init(seed)
	tr, err := NewTrainer(p, batch, threads, kernels.DefaultAdamParams())
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	img := tr.Reps[0].InputLen()
	x := make([]float32, batch*img)
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range x {
		x[i] = r.Float32()
	}
	labels := make([]int, batch)
	for i := range labels {
		labels[i] = i % cfg.Classes
	}
	prof, err := tr.Profile(x, labels, 1e-4, steps)
	if err != nil {
		return nil, err
	}
	prof.Model, prof.Kernels = cfg.Name, kernels.Impl()
	// The FMA peak of one core and of the replicas' cores, measured after
	// the steps (about 0.3 s each); more replicas than GOMAXPROCS have no
	// peak of their own.
	if prof.Peak1, err = kernels.FMAPeak(1, 300*time.Millisecond); err != nil {
		return nil, err
	}
	prof.PeakAll = prof.Peak1
	if t := len(tr.Reps); t > 1 && t <= runtime.GOMAXPROCS(0) {
		if prof.PeakAll, err = kernels.FMAPeak(t, 300*time.Millisecond); err != nil {
			return nil, err
		}
	}
	prof.PeakLoop = kernels.FMAPeakInfo().String()
	return prof, nil
}

// WriteMarkdown writes the profile as a Markdown table: for every step its
// time per image (replica 0's time over its images, on one core), the
// counted work per image, the GFLOP/s of one core and its share of the
// peak, and its share of the step's wall time; then the optimizer, the
// remainder (replicas waiting for each other, scheduling) and the whole
// step with its GFLOP/s over all cores.
func (p *Profile) WriteMarkdown(w io.Writer) error {
	ew := &errWriter{w: w}
	stepNs := float64(p.Wall.Nanoseconds()) / float64(p.Steps)
	ew.printf("Per-operation profile: model %s, batch %d on %d thread(s) (replica 0: %d images), %d steps, kernels %s.\n",
		p.Model, p.Batch, p.Threads, p.RepBatch, p.Steps, p.Kernels)
	if p.Peak1 > 0 {
		ew.printf("FMA peak (kernels.FMAPeak, %s): %.1f GFLOP/s on one core, %.1f on %d.\n", p.PeakLoop, p.Peak1, p.PeakAll, p.Threads)
	}
	ew.printf("\n| phase | step | µs/img (1 core) | MFLOP/img | GFLOP/s (1 core) | %% of 1-core peak | %% of step |\n|---|---|---:|---:|---:|---:|---:|\n")
	var sched float64
	row := func(phase string, s capsnet.StepTime) {
		if s.Runs == 0 {
			return
		}
		perCall := float64(s.Time.Nanoseconds()) / float64(s.Runs)
		sched += perCall
		us := perCall / 1e3 / float64(p.RepBatch)
		gf, mf, pk := "—", "—", "—"
		if s.FLOPs > 0 && perCall > 0 {
			g := s.FLOPs / perCall
			gf = fmt.Sprintf("%.1f", g)
			mf = fmt.Sprintf("%.2f", s.FLOPs/1e6/float64(p.RepBatch))
			if p.Peak1 > 0 {
				pk = fmt.Sprintf("%.0f%%", 100*g/p.Peak1)
			}
		}
		ew.printf("| %s | %s | %.1f | %s | %s | %s | %.1f%% |\n", phase, s.Name, us, mf, gf, pk, 100*perCall/stepNs)
	}
	for _, s := range p.Forward {
		row("forward", s)
	}
	for _, s := range p.Backward {
		row("backward", s)
	}
	opt := float64(p.Optimizer.Nanoseconds()) / float64(p.Steps)
	ew.printf("| step | optimizer (reduce + Adam) | %.1f | — | — | — | %.1f%% |\n", opt/1e3/float64(p.Batch), 100*opt/stepNs)
	rest := stepNs - sched - opt
	ew.printf("| step | other (replicas waiting, scheduling) | %.1f | — | — | — | %.1f%% |\n", rest/1e3/float64(p.Batch), 100*rest/stepNs)
	g := p.FLOPs / stepNs
	pk := "—"
	if p.PeakAll > 0 {
		pk = fmt.Sprintf("%.0f%% of %d-core peak", 100*g/p.PeakAll, p.Threads)
	}
	ew.printf("| step | whole step (wall, all cores) | %.1f | %.2f | %.1f (all cores) | %s | 100%% |\n",
		stepNs/1e3/float64(p.Batch), p.FLOPs/1e6/float64(p.Batch), g, pk)
	ew.printf("\n%.1f img/s; µs/img of the step rows is wall time over the whole batch.\n", float64(p.Batch)/(stepNs/1e9))
	return ew.err
}

// errWriter keeps the first write error.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, a ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, a...)
	}
}
