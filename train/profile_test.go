package train

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/kernels"
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

// TestOptimizeShares checks the parallel optimizer step against the serial
// one it replaced, the reduction (Trainer.reduce) and Adam step run over
// whole parameters: with 1 replica (Adam on its gradient), 2 equal ones
// (their sum in replica 0's buffer, Adam's scalars scaled by ½) and 3
// (uneven ranges, and parameters shorter than the replica count), in both
// weight-decay forms, every parameter and moment has the serial step's
// bits, and with 3 the reduced gradient too.
func TestOptimizeShares(t *testing.T) {
	for _, c := range []struct{ batch, threads int }{{5, 1}, {8, 2}, {7, 3}} {
		for _, decoupled := range []bool{false, true} {
			t.Run(fmt.Sprintf("threads=%d/decoupled=%v", c.threads, decoupled), func(t *testing.T) {
				testOptimizeShares(t, c.batch, c.threads, decoupled)
			})
		}
	}
}

func testOptimizeShares(t *testing.T, batch, threads int, decoupled bool) {
	cfg := capsnet.Presets()["tiny-deep3"]
	p, err := capsnet.NewParams(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.Init(3)
	adam := kernels.DefaultAdamParams()
	adam.WeightDecay, adam.Decoupled = 1e-2, decoupled // large enough to reach every bit
	tr, err := NewTrainer(p, batch, threads, adam)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	x := make([]float32, batch*tr.Reps[0].InputLen())
	for i := range x {
		x[i] = float32(i%11) / 11
	}
	labels := make([]int, batch)
	for i := range labels {
		labels[i] = i % 10
	}
	const lr = 1e-3
	for step := 1; step <= 2; step++ {
		if err := tr.run(x, labels, false); err != nil {
			t.Fatal(err)
		}
		// The serial reference on copies of the state.
		var want [][4][]float32
		a := tr.Adam
		a.LR = lr
		for i, q := range p.List {
			w := append([]float32(nil), q.Buf.Data()...)
			m := append([]float32(nil), tr.m[i].Data()...)
			v := append([]float32(nil), tr.v[i].Data()...)
			g := make([]float32, len(w))
			if q.Trainable {
				for r, n := range tr.Reps {
					tr.reduce(g, r, n.Grads[i].Data())
				}
				if err := kernels.AdamStep(a, step, w, g, m, v); err != nil {
					t.Fatal(err)
				}
			}
			want = append(want, [4][]float32{w, m, v, g})
		}
		tr.Step = step
		tr.lr = lr
		if err := tr.dispatch(phaseOptimize); err != nil {
			t.Fatal(err)
		}
		arrays := 3 // w, m, v; the reduced gradient is stored only with 3 replicas
		if threads == 3 {
			arrays = 4
		}
		for i, q := range p.List {
			if !q.Trainable {
				continue
			}
			for k, got := range [][]float32{q.Buf.Data(), tr.m[i].Data(), tr.v[i].Data(), tr.grad[i].Data()}[:arrays] {
				for e := range got {
					if math.Float32bits(got[e]) != math.Float32bits(want[i][k][e]) {
						t.Fatalf("step %d, %s, array %d (w, m, v, g), element %d of %d: %v, want %v", step, q.Name, k, e, len(got), got[e], want[i][k][e])
					}
				}
			}
		}
	}
}
