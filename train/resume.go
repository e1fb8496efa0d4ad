package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/safetensors"
	"github.com/capstan-ml/capstan/train/runfile"
	"github.com/capstan-ml/capstan/train/telemetry"
)

// runState is where a run stands: the completed epochs and their metrics,
// and the steps already taken in the next epoch when a run was
// interrupted inside it.
type runState struct {
	epoch     int
	history   []EpochMetrics
	partial   partialEpoch
	optimizer string // the optimizer file the checkpoint names
	// provenance is the metadata of Options.Provenance (a resumed run's
	// taken from its checkpoint, then updated).
	provenance map[string]string
	// run identifies the run (metadata "run", telemetry Header.Run): the
	// fingerprint of the settings it started with (runFingerprint), kept
	// by its resumes; empty for the runs that predate it.
	run string
}

// maxCount bounds the epoch, step and batch counts of a checkpoint's
// metadata (a corrupt value must not wrap around in epoch+1): 2^40, or on
// a 32-bit GOARCH math.MaxInt − 1, the most an int holds with room for +1.
const maxCount = min(1<<40, math.MaxInt-1)

// resumePaths returns the run directory and checkpoint file of a resume
// path (Options.Resume: a run directory or a checkpoint file).
func resumePaths(path string) (dir, ck string) {
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		return filepath.Dir(path), path
	}
	return path, filepath.Join(path, CheckpointName)
}

// ResumeDir is the run directory of a resume path (Options.Resume: the
// directory itself, or the directory of a checkpoint file): where a resumed run keeps
// writing unless told otherwise.
func ResumeDir(path string) string {
	dir, _ := resumePaths(path)
	return dir
}

// sameDir reports whether a and b name the same existing directory.
func sameDir(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// ReadResume reads the checkpoint of a resume path (Options.Resume: a run
// directory or a checkpoint file) once: its Config is the run's model (when the file
// names one). Pass it as Options.ResumeFrom with Options.Resume set to the
// same path, so Run does not read it again.
func ReadResume(path string) (*capsnet.Checkpoint, error) {
	_, ck := resumePaths(path)
	// A link, FIFO or device is refused before it is opened (a FIFO would
	// block the reader).
	if err := runfile.Check(ck); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("resume: checkpoint %w", err)
	}
	c, err := capsnet.ReadCheckpoint(ck)
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	return c, nil
}

// loadResumed loads a resumed run's parameters, with the errors of a
// resume.
func loadResumed(p *capsnet.Params, ck *capsnet.Checkpoint) error {
	if err := p.Load(ck); err != nil {
		if ck.HasConfig() && ck.Config.Name == p.Config.Name && ck.Config.JSON() != p.Config.JSON() {
			return fmt.Errorf("resume: %w; resume without a model to use the checkpoint's own", err)
		}
		return fmt.Errorf("resume: %w", err)
	}
	return nil
}

// metaCount returns a count of a checkpoint file's metadata.
func metaCount(meta map[string]string, key, file string) (int, error) {
	v, err := strconv.Atoi(meta[key])
	if err != nil || v < 0 || v > maxCount {
		return 0, fmt.Errorf("resume: %s: metadata %s %q is not a count", file, key, meta[key])
	}
	return v, nil
}

// metaHistory returns the completed epochs of a checkpoint file's metadata
// ("metrics").
func metaHistory(meta map[string]string, file string) ([]EpochMetrics, error) {
	js, ok := meta["metrics"]
	if !ok {
		return nil, fmt.Errorf("resume: %s: metadata metrics missing", file)
	}
	var history []EpochMetrics
	if err := json.Unmarshal([]byte(js), &history); err != nil {
		return nil, fmt.Errorf("resume: %s: metadata metrics: %v", file, err)
	}
	return history, nil
}

// finishedRun returns a Result with Done set when the resumed run
// (o.ResumeFrom) has nothing left to train under o (finished), after
// checking that its checkpoint holds o.Model, as a resume does, and, when
// it is resumed in its own directory, repairing that directory as a
// resume does after a kill: the metrics file rewritten from the
// checkpoint's history (the same bytes when nothing was lost), optimizer
// states other than the one it names removed (none when it names none: a
// checkpoint that predates the metadata). Its metadata is read as a
// resume reads it (readRunState): a malformed optimizer name is refused
// before anything is removed. It returns nil when there is training to
// do.
func (o *Options) finishedRun() (*Result, error) {
	res, st, err := o.finished()
	if res == nil || err != nil {
		return nil, err
	}
	p, err := capsnet.NewParams(o.Model)
	if err != nil {
		return nil, err
	}
	if err := loadResumed(p, o.ResumeFrom); err != nil {
		return nil, err
	}
	if dir := ResumeDir(o.Resume); sameDir(dir, o.OutDir) {
		d, err := openRunDir(dir)
		if err != nil {
			return nil, err
		}
		defer d.close()
		if err := d.clean(st.optimizer, st.optimizer != ""); err != nil {
			return nil, err
		}
		if err := d.writeMetrics(st.history, nil); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// finished returns a Result with Done set, and the run's state read from
// its checkpoint (readRunState), when the resumed run (o.ResumeFrom) has
// nothing left to train under o: every epoch asked for is completed, or it
// stopped at the end of an epoch that reached o.TargetAcc. It returns a nil
// Result when there is training to do, and an error when the checkpoint's
// run state cannot be read (which resume would report the same way).
func (o *Options) finished() (*Result, runState, error) {
	_, file := resumePaths(o.Resume)
	st, _, err := readRunState(o.ResumeFrom, file)
	if err != nil || st.epoch == 0 {
		return nil, st, err
	}
	res := &Result{Checkpoint: file, Done: st.epoch}
	// A run stopped inside an epoch went on past its last completed one,
	// so that one had not reached the run's target: training goes on.
	if n := len(st.history); n > 0 && st.history[n-1].Epoch == st.epoch && st.partial.Steps == 0 {
		res.LastValAcc = st.history[n-1].ValAcc
		res.ReachedAcc = o.TargetAcc > 0 && res.LastValAcc >= o.TargetAcc
	}
	if res.ReachedAcc || st.epoch >= o.Epochs {
		return res, st, nil
	}
	return nil, st, nil
}

// readRunState returns where the run of checkpoint ck (file) stands, and
// its optimizer step, from the checkpoint's metadata.
func readRunState(ck *capsnet.Checkpoint, file string) (st runState, step int, err error) {
	meta := ck.Meta
	if st.epoch, err = metaCount(meta, "epoch", file); err != nil {
		return st, 0, err
	}
	if step, err = metaCount(meta, "step", file); err != nil {
		return st, 0, err
	}
	if st.partial.Steps, err = metaCount(meta, "batch", file); err != nil {
		return st, 0, err
	}
	if st.partial.Steps > 0 {
		steps := st.partial.Steps
		if err := json.Unmarshal([]byte(meta["partial"]), &st.partial); err != nil || st.partial.Steps != steps ||
			st.partial.Seen < 0 || st.partial.Correct < 0 || st.partial.Correct > st.partial.Seen {
			return st, 0, fmt.Errorf("resume: %s: metadata partial %q does not describe the interrupted epoch", file, meta["partial"])
		}
	}
	if st.history, err = metaHistory(meta, file); err != nil {
		return st, 0, err
	}
	st.provenance = map[string]string{}
	for _, k := range append([]string{"data", "command"}, provenanceKeys...) {
		if v, ok := meta[k]; ok {
			st.provenance[k] = v
		}
	}
	st.run = meta["run"]
	if len(st.run) > telemetry.MaxRunBytes {
		return st, 0, fmt.Errorf("resume: %s: metadata run of %d bytes, want at most %d", file, len(st.run), telemetry.MaxRunBytes)
	}
	if st.optimizer, err = metaOptimizer(meta, file); err != nil {
		return st, 0, err
	}
	return st, step, nil
}

// resumeRun loads parameters and optimizer state from a run directory (or
// a checkpoint file, whose directory holds the optimizer state) into t and
// returns where the run stands. ck is the run's checkpoint when already
// read (nil: read it here).
func resumeRun(t *Trainer, path string, ck *capsnet.Checkpoint) (runState, error) {
	dir, file := resumePaths(path)
	if ck == nil {
		var err error
		if ck, err = ReadResume(path); err != nil {
			return runState{}, err
		}
	}
	if err := loadResumed(t.P, ck); err != nil {
		return runState{}, err
	}
	st, step, err := readRunState(ck, file)
	if err != nil {
		return st, err
	}
	if st.optimizer == "" {
		return st, fmt.Errorf("resume: %s: metadata optimizer missing: the checkpoint names no optimizer state to train on (it predates the metadata); its optimizer files were left alone", file)
	}
	if err := loadOptimizer(t, filepath.Join(dir, st.optimizer), file, step); err != nil {
		return st, err
	}
	t.Step = step
	return st, nil
}

// loadOptimizer loads the optimizer state at optPath, of the checkpoint
// file's optimizer step, into t. It is checked like the weights: every
// moment present with its size, finite, second moments ≥ 0; t is left as
// it was when it is refused.
func loadOptimizer(t *Trainer, optPath, file string, step int) error {
	err := runfile.Check(optPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("resume: optimizer state %w", err)
	}
	opt, err := safetensors.Read(optPath)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("resume: %s needs its optimizer state %s to train on, and it is missing (a finished run may be kept without it, but cannot then train further): %w", file, optPath, err)
	}
	if err != nil {
		return fmt.Errorf("resume: %w", err)
	}
	if opt.Metadata["step"] != strconv.Itoa(step) {
		return fmt.Errorf("resume: %s is from step %s but the checkpoint from step %d", optPath, opt.Metadata["step"], step)
	}
	for name := range opt.Tensors {
		if !strings.HasPrefix(name, "adam.m.") && !strings.HasPrefix(name, "adam.v.") || t.P.Get(name[len("adam.m."):]) == nil {
			return fmt.Errorf("resume: %s: unexpected tensor %q (not a moment of model %s)", optPath, name, t.P.Config.Name)
		}
	}
	for i, q := range t.P.List {
		m, v := t.Moments(i)
		for _, pair := range []struct {
			name string
			dst  []float32
		}{{"adam.m." + q.Name, m}, {"adam.v." + q.Name, v}} {
			src, ok := opt.Tensors[pair.name]
			if !ok || len(src.Data) != len(pair.dst) {
				return fmt.Errorf("resume: %s: tensor %s missing or of the wrong size", optPath, pair.name)
			}
			for j, x := range src.Data {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) || (pair.name[5] == 'v' && x < 0) {
					return fmt.Errorf("resume: %s: tensor %s element %d is %v", optPath, pair.name, j, x)
				}
			}
		}
	}
	for i, q := range t.P.List {
		m, v := t.Moments(i)
		copy(m, opt.Tensors["adam.m."+q.Name].Data)
		copy(v, opt.Tensors["adam.v."+q.Name].Data)
	}
	return nil
}

// start prepares the run directory for o's run with trainer t and returns
// where the run stands: t resumed from o.Resume (when set), what a killed
// run left removed (temporary files, an optimizer state written just
// before a kill that the checkpoint never committed), the metrics file
// rewritten from the run's history and, with o.Telemetry, the telemetry
// file opened (continued when the run resumes in its own directory).
func (d *runDir) start(o *Options, t *Trainer) (runState, error) {
	var st runState
	same := o.Resume != "" && sameDir(ResumeDir(o.Resume), d.path)
	if o.Resume != "" {
		var err error
		if st, err = resumeRun(t, o.Resume, o.ResumeFrom); err != nil {
			return st, err
		}
		if st.partial.Steps > 0 {
			fmt.Fprintf(o.Log, "resumed from %s in epoch %d after batch %d (step %d)\n", o.Resume, st.epoch+1, st.partial.Steps, t.Step)
		} else {
			fmt.Fprintf(o.Log, "resumed from %s at epoch %d (step %d)\n", o.Resume, st.epoch+1, t.Step)
		}
	} else {
		st.run = o.runFingerprint()
	}
	keep := ""
	if same {
		keep = st.optimizer
	}
	// A fresh run, or a resume into another directory, owns no optimizer
	// state there (refuseOther let it in: the directory held no
	// checkpoint, or Overwrite). A resume in its own directory keeps the
	// one its checkpoint names, and all of them when it names none.
	if err := d.clean(keep, !same || keep != ""); err != nil {
		return st, err
	}
	if err := d.writeMetrics(st.history, nil); err != nil {
		return st, err
	}
	if o.Telemetry {
		h := telemetryHeader(o.Model.Name, o.Batch, t.Reps[0])
		h.Run = st.run
		if err := d.openTelemetry(h, same, t.Step, o.TelemetryForm); err != nil {
			return st, err
		}
		t.SetTelemetry(true)
	}
	return st, nil
}
