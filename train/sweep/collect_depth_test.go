package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"

	"github.com/capstan-ml/capstan/capsnet/analysis"
)

// depthReport is an analysis of capsule layers of ns capsules with cds
// dead capsules each (the primary capsules first), its routing layers'
// alive counts to match.
func depthReport(ns, cds []int) *analysis.Report {
	rep := &analysis.Report{Thresholds: analysis.DefaultThresholds()}
	for l, n := range ns {
		name := fmt.Sprintf("caps.%d", l-1)
		if l == 0 {
			name = "primary"
		}
		rep.Layers = append(rep.Layers, analysis.LayerReport{Name: name, N: n, D: 8, K: 50, CDS: cds[l], CDR: float64(cds[l]) / float64(n),
			NormMean: make([]float64, n), NormStd: make([]float64, n), Dead: make([]bool, n)})
	}
	for l := 0; l+1 < len(ns); l++ {
		rep.Routing = append(rep.Routing, analysis.RoutingReport{From: rep.Layers[l].Name, To: rep.Layers[l+1].Name, K: 50, NIn: ns[l], NOut: ns[l+1],
			AliveIn: ns[l] - cds[l], AliveOut: ns[l+1] - cds[l+1], DYR: 0.1, DYS: 0.1 * float64(ns[l+1]),
			CouplingMean: make([]float64, ns[l]*ns[l+1]), CouplingStd: make([]float64, ns[l]*ns[l+1])})
	}
	return rep
}

// depthTask is task i of a depth-trend sweep as grid.json's models give
// it: model deep-n16-d8-LL (-uniform for uniform routing), weight decay
// 1e-6, votes 1e-4, init std 0.2.
func depthTask(i, depth int, routing string, seed uint64) Task {
	wd, std := 1e-6, 0.2
	model := fmt.Sprintf("deep-n16-d8-L%d", depth)
	if routing != "rba" {
		model += "-" + routing
	}
	set := Settings{WeightDecay: &wd, GroupWeightDecay: "votes=1e-4", InitStd: &std}
	return Task{Index: i, Model: model, Arch: model + set.name(), Routing: routing, Seed: seed, Data: "mnist", Eval: "affnist", K: 50,
		Target: 0.992, Epochs: 1, Batch: 8, Threads: 1, Settings: set, Telemetry: true,
		Dir: fmt.Sprintf("runs/%05d", i), Result: fmt.Sprintf("results/%05d.json", i)}
}

// depthCase is one task of writeDepthSweep: its depth, routing, seed,
// accuracies and analysis (ns nil: done without an analysis; missing:
// no result).
type depthCase struct {
	depth     int
	routing   string
	seed      uint64
	val, eval float64
	ns, cds   []int
	missing   bool
}

// depthCases is a depth-trend sweep of L = 1, 2, 3 (two seeds at L = 2)
// under RBA and uniform, with a uniform task at L = 2 done without an
// analysis and another missing.
var depthCases = []depthCase{
	{depth: 1, routing: "rba", seed: 1, val: 0.99, eval: 0.80, ns: []int{16, 10}, cds: []int{2, 0}},
	{depth: 2, routing: "rba", seed: 1, val: 0.99, eval: 0.70, ns: []int{16, 8, 10}, cds: []int{2, 3, 0}},
	{depth: 2, routing: "rba", seed: 2, val: 0.98, eval: 0.74, ns: []int{16, 8, 10}, cds: []int{4, 1, 0}},
	{depth: 3, routing: "rba", seed: 1, val: 0.99, eval: 0.60, ns: []int{16, 8, 8, 10}, cds: []int{0, 2, 5, 1}},
	{depth: 1, routing: "uniform", seed: 1, val: 0.95, eval: 0.50, ns: []int{16, 10}, cds: []int{0, 0}},
	{depth: 3, routing: "uniform", seed: 1, val: 0.90, eval: 0.40, ns: []int{16, 8, 8, 10}, cds: []int{1, 1, 1, 0}},
	{depth: 2, routing: "uniform", seed: 1, val: 0.93, eval: 0.45},
	{depth: 2, routing: "uniform", seed: 2, missing: true},
}

// writeDepthSweep writes under dir the manifest and results of cases
// and returns the manifest's path.
func writeDepthSweep(t *testing.T, dir string, cases []depthCase) string {
	t.Helper()
	var tasks []Task
	for i, c := range cases {
		tasks = append(tasks, depthTask(i, c.depth, c.routing, c.seed))
	}
	mp := writeManifest(t, dir, tasks)
	for i, c := range cases {
		if c.missing {
			continue
		}
		r := Result{Task: tasks[i], Status: "done", Params: 1000, Epochs: 1, ValAcc: c.val, TestAcc: c.val, EvalAcc: c.eval}
		if c.ns != nil {
			r.Analysis = depthReport(c.ns, c.cds)
		}
		writeResult(t, dir, r)
	}
	return mp
}

// TestCollectDepthTrend: the done variants with an analysis of a sweep
// over depths are grouped by depth, routing kind and architecture, over
// their seeds; the Markdown, HTML and JSON have the trend, and the
// figure is a PNG of 12×5 inches at 144 dpi.
func TestCollectDepthTrend(t *testing.T) {
	dir := t.TempDir()
	s, err := Collect(writeDepthSweep(t, dir, depthCases))
	if err != nil {
		t.Fatal(err)
	}
	if s.Done != 7 || len(s.Variants) != 7 || len(s.Missing) != 1 {
		t.Fatalf("%d done, %d variants, %d missing; want 7, 7, 1", s.Done, len(s.Variants), len(s.Missing))
	}
	if v := s.Variants[3]; fmt.Sprint(v.N) != "[16 8 8 10]" || fmt.Sprint(v.CDS) != "[0 2 5 1]" || v.Layers[3] != "caps.2" {
		t.Errorf("variant 3: n %v, cds %v, layers %v", v.N, v.CDS, v.Layers)
	}
	type want struct {
		depth          int
		model, routing string
		seeds          int
		cds, alive     string
		hidden         string
		eval, evalStd  float64
	}
	wants := []want{
		{1, "deep-n16-d8-L1", "rba", 1, "[2 0]", "14→10", "–", 0.80, 0},
		{1, "deep-n16-d8-L1-uniform", "uniform", 1, "[0 0]", "16→10", "–", 0.50, 0},
		{2, "deep-n16-d8-L2", "rba", 2, "[3 2 0]", "13→6, 6→10", "2 ± 1", 0.72, 0.02},
		{3, "deep-n16-d8-L3", "rba", 1, "[0 2 5 1]", "16→6, 6→3, 3→9", "7", 0.60, 0},
		{3, "deep-n16-d8-L3-uniform", "uniform", 1, "[1 1 1 0]", "15→7, 7→7, 7→10", "2", 0.40, 0},
	}
	if len(s.DepthTrend) != len(wants) {
		t.Fatalf("%d groups, want %d: %+v", len(s.DepthTrend), len(wants), s.DepthTrend)
	}
	for i, w := range wants {
		g := s.DepthTrend[i]
		var cds []float64
		for _, c := range g.CDS {
			cds = append(cds, c.Mean)
		}
		if g.Depth != w.depth || g.Model != w.model || g.Routing != w.routing || g.Seeds != w.seeds || fmt.Sprint(cds) != w.cds ||
			g.AliveRouting() != w.alive || g.HiddenDead.String() != w.hidden ||
			math.Abs(g.EvalAcc.Mean-w.eval) > 1e-12 || math.Abs(g.EvalAcc.Std-w.evalStd) > 1e-12 || len(g.N) != w.depth+1 {
			t.Errorf("group %d: %+v (alive %q, hidden %q); want %+v", i, g, g.AliveRouting(), g.HiddenDead.String(), w)
		}
	}
	if g := s.DepthTrend[2]; g.Arch != "deep-n16-d8-L2-wd1e-06-votes1e-4-std0.2" || g.Layers[1] != "caps.0" || g.CDS[1].Std != 1 || g.Alive[1].Mean != 6 {
		t.Errorf("group 2: arch %q, layers %v, cds %v, alive %v", g.Arch, g.Layers, g.CDS, g.Alive)
	}

	var md bytes.Buffer
	if err := s.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	m := md.String()
	for _, want := range []string{
		"\n## Depth trend\n\n",
		"| routing layers L | model | routing | seeds | validation | affnist | dead (cds) per capsule layer | alive per routing layer (in→out) | dead in hidden layers |\n|---|---|---|---:|",
		"| 1 | deep-n16-d8-L1 | RBA | 1 | 99.00 | 80.00 | 2, 0 | 14→10 | – |\n| 1 | deep-n16-d8-L1-uniform | uniform | 1 | 95.00 | 50.00 | 0, 0 | 16→10 | – |\n",
		"| 2 | deep-n16-d8-L2 | RBA | 2 | 98.50 ± 0.50 | 72.00 ± 2.00 | 3, 2, 0 | 13→6, 6→10 | 2 ± 1 |\n",
		"| 3 | deep-n16-d8-L3 | RBA | 1 | 99.00 | 60.00 | 0, 2, 5, 1 | 16→6, 6→3, 3→9 | 7 |\n| 3 | deep-n16-d8-L3-uniform | uniform | 1 | 90.00 | 40.00 | 1, 1, 1, 0 | 15→7, 7→7, 7→10 | 2 |\n",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, m)
		}
	}
	// The grid names its models as presets: the accuracy table takes
	// their depth, capsules and dimension from the preset's name.
	for _, want := range []string{
		"| deep-n16-d8-L2-wd1e-06-votes1e-4-std0.2 | 2 | 16 | 8 | 1000 |",
		"| deep-n16-d8-L3-uniform-wd1e-06-votes1e-4-std0.2 | 3 | 16 | 8 | 1000 |",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("Markdown's accuracy table lacks %q:\n%s", want, m)
		}
	}
	if i, j := strings.Index(m, "## Optimizer variants"), strings.Index(m, "## Depth trend"); i < 0 || j < i {
		t.Errorf("the depth trend (at %d) is not after the variants (at %d)", j, i)
	}

	var h bytes.Buffer
	if err := s.WriteHTML(&h); err != nil {
		t.Fatal(err)
	}
	hs := h.String()
	if i := strings.Index(hs, "<h2>Depth trend</h2>"); i < 0 || !strings.Contains(hs[i:], "<svg") || !strings.Contains(hs[i:], "Dead capsules per hidden layer") ||
		!strings.Contains(hs[i:], "<td>13→6, 6→10</td>") {
		t.Errorf("HTML without the depth trend's figure or table")
	}

	var js bytes.Buffer
	if err := s.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var out struct {
		DepthTrend []map[string]json.RawMessage `json:"depth_trend"`
		Variants   []map[string]json.RawMessage `json:"variants"`
	}
	if err := json.Unmarshal(js.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	compact := func(raw json.RawMessage) string {
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return err.Error()
		}
		return b.String()
	}
	if len(out.DepthTrend) != 5 {
		t.Fatalf("JSON depth trend of %d groups, want 5", len(out.DepthTrend))
	}
	for _, c := range []struct{ got, want string }{
		{compact(out.DepthTrend[0]["hidden_dead"]), `{"mean":null,"std":null}`},
		{compact(out.DepthTrend[2]["n"]), "[16,8,10]"},
		{compact(out.DepthTrend[2]["hidden_dead"]), `{"mean":2,"std":1}`},
		{compact(out.DepthTrend[2]["alive"]), `[{"mean":13,"std":1},{"mean":6,"std":1},{"mean":10,"std":0}]`},
		{compact(out.DepthTrend[4]["routing"]), `"uniform"`},
		{compact(out.Variants[0]["n"]), "[16,10]"},
	} {
		if c.got != c.want {
			t.Errorf("JSON: %s, want %s", c.got, c.want)
		}
	}

	var b bytes.Buffer
	if err := s.DepthPNG(&b); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	if r := img.Bounds(); r.Dx() != 12*144 || r.Dy() != 5*144 {
		t.Errorf("PNG %v, want 1728×720", r)
	}
	path := filepath.Join(dir, "depth.png")
	if err := s.WriteDepthPNG(path); err != nil {
		t.Fatal(err)
	}
	if f, err := os.Open(path); err != nil {
		t.Error(err)
	} else {
		if _, err := png.Decode(f); err != nil {
			t.Errorf("%s: %v", path, err)
		}
		f.Close()
	}
}

// TestDepthLines: the figure's left panel has a line per group of depth
// ≥ 2 over its hidden layers' positions, the right one a line per
// routing kind of accuracy (%) against depth.
func TestDepthLines(t *testing.T) {
	s, err := Collect(writeDepthSweep(t, t.TempDir(), depthCases))
	if err != nil {
		t.Fatal(err)
	}
	st := newDepthStyle(s.DepthTrend)
	str := func(ls []depthLine) string {
		var b strings.Builder
		for _, l := range ls {
			fmt.Fprintf(&b, "%s:", l.label)
			for _, p := range l.pts {
				fmt.Fprintf(&b, " %g,%g", p.X, p.Y)
			}
			b.WriteString("; ")
		}
		return b.String()
	}
	if got, want := str(st.deadLines(s.DepthTrend)), "L = 2, RBA: 1,2; L = 3, RBA: 1,2 2,5; L = 3, uniform: 1,1 2,1; "; got != want {
		t.Errorf("dead lines %s, want %s", got, want)
	}
	acc := st.accLines(s.DepthTrend)
	if len(acc) != 2 || acc[0].label != "RBA" || acc[1].label != "uniform" || len(acc[0].pts) != 3 || len(acc[1].pts) != 2 ||
		acc[0].pts[1] != (plotter.XY{X: 2, Y: 100 * 0.72}) || acc[1].pts[1].X != 3 || math.Abs(acc[1].pts[1].Y-40) > 1e-9 {
		t.Errorf("accuracy lines %s", str(acc))
	}
	for _, c := range []struct{ arch, routing, want string }{
		{"deep-n16-d8-L3-uniform-wd1e-06", "uniform", "deep-n16-d8-wd1e-06"},
		{"deep-n16-d8-L3-wd1e-06", "rba", "deep-n16-d8-wd1e-06"},
		{"deep-L30-L3", "rba", "deep-L30"},
		{"deep-n16-d8-L3-self-attention", "self-attention", "deep-n16-d8"},
		{"", "", ""},
	} {
		if got := family(DepthGroup{Arch: c.arch, Depth: 3, Routing: c.routing}); got != c.want {
			t.Errorf("family(%q, %s) = %q, want %q", c.arch, c.routing, got, c.want)
		}
	}
}

// TestLegendRoom: a depth panel's y axis grows to leave its legend's
// band free above the data (each entry at least 3% of the panel), more
// for more entries, never beyond doubling the range; no legend, or an
// empty range, leaves it as it was. The depth figure's panels keep every
// point below that band.
func TestLegendRoom(t *testing.T) {
	if got := legendRoom(0, 0, 10); got != 10 {
		t.Errorf("no legend: top %g, want 10", got)
	}
	if got := legendRoom(3, 5, 5); got != 5 {
		t.Errorf("empty range: top %g, want 5", got)
	}
	prev := 10.0
	for n := 1; n <= 40; n++ {
		top := legendRoom(n, 0, 10)
		free := (top - 10) / top
		if top <= prev && free < 0.5-1e-12 || free < math.Min(0.03*float64(n), 0.5) || free > 0.5+1e-12 {
			t.Errorf("%d entries: top %g (free %.3f of the panel), previous %g", n, top, free, prev)
		}
		prev = top
	}
	s, err := Collect(writeDepthSweep(t, t.TempDir(), depthCases))
	if err != nil {
		t.Fatal(err)
	}
	ps, err := s.depthPlots()
	if err != nil {
		t.Fatal(err)
	}
	st := newDepthStyle(s.DepthTrend)
	for i, ls := range [][]depthLine{st.deadLines(s.DepthTrend), st.accLines(s.DepthTrend)} {
		p := ps[i]
		band := p.Y.Max - 0.03*float64(len(ls))*(p.Y.Max-p.Y.Min)
		for _, l := range ls {
			for _, pt := range l.pts {
				if pt.Y >= band {
					t.Errorf("panel %d: point %v of %q in the legend's band (above %g, axis %g … %g)", i, pt, l.label, band, p.Y.Min, p.Y.Max)
				}
			}
		}
	}
}

// TestDepthTrendOneDepth: variants at one depth (or without an analysis)
// have no depth trend: no section, no figure, an error from DepthPNG;
// odd variants and groups (cds without layers, NaN accuracies) neither
// panic nor draw.
func TestDepthTrendOneDepth(t *testing.T) {
	var cases []depthCase
	for _, c := range depthCases {
		if c.depth == 2 {
			cases = append(cases, c)
		}
	}
	s, err := Collect(writeDepthSweep(t, t.TempDir(), cases))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Variants) != 3 || s.DepthTrend != nil {
		t.Fatalf("%d variants, depth trend %+v; want 3, none", len(s.Variants), s.DepthTrend)
	}
	var md, h bytes.Buffer
	if err := s.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteHTML(&h); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "Depth trend") || strings.Contains(h.String(), "Depth trend") || !strings.Contains(md.String(), "## Optimizer variants") {
		t.Errorf("a sweep of one depth has a depth trend:\n%s", md.String())
	}
	var b bytes.Buffer
	if err := s.DepthPNG(&b); err == nil || !strings.Contains(err.Error(), "1 depth(s) with an analysis among the 3 done variant(s)") || b.Len() != 0 {
		t.Errorf("DepthPNG of one depth: %v, %d bytes", err, b.Len())
	}
	path := filepath.Join(t.TempDir(), "depth.png")
	if err := s.WriteDepthPNG(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("WriteDepthPNG of one depth: %v", err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("WriteDepthPNG wrote a file of one depth")
	}

	odd := []Variant{{Routing: "rba", CDS: []int{1, 2, 3}}, {Routing: "rba", Layers: []string{"a", "b"}, CDS: []int{1}},
		{Routing: "rba", Layers: []string{"a"}, CDS: []int{0}}, {Routing: "rba", Layers: []string{"a", "b"}, CDS: []int{0, 1}, N: []int{4}}}
	if g := depthTrend(odd); g != nil {
		t.Errorf("depth trend of odd variants %+v", g)
	}
	odd = append(odd, Variant{Arch: "x", Routing: "rba", Layers: []string{"a", "b", "c"}, CDS: []int{0, 1, 2}, ValAcc: math.NaN(), EvalAcc: math.NaN()})
	g := depthTrend(odd)
	if len(g) != 2 || g[0].N != nil || g[0].AliveRouting() != "–" || !math.IsNaN(g[1].EvalAcc.Mean) {
		t.Fatalf("depth trend %+v", g)
	}
	nan := &Summary{DepthTrend: g}
	if err := nan.DepthPNG(&b); err != nil {
		t.Errorf("DepthPNG with NaN accuracies: %v", err)
	}
	if err := nan.WriteMarkdown(io.Discard); err != nil {
		t.Error(err)
	}
	broken := &Summary{DepthTrend: []DepthGroup{{Depth: 1}, {Depth: 4, CDS: []analysis.Value{{}}, EvalAcc: analysis.Value{Mean: math.Inf(1)}}}}
	if err := broken.DepthPNG(io.Discard); err != nil {
		t.Errorf("DepthPNG of groups without cds: %v", err)
	}
	if _, err := broken.depthHTML(); err != nil {
		t.Errorf("depthHTML of groups without cds: %v", err)
	}
	single := &Summary{DepthTrend: g[1:]}
	if h, err := single.depthHTML(); err != nil || strings.Contains(h, "<svg") || !strings.Contains(h, "<h2>Depth trend</h2>") {
		t.Errorf("depthHTML of one depth: %v\n%s", err, h)
	}
}
