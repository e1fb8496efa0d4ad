package complexity

import (
	"bytes"
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// figureRows are the rows of the figure: the passes plotted and their
// title.
var figureRows = []struct{ pass, title string }{
	{"fwd", "layer forward"},
	{"fwdbwd", "layer forward + backward"},
	{"routing-fwdbwd", "routing alone, forward + backward"},
}

// addGuides adds dashed grey lines of slope 1 and 2 (log-log) from the
// lowest point at the first x, to read the exponents against.
func addGuides(p *plot.Plot, axis []int, lowest float64) error {
	if math.IsInf(lowest, 1) {
		return nil
	}
	x0, x1 := float64(axis[0]), float64(axis[len(axis)-1])
	for _, g := range []struct {
		k    float64
		dash []vg.Length
	}{{1, []vg.Length{vg.Points(2), vg.Points(3)}}, {2, []vg.Length{vg.Points(6), vg.Points(3)}}} {
		k, dash := g.k, g.dash
		l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: lowest}, {X: x1, Y: lowest * math.Pow(x1/x0, k)}})
		if err != nil {
			return err
		}
		l.Color, l.Dashes = color.Gray{Y: 150}, dash
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("slope %g", k), l)
	}
	return nil
}

func passNames() []string {
	var s []string
	for _, r := range figureRows {
		s = append(s, r.pass)
	}
	return s
}

// PNG draws the figure of docs/complexity.md: median time per sample,
// log-log, one line per kind, against n at d = FixedD (left) and against d
// at n = FixedN (right), for the layer forward, the layer forward and
// backward, and the routing alone forward and backward (rows; a row
// without times at the fixed n or d is left out). The text
// is Liberation Sans, which gonum/plot embeds.
func (rp *Report) PNG() (png []byte, err error) {
	defer func() { // gonum/plot panics on some degenerate data
		if r := recover(); r != nil {
			err = fmt.Errorf("complexity: plot: %v", r)
		}
	}()
	kinds, _, ns, ds := rp.R.Axes()
	var plots [][]*plot.Plot
	for _, row := range figureRows {
		left, err := rp.panel(kinds, row.pass, row.title, true, ns, ds)
		if err != nil {
			return nil, err
		}
		right, err := rp.panel(kinds, row.pass, row.title, false, ns, ds)
		if err != nil {
			return nil, err
		}
		if left != nil && right != nil {
			plots = append(plots, []*plot.Plot{left, right})
		}
	}
	if len(plots) == 0 {
		return nil, fmt.Errorf("complexity: no times of the passes %v at d = %d and at n = %d to plot", passNames(), rp.FixedD, rp.FixedN)
	}
	w, h := 11*vg.Inch, vg.Length(len(plots))*13*vg.Inch/3
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(96), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(plots), Cols: 2, PadX: vg.Inch / 4, PadY: vg.Inch / 4, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 4}
	cs := plot.Align(plots, tiles, dc)
	for i := range plots {
		for j := range plots[i] {
			plots[i][j].Draw(cs[i][j])
		}
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("complexity: png: %w", err)
	}
	return buf.Bytes(), nil
}

// panel is one plot of the figure: pass against n (vsN) or against d; nil
// when there is nothing to plot.
func (rp *Report) panel(kinds []string, pass, title string, vsN bool, ns, ds []int) (*plot.Plot, error) {
	p := plot.New()
	axis, fixed := ds, fmt.Sprintf("n = %d", rp.FixedN)
	p.X.Label.Text = "d (capsule dimension)"
	if vsN {
		axis, fixed = ns, fmt.Sprintf("d = %d", rp.FixedD)
		p.X.Label.Text = "n (input and output capsules)"
	}
	p.Title.Text = fmt.Sprintf("%s, %s", title, fixed)
	p.Y.Label.Text = "µs per sample"
	for _, f := range []*text.Style{&p.Title.TextStyle, &p.X.Label.TextStyle, &p.Y.Label.TextStyle, &p.X.Tick.Label, &p.Y.Tick.Label, &p.Legend.TextStyle} {
		f.Font.Typeface, f.Font.Variant = "Liberation", "Sans"
	}
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	var ticks plot.ConstantTicks
	for _, v := range axis {
		ticks = append(ticks, plot.Tick{Value: float64(v), Label: fmt.Sprint(v)})
	}
	p.X.Tick.Marker, p.Y.Tick.Marker = ticks, plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = true, true
	drawn, lowest := 0, math.Inf(1) // lowest time at the first x
	for i, kind := range kinds {    // a kind keeps its color and glyph in every panel
		var xy plotter.XYs
		for _, v := range axis {
			k := Key{kind, rp.FixedN, v, pass}
			if vsN {
				k = Key{kind, v, rp.FixedD, pass}
			}
			if t, ok := rp.R.Value(k, "ns/sample"); ok && t > 0 {
				xy = append(xy, plotter.XY{X: float64(v), Y: t / 1e3})
			}
		}
		if len(xy) == 0 {
			continue
		}
		if xy[0].X == float64(axis[0]) {
			lowest = min(lowest, xy[0].Y)
		}
		l, s, err := plotter.NewLinePoints(xy)
		if err != nil {
			return nil, fmt.Errorf("complexity: plot %s, %s: %w", title, kind, err)
		}
		l.Color, s.Color, s.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
		p.Add(l, s)
		p.Legend.Add(kind, l, s)
		drawn++
	}
	if drawn == 0 {
		return nil, nil
	}
	if err := addGuides(p, axis, lowest); err != nil {
		return nil, fmt.Errorf("complexity: plot %s: %w", title, err)
	}
	return p, nil
}
