package sweep

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/atomicfile"
	"github.com/capstan-ml/capstan/train/data"
)

// RuntimeMargin is the memory a task needs besides its model, optimizer
// state and data sets: the Go runtime, the binary, the garbage collector's
// headroom, the batch being assembled and the analysis' accumulators.
const RuntimeMargin = 256 << 20

// Memory is the memory plan of one task: what its worker process holds
// at most while training, in bytes.
type Memory struct {
	// Params are the parameters; Optimizer the gradient and Adam's two
	// moments (three times the parameters).
	Params, Optimizer int64
	// Replicas are the training graphs of the data-parallel replicas
	// (Threads of them, the batch split between them), and Analysis the
	// inference graph of the evaluation at the task's batch.
	Replicas, Analysis int64
	// Data is the training data set (both splits, as loaded) and the
	// evaluation set, in float32 pixels.
	Data int64
	// Margin is RuntimeMargin.
	Margin int64
}

// Total is the sum of the plan's parts.
func (m Memory) Total() int64 {
	return m.Params + m.Optimizer + m.Replicas + m.Analysis + m.Data + m.Margin
}

// MiB is Total rounded up to whole MiB.
func (m Memory) MiB() int64 { return (m.Total() + 1<<20 - 1) >> 20 }

// modelConfig resolves a task's Model: a preset name, or a JSON config
// file relative to the manifest's directory dir unless absolute.
func modelConfig(dir, model string) (capsnet.Config, error) {
	if _, ok := capsnet.Presets()[model]; ok || filepath.IsAbs(model) {
		return capsnet.LoadConfig(model)
	}
	return capsnet.LoadConfig(filepath.Join(dir, model))
}

// dataBytes is the float32 memory of data set name as a task loads it for
// training (both splits: train/data.LoadSplits), and evalBytes that of an
// evaluation set (train/data.LoadTest), from the data-set table
// (train/data.Sets).
func dataBytes(name string) (int64, error) {
	if s := data.Lookup(name); s != nil && !s.Generated() {
		return s.SplitsBytes(), nil
	}
	return 0, fmt.Errorf("unknown data set %q (%s)", name, strings.Join(data.DataSets, ", "))
}

func evalBytes(name string) (int64, error) {
	if name == "" {
		return 0, nil
	}
	s, val := data.LookupTest(name)
	switch {
	case s == nil:
		return 0, fmt.Errorf("unknown evaluation set %q", name)
	case val:
		return s.SplitsBytes(), nil
	}
	return s.TestBytes(), nil
}

// planKey identifies the tasks that share a memory plan.
type planKey struct {
	model          string
	batch, threads int
}

// Planner computes tasks' memory plans, compiling each model once per
// batch and thread count (the seeds of a model share its plan).
type Planner struct {
	// Dir is the manifest's directory (a task's config file is relative
	// to it).
	Dir   string
	cache map[planKey]Memory
}

// TaskMemory returns the memory plan of task t: the plan of the
// train.Trainer a run makes (train.NewTrainer at the task's batch and
// threads: the parameters, the optimizer state and min(Threads, Batch)
// training replicas, capsnet.NewNet at the batch split between them; all
// from capsnet.TrainingPlan, nothing allocated), the analysis' inference graph, the data sets and
// RuntimeMargin. The plans are made without allocating and without this
// machine's memory limit of one model: a login node sizes jobs for
// larger compute nodes.
func (pl *Planner) TaskMemory(t Task) (Memory, error) {
	if t.Batch <= 0 || t.Threads <= 0 {
		return Memory{}, fmt.Errorf("task %d: batch %d and threads %d must be positive", t.Index, t.Batch, t.Threads)
	}
	key := planKey{t.Model, t.Batch, t.Threads}
	m, ok := pl.cache[key]
	if !ok {
		var err error
		if m, err = modelMemory(pl.Dir, t.Model, t.Batch, t.Threads); err != nil {
			return Memory{}, fmt.Errorf("task %d: model %s: %w", t.Index, t.Model, err)
		}
		if pl.cache == nil {
			pl.cache = map[planKey]Memory{}
		}
		pl.cache[key] = m
	}
	d, err := dataBytes(t.Data)
	if err != nil {
		return Memory{}, fmt.Errorf("task %d: data: %w", t.Index, err)
	}
	e, err := evalBytes(t.Eval)
	if err != nil {
		return Memory{}, fmt.Errorf("task %d: eval: %w", t.Index, err)
	}
	m.Data = d + e
	m.Margin = RuntimeMargin
	return m, nil
}

func modelMemory(dir, model string, batch, threads int) (Memory, error) {
	cfg, err := modelConfig(dir, model)
	if err != nil {
		return Memory{}, err
	}
	l, err := cfg.Resolve()
	if err != nil {
		return Memory{}, err
	}
	// As train.NewTrainer checks it: parameters, optimizer state and the
	// replicas, all from capsnet.Layout.TrainingMemory.
	pm, err := l.TrainingMemory(batch, threads)
	if err != nil {
		return Memory{}, err
	}
	m := Memory{Params: pm.Params, Optimizer: pm.Optimizer, Replicas: pm.Replicas}
	_, inf, err := l.TrainingPlan(batch, true)
	if err != nil {
		return Memory{}, err
	}
	m.Analysis = inf.Total
	return m, nil
}

// Process is the memory plan as the process's memory limit checks it
// (capsnet.ProcessMemory.Check): the analysis' graph as the evaluator,
// the data sets and RuntimeMargin as data.
func (m Memory) Process(model string, batch, threads int) capsnet.ProcessMemory {
	return capsnet.ProcessMemory{Model: model, Batch: batch, Threads: threads, Params: m.Params, Optimizer: m.Optimizer,
		Replicas: m.Replicas, Eval: m.Analysis, Data: m.Data + m.Margin}
}

// SlurmOptions are the settings of a Slurm array job.
type SlurmOptions struct {
	// Parallel is the most tasks running at once (the %K of --array); 0:
	// all of them.
	Parallel int
	// Time is each task's time limit (sbatch --time: minutes, MM:SS,
	// HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS); "": DefaultTime.
	Time string
	// Partition is the Slurm partition ("": the cluster's default).
	Partition string
	// Binary is the sweep command the tasks run; "": the running
	// executable's absolute path.
	Binary string
	// Args are the arguments before run when Binary holds the sweep
	// command as a subcommand (["sweep"] for the capstan binary); nil for
	// the sweep binary itself.
	Args []string
	// JobName names the job ("": "sweep-" and the manifest directory's
	// name).
	JobName string
}

// DefaultTime is a task's default time limit.
const DefaultTime = "24:00:00"

// SignalSeconds is how long before its time limit Slurm sends a task
// SIGTERM (--signal=B:TERM@…), the time it has to save.
const SignalSeconds = 120

var slurmTime = regexp.MustCompile(`^(\d{1,4}-\d{1,2}(:\d{1,2}(:\d{1,2})?)?|\d{1,6}(:\d{1,2}(:\d{1,2})?)?)$`)

// safeWord reports whether s can stand unquoted on an #SBATCH line.
func safeWord(s string) bool {
	return s != "" && !strings.ContainsAny(s, " \t\r\n\"'%\\#;$`")
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// absManifest returns manifestPath as an absolute, clean path.
func absManifest(manifestPath string) (string, error) {
	abs, err := filepath.Abs(manifestPath)
	if err != nil {
		return "", fmt.Errorf("manifest %s: %w", manifestPath, err)
	}
	return abs, nil
}

// maxMemory returns the largest memory plan of tasks and the threads of
// the task that needs most of them.
func maxMemory(dir string, tasks []Task) (mem Memory, threads int, err error) {
	if len(tasks) == 0 {
		return Memory{}, 0, errors.New("no task in the manifest")
	}
	pl := &Planner{Dir: dir}
	for _, t := range tasks {
		m, err := pl.TaskMemory(t)
		if err != nil {
			return Memory{}, 0, err
		}
		if m.Total() > mem.Total() {
			mem = m
		}
		threads = max(threads, t.Threads)
	}
	return mem, threads, nil
}

// parallelism returns K for n tasks: all of them when k is 0.
func parallelism(k, n int) (int, error) {
	if k < 0 {
		return 0, fmt.Errorf("parallel %d must be positive (0: all %d tasks)", k, n)
	}
	if k == 0 || k > n {
		return n, nil
	}
	return k, nil
}

// SlurmScript returns the sbatch script that runs tasks, the manifest's
// tasks in index order, as a Slurm array job: --array=0-(N-1)%K, one CPU
// per thread (the most threads of a task), --mem the largest memory plan
// of a task (TaskMemory, in MiB), --requeue and --signal=B:TERM@120 (a
// task saves and exits 143 two minutes before its time limit, and a
// requeued one resumes), output appended to logs/%A_%a.out beside the
// manifest (the directory must exist when the job starts: WriteSlurm
// makes it), and `exec SWEEP [ARGS…] run -manifest ABS`, the task's index from
// SLURM_ARRAY_TASK_ID.
func SlurmScript(manifestPath string, tasks []Task, opts SlurmOptions) (string, error) {
	abs, err := absManifest(manifestPath)
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(abs)
	for i, t := range tasks {
		if t.Index != i {
			return "", fmt.Errorf("manifest %s: line %d holds task %d: not in index order", abs, i+1, t.Index)
		}
	}
	k, err := parallelism(opts.Parallel, len(tasks))
	if err != nil {
		return "", err
	}
	mem, threads, err := maxMemory(dir, tasks)
	if err != nil {
		return "", fmt.Errorf("manifest %s: %w", abs, err)
	}
	tl := opts.Time
	if tl == "" {
		tl = DefaultTime
	}
	if !slurmTime.MatchString(tl) {
		return "", fmt.Errorf("time limit %q: want minutes, HH:MM:SS or D-HH:MM:SS", tl)
	}
	bin := opts.Binary
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return "", fmt.Errorf("sweep binary: %w", err)
		}
	}
	if bin, err = filepath.Abs(bin); err != nil {
		return "", fmt.Errorf("sweep binary %s: %w", opts.Binary, err)
	}
	name := opts.JobName
	if name == "" {
		name = "sweep-" + strings.Map(func(r rune) rune {
			if !safeWord(string(r)) {
				return '_'
			}
			return r
		}, filepath.Base(dir))
	}
	logs := filepath.Join(dir, "logs")
	for _, f := range []struct{ what, s string }{{"manifest directory", logs}, {"job name", name}, {"partition", opts.Partition}} {
		if (f.s != "" || f.what != "partition") && !safeWord(f.s) {
			return "", fmt.Errorf("%s %q: spaces, quotes, %% and shell characters are not allowed on an #SBATCH line", f.what, f.s)
		}
	}
	if strings.ContainsAny(abs+bin, "\n\r") {
		return "", fmt.Errorf("manifest %q or binary %q: a newline in a path", abs, bin)
	}
	var b strings.Builder
	b.WriteString("#!/bin/bash\n")
	fmt.Fprintf(&b, "#SBATCH --job-name=%s\n", name)
	fmt.Fprintf(&b, "#SBATCH --array=0-%d%%%d\n", len(tasks)-1, k)
	fmt.Fprintf(&b, "#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=%d\n", threads)
	fmt.Fprintf(&b, "#SBATCH --mem=%dM\n", mem.MiB())
	fmt.Fprintf(&b, "#SBATCH --time=%s\n", tl)
	if opts.Partition != "" {
		fmt.Fprintf(&b, "#SBATCH --partition=%s\n", opts.Partition)
	}
	b.WriteString("#SBATCH --requeue\n")
	fmt.Fprintf(&b, "#SBATCH --signal=B:TERM@%d\n", SignalSeconds)
	b.WriteString("#SBATCH --open-mode=append\n")
	fmt.Fprintf(&b, "#SBATCH --output=%s/%%A_%%a.out\n", logs)
	fmt.Fprintf(&b, "#\n# %d tasks of %s, at most %d at once.\n", len(tasks), abs, k)
	fmt.Fprintf(&b, "# Memory of the largest task (MiB): parameters %.1f, optimizer %.1f, %d replica(s) %.1f, analysis %.1f, data %.1f, runtime margin %.1f.\n",
		mib(mem.Params), mib(mem.Optimizer), threads, mib(mem.Replicas), mib(mem.Analysis), mib(mem.Data), mib(mem.Margin))
	b.WriteString("# SIGTERM (the time limit, scancel --signal=TERM, preemption) makes a task save and\n")
	b.WriteString("# exit 143; a requeued task resumes from its checkpoint, a finished one exits 0 at once.\n")
	b.WriteString("# exec: the signal of --signal=B: goes to the batch shell, which the sweep becomes.\n")
	fmt.Fprintf(&b, "cd %s || exit 1\n", shellQuote(dir))
	words := []string{shellQuote(bin)}
	for _, a := range opts.Args {
		words = append(words, shellQuote(a))
	}
	fmt.Fprintf(&b, "exec %s run -manifest %s\n", strings.Join(words, " "), shellQuote(abs))
	return b.String(), nil
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// WriteSlurm writes script (SlurmScript's) to path atomically and makes
// the logs directory beside manifestPath that its output names.
func WriteSlurm(manifestPath, path, script string) error {
	abs, err := absManifest(manifestPath)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(filepath.Dir(abs), "logs"), 0o755); err != nil {
		return fmt.Errorf("slurm logs directory: %w", err)
	}
	return atomicfile.WriteWith(path, atomicfile.Options{Perm: 0o755}, func(w io.Writer) error {
		_, err := io.WriteString(w, script)
		return err
	})
}

// Sbatch is the command SubmitSlurm runs (tests replace it).
var Sbatch = "sbatch"

var jobID = regexp.MustCompile(`^[0-9]+(;[A-Za-z0-9_.-]+)?$`)

// SubmitSlurm submits the script at path with `sbatch --parsable` and
// returns the job id.
func SubmitSlurm(path string) (string, error) {
	if _, err := exec.LookPath(Sbatch); err != nil {
		return "", fmt.Errorf("submit %s: %s not found: is this a Slurm login node? (%v)", path, Sbatch, err)
	}
	cmd := exec.Command(Sbatch, "--parsable", path)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.Join(strings.Fields(stderr.String()), " ")
		return "", fmt.Errorf("submit %s: %s: %v: %s", path, Sbatch, err, msg)
	}
	id := strings.TrimSpace(out.String())
	if !jobID.MatchString(id) {
		return "", fmt.Errorf("submit %s: %s printed %q, not a job id", path, Sbatch, id)
	}
	id, _, _ = strings.Cut(id, ";")
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return "", fmt.Errorf("submit %s: job id %q: %w", path, id, err)
	}
	return id, nil
}
