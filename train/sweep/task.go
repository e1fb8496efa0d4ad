package sweep

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/analysis"
	"github.com/capstan-ml/capstan/train"
	"github.com/capstan-ml/capstan/train/data"
	"github.com/capstan-ml/capstan/train/eval"
)

// ErrInterrupted is returned by RunTask when its context was cancelled
// (SIGTERM, SIGINT) during training: the run directory holds a checkpoint
// of where it stopped, and running the task again resumes from there.
var ErrInterrupted = errors.New("task interrupted; its checkpoint is saved and a rerun resumes it")

// EvalSeed seeds the evaluation set of every task (the AffNIST
// transformations): every model of a sweep is analysed on the same images,
// those tools/analyze takes by default.
const EvalSeed = 1

// evalBatch is the batch size of a task's analysis (memory does not grow
// with the evaluation set).
const evalBatch = 100

// RunOptions are a worker's settings, not the task's: where the data sets
// are ("": the cache, see train/data) and where progress goes (nil: none).
type RunOptions struct {
	DataDir string
	Log     io.Writer
}

// RunTask runs task t of the manifest in directory dir: when its result
// file exists it returns it at once; otherwise it trains the model in its
// run directory (train.Run: resuming from the checkpoint there, holding
// the directory's lock, saving when ctx is cancelled) until its target or
// its epochs, analyses the final checkpoint on K images of the evaluation
// set (eval.ParseTree, docs/semantics.md §7's default thresholds) and writes the result
// file atomically. A model that cannot be built (an unknown preset, a bad
// or too large config) gives a result with status "failed", so that the
// sweep finishes without it.
//
// Errors: ErrInterrupted when ctx stopped the training (saved), an error
// wrapping train.ErrLocked when another worker holds the run directory,
// any other failure (data, files) as it is; no result file is written
// then, so a rerun tries again.
func RunTask(ctx context.Context, dir string, t Task, ro RunOptions) (Result, error) {
	log := ro.Log
	if log == nil {
		log = io.Discard
	}
	resPath := Path(dir, t.Result)
	if _, err := os.Stat(resPath); err == nil {
		r, err := ReadResult(resPath)
		if err != nil {
			return Result{}, fmt.Errorf("task %d: %w (remove it to run the task again)", t.Index, err)
		}
		fmt.Fprintf(log, "task %d: done already (%s, status %s)\n", t.Index, resPath, r.Status)
		return r, nil
	}
	model := t.Model
	if strings.HasSuffix(model, ".json") || strings.ContainsRune(model, filepath.Separator) {
		model = Path(dir, model)
	}
	cfg, err := capsnet.LoadConfig(model)
	t.Settings.applyModel(&cfg)
	if err != nil {
		r := Result{Task: t, Status: "failed", Error: "model: " + err.Error()}
		if err := WriteResult(resPath, r); err != nil {
			return Result{}, err
		}
		fmt.Fprintf(log, "task %d: failed: %s\n", t.Index, r.Error)
		return r, nil
	}
	// The whole process's memory (model, optimizer, replicas, analysis,
	// data sets) is checked before any data is loaded or graph compiled:
	// no result is written, a node with more memory may run the task.
	mem, err := (&Planner{Dir: dir}).TaskMemory(t) // its errors name the task
	if err != nil {
		return Result{}, err
	}
	if err := mem.Process(cfg.Name, t.Batch, t.Threads).Check(); err != nil {
		return Result{}, fmt.Errorf("task %d: %w", t.Index, err)
	}
	o, err := train.Recipe{Model: cfg, Data: t.Data, DataDir: ro.DataDir, ShiftDefault: true, Epochs: t.Epochs, Batch: t.Batch}.Options()
	if err != nil {
		return Result{}, fmt.Errorf("task %d: %w", t.Index, err)
	}
	runDir := Path(dir, t.Dir)
	o.Threads, o.Seed, o.TargetAcc, o.OutDir, o.Log = t.Threads, t.Seed, t.Target, runDir, log
	if err := t.Settings.apply(&o); err != nil {
		return Result{}, fmt.Errorf("task %d: %w", t.Index, err)
	}
	o.Telemetry = t.Telemetry
	o.Provenance["command"] = fmt.Sprintf("sweep run task %d", t.Index)
	ckPath := filepath.Join(runDir, train.CheckpointName)
	trained := false
	if _, err := os.Stat(ckPath); err == nil {
		ck, err := train.ReadResume(runDir)
		if err != nil {
			return Result{}, fmt.Errorf("task %d: %w", t.Index, err)
		}
		trained = finished(ck, t)
		o.Resume, o.ResumeFrom = runDir, ck
	}
	if !trained {
		res, err := train.Run(ctx, o)
		if err != nil {
			return Result{}, fmt.Errorf("task %d: %w", t.Index, err)
		}
		if res.Interrupted {
			return Result{}, ErrInterrupted
		}
	}
	r, err := analyse(ckPath, t, ro.DataDir)
	if err != nil {
		return Result{}, fmt.Errorf("task %d: %w", t.Index, err)
	}
	if t.Telemetry {
		r.Deaths = taskDeaths(runDir)
	}
	if err := WriteResult(resPath, r); err != nil {
		return Result{}, err
	}
	fmt.Fprintf(log, "task %d: done: %d epoch(s), validation accuracy %.2f%%, %s accuracy %.2f%%; result %s\n", t.Index, r.Epochs, 100*r.ValAcc, t.Eval, 100*r.EvalAcc, resPath)
	return r, nil
}

// history returns a checkpoint's completed epochs (metadata "metrics").
func history(ck *capsnet.Checkpoint) ([]train.EpochMetrics, error) {
	var h []train.EpochMetrics
	if err := json.Unmarshal([]byte(ck.Meta["metrics"]), &h); err != nil {
		return nil, fmt.Errorf("%s: metadata metrics: %v", ck.Path, err)
	}
	return h, nil
}

// finished reports whether a run's checkpoint ends its task's training:
// at an epoch's end, and all epochs done or the target reached (a resume
// would train past it).
func finished(ck *capsnet.Checkpoint, t Task) bool {
	if b := ck.Meta["batch"]; b != "" && b != "0" {
		return false // inside an epoch
	}
	h, err := history(ck)
	if err != nil || len(h) == 0 {
		return false
	}
	last := h[len(h)-1]
	return last.Epoch >= t.Epochs || (t.Target > 0 && last.ValAcc >= t.Target)
}

// analyse reads a task's final checkpoint and returns its result: the
// training figures from its history, the analysis and accuracy on the
// evaluation set, the parameters' hash.
func analyse(ckPath string, t Task, dataDir string) (Result, error) {
	ck, err := capsnet.ReadCheckpoint(ckPath)
	if err != nil {
		return Result{}, err
	}
	p, err := ck.Params(nil)
	if err != nil {
		return Result{}, err
	}
	h, err := history(ck)
	if err != nil {
		return Result{}, err
	}
	if len(h) == 0 {
		return Result{}, fmt.Errorf("%s: no completed epoch", ckPath)
	}
	last := h[len(h)-1]
	r := Result{Task: t, Status: "done", Params: int64(p.Count()), Epochs: last.Epoch, ValAcc: last.ValAcc, TestAcc: last.TestAcc,
		ReachedAcc: t.Target > 0 && last.ValAcc >= t.Target, Params256: ParamsSHA256(p)}
	for _, e := range h {
		r.TrainSecond += e.Seconds
	}
	ds, err := data.LoadTest(t.Eval, dataDir, EvalSeed)
	if err != nil {
		return Result{}, fmt.Errorf("eval %s: %w", t.Eval, err)
	}
	if t.K > 0 && t.K < ds.N {
		if ds, err = ds.Slice(0, t.K); err != nil {
			return Result{}, fmt.Errorf("eval %s: %w", t.Eval, err)
		}
	}
	in := p.Config.Input
	if in[0] != ds.C {
		return Result{}, fmt.Errorf("eval %s: model %s takes %d channel(s), the images have %d", t.Eval, p.Config.Name, in[0], ds.C)
	}
	bc := data.BatchConfig{Size: min(evalBatch, ds.N), Placement: data.PlacementFor(ds.H, ds.W, in[1], in[2]), CanvasH: in[1], CanvasW: in[2]}
	b, err := data.NewBatcher(ds, bc)
	if err != nil {
		return Result{}, fmt.Errorf("eval %s: %w", t.Eval, err)
	}
	rep, err := eval.ParseTree(p, b, 0, analysis.DefaultThresholds())
	if err != nil {
		return Result{}, fmt.Errorf("eval %s: %w", t.Eval, err)
	}
	r.Analysis = &rep
	e, err := eval.New(p, bc.Size, 1)
	if err != nil {
		return Result{}, err
	}
	defer e.Close()
	if b, err = data.NewBatcher(ds, bc); err != nil {
		return Result{}, fmt.Errorf("eval %s: %w", t.Eval, err)
	}
	if r.EvalAcc, err = e.Accuracy(b); err != nil {
		return Result{}, fmt.Errorf("eval %s: %w", t.Eval, err)
	}
	return r, nil
}

// ParamsSHA256 is the SHA-256 (hex) of a model's parameters: every
// tensor's float32 values, little-endian, in the checkpoint's layout, in
// Params.List order. Equal for bitwise-identical models, whatever their
// files' metadata.
func ParamsSHA256(p *capsnet.Params) string {
	h := sha256.New()
	var buf []float32
	var raw []byte
	for _, q := range p.List {
		n := q.Buf.Len()
		if cap(buf) < n {
			buf = make([]float32, n)
		}
		buf = buf[:n]
		q.ToTorch(buf)
		raw = raw[:0]
		for _, x := range buf {
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(x))
		}
		h.Write(raw)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TaskIndex returns the task index of a worker: the -index flag's value
// when given (flag ≥ 0), else $SLURM_ARRAY_TASK_ID (a Slurm array job),
// else $JOB_COMPLETION_INDEX (a Kubernetes Indexed Job); getenv reads the
// environment (os.Getenv). The index must be below n, the manifest's task
// count.
func TaskIndex(flag int, getenv func(string) string, n int) (int, error) {
	i, src := flag, "-index"
	if flag < 0 {
		for _, v := range []string{"SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"} {
			if s := getenv(v); s != "" {
				x, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil {
					return 0, fmt.Errorf("$%s %q: not a task index", v, trunc(s))
				}
				i, src = x, "$"+v
				break
			}
		}
		if src == "-index" {
			return 0, fmt.Errorf("no task index: give -index, or run as a Slurm array job ($SLURM_ARRAY_TASK_ID) or a Kubernetes Indexed Job ($JOB_COMPLETION_INDEX)")
		}
	}
	if i < 0 || i >= n {
		return 0, fmt.Errorf("%s %d: the manifest has tasks 0 to %d", src, i, n-1)
	}
	return i, nil
}
