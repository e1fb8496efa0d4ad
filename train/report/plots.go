package report

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/capstan-ml/capstan/train/report/figure"
)

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

// lineSeries is one named curve.
type lineSeries struct {
	name string
	xy   plotter.XYs
}

// Where a plot's legend goes.
const (
	legendBottomLeft = iota
	legendBottomRight
	legendTopRight
)

// linesSVG draws one line with points per series, in plotutil's colors
// and dashes, with a legend. Points that are not figure.Plottable (an
// infinite or overflowing loss) are left out; it returns how many, for
// the caption (figure.DroppedNote).
func linesSVG(title, xLabel, yLabel string, series []lineSeries, w, h vg.Length, yMin, yMax float64, intX bool, legend int) (string, int, error) {
	p := figure.NewPlot(title, xLabel, yLabel)
	if intX {
		p.X.Tick.Marker = figure.IntTicks{}
	}
	dropped := 0
	for k, s := range series {
		xy, n := figure.PlottableXY(s.xy)
		dropped += n
		if len(xy) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return "", 0, fmt.Errorf("%s: %w", s.name, err)
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
	svg, err := figure.PlotSVG(p, w, h)
	return svg, dropped, err
}

// finiteXY returns the points whose y is a number: NaN (not recorded,
// undefined) is left out silently; linesSVG leaves out and counts the
// infinite and overflowing ones.
func finiteXY(xs, ys []float64) plotter.XYs {
	var out plotter.XYs
	for i := range xs {
		if !math.IsNaN(ys[i]) {
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
		figure.Note(b, "No statistics given.")
		return nil
	}
	of := ""
	if in.StatsOf != "" {
		of = " of " + in.StatsOf
	}
	figure.Note(b, "Statistics%s over %d image(s). Couplings: the mean and standard deviation over the images of every coupling c[i,j] of input capsule i to output capsule j (a std near 0 means the routing is the same for every image: no dynamic parse tree). Norms: each capsule's mean norm with ± one std; dead capsules (mean ≤ ε₁ and std ≤ ε₂) are red on a red band.", of, r.Layers[0].K)
	for _, R := range r.Routing {
		fmt.Fprintf(b, "<h3>Couplings %s → %s (%d × %d)</h3>\n<div class=\"row\">\n", figure.Esc(R.From), figure.Esc(R.To), R.NIn, R.NOut)
		for _, m := range []struct {
			what string
			z    []float64
		}{{"mean", R.CouplingMean}, {"std", R.CouplingStd}} {
			g := figure.NewGrid(R.NOut, R.NIn)
			for i := 0; i < R.NIn; i++ {
				for j := 0; j < R.NOut; j++ {
					g.Set(j, i, m.z[i*R.NOut+j])
				}
			}
			_, hi := figure.ZRange(m.z)
			lo, hi := 0.0, math.Max(hi, 1e-6)
			h := vg.Length(math.Min(math.Max(float64(R.NOut)*16+90, 200), 420))
			svg, err := figure.Heatmap{Title: fmt.Sprintf("coupling %s, %s → %s", m.what, R.From, R.To), XLabel: "input capsule i (" + R.From + ")",
				YLabel: "output capsule j (" + R.To + ")", BarLabel: m.what + " c[i,j]", Grid: g, Min: lo, Max: hi, Width: 400, Height: h}.SVG()
			if err != nil {
				return err
			}
			figure.Write(b, svg, fmt.Sprintf("%s of c[i,j] over the images", m.what)+figure.DroppedNote(figure.Beyond(m.z)))
		}
		b.WriteString("</div>\n")
	}
	b.WriteString("<h3>Capsule norms</h3>\n<div class=\"row\">\n")
	for _, L := range r.Layers {
		p := figure.NewPlot(fmt.Sprintf("%s: %d dead of %d", L.Name, L.CDS, L.N), "capsule", "norm (mean ± std)")
		p.X.Tick.Marker = figure.IntTicks{}
		p.Add(bars{mean: L.NormMean, std: L.NormStd, dead: L.Dead})
		w := vg.Length(math.Min(math.Max(float64(L.N)*14+80, 320), 940))
		svg, err := figure.PlotSVG(p, w, 220)
		if err != nil {
			return err
		}
		figure.Write(b, svg, fmt.Sprintf("%s: mean norm of each of %d capsules, ± std; cnm %.4g, %d dead", L.Name, L.N, L.CNM, L.CDS))
	}
	b.WriteString("</div>\n")
	return nil
}

// writeInvariance draws Fig. 4: per family, corr against magnitude, one
// line per layer.
func (in *Input) writeInvariance(b *strings.Builder) error {
	if len(in.Invariance) == 0 {
		figure.Note(b, "No invariance measured (tools/analyze -invariance all).")
		return nil
	}
	figure.Note(b, "Per transformation family, the mean over a layer's capsules of the correlation of each capsule's norms on the original and the transformed images, against the transformation's magnitude (1: the capsule's activation does not change; dead capsules left out). One line per capsule layer; %d image pair(s) per point.", in.Invariance[0].K)
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
		svg, dropped, err := linesSVG(f, magnitudeUnit(f), "corr (original, transformed)", series, 420, 300, 0, 1.02, false, legendBottomLeft)
		if err != nil {
			return err
		}
		figure.Write(b, svg, "viewpoint invariance under "+f+figure.DroppedNote(dropped))
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
		figure.Note(b, "No metrics given (tools/analyze -metrics FILE; a run writes metrics.ndjson next to its checkpoint).")
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
		svg, dropped, err := linesSVG(p.title, "epoch", p.y, p.s, 320, 260, math.NaN(), math.NaN(), true, p.legend)
		if err != nil {
			return err
		}
		figure.Write(b, svg, p.caption+figure.DroppedNote(dropped))
	}
	b.WriteString("</div>\n")
	return nil
}

// Ensure the plotters satisfy gonum's interfaces.
var (
	_ plot.Plotter    = bars{}
	_ plot.DataRanger = bars{}
)
