package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot/vg"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/analysis"
	"github.com/capstan-ml/capstan/capsnet/atomicfile"
	"github.com/capstan-ml/capstan/train/report/figure"
)

// pct prints an accuracy (0..1) over seeds as a percentage, mean ± std,
// "–" when there is none.
func pct(v analysis.Value) string {
	if math.IsNaN(v.Mean) {
		return "–"
	}
	if v.Std == 0 || math.IsNaN(v.Std) {
		return fmt.Sprintf("%.2f", 100*v.Mean)
	}
	return fmt.Sprintf("%.2f ± %.2f", 100*v.Mean, 100*v.Std)
}

func coord(n int) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprint(n)
}

// kinds are the routing kinds of the tables' columns: s.Routing, or RBA
// and uniform when it is empty (a Summary not made by Collect).
func (s *Summary) kinds() []string {
	if len(s.Routing) == 0 {
		return columnKinds(nil)
	}
	return s.Routing
}

// label names a routing kind in the tables' headings: "RBA" for routing
// by agreement, else the kind's name ("uniform", "self-attention", …).
func label(kind string) string {
	if kind == rbaKind() {
		return "RBA"
	}
	return kind
}

// kindCols returns the accuracy columns of the kinds: for each kind, its
// heading (label, then the text of suffix for the kind) and its cell of
// an architecture (f of its accuracy).
func (s *Summary) kindCols(suffix func(kind string) string, f func(Accuracy) string) (head []string, cell func(Arch) []string) {
	kinds := s.kinds()
	for _, k := range kinds {
		head = append(head, label(k)+suffix(k))
	}
	return head, func(a Arch) []string {
		var cells []string
		for _, k := range kinds {
			cells = append(cells, f(a.Of(k)))
		}
		return cells
	}
}

// seedCol returns the heading of the seeds column ("seeds RBA/uniform/…")
// and its cell of an architecture: the seeds done of each kind.
func (s *Summary) seedCol() (string, func(Arch) string) {
	kinds := s.kinds()
	labels := make([]string, len(kinds))
	for i, k := range kinds {
		labels[i] = label(k)
	}
	return "seeds " + strings.Join(labels, "/"), func(a Arch) string {
		n := make([]string, len(kinds))
		for i, k := range kinds {
			n[i] = fmt.Sprint(a.Of(k).Seeds)
		}
		return strings.Join(n, "/")
	}
}

// accuracyCols returns the accuracy columns of the tables, one per
// routing kind of s.kinds() on the evaluation set, then one per kind on
// validation, then the seeds (evalSuffix: what follows the evaluation
// columns' label for a kind), and the cells of an architecture.
func (s *Summary) accuracyCols(evalSuffix func(kind string) string) ([]string, func(Arch) []string) {
	eh, ec := s.kindCols(evalSuffix, func(acc Accuracy) string { return pct(acc.Eval) })
	vh, vc := s.kindCols(func(string) string { return " val" }, func(acc Accuracy) string { return pct(acc.Val) })
	sh, sc := s.seedCol()
	head := append(append(eh, vh...), sh)
	return head, func(a Arch) []string { return append(append(ec(a), vc(a)...), sc(a)) }
}

// table is a table's header and rows of cells.
type table struct {
	head []string
	rows [][]string
	// text is the number of leading columns of text (left-aligned in
	// Markdown; at least the first).
	text int
}

func (s *Summary) problemTable() table {
	type row struct {
		index int
		cells []string
	}
	var rows []row
	for _, g := range []struct {
		state string
		ps    []Problem
	}{{"missing", s.Missing}, {"failed", s.Failed}, {"invalid", s.Invalid}} {
		for _, p := range g.ps {
			rows = append(rows, row{p.Index, []string{fmt.Sprint(p.Index), p.Model, fmt.Sprint(p.Seed), g.state, p.Problem}})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].index < rows[j].index })
	t := table{head: []string{"task", "model", "seed", "state", "problem"}, text: 5}
	for _, r := range rows {
		t.rows = append(t.rows, r.cells)
	}
	return t
}

// accuracyTable is the accuracy per architecture: one evaluation and one
// validation column per routing kind of s.kinds().
func (s *Summary) accuracyTable() table {
	head, cells := s.accuracyCols(func(string) string { return " " + s.evalName() })
	t := table{head: append([]string{"architecture", "depth", "capsules", "dim", "parameters"}, head...)}
	for _, a := range s.Archs {
		L, n, d := a.coords()
		t.rows = append(t.rows, append([]string{a.Arch, coord(L), coord(n), coord(d), params(a.Params)}, cells(a)...))
	}
	return t
}

// coords are a's depth, capsules and dimension: the grid's axes when its
// tasks came from them, else those of its grid preset when its model
// names one (deep-n16-d8-L2 in a grid's models), else zeros. Only the
// table shows the preset's: the heatmaps keep to the axes, where a model
// and its routing twin would share a cell.
func (a Arch) coords() (L, n, d int) {
	if a.Depth != 0 || a.Capsules != 0 || a.Dim != 0 {
		return a.Depth, a.Capsules, a.Dim
	}
	if n, d, L, ok := capsnet.GridCoords(a.model); ok {
		return L, n, d
	}
	return 0, 0, 0
}

// bestTable is the best RBA models, the other routing kinds of the same
// architecture beside.
func (s *Summary) bestTable() table {
	head, cells := s.accuracyCols(func(kind string) string {
		if kind == rbaKind() {
			return " " + s.evalName()
		}
		return " " + s.evalName() + " (same architecture)"
	})
	t := table{head: append([]string{"best RBA model", "architecture", "parameters"}, head...)}
	for _, b := range s.Best {
		a := b.Arch
		t.rows = append(t.rows, append([]string{b.Scope, a.Arch, params(a.Params)}, cells(a)...))
	}
	return t
}

// othersNote says, after "the uniform-routing model of the same
// architecture beside it", which other routing kinds' models are beside
// it too ("" when none).
func (s *Summary) othersNote() string {
	var others []string
	for _, k := range s.kinds() {
		if k != rbaKind() && k != baselineKind() {
			others = append(others, k)
		}
	}
	if len(others) == 0 {
		return ""
	}
	return " (and its " + strings.Join(others, ", ") + " models)"
}

func params(n int64) string {
	if n == 0 {
		return "–"
	}
	return fmt.Sprint(n)
}

func (s *Summary) evalName() string {
	if s.Eval == "" {
		return "eval"
	}
	return s.Eval
}

// Counts says how many tasks are done, failed, missing and invalid.
func (s *Summary) Counts() string {
	return fmt.Sprintf("%d tasks: %d done, %d failed, %d missing, %d invalid.", s.Tasks, s.Done, len(s.Failed), len(s.Missing), len(s.Invalid))
}

const accuracyNote = "Accuracy in %%, mean ± population std over the seeds done; evaluation set %s (the analysis' set), validation the held-out training images the target stops on; one column per routing kind with results (RBA and uniform always). Parameters of the RBA model."

// mdCell escapes a Markdown table cell.
func mdCell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }

func writeMDTable(b *strings.Builder, t table) {
	b.WriteString("|")
	for _, h := range t.head {
		b.WriteString(" " + mdCell(h) + " |")
	}
	b.WriteString("\n|")
	for i := range t.head {
		if i == 0 || i < t.text {
			b.WriteString("---|")
		} else {
			b.WriteString("---:|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.rows {
		b.WriteString("|")
		for _, c := range r {
			b.WriteString(" " + mdCell(c) + " |")
		}
		b.WriteString("\n")
	}
}

// WriteMarkdown writes the summary's appendix tables as Markdown: the
// tasks not counted, the accuracy per architecture (a column per routing
// kind of s.kinds()), the best RBA models with their uniform baselines
// and the sweep's other kinds, the optimizer variants and the depth trend
// (when the sweep has them), and Tables 1 and 2 of each best model.
func (s *Summary) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Sweep results: %s\n\n%s\n", mdCell(s.Manifest), s.Counts())
	if p := s.problemTable(); len(p.rows) > 0 {
		b.WriteString("\n## Tasks not counted\n\n")
		writeMDTable(&b, p)
	}
	b.WriteString("\n## Accuracy per architecture\n\n" + fmt.Sprintf(accuracyNote, s.evalName()) + "\n\n")
	writeMDTable(&b, s.accuracyTable())
	b.WriteString("\n## Best models\n\nBest RBA model (highest mean " + s.evalName() + " accuracy) overall and per depth, the uniform-routing model of the same architecture beside it" + s.othersNote() + ".\n\n")
	if len(s.Best) == 0 {
		b.WriteString("No RBA task is done yet.\n")
	} else {
		writeMDTable(&b, s.bestTable())
	}
	b.WriteString(s.variantsMarkdown())
	b.WriteString(s.depthMarkdown())
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	for _, best := range s.Best {
		var h strings.Builder
		fmt.Fprintf(&h, "\n## Tables 1 and 2 of the best model %s: %s\n\n", best.Scope, mdCell(best.Arch.Arch))
		switch {
		case best.Tables != nil:
		case best.TablesError != "":
			fmt.Fprintf(&h, "Its seeds' analyses disagree: %s\n", mdCell(best.TablesError))
		default:
			h.WriteString("No analysis in its results.\n")
		}
		if _, err := io.WriteString(w, h.String()); err != nil {
			return err
		}
		if best.Tables != nil {
			if err := best.Tables.WriteMarkdown(w); err != nil {
				return err
			}
		}
	}
	return nil
}

// WriteJSON writes the summary as indented JSON (NaN figures as null).
func (s *Summary) WriteJSON(w io.Writer) error {
	out := *s
	out.Schema = SummarySchema
	b, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return fmt.Errorf("summary json: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// pageCSS is the page's style beyond figure.CSS.
const pageCSS = "caption{text-align:left;font-weight:bold;padding:.3em 0}\n"

// html returns t as an HTML table with caption.
func (t table) html(caption string) figure.Table {
	return figure.Table{Caption: caption, Head: t.head, Rows: t.rows}
}

// WriteHTML writes the summary as one self-contained HTML page: the
// tables of WriteMarkdown and heatmaps (inline SVG) of the mean
// evaluation accuracy per architecture, depth × (capsules, dim), for RBA
// and uniform routing and their difference.
func (s *Summary) WriteHTML(w io.Writer) error {
	var b strings.Builder
	figure.WriteHead(&b, "Sweep results: "+s.Manifest, figure.CSS+pageCSS)
	fmt.Fprintf(&b, "<p>%s</p>\n", figure.Esc(s.Counts()))
	if p := s.problemTable(); len(p.rows) > 0 {
		b.WriteString("<h2>Tasks not counted</h2>\n")
		figure.WriteTable(&b, p.html("Missing, failed and invalid tasks"))
	}
	b.WriteString("<h2>Accuracy per architecture</h2>\n")
	figure.Note(&b, accuracyNote, s.evalName())
	figs, err := s.heatmaps()
	if err != nil {
		return err
	}
	b.WriteString(figs)
	figure.WriteTable(&b, s.accuracyTable().html("Accuracy per architecture"))
	vh, err := s.variantsHTML()
	if err != nil {
		return err
	}
	b.WriteString(vh)
	dh, err := s.depthHTML()
	if err != nil {
		return err
	}
	b.WriteString(dh)
	b.WriteString("<h2>Best models</h2>\n")
	if len(s.Best) == 0 {
		b.WriteString("<p>No RBA task is done yet.</p>\n")
	} else {
		figure.WriteTable(&b, s.bestTable().html("Best RBA models, the uniform baseline of the same architecture beside"+s.othersNote()))
	}
	for _, best := range s.Best {
		fmt.Fprintf(&b, "<h2>Tables 1 and 2 of the best model %s: %s</h2>\n", figure.Esc(best.Scope), figure.Esc(best.Arch.Arch))
		t := best.Tables
		switch {
		case t != nil:
		case best.TablesError != "":
			fmt.Fprintf(&b, "<p>Its seeds' analyses disagree: %s</p>\n", figure.Esc(best.TablesError))
			continue
		default:
			b.WriteString("<p>No analysis in its results.</p>\n")
			continue
		}
		figure.Note(&b, "%d image(s) per model, mean ± std over %d seed(s).", t.K, t.Models)
		t1, t2 := figure.PaperTables(t)
		figure.WriteTable(&b, t1)
		figure.WriteTable(&b, t2)
	}
	figure.WriteTail(&b)
	_, err = io.WriteString(w, b.String())
	return err
}

// heatmapAxes are the axes of the heatmaps: the depths (rows) and the
// (capsules, dim) pairs (columns) of the grid architectures, sorted, with
// the tick labels, and grid, which lays a figure of each grid
// architecture out on them (NaN where there is none).
type heatmapAxes struct {
	rows, cols int
	yl, xl     figure.LabelTicks
	grid       func(f func(Arch) float64) figure.Grid
}

// heatmapAxes returns the axes of s's grid architectures (those with a
// depth, capsule count and dimension); ok is false when there are none.
func (s *Summary) heatmapAxes() (ax heatmapAxes, ok bool) {
	type cd struct{ n, d int }
	depthIdx, colIdx := map[int]int{}, map[cd]int{}
	var depths []int
	var cols []cd
	isGrid := func(a Arch) bool { return a.Depth != 0 && a.Capsules != 0 && a.Dim != 0 }
	for _, a := range s.Archs {
		if !isGrid(a) {
			continue
		}
		if _, ok := depthIdx[a.Depth]; !ok {
			depthIdx[a.Depth] = 0
			depths = append(depths, a.Depth)
		}
		if _, ok := colIdx[cd{a.Capsules, a.Dim}]; !ok {
			colIdx[cd{a.Capsules, a.Dim}] = 0
			cols = append(cols, cd{a.Capsules, a.Dim})
		}
	}
	if len(depths) == 0 {
		return ax, false
	}
	sort.Ints(depths)
	sort.Slice(cols, func(i, j int) bool { return cols[i].n < cols[j].n || cols[i].n == cols[j].n && cols[i].d < cols[j].d })
	ax = heatmapAxes{rows: len(depths), cols: len(cols), yl: make(figure.LabelTicks, len(depths)), xl: make(figure.LabelTicks, len(cols))}
	for i, d := range depths {
		depthIdx[d], ax.yl[i] = i, fmt.Sprint(d)
	}
	for i, c := range cols {
		colIdx[c], ax.xl[i] = i, fmt.Sprintf("%d×%d", c.n, c.d)
	}
	ax.grid = func(f func(Arch) float64) figure.Grid {
		g := figure.NewGrid(len(depths), len(cols))
		for i := range g.Values {
			g.Values[i] = math.NaN()
		}
		for _, a := range s.Archs {
			if isGrid(a) {
				g.Set(depthIdx[a.Depth], colIdx[cd{a.Capsules, a.Dim}], f(a))
			}
		}
		return g
	}
	return ax, true
}

// heatmap is one figure of heatmaps.
type heatmap struct {
	title  string
	g      figure.Grid
	lo, hi float64
	div    bool
}

// heatmaps returns the figures of the grid architectures, or a note when
// there are none: the mean evaluation accuracy of RBA and uniform
// routing and their difference, then of every other routing kind of
// s.kinds() and its difference to uniform; the accuracies share one
// colour scale, the differences another.
func (s *Summary) heatmaps() (string, error) {
	ax, ok := s.heatmapAxes()
	if !ok {
		return "<p class=\"note\">No grid architecture (depth × capsules × dimension): no heatmap.</p>\n", nil
	}
	base := baselineKind()
	acc, diff := map[string]heatmap{}, map[string]heatmap{}
	var all, allDiff []float64
	for _, k := range s.kinds() {
		title := strings.ToUpper(label(k)[:1]) + label(k)[1:]
		acc[k] = heatmap{title: title + ": " + s.evalName() + " accuracy (%)", g: ax.grid(func(a Arch) float64 { return 100 * a.Of(k).Eval.Mean })}
		all = append(all, acc[k].g.Values...)
		if k != base {
			diff[k] = heatmap{title: label(k) + " − " + base + " (percentage points)", div: true,
				g: ax.grid(func(a Arch) float64 { return 100 * (a.Of(k).Eval.Mean - a.Of(base).Eval.Mean) })}
			allDiff = append(allDiff, diff[k].g.Values...)
		}
	}
	lo, hi := figure.ZRange(all)
	dlo, dhi := figure.ZRange(allDiff)
	dm := math.Max(math.Abs(dlo), math.Abs(dhi))
	// RBA, uniform and RBA − uniform first, as in the paper; then each
	// other kind and its difference to uniform.
	var figs []heatmap
	add := func(m map[string]heatmap, k string) {
		if f, ok := m[k]; ok {
			if f.lo, f.hi = lo, hi; f.div {
				f.lo, f.hi = -dm, dm
			}
			figs = append(figs, f)
		}
	}
	add(acc, rbaKind())
	add(acc, base)
	add(diff, rbaKind())
	for _, k := range s.kinds() {
		if k != rbaKind() && k != base {
			add(acc, k)
			add(diff, k)
		}
	}
	var b strings.Builder
	for _, f := range figs {
		svg, err := figure.Heatmap{Title: f.title, XLabel: "capsules × dimension", YLabel: "routing layers", Grid: f.g, Min: f.lo, Max: f.hi,
			Width: vg.Length(max(360, 40*ax.cols+140)), Height: vg.Length(max(220, 28*ax.rows+120)), XTicks: ax.xl, YTicks: ax.yl, Diverging: f.div}.SVG()
		if err != nil {
			return "", fmt.Errorf("heatmap %s: %w", f.title, err)
		}
		figure.Write(&b, svg, f.title+"; rows: routing layers (depth), columns: capsules × dimension; grey: no seed done"+figure.DroppedNote(figure.Beyond(f.g.Values))+".")
	}
	return b.String(), nil
}

// WriteFiles writes the summary's Markdown, HTML and JSON to the paths
// given (an empty path is skipped), each atomically.
func (s *Summary) WriteFiles(markdown, htmlPath, jsonPath string) error {
	for _, f := range []struct {
		path  string
		write func(io.Writer) error
	}{{markdown, s.WriteMarkdown}, {htmlPath, s.WriteHTML}, {jsonPath, s.WriteJSON}} {
		if f.path == "" {
			continue
		}
		var b bytes.Buffer
		if err := f.write(&b); err != nil {
			return fmt.Errorf("%s: %w", f.path, err)
		}
		if err := atomicfile.WriteBytes(f.path, b.Bytes()); err != nil {
			return err
		}
	}
	return nil
}
