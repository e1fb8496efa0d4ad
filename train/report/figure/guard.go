package figure

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// MaxAbs bounds the values a figure draws: a value that is not finite or
// whose magnitude exceeds it is left out (a line's point dropped, a
// heatmap's cell grey), and its caption says how many (DroppedNote). An
// axis spanning more than 2·MaxAbs could overflow: gonum/plot's tick
// search never ends on an infinite range (such as −1e308 to 1e308).
const MaxAbs = 1e30

// Plottable reports whether v is finite and |v| ≤ MaxAbs.
func Plottable(v float64) bool { return v >= -MaxAbs && v <= MaxAbs }

// PlottableXY returns the points of xy whose x and y are both Plottable,
// and how many others were dropped (NaN included).
func PlottableXY(xy plotter.XYs) (plotter.XYs, int) {
	out := make(plotter.XYs, 0, len(xy))
	for _, p := range xy {
		if Plottable(p.X) && Plottable(p.Y) {
			out = append(out, p)
		}
	}
	return out, len(xy) - len(out)
}

// Beyond counts the values of z that are infinite or beyond ±MaxAbs
// (NaN, a missing value, not counted).
func Beyond(z []float64) int {
	n := 0
	for _, v := range z {
		if !math.IsNaN(v) && !Plottable(v) {
			n++
		}
	}
	return n
}

// DroppedNote is a caption's note on n values left out by the guard of
// MaxAbs: "" for none.
func DroppedNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d value(s) not finite or beyond ±%g left out)", n, MaxAbs)
}

// checkAxes refuses a plot whose axis range is not Plottable: drawing it
// would not end. Every plot of this package and its callers goes through
// it (PlotSVG, Heatmap.SVG).
func checkAxes(p *plot.Plot) error {
	for _, a := range []struct {
		name   string
		lo, hi float64
	}{{"x", p.X.Min, p.X.Max}, {"y", p.Y.Min, p.Y.Max}} {
		if !Plottable(a.lo) || !Plottable(a.hi) {
			return fmt.Errorf("plot %q: %s axis range [%g, %g] is not finite or beyond ±%g (figure.MaxAbs)", p.Title.Text, a.name, a.lo, a.hi, MaxAbs)
		}
	}
	return nil
}

// guardedGrid is a Grid whose values that are not Plottable read as NaN
// (grey).
type guardedGrid struct{ Grid }

// Z returns the value of column c, row r, NaN when not Plottable
// (plotter.GridXYZ).
func (g guardedGrid) Z(c, r int) float64 {
	if v := g.Grid.Z(c, r); Plottable(v) {
		return v
	}
	return math.NaN()
}
