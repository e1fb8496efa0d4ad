package eval

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/quant"
)

// allocatedBy runs f and returns the bytes it allocated.
func allocatedBy(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// wantRefusal checks a one-line error naming threads and batch.
func wantRefusal(t *testing.T, err error, threads, batch int) {
	t.Helper()
	if err == nil {
		t.Fatalf("threads %d, batch %d: no error", threads, batch)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "threads "+strconv.Itoa(threads)) || !strings.Contains(msg, "batch "+strconv.Itoa(batch)) {
		t.Errorf("error %q: want one line naming threads %d and batch %d", msg, threads, batch)
	}
}

// TestEvaluatorProcessMemory: float and int8 replicas that each fit the
// memory limit but not all together are refused before any is compiled;
// at the limit they compile.
func TestEvaluatorProcessMemory(t *testing.T) {
	p := tinyParams(t, 2)
	m := tinyInt8(t, p)
	const batch, threads = 64, 8
	fm, err := p.Layout.InferenceMemory(batch, threads)
	if err != nil {
		t.Fatal(err)
	}
	qm, err := quant.ProcessMemory(m, batch, threads)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		need capsnet.ProcessMemory
		new  func() (*Evaluator, error)
	}{
		{"float", fm, func() (*Evaluator, error) { return New(p, batch, threads) }},
		{"int8", qm, func() (*Evaluator, error) { return NewInt8(m, batch, threads) }},
	} {
		t.Setenv(capsnet.MemoryEnv, strconv.FormatInt(c.need.Total()-1, 10))
		var ev *Evaluator
		n := allocatedBy(func() { ev, err = c.new() })
		if ev != nil {
			ev.Close()
		}
		wantRefusal(t, err, threads, batch)
		if one := uint64(c.need.Eval / threads); n > one {
			t.Errorf("%s: the refusal allocated %d bytes, more than one replica (%d)", c.name, n, one)
		}
		t.Setenv(capsnet.MemoryEnv, strconv.FormatInt(c.need.Total(), 10))
		if ev, err = c.new(); err != nil {
			t.Fatalf("%s at the limit: %v", c.name, err)
		}
		ev.Close()
	}
}

// TestEvaluatorHugeThreads: -threads 1000 -batch 1000 on Sabour's model
// is refused at once, float and int8.
func TestEvaluatorHugeThreads(t *testing.T) {
	p, err := capsnet.NewParams(capsnet.Presets()["sabour"])
	if err != nil {
		t.Fatal(err)
	}
	var ev *Evaluator
	n := allocatedBy(func() { ev, err = New(p, 1000, 1000) })
	if ev != nil {
		ev.Close()
		t.Fatal("compiled")
	}
	wantRefusal(t, err, 1000, 1000)
	if n > 1<<20 {
		t.Errorf("the refusal allocated %d bytes", n)
	}
	m := tinyInt8(t, tinyParams(t, 2))
	ev, err = NewInt8(m, 1000, 1000)
	if ev != nil {
		ev.Close()
		t.Fatal("int8: compiled")
	}
	wantRefusal(t, err, 1000, 1000)
}
