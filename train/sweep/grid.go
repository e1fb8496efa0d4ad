package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/train/data"
)

// Grid is a sweep's definition (a JSON file or a named preset, Presets):
// the models, either explicit (Models: presets or config files) or the
// paper's grid axes (Depths × Capsules × Dims: the presets deep-nN-dD-LL),
// each with every routing kind of Routing and every seed of Seeds, and the
// settings every task shares.
type Grid struct {
	Name string `json:"name"`
	// Models are presets or JSON config files (relative to the
	// manifest's directory); with Routing, a kind other than the default
	// takes each preset's twin NAME-KIND (capsnet.PresetTwin). Exclusive
	// with the axes.
	Models []string `json:"models,omitempty"`
	// Depths (routing layers L), Capsules (n) and Dims (d) span the grid
	// presets deep-nN-dD-LL (routing by agreement, r 10).
	Depths   []int `json:"depths,omitempty"`
	Capsules []int `json:"capsules,omitempty"`
	Dims     []int `json:"dims,omitempty"`
	// Routing kinds, names of capsnet.RoutingKinds ("rba", "uniform",
	// "self-attention", "self-attention-in"), each at most once; empty
	// with Models: each model as it is. The named grids have
	// PaperRouting; tools/sweep's -routing sets it (ParseRouting).
	Routing []string `json:"routing,omitempty"`
	Seeds   []uint64 `json:"seeds"`
	// The optimizer axes (issue 28): every combination of the values
	// given is a variant of every model, trained with every routing kind
	// and seed; its settings are on each task's line (Task.WeightDecay, …)
	// and its name is part of the task's Arch (e.g.
	// "deep-wd0.0001-decoupled-eps1e-07"). Empty: the default (weight
	// decay 1e-6 in the gradient, ε 1e-8). WeightDecay values are in
	// [0, 1], WeightDecayForm names of train.WeightDecayForms, AdamEps
	// values in (0, 1]; GroupWeightDecay lists train's GROUP=VALUE,…
	// settings ("" the empty one: no group of its own).
	WeightDecay      []float64 `json:"weight_decay,omitempty"`
	WeightDecayForm  []string  `json:"weight_decay_form,omitempty"`
	AdamEps          []float64 `json:"adam_eps,omitempty"`
	GroupWeightDecay []string  `json:"group_weight_decay,omitempty"`
	// InitStd: the votes matrices of every capsule layer drawn from a
	// normal of each standard deviation (in (0, 100]) instead of the
	// model's own initialisation (Settings.InitStd); a variant axis like
	// the optimizer's, outermost after them.
	InitStd []float64 `json:"init_std,omitempty"`
	// Telemetry records every task's training telemetry (docs/telemetry.md).
	Telemetry bool `json:"telemetry,omitempty"`
	// Data, Eval, K, Target, Epochs, Batch, Threads: as in Task.
	Data    string  `json:"data"`
	Eval    string  `json:"eval"`
	K       int     `json:"k,omitempty"`
	Target  float64 `json:"target"`
	Epochs  int     `json:"epochs"`
	Batch   int     `json:"batch"`
	Threads int     `json:"threads"`
}

// Bounds of a grid and of a manifest's fields (untrusted input: a typo or
// a hostile file, not a sweep).
const (
	MaxTasks    = 100_000            // tasks in a manifest (the paper's grid has 576)
	MaxEpochs   = 1_000_000          // as tools/train's -epochs
	MaxThreads  = capsnet.MaxThreads // as tools/train's -threads
	MaxAxis     = 1 << 16            // depth, capsule count, dimension
	maxGridFile = 1 << 20
)

// Presets are the named grids:
//
//   - "paper": the paper's architecture grid, 96 architectures (routing
//     layers 1–8 × 16/32/64 capsules × dimension 8/16/32/64) × routing by
//     agreement and uniform routing (PaperRouting; the other kinds of
//     capsnet.RoutingKinds only when asked for, tools/sweep's -routing) ×
//     seeds 1–3 = 576 tasks, trained on
//     MNIST (40×40 canvas) to 99.20% validation accuracy (at most 60
//     epochs of 512, 2 threads each) and analysed on 10,000 AffNIST
//     images;
//   - "paper-small": the same recipe on the paper's main shape (16
//     capsules of dimension 8) at every depth, one seed: 16 tasks;
//   - "tiny": tiny-deep and tiny-deep-uniform × seeds 1, 2 on the
//     embedded MNIST subset, 2 epochs, analysed on 200 embedded test
//     images, 1 thread: the CI sweep.
func Presets() map[string]Grid {
	paper := Grid{Name: "paper", Depths: []int{1, 2, 3, 4, 5, 6, 7, 8}, Capsules: []int{16, 32, 64}, Dims: []int{8, 16, 32, 64},
		Routing: PaperRouting(), Seeds: []uint64{1, 2, 3},
		Data: "mnist", Eval: "affnist", K: 10000, Target: 0.992, Epochs: 60, Batch: 512, Threads: 2}
	small := paper
	small.Name, small.Capsules, small.Dims, small.Seeds = "paper-small", []int{16}, []int{8}, []uint64{1}
	tiny := Grid{Name: "tiny", Models: []string{"tiny-deep"}, Routing: PaperRouting(), Seeds: []uint64{1, 2},
		Data: "embedded", Eval: "embedded", K: 200, Target: 0, Epochs: 2, Batch: 64, Threads: 1}
	return map[string]Grid{"paper": paper, "paper-small": small, "tiny": tiny}
}

// PaperRouting returns the routing kinds of the paper's experiment, those
// of the named grids and tools/sweep's default: the presets' default kind
// (routing by agreement, "rba") and the baseline kind (uniform routing,
// "uniform"), in capsnet.RoutingKinds' order. A kind added to the table
// joins a grid only when asked for (Grid.Routing, ParseRouting).
func PaperRouting() []string {
	var kinds []string
	for _, k := range capsnet.RoutingKinds {
		if k.Name == capsnet.DefaultRouting().Name || k.Baseline {
			kinds = append(kinds, k.Name)
		}
	}
	return kinds
}

// ParseRouting parses list, a comma-separated list of routing kinds
// (names of capsnet.RoutingKinds; spaces around a name are ignored), for
// Grid.Routing: every name known, none twice, and the baseline kind
// (uniform routing) among them, the kind Collect compares every other
// with. The kinds are returned in capsnet.RoutingKinds' order whatever
// the list's, so that the same kinds always give the same manifest. Its
// errors quote the list, then say what is wrong with it in one line.
func ParseRouting(list string) ([]string, error) {
	names := strings.Join(capsnet.RoutingNames(), ", ")
	if strings.TrimSpace(list) == "" {
		return nil, fmt.Errorf("%q: no routing kind: want a comma-separated list of %s", trunc(list), names)
	}
	given := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		_, err := capsnet.LookupRouting(name)
		switch {
		case name == "":
			return nil, fmt.Errorf("%q: an empty kind name: want a comma-separated list of %s", trunc(list), names)
		case err != nil:
			return nil, fmt.Errorf("%q: unknown kind %q: want one of %s", trunc(list), trunc(name), names)
		case given[name]:
			return nil, fmt.Errorf("%q: kind %q twice", trunc(list), trunc(name))
		}
		given[name] = true
	}
	var kinds, baselines []string
	for _, k := range capsnet.RoutingKinds {
		if given[k.Name] {
			kinds = append(kinds, k.Name)
		}
		if k.Baseline {
			baselines = append(baselines, k.Name)
		}
	}
	if !slices.ContainsFunc(kinds, capsnet.IsBaselineRouting) {
		return nil, fmt.Errorf("%q: no baseline kind: add %s (the sweep's tables compare every kind with it)", trunc(list), strings.Join(baselines, " or "))
	}
	return kinds, nil
}

// PresetNames lists Presets' names, sorted.
func PresetNames() []string {
	var names []string
	for k := range Presets() {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// ReadGrid reads a grid JSON file (unknown fields are errors) and checks
// it (Grid.Validate).
func ReadGrid(path string) (Grid, error) {
	b, err := readBounded(path, "grid", maxGridFile)
	if err != nil {
		return Grid{}, err
	}
	var g Grid
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return Grid{}, fmt.Errorf("grid %s: %v", path, err)
	}
	if err := g.Validate(); err != nil {
		return Grid{}, fmt.Errorf("grid %s: %w", path, err)
	}
	return g, nil
}

// Validate checks a grid's fields and that it has at most MaxTasks tasks.
func (g Grid) Validate() error {
	axes := len(g.Depths) + len(g.Capsules) + len(g.Dims)
	switch {
	case len(g.Models) > 0 && axes > 0:
		return fmt.Errorf("models and depths/capsules/dims: give one or the other")
	case len(g.Models) == 0 && (len(g.Depths) == 0 || len(g.Capsules) == 0 || len(g.Dims) == 0):
		return fmt.Errorf("no models: give models, or depths, capsules and dims")
	case len(g.Seeds) == 0:
		return fmt.Errorf("seeds: at least one")
	case len(g.Models) == 0 && len(g.Routing) == 0:
		return fmt.Errorf("routing: at least one of %s for the grid axes", strings.Join(capsnet.RoutingNames(), ", "))
	}
	for _, ax := range []struct {
		name string
		v    []int
	}{{"depths", g.Depths}, {"capsules", g.Capsules}, {"dims", g.Dims}} {
		for _, v := range ax.v {
			if v < 1 || v > MaxAxis {
				return fmt.Errorf("%s: %d: want 1 to %d", ax.name, v, MaxAxis)
			}
		}
	}
	for i, r := range g.Routing {
		if _, err := capsnet.LookupRouting(r); err != nil {
			return fmt.Errorf("routing: %q: want one of %s", r, strings.Join(capsnet.RoutingNames(), ", "))
		}
		if slices.Contains(g.Routing[:i], r) {
			return fmt.Errorf("routing: %q twice", r)
		}
	}
	if err := g.checkOptimizer(); err != nil {
		return err
	}
	n := float64(max(len(g.Models), 1)) * float64(max(len(g.Depths), 1)*max(len(g.Capsules), 1)) * float64(max(len(g.Dims), 1)) *
		float64(max(len(g.Routing), 1)) * float64(len(g.Seeds)) * float64(len(g.variants()))
	if n > MaxTasks {
		return fmt.Errorf("%.0f tasks: at most %d", n, MaxTasks)
	}
	return checkSettings(g.Data, g.Eval, g.K, g.Target, g.Epochs, g.Batch, g.Threads)
}

// checkSettings checks the settings a grid and a task share.
func checkSettings(dataName, eval string, k int, target float64, epochs, batch, threads int) error {
	switch {
	case !slices.Contains(data.DataSets, dataName):
		return fmt.Errorf("data: %q: want one of %s", dataName, strings.Join(data.DataSets, ", "))
	case !slices.Contains(data.TestSets, eval):
		return fmt.Errorf("eval: %q: want one of %s", eval, strings.Join(data.TestSets, ", "))
	case k < 0 || k > data.MaxImages:
		return fmt.Errorf("k: %d: want 0 (all) to %d", k, data.MaxImages)
	case !(target >= 0 && target <= 1) || math.IsNaN(target):
		return fmt.Errorf("target: %v: want an accuracy in [0, 1]", target)
	case epochs < 1 || epochs > MaxEpochs:
		return fmt.Errorf("epochs: %d: want 1 to %d", epochs, MaxEpochs)
	case batch < 1 || batch > capsnet.MaxBatch:
		return fmt.Errorf("batch: %d: want 1 to %d", batch, capsnet.MaxBatch)
	case threads < 1 || threads > MaxThreads:
		return fmt.Errorf("threads: %d (batch %d): want 1 to %d (capsnet.MaxThreads, replicas in one process)", threads, batch, MaxThreads)
	case batch < threads:
		return fmt.Errorf("batch %d: less than one image per thread (threads %d)", batch, threads)
	}
	return nil
}

// Expand returns the grid's tasks in their stable order: models (or the
// axes depth, capsules, dim, outermost first) outer, then routing, then
// seed innermost; Index is the position, Dir runs/TTTTT-ARCH-ROUTING-sSEED
// and Result results/TTTTT.json (TTTTT the index, five digits). A model
// named with the routing axis must be a preset whose twin NAME-KIND
// (capsnet.PresetTwin) is a preset too for every kind KIND of Routing
// other than the default; without it, a config file is read (relative to
// the working directory) for its routing kind.
func Expand(g Grid) ([]Task, error) {
	if err := g.Validate(); err != nil {
		return nil, err
	}
	type arch struct {
		model, arch string
		depth, n, d int
		opt         Settings
	}
	var archs []arch
	for _, m := range g.Models {
		a := strings.TrimSuffix(filepath.Base(m), ".json")
		archs = append(archs, arch{model: m, arch: a})
	}
	for _, L := range g.Depths {
		for _, n := range g.Capsules {
			for _, d := range g.Dims {
				archs = append(archs, arch{model: fmt.Sprintf("deep-n%d-d%d-L%d", n, d, L), arch: fmt.Sprintf("n%d-d%d-L%d", n, d, L), depth: L, n: n, d: d})
			}
		}
	}
	if vs := g.variants(); len(vs) > 1 || vs[0].name != "" {
		var vars []arch
		for _, a := range archs {
			for _, v := range vs {
				b := a
				b.arch, b.opt = a.arch+v.name, v.opt
				vars = append(vars, b)
			}
		}
		archs = vars
	}
	presets := capsnet.Presets()
	var tasks []Task
	for _, a := range archs {
		routings := g.Routing
		if len(routings) == 0 {
			routings = []string{""} // the model's own
		}
		for _, r := range routings {
			model := a.model
			if r != "" {
				model = capsnet.PresetTwin(a.model, r)
			}
			cfg, isPreset := presets[model]
			if r != "" && !isPreset {
				return nil, fmt.Errorf("model %s with routing %s: %s is not a preset (routing applies to presets with twins NAME-KIND; name config files without routing)", a.model, r, model)
			}
			rk := r
			if rk == "" { // the model's own routing kind: read its config
				var err error
				if rk, err = ownRouting(cfg, model, isPreset); err != nil {
					return nil, err
				}
			}
			for _, s := range g.Seeds {
				i := len(tasks)
				tasks = append(tasks, Task{Index: i, Model: model, Arch: a.arch, Routing: rk, Depth: a.depth, Capsules: a.n, Dim: a.d, Seed: s,
					Data: g.Data, Eval: g.Eval, K: g.K, Target: g.Target, Epochs: g.Epochs, Batch: g.Batch, Threads: g.Threads,
					Settings: a.opt, Telemetry: g.Telemetry,
					Dir:    fmt.Sprintf("runs/%05d-%s-%s-s%d", i, a.arch, rk, s),
					Result: fmt.Sprintf("results/%05d.json", i)})
			}
		}
	}
	return tasks, nil
}

// ownRouting returns the routing kind of model's first capsule layer:
// cfg's for a preset, else its config file's.
func ownRouting(cfg capsnet.Config, model string, isPreset bool) (string, error) {
	if !isPreset {
		var err error
		if cfg, err = capsnet.LoadConfig(model); err != nil {
			return "", fmt.Errorf("models: %w", err)
		}
	}
	l, err := cfg.Resolve()
	if err != nil {
		return "", fmt.Errorf("models: %s: %w", model, err)
	}
	return l.Caps[0].Routing.Name, nil
}

// readBounded reads the file at path, refusing one larger than limit bytes
// before reading past it (what names the kind of file in errors).
func readBounded(path, what string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s %s: more than %d KiB, not a %s file", what, path, limit>>10, what)
	}
	return b, nil
}

// RelativeModels returns tasks with every config-file model given by an
// absolute path (tools/sweep plan makes a grid file's paths absolute)
// made relative to the manifest's directory dir (absolute), where a
// worker resolves it (Path): a manifest committed with its configs then
// names them the same on every machine. Presets and relative paths stay.
func RelativeModels(tasks []Task, dir string) []Task {
	out := append([]Task(nil), tasks...)
	for i, t := range out {
		if !filepath.IsAbs(t.Model) {
			continue
		}
		if rel, err := filepath.Rel(dir, t.Model); err == nil {
			out[i].Model = filepath.ToSlash(rel)
		}
	}
	return out
}
