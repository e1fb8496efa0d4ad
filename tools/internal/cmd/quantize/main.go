// Package quantize is the quantize command: tools/quantize (go run ./tools/quantize) and
// capstan quantize (tools/capstan) are thin wrappers of its Main. See
// tools/quantize for what it does.
package quantize

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"

	"flag"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/quant"
	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/train/data"
	"github.com/capstan-ml/capstan/train/eval"
)

// Main runs the quantize command with args (the arguments after its name) and
// returns its exit status; it prints on os.Stdout and os.Stderr. tools/quantize
// and capstan quantize both call it.
func Main(args []string) int {
	return cli.Exit(os.Stderr, "quantize", run(args))
}

const (
	summary = "quantize: turns a float32 checkpoint into an int8 model and compares their accuracy; usage: quantize [flags]"
	notes   = `The calibration images are the first -calib-images images of the training
split of -data (the validation split held out, as tools/train holds it
out). The int8 model's file is written atomically. Exit status: 0 done, 1
error (a file, model or data set), 2 bad flag, flag value or argument.
`
	// maxCalib bounds -calib-images: the images are held in memory.
	maxCalib = 20000
)

// options are the flags' values.
type options struct {
	ck, out, gran, method string
	pct                   float64
	nCalib                int
	data, eval, dir       string
	batch, threads        int
	seed                  uint64
	given                 map[string]bool
	granularity           quant.Granularity
	calib                 quant.Method
}

func run(args []string) error {
	fs := flag.NewFlagSet("quantize", flag.ContinueOnError)
	cli.SetUsage(fs, summary, notes)
	var o options
	fs.StringVar(&o.ck, "checkpoint", "runs/default/checkpoint.safetensors", "float32 checkpoint (safetensors with config metadata)")
	fs.StringVar(&o.out, "out", "", "int8 model file to write (default: the checkpoint's name with .int8.safetensors)")
	fs.StringVar(&o.gran, "granularity", "capsule", "scales of the votes matrices: capsule (one per output capsule) or block (one per (j, i) block)")
	fs.StringVar(&o.method, "calib", "percentile", "activation calibration: minmax (largest |x|) or percentile (a percentile of |x|, -percentile)")
	fs.Float64Var(&o.pct, "percentile", quant.DefaultPercentile, "percentile of |x| of -calib percentile, in (0, 100]")
	fs.IntVar(&o.nCalib, "calib-images", 1000, fmt.Sprintf("calibration images, 1 to %d", maxCalib))
	fs.StringVar(&o.data, "data", "", "training data set of the calibration images: "+cli.SetList(data.DataSets)+" (default: the one the checkpoint was trained on, else embedded)")
	fs.StringVar(&o.eval, "eval", "", "data set to compare the two models on: "+cli.SetList(data.TestSets)+", or none (default: the test split of -data)")
	fs.StringVar(&o.dir, "data-dir", "", "directory holding the data set ("+strings.Join(data.FileSets, ", ")+")")
	fs.IntVar(&o.batch, "batch", 100, fmt.Sprintf("evaluation batch size, 1 to %d", capsnet.MaxBatch))
	fs.IntVar(&o.threads, "threads", min(runtime.NumCPU(), cli.MaxThreads), fmt.Sprintf("evaluation replicas, 1 to %d", cli.MaxThreads))
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the AffNIST transformations (-eval "+strings.Join(data.GeneratedSets, ", ")+")")
	if err := cli.Parse(fs, args, 0, os.Stdout); err != nil {
		return err
	}
	o.given = cli.Given(fs)
	if err := checkFlags(&o); err != nil {
		return err
	}
	ckpt, err := capsnet.ReadCheckpoint(o.ck)
	if err != nil {
		return fmt.Errorf("-checkpoint: %w", err)
	}
	p, err := ckpt.Params(nil)
	if err != nil {
		return fmt.Errorf("-checkpoint: %w", err)
	}
	// The float evaluators' memory at -threads and -batch, before any
	// data (the int8 ones are checked by eval.NewInt8).
	if o.eval != "none" {
		m, err := p.Layout.InferenceMemory(o.batch, o.threads)
		if err == nil {
			err = m.Check()
		}
		if err != nil {
			return fmt.Errorf("-threads %d, -batch %d: %w", o.threads, o.batch, err)
		}
	}
	if o.data == "" {
		o.data = ckpt.Meta["data"]
		if !slices.Contains(data.DataSets, o.data) {
			o.data = "embedded"
		}
	}
	if o.eval == "" {
		o.eval = o.data
	}
	for _, set := range []string{o.data, o.eval} {
		if err := cli.CheckDataDir(o.dir, set); err != nil {
			return err
		}
	}
	// The data sets are known now (the checkpoint's by default): -out
	// must not replace one of their files either.
	inputs := cli.DataInputs(o.data, o.dir)
	if o.eval != "none" {
		inputs = append(inputs, cli.DataInputs(o.eval, o.dir)...)
	}
	if err := cli.CheckOutputs([]cli.Path{{Flag: "-out", Value: o.out}}, inputs); err != nil {
		return err
	}
	cli.WarnData(os.Stderr, o.ck, ckpt, o.data)
	model, err := quantize(p, o)
	if err != nil {
		return err
	}
	model.Source = quant.CopySource(ckpt.Meta, o.ck)
	if err := model.Save(o.out); err != nil {
		return fmt.Errorf("-out: %w", err)
	}
	fsz, qsz, err := sizes(o.ck, o.out)
	if err != nil {
		return err
	}
	cli.Wrote(os.Stdout, o.out, fmt.Sprintf("int8 model, %.3f× the float32 checkpoint's %s; votes scales per %s", float64(qsz)/float64(fsz), cli.Size(fsz), o.granularity))
	if o.eval == "none" {
		return nil
	}
	return compare(p, model, o)
}

// checkFlags checks the flag values (each error a cli.UsageError naming
// the flag), parses -granularity and -calib, sets the default -out and
// refuses an -out that is the checkpoint (cli.CheckOutputs).
func checkFlags(o *options) error {
	var err error
	if o.granularity, err = quant.ParseGranularity(o.gran); err != nil {
		return cli.Usagef("-granularity: %v", err)
	}
	if o.calib, err = quant.ParseMethod(o.method); err != nil {
		return cli.Usagef("-calib: %v", err)
	}
	if err := cli.Float("percentile", o.pct, 0, 100, true); err != nil {
		return err
	}
	if o.given["percentile"] && o.calib != quant.Percentile {
		return cli.Usagef("-percentile: only with -calib percentile")
	}
	for _, f := range []struct {
		name      string
		v, lo, hi int
	}{{"calib-images", o.nCalib, 1, maxCalib}, {"batch", o.batch, 1, capsnet.MaxBatch}} {
		if err := cli.Int(f.name, f.v, f.lo, f.hi); err != nil {
			return err
		}
	}
	if err := cli.Threads(o.threads, o.batch); err != nil {
		return err
	}
	if o.ck == "" {
		return cli.Usagef("-checkpoint: a file is required")
	}
	if o.data != "" {
		if err := cli.OneOf("data", o.data, data.DataSets); err != nil {
			return err
		}
	}
	if o.eval != "" && o.eval != "none" && !slices.Contains(data.TestSets, o.eval) {
		return cli.Usagef("-eval %q: want none or one of %s", o.eval, strings.Join(data.TestSets, ", "))
	}
	if o.out == "" {
		o.out = strings.TrimSuffix(o.ck, ".safetensors") + ".int8.safetensors"
	}
	out := cli.Path{Flag: "-out", Value: o.out}
	if !o.given["out"] {
		out.Note = "default: beside -checkpoint"
	}
	return cli.CheckOutputs([]cli.Path{out}, []cli.Path{{Flag: "-checkpoint", Value: o.ck}})
}

// quantize calibrates p's activation scales on the first -calib-images
// images of the training split of -data (the validation split held out)
// and quantizes it.
func quantize(p *capsnet.Params, o options) (*quant.Model, error) {
	sp, err := data.LoadSplits(o.data, o.dir, 0)
	if err != nil {
		return nil, fmt.Errorf("-data %s: %w", o.data, err)
	}
	cb, err := eval.BatcherFor(p.Config, sp.Train, min(o.nCalib, sp.Train.N))
	if err != nil {
		return nil, err
	}
	calib := cb.NewBatch()
	if !cb.Next(calib) {
		return nil, fmt.Errorf("-data %s: no calibration images: %v", o.data, cb.Err())
	}
	fmt.Printf("calibrating model %s on %d images of %s (%s)...\n", p.Config.Name, calib.N, sp.Train.Name, methodName(o.calib, o.pct))
	cal, err := quant.Calibrate(p, calib.Images(), quant.CalibOptions{Method: o.calib, Percentile: o.pct})
	if err != nil {
		return nil, err
	}
	model, err := quant.Quantize(p, quant.Options{Granularity: o.granularity})
	if err != nil {
		return nil, err
	}
	model.Calibration = cal
	return model, nil
}

// compare evaluates the float32 and the int8 model on the -eval set
// (eval.CompareInt8) and prints their accuracies and agreement.
func compare(p *capsnet.Params, m *quant.Model, o options) error {
	ds, err := data.LoadTest(o.eval, o.dir, o.seed)
	if err != nil {
		return fmt.Errorf("-eval %s: %w", o.eval, err)
	}
	c, err := eval.CompareInt8(p, m, ds, o.batch, o.threads)
	if err != nil {
		return err
	}
	fmt.Printf("accuracy on %s (%d images): float32 %.2f%%, int8 %.2f%% (%+.2f points); the int8 model predicts the float32 one's class on %.2f%% (%d images differ: %d fixed, %d broken)\n",
		ds.Name, c.Total, 100*c.AccA, 100*c.AccB, 100*(c.AccB-c.AccA), 100*c.Agreement(), c.Differ, c.Fixed, c.Broken)
	fmt.Println(compareLegend)
	return nil
}

// compareLegend is the legend under compare's line.
const compareLegend = `points: int8 accuracy − float32 accuracy; "predicts the float32 one's class on": share of the
images both classify alike; differ, fixed, broken: counts of images (fixed: only int8 right, broken:
only float32 right).`

func methodName(m quant.Method, pct float64) string {
	if m == quant.Percentile {
		return fmt.Sprintf("percentile %g of |x|", pct)
	}
	return "minmax"
}

func sizes(a, b string) (int64, int64, error) {
	sa, err := os.Stat(a)
	if err != nil {
		return 0, 0, err
	}
	sb, err := os.Stat(b)
	if err != nil {
		return 0, 0, err
	}
	return sa.Size(), sb.Size(), nil
}
