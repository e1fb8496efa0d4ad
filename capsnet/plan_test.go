package capsnet

import (
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
