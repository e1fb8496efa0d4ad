package sweep

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/train/sweep"
)

func init() { commands["collect"] = collectCmd }

const collectSummary = "sweep collect: reads a sweep's result files and writes the appendix tables (accuracy per architecture and routing kind, best RBA models with their uniform baselines, Tables 1 and 2); usage: sweep collect -manifest DIR/manifest.ndjson [flags]"

const collectNotes = `Missing, failed and invalid results are listed, never an error: collect can run
while the sweep does. The tables have a column per routing kind: RBA and
uniform always, every other kind (self-attention, …) once a task of it is
done; the JSON keeps "rba" and "uniform" per architecture and adds "kinds"
(every column's kind by name) and "routing" (the columns' kinds). The best
models and Tables 1 and 2 are RBA's. A sweep with optimizer axes or telemetry
gets a section of its variants and, when their analyses span two depths or
more, a depth trend (dead capsules per layer, alive capsules per routing layer,
accuracy against depth; -depth-png draws it, an error with fewer depths). With
none of -markdown, -html, -json the Markdown goes to standard output (only the
figures when -deaths-png or -depth-png is given).
`

func collectCmd(args []string) error {
	fs := flag.NewFlagSet("sweep collect", flag.ContinueOnError)
	cli.SetUsage(fs, collectSummary, collectNotes)
	manifest := fs.String("manifest", "", "the sweep's manifest (sweep plan's DIR/manifest.ndjson)")
	md := fs.String("markdown", "", "Markdown file of the tables")
	htmlPath := fs.String("html", "", "HTML page of the tables and the accuracy heatmaps")
	png := fs.String("deaths-png", "", "PNG figure of the dead capsules against the weight-decay coefficient, one line per model, form and ε (a sweep with optimizer axes: docs/sweeps.md)")
	depthPNG := fs.String("depth-png", "", "PNG figure of the depth trend: dead capsules of each hidden layer per depth L, and accuracy against L per routing kind (variants with an analysis at two depths or more: docs/sweeps.md)")
	jsonPath := fs.String("json", "", "JSON file of the summary (schema "+sweep.SummarySchema+", snake_case keys; docs/json.md)")
	if err := cli.Parse(fs, args, 0, os.Stdout); err != nil {
		return err
	}
	if *manifest == "" {
		return cli.Usagef("-manifest is required (see -h)")
	}
	outputs := []cli.Path{{Flag: "-markdown", Value: *md}, {Flag: "-html", Value: *htmlPath}, {Flag: "-json", Value: *jsonPath}, {Flag: "-deaths-png", Value: *png}, {Flag: "-depth-png", Value: *depthPNG}}
	if err := cli.CheckOutputs(outputs, collectInputs(*manifest)); err != nil {
		return err
	}
	s, err := sweep.Collect(*manifest)
	if err != nil {
		return err
	}
	if *png != "" {
		if err := s.WriteDeathsPNG(*png); err != nil {
			return fmt.Errorf("-deaths-png: %w", err)
		}
	}
	if *depthPNG != "" {
		if err := s.WriteDepthPNG(*depthPNG); err != nil {
			return fmt.Errorf("-depth-png: %w", err)
		}
	}
	if *md == "" && *htmlPath == "" && *jsonPath == "" {
		if *png != "" || *depthPNG != "" {
			for _, f := range []struct {
				path  string
				depth bool
			}{{*png, false}, {*depthPNG, true}} {
				if f.path != "" {
					cli.Wrote(os.Stdout, f.path, pngNote(f.depth))
				}
			}
			return nil
		}
		return s.WriteMarkdown(os.Stdout)
	}
	if err := s.WriteFiles(*md, *htmlPath, *jsonPath); err != nil {
		return err
	}
	for _, f := range []struct{ path, note string }{{*md, "Markdown tables"}, {*htmlPath, "HTML page"}, {*jsonPath, "JSON, schema " + sweep.SummarySchema}, {*png, pngNote(false)}, {*depthPNG, pngNote(true)}} {
		if f.path != "" {
			cli.Wrote(os.Stdout, f.path, f.note)
		}
	}
	fmt.Fprintln(os.Stderr, s.Counts())
	return nil
}

// pngNote is the note of collect's line on a PNG it wrote: the deaths
// figure's or, depth, the depth trend's.
func pngNote(depth bool) string {
	if depth {
		return "depth-trend figure, PNG"
	}
	return "figure, PNG"
}

// collectInputs are the files collect reads: the manifest and, when it
// can be read (Collect reports it otherwise), every task's result file.
func collectInputs(manifest string) []cli.Path {
	inputs := []cli.Path{{Flag: "-manifest", Value: manifest}}
	tasks, err := sweep.ReadManifest(manifest)
	if err != nil {
		return inputs
	}
	dir := filepath.Dir(manifest)
	for i, t := range tasks {
		if t.Result != "" {
			inputs = append(inputs, cli.Path{Flag: "-manifest", Value: sweep.Path(dir, t.Result), Note: fmt.Sprintf("task %d's result file", i)})
		}
	}
	return inputs
}
