package figure

import (
	"math"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/plotter"
)

// within runs f in a goroutine and fails the test when it has not
// returned within d (a hang fails rather than blocks).
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: not done within %v", what, d)
	}
}

// TestHeatmapOverflow: a heatmap of values ±1e308 and ±Inf, its color
// scale from ZRange, is drawn within a second, those values grey.
func TestHeatmapOverflow(t *testing.T) {
	g := NewGrid(2, 3)
	copy(g.Values, []float64{1e308, -1e308, 0.5, math.Inf(1), math.NaN(), 0.25})
	lo, hi := ZRange(g.Values)
	var svg string
	var err error
	within(t, time.Second, "heatmap of ±1e308", func() {
		svg, err = Heatmap{Title: "h", Grid: g, Min: lo, Max: hi, Width: 300, Height: 200}.SVG()
	})
	if err != nil || !strings.HasPrefix(svg, "<svg") {
		t.Fatalf("heatmap: %v", err)
	}
	// Min and Max beyond the guard are replaced by the values' range.
	within(t, time.Second, "heatmap with Min −1e308, Max 1e308", func() {
		svg, err = Heatmap{Title: "h", Grid: g, Min: -1e308, Max: 1e308, Width: 300, Height: 200}.SVG()
	})
	if err != nil || !strings.HasPrefix(svg, "<svg") {
		t.Fatalf("heatmap with Min −1e308, Max 1e308: %v", err)
	}
}

// TestPlotSVGRange: a plot whose axis range overflows is an error naming
// the axis, returned at once; PlottableXY leaves such points out.
func TestPlotSVGRange(t *testing.T) {
	xy := plotter.XYs{{X: 1, Y: 1e308}, {X: 2, Y: -1e308}, {X: 3, Y: 0.5}, {X: math.Inf(1), Y: 1}, {X: 4, Y: math.NaN()}, {X: 5, Y: 1e30}}
	kept, dropped := PlottableXY(xy)
	if dropped != 4 || len(kept) != 2 || kept[0].X != 3 || kept[1].X != 5 {
		t.Errorf("PlottableXY: kept %v, dropped %d", kept, dropped)
	}
	p := NewPlot("t", "x", "y")
	s, err := plotter.NewScatter(xy[:3])
	if err != nil {
		t.Fatal(err)
	}
	p.Add(s)
	within(t, time.Second, "PlotSVG of ±1e308", func() { _, err = PlotSVG(p, 200, 200) })
	if err == nil || !strings.Contains(err.Error(), "y axis") || !strings.Contains(err.Error(), "MaxAbs") {
		t.Errorf("PlotSVG of ±1e308: %v", err)
	}
	if DroppedNote(0) != "" || DroppedNote(2) != " (2 value(s) not finite or beyond ±1e+30 left out)" {
		t.Errorf("DroppedNote: %q, %q", DroppedNote(0), DroppedNote(2))
	}
}
