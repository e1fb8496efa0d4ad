package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"image/color"
	"io"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/capstan-ml/capstan/capsnet/analysis"
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

func seeds(a Arch) string { return fmt.Sprintf("%d/%d", a.RBA.Seeds, a.Uniform.Seeds) }

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

func (s *Summary) accuracyTable() table {
	t := table{head: []string{"architecture", "depth", "capsules", "dim", "parameters", "RBA " + s.evalName(), "uniform " + s.evalName(), "RBA val", "uniform val", "seeds RBA/uniform"}}
	for _, a := range s.Archs {
		t.rows = append(t.rows, []string{a.Arch, coord(a.Depth), coord(a.Capsules), coord(a.Dim), params(a.Params),
			pct(a.RBA.Eval), pct(a.Uniform.Eval), pct(a.RBA.Val), pct(a.Uniform.Val), seeds(a)})
	}
	return t
}

func (s *Summary) bestTable() table {
	t := table{head: []string{"best RBA model", "architecture", "parameters", "RBA " + s.evalName(), "uniform " + s.evalName() + " (same architecture)", "RBA val", "uniform val", "seeds RBA/uniform"}}
	for _, b := range s.Best {
		a := b.Arch
		t.rows = append(t.rows, []string{b.Scope, a.Arch, params(a.Params), pct(a.RBA.Eval), pct(a.Uniform.Eval), pct(a.RBA.Val), pct(a.Uniform.Val), seeds(a)})
	}
	return t
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

const accuracyNote = "Accuracy in %%, mean ± population std over the seeds done; evaluation set %s (the analysis' set), validation the held-out training images the target stops on. Parameters of the RBA model."

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
// tasks not counted, the accuracy per architecture, the best models with
// their uniform baselines, and Tables 1 and 2 of each best model.
func (s *Summary) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Sweep results: %s\n\n%s\n", mdCell(s.Manifest), s.Counts())
	if p := s.problemTable(); len(p.rows) > 0 {
		b.WriteString("\n## Tasks not counted\n\n")
		writeMDTable(&b, p)
	}
	b.WriteString("\n## Accuracy per architecture\n\n" + fmt.Sprintf(accuracyNote, s.evalName()) + "\n\n")
	writeMDTable(&b, s.accuracyTable())
	b.WriteString("\n## Best models\n\nBest RBA model (highest mean " + s.evalName() + " accuracy) overall and per depth, the uniform-routing model of the same architecture beside it.\n\n")
	if len(s.Best) == 0 {
		b.WriteString("No RBA task is done yet.\n")
	} else {
		writeMDTable(&b, s.bestTable())
	}
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
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("summary json: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func writeHTMLTable(b *strings.Builder, caption string, t table) {
	fmt.Fprintf(b, "<table>\n<caption>%s</caption>\n<tr>", html.EscapeString(caption))
	for _, h := range t.head {
		fmt.Fprintf(b, "<th>%s</th>", html.EscapeString(h))
	}
	b.WriteString("</tr>\n")
	for _, r := range t.rows {
		b.WriteString("<tr>")
		for _, c := range r {
			fmt.Fprintf(b, "<td>%s</td>", html.EscapeString(c))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
}

const pageCSS = `body{font-family:"Liberation Sans",Arial,Helvetica,sans-serif;margin:1.5em auto;max-width:1500px;padding:0 1em;color:#222;line-height:1.4}
h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0 1em}th,td{border:1px solid #bbb;padding:.25em .6em;text-align:right}th{background:#eef}td:first-child,th:first-child{text-align:left}
caption{text-align:left;font-weight:bold;padding:.3em 0}figure{display:inline-block;margin:.5em 1em .8em 0;vertical-align:top}figcaption{font-size:.9em;color:#444;max-width:50em}.note{color:#555}
svg image{image-rendering:pixelated}
`

// WriteHTML writes the summary as one self-contained HTML page: the
// tables of WriteMarkdown and heatmaps (inline SVG) of the mean
// evaluation accuracy per architecture, depth × (capsules, dim), for RBA
// and uniform routing and their difference.
func (s *Summary) WriteHTML(w io.Writer) error {
	var b strings.Builder
	title := "Sweep results: " + s.Manifest
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + html.EscapeString(title) + "</title>\n<style>\n" + pageCSS + "</style>\n</head>\n<body>\n")
	fmt.Fprintf(&b, "<h1>%s</h1>\n<p>%s</p>\n", html.EscapeString(title), html.EscapeString(s.Counts()))
	if p := s.problemTable(); len(p.rows) > 0 {
		b.WriteString("<h2>Tasks not counted</h2>\n")
		writeHTMLTable(&b, "Missing, failed and invalid tasks", p)
	}
	b.WriteString("<h2>Accuracy per architecture</h2>\n")
	fmt.Fprintf(&b, "<p class=\"note\">%s</p>\n", html.EscapeString(fmt.Sprintf(accuracyNote, s.evalName())))
	figs, err := s.heatmaps()
	if err != nil {
		return err
	}
	b.WriteString(figs)
	writeHTMLTable(&b, "Accuracy per architecture", s.accuracyTable())
	b.WriteString("<h2>Best models</h2>\n")
	if len(s.Best) == 0 {
		b.WriteString("<p>No RBA task is done yet.</p>\n")
	} else {
		writeHTMLTable(&b, "Best RBA models, the uniform baseline of the same architecture beside", s.bestTable())
	}
	for _, best := range s.Best {
		fmt.Fprintf(&b, "<h2>Tables 1 and 2 of the best model %s: %s</h2>\n", html.EscapeString(best.Scope), html.EscapeString(best.Arch.Arch))
		t := best.Tables
		switch {
		case t != nil:
		case best.TablesError != "":
			fmt.Fprintf(&b, "<p>Its seeds' analyses disagree: %s</p>\n", html.EscapeString(best.TablesError))
			continue
		default:
			b.WriteString("<p>No analysis in its results.</p>\n")
			continue
		}
		fmt.Fprintf(&b, "<p class=\"note\">%d image(s) per model, mean ± std over %d seed(s).</p>\n", t.K, t.Models)
		t1 := table{head: []string{"routing layer", "alive in", "alive out", "dyr", "dys"}}
		for _, r := range t.Table1 {
			t1.rows = append(t1.rows, []string{r.From + " → " + r.To, fmt.Sprintf("%s/%d", r.AliveIn, r.NIn), fmt.Sprintf("%s/%d", r.AliveOut, r.NOut), r.DYR.String(), r.DYS.String()})
		}
		writeHTMLTable(&b, "Table 1: routing", t1)
		t2 := table{head: []string{"capsule layer", "n", "cnm", "cns", "car", "cas", "cdr", "cds"}}
		for _, r := range t.Table2 {
			t2.rows = append(t2.rows, []string{r.Layer, fmt.Sprint(r.N), r.CNM.String(), r.CNS.String(), r.CAR.String(), r.CAS.String(), r.CDR.String(), r.CDS.String()})
		}
		writeHTMLTable(&b, "Table 2: capsule layers", t2)
	}
	b.WriteString("</body>\n</html>\n")
	_, err = io.WriteString(w, b.String())
	return err
}

// accGrid is the heatmap's matrix: rows the depths, columns the
// (capsules, dim) pairs.
type accGrid struct {
	rows, cols int
	z          []float64
}

func (g accGrid) Dims() (int, int)   { return g.cols, g.rows }
func (g accGrid) Z(c, r int) float64 { return g.z[r*g.cols+c] }
func (g accGrid) X(c int) float64    { return float64(c) }
func (g accGrid) Y(r int) float64    { return float64(r) }

// labelTicks labels integer positions with names.
type labelTicks []string

func (l labelTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for i, s := range l {
		if float64(i) >= lo-0.5 && float64(i) <= hi+0.5 {
			ts = append(ts, plot.Tick{Value: float64(i), Label: s})
		}
	}
	return ts
}

// rasterHeat is a heatmap without a glyph box per cell.
type rasterHeat struct{ *plotter.HeatMap }

func (rasterHeat) GlyphBoxes(*plot.Plot) []plot.GlyphBox { return nil }

// heatmaps returns the figures of the grid architectures (those with a
// depth, capsule count and dimension), or a note when there are none.
func (s *Summary) heatmaps() (string, error) {
	type cd struct{ n, d int }
	depthIdx, colIdx := map[int]int{}, map[cd]int{}
	var depths []int
	var cols []cd
	for _, a := range s.Archs {
		if a.Depth == 0 || a.Capsules == 0 || a.Dim == 0 {
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
		return "<p class=\"note\">No grid architecture (depth × capsules × dimension): no heatmap.</p>\n", nil
	}
	sort.Ints(depths)
	sort.Slice(cols, func(i, j int) bool { return cols[i].n < cols[j].n || cols[i].n == cols[j].n && cols[i].d < cols[j].d })
	yl, xl := make(labelTicks, len(depths)), make(labelTicks, len(cols))
	for i, d := range depths {
		depthIdx[d], yl[i] = i, fmt.Sprint(d)
	}
	for i, c := range cols {
		colIdx[c], xl[i] = i, fmt.Sprintf("%d×%d", c.n, c.d)
	}
	grid := func(f func(Arch) float64) accGrid {
		g := accGrid{rows: len(depths), cols: len(cols), z: make([]float64, len(depths)*len(cols))}
		for i := range g.z {
			g.z[i] = math.NaN()
		}
		for _, a := range s.Archs {
			if a.Depth == 0 || a.Capsules == 0 || a.Dim == 0 {
				continue
			}
			g.z[depthIdx[a.Depth]*g.cols+colIdx[cd{a.Capsules, a.Dim}]] = f(a)
		}
		return g
	}
	rba := grid(func(a Arch) float64 { return 100 * a.RBA.Eval.Mean })
	uni := grid(func(a Arch) float64 { return 100 * a.Uniform.Eval.Mean })
	diff := grid(func(a Arch) float64 { return 100 * (a.RBA.Eval.Mean - a.Uniform.Eval.Mean) })
	lo, hi := zRange(append(append([]float64(nil), rba.z...), uni.z...))
	dlo, dhi := zRange(diff.z)
	dm := math.Max(math.Abs(dlo), math.Abs(dhi))
	var b strings.Builder
	for _, f := range []struct {
		title  string
		g      accGrid
		lo, hi float64
		div    bool
	}{
		{"RBA: " + s.evalName() + " accuracy (%)", rba, lo, hi, false},
		{"Uniform: " + s.evalName() + " accuracy (%)", uni, lo, hi, false},
		{"RBA − uniform (percentage points)", diff, -dm, dm, true},
	} {
		svg, err := heatmapSVG(f.title, xl, yl, f.g, f.lo, f.hi, f.div)
		if err != nil {
			return "", fmt.Errorf("heatmap %s: %w", f.title, err)
		}
		fmt.Fprintf(&b, "<figure>\n%s<figcaption>%s; rows: routing layers (depth), columns: capsules × dimension; grey: no seed done.</figcaption>\n</figure>\n", svg, html.EscapeString(f.title))
	}
	return b.String(), nil
}

// zRange returns the finite minimum and maximum of z, widened when equal.
func zRange(z []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range z {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if lo > hi {
		return 0, 1
	}
	if hi-lo < 1e-9 {
		return lo - 0.5, hi + 0.5
	}
	return lo, hi
}

// heatmapSVG draws g with a color bar as an inline <svg> element.
// A diverging map (blue below 0, red above) shows a difference.
func heatmapSVG(title string, xl, yl labelTicks, g accGrid, lo, hi float64, diverging bool) (svg string, err error) {
	defer func() { // gonum/plot panics on some degenerate data
		if r := recover(); r != nil {
			err = fmt.Errorf("plot: %v", r)
		}
	}()
	var cm palette.ColorMap = moreland.ExtendedBlackBody()
	if diverging {
		cm = moreland.SmoothBlueRed()
	}
	cm.SetMin(lo)
	cm.SetMax(hi)
	pal := cm.Palette(255)
	colors := pal.Colors()
	hm := plotter.NewHeatMap(g, pal)
	hm.Min, hm.Max = lo, hi
	hm.Underflow, hm.Overflow = colors[0], colors[len(colors)-1]
	hm.NaN = color.RGBA{200, 200, 200, 255}
	hm.Rasterized = true
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, "capsules × dimension", "routing layers"
	p.X.Tick.Marker, p.Y.Tick.Marker = xl, yl
	p.Add(rasterHeat{hm})
	cb := plot.New()
	cb.HideX()
	cb.Add(&plotter.ColorBar{ColorMap: cm, Vertical: true})
	w := vg.Length(max(360, 40*g.cols+140))
	h := vg.Length(max(220, 28*g.rows+120))
	const barW = 70
	c := vgsvg.New(w, h)
	dc := draw.New(c)
	p.Draw(draw.Crop(dc, 0, -barW, 0, 0))
	cb.Draw(draw.Crop(dc, w-barW+8, 0, 28, -22))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	out := buf.String()
	if i := strings.Index(out, "<svg"); i >= 0 {
		out = out[i:]
	}
	return strings.ReplaceAll(out, "<image ", `<image preserveAspectRatio="none" `), nil
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
		if err := writeAtomic(f.path, b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}
