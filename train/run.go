package train

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/safetensors"
	"github.com/capstan-ml/capstan/kernels"
	"github.com/capstan-ml/capstan/train/data"
	"github.com/capstan-ml/capstan/train/eval"
)

// Options configures a training run (defaults: spec §5, DefaultOptions).
type Options struct {
	Model      capsnet.Config
	Train, Val *data.Dataset
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
	// OutDir receives checkpoint.safetensors, optimizer.safetensors and
	// metrics.ndjson.
	OutDir string
	// Resume names a checkpoint directory (or file) to continue from.
	Resume string
	// ResumeFrom is Resume's checkpoint when the caller has already read it
	// (ReadResume, e.g. to take its model): Run then does not read it
	// again. nil: Run reads it.
	ResumeFrom *capsnet.Checkpoint
	// Log receives human-readable progress; Progress draws a bar with rate
	// and ETA (for terminals) instead of periodic plain lines.
	Log      io.Writer
	Progress bool
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
	LR          float64 `json:"lr"`
	ImgPerSec   float64 `json:"img_per_s"`
	Seconds     float64 `json:"seconds"`
	Kernels     string  `json:"kernels"`
	Interrupted bool    `json:"interrupted,omitempty"`
}

// Result summarizes a run.
type Result struct {
	Epochs      []EpochMetrics
	Checkpoint  string
	Interrupted bool
	ReachedAcc  bool
}

// CheckpointName and OptimizerName are the files Run writes in OutDir.
const (
	CheckpointName = "checkpoint.safetensors"
	OptimizerName  = "optimizer.safetensors"
	MetricsName    = "metrics.ndjson"
)

// Run trains until Epochs are done, TargetAcc is reached or ctx is
// cancelled (Ctrl-C): then it finishes the current step, writes a checkpoint
// and returns with Result.Interrupted set. Every epoch ends with a
// validation pass, a metrics line and an atomic checkpoint.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, fmt.Errorf("output directory: %w", err)
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
	startEpoch := 1
	if o.Resume != "" {
		if startEpoch, err = t.resume(o.Resume, o.ResumeFrom); err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Log, "resumed from %s at epoch %d (step %d)\n", o.Resume, startEpoch, t.Step)
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
	if tb.Batches() == 0 {
		return nil, fmt.Errorf("training data: %d images is less than one batch of %d", o.Train.N, o.Batch)
	}
	vb, err := data.NewBatcher(o.Val, data.BatchConfig{Size: o.Batch, Seed: o.Seed, Placement: o.ValPlacement, CanvasH: o.Canvas, CanvasW: o.Canvas})
	if err != nil {
		return nil, fmt.Errorf("validation data: %w", err)
	}
	metricsF, err := os.OpenFile(filepath.Join(o.OutDir, MetricsName), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	defer metricsF.Close()

	res := &Result{Checkpoint: filepath.Join(o.OutDir, CheckpointName)}
	reconW := float64(o.Model.Loss.ReconWeight(params.Geo.Pixels))
	batch := tb.NewBatch()
	labels := make([]int, o.Batch)
	for epoch := startEpoch; epoch <= o.Epochs; epoch++ {
		lr := o.LR * math.Pow(o.LRDecay, float64(epoch-1))
		tb.StartEpoch(epoch)
		start := time.Now()
		prog := newProgress(o.Log, o.Progress, fmt.Sprintf("epoch %d/%d", epoch, o.Epochs), tb.Batches()*o.Batch)
		var sumM, sumR float64
		var correct, seen, steps int
		for tb.Next(batch) {
			for i, y := range batch.Labels() {
				labels[i] = int(y)
			}
			m, r, err := t.TrainStep(batch.Images(), labels, lr)
			if err != nil {
				return res, fmt.Errorf("epoch %d step %d: %w", epoch, steps+1, err)
			}
			for _, n := range t.Reps {
				for i, p := range n.Pred() {
					if p == n.Labels()[i] {
						correct++
					}
				}
			}
			sumM, sumR, seen, steps = sumM+m, sumR+r, seen+o.Batch, steps+1
			prog.update(seen, fmt.Sprintf("loss %.4f", (sumM+reconW*sumR)/float64(steps)))
			if ctx.Err() != nil {
				break
			}
		}
		if err := tb.Err(); err != nil {
			return res, err
		}
		secs := time.Since(start).Seconds()
		prog.finish()
		interrupted := ctx.Err() != nil
		em := EpochMetrics{Epoch: epoch, MarginLoss: sumM / float64(max(steps, 1)), ReconLoss: sumR / float64(max(steps, 1)),
			TrainAcc: float64(correct) / float64(max(seen, 1)), LR: lr, ImgPerSec: float64(seen) / secs, Seconds: secs,
			Kernels: kernels.Impl(), Interrupted: interrupted}
		em.Loss = em.MarginLoss + reconW*em.ReconLoss
		if !interrupted {
			if em.ValAcc, err = ev.Accuracy(vb); err != nil {
				return res, err
			}
		}
		done := epoch
		if interrupted {
			done = epoch - 1 // the interrupted epoch is redone on resume
		}
		if err := t.save(o.OutDir, done); err != nil {
			return res, err
		}
		line, _ := json.Marshal(em)
		if _, err := metricsF.Write(append(line, '\n')); err != nil {
			return res, fmt.Errorf("metrics: %w", err)
		}
		res.Epochs = append(res.Epochs, em)
		if interrupted {
			fmt.Fprintf(o.Log, "interrupted in epoch %d: checkpoint saved to %s (resume with -resume %s)\n", epoch, res.Checkpoint, o.OutDir)
			res.Interrupted = true
			return res, nil
		}
		fmt.Fprintf(o.Log, "epoch %d/%d: loss %.4f, train acc %.2f%%, val acc %.2f%%, lr %.2e, %.0f img/s, %.1fs; checkpoint %s\n",
			epoch, o.Epochs, em.Loss, 100*em.TrainAcc, 100*em.ValAcc, lr, em.ImgPerSec, secs, res.Checkpoint)
		if o.TargetAcc > 0 && em.ValAcc >= o.TargetAcc {
			fmt.Fprintf(o.Log, "reached target validation accuracy %.2f%%\n", 100*o.TargetAcc)
			res.ReachedAcc = true
			break
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

// save writes the checkpoint and the optimizer state, each atomically; the
// optimizer file carries the step and epoch it belongs to.
func (t *Trainer) save(dir string, epoch int) error {
	meta := map[string]string{"epoch": strconv.Itoa(epoch), "step": strconv.Itoa(t.Step), "kernels": kernels.Impl()}
	opt := map[string]safetensors.Tensor{}
	for i, q := range t.P.List {
		m, v := t.Moments(i)
		opt["adam.m."+q.Name] = safetensors.Tensor{Shape: []int{len(m)}, Data: m}
		opt["adam.v."+q.Name] = safetensors.Tensor{Shape: []int{len(v)}, Data: v}
	}
	if err := safetensors.Write(filepath.Join(dir, OptimizerName), opt, meta); err != nil {
		return err
	}
	return t.P.SaveCheckpoint(filepath.Join(dir, CheckpointName), meta)
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

// resume loads parameters and optimizer state from a run directory (or a
// checkpoint file, whose directory holds the optimizer state) and returns
// the next epoch. ck is the run's checkpoint when already read (nil: read
// it here).
func (t *Trainer) resume(path string, ck *capsnet.Checkpoint) (int, error) {
	dir, file := resumePaths(path)
	if ck == nil {
		var err error
		if ck, err = ReadResume(path); err != nil {
			return 0, err
		}
	}
	if err := t.P.Load(ck); err != nil {
		if ck.HasConfig() && ck.Config.Name == t.P.Config.Name && ck.Config.JSON() != t.P.Config.JSON() {
			return 0, fmt.Errorf("resume: %w; resume without a model to use the checkpoint's own", err)
		}
		return 0, fmt.Errorf("resume: %w", err)
	}
	meta := ck.Meta
	epoch, err := strconv.Atoi(meta["epoch"])
	if err != nil {
		return 0, fmt.Errorf("resume: %s: metadata epoch %q is not a number", file, meta["epoch"])
	}
	opt, err := safetensors.Read(filepath.Join(dir, OptimizerName))
	if err != nil {
		return 0, fmt.Errorf("resume: %w", err)
	}
	if opt.Metadata["step"] != meta["step"] {
		return 0, fmt.Errorf("resume: %s is from step %s but the checkpoint from step %s", OptimizerName, opt.Metadata["step"], meta["step"])
	}
	for i, q := range t.P.List {
		m, v := t.Moments(i)
		for _, pair := range []struct {
			name string
			dst  []float32
		}{{"adam.m." + q.Name, m}, {"adam.v." + q.Name, v}} {
			src, ok := opt.Tensors[pair.name]
			if !ok || len(src.Data) != len(pair.dst) {
				return 0, fmt.Errorf("resume: %s: tensor %s missing or of the wrong size", OptimizerName, pair.name)
			}
			copy(pair.dst, src.Data)
		}
	}
	t.Step, _ = strconv.Atoi(meta["step"])
	return epoch + 1, nil
}
