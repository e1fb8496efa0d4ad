package train

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/safetensors"
	"github.com/capstan-ml/capstan/kernels"
	"github.com/capstan-ml/capstan/train/data"
	"github.com/capstan-ml/capstan/train/eval"
	"github.com/capstan-ml/capstan/train/telemetry"
)

// Options configures a training run (defaults: spec §5, DefaultOptions).
type Options struct {
	Model      capsnet.Config
	Train, Val *data.Dataset
	// Test, when set, is evaluated after every epoch like Val and reported
	// beside it (EpochMetrics.TestAcc); it never stops training: only Val,
	// which must be held out of the training set, does (TargetAcc).
	Test *data.Dataset
	// Provenance is recorded in every checkpoint's metadata (e.g. "data":
	// the data set's name, "command": the command line); Run adds
	// "seed", "train_set", "val_set", "test_set", "val_acc" and "test_acc"
	// (of the last completed epoch). A resumed run's "command" is
	// appended to the checkpoint's, one line per invocation.
	Provenance map[string]string
	// TrainPlacement and ValPlacement put the images on a Canvas×Canvas
	// field (the deep model: random for training, centred for validation);
	// PlacementNone keeps the dataset's size.
	TrainPlacement, ValPlacement data.Placement
	Canvas                       int
	// MaxShift bounds PlacementShift (pixels).
	MaxShift int

	Batch, Threads, Epochs int
	LR                     float64 // initial learning rate
	LRDecay                float64 // multiplied into the rate after every epoch
	WeightDecay            float64
	// TargetAcc stops training once validation accuracy reaches it (0..1;
	// 0 disables).
	TargetAcc float64
	Seed      uint64
	// OutDir receives checkpoint.safetensors, optimizer-STEP.safetensors,
	// metrics.ndjson and, with Telemetry, telemetry.ndjson.
	OutDir string
	// Resume names a checkpoint directory (or file) to continue from.
	Resume string
	// Overwrite lets a fresh run replace a run directory that holds a run
	// of another model or configuration (refused otherwise).
	Overwrite bool
	// ResumeFrom is Resume's checkpoint when the caller has already read it
	// (ReadResume, e.g. to take its model): Run then does not read it
	// again. nil: Run reads it.
	ResumeFrom *capsnet.Checkpoint
	// Log receives human-readable progress; Progress draws a bar with rate
	// and ETA (for terminals) instead of periodic plain lines.
	Log      io.Writer
	Progress bool
	// Telemetry writes telemetry.ndjson (train/telemetry) to OutDir: per
	// training step, every capsule's largest norm over the batch and
	// ‖∂L_m/∂W[j,i]‖_F of every routing layer (the paper's appendix
	// figures). It costs a margin-only backward pass through the capsule
	// layers per step: about 1.5% of the deep model's training CPU time
	// (docs/telemetry.md).
	Telemetry bool
}

// DefaultOptions returns the paper's recipe (spec §5) for a model.
func DefaultOptions(m capsnet.Config) Options {
	return Options{Model: m, Batch: 512, Threads: 1, Epochs: 10, LR: 1e-3, LRDecay: 0.97, WeightDecay: 1e-6, Seed: 1, Log: io.Discard, Canvas: 40}
}

// EpochMetrics is one line of metrics.ndjson.
type EpochMetrics struct {
	Epoch       int     `json:"epoch"`
	Loss        float64 `json:"loss"`
	MarginLoss  float64 `json:"margin_loss"`
	ReconLoss   float64 `json:"recon_loss"`
	TrainAcc    float64 `json:"train_acc"`
	ValAcc      float64 `json:"val_acc"`
	TestAcc     float64 `json:"test_acc,omitempty"` // absent without Options.Test
	LR          float64 `json:"lr"`
	ImgPerSec   float64 `json:"img_per_s"`
	Seconds     float64 `json:"seconds"`
	Kernels     string  `json:"kernels"`
	Interrupted bool    `json:"interrupted,omitempty"`
}

// Result summarizes a run.
type Result struct {
	// Epochs are the epochs this call completed (or interrupted).
	Epochs []EpochMetrics
	// Checkpoint is the run's checkpoint file: the one written, or, when
	// Done is set, the resumed one, left as it was.
	Checkpoint  string
	Interrupted bool
	// ReachedAcc reports that validation accuracy reached
	// Options.TargetAcc: in an epoch of this call or, with Done, in the
	// resumed run's last completed epoch.
	ReachedAcc bool
	// Done reports that a resumed run had nothing left to train: it had
	// completed Options.Epochs, or its last completed epoch had reached
	// Options.TargetAcc. Nothing was read besides its checkpoint and
	// nothing was written; Done names the completed epochs and LastValAcc
	// the last one's validation accuracy.
	Done       int
	LastValAcc float64
}

// The files of a run directory: the checkpoint (a PyTorch state dict with
// the run's state in its metadata) and metrics. The optimizer state is
// saved as optimizer-STEP.safetensors, named by the checkpoint's
// "optimizer" metadata; OptimizerName is the single name of older runs,
// still read on resume.
const (
	CheckpointName = "checkpoint.safetensors"
	OptimizerName  = "optimizer.safetensors"
	MetricsName    = "metrics.ndjson"
)

// Run trains until Epochs are done, TargetAcc is reached or ctx is
// cancelled (Ctrl-C, SIGTERM): then it finishes the current step, writes a
// checkpoint of the position inside the epoch and returns with
// Result.Interrupted set; a resume continues from that step and ends
// bit-identical to an uninterrupted run. Every epoch ends with a
// validation pass, a checkpoint and its metrics line.
//
// The run directory is crash-safe: Run holds its lock (LockName) while it
// runs, removes what a killed run left (temporary files, uncommitted
// optimizer states) when it starts, and commits the parameters and the
// optimizer state as one unit (see Trainer.save), so after kill -9 at any
// instant the directory resumes from the last committed step.
// metrics.ndjson is rewritten from the checkpoint's own history, so it
// holds each completed epoch exactly once. With Options.Telemetry,
// telemetry.ndjson is synced before every checkpoint commit and cut back
// to the checkpoint's step on resume, so it holds every step up to the
// checkpoint exactly once. A directory holding a run of
// another model or configuration is refused unless Overwrite is set.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	var err error
	if o.Resume != "" && o.ResumeFrom == nil {
		if o.ResumeFrom, err = ReadResume(o.Resume); err != nil {
			return nil, err
		}
	}
	if o.Resume != "" {
		// A run that already did what is asked of it trains nothing: it
		// does not read its optimizer state (a finished run may be kept
		// without it) and writes nothing, but repairs its own directory
		// after a kill (metrics, stale files) as a resume does.
		if res, err := o.finishedRun(); res != nil || err != nil {
			return res, err
		}
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
	}
	release, err := lockRunDir(o.OutDir)
	if err != nil {
		return nil, err
	}
	defer release()
	if err := o.checkOutDir(); err != nil {
		return nil, err
	}
	params, err := capsnet.NewParams(o.Model)
	if err != nil {
		return nil, err
	}
	params.Init(o.Seed)
	t, err := NewTrainer(params, o.Batch, o.Threads, kernels.AdamParams{LR: o.LR, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: o.WeightDecay})
	if err != nil {
		return nil, err
	}
	defer t.Close()
	var st runState
	if o.Resume != "" {
		if st, err = t.resume(o.Resume, o.ResumeFrom); err != nil {
			return nil, err
		}
		if st.partial.Steps > 0 {
			fmt.Fprintf(o.Log, "resumed from %s in epoch %d after batch %d (step %d)\n", o.Resume, st.epoch+1, st.partial.Steps, t.Step)
		} else {
			fmt.Fprintf(o.Log, "resumed from %s at epoch %d (step %d)\n", o.Resume, st.epoch+1, t.Step)
		}
	}
	if o.Resume == "" {
		st.run = o.runFingerprint()
	}
	// What a killed run left: temporary files, an optimizer state written
	// just before a kill that the checkpoint never committed.
	keep := ""
	if o.Resume != "" && sameDir(ResumeDir(o.Resume), o.OutDir) {
		keep = st.optimizer
	}
	if err := cleanStale(o.OutDir, keep); err != nil {
		return nil, err
	}
	if err := writeMetrics(o.OutDir, st.history, nil); err != nil {
		return nil, err
	}
	var tw *telemetry.Writer
	if o.Telemetry {
		if tw, err = openTelemetry(o, t, st.run); err != nil {
			return nil, err
		}
		defer tw.Close()
		t.SetTelemetry(true)
	}
	fmt.Fprintf(o.Log, "model %s: %d parameters; kernels %s; %d thread(s), batch %d; memory plan %s\n",
		o.Model.Name, params.Count(), kernels.Impl(), len(t.Reps), o.Batch, t.Plan())

	// Validation runs the training replicas forward only: no memory of its
	// own, and exactly what the training graphs compute.
	ev, err := eval.FromNets(params, t.Reps)
	if err != nil {
		return nil, err
	}
	defer ev.Close()

	tb, err := data.NewBatcher(o.Train, data.BatchConfig{Size: o.Batch, Shuffle: true, Seed: o.Seed, Placement: o.TrainPlacement, CanvasH: o.Canvas, CanvasW: o.Canvas, MaxShift: o.MaxShift, DropLast: true})
	if err != nil {
		return nil, fmt.Errorf("training data: %w", err)
	}
	vb, err := data.NewBatcher(o.Val, data.BatchConfig{Size: o.Batch, Seed: o.Seed, Placement: o.ValPlacement, CanvasH: o.Canvas, CanvasW: o.Canvas})
	if err != nil {
		return nil, fmt.Errorf("validation data: %w", err)
	}
	var testB *data.Batcher
	if o.Test != nil {
		if testB, err = data.NewBatcher(o.Test, data.BatchConfig{Size: o.Batch, Seed: o.Seed, Placement: o.ValPlacement, CanvasH: o.Canvas, CanvasW: o.Canvas}); err != nil {
			return nil, fmt.Errorf("test data: %w", err)
		}
	}
	st.provenance = o.provenance(st.provenance)

	res := &Result{Checkpoint: filepath.Join(o.OutDir, CheckpointName)}
	reconW := float64(o.Model.Loss.ReconWeight(params.Geo.Pixels))
	batch := tb.NewBatch()
	labels := make([]int, o.Batch)
	for epoch := st.epoch + 1; epoch <= o.Epochs; epoch++ {
		lr := o.LR * math.Pow(o.LRDecay, float64(epoch-1))
		tb.StartEpoch(epoch)
		acc := st.partial // the steps an interrupted run already took in this epoch
		st.partial = partialEpoch{}
		for i := 0; i < acc.Steps; i++ { // replay the order and placements up to there
			if !tb.Next(batch) {
				return res, fmt.Errorf("resume: epoch %d has %d batches of %d, the checkpoint is after batch %d (other data or batch size?)", epoch, tb.Batches(), o.Batch, acc.Steps)
			}
		}
		start := time.Now()
		prog := newProgress(o.Log, o.Progress, fmt.Sprintf("epoch %d/%d", epoch, o.Epochs), (tb.Batches()-acc.Steps)*o.Batch)
		seenHere := 0
		for ctx.Err() == nil && tb.Next(batch) {
			for i, y := range batch.Labels() {
				labels[i] = int(y)
			}
			m, r, err := t.TrainStep(batch.Images(), labels, lr)
			if err != nil {
				return res, fmt.Errorf("epoch %d step %d: %w", epoch, acc.Steps+1, err)
			}
			if rec := t.Telemetry(); tw != nil && rec != nil {
				rec.Epoch = epoch
				if err := tw.Write(rec); err != nil {
					return res, err
				}
			}
			for _, n := range t.Reps {
				for i, p := range n.Pred() {
					if p == n.Labels()[i] {
						acc.Correct++
					}
				}
			}
			acc.SumMargin, acc.SumRecon, acc.Seen, acc.Steps = acc.SumMargin+m, acc.SumRecon+r, acc.Seen+o.Batch, acc.Steps+1
			seenHere += o.Batch
			prog.update(seenHere, fmt.Sprintf("loss %.4f", (acc.SumMargin+reconW*acc.SumRecon)/float64(acc.Steps)))
			fault("step")
			if ctx.Err() != nil {
				break
			}
		}
		if err := tb.Err(); err != nil {
			return res, err
		}
		secs := time.Since(start).Seconds()
		prog.finish()
		interrupted := ctx.Err() != nil && acc.Steps < tb.Batches()
		em := EpochMetrics{Epoch: epoch, MarginLoss: acc.SumMargin / float64(max(acc.Steps, 1)), ReconLoss: acc.SumRecon / float64(max(acc.Steps, 1)),
			TrainAcc: float64(acc.Correct) / float64(max(acc.Seen, 1)), LR: lr, ImgPerSec: float64(seenHere) / secs, Seconds: secs,
			Kernels: kernels.Impl(), Interrupted: interrupted}
		em.Loss = em.MarginLoss + reconW*em.ReconLoss
		if interrupted {
			// Save the position inside the epoch: a resume replays the
			// epoch's order up to here and goes on from this step.
			st.partial = acc
			if err := saveRun(t, o.OutDir, st, tw); err != nil {
				return res, err
			}
			if err := writeMetrics(o.OutDir, st.history, &em); err != nil {
				return res, err
			}
			res.Epochs = append(res.Epochs, em)
			fmt.Fprintf(o.Log, "interrupted in epoch %d after batch %d of %d: checkpoint saved to %s (resume with -resume %s)\n", epoch, acc.Steps, tb.Batches(), res.Checkpoint, o.OutDir)
			res.Interrupted = true
			return res, nil
		}
		if em.ValAcc, err = ev.Accuracy(vb); err != nil {
			return res, err
		}
		if testB != nil {
			if em.TestAcc, err = ev.Accuracy(testB); err != nil {
				return res, err
			}
		}
		st.epoch = epoch
		st.history = append(st.history, em)
		if err := saveRun(t, o.OutDir, st, tw); err != nil {
			return res, err
		}
		fault("metrics")
		if err := writeMetrics(o.OutDir, st.history, nil); err != nil {
			return res, err
		}
		fault("epoch")
		res.Epochs = append(res.Epochs, em)
		testAcc := ""
		if testB != nil {
			testAcc = fmt.Sprintf(" (test acc %.2f%%)", 100*em.TestAcc)
		}
		fmt.Fprintf(o.Log, "epoch %d/%d: loss %.4f, train acc %.2f%%, val acc %.2f%%%s, lr %.2e, %.0f img/s, %.1fs; checkpoint %s\n",
			epoch, o.Epochs, em.Loss, 100*em.TrainAcc, 100*em.ValAcc, testAcc, lr, em.ImgPerSec, secs, res.Checkpoint)
		if o.TargetAcc > 0 && em.ValAcc >= o.TargetAcc {
			fmt.Fprintf(o.Log, "reached target validation accuracy %.2f%%\n", 100*o.TargetAcc)
			res.ReachedAcc = true
			break
		}
		if ctx.Err() != nil { // cancelled during the last step or validation: the epoch is complete and saved
			fmt.Fprintf(o.Log, "interrupted after epoch %d: checkpoint saved to %s (resume with -resume %s)\n", epoch, res.Checkpoint, o.OutDir)
			res.Interrupted = true
			return res, nil
		}
	}
	return res, nil
}

func (o *Options) check() error {
	switch {
	case o.Train == nil || o.Val == nil:
		return fmt.Errorf("training and validation datasets are required")
	case o.Batch <= 0:
		return fmt.Errorf("-batch %d must be positive", o.Batch)
	case o.Threads <= 0:
		return fmt.Errorf("-threads %d must be positive", o.Threads)
	case o.Epochs <= 0:
		return fmt.Errorf("-epochs %d must be positive", o.Epochs)
	case !(o.LR > 0) || math.IsInf(float64(o.LR), 0):
		return fmt.Errorf("-lr %v must be a positive number", o.LR)
	case !(o.LRDecay > 0 && o.LRDecay <= 1):
		return fmt.Errorf("-decay %v must be in (0, 1]", o.LRDecay)
	case !(o.TargetAcc >= 0 && o.TargetAcc <= 1): // NaN fails too
		return fmt.Errorf("-target %v must be an accuracy in [0, 1]", o.TargetAcc)
	case !(o.WeightDecay >= 0) || math.IsInf(o.WeightDecay, 0):
		return fmt.Errorf("-weight-decay %v must be a finite number ≥ 0", o.WeightDecay)
	case o.OutDir == "":
		return fmt.Errorf("-out: an output directory is required")
	case o.Batch > o.Train.N:
		// Before anything is allocated for a batch of this size.
		return fmt.Errorf("-batch %d: the training data (%s) has only %d images, less than one batch", o.Batch, o.Train.Name, o.Train.N)
	}
	c, h, w := o.Train.C, o.Train.H, o.Train.W
	if o.TrainPlacement != data.PlacementNone && o.TrainPlacement != data.PlacementShift {
		h, w = o.Canvas, o.Canvas
	}
	if in := o.Model.Input; in != [3]int{c, h, w} {
		return fmt.Errorf("model %s takes %d×%d×%d images, the training data gives %d×%d×%d (placement %s)", o.Model.Name, in[0], in[1], in[2], c, h, w, o.TrainPlacement)
	}
	return nil
}

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

// runFingerprint identifies a fresh run by the settings that decide its
// steps: model, data and placement, batch, seed, optimizer settings and
// threads (the reduction order). It is deterministic, so two runs of the
// same settings write the same telemetry files, byte for byte, and a run
// of other settings started over a run directory is told apart from the
// run its checkpoint holds.
func (o *Options) runFingerprint() string {
	set := func(d *data.Dataset) string {
		if d == nil {
			return ""
		}
		return fmt.Sprintf("%s/%d", d.Name, d.N)
	}
	s := fmt.Sprintf("model=%s\ntrain=%s\nval=%s\nplacement=%v/%v canvas=%d shift=%d\nbatch=%d threads=%d seed=%d\nlr=%v decay=%v wd=%v\n",
		o.Model.JSON(), set(o.Train), set(o.Val), o.TrainPlacement, o.ValPlacement, o.Canvas, o.MaxShift,
		o.Batch, o.Threads, o.Seed, o.LR, o.LRDecay, o.WeightDecay)
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// provenanceKeys are the metadata keys Run records for Options.Provenance
// besides the caller's own.
var provenanceKeys = []string{"seed", "train_set", "val_set", "test_set", "val_acc", "test_acc"}

// provenance merges the caller's provenance into a resumed run's (old:
// the checkpoint's, nil for a new run): the command lines accumulate.
func (o *Options) provenance(old map[string]string) map[string]string {
	p := map[string]string{}
	for k, v := range old {
		p[k] = v
	}
	for k, v := range o.Provenance {
		if k == "command" && p[k] != "" && v != "" {
			v = p[k] + "\n" + v
		}
		p[k] = v
	}
	p["seed"] = strconv.FormatUint(o.Seed, 10)
	p["train_set"] = fmt.Sprintf("%s (%d images)", o.Train.Name, o.Train.N)
	p["val_set"] = fmt.Sprintf("%s (%d images)", o.Val.Name, o.Val.N)
	if o.Test != nil {
		p["test_set"] = fmt.Sprintf("%s (%d images)", o.Test.Name, o.Test.N)
	}
	return p
}

// partialEpoch accumulates an epoch's training figures; a checkpoint
// written inside an epoch carries them (metadata "partial"), so the
// resumed epoch reports what an uninterrupted one would.
type partialEpoch struct {
	Steps     int     `json:"steps"`
	Seen      int     `json:"seen"`
	Correct   int     `json:"correct"`
	SumMargin float64 `json:"sum_margin"`
	SumRecon  float64 `json:"sum_recon"`
}

// save commits the parameters and the optimizer state as one unit. The
// optimizer state goes first, to its own step-named file (atomically);
// the checkpoint, which names that file and carries the run's state
// (epoch, step, position in the epoch, metrics history), is then renamed
// into place: that rename is the commit. A kill before it leaves the
// previous checkpoint and the optimizer file it names (removed only after
// the commit), so the directory always resumes from a consistent pair.
func (t *Trainer) save(dir string, st runState) error {
	hist, _ := json.Marshal(st.history)
	meta := map[string]string{
		"epoch": strconv.Itoa(st.epoch), "step": strconv.Itoa(t.Step), "kernels": kernels.Impl(),
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
	opt := map[string]safetensors.Tensor{}
	for i, q := range t.P.List {
		m, v := t.Moments(i)
		opt["adam.m."+q.Name] = safetensors.Tensor{Shape: []int{len(m)}, Data: m}
		opt["adam.v."+q.Name] = safetensors.Tensor{Shape: []int{len(v)}, Data: v}
	}
	optName := optimizerFile(t.Step)
	fault("save")
	err := safetensors.WriteAtomic(filepath.Join(dir, optName), func(w io.Writer) error {
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
	err = safetensors.WriteAtomic(filepath.Join(dir, CheckpointName), func(w io.Writer) error {
		return safetensors.Encode(faultWriter{w, "write-checkpoint"}, t.P.TorchTensors(), ckMeta)
	})
	if err != nil {
		return err
	}
	fault("checkpoint-written")
	// Committed: the optimizer states of earlier steps are garbage now.
	return cleanStale(dir, optName)
}

// saveRun commits a checkpoint (Trainer.save), after making the telemetry
// records written so far durable: a checkpoint never names a step whose
// records could be lost, and a resume cuts the records after it
// (telemetry.Resume).
func saveRun(t *Trainer, dir string, st runState, tw *telemetry.Writer) error {
	if tw != nil {
		if err := tw.Sync(); err != nil {
			return err
		}
	}
	return t.save(dir, st)
}

// openTelemetry opens the telemetry file of run (runState.run):
// continued (cut back to the checkpoint's step) when the run resumes in its
// own directory and the file is this run's, else a fresh one.
func openTelemetry(o Options, t *Trainer, run string) (*telemetry.Writer, error) {
	h := telemetryHeader(o.Model.Name, o.Batch, t.Reps[0])
	h.Run = run
	if o.Resume != "" && sameDir(ResumeDir(o.Resume), o.OutDir) {
		return telemetry.Resume(o.OutDir, h, t.Step)
	}
	return telemetry.Create(o.OutDir, h)
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

// resumePaths returns the run directory and checkpoint file of a -resume
// argument (a run directory or a checkpoint file).
func resumePaths(path string) (dir, ck string) {
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		return filepath.Dir(path), path
	}
	return path, filepath.Join(path, CheckpointName)
}

// ResumeDir is the run directory of a -resume argument (the directory
// itself, or the directory of a checkpoint file): where a resumed run keeps
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

// ReadResume reads the checkpoint of a -resume argument (a run directory
// or a checkpoint file) once: its Config is the run's model (when the file
// names one). Pass it as Options.ResumeFrom with Options.Resume set to the
// same path, so Run does not read it again.
func ReadResume(path string) (*capsnet.Checkpoint, error) {
	_, ck := resumePaths(path)
	c, err := capsnet.ReadCheckpoint(ck)
	if err != nil {
		return nil, fmt.Errorf("resume: %w", err)
	}
	return c, nil
}

// checkOutDir refuses to start over a run directory that holds a run of
// another model or configuration (unless Overwrite): its checkpoint would
// be replaced and its metrics mixed with this run's. The directory a run
// resumes from is its own.
func (o *Options) checkOutDir() error {
	existing := filepath.Join(o.OutDir, CheckpointName)
	if _, err := os.Stat(existing); err != nil || o.Overwrite {
		return nil
	}
	if o.Resume != "" && sameDir(ResumeDir(o.Resume), o.OutDir) {
		return nil
	}
	ck, err := capsnet.ReadCheckpoint(existing)
	if err != nil {
		return fmt.Errorf("-out %s holds a checkpoint that cannot be read (%v): choose another -out, or -overwrite to replace it", o.OutDir, err)
	}
	if ck.Config.JSON() == o.Model.JSON() {
		fmt.Fprintf(o.Log, "starting a new run in %s over the previous run of the same model (epoch %s); -resume %s would have continued it\n", o.OutDir, ck.Meta["epoch"], o.OutDir)
		return nil
	}
	what := "model " + ck.Config.Name
	if !ck.HasConfig() {
		what = "a checkpoint without model config"
	} else if ck.Config.Name == o.Model.Name {
		what = "another configuration of model " + ck.Config.Name
	}
	return fmt.Errorf("-out %s holds a run of %s (epoch %s), not of %s: resume it with -resume %s, choose another -out, or -overwrite to replace it", o.OutDir, what, ck.Meta["epoch"], o.Model.Name, o.OutDir)
}

// finishedRun returns a Result with Done set when the resumed run
// (o.ResumeFrom) has nothing left to train under o (finished), after
// checking that its checkpoint holds o.Model, as a resume does, and, when
// it is resumed in its own directory, repairing that directory as a
// resume does after a kill: the metrics file rewritten from the
// checkpoint's history (the same bytes when nothing was lost), optimizer
// states other than the one it names removed. It returns nil when there is
// training to do.
func (o *Options) finishedRun() (*Result, error) {
	res, history, err := o.finished()
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
		release, err := lockRunDir(dir)
		if err != nil {
			return nil, err
		}
		defer release()
		if err := cleanStale(dir, o.ResumeFrom.Meta["optimizer"]); err != nil {
			return nil, err
		}
		if err := writeMetrics(dir, history, nil); err != nil {
			return nil, err
		}
	}
	return res, nil
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

// finished returns a Result with Done set, and the run's completed epochs,
// when the resumed run (o.ResumeFrom) has nothing left to train under o:
// every epoch asked for is completed, or it stopped at the end of an epoch
// that reached o.TargetAcc. It returns a nil Result when there is training
// to do, and an error when the checkpoint's run state cannot be read
// (which resume would report the same way).
func (o *Options) finished() (*Result, []EpochMetrics, error) {
	ck := o.ResumeFrom
	dir, file := resumePaths(o.Resume)
	epoch, err := strconv.Atoi(ck.Meta["epoch"])
	if err != nil || epoch < 0 || epoch > maxCount {
		return nil, nil, fmt.Errorf("resume: %s: metadata epoch %q is not a count", file, ck.Meta["epoch"])
	}
	if epoch == 0 {
		return nil, nil, nil
	}
	var history []EpochMetrics
	if js, ok := ck.Meta["metrics"]; ok {
		if err := json.Unmarshal([]byte(js), &history); err != nil {
			return nil, nil, fmt.Errorf("resume: %s: metadata metrics: %v", file, err)
		}
	} else if history, err = readMetricsFile(filepath.Join(dir, MetricsName), epoch); err != nil {
		return nil, nil, fmt.Errorf("resume: %w", err)
	}
	res := &Result{Checkpoint: file, Done: epoch}
	// A run stopped inside an epoch went on past its last completed one,
	// so that one had not reached the run's target: training goes on.
	inside := ck.Meta["batch"] != "" && ck.Meta["batch"] != "0"
	if n := len(history); n > 0 && history[n-1].Epoch == epoch && !inside {
		res.LastValAcc = history[n-1].ValAcc
		res.ReachedAcc = o.TargetAcc > 0 && res.LastValAcc >= o.TargetAcc
	}
	if res.ReachedAcc || epoch >= o.Epochs {
		return res, history, nil
	}
	return nil, nil, nil
}

// maxCount bounds the epoch, step and batch counts of a checkpoint's
// metadata (a corrupt value must not wrap around in epoch+1).
const maxCount = 1 << 40

// resume loads parameters and optimizer state from a run directory (or a
// checkpoint file, whose directory holds the optimizer state) and returns
// where the run stands. ck is the run's checkpoint when already read (nil:
// read it here). The optimizer state is checked like the weights: every
// moment present with its size, finite, second moments ≥ 0.
func (t *Trainer) resume(path string, ck *capsnet.Checkpoint) (runState, error) {
	var st runState
	dir, file := resumePaths(path)
	if ck == nil {
		var err error
		if ck, err = ReadResume(path); err != nil {
			return st, err
		}
	}
	if err := loadResumed(t.P, ck); err != nil {
		return st, err
	}
	meta := ck.Meta
	num := func(key string, dflt string) (int, error) {
		s := meta[key]
		if s == "" {
			s = dflt
		}
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 || v > maxCount {
			return 0, fmt.Errorf("resume: %s: metadata %s %q is not a count", file, key, meta[key])
		}
		return v, nil
	}
	var err error
	if st.epoch, err = num("epoch", "-"); err != nil {
		return st, err
	}
	step, err := num("step", "-")
	if err != nil {
		return st, err
	}
	if st.partial.Steps, err = num("batch", "0"); err != nil {
		return st, err
	}
	if st.partial.Steps > 0 {
		steps := st.partial.Steps
		if err := json.Unmarshal([]byte(meta["partial"]), &st.partial); err != nil || st.partial.Steps != steps ||
			st.partial.Seen < 0 || st.partial.Correct < 0 || st.partial.Correct > st.partial.Seen {
			return st, fmt.Errorf("resume: %s: metadata partial %q does not describe the interrupted epoch", file, meta["partial"])
		}
	}
	if js, ok := meta["metrics"]; ok {
		if err := json.Unmarshal([]byte(js), &st.history); err != nil {
			return st, fmt.Errorf("resume: %s: metadata metrics: %v", file, err)
		}
	} else { // a checkpoint of an older run: take the history from its metrics file
		if st.history, err = readMetricsFile(filepath.Join(dir, MetricsName), st.epoch); err != nil {
			return st, fmt.Errorf("resume: %w", err)
		}
	}
	st.provenance = map[string]string{}
	for _, k := range append([]string{"data", "command"}, provenanceKeys...) {
		if v, ok := meta[k]; ok {
			st.provenance[k] = v
		}
	}
	st.run = meta["run"]
	if len(st.run) > telemetry.MaxRunBytes {
		return st, fmt.Errorf("resume: %s: metadata run of %d bytes, want at most %d", file, len(st.run), telemetry.MaxRunBytes)
	}
	st.optimizer = meta["optimizer"]
	if st.optimizer == "" {
		st.optimizer = OptimizerName
	}
	if filepath.Base(st.optimizer) != st.optimizer || !isOptimizerFile(st.optimizer) {
		return st, fmt.Errorf("resume: %s: metadata optimizer %q is not an optimizer file name", file, st.optimizer)
	}
	optPath := filepath.Join(dir, st.optimizer)
	opt, err := safetensors.Read(optPath)
	if errors.Is(err, fs.ErrNotExist) {
		return st, fmt.Errorf("resume: %s needs its optimizer state %s to train on, and it is missing (a finished run may be kept without it, but cannot then train further): %w", file, optPath, err)
	}
	if err != nil {
		return st, fmt.Errorf("resume: %w", err)
	}
	if opt.Metadata["step"] != strconv.Itoa(step) {
		return st, fmt.Errorf("resume: %s is from step %s but the checkpoint from step %d", optPath, opt.Metadata["step"], step)
	}
	for name := range opt.Tensors {
		if !strings.HasPrefix(name, "adam.m.") && !strings.HasPrefix(name, "adam.v.") || t.P.Get(name[len("adam.m."):]) == nil {
			return st, fmt.Errorf("resume: %s: unexpected tensor %q (not a moment of model %s)", optPath, name, t.P.Config.Name)
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
				return st, fmt.Errorf("resume: %s: tensor %s missing or of the wrong size", optPath, pair.name)
			}
			for j, x := range src.Data {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) || (pair.name[5] == 'v' && x < 0) {
					return st, fmt.Errorf("resume: %s: tensor %s element %d is %v", optPath, pair.name, j, x)
				}
			}
		}
	}
	for i, q := range t.P.List {
		m, v := t.Moments(i)
		copy(m, opt.Tensors["adam.m."+q.Name].Data)
		copy(v, opt.Tensors["adam.v."+q.Name].Data)
	}
	t.Step = step
	return st, nil
}
