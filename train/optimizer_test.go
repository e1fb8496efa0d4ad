package train

import (
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/kernels"
)

// TestGroupWeightDecay runs one optimizer step with zero gradients and
// decoupled decay: Adam's update is then 0 and every weight must be
// scaled by exactly 1 − lr·wd of its own group.
func TestGroupWeightDecay(t *testing.T) {
	p, err := capsnet.NewParams(microModel())
	if err != nil {
		t.Fatal(err)
	}
	p.Init(3)
	const lr = 0.1
	tr, err := NewTrainer(p, 4, 1, kernels.AdamParams{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.5, Decoupled: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	groups := map[string]float64{"votes": 0, "decoder": 0.25}
	if err := tr.SetGroupWeightDecay(groups); err != nil {
		t.Fatal(err)
	}
	before := map[string][]float32{}
	for _, q := range p.List {
		before[q.Name] = append([]float32(nil), q.Buf.Data()...)
	}
	tr.Step, tr.lr = 1, lr
	if err := tr.optimize(0); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, q := range p.List {
		wd, ok := groups[q.Role.Group()]
		if !ok {
			wd = 0.5
		}
		if !q.Trainable {
			wd = 0
		}
		seen[q.Role.Group()] = true
		keep := float32(1 - lr*wd)
		for k, w := range q.Buf.Data() {
			if want := before[q.Name][k] * keep; w != want {
				t.Fatalf("%s (group %s)[%d] = %v, want %v·%v = %v", q.Name, q.Role.Group(), k, w, before[q.Name][k], keep, want)
			}
		}
	}
	for _, g := range []string{"backbone", "votes", "decoder"} {
		if !seen[g] {
			t.Errorf("the model has no parameter of group %s: the test checks nothing of it", g)
		}
	}
	if err := tr.SetGroupWeightDecay(map[string]float64{"capsules": 1}); err == nil || !strings.Contains(err.Error(), "capsules") {
		t.Errorf("unknown group: %v", err)
	}
	if err := tr.SetGroupWeightDecay(map[string]float64{"votes": -1}); err == nil {
		t.Error("negative decay accepted")
	}
	if err := tr.SetGroupWeightDecay(nil); err != nil || tr.wd != nil {
		t.Errorf("nil: %v, wd %v", err, tr.wd)
	}
}

func TestParseOptimizerSettings(t *testing.T) {
	for _, s := range []string{"l2", "decoupled", "adamw"} {
		if _, err := ParseWeightDecayForm(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	if f, _ := ParseWeightDecayForm("adamw"); f != DecayDecoupled || f.String() != "decoupled" {
		t.Errorf("adamw = %v", f)
	}
	for _, s := range []string{"", "L2", "AdamW", "sgd"} {
		if _, err := ParseWeightDecayForm(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	m, err := ParseGroupWeightDecay(" decoder = 0 , votes=1e-4")
	if err != nil || len(m) != 2 || m["votes"] != 1e-4 || m["decoder"] != 0 {
		t.Fatalf("parse: %v, %v", m, err)
	}
	if s := FormatGroupWeightDecay(m); s != "votes=0.0001,decoder=0" {
		t.Errorf("format: %q", s)
	}
	if m, err := ParseGroupWeightDecay(""); m != nil || err != nil {
		t.Errorf("empty: %v, %v", m, err)
	}
	for _, s := range []string{"votes", "votes=", "votes=x", "votes=2", "votes=-0.1", "votes=nan", "votes=1,votes=2", "conv=1", "=1", strings.Repeat("votes=1,", 200)} {
		if _, err := ParseGroupWeightDecay(s); err == nil {
			t.Errorf("%q accepted", s)
		} else if strings.Count(err.Error(), "\n") > 0 || len(err.Error()) > 300 {
			t.Errorf("%q: error of %d bytes: %v", s, len(err.Error()), err)
		}
	}
}

// TestOptimizerFingerprint: the defaults leave the run fingerprint of runs
// started before the settings existed unchanged; any other value changes it.
func TestOptimizerFingerprint(t *testing.T) {
	o := DefaultOptions(microModel())
	if s := o.optimizerFingerprint(); s != "" {
		t.Errorf("defaults: %q", s)
	}
	o.AdamEps = DefaultAdamEps
	if s := o.optimizerFingerprint(); s != "" {
		t.Errorf("explicit default ε: %q", s)
	}
	base := o.runFingerprint()
	for _, f := range []func(o *Options){
		func(o *Options) { o.AdamEps = 1e-7 },
		func(o *Options) { o.WeightDecayForm = DecayDecoupled },
		func(o *Options) { o.GroupWeightDecay = map[string]float64{"votes": 1e-6} },
	} {
		c := o
		f(&c)
		if c.runFingerprint() == base {
			t.Errorf("%+v: same fingerprint as the defaults", c.optimizerSettings())
		}
		if err := c.checkOptimizer(); err != nil {
			t.Error(err)
		}
	}
	for _, f := range []func(o *Options){
		func(o *Options) { o.AdamEps = -1 },
		func(o *Options) { o.WeightDecayForm = 7 },
		func(o *Options) { o.GroupWeightDecay = map[string]float64{"prior": 0} },
		func(o *Options) { o.WeightDecayForm, o.LR, o.WeightDecay = DecayDecoupled, 1, 1 },
	} {
		c := o
		f(&c)
		if err := c.checkOptimizer(); err == nil {
			t.Errorf("%+v accepted", c.optimizerSettings())
		}
	}
}
