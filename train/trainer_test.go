package train

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/safetensors"
	"github.com/capstan-ml/capstan/kernels"
	"github.com/capstan-ml/capstan/train/data"
	"github.com/capstan-ml/capstan/train/eval"
)

func smallData(t *testing.T) (*data.Dataset, *data.Dataset) {
	t.Helper()
	tr, te, err := data.LoadEmbeddedMNIST()
	if err != nil {
		t.Fatal(err)
	}
	tr, _ = tr.Slice(0, 96)
	te, _ = te.Slice(0, 50)
	return tr, te
}

func tinyOptions(t *testing.T, out string) Options {
	tr, te := smallData(t)
	o := DefaultOptions(capsnet.Presets()["tiny-deep"])
	o.Train, o.Val, o.Batch, o.Threads, o.Epochs, o.OutDir = tr, te, 16, 2, 2, out
	return o
}

func paramsOf(t *testing.T, dir string) map[string]safetensors.Tensor {
	t.Helper()
	st, err := safetensors.Read(filepath.Join(dir, CheckpointName))
	if err != nil {
		t.Fatal(err)
	}
	return st.Tensors
}

func sameTensors(a, b map[string]safetensors.Tensor) (string, bool) {
	for k, ta := range a {
		tb := b[k]
		for i := range ta.Data {
			if ta.Data[i] != tb.Data[i] {
				return k, false
			}
		}
	}
	return "", true
}

// TestRunReproducibleAndResumable trains twice with the same seed and
// threads (bitwise identical checkpoints), then once for one epoch and a
// resume for the second (identical again: the optimizer state and the
// per-epoch data order are restored).
func TestRunReproducibleAndResumable(t *testing.T) {
	base := t.TempDir()
	run := func(dir string, epochs int, resume string) *Result {
		o := tinyOptions(t, dir)
		o.Epochs, o.Resume = epochs, resume
		res, err := Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b, c := filepath.Join(base, "a"), filepath.Join(base, "b"), filepath.Join(base, "c")
	ra := run(a, 2, "")
	run(b, 2, "")
	if k, ok := sameTensors(paramsOf(t, a), paramsOf(t, b)); !ok {
		t.Fatalf("two runs with the same seed differ in %s", k)
	}
	run(c, 1, "")
	rc := run(c, 2, c)
	if k, ok := sameTensors(paramsOf(t, a), paramsOf(t, c)); !ok {
		t.Fatalf("resumed run differs from the uninterrupted one in %s", k)
	}
	// The same with the checkpoint read once by the caller (ReadResume, as
	// tools/train does to take the run's model).
	d := filepath.Join(base, "d")
	run(d, 1, "")
	ck, err := ReadResume(d)
	if err != nil {
		t.Fatal(err)
	}
	if ck.Config.Name != "tiny-deep" || ck.Meta["epoch"] != "1" {
		t.Fatalf("ReadResume: model %q, metadata %v", ck.Config.Name, ck.Meta)
	}
	od := tinyOptions(t, d)
	od.Model, od.Resume, od.ResumeFrom = ck.Config, d, ck
	if _, err := Run(context.Background(), od); err != nil {
		t.Fatal(err)
	}
	if k, ok := sameTensors(paramsOf(t, a), paramsOf(t, d)); !ok {
		t.Fatalf("run resumed from a checkpoint read by ReadResume differs in %s", k)
	}
	if len(ra.Epochs) != 2 || len(rc.Epochs) != 1 || rc.Epochs[0].Epoch != 2 {
		t.Fatalf("epochs: uninterrupted %+v, resumed %+v", ra.Epochs, rc.Epochs)
	}
	// metrics.ndjson: one JSON object per epoch.
	raw, err := os.ReadFile(filepath.Join(c, MetricsName))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 2 {
		t.Fatalf("metrics has %d lines, want 2", len(lines))
	}
	// The total loss weighs the reconstruction as the Nets do
	// (Layout.ReconWeight of the model's input); the model has a decoder,
	// so a weight of 0 or another weight would show.
	lay, err := ck.Config.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	w := float64(lay.ReconWeight)
	if w <= 0 {
		t.Fatalf("%s: reconstruction weight %g, want > 0 for this check", ck.Config.Name, w)
	}
	for _, l := range lines {
		var m EpochMetrics
		if err := json.Unmarshal([]byte(l), &m); err != nil || m.ImgPerSec <= 0 || m.Kernels != kernels.Impl() {
			t.Errorf("metrics line %q: %v", l, err)
		}
		// The same float64 sum the loop computes, through a JSON round trip
		// that keeps float64 exact: only rounding of that sum is allowed.
		want := m.MarginLoss + w*m.ReconLoss
		if m.ReconLoss <= 0 || math.Abs(m.Loss-want) > 1e-12*math.Max(1, math.Abs(want)) {
			t.Errorf("epoch %d: loss %v, want margin %v + %v × recon %v = %v", m.Epoch, m.Loss, m.MarginLoss, w, m.ReconLoss, want)
		}
	}
}

// TestRunReproducibleAttention: with self-attention routing too, two runs
// with the same seed and threads give bitwise identical parameters, and a
// run with another seed does not (so that the comparison can fail).
func TestRunReproducibleAttention(t *testing.T) {
	for _, model := range []string{"tiny-deep-self-attention", "tiny-deep-self-attention-in"} {
		t.Run(model, func(t *testing.T) {
			base := t.TempDir()
			run := func(dir string, seed uint64) map[string]safetensors.Tensor {
				o := tinyOptions(t, filepath.Join(base, dir))
				o.Model, o.Epochs, o.Seed = capsnet.Presets()[model], 1, seed
				if _, err := Run(context.Background(), o); err != nil {
					t.Fatal(err)
				}
				return paramsOf(t, filepath.Join(base, dir))
			}
			a, b, c := run("a", 3), run("b", 3), run("c", 4)
			if k, ok := sameTensors(a, b); !ok {
				t.Fatalf("two runs with the same seed differ in %s", k)
			}
			if _, ok := sameTensors(a, c); ok {
				t.Fatal("runs with seeds 3 and 4 are identical")
			}
			bias, ok := a["caps.0.b"]
			if !ok {
				t.Fatal("checkpoint without caps.0.b, the attention's bias")
			}
			if !slices.ContainsFunc(bias.Data, func(v float32) bool { return v != 0 }) {
				t.Error("caps.0.b, zero at the start, was not trained")
			}
		})
	}
}

// TestRunInterrupted cancels the context (as Ctrl-C does): the run stops
// after the current step and leaves a loadable checkpoint.
func TestRunInterrupted(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted {
		t.Fatal("run not marked interrupted")
	}
	ck, err := capsnet.ReadCheckpoint(filepath.Join(dir, CheckpointName))
	if err == nil {
		_, err = ck.Params(nil)
	}
	if err != nil {
		t.Fatalf("checkpoint after interrupt: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
}

func TestRunBadOptions(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Options)
		want string
	}{
		{func(o *Options) { o.Batch = 0 }, "batch 0: must be positive"},
		{func(o *Options) { o.Batch = 97 }, "batch 97: the training data"},
		{func(o *Options) { o.LR = -1 }, "learning rate -1: "},
		{func(o *Options) { o.Epochs = 0 }, "epochs 0: "},
		{func(o *Options) { o.TargetAcc = 3 }, "target accuracy 3: "},
		{func(o *Options) { o.OutDir = "" }, `run directory "": `},
		{func(o *Options) { o.Model = capsnet.Presets()["deep"] }, "40×40"},
		{func(o *Options) { o.Resume = "/nonexistent/run" }, "resume"},
	} {
		o := tinyOptions(t, t.TempDir())
		tc.mod(&o)
		_, err := Run(context.Background(), o)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one mentioning %q", err, tc.want)
		}
		var fe *FieldError
		if strings.Contains(tc.want, ": ") && !errors.As(err, &fe) {
			t.Errorf("error %v is not a *FieldError", err)
		}
	}
}

func TestRunDivergenceIsAnError(t *testing.T) {
	o := tinyOptions(t, t.TempDir())
	o.LR = 1e30
	o.Epochs = 3
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "NaN") && !strings.Contains(err.Error(), "diverged") {
		t.Errorf("lr 1e30: error %v, want a divergence error", err)
	}
}

// tinyTrainer is a Trainer of tiny-deep for a batch of 8 on 2 replicas,
// and a batch for it.
func tinyTrainer(t *testing.T) (*Trainer, []float32, []int) {
	t.Helper()
	p, err := capsnet.NewParams(capsnet.Presets()["tiny-deep"])
	if err != nil {
		t.Fatal(err)
	}
	p.Init(1)
	tr, err := NewTrainer(p, 8, 2, kernels.DefaultAdamParams())
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 8*28*28)
	for i := range x {
		x[i] = float32(i%13) / 13
	}
	return tr, x, []int{0, 1, 2, 0, 1, 2, 0, 1}
}

func TestTrainStepNoAllocs(t *testing.T) {
	tr, x, labels := tinyTrainer(t)
	defer tr.Close()
	step := func() {
		if _, _, err := tr.TrainStep(x, labels, 1e-3); err != nil {
			t.Fatal(err)
		}
	}
	step()
	if a := testing.AllocsPerRun(5, step); a != 0 {
		t.Errorf("a training step allocates %.1f times", a)
	}
	// Validation runs the training replicas forward only (eval.FromNets),
	// without allocating either; training continues afterwards.
	ev, err := eval.FromNets(tr.P, tr.Reps)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	pred := make([]int, 8)
	infer := func() {
		if err := ev.Predict(x, labels, pred); err != nil {
			t.Fatal(err)
		}
	}
	if a := testing.AllocsPerRun(5, infer); a != 0 {
		t.Errorf("inference allocates %.1f times per batch", a)
	}
	step()
}

// TestResumeFinishedRun resumes runs that have nothing left to train (the
// target reached, every epoch done): nothing is read but the checkpoint, so
// a finished run kept without its optimizer state resumes, and nothing is
// written. Asking for more trains on and then needs the optimizer state.
func TestResumeFinishedRun(t *testing.T) {
	dir := t.TempDir()
	o := tinyOptions(t, dir)
	o.Epochs = 1
	first, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	val := first.Epochs[0].ValAcc
	if val <= 0 {
		t.Fatalf("validation accuracy %v after one epoch: the test needs a positive one", val)
	}
	ck, err := ReadResume(dir)
	if err != nil {
		t.Fatal(err)
	}
	optFile := filepath.Join(dir, ck.Meta["optimizer"])
	if err := os.Remove(optFile); err != nil {
		t.Fatal(err)
	}
	snapshot := func() map[string]string {
		m := map[string]string{}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name() == LockName {
				continue // who held the lock last, and when
			}
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			m[e.Name()] = string(b)
		}
		return m
	}
	before := snapshot()
	for _, c := range []struct {
		name    string
		epochs  int
		target  float64
		reached bool
	}{
		{"target reached", 5, val, true},
		{"target reached, every epoch done", 1, val / 2, true},
		{"every epoch done", 1, 0, false},
	} {
		r := tinyOptions(t, dir)
		r.Epochs, r.TargetAcc, r.Resume = c.epochs, c.target, dir
		res, err := Run(context.Background(), r)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if res.Done != 1 || res.ReachedAcc != c.reached || len(res.Epochs) != 0 || res.LastValAcc != val ||
			res.Checkpoint != filepath.Join(dir, CheckpointName) {
			t.Errorf("%s: result %+v, want Done 1, ReachedAcc %v, last validation %v, no epoch", c.name, res, c.reached, val)
		}
		after := snapshot()
		if len(after) != len(before) {
			t.Errorf("%s: the run directory changed: %d files, was %d", c.name, len(after), len(before))
		}
		for name, b := range before {
			if after[name] != b {
				t.Errorf("%s: %s was rewritten", c.name, name)
			}
		}
	}
	// More than the run did: a higher target or more epochs trains, and
	// needs the optimizer state, whose absence is named.
	for _, c := range []struct {
		epochs int
		target float64
	}{{5, 1}, {2, 0}} {
		r := tinyOptions(t, dir)
		r.Epochs, r.TargetAcc, r.Resume = c.epochs, c.target, dir
		_, err := Run(context.Background(), r)
		if err == nil || !strings.Contains(err.Error(), filepath.Base(optFile)) {
			t.Errorf("-epochs %d -target %v without the optimizer state: error %v, want one naming %s", c.epochs, c.target, err, filepath.Base(optFile))
		}
	}
}
