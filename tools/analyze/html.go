package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/analysis"
	"github.com/capstan-ml/capstan/capsnet/analysis/report"
	"github.com/capstan-ml/capstan/capsnet/safetensors"
	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/train"
	"github.com/capstan-ml/capstan/train/data"
	"github.com/capstan-ml/capstan/train/eval"
	"github.com/capstan-ml/capstan/train/telemetry"
)

// htmlFlags are the flags of the HTML report.
type htmlFlags struct {
	out, telemetry, metrics string
	samples                 int
	darkNorm                float64
}

func addHTMLFlags(fs *flag.FlagSet) *htmlFlags {
	h := &htmlFlags{}
	fs.StringVar(&h.out, "html", "", "also write the report (tables, parse trees, coupling and norm statistics, invariance curves, telemetry, training curves) as one self-contained HTML file")
	fs.IntVar(&h.samples, "samples", 4, fmt.Sprintf("parse trees of this many test images in the -html report, 0 to %d", eval.MaxSamples))
	fs.StringVar(&h.telemetry, "telemetry", "", "telemetry file of the run for the -html report, plain or gzip-compressed (default "+telemetry.FileName+", else "+telemetry.GzipName+", next to the first checkpoint, when present)")
	fs.Float64Var(&h.darkNorm, "dark-norm", telemetry.DefaultDarkNorm, "the -html report's telemetry lists the capsules whose largest norm over the batch stayed below this for at least the last 10% of the logged steps (dark since a step), in (0, 1e6]")
	fs.StringVar(&h.metrics, "metrics", "", "metrics file of the run for the -html report (default "+train.MetricsName+" next to the first checkpoint, when present)")
	return h
}

func (h *htmlFlags) check() error {
	if h.out == "" {
		return nil
	}
	if err := cli.Float("dark-norm", h.darkNorm, 0, 1e6, true); err != nil {
		return err
	}
	return cli.Int("samples", h.samples, 0, eval.MaxSamples)
}

// firstModel is what the report shows of the first checkpoint beyond the
// tables.
type firstModel struct {
	path string
	p    *capsnet.Params
	b    *data.Batcher
	ds   *data.Dataset
	rep  analysis.Report
	inv  []eval.InvariancePoint
}

// write builds the report of the first checkpoint m and the tables and
// writes it atomically.
func (h *htmlFlags) write(stdout io.Writer, m firstModel, tables analysis.Tables, checkpoints []string, accuracy []float64, th analysis.Thresholds) error {
	if h.out == "" {
		return nil
	}
	in := report.Input{Model: m.p.Config.Name, Data: m.ds.Name, Checkpoints: checkpoints, Accuracy: accuracy, Thresholds: th,
		Tables: &tables, Stats: &m.rep, StatsOf: m.path, DarkNorm: h.darkNorm}
	for _, r := range m.inv {
		in.Invariance = append(in.Invariance, report.InvariancePoint{Family: r.Family.String(), Magnitude: r.Magnitude, K: r.K, Layers: r.Layers})
	}
	if h.samples > 0 {
		s, err := eval.BatcherSamples(m.p, m.b, min(h.samples, m.ds.N))
		if err != nil {
			return fmt.Errorf("-samples: %w", err)
		}
		in.Samples = s
		if in.Views, err = eval.TransformedSamples(m.p, m.ds.Image(0), int(m.ds.Y[0]), eval.DefaultViews); err != nil {
			return fmt.Errorf("-html: %w", err)
		}
	}
	// Reconstructions of the first 16 images and the capsule-dimension
	// perturbations of the first (Sabour et al.'s figures).
	fig, err := eval.ReconstructionFigureOf(m.p, m.b, min(16, m.ds.N), 8)
	if err != nil {
		return fmt.Errorf("-html: reconstructions: %w", err)
	}
	in.Reconstructions = &report.Figure{PNG: fig, Caption: fmt.Sprintf("The first %d images of %s (left of each pair) and the decoder's reconstruction from the predicted class's capsule (right).", min(16, m.ds.N), m.ds.Name)}
	fig, label, class, err := eval.PerturbationFigureAt(m.p, m.ds, 0)
	if err != nil {
		return fmt.Errorf("-html: perturbations: %w", err)
	}
	in.Perturbation = &report.Figure{PNG: fig, Caption: fmt.Sprintf("Image 0 of %s (label %d, predicted %d): the reconstruction from digit capsule %d with one dimension (row) shifted by −0.25 … +0.25 in steps of 0.05 (columns; the middle one unshifted), as in Sabour et al.", m.ds.Name, label, class, class)}
	dir := filepath.Dir(m.path)
	path := h.telemetry
	if path == "" {
		// The run's telemetry.ndjson, or telemetry.ndjson.gz as committed.
		if path, err = telemetry.Find(dir); err != nil {
			return fmt.Errorf("-telemetry: %w", err)
		}
	}
	if path != "" {
		in.Telemetry, err = telemetry.ReadFile(path)
		if err != nil {
			return fmt.Errorf("-telemetry: %w", err)
		}
		if err := printDark(stdout, in.Telemetry, path, h.darkNorm); err != nil {
			return fmt.Errorf("-telemetry: %w", err)
		}
	}
	if path, err := runFile(h.metrics, "metrics", filepath.Join(dir, train.MetricsName)); err != nil {
		return err
	} else if path != "" {
		ms, err := train.ReadMetrics(path)
		if err != nil {
			return fmt.Errorf("-metrics: %w", err)
		}
		for _, e := range ms {
			in.Metrics = append(in.Metrics, report.Epoch{Epoch: e.Epoch, Loss: e.Loss, MarginLoss: e.MarginLoss, ReconLoss: e.ReconLoss,
				TrainAcc: e.TrainAcc, ValAcc: e.ValAcc, TestAcc: testAcc(e)})
		}
	}
	err = safetensors.WriteAtomic(h.out, func(w io.Writer) error { return report.Write(w, in) })
	if err != nil {
		return fmt.Errorf("-html %s: %w", h.out, err)
	}
	return nil
}

// runFile returns the file a flag names, or def when the flag is empty and
// def exists ("" when it does not).
func runFile(flagValue, flagName, def string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if _, err := os.Stat(def); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		return "", fmt.Errorf("-%s: %w", flagName, err)
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
// that went dark and stayed dark to its end (the report's table).
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
	fmt.Fprintf(w, "\nDark capsules in %s (largest norm over the batch below %g from a step to the last, step %d of epoch %d, for ≥ %d logged steps)\n", path, theta, last.Step, last.Epoch, minRec)
	for l, L := range t.Header.Layers {
		var since []string
		for _, d := range telemetry.InLayer(dark, l) {
			since = append(since, fmt.Sprintf("%d@%d", d.Capsule, d.Since))
		}
		list := ""
		if len(since) > 0 {
			list = "  capsule@since-step: " + strings.Join(since, " ")
		}
		fmt.Fprintf(w, "%-10s %3d/%-3d%s\n", L.Name, len(since), L.N, list)
	}
	return nil
}
