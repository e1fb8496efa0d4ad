package train

import (
	"bytes"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
)

func TestProfileModel(t *testing.T) {
	cfg := capsnet.Presets()["tiny-deep3"]
	p, err := ProfileModel(cfg, 6, 2, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.Threads != 2 || p.RepBatch != 3 || p.Steps != 3 || p.Model != cfg.Name || p.Kernels == "" {
		t.Errorf("profile header %+v", p)
	}
	if p.Optimizer <= 0 || p.Wall <= p.Optimizer || p.FLOPs <= 0 {
		t.Errorf("optimizer %v, wall %v, FLOPs %v: want 0 < optimizer < wall and FLOPs > 0", p.Optimizer, p.Wall, p.FLOPs)
	}
	// FLOPs of a step are those of both replicas' schedules (equal halves).
	var rep float64
	for _, s := range append(p.Forward, p.Backward...) {
		rep += s.FLOPs
		if s.Runs != 3 {
			t.Errorf("step %q ran %d times, want 3", s.Name, s.Runs)
		}
	}
	if p.FLOPs != 2*rep {
		t.Errorf("step FLOPs %v, want twice replica 0's %v", p.FLOPs, rep)
	}
	p.Peak1, p.PeakAll = 100, 200
	var b bytes.Buffer
	if err := p.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"| forward | conv ", "| backward | conv ", "| step | optimizer", "| step | whole step", "of 2-core peak", "img/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("profile table lacks %q:\n%s", want, out)
		}
	}
	if _, err := ProfileModel(cfg, 6, 2, 0, 1); err == nil {
		t.Error("0 steps: no error")
	}
}
