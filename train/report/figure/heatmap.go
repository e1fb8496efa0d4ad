package figure

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette"
	"gonum.org/v1/plot/palette/moreland"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Grid is a Rows×Cols matrix for a heatmap: the value of row r, column c
// at Values[r·Cols + c]. ColX and RowY give a column's and a row's
// coordinate; nil, the index.
type Grid struct {
	Rows, Cols int
	Values     []float64
	ColX, RowY func(int) float64
}

// NewGrid returns a Grid of rows×cols zeros with index coordinates.
func NewGrid(rows, cols int) Grid {
	return Grid{Rows: rows, Cols: cols, Values: make([]float64, rows*cols)}
}

// Set sets the value of row r, column c.
func (g Grid) Set(r, c int, v float64) { g.Values[r*g.Cols+c] = v }

// Dims returns the columns and rows (plotter.GridXYZ).
func (g Grid) Dims() (c, r int) { return g.Cols, g.Rows }

// Z returns the value of column c, row r (plotter.GridXYZ).
func (g Grid) Z(c, r int) float64 { return g.Values[r*g.Cols+c] }

// X returns column c's coordinate (plotter.GridXYZ).
func (g Grid) X(c int) float64 {
	if g.ColX == nil {
		return float64(c)
	}
	return g.ColX(c)
}

// Y returns row r's coordinate (plotter.GridXYZ).
func (g Grid) Y(r int) float64 {
	if g.RowY == nil {
		return float64(r)
	}
	return g.RowY(r)
}

// ZRange returns the minimum and maximum of the Plottable values of z
// (finite, within ±MaxAbs), widened by 0.5 on each side when they are
// equal, (0, 1) when there is none.
func ZRange(z []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, v := range z {
		if Plottable(v) {
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

// Heatmap is a rasterized heatmap of a Grid with a vertical color bar.
type Heatmap struct {
	Title, XLabel, YLabel string
	// BarLabel titles the color bar.
	BarLabel string
	Grid     Grid
	// Min and Max bound the color scale; values beyond are clamped, NaN
	// is grey, and so are values that are not Plottable (the caller's
	// caption says how many: DroppedNote(Beyond(Grid.Values))). A Min or
	// Max that is not Plottable, or Max ≤ Min, is replaced by the
	// values' ZRange.
	Min, Max float64
	// Width and Height are the figure's size in points.
	Width, Height vg.Length
	// XTicks and YTicks mark the axes; nil: IntTicks.
	XTicks, YTicks plot.Ticker
	// Diverging selects a blue–red map for a difference around 0 (else
	// black body, dark for low values).
	Diverging bool
}

// SVG draws the heatmap as an inline <svg> element.
func (h Heatmap) SVG() (svg string, err error) {
	defer func() { // gonum/plot panics on some degenerate data
		if r := recover(); r != nil {
			err = fmt.Errorf("plot: %v", r)
		}
	}()
	if !Plottable(h.Min) || !Plottable(h.Max) || !(h.Max > h.Min) {
		h.Min, h.Max = ZRange(h.Grid.Values)
	}
	// Every raster pixel is drawn sharp (image-rendering: pixelated), so
	// that a dark capsule's row stays a row: a Grid of more rows or
	// columns than the plot has room for is averaged down first, not left
	// to the browser's smoothing, which blurs rows into their neighbours.
	if mc, mr := HeatmapCells(h.Width, h.Height); h.Grid.Cols > mc || h.Grid.Rows > mr {
		h.Grid = h.Grid.Pool((h.Grid.Rows+mr-1)/mr, (h.Grid.Cols+mc-1)/mc)
	}
	var cm palette.ColorMap = moreland.ExtendedBlackBody()
	if h.Diverging {
		cm = moreland.SmoothBlueRed()
	}
	cm.SetMin(h.Min)
	cm.SetMax(h.Max)
	pal := cm.Palette(255)
	colors := pal.Colors()
	hm := plotter.NewHeatMap(guardedGrid{h.Grid}, pal)
	hm.Min, hm.Max = h.Min, h.Max
	hm.Underflow, hm.Overflow = colors[0], colors[len(colors)-1]
	hm.NaN = color.RGBA{200, 200, 200, 255}
	hm.Rasterized = true
	p := NewPlot(h.Title, h.XLabel, h.YLabel)
	p.X.Tick.Marker, p.Y.Tick.Marker = IntTicks{}, IntTicks{}
	if h.XTicks != nil {
		p.X.Tick.Marker = h.XTicks
	}
	if h.YTicks != nil {
		p.Y.Tick.Marker = h.YTicks
	}
	p.Add(rasterHeat{hm})
	cb := NewPlot("", "", h.BarLabel)
	cb.HideX()
	cb.Add(&plotter.ColorBar{ColorMap: cm, Vertical: true})
	for _, q := range []*plot.Plot{p, cb} {
		if err := checkAxes(q); err != nil {
			return "", err
		}
	}
	const barW = 70
	w := h.Width
	svg, err = SVG(w, h.Height, func(c draw.Canvas) {
		p.Draw(draw.Crop(c, 0, -barW, 0, 0))
		cb.Draw(draw.Crop(c, w-barW+8, 0, 28, -22))
	})
	return svg, err
}

// HeatmapCells returns the most columns and rows a Heatmap of width w and
// height h draws one raster pixel each (about its plot area in points):
// a Grid with more is averaged in blocks down to these (Grid.Pool) before
// it is drawn.
func HeatmapCells(w, h vg.Length) (cols, rows int) {
	return max(1, int(0.8*float64(w))), max(1, int(0.6*float64(h)))
}

// Pool returns g averaged in blocks of fr rows × fc columns (the last
// block of each axis may be smaller): each cell is the mean of the block's
// Plottable values (NaN when it has none), at the mean coordinate of its
// rows and columns.
func (g Grid) Pool(fr, fc int) Grid {
	fr, fc = max(1, fr), max(1, fc)
	rows, cols := (g.Rows+fr-1)/fr, (g.Cols+fc-1)/fc
	p := NewGrid(rows, cols)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			var sum float64
			n := 0
			for i := r * fr; i < min(g.Rows, (r+1)*fr); i++ {
				for j := c * fc; j < min(g.Cols, (c+1)*fc); j++ {
					if v := g.Z(j, i); Plottable(v) {
						sum += v
						n++
					}
				}
			}
			v := math.NaN()
			if n > 0 {
				v = sum / float64(n)
			}
			p.Set(r, c, v)
		}
	}
	mean := func(f func(int) float64, lo, hi int) float64 {
		var s float64
		for i := lo; i < hi; i++ {
			s += f(i)
		}
		return s / float64(hi-lo)
	}
	p.ColX = func(c int) float64 { return mean(g.X, c*fc, min(g.Cols, (c+1)*fc)) }
	p.RowY = func(r int) float64 { return mean(g.Y, r*fr, min(g.Rows, (r+1)*fr)) }
	return p
}

// rasterHeat is a rasterized heatmap without gonum's glyph box per cell
// (zero-sized, and hundreds of megabytes for a telemetry heatmap).
type rasterHeat struct{ *plotter.HeatMap }

// GlyphBoxes returns none (plot.GlyphBoxer).
func (rasterHeat) GlyphBoxes(*plot.Plot) []plot.GlyphBox { return nil }

// IntTicks are gonum's default ticks at integer values, labelled as
// integers (capsule indices, epochs).
type IntTicks struct{}

// Ticks returns the integer ticks of [lo, hi] (plot.Ticker).
func (IntTicks) Ticks(lo, hi float64) []plot.Tick {
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

// LabelTicks name the integer positions 0, 1, …: position i is labelled
// LabelTicks[i].
type LabelTicks []string

// Ticks returns the named positions within half a step of [lo, hi]
// (plot.Ticker).
func (l LabelTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for i, s := range l {
		if float64(i) >= lo-0.5 && float64(i) <= hi+0.5 {
			ts = append(ts, plot.Tick{Value: float64(i), Label: s})
		}
	}
	return ts
}

// Ensure the types satisfy gonum's interfaces.
var (
	_ plotter.GridXYZ = Grid{}
	_ plot.Ticker     = IntTicks{}
	_ plot.Ticker     = LabelTicks{}
)
