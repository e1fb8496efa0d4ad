package report

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/plot/vg"

	"github.com/capstan-ml/capstan/train/report/figure"
	"github.com/capstan-ml/capstan/train/telemetry"
)

// MaxPairRows is the most (j, i) pairs a gradient heatmap shows one row
// each; a larger routing layer shows one row per input capsule i, the
// largest gradient over its outputs j.
const MaxPairRows = 1024

// validateTelemetry checks every record against the header's layers.
func validateTelemetry(t *telemetry.Log) error {
	ls := t.Header.Layers
	if len(ls) == 0 {
		return fmt.Errorf("report: telemetry of %s: no layer in the header", t.Header.Model)
	}
	for l, L := range ls {
		if L.N <= 0 || L.D <= 0 {
			return fmt.Errorf("report: telemetry: layer %d (%s) of %d capsules of dimension %d", l, L.Name, L.N, L.D)
		}
	}
	for k, r := range t.Records {
		if len(r.MaxNorm) != len(ls) {
			return fmt.Errorf("report: telemetry record %d (step %d): %d max_norm layers, the header has %d", k, r.Step, len(r.MaxNorm), len(ls))
		}
		for l, v := range r.MaxNorm {
			if len(v) != ls[l].N {
				return fmt.Errorf("report: telemetry record %d (step %d): %d max_norm values for layer %s of %d capsules", k, r.Step, len(v), ls[l].Name, ls[l].N)
			}
		}
		if len(r.GradW) != 0 && len(r.GradW) != len(ls)-1 {
			return fmt.Errorf("report: telemetry record %d (step %d): %d grad_w layers, want %d routing layers", k, r.Step, len(r.GradW), len(ls)-1)
		}
		for l, g := range r.GradW {
			if want := ls[l].N * ls[l+1].N; len(g) != want {
				return fmt.Errorf("report: telemetry record %d (step %d): %d grad_w values for %s → %s, want %d", k, r.Step, len(g), ls[l].Name, ls[l+1].Name, want)
			}
		}
		if r.WNorm != nil && len(r.WNorm) != len(ls)-1 {
			return fmt.Errorf("report: telemetry record %d (step %d): %d w_norm layers, want %d routing layers", k, r.Step, len(r.WNorm), len(ls)-1)
		}
		for l, w := range r.WNorm {
			if want := ls[l].N * ls[l+1].N; len(w) != want {
				return fmt.Errorf("report: telemetry record %d (step %d): %d w_norm values for %s → %s, want %d", k, r.Step, len(w), ls[l].Name, ls[l+1].Name, want)
			}
		}
	}
	return nil
}

// pooling maps records to at most maxCols columns: column c max-pools
// records [lo(c), lo(c+1)).
type pooling struct {
	n, cols   int
	s0, s1    int // first and last step
	perColumn float64
}

func newPooling(recs []telemetry.Record, maxCols int) pooling {
	n := len(recs)
	p := pooling{n: n, cols: min(n, maxCols), s0: recs[0].Step, s1: recs[n-1].Step}
	if p.s1 < p.s0 {
		p.s0, p.s1 = 1, n
	}
	p.perColumn = float64(n) / float64(p.cols)
	return p
}

func (p pooling) lo(c int) int { return c * p.n / p.cols }

// x is column c's step coordinate.
func (p pooling) x(c int) float64 {
	return float64(p.s0) - 0.5 + (float64(c)+0.5)*float64(p.s1-p.s0+1)/float64(p.cols)
}

// pool fills g (rows × p.cols) with the max over each column's records of
// value(record, row); NaN values (a record without the figure) are left
// out, a column of none is NaN.
func (p pooling) pool(g figure.Grid, recs []telemetry.Record, value func(r *telemetry.Record, row int) float64) {
	for c := 0; c < p.cols; c++ {
		for row := 0; row < g.Rows; row++ {
			m := math.NaN()
			for k := p.lo(c); k < p.lo(c+1); k++ {
				if v := value(&recs[k], row); !math.IsNaN(v) && !(v <= m) {
					m = v
				}
			}
			g.Set(row, c, m)
		}
	}
}

// telemetryWidth is the width of the telemetry heatmaps in points.
const telemetryWidth = 620

// writeTelemetry draws the appendix figures: per capsule layer the
// largest norm of every capsule per step, per routing layer the margin
// loss's gradient norm of every votes matrix W[j,i] per step.
func (in *Input) writeTelemetry(b *strings.Builder) error {
	t := in.Telemetry
	if t == nil && in.TelemetryNote != "" {
		figure.Note(b, "%s", in.TelemetryNote)
		return nil
	}
	if t == nil || len(t.Records) == 0 {
		figure.Note(b, "No telemetry given (tools/analyze -telemetry FILE; a run records %s next to its checkpoint when telemetry is on).", telemetry.GzipName)
		return nil
	}
	recs := t.Records
	// At most the columns the figure draws one pixel each: pooled here,
	// by max as the caption says, not averaged again by the figure.
	cols, _ := figure.HeatmapCells(telemetryWidth, 0)
	p := newPooling(recs, min(in.MaxColumns, cols))
	ls := t.Header.Layers
	telemetryIntro(b, t, p)
	b.WriteString("<h3>Largest capsule norm over the batch, per step</h3>\n<div class=\"row\">\n")
	for l, L := range ls {
		g := figure.NewGrid(L.N, p.cols)
		g.ColX = p.x
		p.pool(g, recs, func(r *telemetry.Record, i int) float64 { return float64(r.MaxNorm[l][i]) })
		_, hi := figure.ZRange(g.Values)
		h := vg.Length(math.Min(math.Max(float64(L.N)*5+90, 180), 420))
		svg, err := figure.Heatmap{Title: fmt.Sprintf("max norm, %s (%d capsules)", L.Name, L.N), XLabel: "step", YLabel: "capsule", BarLabel: "max norm",
			Grid: g, Min: 0, Max: math.Max(hi, 1e-6), Width: telemetryWidth, Height: h}.SVG()
		if err != nil {
			return err
		}
		figure.Write(b, svg, fmt.Sprintf("%s: each capsule's largest norm over the step's batch", L.Name)+figure.DroppedNote(figure.Beyond(g.Values)))
	}
	b.WriteString("</div>\n")
	if err := in.writeDark(b); err != nil {
		return err
	}
	b.WriteString("<h3>Margin-loss gradient ‖∂L_m/∂W[j,i]‖ per step (log₁₀)</h3>\n<div class=\"row\">\n")
	for l := 1; l < len(ls); l++ {
		if err := gradHeatmap(b, recs, ls, l, p); err != nil {
			return err
		}
	}
	b.WriteString("</div>\n")
	return nil
}

// telemetryIntro writes the note that opens the telemetry figures: what
// the log covers and how its steps are pooled into columns.
func telemetryIntro(b *strings.Builder, t *telemetry.Log, p pooling) {
	recs := t.Records
	if pl := t.Header.Pool; pl != nil {
		figure.Note(b, "%d training step(s) of %s (steps %d–%d, epochs %d–%d, batch %d), kept max-pooled by %d into %d record(s) (the committed form of a finished run: each record holds the largest values over %d consecutive steps, from the step it names), drawn in %d column(s) of %.3g record(s). A capsule that stays dark has no activation on any image of its steps: a dead capsule, whose votes matrices get no gradient (starvation).",
			pl.Records, t.Header.Model, pl.First, pl.Last, recs[0].Epoch, recs[len(recs)-1].Epoch, t.Header.Batch, pl.Window, len(recs), pl.Window, p.cols, p.perColumn)
	} else {
		figure.Note(b, "%d training step(s) of %s (steps %d–%d, epochs %d–%d, batch %d), max-pooled into %d column(s) of %.3g step(s). A capsule that stays dark has no activation on any image of its steps: a dead capsule, whose votes matrices get no gradient (starvation).",
			len(recs), t.Header.Model, recs[0].Step, recs[len(recs)-1].Step, recs[0].Epoch, recs[len(recs)-1].Epoch, t.Header.Batch, p.cols, p.perColumn)
	}
}

// gradHeatmap draws routing layer l's margin-loss gradient norms per step
// (log₁₀; one row per (j, i) pair, or per input capsule for large layers).
func gradHeatmap(b *strings.Builder, recs []telemetry.Record, ls []telemetry.Layer, l int, p pooling) error {
	nIn, nOut := ls[l-1].N, ls[l].N
	pairs := nIn*nOut <= MaxPairRows
	rows, ylabel := nIn, "input capsule i (max over j)"
	if pairs {
		rows, ylabel = nIn*nOut, "pair j·N_in + i"
	}
	g := figure.NewGrid(rows, p.cols)
	g.ColX = p.x
	p.pool(g, recs, func(r *telemetry.Record, row int) float64 {
		if len(r.GradW) == 0 {
			return math.NaN()
		}
		gw := r.GradW[l-1]
		if pairs {
			return float64(gw[row])
		}
		m := 0.0
		for j := 0; j < nOut; j++ {
			m = math.Max(m, float64(gw[j*nIn+row]))
		}
		return m
	})
	// log10, zero gradients (starvation) at the bottom of the scale.
	hi := math.Inf(-1)
	lo := math.Inf(1)
	for k, v := range g.Values {
		if v > 0 {
			g.Values[k] = math.Log10(v)
			hi, lo = math.Max(hi, g.Values[k]), math.Min(lo, g.Values[k])
		} else if v == 0 {
			g.Values[k] = math.Inf(-1)
		}
	}
	if lo > hi {
		lo, hi = -12, 0
	}
	lo = math.Max(lo, hi-8)
	if hi-lo < 1e-9 {
		lo, hi = lo-0.5, hi+0.5
	}
	for k, v := range g.Values {
		if math.IsInf(v, -1) {
			g.Values[k] = lo - 1 // below the scale: black, not left out
		}
	}
	h := vg.Length(math.Min(math.Max(float64(rows)*3+90, 200), 460))
	what := fmt.Sprintf("%s → %s", ls[l-1].Name, ls[l].Name)
	svg, err := figure.Heatmap{Title: "log₁₀ ‖∂L_m/∂W[j,i]‖, " + what, XLabel: "step", YLabel: ylabel, BarLabel: "log₁₀ gradient norm",
		Grid: g, Min: lo, Max: hi, Width: telemetryWidth, Height: h}.SVG()
	if err != nil {
		return err
	}
	caption := fmt.Sprintf("%s: one row per (output j, input i) pair, row j·%d + i; black: a gradient of 0 or below 10^%.1f", what, nIn, lo)
	if !pairs {
		caption = fmt.Sprintf("%s: %d×%d pairs, one row per input capsule i, the largest gradient over its %d outputs; black: 0 or below 10^%.1f", what, nOut, nIn, nOut, lo)
	}
	figure.Write(b, svg, caption)
	return nil
}

// writeDark tabulates the capsules that went dark during training and
// stayed dark to the end of the log (telemetry.Log.DarkCapsules): per
// layer how many, and since which step each.
func (in *Input) writeDark(b *strings.Builder) error {
	t := in.Telemetry
	theta := in.DarkNorm
	if theta == 0 {
		theta = telemetry.DefaultDarkNorm
	}
	minRec := telemetry.DarkMinRecords(len(t.Records))
	dark, err := t.DarkCapsules(theta, minRec)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	b.WriteString("<h3>Capsules dark at the end of training</h3>\n")
	figure.Note(b, "A capsule is dark here when its largest norm over the batch stayed below %g in every logged step from some step to the last one (%d), for at least the last %d logged record(s) (10%%; a record of a pooled log is a window of steps, dark only when all of them were). Dark is a training-time view: dead (Table 2) is the test-time one, the mean and std of a capsule's norm over the analysed images below ε₁ and ε₂.", theta, t.Records[len(t.Records)-1].Step, minRec)
	var rows [][]string
	for l, L := range t.Header.Layers {
		var since []string
		for _, d := range telemetry.InLayer(dark, l) {
			since = append(since, fmt.Sprintf("%d: step %d (epoch %d, peak %.3g)", d.Capsule, d.Since, d.Epoch, d.Peak))
		}
		list := "—"
		if len(since) > 0 {
			list = strings.Join(since, "; ")
		}
		rows = append(rows, []string{L.Name, fmt.Sprintf("%d/%d", len(since), L.N), list})
	}
	figure.WriteTable(b, figure.Table{Caption: fmt.Sprintf("capsules whose largest norm stayed below %g to the end of the log", theta),
		Head: []string{"capsule layer", "dark", "capsule: dark since (largest norm since)"}, Rows: rows})
	return in.writeDeaths(b, theta, minRec)
}

// writeDeaths tabulates every capsule that went dark for a stretch of at
// least minRec records (telemetry.Log.Deaths): the step it died, its
// revivals, and, when the log has w_norm, how the norms of its votes
// matrices evolved from its death on.
func (in *Input) writeDeaths(b *strings.Builder, theta float64, minRec int) error {
	t := in.Telemetry
	deaths, err := t.Deaths(theta, minRec)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	b.WriteString("<h3>Deaths and revivals</h3>\n")
	wnote := "The log has no votes-matrix norms (w_norm: written before they were recorded), so whether the dead capsules' votes matrices decay is not known."
	if t.HasWNorm() {
		wnote = "‖W‖ out: the mean over the next layer's capsules j of ‖W[j,i]‖_F, the votes matrices from the dead capsule i; ‖W‖ in: the mean over the previous layer's capsules of those into it; each at the first logged step, at its death and at the end, with the smallest mean from its death on and the largest single norm at the end (0: every one of them has decayed to 0)."
		if t.Header.Pool != nil {
			wnote += " The log is pooled: each value is the largest of its window."
		}
	}
	figure.Note(b, "A capsule dies when its largest norm over the batch goes below %g for at least %d logged record(s) (as above); it revives when a record at or above %g ends such a stretch. %s", theta, minRec, theta, wnote)
	if len(deaths) == 0 {
		figure.Note(b, "No capsule died.")
		return nil
	}
	traj := func(w *telemetry.WTrajectory) string {
		if w == nil {
			return "—"
		}
		return w.String()
	}
	var rows [][]string
	for _, d := range deaths {
		died := "revived"
		if d.Dead {
			died = fmt.Sprintf("step %d (epoch %d, peak %.3g)", d.Since, d.Epoch, d.Peak)
		}
		var rev []string
		for _, r := range d.Revivals {
			rev = append(rev, r.String())
		}
		revs := "—"
		if len(rev) > 0 {
			revs = strings.Join(rev, "; ")
		}
		rows = append(rows, []string{t.Header.Layers[d.Layer].Name, fmt.Sprint(d.Capsule), died, revs, traj(d.Out), traj(d.In)})
	}
	figure.WriteTable(b, figure.Table{Caption: fmt.Sprintf("capsules below %g for at least %d logged record(s): death, revivals and votes-matrix norms", theta, minRec),
		Head: []string{"capsule layer", "capsule", "dead since", "revivals", "‖W‖ out", "‖W‖ in"}, Rows: rows})
	return nil
}
