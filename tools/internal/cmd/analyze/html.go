package analyze

import (
	"flag"
	"fmt"
	"io"

	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/train"
	"github.com/capstan-ml/capstan/train/eval"
	"github.com/capstan-ml/capstan/train/study"
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

// write writes the report of res when -html is given.
func (h *htmlFlags) write(stdout io.Writer, res *study.Result) error {
	if h.out == "" {
		return nil
	}
	return res.WriteReport(stdout, study.ReportOptions{Path: h.out, Samples: h.samples, Telemetry: h.telemetry, Metrics: h.metrics, DarkNorm: h.darkNorm})
}
