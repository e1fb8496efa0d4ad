package sweep

import (
	"fmt"
	"slices"

	"github.com/capstan-ml/capstan/capsnet"
	"math"

	"github.com/capstan-ml/capstan/train"
)

// Settings are a task's training settings beyond its model and the
// sweep's recipe, each omitted from its manifest line (and the default)
// when unset: weight decay 1e-6 in the gradient (form "l2"), Adam's ε
// 1e-8, no parameter group of its own (as tools/train's -weight-decay,
// -weight-decay-form, -adam-eps, -group-weight-decay), and the model's own
// votes-matrix initialisation (InitStd: a normal of this standard
// deviation for every capsule layer's W instead, as a config's init_std).
type Settings struct {
	WeightDecay      *float64 `json:"weight_decay,omitempty"`
	WeightDecayForm  string   `json:"weight_decay_form,omitempty"`
	AdamEps          *float64 `json:"adam_eps,omitempty"`
	GroupWeightDecay string   `json:"group_weight_decay,omitempty"`
	InitStd          *float64 `json:"init_std,omitempty"`
}

// check checks the settings (a manifest's line is untrusted).
func (o Settings) check() error {
	if o.WeightDecay != nil {
		if v := *o.WeightDecay; !(v >= 0 && v <= 1) {
			return fmt.Errorf("weight_decay: %v: want a number in [0, 1]", v)
		}
	}
	if o.WeightDecayForm != "" {
		if _, err := train.ParseWeightDecayForm(o.WeightDecayForm); err != nil {
			return fmt.Errorf("weight_decay_form: %w", err)
		}
	}
	if o.AdamEps != nil {
		if v := *o.AdamEps; !(v > 0 && v <= 1) || math.IsNaN(v) {
			return fmt.Errorf("adam_eps: %v: want a number in (0, 1]", v)
		}
	}
	if _, err := train.ParseGroupWeightDecay(o.GroupWeightDecay); err != nil {
		return fmt.Errorf("group_weight_decay: %w", err)
	}
	if o.InitStd != nil {
		if v := *o.InitStd; !(v > 0 && v <= maxInitStd) {
			return fmt.Errorf("init_std: %v: want a number in (0, %v]", v, maxInitStd)
		}
	}
	return nil
}

// maxInitStd bounds Settings.InitStd (untrusted: a manifest's line).
const maxInitStd = 100

// applyModel sets o's model settings in a task's model config: InitStd
// for every capsule layer's votes matrices (a normal initialisation).
func (o Settings) applyModel(cfg *capsnet.Config) {
	if o.InitStd == nil {
		return
	}
	for i := range cfg.Caps {
		cfg.Caps[i].Init, cfg.Caps[i].InitStd = "", *o.InitStd
	}
}

// apply sets o's settings in a run's options (checked: Task.check).
func (o Settings) apply(opts *train.Options) error {
	if o.WeightDecay != nil {
		opts.WeightDecay = *o.WeightDecay
	}
	if o.AdamEps != nil {
		opts.AdamEps = *o.AdamEps
	}
	var err error
	if o.WeightDecayForm != "" {
		if opts.WeightDecayForm, err = train.ParseWeightDecayForm(o.WeightDecayForm); err != nil {
			return err
		}
	}
	opts.GroupWeightDecay, err = train.ParseGroupWeightDecay(o.GroupWeightDecay)
	return err
}

// variant is one combination of a grid's optimizer axes: its settings and
// the suffix it adds to a task's Arch ("" for the defaults).
type variant struct {
	name string
	opt  Settings
}

// variants returns every combination of g's optimizer axes, weight decay
// outermost, then form, ε and groups; one default variant when the grid
// has none. Each is named by its settings (Settings.name).
func (g Grid) variants() []variant {
	vs := []variant{{}}
	vs = axis(vs, g.WeightDecay, func(v *variant, wd float64) { v.opt.WeightDecay = &wd })
	vs = axis(vs, g.WeightDecayForm, func(v *variant, f string) { v.opt.WeightDecayForm = f })
	vs = axis(vs, g.AdamEps, func(v *variant, e float64) { v.opt.AdamEps = &e })
	vs = axis(vs, g.GroupWeightDecay, func(v *variant, gw string) { v.opt.GroupWeightDecay = gw })
	vs = axis(vs, g.InitStd, func(v *variant, sd float64) { v.opt.InitStd = &sd })
	for i := range vs {
		vs[i].name = vs[i].opt.name()
	}
	return vs
}

// axis returns every variant of vs combined with every value of vals (set
// applies one to a copy), vs unchanged when vals is empty.
func axis[T any](vs []variant, vals []T, set func(*variant, T)) []variant {
	if len(vals) == 0 {
		return vs
	}
	var next []variant
	for _, v := range vs {
		for _, x := range vals {
			n := v
			set(&n, x)
			next = append(next, n)
		}
	}
	return next
}

// checkOptimizer checks the grid's optimizer axes: every value valid
// (Settings.check), none twice in an axis.
func (g Grid) checkOptimizer() error {
	for i, wd := range g.WeightDecay {
		if err := (Settings{WeightDecay: &wd}).check(); err != nil {
			return err
		}
		for _, w := range g.WeightDecay[:i] {
			if w == wd {
				return fmt.Errorf("weight_decay: %v twice", wd)
			}
		}
	}
	for i, f := range g.WeightDecayForm {
		form, err := train.ParseWeightDecayForm(f)
		if err != nil {
			return fmt.Errorf("weight_decay_form: %w", err)
		}
		for _, h := range g.WeightDecayForm[:i] {
			if prev, _ := train.ParseWeightDecayForm(h); prev == form {
				return fmt.Errorf("weight_decay_form: %q twice", f)
			}
		}
	}
	for i, e := range g.AdamEps {
		if err := (Settings{AdamEps: &e}).check(); err != nil {
			return err
		}
		for _, x := range g.AdamEps[:i] {
			if x == e {
				return fmt.Errorf("adam_eps: %v twice", e)
			}
		}
	}
	for i, gw := range g.GroupWeightDecay {
		if err := (Settings{GroupWeightDecay: gw}).check(); err != nil {
			return err
		}
		for _, x := range g.GroupWeightDecay[:i] {
			if x == gw {
				return fmt.Errorf("group_weight_decay: %q twice", trunc(gw))
			}
		}
	}
	for i, sd := range g.InitStd {
		if err := (Settings{InitStd: &sd}).check(); err != nil {
			return err
		}
		if slices.Contains(g.InitStd[:i], sd) {
			return fmt.Errorf("init_std: %v twice", sd)
		}
	}
	return nil
}

// WeightDecayValue is the task's weight decay in effect: its own, else
// train's default (1e-6).
func (o Settings) WeightDecayValue() float64 {
	if o.WeightDecay != nil {
		return *o.WeightDecay
	}
	return defaultWeightDecay
}
