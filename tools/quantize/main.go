// Command quantize turns a float32 checkpoint into an int8 model (package
// quant): per-channel int8 weights, activation scales calibrated on
// training images, one safetensors file. It prints both files' sizes and
// both models' accuracy on an evaluation set.
//
//	go run ./tools/quantize -checkpoint runs/default/checkpoint.safetensors          # → runs/default/checkpoint.int8.safetensors
//	go run ./tools/quantize -checkpoint CK -data mnist -eval mnist-val -out deep.int8.safetensors
//	go run ./tools/quantize -checkpoint CK -calib minmax -granularity block
//
// A bad flag, flag value or argument exits 2, any other error 1 (see -h).
package main

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

func main() {
	os.Exit(cli.Exit(os.Stderr, "quantize", run(os.Args[1:])))
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

func run(args []string) error {
	fs := flag.NewFlagSet("quantize", flag.ContinueOnError)
	cli.SetUsage(fs, summary, notes)
	ck := fs.String("checkpoint", "runs/default/checkpoint.safetensors", "float32 checkpoint (safetensors with config metadata)")
	out := fs.String("out", "", "int8 model file to write (default: the checkpoint's name with .int8.safetensors)")
	gran := fs.String("granularity", "capsule", "scales of the votes matrices: capsule (one per output capsule) or block (one per (j, i) block)")
	method := fs.String("calib", "percentile", "activation calibration: minmax (largest |x|) or percentile (a percentile of |x|, -percentile)")
	pct := fs.Float64("percentile", quant.DefaultPercentile, "percentile of |x| of -calib percentile, in (0, 100]")
	nCalib := fs.Int("calib-images", 1000, fmt.Sprintf("calibration images, 1 to %d", maxCalib))
	dataName := fs.String("data", "", "training data set of the calibration images: embedded, mnist, fashion, cifar10 (default: the one the checkpoint was trained on, else embedded)")
	evalName := fs.String("eval", "", "data set to compare the two models on: a test set, NAME-val, affnist, affnist-embedded, or none (default: the test split of -data)")
	dataDir := fs.String("data-dir", "", "directory holding the data set (mnist, fashion, cifar10)")
	batch := fs.Int("batch", 100, fmt.Sprintf("evaluation batch size, 1 to %d", capsnet.MaxBatch))
	threads := fs.Int("threads", min(runtime.NumCPU(), cli.MaxThreads), fmt.Sprintf("evaluation replicas, 1 to %d", cli.MaxThreads))
	seed := fs.Uint64("seed", 1, "seed of the AffNIST transformations (-eval affnist, affnist-embedded)")
	if err := cli.Parse(fs, args, 0, os.Stdout); err != nil {
		return err
	}
	g, err := quant.ParseGranularity(*gran)
	if err != nil {
		return cli.Usagef("-granularity: %v", err)
	}
	m, err := quant.ParseMethod(*method)
	if err != nil {
		return cli.Usagef("-calib: %v", err)
	}
	if err := cli.Float("percentile", *pct, 0, 100, true); err != nil {
		return err
	}
	if cli.Given(fs)["percentile"] && m != quant.Percentile {
		return cli.Usagef("-percentile: only with -calib percentile")
	}
	if err := cli.Int("calib-images", *nCalib, 1, maxCalib); err != nil {
		return err
	}
	if err := cli.Int("batch", *batch, 1, capsnet.MaxBatch); err != nil {
		return err
	}
	if err := cli.Int("threads", *threads, 1, cli.MaxThreads); err != nil {
		return err
	}
	if *ck == "" {
		return cli.Usagef("-checkpoint: a file is required")
	}
	if *dataName != "" && !slices.Contains(data.DataSets, *dataName) {
		return cli.Usagef("-data %q: want one of %s", *dataName, strings.Join(data.DataSets, ", "))
	}
	if *evalName != "" && *evalName != "none" && !slices.Contains(data.TestSets, *evalName) {
		return cli.Usagef("-eval %q: want none or one of %s", *evalName, strings.Join(data.TestSets, ", "))
	}
	if *out == "" {
		*out = strings.TrimSuffix(*ck, ".safetensors") + ".int8.safetensors"
	}
	if *out == *ck {
		return cli.Usagef("-out %s: the checkpoint itself", *out)
	}

	ckpt, err := capsnet.ReadCheckpoint(*ck)
	if err != nil {
		return fmt.Errorf("-checkpoint: %w", err)
	}
	p, err := ckpt.Params(nil)
	if err != nil {
		return fmt.Errorf("-checkpoint: %w", err)
	}
	if *dataName == "" {
		*dataName = ckpt.Meta["data"]
		if !slices.Contains(data.DataSets, *dataName) {
			*dataName = "embedded"
		}
	}
	if *evalName == "" {
		*evalName = *dataName
	}
	cli.WarnData(os.Stderr, *ck, ckpt, *dataName)

	// Calibration images: the first N of the training split.
	sp, err := data.LoadSplits(*dataName, *dataDir, 0)
	if err != nil {
		return fmt.Errorf("-data %s: %w", *dataName, err)
	}
	in := p.Config.Input
	if in[0] != sp.Train.C {
		return fmt.Errorf("model %s takes %d channel(s), %s has %d", p.Config.Name, in[0], sp.Train.Name, sp.Train.C)
	}
	nc := min(*nCalib, sp.Train.N)
	cb, err := data.NewBatcher(sp.Train, data.BatchConfig{Size: nc, Placement: data.PlacementFor(sp.Train.H, sp.Train.W, in[1], in[2]), CanvasH: in[1], CanvasW: in[2]})
	if err != nil {
		return err
	}
	calib := cb.NewBatch()
	if !cb.Next(calib) {
		return fmt.Errorf("-data %s: no calibration images: %v", *dataName, cb.Err())
	}
	fmt.Printf("calibrating model %s on %d images of %s (%s)...\n", p.Config.Name, calib.N, sp.Train.Name, methodName(m, *pct))
	cal, err := quant.Calibrate(p, calib.Images(), quant.CalibOptions{Method: m, Percentile: *pct})
	if err != nil {
		return err
	}
	model, err := quant.Quantize(p, quant.Options{Granularity: g})
	if err != nil {
		return err
	}
	model.Calibration = cal
	model.Source = quant.CopySource(ckpt.Meta, *ck)
	if err := model.Save(*out); err != nil {
		return fmt.Errorf("-out: %w", err)
	}
	fsz, qsz, err := sizes(*ck, *out)
	if err != nil {
		return err
	}
	fmt.Printf("float32 checkpoint %s: %s\nint8 model %s: %s (%.3f× the checkpoint; votes scales per %s)\n",
		*ck, bytesStr(fsz), *out, bytesStr(qsz), float64(qsz)/float64(fsz), g)
	if *evalName == "none" {
		return nil
	}
	return compare(p, model, *evalName, *dataDir, *seed, *batch, *threads)
}

// compare evaluates the float32 and the int8 model on data set name.
func compare(p *capsnet.Params, m *quant.Model, name, dir string, seed uint64, batch, threads int) error {
	ds, err := data.LoadTest(name, dir, seed)
	if err != nil {
		return fmt.Errorf("-eval %s: %w", name, err)
	}
	in := p.Config.Input
	if in[0] != ds.C {
		return fmt.Errorf("model %s takes %d channel(s), %s has %d", p.Config.Name, in[0], ds.Name, ds.C)
	}
	b := min(batch, ds.N)
	vb, err := data.NewBatcher(ds, data.BatchConfig{Size: b, Placement: data.PlacementFor(ds.H, ds.W, in[1], in[2]), CanvasH: in[1], CanvasW: in[2]})
	if err != nil {
		return err
	}
	var preds [2][]eval.Prediction
	for k, mk := range []func() (*eval.Evaluator, error){
		func() (*eval.Evaluator, error) { return eval.New(p, b, threads) },
		func() (*eval.Evaluator, error) { return eval.NewInt8(m, b, threads) },
	} {
		ev, err := mk()
		if err != nil {
			return err
		}
		preds[k], err = ev.Predictions(vb)
		ev.Close()
		if err != nil {
			return err
		}
	}
	c := eval.ComparePredictions(preds[0], preds[1])
	fmt.Printf("accuracy on %s (%d images): float32 %.2f%%, int8 %.2f%% (%+.2f points); the int8 model predicts the float32 one's class on %.2f%% (%d images differ: %d fixed, %d broken)\n",
		ds.Name, c.Total, 100*c.AccA, 100*c.AccB, 100*(c.AccB-c.AccA), 100*c.Agreement(), c.Differ, c.Fixed, c.Broken)
	return nil
}

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

func bytesStr(n int64) string { return fmt.Sprintf("%d bytes (%.2f MiB)", n, float64(n)/(1<<20)) }
