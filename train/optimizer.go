package train

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/kernels"
)

// WeightDecayForm is how Adam applies the weight decay (Options.WeightDecayForm).
type WeightDecayForm int

const (
	// DecayL2 adds wd·W to the gradient before Adam normalises it
	// (torch.optim.Adam's weight_decay, a Keras L2 regulariser): the
	// default, and the engine's only form before issue 28.
	DecayL2 WeightDecayForm = iota
	// DecayDecoupled shrinks the weights by 1 − lr·wd before the Adam
	// update, which sees the loss's gradient alone (AdamW,
	// torch.optim.AdamW).
	DecayDecoupled
)

// WeightDecayForms are the names ParseWeightDecayForm takes, in the
// constants' order.
var WeightDecayForms = []string{"l2", "decoupled"}

// String returns the form's name ("l2", "decoupled").
func (f WeightDecayForm) String() string {
	if int(f) >= 0 && int(f) < len(WeightDecayForms) {
		return WeightDecayForms[f]
	}
	return "WeightDecayForm(" + strconv.Itoa(int(f)) + ")"
}

// ParseWeightDecayForm parses a form's name: "l2" or "decoupled" ("adamw"
// is taken for "decoupled").
func ParseWeightDecayForm(s string) (WeightDecayForm, error) {
	if s == "adamw" {
		return DecayDecoupled, nil
	}
	if i := slices.Index(WeightDecayForms, s); i >= 0 {
		return WeightDecayForm(i), nil
	}
	return 0, fmt.Errorf("%q: want %s", trunc(s), strings.Join(WeightDecayForms, " or "))
}

// DefaultAdamEps is Adam's ε unless Options.AdamEps says otherwise
// (torch.optim.Adam's default; Keras' is 1e-7).
const DefaultAdamEps = 1e-8

// maxGroupList bounds ParseGroupWeightDecay's input (untrusted: a flag).
const maxGroupList = 1 << 10

// ParseGroupWeightDecay parses a per-group weight decay list,
// "GROUP=VALUE,…" with GROUP one of capsnet.ParamGroups, each at most
// once, and VALUE a number in [0, 1] (e.g. "votes=1e-4,decoder=0"). The
// empty string gives nil. Its errors quote the list, then say what is
// wrong in one line.
func ParseGroupWeightDecay(list string) (map[string]float64, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	if len(list) > maxGroupList {
		return nil, fmt.Errorf("%q: %d bytes, want at most %d", trunc(list), len(list), maxGroupList)
	}
	m := map[string]float64{}
	for _, item := range strings.Split(list, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(item), "=")
		name = strings.TrimSpace(name)
		if !ok {
			return nil, fmt.Errorf("%q: %q is not GROUP=VALUE (groups: %s)", trunc(list), trunc(item), strings.Join(capsnet.ParamGroups, ", "))
		}
		if !slices.Contains(capsnet.ParamGroups, name) {
			return nil, fmt.Errorf("%q: unknown group %q: want one of %s", trunc(list), trunc(name), strings.Join(capsnet.ParamGroups, ", "))
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("%q: group %q twice", trunc(list), name)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || !(v >= 0 && v <= 1) {
			return nil, fmt.Errorf("%q: %s=%q: want a number in [0, 1]", trunc(list), name, trunc(val))
		}
		m[name] = v
	}
	return m, nil
}

// FormatGroupWeightDecay is the inverse of ParseGroupWeightDecay, groups
// in capsnet.ParamGroups' order ("" for none).
func FormatGroupWeightDecay(m map[string]float64) string {
	var parts []string
	for _, g := range capsnet.ParamGroups {
		if v, ok := m[g]; ok {
			parts = append(parts, g+"="+strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	return strings.Join(parts, ",")
}

// trunc shortens untrusted text quoted in an error message.
func trunc(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// adamEps is o.AdamEps, DefaultAdamEps when zero.
func (o *Options) adamEps() float64 {
	if o.AdamEps == 0 {
		return DefaultAdamEps
	}
	return o.AdamEps
}

// adam is the optimizer's hyper-parameters for the run's start (the
// learning rate follows the schedule; per-group decays: Trainer.SetGroupWeightDecay).
func (o *Options) adam() kernels.AdamParams {
	return kernels.AdamParams{LR: o.LR, Beta1: 0.9, Beta2: 0.999, Eps: o.adamEps(), WeightDecay: o.WeightDecay,
		Decoupled: o.WeightDecayForm == DecayDecoupled}
}

// checkOptimizer validates the optimizer fields beyond LR, LRDecay and
// WeightDecay (Options.check).
func (o *Options) checkOptimizer() error {
	switch {
	case !(o.AdamEps >= 0 && o.AdamEps <= 1):
		return fieldErr("AdamEps", o.AdamEps, "must be in (0, 1] (0: the default %g)", DefaultAdamEps)
	case o.WeightDecayForm != DecayL2 && o.WeightDecayForm != DecayDecoupled:
		return fieldErr("WeightDecayForm", int(o.WeightDecayForm), "want %s", strings.Join(WeightDecayForms, " or "))
	case o.WeightDecayForm == DecayDecoupled && o.LR*o.WeightDecay >= 1:
		return fieldErr("WeightDecay", o.WeightDecay, "decoupled decay with learning rate %g would scale the weights by %g ≤ 0 every step", o.LR, 1-o.LR*o.WeightDecay)
	}
	for _, g := range sortedKeys(o.GroupWeightDecay) {
		v := o.GroupWeightDecay[g]
		switch {
		case !slices.Contains(capsnet.ParamGroups, g):
			return fieldErr("GroupWeightDecay", trunc(g), "unknown parameter group: want one of %s", strings.Join(capsnet.ParamGroups, ", "))
		case !(v >= 0) || math.IsInf(v, 0):
			return fieldErr("GroupWeightDecay", g+"="+strconv.FormatFloat(v, 'g', -1, 64), "must be a finite number ≥ 0")
		case o.WeightDecayForm == DecayDecoupled && o.LR*v >= 1:
			return fieldErr("GroupWeightDecay", g+"="+strconv.FormatFloat(v, 'g', -1, 64), "decoupled decay with learning rate %g would scale the weights by %g ≤ 0 every step", o.LR, 1-o.LR*v)
		}
	}
	return nil
}

// sortedKeys returns m's keys, sorted.
func sortedKeys(m map[string]float64) []string {
	var k []string
	for g := range m {
		k = append(k, g)
	}
	sort.Strings(k)
	return k
}

// optimizerFingerprint is what runFingerprint adds for the optimizer
// settings of issue 28: nothing when they are the defaults, so that runs
// started before they existed keep their fingerprint.
func (o *Options) optimizerFingerprint() string {
	var s string
	if eps := o.adamEps(); eps != DefaultAdamEps {
		s += fmt.Sprintf("eps=%v\n", eps)
	}
	if o.WeightDecayForm != DecayL2 {
		s += "wd_form=" + o.WeightDecayForm.String() + "\n"
	}
	if len(o.GroupWeightDecay) > 0 {
		s += "wd_groups=" + FormatGroupWeightDecay(o.GroupWeightDecay) + "\n"
	}
	return s
}

// OptimizerSettings are the optimizer's settings as a checkpoint's
// metadata "adam" records them (JSON; docs/json.md).
type OptimizerSettings struct {
	LR              float64            `json:"lr"`
	LRDecay         float64            `json:"lr_decay"`
	Beta1           float64            `json:"beta1"`
	Beta2           float64            `json:"beta2"`
	Eps             float64            `json:"eps"`
	WeightDecay     float64            `json:"weight_decay"`
	WeightDecayForm string             `json:"weight_decay_form"`
	GroupDecay      map[string]float64 `json:"group_weight_decay,omitempty"`
}

// MetaOptimizer is the metadata key of OptimizerSettings.
const MetaOptimizer = "adam"

// optimizerSettings returns o's OptimizerSettings.
func (o *Options) optimizerSettings() OptimizerSettings {
	a := o.adam()
	return OptimizerSettings{LR: o.LR, LRDecay: o.LRDecay, Beta1: a.Beta1, Beta2: a.Beta2, Eps: a.Eps,
		WeightDecay: o.WeightDecay, WeightDecayForm: o.WeightDecayForm.String(), GroupDecay: o.GroupWeightDecay}
}

// ReadOptimizerSettings returns the optimizer settings a checkpoint's
// metadata records, ok false for a checkpoint written before they were
// recorded (its run used the defaults of the time: ε 1e-8, L2 decay, one
// coefficient for every group, given by metadata "plan").
func ReadOptimizerSettings(meta map[string]string) (s OptimizerSettings, ok bool, err error) {
	js, ok := meta[MetaOptimizer]
	if !ok {
		return s, false, nil
	}
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		return s, true, fmt.Errorf("metadata %s: %v", MetaOptimizer, err)
	}
	return s, true, nil
}

// SetGroupWeightDecay sets the weight decay of the parameters of the
// groups m names (capsnet.ParamGroups: "backbone", "votes", "priors",
// "decoder"); the others keep Trainer.Adam.WeightDecay. nil restores it
// for every group. It returns an error for an unknown group or a
// coefficient that is not a finite number ≥ 0.
func (t *Trainer) SetGroupWeightDecay(m map[string]float64) error {
	for _, g := range sortedKeys(m) {
		if !slices.Contains(capsnet.ParamGroups, g) {
			return fmt.Errorf("train: weight decay of group %q: want one of %s", trunc(g), strings.Join(capsnet.ParamGroups, ", "))
		}
		if v := m[g]; !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("train: weight decay of group %s: %v, must be a finite number ≥ 0", g, v)
		}
	}
	if len(m) == 0 {
		t.wd = nil
		return nil
	}
	t.wd = make([]float64, len(t.P.List))
	for i, q := range t.P.List {
		t.wd[i] = t.Adam.WeightDecay
		if v, ok := m[q.Role.Group()]; ok {
			t.wd[i] = v
		}
	}
	return nil
}
