package train

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/kernels"
)

var testAdam = kernels.AdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}

// allocatedBy runs f and returns the bytes it allocated.
func allocatedBy(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// checkRefusal checks a one-line error naming threads and batch.
func checkRefusal(t *testing.T, err error, threads, batch int) {
	t.Helper()
	if err == nil {
		t.Fatalf("threads %d, batch %d: no error", threads, batch)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "threads "+strconv.Itoa(threads)) || !strings.Contains(msg, "batch "+strconv.Itoa(batch)) {
		t.Errorf("error %q: want one line naming threads %d and batch %d", msg, threads, batch)
	}
}

// TestNewTrainerProcessMemory: replicas that each fit the memory limit
// but not all together are refused before any is compiled.
func TestNewTrainerProcessMemory(t *testing.T) {
	cfg := capsnet.Presets()["tiny-deep"]
	p, err := capsnet.NewParams(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const batch, threads = 64, 8
	m, err := p.Layout.TrainingMemory(batch, threads)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(capsnet.MemoryEnv, strconv.FormatInt(m.Total()-1, 10))
	var tr *Trainer
	n := allocatedBy(func() { tr, err = NewTrainer(p, batch, threads, testAdam) })
	if tr != nil {
		tr.Close()
	}
	checkRefusal(t, err, threads, batch)
	if !strings.Contains(err.Error(), capsnet.MemoryEnv) {
		t.Errorf("error %q does not say how to raise the limit", err)
	}
	if n > uint64(m.Replicas/threads) {
		t.Errorf("the refusal allocated %d bytes, more than one replica's plan (%d)", n, m.Replicas/threads)
	}
	t.Setenv(capsnet.MemoryEnv, strconv.FormatInt(m.Total(), 10))
	if tr, err = NewTrainer(p, batch, threads, testAdam); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	tr.Close()
}

// TestNewTrainerHugeThreads: 4096 threads of a batch of 4096 (Sabour's
// model) is refused at once, without allocating.
func TestNewTrainerHugeThreads(t *testing.T) {
	p, err := capsnet.NewParams(capsnet.Presets()["sabour"])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ batch, threads int }{{4096, 4096}, {1 << 16, capsnet.MaxThreads}} {
		var tr *Trainer
		n := allocatedBy(func() { tr, err = NewTrainer(p, c.batch, c.threads, testAdam) })
		if tr != nil {
			tr.Close()
			t.Fatalf("threads %d, batch %d: compiled", c.threads, c.batch)
		}
		checkRefusal(t, err, c.threads, c.batch)
		if n > 16<<20 {
			t.Errorf("threads %d, batch %d: the refusal allocated %d bytes", c.threads, c.batch, n)
		}
		t.Logf("%v (%d bytes allocated)", err, n)
	}
}

// TestTrainingMemoryIsThePlan: the process memory NewTrainer checks is
// what it allocates (the trainer's plan) plus one batch of data.
func TestTrainingMemoryIsThePlan(t *testing.T) {
	p, err := capsnet.NewParams(capsnet.Presets()["tiny-deep"])
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ batch, threads int }{{16, 3}, {5, 8}, {8, 1}} {
		m, err := p.Layout.TrainingMemory(c.batch, c.threads)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := NewTrainer(p, c.batch, c.threads, testAdam)
		if err != nil {
			t.Fatal(err)
		}
		tr.Close()
		if got := tr.Plan().Total; got != m.Params+m.Optimizer+m.Replicas {
			t.Errorf("batch %d, threads %d: trainer plan %d bytes, TrainingMemory %v", c.batch, c.threads, got, m)
		}
	}
}

// TestRunProcessMemory: Run refuses threads and a batch over the memory
// limit before it creates the run directory.
func TestRunProcessMemory(t *testing.T) {
	o := tinyOptions(t, filepath.Join(t.TempDir(), "run"))
	o.Batch, o.Threads = 32, 4
	l, err := o.Model.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	m, err := l.TrainingMemory(o.Batch, o.Threads)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(capsnet.MemoryEnv, strconv.FormatInt(m.Total()-1, 10))
	_, err = Run(context.Background(), o)
	checkRefusal(t, err, o.Threads, o.Batch)
	if _, err := os.Stat(o.OutDir); err == nil {
		t.Errorf("%s created", o.OutDir)
	}
}
