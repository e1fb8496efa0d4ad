package report

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"codeberg.org/go-fonts/liberation/liberationsansregular"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// fontFace embeds the plots' font, so that text is measured and shown
// alike without a network or an installed font.
func fontFace() string {
	return "@font-face{font-family:\"Liberation Sans\";src:url(data:font/ttf;base64," +
		base64.StdEncoding.EncodeToString(liberationsansregular.TTF) + ") format(\"truetype\")}\n"
}

// newPlot returns a plot whose every text uses Liberation Sans.
func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, y
	for _, f := range []*text.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle, &p.X.Tick.Label, &p.Y.Tick.Label, &p.Legend.TextStyle} {
		f.Font.Typeface, f.Font.Variant = "Liberation", "Sans"
	}
	p.Title.TextStyle.Font.Size = 12
	return p
}

// svgOf renders drawing onto an SVG canvas of w×h points and returns the
// <svg> element, without the XML prologue, for inlining.
func svgOf(w, h vg.Length, drawing func(draw.Canvas)) (s string, err error) {
	defer func() { // gonum/plot panics on some degenerate data
		if r := recover(); r != nil {
			err = fmt.Errorf("plot: %v", r)
		}
	}()
	c := vgsvg.New(w, h)
	drawing(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	out := buf.String()
	if i := strings.Index(out, "<svg"); i >= 0 {
		out = out[i:]
	}
	// A raster (heatmap, color bar) fills its rectangle: SVG would keep
	// its aspect ratio.
	return strings.ReplaceAll(out, "<image ", `<image preserveAspectRatio="none" `), nil
}

func plotSVG(p *plot.Plot, w, h vg.Length) (string, error) {
	return svgOf(w, h, func(c draw.Canvas) { p.Draw(c) })
}

func figure(b *strings.Builder, svg, caption string) {
	fmt.Fprintf(b, "<figure>\n%s<figcaption>%s</figcaption>\n</figure>\n", svg, esc(caption))
}

// grid is a rows×cols matrix for a heatmap: z[r·cols + c], x the column's
// coordinate, y the row's.
type grid struct {
	rows, cols int
	z          []float64
	x          func(c int) float64
	y          func(r int) float64
}

func (g grid) Dims() (int, int)   { return g.cols, g.rows }
func (g grid) Z(c, r int) float64 { return g.z[r*g.cols+c] }
func (g grid) X(c int) float64    { return g.x(c) }
func (g grid) Y(r int) float64    { return g.y(r) }
func index(i int) float64         { return float64(i) }
func newGrid(rows, cols int) grid {
	return grid{rows: rows, cols: cols, z: make([]float64, rows*cols), x: index, y: index}
}
func (g grid) set(r, c int, v float64) { g.z[r*g.cols+c] = v }

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
	if hi-lo < 1e-12*math.Max(1, math.Abs(hi)) {
		return lo - 0.5, hi + 0.5
	}
	return lo, hi
}

// heatmapSVG draws g as a rasterized heatmap between lo and hi (values
// beyond are clamped) with a vertical color bar titled barLabel.
func heatmapSVG(title, xLabel, yLabel, barLabel string, g grid, lo, hi float64, w, h vg.Length) (string, error) {
	cm := moreland.ExtendedBlackBody()
	cm.SetMin(lo)
	cm.SetMax(hi)
	pal := cm.Palette(255)
	colors := pal.Colors()
	hm := plotter.NewHeatMap(g, pal)
	hm.Min, hm.Max = lo, hi
	hm.Underflow, hm.Overflow = colors[0], colors[len(colors)-1]
	hm.NaN = color.RGBA{200, 200, 200, 255}
	hm.Rasterized = true
	p := newPlot(title, xLabel, yLabel)
	p.X.Tick.Marker, p.Y.Tick.Marker = intTicks{}, intTicks{}
	p.Add(rasterHeat{hm})
	cb := newPlot("", "", barLabel)
	cb.HideX()
	cb.Add(&plotter.ColorBar{ColorMap: cm, Vertical: true})
	const barW = 70
	svg, err := svgOf(w, h, func(c draw.Canvas) {
		p.Draw(draw.Crop(c, 0, -barW, 0, 0))
		cb.Draw(draw.Crop(c, w-barW+8, 0, 28, -22))
	})
	// Pixels stay sharp when enlarged, but a raster of more rows or
	// columns than the plot has points is averaged, not decimated: a
	// dead capsule's row must not drop out.
	if float64(g.rows) > 0.6*float64(h) || float64(g.cols) > 0.8*float64(w) {
		svg = strings.Replace(svg, "<image ", `<image style="image-rendering:auto" `, 1)
	}
	return svg, err
}

// rasterHeat is a rasterized heatmap without gonum's glyph box per cell
// (zero-sized, and hundreds of megabytes for a telemetry heatmap).
type rasterHeat struct{ *plotter.HeatMap }

// GlyphBoxes returns none (plot.GlyphBoxer).
func (rasterHeat) GlyphBoxes(*plot.Plot) []plot.GlyphBox { return nil }

// bars is a bar chart of per-capsule means with ±std error bars; dead
// capsules are red, on a light red band.
type bars struct {
	mean, std []float64
	dead      []bool
}

var (
	aliveColor = color.RGBA{0x31, 0x6c, 0xb0, 255}
	deadColor  = color.RGBA{0xd0, 0x10, 0x10, 255}
	deadBand   = color.RGBA{0xff, 0xd8, 0xd8, 255}
)

// Plot draws the bars (plot.Plotter).
func (b bars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	y0 := trY(0)
	for i, m := range b.mean {
		x0, x1 := trX(float64(i)-0.4), trX(float64(i)+0.4)
		if b.dead[i] {
			lo, hi := trX(float64(i)-0.5), trX(float64(i)+0.5)
			c.FillPolygon(deadBand, []vg.Point{{X: lo, Y: c.Min.Y}, {X: hi, Y: c.Min.Y}, {X: hi, Y: c.Max.Y}, {X: lo, Y: c.Max.Y}})
		}
		col := aliveColor
		if b.dead[i] {
			col = deadColor
		}
		y := trY(m)
		if y-y0 < 0.6 && b.dead[i] { // keep a dead capsule's bar visible
			y = y0 + 0.6
		}
		c.FillPolygon(col, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y}, {X: x0, Y: y}})
		if s := b.std[i]; s > 0 {
			xm := trX(float64(i))
			ls := draw.LineStyle{Color: color.Black, Width: vg.Points(0.7)}
			if len(b.mean) > 64 { // many thin bars: lighter error bars
				ls = draw.LineStyle{Color: color.RGBA{0x60, 0x60, 0x60, 0xff}, Width: vg.Points(0.35)}
			}
			lo, hi := trY(math.Max(m-s, 0)), trY(m+s)
			c.StrokeLine2(ls, xm, lo, xm, hi)
			if x1-x0 > 4 {
				cap := (x1 - x0) / 4
				c.StrokeLine2(ls, xm-cap, lo, xm+cap, lo)
				c.StrokeLine2(ls, xm-cap, hi, xm+cap, hi)
			}
		}
	}
}

// DataRange returns the bars' extent (plot.DataRanger).
func (b bars) DataRange() (xmin, xmax, ymin, ymax float64) {
	ymax = 1e-3
	for i, m := range b.mean {
		ymax = math.Max(ymax, m+b.std[i])
	}
	return -0.5, float64(len(b.mean)) - 0.5, 0, ymax * 1.05
}

// intTicks are gonum's default ticks at integer values, labelled as
// integers (capsule indices, epochs).
type intTicks struct{}

// Ticks returns the integer ticks of [lo, hi] (plot.Ticker).
func (intTicks) Ticks(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range (plot.DefaultTicks{}).Ticks(lo, hi) {
		if t.Value != math.Trunc(t.Value) {
			continue
		}
		if t.Label != "" {
			t.Label = strconv.FormatFloat(t.Value, 'f', 0, 64)
		}
		out = append(out, t)
	}
	return out
}

// lineSeries is one named curve.
type lineSeries struct {
	name string
	xy   plotter.XYs
}

// linesSVG draws one line with points per series, in plotutil's colors
// and dashes, with a legend.
// Where a plot's legend goes.
const (
	legendBottomLeft = iota
	legendBottomRight
	legendTopRight
)

func linesSVG(title, xLabel, yLabel string, series []lineSeries, w, h vg.Length, yMin, yMax float64, intX bool, legend int) (string, error) {
	p := newPlot(title, xLabel, yLabel)
	if intX {
		p.X.Tick.Marker = intTicks{}
	}
	for k, s := range series {
		if len(s.xy) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(s.xy)
		if err != nil {
			return "", fmt.Errorf("%s: %w", s.name, err)
		}
		l.Color, pts.Color = plotutil.Color(k), plotutil.Color(k)
		l.Dashes = plotutil.Dashes(k)
		l.Width = vg.Points(1.5)
		pts.Shape = plotutil.Shape(k)
		p.Add(l, pts)
		p.Legend.Add(s.name, l, pts)
	}
	switch legend {
	case legendBottomLeft:
		p.Legend.Left, p.Legend.XOffs, p.Legend.YOffs = true, 8, 8
	case legendBottomRight:
		p.Legend.XOffs, p.Legend.YOffs = -8, 8
	default:
		p.Legend.Top, p.Legend.XOffs, p.Legend.YOffs = true, -8, -8
	}
	if !math.IsNaN(yMin) {
		p.Y.Min = yMin
	}
	if !math.IsNaN(yMax) {
		p.Y.Max = yMax
	}
	return plotSVG(p, w, h)
}

// finiteXY returns the points whose y is finite.
func finiteXY(xs, ys []float64) plotter.XYs {
	var out plotter.XYs
	for i := range xs {
		if !math.IsNaN(ys[i]) && !math.IsInf(ys[i], 0) {
			out = append(out, plotter.XY{X: xs[i], Y: ys[i]})
		}
	}
	return out
}

// writeStats draws Fig. 3: per routing layer the mean and std of every
// coupling as heatmaps, per capsule layer the mean norm with ±std bars,
// dead capsules in red.
func (in *Input) writeStats(b *strings.Builder) error {
	r := in.Stats
	if r == nil {
		note(b, "No statistics given.")
		return nil
	}
	of := ""
	if in.StatsOf != "" {
		of = " of " + in.StatsOf
	}
	note(b, "Statistics%s over %d image(s). Couplings: the mean and standard deviation over the images of every coupling c[i,j] of input capsule i to output capsule j (a std near 0 means the routing is the same for every image: no dynamic parse tree). Norms: each capsule's mean norm with ± one std; dead capsules (mean ≤ ε₁ and std ≤ ε₂) are red on a red band.", of, r.Layers[0].K)
	for _, R := range r.Routing {
		fmt.Fprintf(b, "<h3>Couplings %s → %s (%d × %d)</h3>\n<div class=\"row\">\n", esc(R.From), esc(R.To), R.NIn, R.NOut)
		for _, m := range []struct {
			what string
			z    []float64
		}{{"mean", R.CouplingMean}, {"std", R.CouplingStd}} {
			g := newGrid(R.NOut, R.NIn)
			for i := 0; i < R.NIn; i++ {
				for j := 0; j < R.NOut; j++ {
					g.set(j, i, m.z[i*R.NOut+j])
				}
			}
			_, hi := zRange(m.z)
			lo, hi := 0.0, math.Max(hi, 1e-6)
			h := vg.Length(math.Min(math.Max(float64(R.NOut)*16+90, 200), 420))
			svg, err := heatmapSVG(fmt.Sprintf("coupling %s, %s → %s", m.what, R.From, R.To), "input capsule i ("+R.From+")", "output capsule j ("+R.To+")", m.what+" c[i,j]", g, lo, hi, 400, h)
			if err != nil {
				return err
			}
			figure(b, svg, fmt.Sprintf("%s of c[i,j] over the images", m.what))
		}
		b.WriteString("</div>\n")
	}
	b.WriteString("<h3>Capsule norms</h3>\n<div class=\"row\">\n")
	for _, L := range r.Layers {
		p := newPlot(fmt.Sprintf("%s: %d dead of %d", L.Name, L.CDS, L.N), "capsule", "norm (mean ± std)")
		p.X.Tick.Marker = intTicks{}
		p.Add(bars{mean: L.NormMean, std: L.NormStd, dead: L.Dead})
		w := vg.Length(math.Min(math.Max(float64(L.N)*14+80, 320), 940))
		svg, err := plotSVG(p, w, 220)
		if err != nil {
			return err
		}
		figure(b, svg, fmt.Sprintf("%s: mean norm of each of %d capsules, ± std; cnm %.4g, %d dead", L.Name, L.N, L.CNM, L.CDS))
	}
	b.WriteString("</div>\n")
	return nil
}

// writeInvariance draws Fig. 4: per family, corr against magnitude, one
// line per layer.
func (in *Input) writeInvariance(b *strings.Builder) error {
	if len(in.Invariance) == 0 {
		note(b, "No invariance measured (tools/analyze -invariance all).")
		return nil
	}
	note(b, "Per transformation family, the mean over a layer's capsules of the correlation of each capsule's norms on the original and the transformed images, against the transformation's magnitude (1: the capsule's activation does not change; dead capsules left out). One line per capsule layer; %d image pair(s) per point.", in.Invariance[0].K)
	var families []string
	for _, p := range in.Invariance {
		if !containsString(families, p.Family) {
			families = append(families, p.Family)
		}
	}
	b.WriteString("<div class=\"row\">\n")
	for _, f := range families {
		var pts []InvariancePoint
		for _, p := range in.Invariance {
			if p.Family == f {
				pts = append(pts, p)
			}
		}
		var series []lineSeries
		for l, L := range pts[0].Layers {
			xs, ys := make([]float64, len(pts)), make([]float64, len(pts))
			for k, p := range pts {
				xs[k], ys[k] = p.Magnitude, p.Layers[l].Corr
			}
			series = append(series, lineSeries{L.Name, finiteXY(xs, ys)})
		}
		svg, err := linesSVG(f, magnitudeUnit(f), "corr (original, transformed)", series, 420, 300, 0, 1.02, false, legendBottomLeft)
		if err != nil {
			return err
		}
		figure(b, svg, "viewpoint invariance under "+f)
	}
	b.WriteString("</div>\n")
	return nil
}

func containsString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func magnitudeUnit(family string) string {
	switch family {
	case "rotation", "shear":
		return "angle (degrees)"
	case "scale":
		return "scale − 1"
	case "translate-x", "translate-y":
		return "shift (pixels)"
	}
	return "magnitude"
}

// writeTraining draws the losses and accuracies per epoch.
func (in *Input) writeTraining(b *strings.Builder) error {
	if len(in.Metrics) == 0 {
		note(b, "No metrics given (tools/analyze -metrics FILE; a run writes metrics.ndjson next to its checkpoint).")
		return nil
	}
	xs := make([]float64, len(in.Metrics))
	col := func(f func(Epoch) float64) []float64 {
		ys := make([]float64, len(in.Metrics))
		for k, e := range in.Metrics {
			ys[k] = f(e)
		}
		return ys
	}
	for k, e := range in.Metrics {
		xs[k] = float64(e.Epoch)
	}
	b.WriteString("<div class=\"row\">\n")
	loss := []lineSeries{
		{"loss", finiteXY(xs, col(func(e Epoch) float64 { return e.Loss }))},
		{"margin loss", finiteXY(xs, col(func(e Epoch) float64 { return e.MarginLoss }))},
	}
	recon := []lineSeries{{"reconstruction loss", finiteXY(xs, col(func(e Epoch) float64 { return e.ReconLoss }))}}
	acc := []lineSeries{
		{"train", finiteXY(xs, col(func(e Epoch) float64 { return e.TrainAcc }))},
		{"validation", finiteXY(xs, col(func(e Epoch) float64 { return e.ValAcc }))},
		{"test", finiteXY(xs, col(func(e Epoch) float64 { return e.TestAcc }))},
	}
	for _, p := range []struct {
		title, y, caption string
		s                 []lineSeries
		legend            int
	}{
		{"loss", "loss (mean per batch)", "total loss L_m + α·L_r and margin loss L_m per epoch", loss, legendTopRight},
		{"reconstruction loss", "L_r (sum of squares per image)", "reconstruction loss per epoch", recon, legendTopRight},
		{"accuracy", "accuracy", "accuracy per epoch", acc, legendBottomRight},
	} {
		svg, err := linesSVG(p.title, "epoch", p.y, p.s, 320, 260, math.NaN(), math.NaN(), true, p.legend)
		if err != nil {
			return err
		}
		figure(b, svg, p.caption)
	}
	b.WriteString("</div>\n")
	return nil
}

// Ensure the plotters satisfy gonum's interfaces.
var (
	_ plot.Plotter     = bars{}
	_ plot.DataRanger  = bars{}
	_ plotter.GridXYZ  = grid{}
	_ palette.ColorMap = moreland.ExtendedBlackBody()
)
