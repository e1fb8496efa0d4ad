package train

import (
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/graph"
	"github.com/capstan-ml/capstan/kernels"
)

// Trainer runs data-parallel training steps of one model: Threads replicas
// (compiled Nets) share the parameters, each takes a fixed slice of the
// batch, and their gradients are reduced in replica order, so a run is
// reproducible for a given seed and thread count. Nothing in Step allocates.
type Trainer struct {
	P      *capsnet.Params
	Reps   []*capsnet.Net
	Adam   kernels.AdamParams
	Step   int // optimizer steps taken
	Batch  int
	starts []int // first sample of each replica

	opt  *graph.Arena
	m, v []*graph.Buf // Adam moments per parameter
	// wd is the weight decay of each parameter of P.List when some group
	// has its own (SetGroupWeightDecay); nil: Adam.WeightDecay for all.
	wd     []float64
	grad   []*graph.Buf // reduced gradient per parameter
	work   []chan struct{}
	done   chan error
	lossM  []float64
	lossR  []float64
	closed bool
	// evalOnly makes the workers run Forward only (evaluation).
	evalOnly bool
	// x and labels are the batch of the current run (set by run).
	x      []float32
	labels []int
	// tele collects the training telemetry (nil: off; see SetTelemetry).
	tele *stepTelemetry
	// optNs adds up the nanoseconds of the optimizer phase (reduction and
	// Adam) of every TrainStep, for Profile.
	optNs int64
	// phase is what the replicas' goroutines run next (phaseStep,
	// phaseOptimize), lr the learning rate of the optimizer phase.
	phase int
	lr    float64
}

// NewTrainer compiles threads replicas for a total batch size batch (split
// as evenly as possible) and allocates the optimizer state. threads is at
// most capsnet.MaxThreads, and the process's memory (Layout.TrainingMemory:
// parameters, optimizer state, all replicas, a batch of data) must fit the
// memory limit (capsnet.ProcessMemory.Check): both are refused before
// anything is compiled or allocated.
func NewTrainer(p *capsnet.Params, batch, threads int, adam kernels.AdamParams) (*Trainer, error) {
	if batch <= 0 {
		return nil, fmt.Errorf("batch %d must be positive", batch)
	}
	if threads <= 0 {
		return nil, fmt.Errorf("threads %d must be positive", threads)
	}
	// The whole process's memory (parameters, optimizer state, every
	// replica, a batch of data) is checked before anything is compiled.
	m, err := p.Layout.TrainingMemory(batch, threads)
	if err != nil {
		return nil, err
	}
	if err := m.Check(); err != nil {
		return nil, err
	}
	threads = min(threads, batch)
	t := &Trainer{P: p, Adam: adam, Batch: batch, opt: graph.NewArena(), done: make(chan error, threads)}
	start := 0
	for r := 0; r < threads; r++ {
		b := batch / threads
		if r < batch%threads {
			b++
		}
		n, err := capsnet.NewNet(p, b)
		if err != nil {
			return nil, err
		}
		t.Reps = append(t.Reps, n)
		t.starts = append(t.starts, start)
		start += b
	}
	for _, q := range p.List {
		t.m = append(t.m, t.opt.Alloc("adam.m."+q.Name, graph.State, q.Buf.Len()))
		t.v = append(t.v, t.opt.Alloc("adam.v."+q.Name, graph.State, q.Buf.Len()))
		t.grad = append(t.grad, t.opt.Alloc("grad."+q.Name, graph.Grad, q.Buf.Len()))
	}
	if err := t.opt.Seal(); err != nil {
		return nil, err
	}
	t.lossM = make([]float64, threads)
	t.lossR = make([]float64, threads)
	for r := range t.Reps {
		ch := make(chan struct{})
		t.work = append(t.work, ch)
		go t.worker(r, ch)
	}
	return t, nil
}

// CheckMemory refuses a training run of cfg at batch and threads that
// NewTrainer would refuse: more than capsnet.MaxThreads threads, or a
// process needing more memory than the limit (parameters, optimizer
// state, every replica and a batch of data: capsnet.Layout.TrainingMemory,
// capsnet.ProcessMemory.Check). It allocates nothing, for callers that
// would load data first (tools/train checks its flags, or a resumed
// checkpoint's plan, with it).
func CheckMemory(cfg capsnet.Config, batch, threads int) error {
	l, err := cfg.Resolve()
	if err != nil {
		return err
	}
	m, err := l.TrainingMemory(batch, threads)
	if err != nil {
		return err
	}
	return m.Check()
}

// Phases of the replicas' goroutines (Trainer.phase).
const (
	phaseStep     = iota // forward (and backward) of the replica's slice of the batch
	phaseOptimize        // the replica's share of the reduction and Adam step
)

func (t *Trainer) worker(r int, ch chan struct{}) {
	// The replica's arithmetic treats subnormals as zero (Intel cores run
	// them through microcode assists; see kernels.FlushSubnormals), on a
	// thread of its own for its lifetime, as the mode belongs to the thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer kernels.FlushSubnormals()()
	n := t.Reps[r]
	for range ch {
		if t.phase == phaseOptimize {
			t.done <- t.optimize(r)
			continue
		}
		s, img := t.starts[r], n.InputLen()
		err := n.Forward(t.x[s*img:(s+n.Batch)*img], t.labels[s:s+n.Batch])
		if err == nil && !t.evalOnly && t.tele != nil && t.tele.on {
			err = t.tele.collect(r, n)
		}
		if err == nil && !t.evalOnly {
			err = n.Backward()
		}
		if err == nil {
			t.lossM[r], t.lossR[r], _ = n.Loss()
		}
		if err != nil {
			err = fmt.Errorf("replica %d: %w", r, err)
		}
		t.done <- err
	}
}

// Close stops the replica goroutines.
func (t *Trainer) Close() {
	if t.closed {
		return
	}
	t.closed = true
	for _, ch := range t.work {
		close(ch)
	}
}

// Plan is the memory plan of parameters, optimizer state and all replicas.
func (t *Trainer) Plan() graph.Plan {
	p := t.P.Arena.Plan().Add(t.opt.Plan())
	for _, n := range t.Reps {
		p = p.Add(n.Plan())
	}
	return p
}

// TrainStep runs forward and backward on x (Batch images, NCHW) and labels,
// reduces the gradients and applies one Adam step with learning rate lr.
// It returns the batch-mean margin and reconstruction losses.
func (t *Trainer) TrainStep(x []float32, labels []int, lr float64) (margin, recon float64, err error) {
	if len(labels) != t.Batch {
		return 0, 0, fmt.Errorf("train step: %d labels for a batch of %d", len(labels), t.Batch)
	}
	img := t.Reps[0].InputLen()
	if len(x) != t.Batch*img {
		return 0, 0, fmt.Errorf("train step: x has %d values, want %d", len(x), t.Batch*img)
	}
	if t.tele != nil {
		t.tele.valid = false
	}
	if err := t.run(x, labels, false); err != nil {
		return 0, 0, err
	}
	// Reduce: the batch mean is Σ_r (b_r/B)·(mean over replica r), summed
	// in replica order for reproducibility.
	for r, n := range t.Reps {
		w := float32(n.Batch) / float32(t.Batch)
		margin += float64(w) * t.lossM[r]
		recon += float64(w) * t.lossR[r]
	}
	if math.IsNaN(margin) || math.IsNaN(recon) || math.IsInf(margin+recon, 0) {
		return margin, recon, fmt.Errorf("loss is NaN or infinite (margin %v, reconstruction %v): training diverged; lower the learning rate", margin, recon)
	}
	t.Step++
	t0 := time.Now()
	defer func() { t.optNs += int64(time.Since(t0)) }()
	if t.tele != nil {
		t.tele.reduce(t)
	}
	// The reduction and the Adam step are element-wise: every replica's
	// goroutine takes its share of every parameter (optimize), so the
	// memory-bound pass runs on every core, with the same arithmetic per
	// element as on one.
	t.lr = lr
	err = t.dispatch(phaseOptimize)
	// The parameters changed (even in part, on an error): inference Nets
	// over them repack their weights before their next Forward.
	t.P.Modified()
	if err != nil {
		return margin, recon, err
	}
	return margin, recon, nil
}

// optimize runs replica r's share of the optimizer step: for every
// trainable parameter, the r-th of len(Reps) contiguous ranges of its
// elements is reduced over the replicas (in replica order) and updated by
// Adam with the learning rate t.lr.
func (t *Trainer) optimize(r int) error {
	a := t.Adam
	a.LR = t.lr
	nr := len(t.Reps)
	for i, q := range t.P.List {
		if !q.Trainable {
			continue
		}
		if t.wd != nil {
			a.WeightDecay = t.wd[i]
		}
		n := q.Buf.Len()
		lo, hi := r*n/nr, (r+1)*n/nr
		if lo == hi {
			continue
		}
		var g []float32
		switch {
		case nr == 1:
			// One replica: its gradient is the batch's.
			g, a.GradScale = t.Reps[0].Grads[i].Data()[lo:hi], 0
		case nr == 2 && t.Reps[0].Batch == t.Reps[1].Batch:
			// Two equal replicas: Adam on their sum, added in the same
			// pass (AdamStepSum: the bits of Axpy(1, g1, g0) then
			// AdamStep, in one pass over memory instead of two), with the
			// mean's factor ½ folded into Adam's scalars, which is the
			// reduction's result bit for bit (½·g0 + ½·g1 = ½·(g0 + g1)).
			// The replicas' gradient buffers are left as Backward wrote
			// them.
			a.GradScale = 0.5
			if err := kernels.AdamStepSum(a, t.Step, q.Buf.Data()[lo:hi], t.Reps[0].Grads[i].Data()[lo:hi],
				t.Reps[1].Grads[i].Data()[lo:hi], t.m[i].Data()[lo:hi], t.v[i].Data()[lo:hi]); err != nil {
				return fmt.Errorf("adam %s: %w", q.Name, err)
			}
			continue
		default:
			g = t.grad[i].Data()[lo:hi]
			for rr, rep := range t.Reps {
				t.reduce(g, rr, rep.Grads[i].Data()[lo:hi])
			}
			a.GradScale = 0
		}
		if err := kernels.AdamStep(a, t.Step, q.Buf.Data()[lo:hi], g, t.m[i].Data()[lo:hi], t.v[i].Data()[lo:hi]); err != nil {
			return fmt.Errorf("adam %s: %w", q.Name, err)
		}
	}
	return nil
}

// reduce adds replica r's share of a gradient, (b_r/B)·src, to g (r = 0
// sets it): called for r = 0, 1, … it sums the replicas' gradients in
// replica order, in float32, so the result is reproducible. The sums run
// on the SIMD kernels (kernels.Axpy, one rounding per element: with
// replicas of equal batches b_r/B is a power of two and the sums are the
// scalar loop's bit for bit).
func (t *Trainer) reduce(g []float32, r int, src []float32) {
	w := float32(t.Reps[r].Batch) / float32(t.Batch)
	if r == 0 {
		clear(g)
	}
	_ = kernels.Axpy(w, src[:len(g)], g) // equal lengths: no error
}

// run scatters the batch over the replicas and runs them in parallel.
func (t *Trainer) run(x []float32, labels []int, evalOnly bool) (err error) {
	if img := t.Reps[0].InputLen(); len(x) != t.Batch*img || len(labels) != t.Batch {
		return fmt.Errorf("%d values and %d labels for a batch of %d images of %d values", len(x), len(labels), t.Batch, img)
	}
	for _, n := range t.Reps {
		n.SetMaskByLabel(!evalOnly)
	}
	t.x, t.labels, t.evalOnly = x, labels, evalOnly
	err = t.dispatch(phaseStep)
	t.x, t.labels = nil, nil // keep no reference to the caller's batch
	return err
}

// dispatch runs phase on every replica's goroutine and waits for all of
// them; it returns the first error.
func (t *Trainer) dispatch(phase int) (err error) {
	t.phase = phase
	for _, ch := range t.work {
		ch <- struct{}{}
	}
	for range t.work {
		if e := <-t.done; e != nil && err == nil {
			err = e
		}
	}
	return err
}

// Moments exposes the optimizer state for checkpoints: Adam's first and
// second moments of parameter i, in the parameter's internal layout.
func (t *Trainer) Moments(i int) (m, v []float32) {
	return t.m[i].Data(), t.v[i].Data()
}
