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
	"github.com/capstan-ml/capstan/capsnet/analysis"
	"github.com/capstan-ml/capstan/capsnet/atomicfile"
	"github.com/capstan-ml/capstan/train/report/figure"
)

// DepthGroup is one row of the depth trend (issue 28): the done variants
// with an analysis of one architecture (model and settings) under one
// routing kind at one depth, over their seeds. Figures over seeds are
// the mean and population std (analysis.Value; null in JSON when
// undefined).
type DepthGroup struct {
	// Depth is the count of routing layers L: the capsule layers after
	// the primary capsules (len(Layers) − 1).
	Depth   int    `json:"depth"`
	Model   string `json:"model"`
	Arch    string `json:"arch"`
	Routing string `json:"routing"`
	Seeds   int    `json:"seeds"`
	// ValAcc and EvalAcc are the validation and evaluation-set
	// accuracies (fractions).
	ValAcc  analysis.Value `json:"val_acc"`
	EvalAcc analysis.Value `json:"eval_acc"`
	// Layers names the capsule layers (of the first seed), the primary
	// capsules first and the output layer last; N is their capsule
	// counts (absent when the variants do not give them or disagree).
	Layers []string `json:"layers"`
	N      []int    `json:"n,omitempty"`
	// CDS is the dead capsules (cds on the evaluation set) per capsule
	// layer; Alive the capsules not dead (N − CDS, absent without N):
	// routing layer l goes from Alive[l] to Alive[l+1].
	CDS   []analysis.Value `json:"cds"`
	Alive []analysis.Value `json:"alive,omitempty"`
	// HiddenDead is the dead capsules of the layers between the primary
	// capsules and the output layer (Variant.HiddenDead); null at depth 1,
	// which has none.
	HiddenDead analysis.Value `json:"hidden_dead"`
}

// AliveRouting formats the alive capsules of each routing layer, input
// layer → output layer: "16→8, 8→6, 6→10" ("–" without N). A mean over
// seeds that is not whole is written to 4 significant digits.
func (g DepthGroup) AliveRouting() string {
	if len(g.Alive) < 2 {
		return "–"
	}
	s := make([]string, len(g.Alive)-1)
	for l := range s {
		s[l] = num(g.Alive[l].Mean) + "→" + num(g.Alive[l+1].Mean)
	}
	return strings.Join(s, ", ")
}

// num formats a count or a mean of counts: %.4g, "–" for NaN.
func num(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return fmt.Sprintf("%.4g", x)
}

// variantDepth is the depth (routing layers) of a variant's analysis: 0
// when it has none or its layers and counts do not match.
func variantDepth(v Variant) int {
	if len(v.Layers) < 2 || len(v.CDS) != len(v.Layers) {
		return 0
	}
	return len(v.Layers) - 1
}

// kindRank orders routing kinds: capsnet.RoutingKinds' order (RBA
// first), unknown kinds after them.
func kindRank(kind string) int {
	for i, k := range capsnet.RoutingKinds {
		if k.Name == kind {
			return i
		}
	}
	return len(capsnet.RoutingKinds)
}

// depthTrend groups the variants with an analysis by depth, routing
// kind and architecture (model and settings; the seeds of one are
// summarised), sorted by depth, then routing kind (RBA first), model and
// architecture; nil when they span fewer than two depths.
func depthTrend(vs []Variant) []DepthGroup {
	type key struct {
		depth         int
		routing, arch string
	}
	byKey := map[key][]Variant{}
	var keys []key
	seen := map[int]bool{}
	for _, v := range vs {
		d := variantDepth(v)
		if d == 0 {
			continue
		}
		k := key{d, v.Routing, v.Arch}
		if byKey[k] == nil {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], v)
		seen[d] = true
	}
	if len(seen) < 2 {
		return nil
	}
	var out []DepthGroup
	for _, k := range keys {
		out = append(out, depthGroup(k.depth, byKey[k]))
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Depth != b.Depth {
			return a.Depth < b.Depth
		}
		if ra, rb := kindRank(a.Routing), kindRank(b.Routing); ra != rb {
			return ra < rb
		}
		if a.Routing != b.Routing {
			return a.Routing < b.Routing
		}
		if a.Model != b.Model {
			return a.Model < b.Model
		}
		return a.Arch < b.Arch
	})
	return out
}

// depthGroup summarises the variants vs, all of depth d (d+1 capsule
// layers, as many cds each), over their seeds.
func depthGroup(d int, vs []Variant) DepthGroup {
	v0 := vs[0]
	g := DepthGroup{Depth: d, Model: v0.Model, Arch: v0.Arch, Routing: v0.Routing, Seeds: len(vs), Layers: slices.Clone(v0.Layers)}
	var val, eval, hidden []float64
	cds := make([][]float64, d+1)
	n := slices.Clone(v0.N)
	for _, v := range vs {
		val, eval = append(val, v.ValAcc), append(eval, v.EvalAcc)
		if h := v.HiddenDead(); h >= 0 && d >= 2 {
			hidden = append(hidden, float64(h))
		}
		for l, c := range v.CDS {
			cds[l] = append(cds[l], float64(c))
		}
		if !slices.Equal(v.N, n) {
			n = nil
		}
	}
	if len(n) != d+1 {
		n = nil
	}
	g.ValAcc, g.EvalAcc, g.HiddenDead, g.N = meanStd(val), meanStd(eval), meanStd(hidden), n
	for l, c := range cds {
		g.CDS = append(g.CDS, meanStd(c))
		if n != nil {
			g.Alive = append(g.Alive, analysis.Value{Mean: float64(n[l]) - g.CDS[l].Mean, Std: g.CDS[l].Std})
		}
	}
	return g
}

// depthArchs reports whether the depth trend's groups are of several
// settings (architectures whose names differ beyond the model): then
// the table names each group's architecture, not only its model.
func (s *Summary) depthArchs() bool {
	var suffixes []string
	for _, g := range s.DepthTrend {
		if suf := strings.TrimPrefix(g.Arch, g.Model); !slices.Contains(suffixes, suf) {
			suffixes = append(suffixes, suf)
		}
	}
	return len(suffixes) > 1
}

// depthTable is the table of Summary.DepthTrend.
func (s *Summary) depthTable() table {
	t := table{head: []string{"routing layers L", "model", "routing", "seeds", "validation", s.evalName(),
		"dead (cds) per capsule layer", "alive per routing layer (in→out)", "dead in hidden layers"}, text: 3}
	archs := s.depthArchs()
	for _, g := range s.DepthTrend {
		model := g.Model
		if archs {
			model = g.Arch
		}
		cds := make([]string, len(g.CDS))
		for l, c := range g.CDS {
			cds[l] = num(c.Mean)
		}
		dead := "–"
		if len(cds) > 0 {
			dead = strings.Join(cds, ", ")
		}
		t.rows = append(t.rows, []string{strconv.Itoa(g.Depth), model, label(g.Routing), strconv.Itoa(g.Seeds),
			pct(g.ValAcc), pct(g.EvalAcc), dead, g.AliveRouting(), g.HiddenDead.String()})
	}
	return t
}

const depthNote = "The done variants with an analysis by depth: L routing layers (the capsule layers after the primary capsules, the last the output layer), one row per model and routing kind, over its seeds. Accuracy in %, mean ± population std over the seeds; dead (cds on the evaluation set, as in Table 2): mean over the seeds per capsule layer, the primary capsules first; alive: the capsules not dead of the input and the output layer of each routing layer (as Table 1's alive counts); dead in hidden layers: the dead capsules of the layers between the primary capsules and the output layer (none at L = 1)."

// depthMarkdown is the Markdown section of the depth trend ("" without).
func (s *Summary) depthMarkdown() string {
	if len(s.DepthTrend) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## Depth trend\n\n" + depthNote + "\n\n")
	writeMDTable(&b, s.depthTable())
	return b.String()
}

// depthHTML is the HTML section of the depth trend: the figure (when it
// spans two depths or more) and the table ("" without).
func (s *Summary) depthHTML() (string, error) {
	if len(s.DepthTrend) == 0 {
		return "", nil
	}
	var b strings.Builder
	b.WriteString("<h2>Depth trend</h2>\n")
	figure.Note(&b, "%s", depthNote)
	if len(depths(s.DepthTrend)) < 2 { // not of Collect: the table alone
		figure.WriteTable(&b, s.depthTable().html("Depth trend"))
		return b.String(), nil
	}
	ps, err := s.depthPlots()
	if err != nil {
		return "", err
	}
	svg, err := figure.SVG(depthW, depthH, func(c draw.Canvas) { drawPanels(c, ps) })
	if err != nil {
		return "", fmt.Errorf("depth figure: %w", err)
	}
	figure.Write(&b, svg, "Left: dead capsules (cds on the evaluation set) of each hidden capsule layer, counted from the first after the primary capsules, one line per depth L (RBA solid, uniform dashed). Right: "+s.evalName()+" accuracy against the depth, one line per routing kind. Means over the seeds.")
	figure.WriteTable(&b, s.depthTable().html("Depth trend"))
	return b.String(), nil
}

// The depth figure's size.
const (
	depthW = 12 * vg.Inch
	depthH = 5 * vg.Inch
)

// family is the name of a group's architecture without its depth
// ("-L3") and its routing kind's twin suffix ("-uniform"): the groups of
// one family at several depths make one line of accuracy against depth.
func family(g DepthGroup) string {
	name := g.Arch
	for _, suf := range []string{"-L" + strconv.Itoa(g.Depth), "-" + g.Routing} {
		if suf == "-" || suf == "-"+rbaKind() {
			continue
		}
		for i := 0; i < len(name); {
			j := strings.Index(name[i:], suf)
			if j < 0 {
				break
			}
			j += i
			if end := j + len(suf); end == len(name) || name[end] == '-' {
				name = name[:j] + name[end:]
				break
			}
			i = j + 1
		}
	}
	return name
}

// depthPalette colours the depths; depthDashes mark the routing kinds
// in capsnet.RoutingKinds' order (RBA solid, uniform dashed, …);
// depthGlyphs the families.
var (
	depthPalette = []color.RGBA{{0x1f, 0x77, 0xb4, 255}, {0xff, 0x7f, 0x0e, 255}, {0x2c, 0xa0, 0x2c, 255}, {0xd6, 0x27, 0x28, 255},
		{0x94, 0x67, 0xbd, 255}, {0x8c, 0x56, 0x4b, 255}, {0xe3, 0x77, 0xc2, 255}, {0x7f, 0x7f, 0x7f, 255}}
	depthDashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(1.5), vg.Points(2.5)}, {vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)}}
	depthGlyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.CrossGlyph{}}
)

// depthStyle is what tells the lines of the depth figure apart: the
// routing kinds and the families (family) of the groups.
type depthStyle struct {
	kinds, families []string
}

// newDepthStyle returns the routing kinds (in kindRank's order) and the
// families of gs.
func newDepthStyle(gs []DepthGroup) depthStyle {
	var st depthStyle
	for _, g := range gs {
		if !slices.Contains(st.kinds, g.Routing) {
			st.kinds = append(st.kinds, g.Routing)
		}
		index(&st.families, family(g))
	}
	sort.SliceStable(st.kinds, func(i, j int) bool { return kindRank(st.kinds[i]) < kindRank(st.kinds[j]) })
	return st
}

// line adds l to p in colour c, with the dashes of its routing kind
// and the glyph of its family.
func (st depthStyle) line(p *plot.Plot, l depthLine, c color.Color) error {
	ln, sc, err := plotter.NewLinePoints(l.pts)
	if err != nil {
		return fmt.Errorf("depth figure: %w", err)
	}
	dash := depthDashes[kindRank(l.group.Routing)%len(depthDashes)]
	glyph := depthGlyphs[max(0, slices.Index(st.families, family(l.group)))%len(depthGlyphs)]
	ln.Color, ln.Dashes, ln.Width = c, dash, vg.Points(1.5)
	sc.Color, sc.Shape, sc.Radius = c, glyph, vg.Points(3.5)
	p.Add(ln, sc)
	p.Legend.Add(l.label, ln, sc)
	return nil
}

// name labels a line: the parts that tell the figure's lines apart.
func (st depthStyle) name(prefix string, g DepthGroup) string {
	parts := []string{}
	if prefix != "" {
		parts = append(parts, prefix)
	}
	if len(st.kinds) > 1 || prefix == "" {
		parts = append(parts, label(g.Routing))
	}
	if len(st.families) > 1 {
		parts = append(parts, family(g))
	}
	return strings.Join(parts, ", ")
}

// depthLine is one line of the depth figure: its label, the group that
// styles it (routing kind, family; the depth on the left panel) and its
// plottable points.
type depthLine struct {
	label string
	group DepthGroup
	pts   plotter.XYs
}

// depths are the depths of the groups, ascending.
func depths(gs []DepthGroup) []int {
	var ds []int
	for _, g := range gs {
		if g.Depth > 0 && !slices.Contains(ds, g.Depth) {
			ds = append(ds, g.Depth)
		}
	}
	slices.Sort(ds)
	return ds
}

// deadLines are the lines of the depth figure's left panel: per group of
// depth L ≥ 2, the mean cds of its hidden layers at positions 1 … L−1
// (a group at depth 1 has none); points that are not finite are left
// out, a line without any too.
func (st depthStyle) deadLines(gs []DepthGroup) []depthLine {
	var out []depthLine
	for _, g := range gs {
		if g.Depth < 2 || len(g.CDS) != g.Depth+1 {
			continue
		}
		var xy plotter.XYs
		for l := 1; l < g.Depth; l++ {
			xy = append(xy, plotter.XY{X: float64(l), Y: g.CDS[l].Mean})
		}
		if pts, _ := figure.PlottableXY(xy); len(pts) > 0 {
			out = append(out, depthLine{label: st.name(fmt.Sprintf("L = %d", g.Depth), g), group: g, pts: pts})
		}
	}
	return out
}

// accLines are the lines of the depth figure's right panel: per routing
// kind and family, the mean evaluation accuracy (%) against the depth;
// points that are not finite are left out, a line without any too.
func (st depthStyle) accLines(gs []DepthGroup) []depthLine {
	type lineKey struct{ routing, family string }
	var keys []lineKey
	byKey := map[lineKey][]DepthGroup{}
	for _, g := range gs {
		k := lineKey{g.Routing, family(g)}
		if byKey[k] == nil {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], g)
	}
	var out []depthLine
	for _, k := range keys {
		var xy plotter.XYs
		for _, g := range byKey[k] {
			xy = append(xy, plotter.XY{X: float64(g.Depth), Y: 100 * g.EvalAcc.Mean})
		}
		sort.SliceStable(xy, func(i, j int) bool { return xy[i].X < xy[j].X })
		if pts, _ := figure.PlottableXY(xy); len(pts) > 0 {
			out = append(out, depthLine{label: st.name("", byKey[k][0]), group: byKey[k][0], pts: pts})
		}
	}
	return out
}

// depthPlots are the two panels of the depth figure: the dead capsules
// of each hidden layer by its position, one line per group (colour:
// depth), and the evaluation accuracy against the depth, one line per
// routing kind and family (dashes: routing kind, glyph: family). An
// error when the trend spans fewer than two depths.
func (s *Summary) depthPlots() ([]*plot.Plot, error) {
	gs := s.DepthTrend
	ds := depths(gs)
	if len(ds) < 2 {
		n := len(ds)
		if len(gs) == 0 { // a Summary of Collect: count the variants' depths
			seen := map[int]bool{}
			for _, v := range s.Variants {
				if d := variantDepth(v); d > 0 {
					seen[d] = true
				}
			}
			n = len(seen)
		}
		return nil, fmt.Errorf("depth figure: %d depth(s) with an analysis among the %d done variant(s), want at least 2", n, len(s.Variants))
	}
	st := newDepthStyle(gs)

	dead := figure.NewPlot("Dead capsules per hidden layer", "hidden capsule layer (1: the first after the primary capsules)", "dead capsules (cds)")
	dead.Legend.Top = true
	maxPos, maxY := 1, 1.0
	deadLines := st.deadLines(gs)
	for _, l := range deadLines {
		maxPos = max(maxPos, l.group.Depth-1)
		for _, pt := range l.pts {
			maxY = math.Max(maxY, pt.Y)
		}
		c := depthPalette[slices.Index(ds, l.group.Depth)%len(depthPalette)]
		if err := st.line(dead, l, c); err != nil {
			return nil, err
		}
	}
	dead.X.Min, dead.X.Max, dead.X.Tick.Marker = 0.5, float64(maxPos)+0.5, intTicks(positions(maxPos))
	dead.Y.Min, dead.Y.Max = 0, legendRoom(len(deadLines), 0, maxY*1.05+0.5)
	dead.Y.Tick.Marker = figure.IntTicks{}
	if maxY <= 20 {
		dead.Y.Tick.Marker = intTicks(append([]int{0}, positions(int(math.Ceil(maxY)))...))
	}

	acc := figure.NewPlot("Accuracy against depth", "routing layers L", s.evalName()+" accuracy (%)")
	acc.Legend.Top = true
	lo, hi := math.Inf(1), math.Inf(-1)
	accLines := st.accLines(gs)
	for i, l := range accLines {
		for _, pt := range l.pts {
			lo, hi = math.Min(lo, pt.Y), math.Max(hi, pt.Y)
		}
		var c color.Color = color.Black
		if i > 0 {
			c = depthPalette[(i-1)%len(depthPalette)]
		}
		if err := st.line(acc, l, c); err != nil {
			return nil, err
		}
	}
	if math.IsInf(lo, 0) {
		lo, hi = 0, 100
	}
	pad := math.Max((hi-lo)*0.1, 0.5)
	acc.Y.Min, acc.Y.Max = lo-pad, legendRoom(len(accLines), lo-pad, hi+pad)
	acc.X.Min, acc.X.Max, acc.X.Tick.Marker = float64(ds[0])-0.5, float64(ds[len(ds)-1])+0.5, intTicks(ds)
	return []*plot.Plot{dead, acc}, nil
}

// legendRoom returns the top of a depth panel's y axis that leaves the
// band of its legend of n entries (along the top edge, in the font of
// figure.NewPlot's legends) above every point of the data range lo … hi:
// the legend's height as a fraction of the panel's data area (the
// figure's height less about an inch of title and x axis), plus a
// margin, at most half the panel.
func legendRoom(n int, lo, hi float64) float64 {
	if n == 0 || hi <= lo {
		return hi
	}
	lg := figure.NewPlot("", "", "").Legend
	rows := vg.Length(n) * (lg.TextStyle.Height("Lg") + lg.Padding)
	frac := math.Min(0.5, float64(rows/(depthH-vg.Inch))+0.03)
	return lo + (hi-lo)/(1-frac)
}

// intTicks labels exactly the integers given, or gonum's integer ticks
// when there are more than 20 of them.
func intTicks(xs []int) plot.Ticker {
	if len(xs) > 20 {
		return figure.IntTicks{}
	}
	v := make(valueTicks, len(xs))
	for i, x := range xs {
		v[i] = float64(x)
	}
	return v
}

// positions are 1 … n (at most 21 of them: intTicks needs no more).
func positions(n int) []int {
	xs := make([]int, min(max(n, 0), 21))
	for i := range xs {
		xs[i] = i + 1
	}
	return xs
}

// drawPanels draws the plots side by side on c, their data areas
// aligned.
func drawPanels(c draw.Canvas, ps []*plot.Plot) {
	tiles := draw.Tiles{Rows: 1, Cols: len(ps), PadX: vg.Points(24), PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	cs := plot.Align([][]*plot.Plot{ps}, tiles, c)
	for i, p := range ps {
		p.Draw(cs[0][i])
	}
}

// DepthPNG writes the depth figure (issue 28) as a PNG of 12×5 inches at
// 144 dpi: left, the dead capsules (cds) of each hidden capsule layer by
// its position, one line per depth L and routing kind (RBA solid, uniform
// dashed); right, the evaluation accuracy (%) against L, one line per
// routing kind. An error when fewer than two depths have an analysis.
func (s *Summary) DepthPNG(w io.Writer) (err error) {
	ps, err := s.depthPlots()
	if err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil { // gonum/plot panics on some degenerate data
			err = fmt.Errorf("depth figure: plot: %v", r)
		}
	}()
	c := vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(depthW, depthH), vgimg.UseDPI(144))}
	drawPanels(draw.New(c), ps)
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return fmt.Errorf("depth figure: %w", err)
	}
	_, err = w.Write(b.Bytes())
	return err
}

// WriteDepthPNG writes DepthPNG to path atomically.
func (s *Summary) WriteDepthPNG(path string) error {
	var b bytes.Buffer
	if err := s.DepthPNG(&b); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return atomicfile.WriteBytes(path, b.Bytes())
}
