// Package analyze is the analyze command: tools/analyze (go run ./tools/analyze) and
// capstan analyze (tools/capstan) are thin wrappers of its Main. See
// tools/analyze for what it does.
package analyze

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/analysis"
	"github.com/capstan-ml/capstan/capsnet/atomicfile"
	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/train"
	"github.com/capstan-ml/capstan/train/data"
	"github.com/capstan-ml/capstan/train/study"
	"github.com/capstan-ml/capstan/train/telemetry"
)

// Main runs the analyze command with args (the arguments after its name) and
// returns its exit status; it prints on os.Stdout and os.Stderr. tools/analyze
// and capstan analyze both call it.
func Main(args []string) int {
	return cli.Exit(os.Stderr, "analyze", run(args, os.Stdout))
}

const (
	summary = "analyze: parse-tree statistics (the paper's Tables 1 and 2) of checkpoints on a data set; usage: analyze [flags]"
	notes   = `Exit status: 0 done, 1 error (a file, model or data set), 2 bad flag, flag
value or argument.
`
)

var analyzeData = data.TestSets

// files is a repeatable string flag.
type files []string

// String returns the files joined by commas (flag.Value).
func (f *files) String() string { return strings.Join(*f, ",") }

// Set adds a file (flag.Value).
func (f *files) Set(s string) error { *f = append(*f, s); return nil }

// config is what the flags ask for.
type config struct {
	study.Options
	markdown bool
	json     string
	html     *htmlFlags
}

// parse reads the flags into a config, checking their values.
func parse(args []string, stdout io.Writer) (*config, error) {
	fs := flag.NewFlagSet("analyze", flag.ContinueOnError)
	cli.SetUsage(fs, summary, notes)
	c := &config{Options: study.Options{Thresholds: analysis.DefaultThresholds(), Notes: stdout, Warnings: os.Stderr}}
	var cks files
	fs.Var(&cks, "checkpoint", "checkpoint to analyse; repeat for several models of one architecture (default runs/default/checkpoint.safetensors)")
	fs.StringVar(&c.Data, "data", "embedded", "test images: "+cli.SetList(analyzeData)+" (NAME-val: the validation split held out of NAME's training images; AffNIST generated from the MNIST / embedded test digits)")
	fs.StringVar(&c.DataDir, "data-dir", "", "directory holding the data set")
	fs.Uint64Var(&c.Seed, "seed", 1, "seed of the AffNIST transformations")
	fs.IntVar(&c.K, "k", 0, "images to analyse (0: all of the data set)")
	fs.IntVar(&c.Batch, "batch", 100, fmt.Sprintf("batch size, 1 to %d (memory does not grow with -k)", capsnet.MaxBatch))
	th := &c.Thresholds
	fs.Float64Var(&th.Active, "active", th.Active, "ε_active: a capsule is active in an image when its norm is ≥ this")
	fs.Float64Var(&th.Dead1, "dead-mean", th.Dead1, "ε₁: a capsule is dead when the mean of its norms is ≤ this (and their std ≤ -dead-std)")
	fs.Float64Var(&th.Dead2, "dead-std", th.Dead2, "ε₂: the std bound of a dead capsule")
	inv := fs.String("invariance", "", "also measure viewpoint invariance for these transformation families (comma-separated: rotation, shear, scale, translate-x, translate-y, or all), each over its default magnitudes")
	fs.BoolVar(&c.markdown, "markdown", false, "print the tables as Markdown")
	fs.StringVar(&c.json, "json", "", "also write every figure to this JSON file: the tables and accuracy for each checkpoint and over all, each checkpoint's per-capsule norms and per-coupling means and stds (Fig. 3) and invariance curves; schema "+study.Schema+", snake_case keys (docs/json.md)")
	fs.StringVar(&c.ReconPath, "recon", "", "also write a PNG of the first 16 images beside their reconstructions by the (first) checkpoint to this file")
	c.html = addHTMLFlags(fs)
	if err := cli.Parse(fs, args, 0, stdout); err != nil {
		return nil, err
	}
	if err := c.html.check(); err != nil {
		return nil, err
	}
	if err := cli.Int("batch", c.Batch, 1, capsnet.MaxBatch); err != nil {
		return nil, err
	}
	if err := cli.Int("k", c.K, 0, data.MaxImages); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"active", th.Active}, {"dead-mean", th.Dead1}, {"dead-std", th.Dead2}} {
		if err := cli.Float(f.name, f.v, 0, 1e6, false); err != nil {
			return nil, err
		}
	}
	if !slices.Contains(analyzeData, c.Data) {
		return nil, cli.Usagef("-data %q: want one of %s", c.Data, strings.Join(analyzeData, ", "))
	}
	if *inv == "all" {
		c.Families = data.Families()
	} else if *inv != "" {
		for _, name := range strings.Split(*inv, ",") {
			f, err := data.ParseFamily(strings.TrimSpace(name))
			if err != nil {
				return nil, cli.Usagef("-invariance: %v", err)
			}
			c.Families = append(c.Families, f)
		}
	}
	if err := cli.CheckDataDir(c.DataDir, c.Data); err != nil {
		return nil, err
	}
	c.Checkpoints = cks
	if len(c.Checkpoints) == 0 {
		c.Checkpoints = []string{"runs/default/checkpoint.safetensors"}
	}
	return c, c.checkOutputs(len(cks) == 0)
}

// checkOutputs refuses a -json, -html or -recon that would replace an
// input or another output (cli.CheckOutputs): a checkpoint (defaultCk:
// the default one), the -telemetry and -metrics files, or when not given
// the run's telemetry (plain or gzip) and metrics files present beside
// the first checkpoint, which the report reads, and the files of the
// -data set.
func (c *config) checkOutputs(defaultCk bool) error {
	var inputs []cli.Path
	for _, ck := range c.Checkpoints {
		p := cli.Path{Flag: "-checkpoint", Value: ck}
		if defaultCk {
			p.Note = "default"
		}
		inputs = append(inputs, p)
	}
	dir := filepath.Dir(c.Checkpoints[0])
	for _, f := range []struct{ flag, value, defaults string }{
		{"-telemetry", c.html.telemetry, telemetry.FileName + " " + telemetry.GzipName},
		{"-metrics", c.html.metrics, train.MetricsName},
	} {
		if f.value != "" {
			inputs = append(inputs, cli.Path{Flag: f.flag, Value: f.value})
			continue
		}
		for _, name := range strings.Fields(f.defaults) {
			if p := filepath.Join(dir, name); exists(p) {
				inputs = append(inputs, cli.Path{Flag: f.flag, Value: p, Note: "default: beside -checkpoint"})
			}
		}
	}
	inputs = append(inputs, cli.DataInputs(c.Data, c.DataDir)...)
	outputs := []cli.Path{{Flag: "-json", Value: c.json}, {Flag: "-html", Value: c.html.out}, {Flag: "-recon", Value: c.ReconPath}}
	return cli.CheckOutputs(outputs, inputs)
}

// exists reports whether a file is at path.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func run(args []string, stdout io.Writer) error {
	c, err := parse(args, stdout)
	if err != nil {
		return err
	}
	res, err := study.Run(c.Options)
	if err != nil {
		return flagError(err)
	}
	if err := res.WriteText(stdout, c.markdown); err != nil {
		return err
	}
	if c.ReconPath != "" {
		cli.Wrote(stdout, c.ReconPath, "reconstructions, PNG")
	}
	if err := c.html.write(stdout, res); err != nil {
		return flagError(err)
	}
	if c.html.out != "" {
		cli.Wrote(stdout, c.html.out, "HTML report")
	}
	if c.json == "" {
		return nil
	}
	if err := atomicfile.Write(c.json, res.WriteJSON); err != nil {
		return fmt.Errorf("-json %s: %w", c.json, err)
	}
	cli.Wrote(stdout, c.json, "JSON, schema "+study.Schema)
	return nil
}

// flagOf maps the fields of study.Options and study.ReportOptions to
// their flags.
var flagOf = map[string]string{
	"Checkpoints": "checkpoint", "Data": "data", "Batch": "batch", "K": "k", "ReconPath": "recon",
	"Path": "html", "Samples": "samples", "Telemetry": "telemetry", "Metrics": "metrics", "DarkNorm": "dark-norm",
}

// flagError names the flag of an error about a study option.
func flagError(err error) error {
	var fe *study.FieldError
	if errors.As(err, &fe) {
		if f, ok := flagOf[fe.Field]; ok {
			return fmt.Errorf("-%s: %w", f, fe.Err)
		}
	}
	return err
}
