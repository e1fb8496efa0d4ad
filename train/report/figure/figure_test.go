package figure

import (
	"bytes"
	"encoding/base64"
	"image/png"
	"math"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet/analysis"
)

// TestZRange: the finite extent, widened when flat, (0, 1) when empty.
func TestZRange(t *testing.T) {
	for _, c := range []struct {
		z      []float64
		lo, hi float64
	}{
		{[]float64{3, math.NaN(), -1, math.Inf(1)}, -1, 3},
		{[]float64{2, 2}, 1.5, 2.5},
		{[]float64{math.NaN()}, 0, 1},
		{nil, 0, 1},
	} {
		if lo, hi := ZRange(c.z); lo != c.lo || hi != c.hi {
			t.Errorf("ZRange(%v) = %g, %g, want %g, %g", c.z, lo, hi, c.lo, c.hi)
		}
	}
}

// TestTicks: integer ticks only at whole values, label ticks at their
// positions within the range.
func TestTicks(t *testing.T) {
	for _, tk := range (IntTicks{}).Ticks(0, 3) {
		if tk.Value != math.Trunc(tk.Value) || strings.Contains(tk.Label, ".") {
			t.Errorf("integer tick %+v", tk)
		}
	}
	ts := LabelTicks{"a", "b", "c"}.Ticks(0.6, 2)
	if len(ts) != 2 || ts[0].Label != "b" || ts[1].Value != 2 {
		t.Errorf("label ticks %+v", ts)
	}
}

// TestHeatmap draws a small heatmap, NaN cells included: one inline
// <svg> whose raster fills its rectangle; a raster taller than the plot
// is smoothed, not decimated.
func TestHeatmap(t *testing.T) {
	g := NewGrid(2, 3)
	g.Set(1, 2, 5)
	g.Values[0] = math.NaN()
	h := Heatmap{Title: "t", XLabel: "x", YLabel: "y", BarLabel: "z", Grid: g, Min: 0, Max: 5, Width: 300, Height: 200,
		XTicks: LabelTicks{"a", "b", "c"}, Diverging: true}
	svg, err := h.SVG()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(svg, "<svg") || !strings.Contains(svg, `preserveAspectRatio="none"`) || strings.Contains(svg, "image-rendering:auto") {
		t.Errorf("heatmap svg: %.200s…", svg)
	}
	// 400 rows in 200 points and 700 columns in 300: averaged down to the
	// plot's 120 × 240 cells before drawing, never smoothed by the browser.
	h.Grid, h.Diverging = NewGrid(400, 700), false
	if svg, err = h.SVG(); err != nil || strings.Contains(svg, "image-rendering:auto") {
		t.Fatalf("a raster of 400 × 700 in 300 × 200 points: %v, or left to the browser's smoothing", err)
	}
	i := strings.Index(svg, "base64,")
	if i < 0 {
		t.Fatal("no embedded raster")
	}
	j := strings.IndexByte(svg[i:], '"')
	raw, err := base64.StdEncoding.DecodeString(svg[i+len("base64,") : i+j])
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Width != 234 || cfg.Height != 100 {
		t.Errorf("raster %d × %d, want 234 × 100 (700 columns in blocks of 3, 400 rows in blocks of 4)", cfg.Width, cfg.Height)
	}
}

// TestGridPool checks the block means, the NaN of a block without a
// Plottable value, the smaller last block and the coordinates.
func TestGridPool(t *testing.T) {
	g := NewGrid(3, 5)
	for r := 0; r < 3; r++ {
		for c := 0; c < 5; c++ {
			g.Set(r, c, float64(10*r+c))
		}
	}
	g.Set(2, 4, math.NaN())
	p := g.Pool(2, 2)
	if p.Rows != 2 || p.Cols != 3 {
		t.Fatalf("pooled %d × %d, want 2 × 3", p.Rows, p.Cols)
	}
	want := []float64{5.5, 7.5, 9, 20.5, 22.5, math.NaN()}
	for k, w := range want {
		if v := p.Values[k]; v != w && !(math.IsNaN(v) && math.IsNaN(w)) {
			t.Errorf("cell %d = %g, want %g", k, v, w)
		}
	}
	if p.X(0) != 0.5 || p.X(2) != 4 || p.Y(0) != 0.5 || p.Y(1) != 2 {
		t.Errorf("coordinates x %g %g, y %g %g; want 0.5 4, 0.5 2", p.X(0), p.X(2), p.Y(0), p.Y(1))
	}
}

// TestPage writes a page with a table of the paper and a note: escaped,
// every row present, closed.
func TestPage(t *testing.T) {
	tables := &analysis.Tables{K: 5, Models: 1,
		Table1: []analysis.Table1Row{{From: "a", To: "<b>", NIn: 4, NOut: 2}},
		Table2: []analysis.Table2Row{{Layer: "a", N: 4}, {Layer: "<b>", N: 2}}}
	var b strings.Builder
	WriteHead(&b, "x & y", CSS)
	Note(&b, "%d%% <done>", 50)
	t1, t2 := PaperTables(tables)
	WriteTable(&b, t1)
	WriteTable(&b, t2)
	WriteTail(&b)
	doc := b.String()
	for _, want := range []string{"<title>x &amp; y</title>", "<h1>x &amp; y</h1>", "50% &lt;done&gt;", "<caption>Table 1: routing</caption>", "<td>a → &lt;b&gt;</td>",
		"<td>&lt;b&gt;</td><td>2</td>", "</body>\n</html>\n"} {
		if !strings.Contains(doc, want) {
			t.Errorf("page lacks %q:\n%s", want, doc)
		}
	}
	if n := strings.Count(doc, "<tr>"); n != 2+3 {
		t.Errorf("%d table rows, want 5", n)
	}
	if uri := PNGURI([]byte{1, 2}); uri != "data:image/png;base64,AQI=" {
		t.Errorf("PNGURI: %s", uri)
	}
}
