package sweep

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/atomicfile"
	"github.com/capstan-ml/capstan/train"
	"github.com/capstan-ml/capstan/train/report/figure"
)

// Variant is one done task of a sweep with optimizer axes or telemetry
// (Grid.WeightDecay, …, Grid.Telemetry): its optimizer settings in
// effect, its accuracies, the dead capsules of its analysis per capsule
// layer (cds at ε₁ = ε₂ = 0.01 on the evaluation set) and its training
// telemetry's Deaths.
type Variant struct {
	Index   int    `json:"index"`
	Model   string `json:"model"` // the model without the variant (the task's Arch before the suffix)
	Arch    string `json:"arch"`
	Routing string `json:"routing"`
	Seed    uint64 `json:"seed"`
	// WeightDecay, WeightDecayForm, AdamEps, GroupWeightDecay: the
	// settings in effect (the defaults where the task gives none).
	WeightDecay      float64 `json:"weight_decay"`
	WeightDecayForm  string  `json:"weight_decay_form"`
	AdamEps          float64 `json:"adam_eps"`
	GroupWeightDecay string  `json:"group_weight_decay,omitempty"`
	// InitStd is the votes matrices' initial std the task set (absent:
	// the model's own initialisation).
	InitStd *float64 `json:"init_std,omitempty"`
	ValAcc  float64  `json:"val_acc"`
	EvalAcc float64  `json:"eval_acc"`
	// Layers names the capsule layers, N their capsules and CDS their
	// dead capsules on the evaluation set (empty without an analysis).
	Layers []string `json:"layers,omitempty"`
	N      []int    `json:"n,omitempty"`
	CDS    []int    `json:"cds,omitempty"`
	Deaths *Deaths  `json:"deaths,omitempty"`
}

// HiddenDead is the count of dead capsules (cds) of the capsule layers
// between the primary capsules and the output layer, the layers the
// paper's Table 2 counts deaths in; -1 without an analysis.
func (v Variant) HiddenDead() int {
	if len(v.CDS) < 3 {
		return -1
	}
	n := 0
	for _, c := range v.CDS[1 : len(v.CDS)-1] {
		n += c
	}
	return n
}

// variantOf returns the Variant of a done task t with result r.
func variantOf(t Task, o outcome) Variant {
	v := Variant{Index: t.Index, Arch: t.Arch, Routing: t.Routing, Seed: t.Seed,
		WeightDecay: t.WeightDecayValue(), WeightDecayForm: train.DecayL2.String(), AdamEps: train.DefaultAdamEps,
		GroupWeightDecay: t.GroupWeightDecay, InitStd: t.InitStd, ValAcc: float64(o.res.ValAcc), EvalAcc: float64(o.res.EvalAcc), Deaths: o.res.Deaths}
	if f, err := train.ParseWeightDecayForm(t.WeightDecayForm); err == nil {
		v.WeightDecayForm = f.String()
	}
	if t.AdamEps != nil {
		v.AdamEps = *t.AdamEps
	}
	v.Model = strings.TrimSuffix(t.Arch, t.Settings.name())
	if o.report != nil {
		for _, l := range o.report.Layers {
			v.Layers = append(v.Layers, l.Name)
			v.N = append(v.N, l.N)
			v.CDS = append(v.CDS, l.CDS)
		}
	}
	return v
}

// defaultWeightDecay is train's default weight decay (1e-6).
var defaultWeightDecay = train.DefaultOptions(capsnet.Config{}).WeightDecay

// name is the suffix Expand gives the Arch of a task of settings o ("" for
// none), e.g. "-wd0.0001-decoupled-eps1e-07-votes0.01".
func (o Settings) name() string {
	var s string
	if o.WeightDecay != nil {
		s += "-wd" + strconv.FormatFloat(*o.WeightDecay, 'g', -1, 64)
	}
	if o.WeightDecayForm != "" {
		s += "-" + o.WeightDecayForm
	}
	if o.AdamEps != nil {
		s += "-eps" + strconv.FormatFloat(*o.AdamEps, 'g', -1, 64)
	}
	if o.GroupWeightDecay != "" {
		s += "-" + strings.NewReplacer("=", "", ",", "-").Replace(o.GroupWeightDecay)
	}
	if o.InitStd != nil {
		s += "-std" + strconv.FormatFloat(*o.InitStd, 'g', -1, 64)
	}
	return s
}

// hasVariants reports whether the sweep's tasks have optimizer settings or
// telemetry: then Summary.Variants lists them.
func hasVariants(tasks []Task) bool {
	for _, t := range tasks {
		if t.Telemetry || t.Settings != (Settings{}) {
			return true
		}
	}
	return false
}

// deadCells formats the counts of a layer list, "–" without.
func deadCells(v []int) string {
	if len(v) == 0 {
		return "–"
	}
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

// norm formats an optional norm.
func norm(p *float64) string {
	if p == nil {
		return "–"
	}
	return strconv.FormatFloat(*p, 'g', 3, 64)
}

// variantTable is the table of Summary.Variants.
func (s *Summary) variantTable() table {
	t := table{head: []string{"task", "model", "routing", "seed", "weight decay", "form", "ε", "groups", "validation", s.evalName(),
		"dead (cds) per capsule layer", "dead in training per layer", "death steps (first–last)", "revived", "dead capsules' ‖W‖ out: start → death → end (largest at end)"}, text: 3}
	for _, v := range s.Variants {
		inTrain, steps, revived, wn := "–", "–", "–", "–"
		if d := v.Deaths; d != nil && d.Error == "" {
			var dead, rev []int
			never := 0
			first, last := math.MaxInt, 0
			var ws []string
			for _, l := range d.Layers {
				dead, rev = append(dead, l.Dead), append(rev, l.Revived)
				never += l.NeverAlive
				if l.Dead > 0 {
					first, last = min(first, l.FirstDeath), max(last, l.LastDeath)
					if l.OutEnd != nil {
						ws = append(ws, fmt.Sprintf("%s: %s → %s → %s (%s)", l.Name, norm(l.OutFirst), norm(l.OutAtDeath), norm(l.OutEnd), norm(l.OutEndMax)))
					}
				}
			}
			inTrain, revived = deadCells(dead), deadCells(rev)
			if never > 0 {
				inTrain += fmt.Sprintf(" (%d never lit)", never)
			}
			if last > 0 {
				steps = fmt.Sprintf("%d–%d of %d", first, last, d.LastStep)
			}
			if len(ws) > 0 {
				wn = strings.Join(ws, "; ")
			} else if !d.WNorm {
				wn = "no w_norm"
			}
		} else if d != nil {
			inTrain = "telemetry: " + d.Error
		}
		t.rows = append(t.rows, []string{strconv.Itoa(v.Index), v.Model, v.Routing, strconv.FormatUint(v.Seed, 10),
			strconv.FormatFloat(v.WeightDecay, 'g', -1, 64), v.WeightDecayForm, strconv.FormatFloat(v.AdamEps, 'g', -1, 64), orDash(v.GroupWeightDecay),
			fmt.Sprintf("%.2f%%", 100*v.ValAcc), fmt.Sprintf("%.2f%%", 100*v.EvalAcc), deadCells(v.CDS), inTrain, steps, revived, wn})
	}
	return t
}

// orDash is s, "–" when empty.
func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

const variantNote = "Dead (cds): capsules whose mean and std of the norm over the evaluation set are ≤ 0.01 (Table 2). Dead in training: capsules whose largest norm over the batch stayed below 0.01 from their death step to the end of training (at least the last 10%% of the steps; the training telemetry), revived: capsules that came back from a stretch below 0.01 at least as long, begun after step 1 (a capsule dark from step 1 that lights up later has not revived; one dark from step 1 to the end is counted as never lit). ‖W‖ out: the mean over the dead capsules of the mean ‖W[j,i]‖_F of their votes matrices to the next layer, at step 1, at their death and at the end; in brackets the largest single one at the end (0: all exactly zero)."

// variantLine is one line of the deaths figure: the variants of one
// model, routing, form, ε (and groups, init), by weight decay; form,
// model and eps key its colour, dashes and glyph.
type variantLine struct {
	label            string
	form, model, eps string
	pts              plotter.XYs
}

// deathLines groups s.Variants into the figure's lines, each sorted by
// weight decay; variants without an analysis or with weight decay 0 (off
// the log axis) are left out.
func (s *Summary) deathLines() []variantLine {
	var order []string
	byKey := map[string]*variantLine{}
	for _, v := range s.Variants {
		n := v.HiddenDead()
		if n < 0 || !(v.WeightDecay > 0) {
			continue
		}
		model := v.Model
		if v.Routing != rbaKind() {
			model += " (" + v.Routing + ")"
		}
		if v.GroupWeightDecay != "" {
			model += ", " + v.GroupWeightDecay
		}
		if v.InitStd != nil {
			model += fmt.Sprintf(", init std %g", *v.InitStd)
		}
		eps := fmt.Sprintf("ε %g", v.AdamEps)
		key := v.WeightDecayForm + ", " + model + ", " + eps
		l := byKey[key]
		if l == nil {
			l = &variantLine{label: key, form: v.WeightDecayForm, model: model, eps: eps}
			byKey[key] = l
			order = append(order, key)
		}
		l.pts = append(l.pts, plotter.XY{X: v.WeightDecay, Y: float64(n)})
	}
	sort.SliceStable(order, func(i, j int) bool { return byKey[order[i]].form < byKey[order[j]].form })
	var out []variantLine
	for _, k := range order {
		l := byKey[k]
		sort.SliceStable(l.pts, func(i, j int) bool { return l.pts[i].X < l.pts[j].X })
		out = append(out, *l)
	}
	return out
}

// valueTicks label exactly the values given (the weight decays of the
// grid), in %g.
type valueTicks []float64

// Ticks returns the values within [lo, hi] (plot.Ticker).
func (v valueTicks) Ticks(lo, hi float64) []plot.Tick {
	var ts []plot.Tick
	for _, x := range v {
		if x >= lo && x <= hi {
			ts = append(ts, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', -1, 64)})
		}
	}
	return ts
}

// index returns the position of s in *seen, appending it when new.
func index(seen *[]string, s string) int {
	for i, x := range *seen {
		if x == s {
			return i
		}
	}
	*seen = append(*seen, s)
	return len(*seen) - 1
}

// deathsPlot is the figure of dead capsules against the weight-decay
// coefficient: one line per form, model and ε (colour: form, dashes:
// model, glyph: ε); nil when no variant has an analysis and a positive
// weight decay.
func (s *Summary) deathsPlot() (*plot.Plot, error) {
	lines := s.deathLines()
	if len(lines) == 0 {
		return nil, nil
	}
	p := figure.NewPlot("Dead capsules against weight decay", "weight decay (log scale)", "dead capsules (cds) of the hidden capsule layers")
	var xs []float64
	for _, l := range lines {
		for _, pt := range l.pts {
			if !slices.Contains(xs, pt.X) {
				xs = append(xs, pt.X)
			}
		}
	}
	slices.Sort(xs)
	p.X.Scale, p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogScale{}, valueTicks(xs), figure.IntTicks{}
	if len(xs) == 1 {
		// One coefficient (a depth sweep): gonum would widen the range
		// by ±1, below 0 on the log axis, and panic.
		p.X.Min, p.X.Max = xs[0]/3, xs[0]*3
	}
	p.Legend.Top, p.Legend.Left = true, true
	palette := []color.RGBA{{0xd6, 0x27, 0x28, 255}, {0x1f, 0x77, 0xb4, 255}, {0x2c, 0xa0, 0x2c, 255}, {0xff, 0x7f, 0x0e, 255},
		{0x94, 0x67, 0xbd, 255}, {0x8c, 0x56, 0x4b, 255}}
	dashes := [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(1.5), vg.Points(2.5)}, {vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)}}
	glyphs := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.CrossGlyph{}}
	var forms, models, epss []string
	maxY := 1.0
	for _, l := range lines {
		pts, _ := figure.PlottableXY(l.pts)
		if len(pts) == 0 {
			continue
		}
		ln, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, fmt.Errorf("deaths figure: %w", err)
		}
		c := palette[index(&forms, l.form)%len(palette)]
		ln.Color, ln.Dashes, ln.Width = c, dashes[index(&models, l.model)%len(dashes)], vg.Points(1.5)
		sc.Color, sc.Shape, sc.Radius = c, glyphs[index(&epss, l.eps)%len(glyphs)], vg.Points(3.5)
		p.Add(ln, sc)
		p.Legend.Add(l.label, ln, sc)
		for _, pt := range pts {
			maxY = math.Max(maxY, pt.Y)
		}
	}
	p.Y.Min, p.Y.Max = 0, maxY*1.05+0.5
	return p, nil
}

// DeathsPNG writes the figure of dead capsules against the weight-decay
// coefficient (one line per model, form and ε) as a PNG of w×h points at
// 2× resolution; an error when the summary has no variant to draw.
func (s *Summary) DeathsPNG(w io.Writer) error {
	p, err := s.deathsPlot()
	if err != nil {
		return err
	}
	if p == nil {
		return fmt.Errorf("deaths figure: no done variant with an analysis and a weight decay > 0")
	}
	c := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(9*vg.Inch, 5.5*vg.Inch), vgimg.UseDPI(144))}
	p.Draw(draw.New(c))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return fmt.Errorf("deaths figure: %w", err)
	}
	_, err = w.Write(b.Bytes())
	return err
}

// variantsHTML is the HTML section of the variants: the figure and the
// table ("" without variants).
func (s *Summary) variantsHTML() (string, error) {
	if len(s.Variants) == 0 {
		return "", nil
	}
	var b strings.Builder
	b.WriteString("<h2>Optimizer variants and dead capsules</h2>\n")
	figure.Note(&b, variantNote)
	p, err := s.deathsPlot()
	if err != nil {
		return "", err
	}
	if p != nil {
		svg, err := figure.PlotSVG(p, 9*vg.Inch, 5.5*vg.Inch)
		if err != nil {
			return "", fmt.Errorf("deaths figure: %w", err)
		}
		figure.Write(&b, svg, "Dead capsules (cds on the evaluation set) of the hidden capsule layers against the weight-decay coefficient; one line per model, routing, form and ε.")
	}
	figure.WriteTable(&b, s.variantTable().html("Optimizer variants"))
	return b.String(), nil
}

// variantsMarkdown is the Markdown section of the variants ("" without).
func (s *Summary) variantsMarkdown() string {
	if len(s.Variants) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Optimizer variants and dead capsules\n\n" + strings.ReplaceAll(variantNote, "%%", "%") + "\n\n")
	writeMDTable(&b, s.variantTable())
	return b.String()
}

// WriteDeathsPNG writes DeathsPNG to path atomically.
func (s *Summary) WriteDeathsPNG(path string) error {
	var b bytes.Buffer
	if err := s.DeathsPNG(&b); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return atomicfile.WriteBytes(path, b.Bytes())
}
