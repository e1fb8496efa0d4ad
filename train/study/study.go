// Package study analyses one or more checkpoints of one model
// configuration on a data set the way "Why Capsule Neural Networks Do Not
// Scale" does (docs/semantics.md §7): per checkpoint the parse-tree statistics (the
// paper's Tables 1 and 2), the per-capsule and per-coupling figures
// behind its Fig. 3, the accuracy on the analysed images (from the same
// pass) and optionally the viewpoint-invariance curves (Fig. 4); over all
// checkpoints the tables as mean ± std. A Result prints as text or
// Markdown, writes as JSON (the schema of tools/analyze -json) and, with
// the first checkpoint's run files, as the HTML report of train/report.
//
// tools/analyze is this package wired to flags. Errors about an option
// are a *FieldError naming the Options or ReportOptions field.
package study

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/analysis"
	"github.com/capstan-ml/capstan/train/data"
	"github.com/capstan-ml/capstan/train/eval"
)

// Options say what to analyse.
type Options struct {
	// Checkpoints are the checkpoint files, one model configuration
	// (seeds of one architecture): at least one.
	Checkpoints []string
	// Data names the images (a data.TestSets name), DataDir the directory
	// holding the data set, Seed the seed of AffNIST's transformations.
	Data, DataDir string
	Seed          uint64
	// K is the number of images to analyse (0: all of the data set).
	K int
	// Batch is the batch size, 1 to capsnet.MaxBatch (memory does not
	// grow with K).
	Batch int
	// Thresholds are the constants of docs/semantics.md §7.
	Thresholds analysis.Thresholds
	// Families are the transformation families whose invariance is
	// measured, each over its default magnitudes; none: not measured.
	Families []data.Family
	// ReconPath, when set, is where the first checkpoint's reconstruction
	// of the first 16 images is written as a PNG.
	ReconPath string
	// Notes receives notes (images rescaled to the model's input),
	// Warnings a warning per checkpoint evaluated on data it was not
	// trained for; nil discards.
	Notes, Warnings io.Writer
}

// FieldError is an error about the option Field (an Options or
// ReportOptions field name, such as "Checkpoints").
type FieldError struct {
	Field string
	Err   error
}

// Error names the field and the error.
func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap returns the error about the field.
func (e *FieldError) Unwrap() error { return e.Err }

func fieldErr(field string, err error) error { return &FieldError{Field: field, Err: err} }

// Schema is the version of the JSON that WriteJSON writes (tools/analyze
// -json), its "schema" key: docs/json.md documents it. A change of its
// keys or their meaning takes the next number.
const Schema = "capstan-analyze/1"

// Result is the analysis of the checkpoints. Its exported fields are the
// JSON that WriteJSON writes (tools/analyze -json), in this order, every
// key snake_case.
type Result struct {
	// Schema is Schema (WriteJSON sets it).
	Schema string `json:"schema"`
	// Data is the analysed data set's name.
	Data string `json:"data"`
	// Accuracy is the accuracy on the analysed images over the
	// checkpoints.
	Accuracy MeanStd `json:"accuracy"`
	// Tables are Tables 1 and 2 over the checkpoints, mean ± std.
	Tables analysis.Tables `json:"tables"`
	// Checkpoints are each checkpoint's figures, in the order given.
	Checkpoints []Checkpoint `json:"checkpoints"`

	first *firstModel // what the HTML report shows beyond the tables
	th    analysis.Thresholds
}

// Checkpoint is one checkpoint's figures.
type Checkpoint struct {
	Checkpoint string          `json:"checkpoint"`
	Model      string          `json:"model"`
	Tables     analysis.Tables `json:"tables"`
	// Accuracy is the fraction of the analysed images classified
	// correctly (Correct of Images).
	Accuracy float64 `json:"accuracy"`
	Correct  int     `json:"correct"`
	Images   int     `json:"images"`
	// Capsules and Couplings are the per-capsule and per-coupling
	// figures behind the paper's Fig. 3.
	Capsules   []CapsuleFigures  `json:"capsules"`
	Couplings  []CouplingFigures `json:"couplings"`
	Invariance []InvariancePoint `json:"invariance,omitempty"`
}

// CapsuleFigures are one capsule layer's per-capsule norm mean and
// population std over the analysed images, and which capsules are dead.
type CapsuleFigures struct {
	Layer    string    `json:"layer"`
	NormMean []float64 `json:"norm_mean"`
	NormStd  []float64 `json:"norm_std"`
	Dead     []bool    `json:"dead"`
}

// CouplingFigures are one routing layer's coupling mean and population
// std over the analysed images, c[i,j] at i·NOut + j.
type CouplingFigures struct {
	From string    `json:"from"`
	To   string    `json:"to"`
	NIn  int       `json:"n_in"`
	NOut int       `json:"n_out"`
	Mean []float64 `json:"mean"`
	Std  []float64 `json:"std"`
}

// MeanStd is the mean and population standard deviation of a figure over
// the checkpoints.
type MeanStd struct {
	Mean float64 `json:"mean"`
	Std  float64 `json:"std"`
}

// InvariancePoint is an eval.InvariancePoint as printed and written to
// JSON: the family by name, and a layer's corr null when undefined (every
// capsule dead), which JSON cannot hold as NaN.
type InvariancePoint struct {
	Family    string            `json:"family"`
	Magnitude float64           `json:"magnitude"`
	K         int               `json:"k"`
	Layers    []InvarianceLayer `json:"layers"`
}

// InvarianceLayer is one capsule layer's mean correlation (nil when
// undefined) and the capsules left out of it.
type InvarianceLayer struct {
	Name    string   `json:"name"`
	Corr    *float64 `json:"corr"`
	Skipped int      `json:"skipped"`
}

// firstModel is what the report shows of the first checkpoint beyond the
// tables.
type firstModel struct {
	path string
	run  string // the checkpoint's metadata "run" ("" when it has none)
	p    *capsnet.Params
	b    *data.Batcher
	ds   *data.Dataset
	rep  analysis.Report
	inv  []eval.InvariancePoint
}

func (o *Options) validate() error {
	switch {
	case len(o.Checkpoints) == 0:
		return fieldErr("Checkpoints", errors.New("none given"))
	case o.Batch < 1 || o.Batch > capsnet.MaxBatch:
		return fieldErr("Batch", fmt.Errorf("%d, want 1 to %d", o.Batch, capsnet.MaxBatch))
	case o.K < 0 || o.K > data.MaxImages:
		return fieldErr("K", fmt.Errorf("%d, want 0 to %d", o.K, data.MaxImages))
	}
	return nil
}

// Run analyses the checkpoints of o on its data set. Checkpoints of
// different model configurations are an error: the tables average seeds
// of one.
func Run(o Options) (*Result, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	ds, err := data.LoadTest(o.Data, o.DataDir, o.Seed)
	if err != nil {
		return nil, fieldErr("Data", fmt.Errorf("%s: %w", o.Data, err))
	}
	res := &Result{Schema: Schema, Data: ds.Name, th: o.Thresholds}
	var reps []analysis.Report
	var model *capsnet.Config // the first checkpoint's: every other must hold the same
	for _, path := range o.Checkpoints {
		p, run, err := readParams(path, o)
		if err != nil {
			return nil, err
		}
		if model == nil {
			model = &p.Config
		} else if p.Config.JSON() != model.JSON() {
			return nil, fieldErr("Checkpoints", fmt.Errorf("%s holds model %s, %s holds %s: the tables average models of one configuration (seeds); analyse others separately", path, p.Config.Name, o.Checkpoints[0], model.Name))
		}
		c, m, err := analyseOne(path, p, ds, o, len(res.Checkpoints) == 0)
		if err != nil {
			return nil, err
		}
		if res.first == nil {
			res.first = m
			m.run = run
		}
		res.Checkpoints = append(res.Checkpoints, c)
		reps = append(reps, m.rep)
	}
	if res.Tables, err = analysis.Summarize(reps); err != nil {
		return nil, fmt.Errorf("study: tables: %w", err)
	}
	res.Accuracy = meanStd(res.Accuracies())
	return res, nil
}

// readParams reads a checkpoint's parameters and run id (its metadata
// "run", "" when it has none), warning when it is evaluated on data it
// was not trained for.
func readParams(path string, o Options) (*capsnet.Params, string, error) {
	ck, err := capsnet.ReadCheckpoint(path)
	if err != nil {
		return nil, "", fieldErr("Checkpoints", err)
	}
	if msg := data.EvalWarning(ck.Meta["data"], o.Data); msg != "" && o.Warnings != nil {
		fmt.Fprintf(o.Warnings, "warning: %s: %s\n", path, msg)
	}
	p, err := ck.Params(nil)
	if err != nil {
		return nil, "", fieldErr("Checkpoints", fmt.Errorf("%s: %w", path, err))
	}
	return p, ck.Meta["run"], nil
}

// analyseOne analyses the checkpoint at path (parameters p) on ds: its
// figures and what the report shows of it. The first checkpoint also
// writes o.ReconPath.
func analyseOne(path string, p *capsnet.Params, ds *data.Dataset, o Options, first bool) (Checkpoint, *firstModel, error) {
	in := p.Config.Input
	if in[0] != ds.C {
		return Checkpoint{}, nil, fmt.Errorf("model %s takes %d channel(s), %s has %d", p.Config.Name, in[0], ds.Name, ds.C)
	}
	cfg := data.BatchConfig{Size: min(o.Batch, ds.N), Placement: data.PlacementFor(ds.H, ds.W, in[1], in[2]), CanvasH: in[1], CanvasW: in[2]}
	b, err := data.NewBatcher(ds, cfg)
	if err != nil {
		return Checkpoint{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	ib := b // the invariance sweep transforms larger images before rescaling them
	if cfg.Placement == data.PlacementRescale {
		if o.Notes != nil {
			fmt.Fprintf(o.Notes, "note: %s: the %d×%d images of %s are rescaled to %d×%d (area averaging; the invariance measure transforms them before)\n", path, ds.H, ds.W, ds.Name, in[1], in[2])
		}
		if ib, err = data.NewBatcher(ds, data.BatchConfig{Size: cfg.Size}); err != nil {
			return Checkpoint{}, nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if o.ReconPath != "" && first {
		fig, err := eval.ReconstructionFigureOf(p, b, 16, 8)
		if err == nil {
			err = eval.WriteFigure(o.ReconPath, fig)
		}
		if err != nil {
			return Checkpoint{}, nil, fieldErr("ReconPath", err)
		}
	}
	rep, score, err := eval.ParseTreeScored(p, b, o.K, o.Thresholds)
	if err != nil {
		return Checkpoint{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	one, err := analysis.Summarize([]analysis.Report{rep})
	if err != nil {
		return Checkpoint{}, nil, fmt.Errorf("%s: tables: %w", path, err)
	}
	m := &firstModel{path: path, p: p, b: b, ds: ds, rep: rep}
	var pts []InvariancePoint
	if len(o.Families) > 0 {
		if m.inv, err = eval.Invariance(p, ib, o.K, o.Families, nil); err != nil {
			return Checkpoint{}, nil, fmt.Errorf("%s: %w", path, err)
		}
		pts = invariancePoints(m.inv)
	}
	c := Checkpoint{path, p.Config.Name, one, score.Accuracy(), score.Correct, score.Total, capsules(rep), couplings(rep), pts}
	return c, m, nil
}

func capsules(rep analysis.Report) []CapsuleFigures {
	out := make([]CapsuleFigures, len(rep.Layers))
	for i, l := range rep.Layers {
		out[i] = CapsuleFigures{l.Name, l.NormMean, l.NormStd, l.Dead}
	}
	return out
}

func couplings(rep analysis.Report) []CouplingFigures {
	out := make([]CouplingFigures, len(rep.Routing))
	for i, r := range rep.Routing {
		out[i] = CouplingFigures{r.From, r.To, r.NIn, r.NOut, r.CouplingMean, r.CouplingStd}
	}
	return out
}

func invariancePoints(res []eval.InvariancePoint) []InvariancePoint {
	out := make([]InvariancePoint, len(res))
	for i, r := range res {
		out[i] = InvariancePoint{Family: r.Family.String(), Magnitude: r.Magnitude, K: r.K}
		for _, l := range r.Layers {
			il := InvarianceLayer{Name: l.Name, Skipped: l.Skipped}
			if !math.IsNaN(l.Corr) {
				c := l.Corr
				il.Corr = &c
			}
			out[i].Layers = append(out[i].Layers, il)
		}
	}
	return out
}

// Accuracies returns each checkpoint's accuracy, in order.
func (r *Result) Accuracies() []float64 {
	accs := make([]float64, len(r.Checkpoints))
	for i, c := range r.Checkpoints {
		accs[i] = c.Accuracy
	}
	return accs
}

// meanStd is the mean and population std of xs.
func meanStd(xs []float64) MeanStd {
	var s MeanStd
	for _, a := range xs {
		s.Mean += a / float64(len(xs))
	}
	for _, a := range xs {
		s.Std += (a - s.Mean) * (a - s.Mean) / float64(len(xs))
	}
	s.Std = math.Sqrt(s.Std)
	return s
}
