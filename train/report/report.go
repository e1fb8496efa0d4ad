// Package report writes the parse-tree analysis of a CapsNet (docs/semantics.md §7,
// the paper "Why Capsule Neural Networks Do Not Scale") as one
// self-contained HTML file: the paper's Tables 1 and 2, parse trees of
// sample images (Fig. 2) and of one digit under two transformations
// (Fig. 5), the mean and standard deviation of every coupling and capsule
// norm with the dead capsules (Fig. 3), the viewpoint-invariance curves
// (Fig. 4), the training telemetry of the appendix (largest capsule norms
// and margin-loss gradients of the votes matrices per step), training
// curves, and optional reconstruction images.
//
// The file needs no network: figures are inline SVG (parse trees drawn
// here, plots by gonum.org/v1/plot), raster parts are data:image/png
// URIs, and the one font the plots use (Liberation Sans) is embedded.
// Input holds plain data; train/study fills it (for tools/analyze -html),
// with parse trees from train/eval. The page head and style, plot font,
// heatmaps and tables it shares with train/sweep's summary page are
// train/report/figure's.
package report

import (
	"bytes"
	"fmt"
	"image/png"
	"io"
	"math"
	"strings"

	"github.com/capstan-ml/capstan/capsnet/analysis"
	"github.com/capstan-ml/capstan/train/report/figure"
	"github.com/capstan-ml/capstan/train/telemetry"
)

// Sample is one image's parse tree. It is analysis.Sample: the plain type
// lives there so that train/eval, which fills it, does not link the
// plotting code into the trainer.
type Sample = analysis.Sample

// InvariancePoint is one point of the viewpoint-invariance curves (Fig.
// 4): every capsule layer's mean correlation for one transformation
// family at one magnitude over K image pairs.
type InvariancePoint struct {
	Family    string // rotation, shear, scale, translate-x, translate-y
	Magnitude float64
	K         int
	Layers    []analysis.InvarianceLayer
}

// Epoch is one epoch of training (a line of a run's metrics.ndjson). A
// figure that was not measured is NaN.
type Epoch struct {
	Epoch                       int
	Loss, MarginLoss, ReconLoss float64
	TrainAcc, ValAcc, TestAcc   float64
}

// Figure is a PNG image made elsewhere (reconstructions, a capsule
// dimension perturbation grid) and its caption.
type Figure struct {
	Caption string
	PNG     []byte
}

// MaxPNG bounds an embedded Figure's PNG (bytes) and MaxPNGPixels its
// decoded size.
const (
	MaxPNG       = 32 << 20
	MaxPNGPixels = 1 << 24
)

// Input is what a report shows. Every part but Model may be missing: its
// section then says how to get it.
type Input struct {
	// Title heads the page ("Parse-tree report: MODEL" when empty).
	Title string
	// Model is the model configuration's name, Data the data set's.
	Model, Data string
	// Checkpoints are the analysed checkpoints' paths.
	Checkpoints []string
	// Accuracy, when given, holds each checkpoint's accuracy on the
	// analysed images (a fraction; in the order of Checkpoints).
	Accuracy []float64
	// Thresholds are the constants of docs/semantics.md §7 the statistics used.
	Thresholds analysis.Thresholds
	// Tables are the paper's Tables 1 and 2 over the checkpoints.
	Tables *analysis.Tables
	// Stats are one model's per-capsule and per-coupling statistics
	// (Fig. 3), StatsOf names it (a checkpoint).
	Stats   *analysis.Report
	StatsOf string
	// Samples are parse trees of sample images (Fig. 2).
	Samples []Sample
	// Views are the parse trees of one digit as it is and under
	// transformations, shown side by side (Fig. 5).
	Views []Sample
	// Invariance are the points of the invariance curves (Fig. 4), of the
	// model StatsOf names.
	Invariance []InvariancePoint
	// Telemetry is a run's per-step telemetry (appendix figures).
	Telemetry *telemetry.Log
	// TelemetryNote, when Telemetry is nil, says why in place of the
	// telemetry figures (such as a telemetry file of another run).
	TelemetryNote string
	// Metrics are the run's epochs (training curves).
	Metrics []Epoch
	// Reconstructions and Perturbation are images made elsewhere; nil:
	// left out.
	Reconstructions, Perturbation *Figure
	// EdgeMin hides parse-tree edges whose coupling is below it (0:
	// DefaultEdgeMin).
	EdgeMin float64
	// MaxNodes caps the capsules drawn per layer of a parse tree: larger
	// layers show their MaxNodes largest norms (0: DefaultMaxNodes).
	MaxNodes int
	// MaxColumns caps the step columns of a telemetry heatmap: steps are
	// max-pooled into at most this many (0: DefaultMaxColumns), and never
	// more than the figure draws one pixel each (496).
	MaxColumns int
	// DarkNorm is the threshold of the telemetry's dark capsules: those
	// whose largest norm over the batch stayed below it for at least the
	// last 10% of the logged steps (0: telemetry.DefaultDarkNorm).
	DarkNorm float64
}

// Defaults of Input's display settings.
const (
	DefaultEdgeMin    = 0.05
	DefaultMaxNodes   = 32
	DefaultMaxColumns = 480
)

// section is one part of the page.
type section struct {
	id, title string
	body      strings.Builder
}

// Write writes the report of in to w as one HTML document. Inconsistent
// input (sizes that disagree, non-finite values, an undecodable PNG) is
// an error naming the part; nothing is written then.
func Write(w io.Writer, in Input) error {
	if err := in.validate(); err != nil {
		return err
	}
	if in.EdgeMin == 0 {
		in.EdgeMin = DefaultEdgeMin
	}
	if in.MaxNodes == 0 {
		in.MaxNodes = DefaultMaxNodes
	}
	if in.MaxColumns == 0 {
		in.MaxColumns = DefaultMaxColumns
	}
	var secs []*section
	add := func(id, title string, fill func(*strings.Builder) error) error {
		s := &section{id: id, title: title}
		if err := fill(&s.body); err != nil {
			return fmt.Errorf("report: %s: %w", title, err)
		}
		secs = append(secs, s)
		return nil
	}
	steps := []struct {
		id, title string
		fill      func(*strings.Builder) error
	}{
		{"tables", "Tables 1 and 2: parse-tree statistics", in.writeTables},
		{"trees", "Parse trees of sample images (Fig. 2)", in.writeTrees},
		{"views", "One digit, two transformations (Fig. 5)", in.writeViews},
		{"stats", "Couplings and capsule norms: mean and std (Fig. 3)", in.writeStats},
		{"invariance", "Viewpoint invariance (Fig. 4)", in.writeInvariance},
		{"telemetry", "Training telemetry: capsule norms and gradients per step", in.writeTelemetry},
		{"training", "Training curves", in.writeTraining},
		{"images", "Reconstructions and capsule perturbations", in.writeImages},
	}
	for _, s := range steps {
		if err := add(s.id, s.title, s.fill); err != nil {
			return err
		}
	}
	var b strings.Builder
	title := in.Title
	if title == "" {
		title = "Parse-tree report: " + in.Model
	}
	figure.WriteHead(&b, title, figure.FontFace()+figure.CSS+css)
	in.writeSummary(&b)
	b.WriteString("<nav id=\"toc\"><h2>Contents</h2>\n<ol>\n")
	for _, s := range secs {
		fmt.Fprintf(&b, "<li><a href=\"#%s\">%s</a></li>\n", s.id, figure.Esc(s.title))
	}
	b.WriteString("</ol>\n</nav>\n")
	for _, s := range secs {
		fmt.Fprintf(&b, "<section id=\"%s\">\n<h2>%s</h2>\n", s.id, figure.Esc(s.title))
		b.WriteString(s.body.String())
		b.WriteString("</section>\n")
	}
	figure.WriteTail(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// css is the report's style beyond figure.CSS.
const css = `h1{font-size:1.6em}h3{font-size:1.1em;margin:1.2em 0 .4em}
.row{display:flex;flex-wrap:wrap;gap:1em;align-items:flex-start}
.tree{display:flex;gap:.4em;align-items:center;border:1px solid #ddd;padding:.4em;border-radius:4px}
.tree .cap{font-size:.85em}.tree img{width:84px;height:84px;image-rendering:pixelated;border:1px solid #999}
img.fig{max-width:100%;image-rendering:pixelated}
nav#toc ol{columns:2}dl.meta{display:grid;grid-template-columns:max-content auto;gap:.1em 1em}dl.meta dt{font-weight:bold}dl.meta dd{margin:0}
`

func (in *Input) validate() error {
	if in.Tables != nil && (len(in.Tables.Table2) == 0 || len(in.Tables.Table1) != len(in.Tables.Table2)-1) {
		return fmt.Errorf("report: tables: %d rows in Table 1 and %d in Table 2", len(in.Tables.Table1), len(in.Tables.Table2))
	}
	if in.Stats != nil {
		if err := validateStats(in.Stats); err != nil {
			return err
		}
	}
	for k := range in.Samples {
		if err := in.Samples[k].Validate(); err != nil {
			return fmt.Errorf("report: sample %d: %w", k, err)
		}
	}
	for k := range in.Views {
		if err := in.Views[k].Validate(); err != nil {
			return fmt.Errorf("report: view %d: %w", k, err)
		}
	}
	for k, p := range in.Invariance {
		if len(p.Layers) == 0 || len(p.Layers) != len(in.Invariance[0].Layers) || math.IsNaN(p.Magnitude) || math.IsInf(p.Magnitude, 0) {
			return fmt.Errorf("report: invariance point %d (%s %g): %d layers, the first point %d", k, p.Family, p.Magnitude, len(p.Layers), len(in.Invariance[0].Layers))
		}
	}
	if in.Telemetry != nil {
		if err := validateTelemetry(in.Telemetry); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name string
		fig  *Figure
	}{{"reconstructions", in.Reconstructions}, {"perturbation", in.Perturbation}} {
		if f.fig == nil {
			continue
		}
		if len(f.fig.PNG) > MaxPNG {
			return fmt.Errorf("report: %s: a PNG of %d bytes, at most %d", f.name, len(f.fig.PNG), MaxPNG)
		}
		cfg, err := png.DecodeConfig(bytes.NewReader(f.fig.PNG))
		if err != nil {
			return fmt.Errorf("report: %s: %w", f.name, err)
		}
		if cfg.Width <= 0 || cfg.Height <= 0 || int64(cfg.Width)*int64(cfg.Height) > MaxPNGPixels {
			return fmt.Errorf("report: %s: a PNG of %d×%d pixels, at most %d in all", f.name, cfg.Width, cfg.Height, MaxPNGPixels)
		}
	}
	if in.EdgeMin < 0 || in.EdgeMin > 1 || math.IsNaN(in.EdgeMin) || in.MaxNodes < 0 || in.MaxColumns < 0 {
		return fmt.Errorf("report: edge threshold %g (want 0..1), %d nodes and %d columns (want ≥ 0)", in.EdgeMin, in.MaxNodes, in.MaxColumns)
	}
	return nil
}

func validateStats(r *analysis.Report) error {
	if len(r.Layers) == 0 || len(r.Routing) != len(r.Layers)-1 {
		return fmt.Errorf("report: statistics of %d layers and %d routing layers", len(r.Layers), len(r.Routing))
	}
	for l, L := range r.Layers {
		if L.N <= 0 || len(L.NormMean) != L.N || len(L.NormStd) != L.N || len(L.Dead) != L.N {
			return fmt.Errorf("report: statistics of layer %d (%s): %d capsules, %d means, %d stds, %d dead flags", l, L.Name, L.N, len(L.NormMean), len(L.NormStd), len(L.Dead))
		}
	}
	for l, R := range r.Routing {
		if R.NIn != r.Layers[l].N || R.NOut != r.Layers[l+1].N || len(R.CouplingMean) != R.NIn*R.NOut || len(R.CouplingStd) != R.NIn*R.NOut {
			return fmt.Errorf("report: statistics of routing layer %s → %s: %d×%d with %d means and %d stds", R.From, R.To, R.NIn, R.NOut, len(R.CouplingMean), len(R.CouplingStd))
		}
	}
	return nil
}

// writeSummary writes what was analysed.
func (in *Input) writeSummary(b *strings.Builder) {
	b.WriteString("<dl class=\"meta\">\n")
	item := func(k, v string) { fmt.Fprintf(b, "<dt>%s</dt><dd>%s</dd>\n", figure.Esc(k), figure.Esc(v)) }
	item("model", in.Model)
	if in.Data != "" {
		item("data", in.Data)
	}
	for i, c := range in.Checkpoints {
		k := "checkpoint"
		if len(in.Checkpoints) > 1 {
			k = fmt.Sprintf("checkpoint %d", i+1)
		}
		if i < len(in.Accuracy) {
			c = fmt.Sprintf("%s (accuracy %.2f%%)", c, 100*in.Accuracy[i])
		}
		item(k, c)
	}
	if n := len(in.Accuracy); n > 1 {
		var mean, v float64
		for _, a := range in.Accuracy {
			mean += a / float64(n)
		}
		for _, a := range in.Accuracy {
			v += (a - mean) * (a - mean) / float64(n)
		}
		item("accuracy", fmt.Sprintf("%.2f ± %.2f%% over the %d checkpoints", 100*mean, 100*math.Sqrt(v), n))
	}
	if in.Tables != nil {
		item("images", fmt.Sprintf("%d per model", in.Tables.K))
	}
	th := in.Thresholds
	item("thresholds", fmt.Sprintf("ε_active = %g (a capsule is active in an image when its norm is ≥ this), dead when mean norm ≤ ε₁ = %g and std ≤ ε₂ = %g", th.Active, th.Dead1, th.Dead2))
	b.WriteString("</dl>\n")
}

// writeTables writes Tables 1 and 2 as HTML tables.
func (in *Input) writeTables(b *strings.Builder) error {
	t := in.Tables
	if t == nil {
		figure.Note(b, "No statistics given.")
		return nil
	}
	s := fmt.Sprintf("%d image(s)", t.K)
	if t.Models > 1 {
		s += fmt.Sprintf(", mean ± std over %d models", t.Models)
	}
	figure.Note(b, "%s. Table 1: per routing layer, the capsules alive (not dead) on its input and output layers and the routing dynamics dyr and dys (docs/semantics.md §7). Table 2: per capsule layer, the capsule norm mean and sum (cnm, cns), the active capsule rate and count (car, cas) and the dead capsule rate and count (cdr, cds).", s)
	t1, t2 := figure.PaperTables(t)
	figure.WriteTable(b, t1)
	figure.WriteTable(b, t2)
	return nil
}

// writeImages embeds the PNG figures made elsewhere.
func (in *Input) writeImages(b *strings.Builder) error {
	if in.Reconstructions == nil && in.Perturbation == nil {
		figure.Note(b, "No reconstruction or perturbation image given.")
		return nil
	}
	for _, f := range []*Figure{in.Reconstructions, in.Perturbation} {
		if f == nil {
			continue
		}
		// Small images (a grid of digits) are enlarged by a whole factor,
		// pixels kept sharp.
		cfg, err := png.DecodeConfig(bytes.NewReader(f.PNG))
		if err != nil {
			return err
		}
		scale := max(1, min(8, 560/cfg.Width))
		fmt.Fprintf(b, "<figure><img class=\"fig\" width=\"%d\" alt=\"%s\" src=\"%s\"><figcaption>%s</figcaption></figure>\n", scale*cfg.Width, figure.Esc(f.Caption), figure.PNGURI(f.PNG), figure.Esc(f.Caption))
	}
	return nil
}
