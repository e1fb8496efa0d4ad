package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/atomicfile"
	"github.com/capstan-ml/capstan/capsnet/safetensors"
	"github.com/capstan-ml/capstan/kernels"
	"github.com/capstan-ml/capstan/train/runfile"
	"github.com/capstan-ml/capstan/train/telemetry"
)

// The files of a run directory: the checkpoint (a PyTorch state dict with
// the run's state in its metadata) and metrics. The optimizer state is
// saved as optimizer-STEP.safetensors, named by the checkpoint's
// "optimizer" metadata.
const (
	CheckpointName = "checkpoint.safetensors"
	MetricsName    = "metrics.ndjson"
)

// LockName is the lock file Run holds in its output directory for as long
// as it runs: a second trainer on the same directory is refused with the
// first one's process id. The lock is an advisory lock on the open file
// (flock), so it dies with its process, kill -9 included; the file itself
// stays and is harmless.
const LockName = "lock"

// ErrLocked is wrapped by the error of Run when another trainer holds the
// run directory's lock (errors.Is): a scheduler may retry later.
var ErrLocked = errors.New("run directory in use")

// ErrOtherRun is wrapped by the error of Run (a *FieldError of OutDir)
// when a fresh run's directory (or the directory a run resumes into,
// other than its own) holds a run's checkpoint, of any model, the same
// one included, or a checkpoint that cannot be read, and Overwrite is not
// set: a run directory is never started over by default. Its message says
// what can be done, and a command may say it in its own terms.
var ErrOtherRun = errors.New("choose another run directory, or set Overwrite to replace it")

// resumeHint precedes ErrOtherRun in the error of a run directory holding
// a run that can be resumed.
const resumeHint = "resume it, "

// optimizerFile is the name of the optimizer state saved at an optimizer
// step. The checkpoint names the file it belongs to (metadata
// "optimizer"), so the pair commits as one unit when the checkpoint is
// renamed into place: see runDir.commit.
func optimizerFile(step int) string { return fmt.Sprintf("optimizer-%d.safetensors", step) }

// isOptimizerFile reports whether name is the plain name of an optimizer
// state file of a run directory: optimizer-STEP.safetensors, STEP decimal
// digits; no separator, no "..", nothing else. Only such files are ever
// removed from a run directory.
func isOptimizerFile(name string) bool {
	step, ok := strings.CutPrefix(name, "optimizer-")
	step, ok2 := strings.CutSuffix(step, ".safetensors")
	if !ok || !ok2 || step == "" || len(step) > 20 {
		return false
	}
	for _, c := range step {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// metaOptimizer returns the optimizer state file a checkpoint file's
// metadata names ("optimizer"), validated: a plain optimizer-STEP
// name inside the run directory (isOptimizerFile), or "" when the key is
// absent (a checkpoint that predates it: its directory's optimizer files
// are then left alone). Every path that reads a run directory's
// metadata, training, finished or clean-up, takes the name from here.
func metaOptimizer(meta map[string]string, file string) (string, error) {
	name, ok := meta["optimizer"]
	if !ok {
		return "", nil
	}
	if !isOptimizerFile(name) {
		return "", fmt.Errorf("resume: %s: metadata optimizer %q is not an optimizer file name (optimizer-STEP.safetensors in the run directory); nothing was removed", file, name)
	}
	return name, nil
}

// runDir is a run directory held by a run: open creates and locks it;
// the run then writes its files only through it: metrics (rewritten
// whole, atomically), telemetry (appended), and the checkpoint with its
// optimizer state, committed as one unit (commit). A killed run's
// leftovers are removed by clean.
type runDir struct {
	path    string
	release func()
	tw      *telemetry.Writer // nil without telemetry
}

// openRunDir creates the run directory path if needed and takes its lock
// (LockName), or returns an error wrapping ErrLocked naming the process
// that holds it. close releases it.
func openRunDir(path string) (*runDir, error) {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	lock := filepath.Join(path, LockName)
	// Never through a link: the lock file is truncated and written.
	f, err := runfile.OpenFile(lock, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	if err := tryLock(f); err != nil {
		holder, _ := io.ReadAll(io.LimitReader(f, 256))
		f.Close()
		if errors.Is(err, errLocked) {
			who := strings.TrimSpace(string(holder))
			if who == "" {
				who = "a process that has not written its id yet"
			}
			return nil, fmt.Errorf("%w: %s is in use by another trainer (%s); wait for it to finish or choose another run directory", ErrLocked, path, who)
		}
		return nil, fmt.Errorf("lock %s: %w", lock, err)
	}
	if err := checkFiles(path); err != nil {
		unlock(f)
		f.Close()
		return nil, err
	}
	host, _ := os.Hostname()
	id := fmt.Sprintf("pid %d on %s, started %s\n", os.Getpid(), host, time.Now().Format(time.DateTime))
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(id), 0)
	}
	return &runDir{path: path, release: func() {
		unlock(f)
		f.Close()
	}}, nil
}

// checkFiles refuses a run directory whose checkpoint, metrics or
// telemetry is there but is not a regular file (a link, FIFO, directory
// or device): the run would replace it, follow it or wait on it. The
// error names the file and says to remove or rename it.
func checkFiles(dir string) error {
	for _, name := range []string{CheckpointName, MetricsName, telemetry.FileName, telemetry.GzipName} {
		if err := runfile.Check(filepath.Join(dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("run directory: %w", err)
		}
	}
	return nil
}

// close closes the telemetry file, if any, and releases the lock.
func (d *runDir) close() {
	if d.tw != nil {
		d.tw.Close()
	}
	d.release()
}

// checkpoint is the path of the run directory's checkpoint.
func (d *runDir) checkpoint() string { return filepath.Join(d.path, CheckpointName) }

// refuseOther refuses to start a fresh run of model m over a run
// directory that holds a run's checkpoint, finished or partial, of any
// model, this one included (a *FieldError of OutDir wrapping
// ErrOtherRun): its checkpoint would be replaced and its metrics mixed
// with this run's. Only Overwrite, or resuming the run, goes on.
func (d *runDir) refuseOther(m capsnet.Config) error {
	existing := d.checkpoint()
	if _, err := os.Lstat(existing); err != nil {
		return nil
	}
	var ck *capsnet.Checkpoint
	err := runfile.Check(existing)
	if err == nil {
		ck, err = capsnet.ReadCheckpoint(existing)
	}
	if err != nil {
		return &FieldError{"OutDir", d.path, fmt.Errorf("holds a checkpoint that cannot be read (%v): %w", err, ErrOtherRun)}
	}
	what, not := "model "+ck.Config.Name, ", not of "+m.Name
	switch {
	case !ck.HasConfig():
		what = "a checkpoint without model config"
	case ck.Config.JSON() == m.JSON():
		what, not = "the same model "+ck.Config.Name, ""
	case ck.Config.Name == m.Name:
		what = "another configuration of model " + ck.Config.Name
	}
	return &FieldError{"OutDir", d.path, fmt.Errorf("holds a run of %s (epoch %s)%s: %s%w", what, ck.Meta["epoch"], not, resumeHint, ErrOtherRun)}
}

// clean removes what a killed run leaves behind: temporary files of
// interrupted atomic writes and, when optimizers is set, optimizer states
// (optimizer-STEP.safetensors, regular files only) other than keep, the
// one the committed checkpoint names ("" with optimizers: all of them,
// for a run that starts afresh). Nothing else is touched: links, legacy
// and unknown files stay.
func (d *runDir) clean(keep string, optimizers bool) error {
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return fmt.Errorf("run directory: %w", err)
	}
	for _, e := range entries {
		n := e.Name()
		stale := strings.HasPrefix(n, ".") && strings.Contains(n, ".tmp-")
		stale = stale || (optimizers && isOptimizerFile(n) && n != keep)
		if stale && e.Type().IsRegular() {
			if err := os.Remove(filepath.Join(d.path, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("removing stale %s: %w", n, err)
			}
		}
	}
	return nil
}

// writeMetrics replaces metrics.ndjson, atomically, by one line per
// completed epoch of history and, when extra is not nil, one more line
// (the interrupted epoch's partial figures).
func (d *runDir) writeMetrics(history []EpochMetrics, extra *EpochMetrics) error {
	b := metricsFile(history, extra)
	err := atomicfile.Write(filepath.Join(d.path, MetricsName), func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

// openTelemetry opens the telemetry file of the run h.Run: continued (cut
// back to the checkpoint's step, in the form it has) when cont is set (the
// run resumes in its own directory and the file is this run's), else a
// fresh one of form form.
func (d *runDir) openTelemetry(h telemetry.Header, cont bool, step int, form telemetry.Form) error {
	var err error
	if cont {
		d.tw, err = telemetry.Resume(d.path, h, step, form)
	} else {
		d.tw, err = telemetry.Create(d.path, h, form)
	}
	return err
}

// telemetryHeader is the telemetry file's header of a model's run: its
// capsule layers as the net n has them.
func telemetryHeader(model string, batch int, n *capsnet.Net) telemetry.Header {
	h := telemetry.Header{Format: telemetry.Format, Model: model, Batch: batch}
	for _, L := range n.Layers() {
		h.Layers = append(h.Layers, telemetry.Layer{Name: L.Name, N: L.N, D: L.D})
	}
	return h
}

// commit saves the run: the telemetry records written so far made
// durable first (a checkpoint never names a step whose records could be
// lost; a resume cuts the records after it, telemetry.Resume), then the
// parameters and the optimizer state as one unit. The optimizer state
// goes first, to its own step-named file (atomically); the checkpoint,
// which names that file and carries the run's state (epoch, step,
// position in the epoch, metrics history), is then renamed into place:
// that rename is the commit. A kill before it leaves the previous
// checkpoint and the optimizer file it names (removed only after the
// commit), so the directory always resumes from a consistent pair.
func (d *runDir) commit(t *Trainer, st runState) error {
	if d.tw != nil {
		if err := d.tw.Sync(); err != nil {
			return err
		}
	}
	meta := st.meta(t.Step)
	opt := map[string]safetensors.Tensor{}
	for i, q := range t.P.List {
		m, v := t.Moments(i)
		opt["adam.m."+q.Name] = safetensors.Tensor{Shape: []int{len(m)}, Data: m}
		opt["adam.v."+q.Name] = safetensors.Tensor{Shape: []int{len(v)}, Data: v}
	}
	optName := optimizerFile(t.Step)
	fault("save")
	err := atomicfile.Write(filepath.Join(d.path, optName), func(w io.Writer) error {
		return safetensors.Encode(faultWriter{w, "write-optimizer"}, opt, map[string]string{"epoch": meta["epoch"], "step": meta["step"], "batch": meta["batch"]})
	})
	if err != nil {
		return err
	}
	fault("optimizer-written")
	meta["optimizer"] = optName
	ckMeta := map[string]string{"format": capsnet.CheckpointFormat, "config": t.P.Config.JSON()}
	for k, v := range meta {
		ckMeta[k] = v
	}
	err = atomicfile.Write(d.checkpoint(), func(w io.Writer) error {
		return safetensors.Encode(faultWriter{w, "write-checkpoint"}, t.P.TorchTensors(), ckMeta)
	})
	if err != nil {
		return err
	}
	fault("checkpoint-written")
	// Committed: the optimizer states of earlier steps are garbage now.
	return d.clean(optName, true)
}

// meta is the checkpoint metadata of the run state at an optimizer step
// (without "format", "config" and "optimizer"): the run state's own keys,
// then the provenance.
func (st runState) meta(step int) map[string]string {
	hist, _ := json.Marshal(st.history)
	meta := map[string]string{
		"epoch": strconv.Itoa(st.epoch), "step": strconv.Itoa(step), "kernels": kernels.Impl(),
		"batch": strconv.Itoa(st.partial.Steps), "metrics": string(hist),
	}
	if st.run != "" {
		meta["run"] = st.run
	}
	if st.partial.Steps > 0 {
		pj, _ := json.Marshal(st.partial)
		meta["partial"] = string(pj)
	}
	for k, v := range st.provenance {
		if _, taken := meta[k]; !taken && k != "format" && k != "config" && k != "optimizer" && k != "run" {
			meta[k] = v // never the run state's own keys
		}
	}
	if n := len(st.history); n > 0 {
		meta["val_acc"] = strconv.FormatFloat(st.history[n-1].ValAcc, 'f', 6, 64)
		if st.history[n-1].TestAcc > 0 {
			meta["test_acc"] = strconv.FormatFloat(st.history[n-1].TestAcc, 'f', 6, 64)
		}
	}
	return meta
}

// faultHook, when set (by the fault-injection tests only), is called at
// every point where a kill could land: after each training step and
// between the stages of a checkpoint write, including inside the writes.
var faultHook func(point string)

func fault(point string) {
	if faultHook != nil {
		faultHook(point)
	}
}

// faultWriter calls the fault hook before every write it passes on.
type faultWriter struct {
	w     io.Writer
	point string
}

func (f faultWriter) Write(p []byte) (int, error) {
	fault(f.point)
	return f.w.Write(p)
}
