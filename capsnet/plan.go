package capsnet

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/capstan-ml/capstan/graph"
)

// errPlanned stops an arena's Seal once its plan is made (stopAtPlan), so
// that the plan is known and nothing is allocated.
var errPlanned = errors.New("capsnet: planned, not allocated")

func stopAtPlan(int64) error { return errPlanned }

// TrainingPlan returns the memory plans of cfg's parameters and of one
// Net of batch images over them, a training Net (NewNet) or an inference
// one (NewInferenceNet): the plans NewParams and NewNet would allocate,
// computed without allocating anything and without the memory limit of
// one model (ModelMemoryLimit), so that a machine can size jobs for
// larger ones (tools/sweep's Slurm and Kubernetes jobs).
func TrainingPlan(cfg Config, batch int, inference bool) (params, net graph.Plan, err error) {
	l, err := cfg.Resolve()
	if err != nil {
		return graph.Plan{}, graph.Plan{}, err
	}
	return l.TrainingPlan(batch, inference)
}

// TrainingPlan is the package's TrainingPlan of the layout.
func (l *Layout) TrainingPlan(batch int, inference bool) (params, net graph.Plan, err error) {
	p, err := l.newParams(true)
	if err != nil {
		return graph.Plan{}, graph.Plan{}, err
	}
	n, err := newNet(p, batch, inference, planOnly)
	if err != nil {
		return graph.Plan{}, graph.Plan{}, err
	}
	return p.Arena.Plan(), n.Plan(), nil
}

// MaxThreads bounds the data-parallel replicas of one process (the
// trainer's, an evaluator's, every tool's -threads): a replica per core
// gives all the speed there is, and every replica holds its own memory
// plan (activations and, training, a gradient of every parameter), so
// more replicas than cores only multiply the memory. 256 is above the
// hardware threads of any single machine in use today; a larger -threads
// is a typo, refused before anything is compiled.
const MaxThreads = 256

// CheckThreads refuses threads outside 1 … MaxThreads, naming threads and
// batch in the error.
func CheckThreads(threads, batch int) error {
	if threads < 1 || threads > MaxThreads {
		return fmt.Errorf("threads %d (batch %d): must be between 1 and %d (capsnet.MaxThreads, replicas in one process)", threads, batch, MaxThreads)
	}
	return nil
}

// ProcessMemory is the memory one process needs for its models, by part,
// computed from the layout before anything is allocated: the shared
// parameters, the optimizer state (a gradient and Adam's two moments per
// parameter), the replicas (Threads replicas splitting Batch; each its
// own memory plan), the evaluator's own replicas and the data batches'
// buffers. Check compares its Total with the process's memory limit.
type ProcessMemory struct {
	// Model names the model in errors.
	Model string
	// Batch and Threads are the total batch and the replicas asked for.
	Batch, Threads int
	// Params, Optimizer, Replicas, Eval and Data are bytes.
	Params, Optimizer, Replicas, Eval, Data int64
}

// Total is the sum of the parts, saturating at math.MaxInt64.
func (m ProcessMemory) Total() int64 {
	var t int64
	for _, b := range []int64{m.Params, m.Optimizer, m.Replicas, m.Eval, m.Data} {
		if b < 0 || t > math.MaxInt64-b {
			return math.MaxInt64
		}
		t += b
	}
	return t
}

// String lists the non-zero parts: "parameters 31.4 MiB + optimizer state
// 94.2 MiB + 8 replicas 2.1 GiB".
func (m ProcessMemory) String() string {
	var parts []string
	for _, p := range []struct {
		name  string
		bytes int64
	}{{"parameters", m.Params}, {"optimizer state", m.Optimizer}, {fmt.Sprintf("%d replicas", min(m.Threads, max(m.Batch, 1))), m.Replicas},
		{"evaluator", m.Eval}, {"data", m.Data}} {
		if p.bytes > 0 {
			parts = append(parts, p.name+" "+fmtBytes(p.bytes))
		}
	}
	return strings.Join(parts, " + ")
}

// Check refuses a process needing more than the memory limit
// (ModelMemoryLimit: MemoryEnv, MaxModelBytes or the machine's memory),
// with one error naming threads, batch, the need, the limit, where it
// comes from and how to raise it. It allocates nothing: callers check
// before compiling anything.
func (m ProcessMemory) Check() error {
	if err := CheckThreads(m.Threads, m.Batch); err != nil {
		return err
	}
	limit, source, err := ModelMemoryLimit()
	if err != nil {
		return err
	}
	need := m.Total()
	if need <= limit {
		return nil
	}
	model := m.Model
	if model == "" {
		model = "(unnamed)"
	}
	return fmt.Errorf("model %s: threads %d × batch %d need %s in one process (%s), more than the limit of %s (%s); lower threads or batch, or raise the limit with %s=%s",
		model, m.Threads, m.Batch, fmtBytes(need), m, fmtBytes(limit), source, MemoryEnv, suggestBytes(need))
}

// replicaSizes returns the batch of each replica when threads replicas
// (capped at batch) split batch as evenly as possible, the first
// batch%threads taking one more, as sizes and their counts.
func replicaSizes(batch, threads int) map[int]int {
	threads = min(threads, batch)
	sizes := map[int]int{batch / threads: threads - batch%threads}
	if batch%threads > 0 {
		sizes[batch/threads+1] = batch % threads
	}
	return sizes
}

// ReplicaMemory returns the parameters' plan and the sum of the memory
// plans of threads replicas (training Nets, or inference ones) splitting
// batch, planning each distinct replica batch once, without allocating
// anything and without the memory limit.
func (l *Layout) ReplicaMemory(batch, threads int, inference bool) (params, replicas int64, err error) {
	if err := CheckBatch("capsnet", batch); err != nil {
		return 0, 0, err
	}
	if err := CheckThreads(threads, batch); err != nil {
		return 0, 0, err
	}
	for b, count := range replicaSizes(batch, threads) {
		p, n, err := l.TrainingPlan(b, inference)
		if err != nil {
			return 0, 0, err
		}
		params, replicas = p.Total, replicas+int64(count)*n.Total
	}
	return params, replicas, nil
}

// OptimizerMemory is the size of a trainer's optimizer arena (a gradient
// and Adam's two moments per parameter, declared as train.NewTrainer
// declares them), planned without allocating it.
func (l *Layout) OptimizerMemory() (int64, error) {
	a := graph.NewArena()
	for _, sp := range l.Params {
		a.Alloc("adam.m."+sp.Name, graph.State, sp.TorchShape...)
		a.Alloc("adam.v."+sp.Name, graph.State, sp.TorchShape...)
		a.Alloc("grad."+sp.Name, graph.Grad, sp.TorchShape...)
	}
	a.SetSizeCheck(stopAtPlan)
	if err := a.Seal(); err != errPlanned {
		return 0, fmt.Errorf("optimizer state: %v", err)
	}
	return a.Plan().Total, nil
}

// TrainingMemory returns the memory of a training process: the
// parameters, the optimizer state, threads training replicas splitting
// batch and one batch of input images and labels (the evaluator of a
// training run borrows the replicas). Nothing is allocated.
func (l *Layout) TrainingMemory(batch, threads int) (ProcessMemory, error) {
	m := ProcessMemory{Model: l.Config.Name, Batch: batch, Threads: threads}
	var err error
	if m.Params, m.Replicas, err = l.ReplicaMemory(batch, threads, false); err != nil {
		return m, err
	}
	if m.Optimizer, err = l.OptimizerMemory(); err != nil {
		return m, err
	}
	m.Data = l.batchBytes(batch)
	return m, nil
}

// InferenceMemory returns the memory of an evaluating process: the
// parameters, threads inference replicas splitting batch (Eval) and one
// batch of input images (Data). Nothing is allocated.
func (l *Layout) InferenceMemory(batch, threads int) (ProcessMemory, error) {
	m := ProcessMemory{Model: l.Config.Name, Batch: batch, Threads: threads}
	var err error
	if m.Params, m.Eval, err = l.ReplicaMemory(batch, threads, true); err != nil {
		return m, err
	}
	m.Data = l.batchBytes(batch)
	return m, nil
}

// batchBytes is one batch of float32 input images and int labels.
func (l *Layout) batchBytes(batch int) int64 {
	in := l.Convs[0].Shape
	return int64(batch) * (4*int64(in.InC)*int64(in.InH)*int64(in.InW) + 8)
}
