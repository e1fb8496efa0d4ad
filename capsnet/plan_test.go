package capsnet

import (
	"strconv"
	"strings"
	"testing"
)

// TestTrainingPlan: the plans equal those of the allocated parameters and
// Nets, for a training and an inference Net, and a model beyond the
// memory limit is planned all the same.
func TestTrainingPlan(t *testing.T) {
	for _, name := range []string{"tiny-deep", "tiny-sabour", "tiny-deep-uniform"} {
		cfg := Presets()[name]
		p, err := NewParams(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, inference := range []bool{false, true} {
			pp, np, err := TrainingPlan(cfg, 5, inference)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			newNet := NewNet
			if inference {
				newNet = NewInferenceNet
			}
			n, err := newNet(p, 5)
			if err != nil {
				t.Fatal(err)
			}
			if pp != p.Arena.Plan() || np != n.Plan() || np.Total == 0 {
				t.Errorf("%s inference=%v: plans %+v, %+v; allocated %+v, %+v", name, inference, pp, np, p.Arena.Plan(), n.Plan())
			}
		}
	}
	t.Setenv(MemoryEnv, "1MiB")
	if _, err := NewNet(mustParams(t, "tiny-deep"), 64); err == nil {
		t.Fatalf("NewNet within 1 MiB: no error")
	}
	_, np, err := TrainingPlan(Presets()["tiny-deep"], 64, false)
	if err != nil || np.Total <= 1<<20 {
		t.Errorf("plan beyond the memory limit: %v, %d bytes", err, np.Total)
	}
	if _, _, err := TrainingPlan(Presets()["tiny-deep"], 0, false); err == nil {
		t.Errorf("batch 0: no error")
	}
}

func mustParams(t *testing.T, name string) *Params {
	t.Helper()
	t.Setenv(MemoryEnv, "")
	p, err := NewParams(Presets()[name])
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(MemoryEnv, "1MiB")
	return p
}

// TestProcessMemory: TrainingMemory sums the replicas' plans as the
// trainer splits the batch; Check refuses a total over the limit with one
// line naming threads, batch, the limit and MemoryEnv, and threads above
// MaxThreads whatever the limit.
func TestProcessMemory(t *testing.T) {
	l, err := Presets()["tiny-deep"].Resolve()
	if err != nil {
		t.Fatal(err)
	}
	m, err := l.TrainingMemory(10, 3) // replicas of 4, 3 and 3
	if err != nil {
		t.Fatal(err)
	}
	_, n4, _ := l.TrainingPlan(4, false)
	_, n3, _ := l.TrainingPlan(3, false)
	if want := n4.Total + 2*n3.Total; m.Replicas != want {
		t.Errorf("replicas %d bytes, want %d", m.Replicas, want)
	}
	if m.Optimizer != 3*m.Params {
		t.Errorf("optimizer %d bytes, parameters %d: want three times", m.Optimizer, m.Params)
	}
	t.Setenv(MemoryEnv, strconv.FormatInt(m.Total(), 10))
	if err := m.Check(); err != nil {
		t.Errorf("at the limit: %v", err)
	}
	t.Setenv(MemoryEnv, strconv.FormatInt(m.Total()-1, 10))
	err = m.Check()
	if err == nil || strings.Contains(err.Error(), "\n") {
		t.Fatalf("over the limit: %v", err)
	}
	for _, want := range []string{"threads 3 × batch 10", MemoryEnv + "=", "3 replicas"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %q", err, want)
		}
	}
	t.Setenv(MemoryEnv, "1TiB")
	huge := ProcessMemory{Model: "x", Batch: 4096, Threads: 4096}
	if err := huge.Check(); err == nil || !strings.Contains(err.Error(), "threads 4096 (batch 4096)") {
		t.Errorf("4096 threads: %v", err)
	}
	if _, err := l.TrainingMemory(4096, 4096); err == nil {
		t.Error("TrainingMemory planned 4096 threads")
	}
}
