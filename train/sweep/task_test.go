package sweep

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/analysis"
	"github.com/capstan-ml/capstan/train"
)

// tinyTask is the tiny preset's first task cut to one epoch and 50
// evaluation images (the tests' budget).
func tinyTask(t *testing.T) Task {
	t.Helper()
	tasks, err := Expand(Presets()["tiny"])
	if err != nil {
		t.Fatal(err)
	}
	task := tasks[0]
	task.Epochs, task.K = 1, 50
	return task
}

// stepCtx is a context that reports itself cancelled from its n-th Err
// call on: train.Run asks after every training step, so it stops a run at
// a step set in advance, not at a time.
type stepCtx struct {
	context.Context
	calls, n atomic.Int64
}

func (c *stepCtx) Err() error {
	if c.calls.Add(1) >= c.n.Load() {
		return context.Canceled
	}
	return nil
}

// TestRunTask trains the tiny preset's first task end to end (result file,
// rerun returning at once), and the same task interrupted mid-epoch then
// resumed in another directory: both end with the same parameters, bit for
// bit (the sweep's reproducibility target).
func TestRunTask(t *testing.T) {
	dir := t.TempDir()
	task := tinyTask(t)
	r, err := RunTask(context.Background(), dir, task, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "done" || r.Epochs != 1 || len(r.Params256) != 64 || r.Analysis == nil || r.Params == 0 || r.EvalAcc <= 0 {
		t.Fatalf("result %+v", r)
	}
	if k := r.Analysis.Layers[0].K; k != task.K {
		t.Errorf("analysis on %d images, want K = %d", k, task.K)
	}
	ck, err := capsnet.ReadCheckpoint(filepath.Join(dir, task.Dir, train.CheckpointName))
	if err != nil {
		t.Fatal(err)
	}
	p, err := ck.Params(nil)
	if err != nil {
		t.Fatal(err)
	}
	if h := ParamsSHA256(p); h != r.Params256 {
		t.Errorf("Params256 %s, the checkpoint's parameters hash to %s", r.Params256, h)
	}
	onDisk, err := ReadResult(filepath.Join(dir, task.Result))
	if err != nil {
		t.Fatal(err)
	}
	if onDisk.Params256 != r.Params256 || !reflect.DeepEqual(onDisk.Task, task) {
		t.Errorf("result file %+v, want %+v", onDisk, r)
	}
	// Done: a rerun returns the result without training, even with its
	// context cancelled (training would stop at once and say so).
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	again, err := RunTask(cancelled, dir, task, RunOptions{})
	if err != nil || again.Params256 != r.Params256 {
		t.Fatalf("rerun of a done task: %v, %+v", err, again)
	}

	// Interrupted after 20 steps (Run checks the context twice a step),
	// then resumed.
	task.Dir, task.Result = "runs/interrupted", "results/interrupted.json"
	ctx := &stepCtx{Context: context.Background()}
	ctx.n.Store(40)
	if _, err := RunTask(ctx, dir, task, RunOptions{}); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("interrupted task: %v, want ErrInterrupted", err)
	}
	if _, err := os.Stat(filepath.Join(dir, task.Result)); err == nil {
		t.Fatal("an interrupted task wrote its result file")
	}
	ck, err = capsnet.ReadCheckpoint(filepath.Join(dir, task.Dir, train.CheckpointName))
	if err != nil {
		t.Fatal(err)
	}
	if b := ck.Meta["batch"]; b == "" || b == "0" {
		t.Fatalf("interrupted checkpoint after batch %q, want inside the epoch", b)
	}
	resumed, err := RunTask(context.Background(), dir, task, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if resumed.Params256 != r.Params256 {
		t.Errorf("interrupted and resumed: Params256 %s, uninterrupted %s", resumed.Params256, r.Params256)
	}
}

// TestRunTaskFailed: a model that cannot be built gives a "failed" result
// (the sweep goes on without it), which a rerun returns as it is.
func TestRunTaskFailed(t *testing.T) {
	dir := t.TempDir()
	task := tinyTask(t)
	task.Model = "no-such-model"
	r, err := RunTask(context.Background(), dir, task, RunOptions{})
	if err != nil || r.Status != "failed" || !strings.Contains(r.Error, "no-such-model") {
		t.Fatalf("RunTask: %v, %+v", err, r)
	}
	if r2, err := ReadResult(filepath.Join(dir, task.Result)); err != nil || r2.Status != "failed" {
		t.Fatalf("result file: %v, %+v", err, r2)
	}
}

// TestResultNaN: NaN statistics (no alive input capsule) are written as
// null and read back as NaN; numbers stay bit for bit.
func TestResultNaN(t *testing.T) {
	rep := &analysis.Report{Thresholds: analysis.DefaultThresholds(),
		Layers:  []analysis.LayerReport{{Name: "caps.0", N: 2, D: 4, K: 3, CNM: 0.1, NormMean: []float64{0.1, 0.2}, NormStd: []float64{0, 0.3}, Dead: []bool{true, false}}},
		Routing: []analysis.RoutingReport{{From: "caps.0", To: "caps.1", K: 3, NIn: 2, NOut: 2, DYR: math.NaN(), DYS: math.NaN(), CouplingMean: []float64{0.5}}, {From: "caps.1", To: "caps.2", DYR: 0.1 + 0.2, DYS: 3}}}
	path := filepath.Join(t.TempDir(), "r", "00000.json")
	want := Result{Task: Task{Index: 0, Model: "tiny-deep"}, Status: "done", Analysis: rep, ValAcc: 0.5, Params256: "ab"}
	if err := WriteResult(path, want); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if !strings.Contains(string(raw), `"DYR": null`) {
		t.Errorf("NaN DYR not written as null:\n%s", raw)
	}
	got, err := ReadResult(path)
	if err != nil {
		t.Fatal(err)
	}
	a := got.Analysis
	if a == nil || len(a.Routing) != 2 || !math.IsNaN(a.Routing[0].DYR) || !math.IsNaN(a.Routing[0].DYS) ||
		a.Routing[1].DYR != 0.1+0.2 || a.Routing[1].DYS != 3 || a.Routing[0].From != "caps.0" || a.Routing[0].CouplingMean[0] != 0.5 ||
		a.Layers[0].NormStd[1] != 0.3 || !a.Layers[0].Dead[0] || a.Thresholds != rep.Thresholds {
		t.Errorf("read back %+v, want %+v", a, rep)
	}
	if got.ValAcc != 0.5 || got.Params256 != "ab" || got.Task.Model != "tiny-deep" {
		t.Errorf("read back %+v", got)
	}
	var nf NullFloat
	if err := nf.UnmarshalJSON([]byte("1.5")); err != nil || nf != 1.5 {
		t.Errorf("NullFloat 1.5: %v %v", nf, err)
	}
	if err := nf.UnmarshalJSON([]byte(`"x"`)); err == nil {
		t.Error(`NullFloat accepted "x"`)
	}
}

// TestTaskIndex: -index first, then $SLURM_ARRAY_TASK_ID, then
// $JOB_COMPLETION_INDEX; bad or out-of-range values name their source.
func TestTaskIndex(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		flag int
		env  map[string]string
		want int
		err  string
	}{
		{3, map[string]string{"SLURM_ARRAY_TASK_ID": "1"}, 3, ""},
		{-1, map[string]string{"SLURM_ARRAY_TASK_ID": "1", "JOB_COMPLETION_INDEX": "2"}, 1, ""},
		{-1, map[string]string{"JOB_COMPLETION_INDEX": "2"}, 2, ""},
		{-1, nil, 0, "JOB_COMPLETION_INDEX"},
		{-1, map[string]string{"SLURM_ARRAY_TASK_ID": "x"}, 0, "$SLURM_ARRAY_TASK_ID"},
		{-1, map[string]string{"JOB_COMPLETION_INDEX": "4"}, 0, "$JOB_COMPLETION_INDEX 4"},
		{9, nil, 0, "-index 9"},
	} {
		got, err := TaskIndex(tc.flag, env(tc.env), 4)
		if tc.err == "" && (err != nil || got != tc.want) {
			t.Errorf("TaskIndex(%d, %v) = %d, %v; want %d", tc.flag, tc.env, got, err, tc.want)
		}
		if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("TaskIndex(%d, %v): error %v, want one naming %q", tc.flag, tc.env, err, tc.err)
		}
	}
}
