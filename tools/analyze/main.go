// Command analyze prints the parse-tree statistics of "Why Capsule Neural
// Networks Do Not Scale" (spec §7) for one or more checkpoints: the
// paper's Table 1 (capsules alive, dyr, dys per routing layer) and Table 2
// (cnm, cns, car, cas, cdr, cds per capsule layer), as text or Markdown,
// mean ± std over the checkpoints when several are given, with their
// accuracy on the analysed images (from the same pass); -json writes every
// figure; -html writes the whole analysis with its figures as one
// self-contained HTML page (docs/report.md).
//
//	go run ./tools/analyze                                   # the default run, embedded test digits
//	go run ./tools/analyze -checkpoint a.safetensors -checkpoint b.safetensors -data affnist-embedded
//	go run ./tools/analyze -markdown -json stats.json
//	go run ./tools/analyze -invariance all -html report.html
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/analysis"
	"github.com/capstan-ml/capstan/capsnet/safetensors"
	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/train/data"
	"github.com/capstan-ml/capstan/train/eval"
)

func main() {
	os.Exit(cli.Exit(os.Stderr, "analyze", run(os.Args[1:], os.Stdout)))
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

func (f *files) String() string     { return strings.Join(*f, ",") }
func (f *files) Set(s string) error { *f = append(*f, s); return nil }

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("analyze", flag.ContinueOnError)
	cli.SetUsage(fs, summary, notes)
	var cks files
	fs.Var(&cks, "checkpoint", "checkpoint to analyse; repeat for several models of one architecture (default runs/default/checkpoint.safetensors)")
	dataName := fs.String("data", "embedded", "test images: "+strings.Join(analyzeData, ", ")+" (AffNIST generated from the MNIST / embedded test digits)")
	dataDir := fs.String("data-dir", "", "directory holding the data set")
	seed := fs.Uint64("seed", 1, "seed of the AffNIST transformations")
	k := fs.Int("k", 0, "images to analyse (0: all of the data set)")
	batch := fs.Int("batch", 100, fmt.Sprintf("batch size, 1 to %d (memory does not grow with -k)", capsnet.MaxBatch))
	th := analysis.DefaultThresholds()
	fs.Float64Var(&th.Active, "active", th.Active, "ε_active: a capsule is active in an image when its norm is ≥ this")
	fs.Float64Var(&th.Dead1, "dead-mean", th.Dead1, "ε₁: a capsule is dead when the mean of its norms is ≤ this (and their std ≤ -dead-std)")
	fs.Float64Var(&th.Dead2, "dead-std", th.Dead2, "ε₂: the std bound of a dead capsule")
	inv := fs.String("invariance", "", "also measure viewpoint invariance for these transformation families (comma-separated: rotation, shear, scale, translate-x, translate-y, or all), each over its default magnitudes")
	markdown := fs.Bool("markdown", false, "print the tables as Markdown")
	jsonOut := fs.String("json", "", "also write every figure to this JSON file: the tables and accuracy for each checkpoint and over all, each checkpoint's per-capsule norms and per-coupling means and stds (Fig. 3) and invariance curves")
	recon := fs.String("recon", "", "also write a PNG of the first 16 images beside their reconstructions by the (first) checkpoint to this file")
	hf := addHTMLFlags(fs)
	if err := cli.Parse(fs, args, 0, stdout); err != nil {
		return err
	}
	if err := hf.check(); err != nil {
		return err
	}
	if err := cli.Int("batch", *batch, 1, capsnet.MaxBatch); err != nil {
		return err
	}
	if err := cli.Int("k", *k, 0, data.MaxImages); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"active", th.Active}, {"dead-mean", th.Dead1}, {"dead-std", th.Dead2}} {
		if err := cli.Float(f.name, f.v, 0, 1e6, false); err != nil {
			return err
		}
	}
	if !slices.Contains(analyzeData, *dataName) {
		return cli.Usagef("-data %q: want one of %s", *dataName, strings.Join(analyzeData, ", "))
	}
	var families []data.Family
	if *inv == "all" {
		families = data.Families()
	} else if *inv != "" {
		for _, name := range strings.Split(*inv, ",") {
			f, err := data.ParseFamily(strings.TrimSpace(name))
			if err != nil {
				return cli.Usagef("-invariance: %v", err)
			}
			families = append(families, f)
		}
	}
	if len(cks) == 0 {
		cks = files{"runs/default/checkpoint.safetensors"}
	}
	ds, err := data.LoadTest(*dataName, *dataDir, *seed)
	if err != nil {
		return fmt.Errorf("-data %s: %w", *dataName, err)
	}
	type perCheckpoint struct {
		Checkpoint string
		Model      string
		Tables     analysis.Tables
		// Accuracy is the fraction of the analysed images classified
		// correctly (Correct of Images).
		Accuracy        float64
		Correct, Images int
		// Capsules and Couplings are the per-capsule and per-coupling
		// figures behind the paper's Fig. 3.
		Capsules   []capsuleFigures
		Couplings  []couplingFigures
		Invariance []invPoint `json:",omitempty"`
	}
	var all []perCheckpoint
	var reps []analysis.Report
	var model *capsnet.Config // the first checkpoint's: every other must hold the same
	var first firstModel      // for -html
	for _, path := range cks {
		ck, err := capsnet.ReadCheckpoint(path)
		if err != nil {
			return fmt.Errorf("-checkpoint: %w", err)
		}
		cli.WarnData(os.Stderr, path, ck, *dataName)
		p, err := ck.Params(nil)
		if err != nil {
			return fmt.Errorf("-checkpoint: %w", err)
		}
		if model == nil {
			model = &p.Config
		} else if p.Config.JSON() != model.JSON() {
			return fmt.Errorf("-checkpoint %s holds model %s, %s holds %s: the tables average models of one configuration (seeds); analyse others separately", path, p.Config.Name, cks[0], model.Name)
		}
		in := p.Config.Input
		if in[0] != ds.C {
			return fmt.Errorf("model %s takes %d channel(s), %s has %d", p.Config.Name, in[0], ds.Name, ds.C)
		}
		cfg := data.BatchConfig{Size: min(*batch, ds.N), Placement: data.PlacementFor(ds.H, ds.W, in[1], in[2]), CanvasH: in[1], CanvasW: in[2]}
		b, err := data.NewBatcher(ds, cfg)
		if err != nil {
			return err
		}
		ib := b // the invariance sweep transforms larger images before rescaling them
		if cfg.Placement == data.PlacementRescale {
			fmt.Fprintf(stdout, "note: %s: the %d×%d images of %s are rescaled to %d×%d (area averaging; -invariance transforms them before)\n", path, ds.H, ds.W, ds.Name, in[1], in[2])
			if ib, err = data.NewBatcher(ds, data.BatchConfig{Size: cfg.Size}); err != nil {
				return err
			}
		}
		if *recon != "" && len(all) == 0 {
			fig, err := eval.ReconstructionFigureOf(p, b, 16, 8)
			if err == nil {
				err = eval.WriteFigure(*recon, fig)
			}
			if err != nil {
				return fmt.Errorf("-recon: %w", err)
			}
		}
		rep, score, err := eval.ParseTreeScored(p, b, *k, th)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		one, err := analysis.Summarize([]analysis.Report{rep})
		if err != nil {
			return err
		}
		var pts []invPoint
		var res []eval.InvariancePoint
		if len(families) > 0 {
			if res, err = eval.Invariance(p, ib, *k, families, nil); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			pts = invPoints(res)
		}
		if first.p == nil {
			first = firstModel{path: path, p: p, b: b, ds: ds, rep: rep, inv: res}
		}
		all = append(all, perCheckpoint{path, p.Config.Name, one, score.Accuracy(), score.Correct, score.Total, capsules(rep), couplings(rep), pts})
		reps = append(reps, rep)
	}
	tables, err := analysis.Summarize(reps)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s on %s (%d checkpoint(s))\n", all[0].Model, ds.Name, len(all))
	accs := make([]float64, len(all))
	for i, c := range all {
		accs[i] = c.Accuracy
	}
	acc := accuracy(all[0].Images, accs)
	fmt.Fprintln(stdout, acc.line)
	if *markdown {
		err = tables.WriteMarkdown(stdout)
	} else {
		err = tables.WriteText(stdout)
	}
	if err != nil {
		return err
	}
	if len(families) > 0 {
		fmt.Fprintf(stdout, "\nViewpoint invariance: mean over capsules of corr(norms on original, on transformed images), per layer\n")
		for _, c := range all {
			fmt.Fprintf(stdout, "%s\n%-12s %9s", c.Checkpoint, "family", "magnitude")
			for _, l := range c.Invariance[0].Layers {
				fmt.Fprintf(stdout, " %9s", l.Name)
			}
			fmt.Fprintln(stdout)
			for _, pt := range c.Invariance {
				fmt.Fprintf(stdout, "%-12s %9g", pt.Family, pt.Magnitude)
				for _, l := range pt.Layers {
					if l.Corr == nil {
						fmt.Fprintf(stdout, " %9s", "–")
					} else {
						fmt.Fprintf(stdout, " %9.4f", *l.Corr)
					}
				}
				fmt.Fprintln(stdout)
			}
		}
	}
	if err := hf.write(stdout, first, tables, cks, accs, th); err != nil {
		return err
	}
	if *jsonOut == "" {
		return nil
	}
	return safetensors.WriteAtomic(*jsonOut, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Data        string
			Accuracy    meanStd
			Tables      analysis.Tables
			Checkpoints []perCheckpoint
		}{ds.Name, acc.meanStd, tables, all})
	})
}

// capsuleFigures are one capsule layer's per-capsule norm mean and
// population std over the analysed images, and which capsules are dead.
type capsuleFigures struct {
	Layer             string
	NormMean, NormStd []float64
	Dead              []bool
}

// couplingFigures are one routing layer's coupling mean and population std
// over the analysed images, c[i,j] at i·NOut + j.
type couplingFigures struct {
	From, To  string
	NIn, NOut int
	Mean, Std []float64
}

func capsules(rep analysis.Report) []capsuleFigures {
	out := make([]capsuleFigures, len(rep.Layers))
	for i, l := range rep.Layers {
		out[i] = capsuleFigures{l.Name, l.NormMean, l.NormStd, l.Dead}
	}
	return out
}

func couplings(rep analysis.Report) []couplingFigures {
	out := make([]couplingFigures, len(rep.Routing))
	for i, r := range rep.Routing {
		out[i] = couplingFigures{r.From, r.To, r.NIn, r.NOut, r.CouplingMean, r.CouplingStd}
	}
	return out
}

// meanStd is the mean and population standard deviation of a figure over
// the checkpoints, as written to -json.
type meanStd struct{ Mean, Std float64 }

// accuracySummary is the classification accuracy over the checkpoints: its
// mean ± std and the line that prints it.
type accuracySummary struct {
	meanStd
	line string
}

// accuracy summarises the accuracies of the checkpoints on the images
// they were analysed on (as fractions; printed in percent, each
// checkpoint's too when there are several).
func accuracy(images int, xs []float64) accuracySummary {
	var s accuracySummary
	for _, a := range xs {
		s.Mean += a / float64(len(xs))
	}
	for _, a := range xs {
		s.Std += (a - s.Mean) * (a - s.Mean) / float64(len(xs))
	}
	s.Std = math.Sqrt(s.Std)
	s.line = fmt.Sprintf("Accuracy on the %d analysed image(s): %.2f%%", images, 100*s.Mean)
	if len(xs) > 1 {
		each := make([]string, len(xs))
		for i, a := range xs {
			each[i] = fmt.Sprintf("%.2f%%", 100*a)
		}
		s.line = fmt.Sprintf("Accuracy on the %d analysed image(s): %.2f ± %.2f%% (%s)", images, 100*s.Mean, 100*s.Std, strings.Join(each, ", "))
	}
	return s
}

// invPoint is an eval.InvariancePoint as printed and written to JSON: the
// family by name, and a layer's corr null when undefined (every capsule
// dead), which JSON cannot hold as NaN.
type invPoint struct {
	Family    string
	Magnitude float64
	K         int
	Layers    []invLayer
}

type invLayer struct {
	Name    string
	Corr    *float64
	Skipped int
}

func invPoints(res []eval.InvariancePoint) []invPoint {
	out := make([]invPoint, len(res))
	for i, r := range res {
		out[i] = invPoint{Family: r.Family.String(), Magnitude: r.Magnitude, K: r.K}
		for _, l := range r.Layers {
			il := invLayer{Name: l.Name, Skipped: l.Skipped}
			if !math.IsNaN(l.Corr) {
				c := l.Corr
				il.Corr = &c
			}
			out[i].Layers = append(out[i].Layers, il)
		}
	}
	return out
}
