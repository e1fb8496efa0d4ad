// Package figure holds what the self-contained HTML pages of train/report
// (the parse-tree report) and train/sweep (the sweep summary) draw alike:
// the page head and its shared style, the embedded plot font, inline SVG
// plots made with gonum.org/v1/plot, rasterized heatmaps with a color
// bar, integer and named ticks, HTML tables (the paper's Tables 1 and 2
// among them), notes and PNG data URIs.
//
// Everything here writes plain strings: a page needs no network and no
// installed font.
package figure

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html"
	"strings"

	"codeberg.org/go-fonts/liberation/liberationsansregular"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/capstan-ml/capstan/capsnet/analysis"
)

// CSS is the style both pages share: body, section headings, tables,
// figures, notes and sharp rasters. A page appends its own rules.
const CSS = `body{font-family:"Liberation Sans",Arial,Helvetica,sans-serif;margin:1.5em auto;max-width:1500px;padding:0 1em;color:#222;line-height:1.4}
h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0 1em}th,td{border:1px solid #bbb;padding:.25em .6em;text-align:right}th{background:#eef}td:first-child,th:first-child{text-align:left}
figure{display:inline-block;margin:.5em 1em .8em 0;vertical-align:top}figcaption{font-size:.9em;color:#444;max-width:60em}
.note{color:#555;font-size:.95em}svg image{image-rendering:pixelated}
`

// Esc escapes s for HTML text and attribute values.
func Esc(s string) string { return html.EscapeString(s) }

// FontFace returns the CSS @font-face rule that embeds the plots' font
// (Liberation Sans), so that text is measured and shown alike without a
// network or an installed font.
func FontFace() string {
	return "@font-face{font-family:\"Liberation Sans\";src:url(data:font/ttf;base64," +
		base64.StdEncoding.EncodeToString(liberationsansregular.TTF) + ") format(\"truetype\")}\n"
}

// WriteHead writes the start of an HTML page to b: the doctype, a head
// with title and the style css, and the opened body with title as its
// heading.
func WriteHead(b *strings.Builder, title, css string) {
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" + Esc(title) + "</title>\n<style>\n")
	b.WriteString(css)
	b.WriteString("</style>\n</head>\n<body>\n<h1>" + Esc(title) + "</h1>\n")
}

// WriteTail closes the page WriteHead began.
func WriteTail(b *strings.Builder) { b.WriteString("</body>\n</html>\n") }

// Note writes a paragraph of class note: format and args as fmt.Sprintf,
// escaped.
func Note(b *strings.Builder, format string, args ...any) {
	fmt.Fprintf(b, "<p class=\"note\">%s</p>\n", Esc(fmt.Sprintf(format, args...)))
}

// Write writes an inline SVG element with its caption as an HTML figure.
func Write(b *strings.Builder, svg, caption string) {
	fmt.Fprintf(b, "<figure>\n%s<figcaption>%s</figcaption>\n</figure>\n", svg, Esc(caption))
}

// PNGURI returns the data: URI of a PNG image.
func PNGURI(png []byte) string {
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(png)
}

// NewPlot returns a plot whose every text uses Liberation Sans (the
// font FontFace embeds).
func NewPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	for _, f := range []*text.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle, &p.X.Tick.Label, &p.Y.Tick.Label, &p.Legend.TextStyle} {
		f.Font.Typeface, f.Font.Variant = "Liberation", "Sans"
	}
	p.Title.TextStyle.Font.Size = 12
	return p
}

// SVG renders drawing onto an SVG canvas of w×h points and returns the
// <svg> element, without the XML prologue, for inlining. A panic of
// gonum/plot (it panics on some degenerate data) is returned as an error.
func SVG(w, h vg.Length, drawing func(draw.Canvas)) (s string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("plot: %v", r)
		}
	}()
	c := vgsvg.New(w, h)
	drawing(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", fmt.Errorf("plot: svg: %w", err)
	}
	out := buf.String()
	if i := strings.Index(out, "<svg"); i >= 0 {
		out = out[i:]
	}
	// A raster (heatmap, color bar) fills its rectangle: SVG would keep
	// its aspect ratio.
	return strings.ReplaceAll(out, "<image ", `<image preserveAspectRatio="none" `), nil
}

// PlotSVG renders p as an inline <svg> element of w×h points. A plot
// whose axis range is not finite or beyond ±MaxAbs is an error, not drawn
// (gonum/plot's tick search would not end): leave such points out first
// (PlottableXY).
func PlotSVG(p *plot.Plot, w, h vg.Length) (string, error) {
	if err := checkAxes(p); err != nil {
		return "", err
	}
	return SVG(w, h, func(c draw.Canvas) { p.Draw(c) })
}

// Table is an HTML table: a caption, a header row and rows of text.
type Table struct {
	Caption string
	Head    []string
	Rows    [][]string
}

// WriteTable writes t to b, every cell escaped.
func WriteTable(b *strings.Builder, t Table) {
	fmt.Fprintf(b, "<table>\n<caption>%s</caption>\n<tr>", Esc(t.Caption))
	for _, h := range t.Head {
		fmt.Fprintf(b, "<th>%s</th>", Esc(h))
	}
	b.WriteString("</tr>\n")
	for _, r := range t.Rows {
		b.WriteString("<tr>")
		for _, c := range r {
			fmt.Fprintf(b, "<td>%s</td>", Esc(c))
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
}

// PaperTables returns the paper's Table 1 (per routing layer: the
// capsules alive on its input and output layers, dyr and dys) and Table 2
// (per capsule layer: n, cnm, cns, car, cas, cdr, cds) of t (docs/semantics.md §7),
// each figure as mean ± std.
func PaperTables(t *analysis.Tables) (table1, table2 Table) {
	table1 = Table{Caption: "Table 1: routing", Head: []string{"routing layer", "alive in", "alive out", "dyr", "dys"}}
	for _, r := range t.Table1 {
		table1.Rows = append(table1.Rows, []string{r.From + " → " + r.To, fmt.Sprintf("%s/%d", r.AliveIn, r.NIn), fmt.Sprintf("%s/%d", r.AliveOut, r.NOut), r.DYR.String(), r.DYS.String()})
	}
	table2 = Table{Caption: "Table 2: capsule layers", Head: []string{"capsule layer", "n", "cnm", "cns", "car", "cas", "cdr", "cds"}}
	for _, r := range t.Table2 {
		table2.Rows = append(table2.Rows, []string{r.Layer, fmt.Sprint(r.N), r.CNM.String(), r.CNS.String(), r.CAR.String(), r.CAS.String(), r.CDR.String(), r.CDS.String()})
	}
	return table1, table2
}
