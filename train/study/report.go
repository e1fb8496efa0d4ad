package study

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/atomicfile"
	"github.com/capstan-ml/capstan/train"
	"github.com/capstan-ml/capstan/train/eval"
	"github.com/capstan-ml/capstan/train/report"
	"github.com/capstan-ml/capstan/train/telemetry"
)

// ReportOptions say what the HTML report of a Result shows beyond the
// analysis.
type ReportOptions struct {
	// Path is the HTML file written (atomically).
	Path string
	// Samples is the number of test images whose parse trees are drawn,
	// 0 to eval.MaxSamples.
	Samples int
	// Telemetry is the run's telemetry file, plain or gzip-compressed;
	// "": telemetry.Find next to the first checkpoint, none when absent.
	Telemetry string
	// Metrics is the run's metrics file; "": train.MetricsName next to
	// the first checkpoint, none when absent.
	Metrics string
	// DarkNorm is the threshold of dark capsules in the telemetry, in
	// (0, 1e6] (0: telemetry.DefaultDarkNorm).
	DarkNorm float64
}

// WriteReport writes the HTML report (train/report) of the first
// checkpoint and the tables over all to o.Path. With telemetry it also
// prints the dark capsules to w.
func (r *Result) WriteReport(w io.Writer, o ReportOptions) error {
	m := r.first
	if m == nil {
		return errors.New("study: report: no checkpoint analysed")
	}
	if o.Samples < 0 || o.Samples > eval.MaxSamples {
		return fieldErr("Samples", fmt.Errorf("%d, want 0 to %d", o.Samples, eval.MaxSamples))
	}
	if o.DarkNorm < 0 || o.DarkNorm > 1e6 || math.IsNaN(o.DarkNorm) {
		return fieldErr("DarkNorm", fmt.Errorf("%g, want (0, 1e6]", o.DarkNorm))
	}
	if o.DarkNorm == 0 {
		o.DarkNorm = telemetry.DefaultDarkNorm
	}
	var checkpoints []string
	for _, c := range r.Checkpoints {
		checkpoints = append(checkpoints, c.Checkpoint)
	}
	in := report.Input{Model: m.p.Config.Name, Data: m.ds.Name, Checkpoints: checkpoints, Accuracy: r.Accuracies(), Thresholds: r.th,
		Tables: &r.Tables, Stats: &m.rep, StatsOf: m.path, DarkNorm: o.DarkNorm}
	for _, p := range m.inv {
		in.Invariance = append(in.Invariance, report.InvariancePoint{Family: p.Family.String(), Magnitude: p.Magnitude, K: p.K, Layers: p.Layers})
	}
	if err := m.figures(&in, o.Samples); err != nil {
		return err
	}
	if err := m.runFiles(w, &in, o); err != nil {
		return err
	}
	err := atomicfile.Write(o.Path, func(w io.Writer) error { return report.Write(w, in) })
	if err != nil {
		return fieldErr("Path", fmt.Errorf("%s: %w", o.Path, err))
	}
	return nil
}

// figures adds the parse trees of the first samples images and of the
// first image transformed, the reconstructions of the first 16 images and
// the capsule-dimension perturbations of the first (Sabour et al.'s
// figures).
func (m *firstModel) figures(in *report.Input, samples int) error {
	if samples > 0 {
		s, err := eval.BatcherSamples(m.p, m.b, min(samples, m.ds.N))
		if err != nil {
			return fieldErr("Samples", err)
		}
		in.Samples = s
		if in.Views, err = eval.TransformedSamples(m.p, m.ds.Image(0), int(m.ds.Y[0]), eval.DefaultViews); err != nil {
			return fmt.Errorf("study: report: views: %w", err)
		}
	}
	fig, err := eval.ReconstructionFigureOf(m.p, m.b, min(16, m.ds.N), 8)
	if err != nil {
		return fmt.Errorf("study: report: reconstructions: %w", err)
	}
	in.Reconstructions = &report.Figure{PNG: fig, Caption: fmt.Sprintf("The first %d images of %s (left of each pair) and the decoder's reconstruction from the predicted class's capsule (right).", min(16, m.ds.N), m.ds.Name)}
	g, label, err := eval.PerturbationGridAt(m.p, m.ds, 0, 0)
	if err != nil {
		return fmt.Errorf("study: report: perturbations: %w", err)
	}
	in.Perturbation = &report.Figure{PNG: g.PNG, Caption: fmt.Sprintf("Image 0 of %s (label %d, predicted %d): the reconstruction from digit capsule %d with one dimension (row) shifted by −0.25 … +0.25 in steps of 0.05 (columns; the middle one unshifted), as in Sabour et al.; the rows are ranked by the dimension's effect (label: dimension, mean RMS pixel change over the shifts), largest first: %s.", m.ds.Name, label, g.Class, g.Class, effectList(g.Effects, 3))}
	return nil
}

// effectList names the first n ranked dimensions and their effects, as
// "d3 0.118, d2 0.098, d6 0.072".
func effectList(es []eval.DimEffect, n int) string {
	var parts []string
	for _, e := range es[:min(n, len(es))] {
		parts = append(parts, fmt.Sprintf("d%d %.3f", e.Dim, e.Effect))
	}
	return strings.Join(parts, ", ")
}

// runFiles adds the run's telemetry and metrics, named by o or found next
// to the checkpoint, and prints the telemetry's dark capsules to w.
func (m *firstModel) runFiles(w io.Writer, in *report.Input, o ReportOptions) error {
	dir := filepath.Dir(m.path)
	if err := m.telemetry(w, in, o, dir); err != nil {
		return err
	}
	path, err := runFile(o.Metrics, "Metrics", filepath.Join(dir, train.MetricsName))
	if err != nil || path == "" {
		return err
	}
	ms, err := train.ReadMetrics(path)
	if err != nil {
		return fieldErr("Metrics", err)
	}
	for _, e := range ms {
		in.Metrics = append(in.Metrics, report.Epoch{Epoch: e.Epoch, Loss: e.Loss, MarginLoss: e.MarginLoss, ReconLoss: e.ReconLoss,
			TrainAcc: e.TrainAcc, ValAcc: e.ValAcc, TestAcc: testAcc(e)})
	}
	return nil
}

// telemetry adds the run's telemetry (o.Telemetry, or telemetry.Find in
// dir) to the report and prints its dark capsules to w. Telemetry whose
// header does not match the checkpoint (CheckTelemetry) is left out with
// one line to w naming the file and what differs, and a note in the
// report; the rest of the report is kept.
func (m *firstModel) telemetry(w io.Writer, in *report.Input, o ReportOptions, dir string) error {
	path := o.Telemetry
	if path == "" {
		// The run's telemetry.ndjson, or telemetry.ndjson.gz as committed.
		var err error
		if path, err = telemetry.Find(dir); err != nil {
			return fieldErr("Telemetry", err)
		}
	}
	if path == "" {
		return nil
	}
	t, err := telemetry.ReadFile(path)
	if err != nil {
		return fieldErr("Telemetry", err)
	}
	if err := CheckTelemetry(&t.Header, m.p, m.run); err != nil {
		msg := fmt.Sprintf("telemetry %s is not of checkpoint %s: %v; its figures are left out", path, m.path, err)
		in.TelemetryNote = msg + "."
		_, err := fmt.Fprintf(w, "warning: %s\n", msg)
		return err
	}
	if err := printDark(w, t, path, o.DarkNorm); err != nil {
		return fieldErr("Telemetry", err)
	}
	in.Telemetry = t
	return nil
}

// CheckTelemetry compares a telemetry header with the checkpoint of
// parameters p and run id run (its metadata "run", "" when it has none):
// model name, capsule layer sizes, and run ids when both have one
// (telemetry.Header.Matches). Nil when they agree.
func CheckTelemetry(h *telemetry.Header, p *capsnet.Params, run string) error {
	l := p.Layout
	layers := []telemetry.Layer{{Name: "primary", N: l.Primary.N, D: l.Primary.D}}
	for _, c := range l.Caps {
		layers = append(layers, telemetry.Layer{Name: c.Name, N: c.Out, D: c.Dim})
	}
	return h.Matches(p.Config.Name, layers, run)
}

// runFile returns the file an option names, or def when the option is
// empty and def exists ("" when it does not).
func runFile(value, field, def string) (string, error) {
	if value != "" {
		return value, nil
	}
	if _, err := os.Stat(def); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		return "", fieldErr(field, err)
	}
	return def, nil
}

// testAcc is an epoch's test accuracy, NaN for runs that did not record
// one (before the validation split existed, the test set was the
// validation).
func testAcc(e train.EpochMetrics) float64 {
	if e.TestAcc > 0 {
		return e.TestAcc
	}
	return math.NaN()
}

// printDark prints, per capsule layer, the capsules of a telemetry log
// that went dark and stayed dark to its end (the report's table), then
// every capsule's death and revivals (telemetry.Log.Deaths) with, when the
// log has w_norm, the norms of a dead capsule's votes matrices.
func printDark(w io.Writer, t *telemetry.Log, path string, theta float64) error {
	if len(t.Records) == 0 {
		return nil
	}
	minRec := telemetry.DarkMinRecords(len(t.Records))
	dark, err := t.DarkCapsules(theta, minRec)
	if err != nil {
		return err
	}
	last := t.Records[len(t.Records)-1]
	var b strings.Builder
	fmt.Fprintf(&b, "\nDark capsules in %s (largest norm over the batch below %g from a step to the last, step %d of epoch %d, for ≥ %d logged steps)\n", path, theta, last.Step, last.Epoch, minRec)
	for l, L := range t.Header.Layers {
		var since []string
		for _, d := range telemetry.InLayer(dark, l) {
			since = append(since, fmt.Sprintf("%d@%d", d.Capsule, d.Since))
		}
		list := ""
		if len(since) > 0 {
			list = "  capsule@since-step: " + strings.Join(since, " ")
		}
		fmt.Fprintf(&b, "%-10s %3d/%-3d%s\n", L.Name, len(since), L.N, list)
	}
	deaths, err := t.Deaths(theta, minRec)
	if err != nil {
		return err
	}
	if len(deaths) > 0 {
		fmt.Fprintf(&b, "\nDeaths and revivals (below %g for ≥ %d logged steps; a revival: a step at or above it after such a stretch)", theta, minRec)
		if !t.HasWNorm() {
			b.WriteString("; the log has no w_norm (votes-matrix norms), written before they were recorded")
		}
		b.WriteString("\n")
	}
	for _, d := range deaths {
		fmt.Fprintf(&b, "%-10s capsule %d: ", t.Header.Layers[d.Layer].Name, d.Capsule)
		if d.Dead {
			fmt.Fprintf(&b, "dead since step %d (epoch %d)", d.Since, d.Epoch)
		} else {
			b.WriteString("alive at the end")
		}
		fmt.Fprintf(&b, ", %d revival(s)\n", len(d.Revivals))
		for _, r := range d.Revivals {
			fmt.Fprintf(&b, "%-10s   revived: %s\n", "", r)
		}
		if d.Out != nil {
			fmt.Fprintf(&b, "%-10s   ‖W[j,i]‖ out: %s\n", "", d.Out)
		}
		if d.In != nil {
			fmt.Fprintf(&b, "%-10s   ‖W[i,k]‖ in:  %s\n", "", d.In)
		}
	}
	_, err = io.WriteString(w, b.String())
	return err
}
