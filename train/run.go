package train

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/kernels"
	"github.com/capstan-ml/capstan/train/data"
	"github.com/capstan-ml/capstan/train/eval"
)

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
// optimizer state as one unit (see runDir.commit), so after kill -9 at any
// instant the directory resumes from the last committed step.
// metrics.ndjson is rewritten from the checkpoint's own history, so it
// holds each completed epoch exactly once. With Options.Telemetry,
// the telemetry file is synced before every checkpoint commit and cut back
// to the checkpoint's step on resume, so it holds every step up to the
// checkpoint exactly once. A fresh run in a directory holding a run's
// checkpoint, finished or partial, of any model, the same one included,
// is refused unless Overwrite is set: the run is resumed, or started in
// another directory, never started over by default. The files of the
// run directory are never opened through a symbolic link, and a FIFO,
// directory or device in their place is refused without blocking
// (train/runfile).
//
// Errors in the value of a field of o are *FieldError.
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
	// The process's memory, before the run directory or any graph.
	if err := CheckMemory(o.Model, o.Batch, o.Threads); err != nil {
		return nil, err
	}
	d, err := openRunDir(o.OutDir)
	if err != nil {
		return nil, err
	}
	defer d.close()
	if !o.Overwrite && !(o.Resume != "" && sameDir(ResumeDir(o.Resume), o.OutDir)) {
		// The directory a run resumes from is its own.
		if err := d.refuseOther(o.Model); err != nil {
			return nil, err
		}
	}
	l, err := newLoop(&o, d)
	if err != nil {
		return nil, err
	}
	defer l.close()
	return l.run(ctx)
}

// loop is a run's epoch loop: the trainer, the run directory and the data
// it trains and validates on.
type loop struct {
	o      *Options
	d      *runDir
	t      *Trainer
	st     runState
	ev     *eval.Evaluator
	tb, vb *data.Batcher
	testB  *data.Batcher // nil without Options.Test
	batch  *data.Batch
	labels []int
	reconW float64
	res    *Result
}

// newLoop builds o's model and trainer, starts the run in d (runDir.start)
// and prepares its data.
func newLoop(o *Options, d *runDir) (_ *loop, err error) {
	params, err := capsnet.NewParams(o.Model)
	if err != nil {
		return nil, err
	}
	params.Init(o.Seed)
	t, err := NewTrainer(params, o.Batch, o.Threads, o.adam())
	if err != nil {
		return nil, err
	}
	if err := t.SetGroupWeightDecay(o.GroupWeightDecay); err != nil {
		return nil, err
	}
	l := &loop{o: o, d: d, t: t, res: &Result{Checkpoint: d.checkpoint()}}
	defer func() {
		if err != nil {
			l.close()
		}
	}()
	if l.st, err = d.start(o, t); err != nil {
		return nil, err
	}
	wino := ""
	if w := t.Reps[0].WinogradConvs(); len(w) > 0 {
		wino = fmt.Sprintf(" (Winograd for %s; %s=off for the GEMM path)", strings.Join(w, ", "), kernels.WinogradEnvVar)
	}
	fmt.Fprintf(o.Log, "model %s: %d parameters; kernels %s%s; %d thread(s), batch %d; memory plan %s\n",
		o.Model.Name, params.Count(), kernels.Impl(), wino, len(t.Reps), o.Batch, t.Plan())
	// Validation runs the training replicas forward only: no memory of its
	// own, and exactly what the training graphs compute.
	if l.ev, err = eval.FromNets(params, t.Reps); err != nil {
		return nil, err
	}
	if err := l.batchers(); err != nil {
		return nil, err
	}
	l.st.provenance = o.provenance(l.st.provenance)
	// The weight the Nets' total loss uses (Layout.ReconWeight), not a
	// second computation of it from the config.
	l.reconW = float64(params.Layout.ReconWeight)
	l.batch = l.tb.NewBatch()
	l.labels = make([]int, o.Batch)
	return l, nil
}

// batchers makes the training, validation and test batchers.
func (l *loop) batchers() error {
	o := l.o
	var err error
	l.tb, err = data.NewBatcher(o.Train, data.BatchConfig{Size: o.Batch, Shuffle: true, Seed: o.Seed, Placement: o.TrainPlacement, CanvasH: o.Canvas, CanvasW: o.Canvas, MaxShift: o.MaxShift, DropLast: true})
	if err != nil {
		return fmt.Errorf("training data: %w", err)
	}
	if l.vb, err = data.NewBatcher(o.Val, data.BatchConfig{Size: o.Batch, Seed: o.Seed, Placement: o.ValPlacement, CanvasH: o.Canvas, CanvasW: o.Canvas}); err != nil {
		return fmt.Errorf("validation data: %w", err)
	}
	if o.Test != nil {
		if l.testB, err = data.NewBatcher(o.Test, data.BatchConfig{Size: o.Batch, Seed: o.Seed, Placement: o.ValPlacement, CanvasH: o.Canvas, CanvasW: o.Canvas}); err != nil {
			return fmt.Errorf("test data: %w", err)
		}
	}
	return nil
}

// close frees the evaluator and the trainer.
func (l *loop) close() {
	if l.ev != nil {
		l.ev.Close()
	}
	l.t.Close()
}

// run trains the epochs left: each ends with validation, a checkpoint and
// its metrics line; it stops at the target accuracy or when ctx is
// cancelled.
func (l *loop) run(ctx context.Context) (*Result, error) {
	o, res := l.o, l.res
	for epoch := l.st.epoch + 1; epoch <= o.Epochs; epoch++ {
		lr := o.LR * math.Pow(o.LRDecay, float64(epoch-1))
		em, err := l.epoch(ctx, epoch, lr)
		if err != nil || res.Interrupted {
			return res, err
		}
		if err := l.endEpoch(&em); err != nil {
			return res, err
		}
		if o.TargetAcc > 0 && em.ValAcc >= o.TargetAcc {
			fmt.Fprintf(o.Log, "reached target validation accuracy %.2f%%\n", 100*o.TargetAcc)
			res.ReachedAcc = true
			break
		}
		if ctx.Err() != nil { // cancelled during the last step or validation: the epoch is complete and saved
			fmt.Fprintf(o.Log, "interrupted after epoch %d: checkpoint saved to %s\n", epoch, res.Checkpoint)
			res.Interrupted = true
			return res, nil
		}
	}
	return res, nil
}

// epoch trains one epoch at learning rate lr, going on from the steps an
// interrupted run already took in it. Cancelled inside the epoch, it
// commits the position reached and sets Result.Interrupted.
func (l *loop) epoch(ctx context.Context, epoch int, lr float64) (EpochMetrics, error) {
	o, t, tb := l.o, l.t, l.tb
	tb.StartEpoch(epoch)
	acc := l.st.partial // the steps an interrupted run already took in this epoch
	l.st.partial = partialEpoch{}
	for i := 0; i < acc.Steps; i++ { // replay the order and placements up to there
		if !tb.Next(l.batch) {
			return EpochMetrics{}, fmt.Errorf("resume: epoch %d has %d batches of %d, the checkpoint is after batch %d (other data or batch size?)", epoch, tb.Batches(), o.Batch, acc.Steps)
		}
	}
	start := time.Now()
	prog := newProgress(o.Log, o.Progress, fmt.Sprintf("epoch %d/%d", epoch, o.Epochs), (tb.Batches()-acc.Steps)*o.Batch)
	seenHere := 0
	for ctx.Err() == nil && tb.Next(l.batch) {
		if err := l.step(epoch, lr, &acc); err != nil {
			return EpochMetrics{}, err
		}
		seenHere += o.Batch
		prog.update(seenHere, fmt.Sprintf("loss %.4f", (acc.SumMargin+l.reconW*acc.SumRecon)/float64(acc.Steps)))
		fault("step")
		if ctx.Err() != nil {
			break
		}
	}
	if err := tb.Err(); err != nil {
		return EpochMetrics{}, err
	}
	secs := time.Since(start).Seconds()
	prog.finish()
	em := acc.metrics(epoch, l.reconW)
	em.LR, em.ImgPerSec, em.Seconds, em.Kernels = lr, float64(seenHere)/secs, secs, kernels.Impl()
	if em.Interrupted = ctx.Err() != nil && acc.Steps < tb.Batches(); em.Interrupted {
		// Save the position inside the epoch: a resume replays the
		// epoch's order up to here and goes on from this step.
		l.st.partial = acc
		if err := l.d.commit(t, l.st); err != nil {
			return em, err
		}
		if err := l.d.writeMetrics(l.st.history, &em); err != nil {
			return em, err
		}
		l.res.Epochs = append(l.res.Epochs, em)
		fmt.Fprintf(o.Log, "interrupted in epoch %d after batch %d of %d: checkpoint saved to %s\n", epoch, acc.Steps, tb.Batches(), l.res.Checkpoint)
		l.res.Interrupted = true
	}
	return em, nil
}

// step trains on the current batch and adds its figures to acc.
func (l *loop) step(epoch int, lr float64, acc *partialEpoch) error {
	t := l.t
	for i, y := range l.batch.Labels() {
		l.labels[i] = int(y)
	}
	m, r, err := t.TrainStep(l.batch.Images(), l.labels, lr)
	if err != nil {
		return fmt.Errorf("epoch %d step %d: %w", epoch, acc.Steps+1, err)
	}
	if rec := t.Telemetry(); l.d.tw != nil && rec != nil {
		rec.Epoch = epoch
		if err := l.d.tw.Write(rec); err != nil {
			return err
		}
	}
	for _, n := range t.Reps {
		for i, p := range n.Pred() {
			if p == n.Labels()[i] {
				acc.Correct++
			}
		}
	}
	acc.SumMargin, acc.SumRecon, acc.Seen, acc.Steps = acc.SumMargin+m, acc.SumRecon+r, acc.Seen+l.o.Batch, acc.Steps+1
	return nil
}

// endEpoch validates a completed epoch, commits its checkpoint and
// rewrites the metrics.
func (l *loop) endEpoch(em *EpochMetrics) error {
	o := l.o
	var err error
	if em.ValAcc, err = l.ev.Accuracy(l.vb); err != nil {
		return err
	}
	if l.testB != nil {
		if em.TestAcc, err = l.ev.Accuracy(l.testB); err != nil {
			return err
		}
	}
	l.st.epoch = em.Epoch
	l.st.history = append(l.st.history, *em)
	if err := l.d.commit(l.t, l.st); err != nil {
		return err
	}
	fault("metrics")
	if err := l.d.writeMetrics(l.st.history, nil); err != nil {
		return err
	}
	fault("epoch")
	l.res.Epochs = append(l.res.Epochs, *em)
	testAcc := ""
	if l.testB != nil {
		testAcc = fmt.Sprintf(" (test acc %.2f%%)", 100*em.TestAcc)
	}
	fmt.Fprintf(o.Log, "epoch %d/%d: loss %.4f, train acc %.2f%%, val acc %.2f%%%s, lr %.2e, %.0f img/s, %.1fs; checkpoint %s\n",
		em.Epoch, o.Epochs, em.Loss, 100*em.TrainAcc, 100*em.ValAcc, testAcc, em.LR, em.ImgPerSec, em.Seconds, l.res.Checkpoint)
	return nil
}
