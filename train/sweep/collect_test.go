package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/analysis"
)

// synthReport is an analysis of layers capsule layers of n capsules each
// (the arrays filled with pseudo-random figures), dyr the routing's dyr.
func synthReport(layers, n, k int, dyr float64, rng *rand.Rand) *analysis.Report {
	rep := &analysis.Report{Thresholds: analysis.DefaultThresholds()}
	fill := func(m int) []float64 {
		xs := make([]float64, m)
		for i := range xs {
			xs[i] = rng.Float64()
		}
		return xs
	}
	for l := 0; l < layers; l++ {
		rep.Layers = append(rep.Layers, analysis.LayerReport{Name: fmt.Sprintf("caps%d", l), N: n, D: 8, K: k,
			CNS: 0.5 * float64(n), CNM: 0.5, CAS: 3, CAR: 3 / float64(n), CDS: l, CDR: float64(l) / float64(n),
			NormMean: fill(n), NormStd: fill(n), Dead: make([]bool, n)})
	}
	dys := dyr * float64(n)
	if dyr == nanMark {
		dys = nanMark
	}
	for l := 0; l+1 < layers; l++ {
		rep.Routing = append(rep.Routing, analysis.RoutingReport{From: rep.Layers[l].Name, To: rep.Layers[l+1].Name, K: k, NIn: n, NOut: n,
			AliveIn: n - l, AliveOut: n - l - 1, DYR: dyr, DYS: dys, CouplingMean: fill(n * n), CouplingStd: fill(n * n)})
	}
	return rep
}

// nanMark stands for NaN in a synthetic result: JSON has no NaN, a
// result writes it as null.
const nanMark = 123456.789

// writeResult writes r as its task's result file under dir.
func writeResult(t testing.TB, dir string, r Result) {
	t.Helper()
	writeResultAt(t, filepath.Join(dir, r.Task.Result), r)
}

// writeResultAt writes r to path.
func writeResultAt(t testing.TB, path string, r Result) {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.ReplaceAll(b, []byte("123456.789"), []byte("null"))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// gridTasks are archs × {rba, uniform} × seeds tasks, arch (depth,
// capsules) with dim 4.
func gridTasks(archs [][2]int, seeds int) []Task {
	return gridTasksKinds(archs, seeds, []string{"rba", "uniform"})
}

// gridTasksKinds are archs × kinds × seeds tasks, arch (depth, capsules)
// with dim 4, the models the kinds' twins of deep-ARCH-r3.
func gridTasksKinds(archs [][2]int, seeds int, kinds []string) []Task {
	var ts []Task
	for _, a := range archs {
		arch := fmt.Sprintf("n%d-d4-L%d", a[1], a[0])
		for _, routing := range kinds {
			model := capsnet.PresetTwin("deep-"+arch+"-r3", routing)
			for s := 1; s <= seeds; s++ {
				i := len(ts)
				ts = append(ts, Task{Index: i, Model: model, Arch: arch, Routing: routing, Depth: a[0], Capsules: a[1], Dim: 4, Seed: uint64(s),
					Data: "mnist", Eval: "affnist", K: 100, Target: 0.99, Epochs: 10, Batch: 32, Threads: 1,
					Dir: fmt.Sprintf("runs/%05d", i), Result: fmt.Sprintf("results/%05d.json", i)})
			}
		}
	}
	return ts
}

// TestCollect collects a grid of 4 architectures × 2 routings × 3 seeds
// with missing, failed, NaN, foreign and garbage results, and checks the
// counts, accuracies, the best models, their tables and the Markdown.
func TestCollect(t *testing.T) {
	dir := t.TempDir()
	mp := writeCollectGrid(t, dir)
	s, err := Collect(mp)
	if err != nil {
		t.Fatal(err)
	}
	checkCollectCounts(t, s)
	checkCollectArchs(t, s)
	checkCollectBest(t, s)
	checkCollectOutputs(t, dir, s)
}

// writeCollectGrid writes under dir the manifest of the grid of TestCollect
// and its results (missing, failed, NaN, foreign and garbage ones among
// them), and returns the manifest's path.
func writeCollectGrid(t *testing.T, dir string) string {
	t.Helper()
	tasks := gridTasks([][2]int{{1, 4}, {1, 8}, {2, 4}, {2, 8}}, 3)
	mp := writeManifest(t, dir, tasks)
	rng := rand.New(rand.NewPCG(1, 2))
	// Eval accuracy of rba and uniform per arch and seed; -1: missing,
	// -2: failed, -3: NaN, -4: another task's result, -5: garbage.
	acc := map[string][2][3]float64{
		"n4-d4-L1": {{0.90, 0.92, 0.94}, {0.80, 0.80, 0.83}},
		"n8-d4-L1": {{0.95, 0.95, -1}, {0.85, -2, 0.86}},
		"n4-d4-L2": {{0.97, -2, 0.97}, {0.70, 0.72, 0.74}},
		"n8-d4-L2": {{0.97, 0.97, -3}, {-4, -5, 0.60}},
	}
	params := map[string]int64{"n4-d4-L1": 1000, "n8-d4-L1": 3000, "n4-d4-L2": 2000, "n8-d4-L2": 4000}
	for _, task := range tasks {
		r := 0
		if task.Routing == "uniform" {
			r = 1
		}
		a := acc[task.Arch][r][task.Seed-1]
		res := Result{Task: task, Status: "done", Params: params[task.Arch] - int64(r), Epochs: 3, ReachedAcc: a > 0.9, ValAcc: a + 0.02, TestAcc: a + 0.01, EvalAcc: a}
		// The best depth-1 model has a seed without alive inputs (dyr NaN).
		dyr := 0.1 * float64(task.Seed)
		if task.Arch == "n8-d4-L1" && task.Seed == 2 {
			dyr = nanMark
		}
		res.Analysis = synthReport(task.Depth+1, task.Capsules, 100, dyr, rng)
		switch a {
		case -1:
			continue
		case -2:
			res = Result{Task: task, Status: "failed", Error: "model too large:\nout of memory"}
		case -3:
			res.EvalAcc = nanMark
		case -4:
			res.Task = tasks[0]
			writeResultAt(t, filepath.Join(dir, task.Result), res)
			continue
		case -5:
			os.WriteFile(filepath.Join(dir, task.Result), []byte(`{"task": {"index": `), 0o644)
			continue
		}
		writeResult(t, dir, res)
	}
	return mp
}

// checkCollectCounts checks the counts of the Summary s of TestCollect's
// grid and the problems of its failed and invalid tasks.
func checkCollectCounts(t *testing.T, s *Summary) {
	indices := func(ps []Problem) (xs []int) {
		for _, p := range ps {
			xs = append(xs, p.Index)
		}
		return xs
	}
	if s.Tasks != 24 || s.Done != 18 || fmt.Sprint(indices(s.Missing)) != "[8]" || fmt.Sprint(indices(s.Failed)) != "[10 13]" || fmt.Sprint(indices(s.Invalid)) != "[20 21 22]" {
		t.Errorf("tasks %d, done %d, missing %v, failed %v, invalid %v", s.Tasks, s.Done, indices(s.Missing), indices(s.Failed), indices(s.Invalid))
	}
	if s.Failed[0].Problem != "model too large: out of memory" {
		t.Errorf("failed task's problem %q", s.Failed[0].Problem)
	}
	for i, want := range []string{"eval_acc NaN", "the result of another task (0, deep-n4-d4-L1-r3, rba, seed 1)", "not a result: unexpected end of JSON input"} {
		if p := s.Invalid[min(i, len(s.Invalid)-1)].Problem; !strings.Contains(p, want) || strings.Contains(p, "\n") {
			t.Errorf("invalid task %d: problem %q, want %q", i, p, want)
		}
	}
}

// checkCollectArchs checks the per-architecture figures of the Summary s
// of TestCollect's grid.
func checkCollectArchs(t *testing.T, s *Summary) {
	if len(s.Archs) != 4 {
		t.Fatalf("%d archs", len(s.Archs))
	}
	a := s.Archs[0]
	if a.Arch != "n4-d4-L1" || a.Depth != 1 || a.Capsules != 4 || a.Dim != 4 || a.Params != 1000 || a.RBA.Seeds != 3 || a.RBA.Reached != 2 ||
		!near(a.RBA.Eval.Mean, 0.92) || !near(a.RBA.Eval.Std, math.Sqrt(0.0008/3)) || !near(a.RBA.Val.Mean, 0.94) || !near(a.Uniform.Eval.Mean, 0.81) || !near(a.Uniform.Eval.Std, math.Sqrt(0.0006/3)) {
		t.Errorf("arch 0: %+v", a)
	}
	if b := s.Archs[1]; b.RBA.Seeds != 2 || b.Uniform.Seeds != 2 || !near(b.RBA.Eval.Mean, 0.95) || b.RBA.Eval.Std != 0 {
		t.Errorf("arch 1: %+v", b)
	}
	if d := s.Archs[3]; d.RBA.Seeds != 2 || d.Uniform.Seeds != 1 || !near(d.Uniform.Eval.Mean, 0.60) {
		t.Errorf("arch 3: %+v", d)
	}
}

// checkCollectBest checks the best models of the Summary s of
// TestCollect's grid and their tables.
func checkCollectBest(t *testing.T, s *Summary) {
	// Best: depth 2 ties at 97% between n4 and n8: fewer parameters wins.
	if len(s.Best) != 3 || s.Best[0].Scope != "overall" || s.Best[0].Arch.Arch != "n4-d4-L2" ||
		s.Best[1].Scope != "depth 1" || s.Best[1].Arch.Arch != "n8-d4-L1" || s.Best[2].Scope != "depth 2" || s.Best[2].Arch.Arch != "n4-d4-L2" {
		t.Fatalf("best %+v", s.Best)
	}
	if u := s.Best[0].Arch.Uniform; u.Seeds != 3 || !near(u.Eval.Mean, 0.72) {
		t.Errorf("uniform baseline of the best: %+v", u)
	}
	tb := s.Best[0].Tables
	if tb == nil || tb.Models != 2 || tb.K != 100 || len(tb.Table1) != 2 || len(tb.Table2) != 3 ||
		!near(tb.Table1[0].DYR.Mean, 0.2) || !near(tb.Table1[0].DYR.Std, 0.1) || tb.Table2[2].CDS.Mean != 2 || tb.Table2[0].N != 4 {
		t.Errorf("tables of the best: %+v", tb)
	}
	if t1 := s.Best[1].Tables; t1 == nil || t1.Models != 2 || !math.IsNaN(t1.Table1[0].DYR.Mean) {
		t.Errorf("tables of the best depth-1 model (a NaN dyr): %+v", t1)
	}
}

// checkCollectOutputs checks the Markdown, JSON and HTML of the Summary s
// of TestCollect's grid, and that WriteFiles (into dir) writes the same
// Markdown.
func checkCollectOutputs(t *testing.T, dir string, s *Summary) {
	var md bytes.Buffer
	if err := s.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"24 tasks: 18 done, 2 failed, 1 missing, 3 invalid.",
		"| 8 | deep-n8-d4-L1-r3 | 3 | missing | no result file |",
		"| 10 | deep-n8-d4-L1-r3-uniform | 2 | failed | model too large: out of memory |",
		"| architecture | depth | capsules | dim | parameters | RBA affnist | uniform affnist | RBA val | uniform val | seeds RBA/uniform |",
		"| n4-d4-L1 | 1 | 4 | 4 | 1000 | 92.00 ± 1.63 | 81.00 ± 1.41 | 94.00 ± 1.63 | 83.00 ± 1.41 | 3/3 |",
		"| n8-d4-L2 | 2 | 8 | 4 | 4000 | 97.00 | 60.00 | 99.00 | 62.00 | 2/1 |",
		"| overall | n4-d4-L2 | 2000 | 97.00 | 72.00 ± 1.63 | 99.00 | 74.00 ± 1.63 | 2/3 |",
		"| depth 1 | n8-d4-L1 | 3000 | 95.00 | 85.50 ± 0.50 | 97.00 | 87.50 ± 0.50 | 2/2 |",
		"## Tables 1 and 2 of the best model depth 2: n4-d4-L2",
		"| caps0 → caps1 | 4/4 → 3/4 | 0.2 ± 0.1 | 0.8 ± 0.4 |",
		"| caps0 → caps1 | 8/8 → 7/8 | – | – |",
	} {
		if !strings.Contains(md.String(), want+"\n") {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}
	var js bytes.Buffer
	if err := s.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back["done"] != 18.0 {
		t.Errorf("JSON: %v, done %v", err, back["done"])
	}
	var page bytes.Buffer
	if err := s.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	if h := page.String(); strings.Count(h, "<svg") != 3 || !strings.Contains(h, "<td>n4-d4-L1</td>") || !strings.Contains(h, "Table 1: routing") || !strings.HasSuffix(h, "</html>\n") {
		t.Errorf("HTML: %d figures, %d bytes", strings.Count(h, "<svg"), len(h))
	}
	files := []string{filepath.Join(dir, "s.md"), filepath.Join(dir, "s.html"), filepath.Join(dir, "s.json")}
	if err := s.WriteFiles(files[0], files[1], files[2]); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(files[0]); !bytes.Equal(b, md.Bytes()) {
		t.Errorf("WriteFiles' Markdown differs from WriteMarkdown's")
	}
}

// kindAcc are the evaluation accuracies of TestCollectKinds' kinds by
// seed: self-attention beats RBA, so that counting it as RBA shows.
var kindAcc = map[string][2]float64{"rba": {0.90, 0.92}, "uniform": {0.80, 0.80}, "self-attention": {0.96, 0.98}, "self-attention-in": {0.85, 0.87}}

// writeKindsGrid writes under dir a manifest of 2 architectures × kinds ×
// 2 seeds and the results of the tasks of the kinds done (accuracies
// kindAcc, parameters 1000 for RBA and 999 for the others, analyses with
// dyr 0.1 for RBA and 0.7 for the others), and returns its path.
func writeKindsGrid(t *testing.T, dir string, kinds, done []string) string {
	t.Helper()
	tasks := gridTasksKinds([][2]int{{1, 4}, {2, 4}}, 2, kinds)
	mp := writeManifest(t, dir, tasks)
	rng := rand.New(rand.NewPCG(7, 8))
	for _, task := range tasks {
		if !slices.Contains(done, task.Routing) {
			continue
		}
		a := kindAcc[task.Routing][task.Seed-1]
		params, dyr := int64(999), 0.7
		if task.Routing == "rba" {
			params, dyr = 1000, 0.1
		}
		writeResult(t, dir, Result{Task: task, Status: "done", Params: params, Epochs: 3, ReachedAcc: a > 0.9, ValAcc: a + 0.01, TestAcc: a, EvalAcc: a,
			Analysis: synthReport(task.Depth+1, task.Capsules, 50, dyr, rng)})
	}
	return mp
}

// TestCollectKinds: collect puts one column per routing kind with results
// beside RBA and uniform: 4 kinds give 4 evaluation and 4 validation
// columns (the JSON's kinds, 4 accuracy heatmaps and 3 differences), 2
// kinds the paper's 2 and nothing of the others; a kind without a result
// done has no column. Another kind's results never count as RBA's.
func TestCollectKinds(t *testing.T) {
	all := []string{"rba", "uniform", "self-attention", "self-attention-in"}
	for _, tc := range []struct {
		name        string
		kinds, done []string
		head        string
		svgs        int
	}{
		{"4 kinds", all, all, "| architecture | depth | capsules | dim | parameters | RBA affnist | uniform affnist | self-attention affnist | self-attention-in affnist | " +
			"RBA val | uniform val | self-attention val | self-attention-in val | seeds RBA/uniform/self-attention/self-attention-in |", 7},
		{"2 kinds", all[:2], all[:2], "| architecture | depth | capsules | dim | parameters | RBA affnist | uniform affnist | RBA val | uniform val | seeds RBA/uniform |", 3},
		{"4 kinds, self-attention-in not done", all, all[:3], "| architecture | depth | capsules | dim | parameters | RBA affnist | uniform affnist | self-attention affnist | " +
			"RBA val | uniform val | self-attention val | seeds RBA/uniform/self-attention |", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Collect(writeKindsGrid(t, dir, tc.kinds, tc.done))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.Routing, tc.done) {
				t.Errorf("routing %q, want %q", s.Routing, tc.done)
			}
			checkKindsArch(t, s.Archs[0], tc.done)
			if len(s.Best) != 3 || s.Best[0].Arch.Arch != "n4-d4-L1" || s.Best[0].Tables == nil || !near(s.Best[0].Tables.Table1[0].DYR.Mean, 0.1) {
				t.Errorf("best RBA models %+v: want n4-d4-L1 overall (a tie: the first), with the RBA seeds' tables (dyr 0.1)", s.Best)
			}
			checkKindsOutputs(t, s, tc.head, tc.done, tc.svgs)
		})
	}
}

// checkKindsArch checks the accuracies of the first architecture of
// TestCollectKinds' grid under the kinds done.
func checkKindsArch(t *testing.T, a Arch, done []string) {
	t.Helper()
	if a.Params != 1000 || a.RBA.Seeds != 2 || !near(a.RBA.Eval.Mean, 0.91) || a.Uniform.Seeds != 2 || !near(a.Uniform.Eval.Mean, 0.80) {
		t.Errorf("arch %s: params %d, RBA %+v, uniform %+v; want 1000, 2 seeds at 91%% and 80%%", a.Arch, a.Params, a.RBA, a.Uniform)
	}
	if len(a.Kinds) != len(done) {
		t.Errorf("arch %s: kinds %v, want %q", a.Arch, a.Kinds, done)
	}
	for _, k := range done {
		acc := kindAcc[k]
		if got := a.Kinds[k]; got.Seeds != 2 || !near(got.Eval.Mean, (acc[0]+acc[1])/2) || !near(got.Val.Mean, (acc[0]+acc[1])/2+0.01) {
			t.Errorf("arch %s, kind %s: %+v, want 2 seeds at %v", a.Arch, k, got, acc)
		}
	}
}

// checkKindsOutputs checks the Markdown, JSON and HTML of a Summary of
// TestCollectKinds: the accuracy table's heading head (and as many cells
// in each row), the best models' columns, the JSON's kinds and the
// heatmaps.
func checkKindsOutputs(t *testing.T, s *Summary, head string, done []string, svgs int) {
	t.Helper()
	var md bytes.Buffer
	if err := s.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "\n"+head+"\n") {
		t.Errorf("Markdown lacks the heading %q:\n%s", head, md.String())
	}
	cols := 5 + 2*len(done) + 1
	for _, line := range strings.Split(md.String(), "\n") {
		if strings.HasPrefix(line, "| n4-d4-L") && strings.Count(line, " | ")+1 != cols {
			t.Errorf("row %q: want %d cells", line, cols)
		}
	}
	bestHead := "| best RBA model | architecture | parameters | RBA affnist | uniform affnist (same architecture) |"
	for _, k := range done[2:] {
		bestHead += " " + k + " affnist (same architecture) |"
	}
	if !strings.Contains(md.String(), "\n"+bestHead+" RBA val |") {
		t.Errorf("Markdown lacks the best models' heading %q:\n%s", bestHead, md.String())
	}
	if !strings.Contains(md.String(), "| overall | n4-d4-L1 | 1000 | 91.00 ± 1.00 | 80.00 |") {
		t.Errorf("Markdown: the best model's row is not RBA's beside uniform:\n%s", md.String())
	}
	var js bytes.Buffer
	if err := s.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Routing []string
		Archs   []struct {
			RBA, Uniform struct{ Seeds int }
			Kinds        map[string]struct{ Seeds int }
		}
	}
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || !slices.Equal(back.Routing, done) || len(back.Archs) != 2 ||
		back.Archs[0].RBA.Seeds != 2 || back.Archs[0].Uniform.Seeds != 2 || len(back.Archs[0].Kinds) != len(done) || back.Archs[0].Kinds[done[len(done)-1]].Seeds != 2 {
		t.Errorf("JSON (%v): %+v", err, back)
	}
	var page bytes.Buffer
	if err := s.WriteHTML(&page); err != nil {
		t.Fatal(err)
	}
	h := page.String()
	if n := strings.Count(h, "<svg"); n != svgs {
		t.Errorf("HTML: %d heatmaps, want %d", n, svgs)
	}
	for _, k := range []string{"self-attention", "self-attention-in"} {
		if th := "<th>" + k + " affnist</th>"; strings.Contains(h, th) != slices.Contains(done, k) {
			t.Errorf("HTML: heading %s present %v, want %v", th, !slices.Contains(done, k), slices.Contains(done, k))
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestCollectBadFiles: an oversized, a foreign-status and an out-of-range
// result are invalid; a bad manifest is the only error.
func TestCollectBadFiles(t *testing.T) {
	dir := t.TempDir()
	tasks := gridTasks([][2]int{{1, 4}}, 2)
	mp := writeManifest(t, dir, tasks)
	os.MkdirAll(filepath.Join(dir, "results"), 0o755)
	big, _ := os.Create(filepath.Join(dir, tasks[0].Result))
	big.Truncate(MaxResultBytes + 1)
	big.Close()
	writeResult(t, dir, Result{Task: tasks[1], Status: "running"})
	writeResult(t, dir, Result{Task: tasks[2], Status: "done", Params: 10, EvalAcc: 1.5})
	bad := synthReport(2, 4, 10, 0.1, rand.New(rand.NewPCG(1, 1)))
	bad.Routing[0].AliveIn = 99
	writeResult(t, dir, Result{Task: tasks[3], Status: "done", Params: 10, EvalAcc: 0.5, Analysis: bad})
	s, err := Collect(mp)
	if err != nil {
		t.Fatal(err)
	}
	if s.Done != 0 || len(s.Invalid) != 4 {
		t.Fatalf("done %d, invalid %+v", s.Done, s.Invalid)
	}
	for i, want := range []string{"more than 64 MiB", `status "running"`, "eval_acc 1.5", "routing 0"} {
		if !strings.Contains(s.Invalid[i].Problem, want) {
			t.Errorf("task %d: problem %q, want %q", i, s.Invalid[i].Problem, want)
		}
	}
	var md bytes.Buffer
	if err := s.WriteMarkdown(&md); err != nil || !strings.Contains(md.String(), "No RBA task is done yet.") {
		t.Errorf("Markdown without results: %v\n%s", err, md.String())
	}
	var page bytes.Buffer
	if err := s.WriteHTML(&page); err != nil {
		t.Errorf("HTML without results: %v", err)
	}
	for name, content := range map[string]string{"empty": "", "garbage": "{", "order": `{"index": 1}` + "\n", "unknown": `{"index": 0, "color": 1}` + "\n"} {
		p := filepath.Join(dir, name+".ndjson")
		os.WriteFile(p, []byte(content), 0o644)
		if _, err := Collect(p); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("manifest %s: error %v", name, err)
		}
	}
	if _, err := Collect(filepath.Join(dir, "none.ndjson")); err == nil {
		t.Errorf("no manifest: no error")
	}
}

// BenchmarkCollect collects 1,000 result files of grid models (up to 8
// routing layers of 16 capsules, with their per-coupling statistics).
func BenchmarkCollect(b *testing.B) {
	dir := b.TempDir()
	var archs [][2]int
	for i := 0; len(archs)*6 < 1000; i++ {
		archs = append(archs, [2]int{1 + i%8, 16})
	}
	tasks := gridTasks(archs, 3)[:1000]
	mp := writeManifest(b, dir, tasks)
	rng := rand.New(rand.NewPCG(3, 4))
	size := 0
	for _, task := range tasks {
		r := Result{Task: task, Status: "done", Params: 1e6, ValAcc: rng.Float64(), TestAcc: rng.Float64(), EvalAcc: rng.Float64(),
			Analysis: synthReport(task.Depth+1, task.Capsules, 10000, rng.Float64(), rng)}
		writeResult(b, dir, r)
		st, _ := os.Stat(filepath.Join(dir, task.Result))
		size += int(st.Size())
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s, err := Collect(mp)
		if err != nil || s.Done != 1000 {
			b.Fatalf("done %d: %v", s.Done, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Seconds())/float64(b.N), "s/collect")
	b.ReportMetric(float64(size)/1e6, "MB-of-results")
}

func TestStripArrays(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"NormMean":[1,2.5e-3,-4],"x":1}`, `{"NormMean":null,"x":1}`},
		{`{"Dead" : [true,false] ,"CouplingStd":[]}`, `{"Dead" : null ,"CouplingStd":null}`},
		// A key's name as a value, in an escaped string, or before a
		// non-array value is left alone, as is an array of strings or
		// arrays.
		{`{"a":"NormMean","b":"x\"NormStd\":[1]","NormStd":3}`, `{"a":"NormMean","b":"x\"NormStd\":[1]","NormStd":3}`},
		{`{"NormMean":["a"],"NormStd":[[1]],"CouplingMean":[1]}`, `{"NormMean":["a"],"NormStd":[[1]],"CouplingMean":null}`},
		{`{"NormMean":[1,2`, `{"NormMean":[1,2`},
		{`"Dead`, `"Dead`},
	} {
		if got := string(stripArrays(nil, []byte(c.in))); got != c.want {
			t.Errorf("stripArrays(%s) = %s, want %s", c.in, got, c.want)
		}
	}
	// A whole report: what is left decodes as the report without arrays.
	rep := synthReport(3, 5, 7, 0.25, rand.New(rand.NewPCG(5, 6)))
	b, _ := json.Marshal(rep)
	var got analysis.Report
	if err := json.Unmarshal(stripArrays(nil, b), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Layers) != 3 || got.Layers[1].NormMean != nil || got.Routing[1].CouplingStd != nil || got.Routing[1].DYR != 0.25 || got.Layers[2].CDS != 2 {
		t.Errorf("stripped report %+v", got)
	}
}

// TestResultThresholdsKeys: a result file keeps Go's field names for the
// analysis' thresholds ("Active", "Dead1", "Dead2") although
// analysis.Thresholds writes snake_case elsewhere (analyze -json), and
// reads them back.
func TestResultThresholdsKeys(t *testing.T) {
	rep := &analysis.Report{Thresholds: analysis.Thresholds{Active: 0.05, Dead1: 0.01, Dead2: 0.02}}
	b, err := json.Marshal(toReportJSON(rep))
	if err != nil || !strings.Contains(string(b), `"Thresholds":{"Active":0.05,"Dead1":0.01,"Dead2":0.02}`) {
		t.Fatalf("result file's analysis (%v): %s", err, b)
	}
	var back reportJSON
	if err := json.Unmarshal(b, &back); err != nil || back.report().Thresholds != rep.Thresholds {
		t.Errorf("read back (%v): %+v", err, back.report().Thresholds)
	}
}
