package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/train"
	"github.com/capstan-ml/capstan/train/telemetry"
)

// TestExpandPaper: the paper's grid is 96 architectures × 2 routings × 3
// seeds = 576 tasks, in the stable order (depth, capsules, dim outer;
// routing; seed inner), every model a preset, every directory distinct.
func TestExpandPaper(t *testing.T) {
	tasks, err := Expand(Presets()["paper"])
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 576 {
		t.Fatalf("%d tasks, want 576", len(tasks))
	}
	presets := capsnet.Presets()
	i := 0
	for _, L := range []int{1, 2, 3, 4, 5, 6, 7, 8} {
		for _, n := range []int{16, 32, 64} {
			for _, d := range []int{8, 16, 32, 64} {
				for _, r := range []string{"rba", "uniform"} {
					for _, s := range []uint64{1, 2, 3} {
						tk := tasks[i]
						model := fmt.Sprintf("deep-n%d-d%d-L%d", n, d, L)
						if r == "uniform" {
							model += "-uniform"
						}
						arch := fmt.Sprintf("n%d-d%d-L%d", n, d, L)
						want := Task{Index: i, Model: model, Arch: arch, Routing: r, Depth: L, Capsules: n, Dim: d, Seed: s,
							Data: "mnist", Eval: "affnist", K: 10000, Target: 0.992, Epochs: 60, Batch: 512, Threads: 2,
							Dir: fmt.Sprintf("runs/%05d-%s-%s-s%d", i, arch, r, s), Result: fmt.Sprintf("results/%05d.json", i)}
						if tk != want {
							t.Fatalf("task %d: %+v, want %+v", i, tk, want)
						}
						c, ok := presets[model]
						if !ok || c.Caps[0].Routing != r || len(c.Caps) != L {
							t.Fatalf("task %d: model %s is not a preset with %d %s layers", i, model, L, r)
						}
						i++
					}
				}
			}
		}
	}
	small, err := Expand(Presets()["paper-small"])
	if err != nil || len(small) != 16 {
		t.Fatalf("paper-small: %d tasks, %v; want 16", len(small), err)
	}
}

// TestExpandTiny: the CI sweep, tiny-deep and its uniform twin × 2 seeds.
func TestExpandTiny(t *testing.T) {
	tasks, err := Expand(Presets()["tiny"])
	if err != nil {
		t.Fatal(err)
	}
	got := taskNames(tasks)
	want := []string{"tiny-deep/rba/1 runs/00000-tiny-deep-rba-s1", "tiny-deep/rba/2 runs/00001-tiny-deep-rba-s2",
		"tiny-deep-uniform/uniform/1 runs/00002-tiny-deep-uniform-s1", "tiny-deep-uniform/uniform/2 runs/00003-tiny-deep-uniform-s2"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tiny tasks %q, want %q", got, want)
	}
}

// TestExpandRouting: the tiny grid with all four routing kinds (in any
// order) is tiny-deep and its three twins × 2 seeds, in the kinds' table
// order; the paper's grid with them has 96 × 4 × 3 tasks, each model a
// preset of its kind.
func TestExpandRouting(t *testing.T) {
	if got := PaperRouting(); !reflect.DeepEqual(got, []string{"rba", "uniform"}) {
		t.Errorf("PaperRouting() = %q, want rba, uniform", got)
	}
	for _, list := range []string{"rba,uniform,self-attention,self-attention-in", "self-attention-in, uniform,self-attention ,rba"} {
		kinds, err := ParseRouting(list)
		if err != nil {
			t.Fatalf("ParseRouting(%q): %v", list, err)
		}
		g := Presets()["tiny"]
		g.Routing = kinds
		tasks, err := Expand(g)
		if err != nil {
			t.Fatal(err)
		}
		got := taskNames(tasks)
		want := []string{"tiny-deep/rba/1 runs/00000-tiny-deep-rba-s1", "tiny-deep/rba/2 runs/00001-tiny-deep-rba-s2",
			"tiny-deep-uniform/uniform/1 runs/00002-tiny-deep-uniform-s1", "tiny-deep-uniform/uniform/2 runs/00003-tiny-deep-uniform-s2",
			"tiny-deep-self-attention/self-attention/1 runs/00004-tiny-deep-self-attention-s1", "tiny-deep-self-attention/self-attention/2 runs/00005-tiny-deep-self-attention-s2",
			"tiny-deep-self-attention-in/self-attention-in/1 runs/00006-tiny-deep-self-attention-in-s1", "tiny-deep-self-attention-in/self-attention-in/2 runs/00007-tiny-deep-self-attention-in-s2"}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("-routing %q: tiny tasks %q, want %q", list, got, want)
		}
	}
	g := Presets()["paper"]
	g.Routing = capsnet.RoutingNames()
	tasks, err := Expand(g)
	if err != nil || len(tasks) != 96*4*3 {
		t.Fatalf("paper grid with 4 kinds: %d tasks, %v; want %d", len(tasks), err, 96*4*3)
	}
	presets := capsnet.Presets()
	for _, tk := range tasks {
		c, ok := presets[tk.Model]
		if !ok || c.Caps[0].Routing != tk.Routing || tk.Model != capsnet.PresetTwin("deep-"+tk.Arch, tk.Routing) {
			t.Fatalf("task %d: model %s is not the %s preset of %s", tk.Index, tk.Model, tk.Routing, tk.Arch)
		}
	}
}

// TestParseRouting: a list of routing kinds with an unknown, empty or
// repeated name, or without the baseline, is refused with one line
// quoting the list and saying why (an unknown name: listing the kinds).
func TestParseRouting(t *testing.T) {
	all := strings.Join(capsnet.RoutingNames(), ", ")
	for _, tc := range []struct{ list, want string }{
		{"rba,dynamic", `"rba,dynamic": unknown kind "dynamic": want one of ` + all},
		{"RBA,uniform", `unknown kind "RBA"`},
		{"", "no routing kind: want a comma-separated list of " + all},
		{" ", "no routing kind"},
		{"rba,,uniform", "an empty kind name"},
		{"rba,uniform,", "an empty kind name"},
		{"rba,uniform,rba", `kind "rba" twice`},
		{"rba,self-attention", `"rba,self-attention": no baseline kind: add uniform`},
		{"rba", "no baseline kind"},
		{strings.Repeat("x", 200), "unknown kind"},
	} {
		kinds, err := ParseRouting(tc.list)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") || len(err.Error()) > 400 {
			t.Errorf("ParseRouting(%q) = %q, %v; want one line with %q", tc.list, kinds, err, tc.want)
		}
	}
	if kinds, err := ParseRouting("uniform"); err != nil || !reflect.DeepEqual(kinds, []string{"uniform"}) {
		t.Errorf("ParseRouting(uniform) = %q, %v", kinds, err)
	}
}

// TestGridErrors: bad grids are refused naming the field.
func TestGridErrors(t *testing.T) {
	base := Presets()["tiny"]
	for _, tc := range []struct {
		edit func(*Grid)
		want string
	}{
		{func(g *Grid) { g.Seeds = nil }, "seeds"},
		{func(g *Grid) { g.Depths = []int{1} }, "models and depths"},
		{func(g *Grid) { g.Models = nil }, "no models"},
		{func(g *Grid) { g.Routing = []string{"dynamic"} }, "routing"},
		{func(g *Grid) { g.Routing = []string{"rba", "uniform", "rba"} }, `routing: "rba" twice`},
		{func(g *Grid) { g.Data = "imagenet" }, "data"},
		{func(g *Grid) { g.Eval = "x" }, "eval"},
		{func(g *Grid) { g.Epochs = 0 }, "epochs"},
		{func(g *Grid) { g.Batch = 1 << 30 }, "batch"},
		{func(g *Grid) { g.Threads = 0 }, "threads"},
		{func(g *Grid) { g.Target = 2 }, "target"},
		{func(g *Grid) { g.K = -1 }, "k:"},
		{func(g *Grid) { g.Models = []string{"sabour"} }, "sabour-uniform is not a preset"},
		{func(g *Grid) { g.Models, g.Routing = []string{"nope.json"}, nil }, "models"},
		{func(g *Grid) { g.Seeds = make([]uint64, MaxTasks) }, "tasks"},
	} {
		g := base
		tc.edit(&g)
		if _, err := Expand(g); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Expand: error %v, want one naming %q", err, tc.want)
		}
	}
	path := filepath.Join(t.TempDir(), "g.json")
	os.WriteFile(path, []byte(`{"name":"x","modelz":["tiny-deep"]}`), 0o644)
	if _, err := ReadGrid(path); err == nil || !strings.Contains(err.Error(), "modelz") || !strings.Contains(err.Error(), path) {
		t.Errorf("ReadGrid with an unknown field: %v", err)
	}
	os.WriteFile(path, []byte(`{"name":"x","models":["tiny-deep"],"seeds":[5],"data":"embedded","eval":"embedded","epochs":1,"batch":8,"threads":1}`), 0o644)
	g, err := ReadGrid(path)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := Expand(g)
	if err != nil || len(tasks) != 1 || tasks[0].Routing != "rba" || tasks[0].Seed != 5 {
		t.Errorf("grid of one model as it is: %+v, %v", tasks, err)
	}
}

// TestManifestRoundTrip: the paper's manifest reads back as written.
func TestManifestRoundTrip(t *testing.T) {
	tasks, err := Expand(Presets()["paper"])
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sweep", ManifestName)
	if err := WriteManifest(path, tasks); err != nil {
		t.Fatal(err)
	}
	got, err := ReadManifest(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, tasks) {
		t.Error("manifest read back differs from the tasks written")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("manifest directory holds %d entries, want the manifest alone (no temporary file)", len(entries))
	}
	bad := append([]Task(nil), tasks[:2]...)
	bad[1].Dir = bad[0].Dir
	if err := WriteManifest(path, bad); err == nil || !strings.Contains(err.Error(), "field dir") {
		t.Errorf("WriteManifest with a shared run directory: %v", err)
	}
}

// TestReadManifestHostile: each bad manifest is refused with one line
// naming the file, the line and the field.
func TestReadManifestHostile(t *testing.T) {
	tasks, err := Expand(Presets()["tiny"])
	if err != nil {
		t.Fatal(err)
	}
	var good bytes.Buffer
	path := filepath.Join(t.TempDir(), ManifestName)
	if err := WriteManifest(path, tasks); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	good.Write(raw)
	first := strings.SplitN(good.String(), "\n", 2)[0]
	line2 := func(s string) string { return first + "\n" + s + "\n" }
	sub := func(old, new string) string {
		l := strings.SplitN(good.String(), "\n", 3)[1]
		return line2(strings.Replace(l, old, new, 1))
	}
	for _, tc := range []struct{ text, want string }{
		{"", "no tasks"},
		{line2(""), "line 2: empty line"},
		{line2("{"), "line 2"},
		{line2(`[1,2]`), "line 2"},
		{first + "\n" + first + "\n", "line 2: field index: 0, want 1"},
		{sub(`"index":1`, `"index":"1"`), "line 2: field index"},
		{sub(`"seed":2`, `"seed":-2`), "line 2: field seed"},
		{sub(`"routing":"rba"`, `"routing":"dynamic"`), "line 2: field routing"},
		{sub(`"model":"tiny-deep"`, `"model":""`), "line 2: field model"},
		{sub(`"dir":"runs/00001-tiny-deep-rba-s2"`, `"dir":"../../etc"`), "line 2: field dir"},
		{sub(`"dir":"runs/00001-tiny-deep-rba-s2"`, `"dir":"runs/00000-tiny-deep-rba-s1"`), "line 2: field dir"},
		{sub(`"result":"results/00001.json"`, `"result":"a\u0000b"`), "line 2: field result"},
		{sub(`"epochs":2`, `"epochs":0`), "line 2: field epochs"},
		{sub(`"batch":64`, `"batch":100000000`), "line 2: field batch"},
		{sub(`"threads":1`, `"threads":100000`), "line 2: field threads"},
		{sub(`"target":0`, `"target":1.5`), "line 2: field target"},
		{sub(`"data":"embedded"`, `"data":"imagenet"`), "line 2: field data"},
		{sub(`"eval":"embedded"`, `"eval":"x"`), "line 2: field eval"},
		{sub(`"k":200`, `"k":-1`), "line 2: field k"},
		{sub(`"index":1`, `"index":1,"extra":1`), "line 2: json: unknown field \"extra\""},
		{line2(strings.Repeat(" ", MaxLine+1)), "line 2: longer than"},
		{sub(`}`, `} {}`), "line 2: more than one JSON value"},
	} {
		_, err := readManifest(strings.NewReader(tc.text), path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
			t.Errorf("manifest %.80q: error %v, want one line naming %s and %q", tc.text, err, path, tc.want)
		}
	}
}

// FuzzReadManifest: no input panics; what reads writes back and reads the
// same.
func FuzzReadManifest(f *testing.F) {
	tasks, _ := Expand(Presets()["tiny"])
	dir := f.TempDir()
	path := filepath.Join(dir, ManifestName)
	if err := WriteManifest(path, tasks); err != nil {
		f.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	f.Add(raw)
	f.Add([]byte(`{"index":0}`))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := readManifest(bytes.NewReader(b), "fuzz")
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error of more than one line: %q", err)
			}
			return
		}
		enc, err := encodeManifest("fuzz", got)
		if err != nil {
			t.Fatalf("a manifest that reads does not write: %v", err)
		}
		again, err := readManifest(bytes.NewReader(enc), "fuzz")
		if err != nil || !reflect.DeepEqual(again, got) {
			t.Fatalf("read back %v (%v), want %v", again, err, got)
		}
	})
}

// taskNames gives each task as "model/routing/seed dir".
func taskNames(tasks []Task) []string {
	var got []string
	for _, tk := range tasks {
		got = append(got, fmt.Sprintf("%s/%s/%d %s", tk.Model, tk.Routing, tk.Seed, tk.Dir))
	}
	return got
}

// TestExpandOptimizer: the optimizer axes multiply the tasks, name the
// variants in Arch and Dir, put their settings on every task's line, and
// reach the run (the checkpoint's metadata).
func TestExpandOptimizer(t *testing.T) {
	g := Presets()["tiny"]
	g.WeightDecay, g.WeightDecayForm, g.AdamEps = []float64{1e-4, 0}, []string{"l2", "decoupled"}, []float64{1e-7}
	g.GroupWeightDecay, g.InitStd, g.Telemetry = []string{"", "votes=0.01"}, []float64{0.2}, true
	tasks, err := Expand(g)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 * 2 * 2 * 1 * 2 * 2 * 2; len(tasks) != want { // models, wd, form, ε, groups, routing, seeds
		t.Fatalf("%d tasks, want %d", len(tasks), want)
	}
	archs := map[string]bool{}
	for _, task := range tasks {
		archs[task.Arch] = true
		if task.WeightDecay == nil || task.AdamEps == nil || *task.AdamEps != 1e-7 || !task.Telemetry {
			t.Errorf("task %d: %+v", task.Index, task)
		}
	}
	if len(archs) != 8 || !archs["tiny-deep-wd0.0001-decoupled-eps1e-07-votes0.01-std0.2"] || !archs["tiny-deep-wd0-l2-eps1e-07-std0.2"] {
		t.Errorf("archs %v", archs)
	}
	path := filepath.Join(t.TempDir(), ManifestName)
	if err := WriteManifest(path, tasks); err != nil {
		t.Fatal(err)
	}
	back, err := ReadManifest(path)
	if err != nil || !reflect.DeepEqual(back, tasks) {
		t.Fatalf("manifest round trip: %v", err)
	}
	// A grid without the axes writes the lines it always did.
	plain, _ := Expand(Presets()["tiny"])
	line, _ := json.Marshal(plain[0])
	if strings.Contains(string(line), "weight_decay") || strings.Contains(string(line), "telemetry") {
		t.Errorf("default task line %s", line)
	}

	for _, tc := range []struct {
		edit func(*Grid)
		want string
	}{
		{func(g *Grid) { g.WeightDecay = []float64{2} }, "weight_decay"},
		{func(g *Grid) { g.WeightDecay = []float64{1e-4, 1e-4} }, "twice"},
		{func(g *Grid) { g.WeightDecayForm = []string{"adamW"} }, "weight_decay_form"},
		{func(g *Grid) { g.WeightDecayForm = []string{"decoupled", "adamw"} }, "twice"},
		{func(g *Grid) { g.AdamEps = []float64{0} }, "adam_eps"},
		{func(g *Grid) { g.GroupWeightDecay = []string{"conv=1"} }, "group_weight_decay"},
		{func(g *Grid) { g.InitStd = []float64{0} }, "init_std"},
		{func(g *Grid) { g.InitStd = []float64{0.2, 0.2} }, "twice"},
	} {
		g := Presets()["tiny"]
		tc.edit(&g)
		if _, err := Expand(g); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Expand: error %v, want one naming %q", err, tc.want)
		}
	}
	// The settings reach the run: its checkpoint records them.
	task := tasks[len(tasks)-1] // decoupled, groups votes=0.01
	task.Epochs, task.K = 1, 50
	dir := t.TempDir()
	res, err := RunTask(context.Background(), dir, task, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d := res.Deaths; d == nil || d.Error != "" || !d.WNorm || d.Records == 0 || len(d.Layers) != len(res.Analysis.Layers) || d.check() != nil {
		t.Errorf("deaths of a task with telemetry: %+v", d)
	}
	ck, err := capsnet.ReadCheckpoint(filepath.Join(dir, task.Dir, train.CheckpointName))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range ck.Config.Caps {
		if c.InitStd != 0.2 || c.Init != "" {
			t.Errorf("the task's model: layer %s init %q, std %v, want normal 0.2", c.Name, c.Init, c.InitStd)
		}
	}
	s, ok, err := train.ReadOptimizerSettings(ck.Meta)
	if err != nil || !ok || s.WeightDecay != 0 || s.WeightDecayForm != "decoupled" || s.Eps != 1e-7 || s.GroupDecay["votes"] != 0.01 {
		t.Errorf("the task's checkpoint records %+v (%v, %v)", s, ok, err)
	}
	if p, err := telemetry.Find(filepath.Join(dir, task.Dir)); p == "" || err != nil {
		t.Errorf("telemetry of a task with telemetry: %q, %v", p, err)
	}

	// A hostile manifest line is refused with the field's name.
	bad := tasks[:1]
	wd := -1.0
	bad[0].WeightDecay = &wd
	if err := WriteManifest(path, bad); err == nil || !strings.Contains(err.Error(), "field weight_decay") {
		t.Errorf("manifest with weight_decay -1: %v", err)
	}
}
