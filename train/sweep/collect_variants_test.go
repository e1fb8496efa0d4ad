package sweep

import (
	"bytes"
	"image/png"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/train/telemetry"
)

// TestCollectVariants: a sweep with optimizer axes and telemetry lists its
// done tasks as variants (settings, cds, training deaths), draws the dead
// capsules against the weight decay, and refuses a result whose deaths do
// not add up.
func TestCollectVariants(t *testing.T) {
	g := Presets()["tiny"]
	g.Routing, g.Seeds = nil, []uint64{1}
	g.WeightDecay, g.WeightDecayForm, g.Telemetry = []float64{1e-6, 1e-4, 0}, []string{"l2", "decoupled"}, true
	tasks, err := Expand(g)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	manifest := filepath.Join(dir, ManifestName)
	if err := WriteManifest(manifest, tasks); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	one := 0.5
	for i, task := range tasks[:len(tasks)-1] { // the last one missing
		rep := synthReport(4, 6, 50, 0.2, rng)
		rep.Layers[1].CDS, rep.Layers[2].CDS = i, 1 // hidden dead: i + 1
		d := &Deaths{Theta: 0.01, MinRecords: 3, Records: 30, LastStep: 30, WNorm: true}
		for l := range 4 {
			ld := LayerDeaths{Name: rep.Layers[l].Name, N: 6}
			if l == 1 {
				ld.Dead, ld.FirstDeath, ld.MedianDeath, ld.LastDeath, ld.Revived, ld.Revivals = 2, 5, 5, 9, 1, 2
				ld.OutFirst, ld.OutAtDeath, ld.OutEnd, ld.OutEndMax = &one, &one, &one, &one
			}
			d.Layers = append(d.Layers, ld)
		}
		writeResult(t, dir, Result{Task: task, Status: "done", Params: 10, Epochs: 1, ValAcc: 0.5, TestAcc: 0.5, EvalAcc: 0.4, Analysis: rep, Deaths: d})
	}
	s, err := Collect(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Variants) != len(tasks)-1 {
		t.Fatalf("%d variants, want %d", len(s.Variants), len(tasks)-1)
	}
	v := s.Variants[3]
	if v.Model != "tiny-deep" || v.WeightDecay != tasks[3].WeightDecayValue() || v.WeightDecayForm != "decoupled" || v.AdamEps != 1e-8 || v.HiddenDead() != 3+1 || v.Deaths == nil {
		t.Errorf("variant 3: %+v (hidden dead %d)", v, v.HiddenDead())
	}
	lines := s.deathLines()
	if len(lines) != 2 || len(lines[0].pts) != 2 || len(lines[1].pts) != 2 { // wd 0 is off the log axis
		t.Errorf("figure lines %+v", lines)
	}
	var md bytes.Buffer
	if err := s.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Optimizer variants and dead capsules", "| 3 | tiny-deep | rba | 1 | 0.0001 | decoupled | 1e-08 | – | 50.00% | 40.00% | 0, 3, 1, 3 | 0, 2, 0, 0 | 5–9 of 30 | 0, 1, 0, 0 | caps1: 0.5 → 0.5 → 0.5 (0.5) |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}
	var h bytes.Buffer
	if err := s.WriteHTML(&h); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(h.String(), "Dead capsules against weight decay") || !strings.Contains(h.String(), "<svg") {
		t.Error("HTML without the deaths figure")
	}
	path := filepath.Join(dir, "deaths.png")
	if err := s.WriteDeathsPNG(path); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := s.DeathsPNG(&b); err != nil {
		t.Fatal(err)
	}
	if img, err := png.Decode(&b); err != nil || img.Bounds().Dx() < 1000 {
		t.Errorf("PNG: %v", err)
	}

	// A result whose deaths do not add up is invalid.
	bad := Result{Task: tasks[len(tasks)-1], Status: "done", Params: 10, Epochs: 1, ValAcc: 0.5, TestAcc: 0.5, EvalAcc: 0.4,
		Analysis: synthReport(4, 6, 50, 0.2, rng), Deaths: &Deaths{Theta: 0.01, MinRecords: 3, Records: 30, LastStep: 30, Layers: []LayerDeaths{{Name: "x", N: 6, Dead: 7}}}}
	writeResult(t, dir, bad)
	if s, err = Collect(manifest); err != nil || len(s.Invalid) != 1 || !strings.Contains(s.Invalid[0].Problem, "deaths") {
		t.Errorf("bad deaths: %v, %+v", err, s.Invalid)
	}
	// A sweep without the axes has no variants.
	plain, _ := Expand(Presets()["tiny"])
	if hasVariants(plain) {
		t.Error("the tiny preset has variants")
	}
}

// TestLogDeaths: a hand-made log of 2 layers (3 → 2 capsules), 20 steps:
// capsule 0 of layer 0 dies at step 11 for good with its votes matrices
// shrinking to zero, capsule 1 dips below ε for steps 3–8 and comes back
// (a revival), capsule 2 lights up at step 6 (not a revival); capsule 1
// of layer 1 never lights up.
func TestLogDeaths(t *testing.T) {
	g := &telemetry.Log{Header: telemetry.Header{Format: telemetry.Format, Model: "m", Batch: 4,
		Layers: []telemetry.Layer{{Name: "primary", N: 3, D: 2}, {Name: "caps.0", N: 2, D: 2}}}}
	for s := 1; s <= 20; s++ {
		c0, c1, c2 := float32(0.5), float32(0.5), float32(0.4)
		if s <= 5 {
			c2 = 0.003
		}
		w := float32(1)
		if s >= 11 {
			c0, w = 0.001, float32(20-s)/10
		}
		if s >= 3 && s <= 8 {
			c1 = 0.002
		}
		g.Records = append(g.Records, telemetry.Record{Epoch: 1, Step: s,
			MaxNorm: [][]float32{{c0, c1, c2}, {0.9, 0.001}},
			GradW:   [][]float32{make([]float32, 6)},
			WNorm:   [][]float32{{w, 1, 1, w, 1, 1}}}) // [j·3+i]: capsule 0's matrices to outputs 0 and 1
	}
	d, err := logDeaths(g)
	if err != nil {
		t.Fatal(err)
	}
	l := d.Layers[0]
	if d.MinRecords != 2 || d.LastStep != 20 || !d.WNorm || l.Dead != 1 || l.FirstDeath != 11 || l.LastDeath != 11 || l.Revived != 1 || l.Revivals != 1 {
		t.Fatalf("deaths %+v, layer 0 %+v", d, l)
	}
	if l.OutFirst == nil || *l.OutFirst != 1 || *l.OutAtDeath != float64(float32(0.9)) || *l.OutEnd != 0 || *l.OutEndMax != 0 {
		t.Errorf("‖W‖ out: %s → %s → %s (%s), want 1 → 0.9 → 0 (0)", norm(l.OutFirst), norm(l.OutAtDeath), norm(l.OutEnd), norm(l.OutEndMax))
	}
	if l.NeverAlive != 0 {
		t.Errorf("layer 0: %d never lit, want 0", l.NeverAlive)
	}
	if l := d.Layers[1]; l.Dead != 1 || l.NeverAlive != 1 || l.FirstDeath != 1 || l.OutEnd != nil || d.check() != nil {
		t.Errorf("layer 1 %+v, check %v", d.Layers[1], d.check())
	}
	if d := taskDeaths(t.TempDir()); d.Error == "" {
		t.Error("a run directory without telemetry gave no error")
	}
}
