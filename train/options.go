package train

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/capstan-ml/capstan/train/telemetry"
	"io"
	"math"
	"strconv"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/train/data"
)

// Options configures a training run (defaults: docs/semantics.md §5, DefaultOptions).
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
	// WeightDecay is Adam's weight-decay coefficient, applied in the form
	// WeightDecayForm says (L2 in the gradient by default) to every
	// parameter group that GroupWeightDecay does not name.
	WeightDecay float64
	// WeightDecayForm: DecayL2 (the zero value) or DecayDecoupled (AdamW).
	WeightDecayForm WeightDecayForm
	// GroupWeightDecay overrides WeightDecay for the parameter groups it
	// names (capsnet.ParamGroups: backbone, votes, priors, decoder).
	GroupWeightDecay map[string]float64
	// AdamEps is Adam's ε (0: DefaultAdamEps, 1e-8).
	AdamEps float64
	// TargetAcc stops training once validation accuracy reaches it (0..1;
	// 0 disables).
	TargetAcc float64
	Seed      uint64
	// OutDir receives checkpoint.safetensors, optimizer-STEP.safetensors,
	// metrics.ndjson and, with Telemetry, telemetry.ndjson.gz (or
	// telemetry.ndjson: TelemetryForm).
	OutDir string
	// Resume names a checkpoint directory (or file) to continue from.
	Resume string
	// Overwrite lets a fresh run replace a run directory that holds a
	// run's checkpoint, finished or partial, of any model, the same one
	// included (refused otherwise: ErrOtherRun).
	Overwrite bool
	// ResumeFrom is Resume's checkpoint when the caller has already read it
	// (ReadResume, e.g. to take its model): Run then does not read it
	// again. nil: Run reads it.
	ResumeFrom *capsnet.Checkpoint
	// Log receives human-readable progress; Progress draws a bar with rate
	// and ETA (for terminals) instead of periodic plain lines.
	Log      io.Writer
	Progress bool
	// Telemetry writes telemetry.ndjson.gz (train/telemetry) to OutDir: per
	// training step, every capsule's largest norm over the batch and
	// ‖∂L_m/∂W[j,i]‖_F of every routing layer (the paper's appendix
	// figures). It costs a margin-only backward pass through the capsule
	// layers per step: about 1.5% of the deep model's training CPU time
	// (docs/telemetry.md).
	Telemetry bool
	// TelemetryForm is the form of a fresh telemetry file: gzip members
	// (telemetry.Gzip, the zero value: about 2.7× smaller) or plain NDJSON
	// (telemetry.Plain, telemetry.ndjson). A resume continues the file the
	// run directory holds in the form it has.
	TelemetryForm telemetry.Form
}

// DefaultOptions returns the paper's recipe (docs/semantics.md §5) for a model.
func DefaultOptions(m capsnet.Config) Options {
	return Options{Model: m, Batch: 512, Threads: 1, Epochs: 10, LR: 1e-3, LRDecay: 0.97, WeightDecay: 1e-6, Seed: 1, Log: io.Discard, Canvas: 40}
}

// FieldError is an error in the value of one field of Options or Recipe:
// Field is the field's Go name ("Batch", "Shift", "OutDir", …) and Value
// its value, so that a command can name the flag that set it. Its message
// names the field and the value: "batch 0: must be positive".
type FieldError struct {
	Field string
	Value any
	Err   error
}

// fieldNames are the names FieldError's message gives the fields.
var fieldNames = map[string]string{
	"Batch": "batch", "Threads": "threads", "Epochs": "epochs", "LR": "learning rate",
	"LRDecay": "learning-rate decay", "WeightDecay": "weight decay", "TargetAcc": "target accuracy",
	"OutDir": "run directory", "Shift": "shift", "ValImages": "validation images", "Data": "data set",
	"Model": "model", "AdamEps": "Adam ε", "WeightDecayForm": "weight-decay form",
	"GroupWeightDecay": "group weight decay",
}

// Error returns the field's name and value, then what is wrong with it.
func (e *FieldError) Error() string {
	name, ok := fieldNames[e.Field]
	if !ok {
		name = e.Field
	}
	if s, ok := e.Value.(string); ok {
		return fmt.Sprintf("%s %q: %v", name, s, e.Err)
	}
	return fmt.Sprintf("%s %v: %v", name, e.Value, e.Err)
}

// Unwrap returns the wrapped error.
func (e *FieldError) Unwrap() error { return e.Err }

// fieldErr returns a *FieldError of a formatted message.
func fieldErr(field string, value any, format string, args ...any) error {
	return &FieldError{Field: field, Value: value, Err: fmt.Errorf(format, args...)}
}

// check validates o before anything is allocated: errors in a field's
// value are *FieldError.
func (o *Options) check() error {
	switch {
	case o.Train == nil || o.Val == nil:
		return errors.New("training and validation datasets are required")
	case o.Batch <= 0:
		return fieldErr("Batch", o.Batch, "must be positive")
	case o.Threads <= 0:
		return fieldErr("Threads", o.Threads, "must be positive")
	case o.Epochs <= 0:
		return fieldErr("Epochs", o.Epochs, "must be positive")
	case !(o.LR > 0) || math.IsInf(float64(o.LR), 0):
		return fieldErr("LR", o.LR, "must be a positive number")
	case !(o.LRDecay > 0 && o.LRDecay <= 1):
		return fieldErr("LRDecay", o.LRDecay, "must be in (0, 1]")
	case !(o.TargetAcc >= 0 && o.TargetAcc <= 1): // NaN fails too
		return fieldErr("TargetAcc", o.TargetAcc, "must be an accuracy in [0, 1]")
	case !(o.WeightDecay >= 0) || math.IsInf(o.WeightDecay, 0):
		return fieldErr("WeightDecay", o.WeightDecay, "must be a finite number ≥ 0")
	case o.OutDir == "":
		return fieldErr("OutDir", o.OutDir, "a run directory is required")
	}
	if err := o.checkOptimizer(); err != nil {
		return err
	}
	switch {
	case o.Batch > o.Train.N:
		// Before anything is allocated for a batch of this size.
		return fieldErr("Batch", o.Batch, "the training data (%s) has only %d images, less than one batch", o.Train.Name, o.Train.N)
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
		o.Batch, o.Threads, o.Seed, o.LR, o.LRDecay, o.WeightDecay) + o.optimizerFingerprint()
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// provenanceKeys are the metadata keys Run records for Options.Provenance
// besides the caller's own.
var provenanceKeys = []string{"seed", "train_set", "val_set", "test_set", "val_acc", "test_acc", MetaOptimizer}

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
	adam, _ := json.Marshal(o.optimizerSettings()) // plain floats, strings and a map: cannot fail
	p[MetaOptimizer] = string(adam)
	p["train_set"] = fmt.Sprintf("%s (%d images)", o.Train.Name, o.Train.N)
	p["val_set"] = fmt.Sprintf("%s (%d images)", o.Val.Name, o.Val.N)
	if o.Test != nil {
		p["test_set"] = fmt.Sprintf("%s (%d images)", o.Test.Name, o.Test.N)
	}
	return p
}

// ErrResumeModel is wrapped by the error of CheckResumeModel: a run cannot
// go on with another model than the one its checkpoint holds.
var ErrResumeModel = errors.New("a run goes on with the model its checkpoint holds")

// CheckResumeModel checks, before anything else about a resumed run, that
// model cfg is the one checkpoint ck holds: a checkpoint that names its
// model must name cfg's exact configuration (as Params.Load requires). The
// error is a *FieldError of "Model" wrapping ErrResumeModel, saying which
// model the checkpoint holds. A state dict without a config takes any
// model.
func CheckResumeModel(ck *capsnet.Checkpoint, cfg capsnet.Config) error {
	if !ck.HasConfig() || ck.Config.JSON() == cfg.JSON() {
		return nil
	}
	if ck.Config.Name == cfg.Name {
		return &FieldError{"Model", cfg.Name, fmt.Errorf("%s holds another configuration of model %s (a changed preset or config file): %w", ck.Path, cfg.Name, ErrResumeModel)}
	}
	return &FieldError{"Model", cfg.Name, fmt.Errorf("%s holds model %s, not %s: %w", ck.Path, ck.Config.Name, cfg.Name, ErrResumeModel)}
}
