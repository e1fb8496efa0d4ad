// Package infer is the infer command: tools/infer (go run ./tools/infer) and
// capstan infer (tools/capstan) are thin wrappers of its Main. See
// tools/infer for what it does.
package infer

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/graph"
	"github.com/capstan-ml/capstan/kernels"
	"github.com/capstan-ml/capstan/quant"
	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/train/data"
	"github.com/capstan-ml/capstan/train/eval"
)

// Main runs the infer command with args (the arguments after its name) and
// returns its exit status; it prints on os.Stdout and os.Stderr. tools/infer
// and capstan infer both call it.
func Main(args []string) int {
	return cli.Exit(os.Stderr, "infer", run(args))
}

const (
	summary = "infer: evaluates a checkpoint on a data set or classifies one image; usage: infer [flags]"
	notes   = `Exit status: 0 done, 1 error (a file, model or data set), 2 bad flag, flag
value or argument.
`
)

// evalData lists the -data names: the training data sets, their
// validation splits and AffNIST generated from the MNIST or the embedded
// test digits (data.TestSets, from the data-set table).
var evalData = data.TestSets

// dirSets lists the data sets of the table (data.Sets) read from files,
// their own or their base's: those -data-dir applies to.
func dirSets() []string {
	var n []string
	for _, s := range data.Sets {
		if data.ReadsFiles(s.Name) {
			n = append(n, s.Name)
		}
	}
	return n
}

// options are the flags' values a run needs after checking them.
type options struct {
	ck, data, dir  string
	seed           uint64
	batch, threads int
	plan           bool
	image          string
	repeat         int
	figs           figures
}

func run(args []string) error {
	fs := flag.NewFlagSet("infer", flag.ContinueOnError)
	cli.SetUsage(fs, summary, notes)
	var o options
	fs.StringVar(&o.ck, "checkpoint", "runs/default/checkpoint.safetensors", "checkpoint (safetensors with config metadata, or a PyTorch state dict with -model)")
	model := fs.String("model", "", "model preset or JSON config: for a state dict without config metadata (a checkpoint that has one must hold this model), or for -plan without a checkpoint")
	fs.StringVar(&o.data, "data", "embedded", "data set to evaluate: "+cli.SetList(evalData)+" (NAME-val: the validation split held out of NAME's training images; "+strings.Join(data.GeneratedSets, " / ")+": AffNIST generated from the MNIST / embedded test digits)")
	fs.StringVar(&o.dir, "data-dir", "", "directory holding the data set ("+strings.Join(dirSets(), ", ")+")")
	fs.StringVar(&o.image, "image", "", "classify this PNG image instead of evaluating a data set")
	fs.IntVar(&o.batch, "batch", 100, fmt.Sprintf("batch size, 1 to %d", capsnet.MaxBatch))
	fs.IntVar(&o.threads, "threads", min(runtime.NumCPU(), cli.MaxThreads), fmt.Sprintf("replicas, 1 to %d (one per core)", cli.MaxThreads))
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the AffNIST transformations ("+strings.Join(data.GeneratedSets, ", ")+")")
	fs.BoolVar(&o.plan, "plan", false, "print the memory plans of one replica's inference and training graphs at -batch (of -model, or the checkpoint's) and exit")
	fs.StringVar(&o.figs.recon, "recon", "", "also write a PNG of the first 16 images (or the -image) beside their reconstructions to this file")
	fs.StringVar(&o.figs.perturb, "perturb", "", "also write a PNG of the capsule perturbations (Sabour et al.) of image -perturb-index (or the -image) to this file: the predicted class's output capsule, each dimension shifted by -0.25 to 0.25 in steps of 0.05, decoded")
	fs.IntVar(&o.figs.index, "perturb-index", 0, "the image of the data set whose capsule -perturb shifts (0: the first)")
	fs.IntVar(&o.figs.top, "perturb-top", 0, "-perturb draws only the K dimensions of largest effect on the reconstruction (0: all; the rows are ranked by effect either way)")
	fs.IntVar(&o.repeat, "repeat", 100, fmt.Sprintf("with -image: batch-1 inferences timed for the latency percentiles, 1 to %d", maxRepeat))
	if err := cli.Parse(fs, args, 0, os.Stdout); err != nil {
		return err
	}
	given := cli.Given(fs)
	given["image"], given["plan"] = o.image != "", o.plan // the modes as set, not as flags
	if err := checkFlags(given, o); err != nil {
		return err
	}
	if err := checkOutputs(given, o, *model); err != nil {
		return err
	}
	var cfg *capsnet.Config
	if *model != "" {
		c, err := capsnet.LoadConfig(*model)
		if err != nil {
			return fmt.Errorf("-model: %w", err)
		}
		cfg = &c
	}
	if o.plan && cfg != nil {
		return printPlans(os.Stdout, *cfg, o.batch)
	}
	if !o.plan && o.image == "" {
		if err := cli.CheckDataDir(o.dir, o.data); err != nil {
			return err
		}
	}
	if err := capsnet.CheckCheckpointPath(o.ck); err != nil {
		return fmt.Errorf("-checkpoint: %w", err)
	}
	isInt8, err := quant.IsModelFile(o.ck)
	if err != nil {
		return fmt.Errorf("-checkpoint: %w", err)
	}
	if isInt8 {
		return runInt8(given, o)
	}
	return runFloat(cfg, o)
}

// runFloat runs a float32 checkpoint (of model cfg, nil: the
// checkpoint's): its memory plans (-plan), one -image, or a data set.
func runFloat(cfg *capsnet.Config, o options) error {
	ckpt, err := capsnet.ReadCheckpoint(o.ck)
	if err != nil {
		return fmt.Errorf("-checkpoint: %w", err)
	}
	if err := cli.CheckModel(ckpt, cfg); err != nil {
		return err
	}
	p, err := ckpt.Params(cfg)
	if err != nil {
		return fmt.Errorf("-checkpoint: %w", err)
	}
	if o.plan {
		return printPlans(os.Stdout, p.Config, o.batch)
	}
	if o.image != "" {
		return classify(p, o.image, o.figs, o.repeat)
	}
	// The process's memory at -threads and -batch, before the data.
	if err := checkMemory(p.Layout.InferenceMemory(o.batch, o.threads)); err != nil {
		return err
	}
	cli.WarnData(os.Stderr, o.ck, ckpt, o.data)
	ds, err := loadData(p.Config, o)
	if err != nil {
		return err
	}
	if o.figs.perturb != "" && o.figs.index >= ds.N {
		return cli.Usagef("-perturb-index %d: %s has %d images", o.figs.index, ds.Name, ds.N)
	}
	noteRescale(p.Config, ds)
	b := min(o.batch, ds.N)
	ev, err := eval.New(p, b, o.threads)
	if err != nil {
		return err
	}
	defer ev.Close()
	vb, err := evaluate(ev, ds, "float32", b)
	if err != nil {
		return err
	}
	return o.figs.fromData(p, ds, vb)
}

// checkMemory refuses replicas that together need more than the
// process's memory limit (capsnet.ProcessMemory.Check), naming -threads
// and -batch.
func checkMemory(m capsnet.ProcessMemory, err error) error {
	if err == nil {
		err = m.Check()
	}
	if err != nil {
		return fmt.Errorf("-threads %d, -batch %d: %w", m.Threads, m.Batch, err)
	}
	return nil
}

// loadData loads the -data set for a model cfg, which must take its
// channels.
func loadData(cfg capsnet.Config, o options) (*data.Dataset, error) {
	ds, err := data.LoadTest(o.data, o.dir, o.seed)
	if err != nil {
		return nil, fmt.Errorf("-data %s: %w", o.data, err)
	}
	if in := cfg.Input; in[0] != ds.C {
		return nil, fmt.Errorf("model %s takes %d channel(s), %s has %d", cfg.Name, in[0], ds.Name, ds.C)
	}
	return ds, nil
}

// noteRescale says when the images of ds are rescaled for a model cfg.
func noteRescale(cfg capsnet.Config, ds *data.Dataset) {
	if in := cfg.Input; data.PlacementFor(ds.H, ds.W, in[1], in[2]) == data.PlacementRescale {
		fmt.Printf("note: the %d×%d images of %s are rescaled to %d×%d (area averaging) for model %s\n", ds.H, ds.W, ds.Name, in[1], in[2], cfg.Name)
	}
}

// maxRepeat bounds -repeat.
const maxRepeat = 1000000

// evaluate prints the evaluator's footprint and kernels, evaluates ds with
// it (at batch b) and prints the accuracy, speed, batch-1 latency
// percentiles and the confusion matrix; it returns the batcher (for the
// figures).
func evaluate(ev *eval.Evaluator, ds *data.Dataset, kind string, b int) (*data.Batcher, error) {
	cfg := ev.Config()
	vb, err := eval.BatcherFor(cfg, ds, b)
	if err != nil {
		return nil, err
	}
	printFootprint(ev, kind, b)
	rep, err := ev.Confusion(vb)
	if err != nil {
		return nil, err
	}
	conf := rep.Confusion
	fmt.Printf("model %s (%s), %s: %d images, accuracy %.2f%%, %.0f img/s (batch %d, %d thread(s))\n",
		cfg.Name, kind, ds.Name, ds.N, 100*rep.Accuracy(), float64(ds.N)/rep.Seconds, b, ev.Replicas())
	if b == 1 {
		printLatency(eval.LatencyOf(rep.Latency))
	}
	fmt.Println("confusion matrix (rows: true class, columns: predicted):")
	fmt.Print("     ")
	for j := range conf {
		fmt.Printf("%6d", j)
	}
	fmt.Println()
	for i, row := range conf {
		fmt.Printf("%4d ", i)
		for _, v := range row {
			fmt.Printf("%6d", v)
		}
		fmt.Println()
	}
	fmt.Println(confusionLegend)
	return vb, nil
}

// confusionLegend is the legend under the confusion matrix.
const confusionLegend = `counts of images: a row sums to the images of its true class, the diagonal holds those classified
correctly; accuracy = the diagonal's sum / images; img/s = images / the evaluation's wall time.`

// printFootprint prints the static memory an evaluator holds and the
// kernels it runs, before its first image.
func printFootprint(ev *eval.Evaluator, kind string, b int) {
	arena, weights := ev.Footprint()
	ks := kernels.Impl()
	if kind == "int8" {
		ks += ", int8 GEMM " + kernels.ImplI8()
	}
	fmt.Printf("%s model %s, batch %d, %d replica(s): static memory %s (arena %s + weights %s); kernels %s\n",
		kind, ev.Config().Name, b, ev.Replicas(), graph.MiB(arena+weights), graph.MiB(arena), graph.MiB(weights), ks)
}

// printLatency prints the p50, p90 and p99 of batch-1 latencies.
func printLatency(l eval.Latency) {
	fmt.Printf("latency at batch 1 over %d images: %s\n", l.N, l)
}

// figures are the PNGs to write besides the evaluation (-recon, -perturb).
type figures struct {
	recon, perturb string
	index          int // -perturb-index
	top            int // -perturb-top
}

// fromData writes the figures of the data set: the first 16 images' reconstructions, the
// perturbations of image index.
func (f figures) fromData(p *capsnet.Params, ds *data.Dataset, b *data.Batcher) error {
	if f.recon != "" {
		fig, err := eval.ReconstructionFigureOf(p, b, 16, 8)
		if err = f.write("recon", f.recon, fig, err); err != nil {
			return err
		}
		cli.Wrote(os.Stdout, f.recon, fmt.Sprintf("reconstructions of the first %d images, inputs on the left", min(16, ds.N)))
	}
	if f.perturb != "" {
		g, label, err := eval.PerturbationGridAt(p, ds, f.index, f.top)
		if err = f.write("perturb", f.perturb, g.PNG, err); err != nil {
			return err
		}
		cli.Wrote(os.Stdout, f.perturb, fmt.Sprintf("capsule perturbations of image %d, label %d, predicted %d; rows: dimensions ranked by effect, columns: shifts -0.25 to 0.25", f.index, label, g.Class))
	}
	return nil
}

// fromImage writes the figures of one image x (the model's input).
func (f figures) fromImage(p *capsnet.Params, x []float32) error {
	if f.recon != "" {
		fig, err := eval.ReconstructionFigure(p, x, 1, 1)
		if err = f.write("recon", f.recon, fig, err); err != nil {
			return err
		}
		cli.Wrote(os.Stdout, f.recon, "the image beside its reconstruction")
	}
	if f.perturb != "" {
		g, err := eval.PerturbationGrid(p, x, f.top)
		if err = f.write("perturb", f.perturb, g.PNG, err); err != nil {
			return err
		}
		cli.Wrote(os.Stdout, f.perturb, fmt.Sprintf("capsule perturbations of class %d; rows: dimensions ranked by effect, columns: shifts -0.25 to 0.25", g.Class))
	}
	return nil
}

// write writes a figure made with error err to path, errors naming flag.
func (f figures) write(flag, path string, fig []byte, err error) error {
	if err == nil {
		err = eval.WriteFigure(path, fig)
	}
	if err != nil {
		return fmt.Errorf("-%s: %w", flag, err)
	}
	return nil
}

// checkFlags checks the flag values that need no file, and that no flag
// is given that the chosen mode (-image, -plan or a data set) would ignore:
// each error is a cli.UsageError naming the flag.
func checkFlags(given map[string]bool, o options) error {
	if err := cli.Int("batch", o.batch, 1, capsnet.MaxBatch); err != nil {
		return err
	}
	if err := cli.Threads(o.threads, o.batch); err != nil {
		return err
	}
	if err := cli.OneOf("data", o.data, evalData); err != nil {
		return err
	}
	if o.ck == "" {
		return cli.Usagef("-checkpoint: a file is required")
	}
	mode, ignored := "", []string(nil)
	switch {
	case given["image"]:
		mode, ignored = "-image classifies one image", []string{"data", "data-dir", "seed", "batch", "threads", "plan", "perturb-index"}
	case given["plan"]:
		mode, ignored = "-plan prints memory plans without evaluating", []string{"data", "data-dir", "seed", "threads", "recon", "perturb", "perturb-index", "perturb-top"}
		if given["model"] && given["checkpoint"] {
			return cli.Usagef("-plan takes the model of -model or of -checkpoint, not both")
		}
	case given["data-dir"] && !data.ReadsFiles(o.data):
		return cli.Usagef("-data-dir: -data %s is in the binary, not in a directory", o.data)
	case given["seed"] && !data.IsGenerated(o.data):
		return cli.Usagef("-seed: only for the generated AffNIST data (-data %s)", strings.Join(data.GeneratedSets, " or "))
	}
	for _, f := range ignored {
		if given[f] {
			return cli.Usagef("-%s does not apply: %s", f, mode)
		}
	}
	if err := cli.Int("perturb-index", o.figs.index, 0, data.MaxImages-1); err != nil {
		return err
	}
	if err := cli.Int("repeat", o.repeat, 1, maxRepeat); err != nil {
		return err
	}
	if given["repeat"] && o.image == "" {
		return cli.Usagef("-repeat: only with -image")
	}
	if given["perturb-index"] && o.figs.perturb == "" {
		return cli.Usagef("-perturb-index: only with -perturb")
	}
	if err := cli.Int("perturb-top", o.figs.top, 0, 1<<16); err != nil {
		return err
	}
	if given["perturb-top"] && o.figs.perturb == "" {
		return cli.Usagef("-perturb-top: only with -perturb")
	}
	return nil
}

// checkOutputs refuses a -recon or -perturb that would replace an input
// (-checkpoint, -image, a -model config file, a file of the -data set)
// or the other figure (cli.CheckOutputs).
func checkOutputs(given map[string]bool, o options, model string) error {
	ck := cli.Path{Flag: "-checkpoint", Value: o.ck}
	if !given["checkpoint"] {
		ck.Note = "default"
	}
	inputs := []cli.Path{ck, {Flag: "-image", Value: o.image}, cli.ModelInput(model)}
	if o.image == "" && !o.plan {
		inputs = append(inputs, cli.DataInputs(o.data, o.dir)...)
	}
	outputs := []cli.Path{{Flag: "-recon", Value: o.figs.recon}, {Flag: "-perturb", Value: o.figs.perturb}}
	return cli.CheckOutputs(outputs, inputs)
}

// classify classifies the PNG at path with the float32 model p (see
// classifyWith) and writes the figures of it.
func classify(p *capsnet.Params, path string, figs figures, repeat int) error {
	x, err := imageInput(p.Config, path)
	if err != nil {
		return err
	}
	ev, err := eval.New(p, 1, 1)
	if err != nil {
		return err
	}
	defer ev.Close()
	if err := classifyWith(ev, "float32", path, x, repeat); err != nil {
		return err
	}
	return figs.fromImage(p, x)
}

// imageInput reads a PNG as the input of a cfg model (grey, centred;
// data.ReadPNGInput), errors naming -image and the file.
func imageInput(cfg capsnet.Config, path string) ([]float32, error) {
	in := cfg.Input
	x, err := data.ReadPNGInput(path, in[0], in[1], in[2])
	if err != nil {
		return nil, fmt.Errorf("-image %w", err)
	}
	return x, nil
}

// classifyWith prints the footprint and kernels of a batch-1 evaluator,
// classifies x, prints the class and capsule lengths, then times repeat
// more inferences and prints the latency percentiles.
func classifyWith(ev *eval.Evaluator, kind, path string, x []float32, repeat int) error {
	printFootprint(ev, kind, 1)
	pred, norms, err := ev.Classify(x)
	if err != nil {
		return err
	}
	fmt.Printf("%s: class %d\n", path, pred[0])
	fmt.Println("capsule lengths:")
	for j, v := range norms {
		fmt.Printf("  %d: %.4f\n", j, v)
	}
	lat, err := ev.MeasureLatency(x, repeat)
	if err != nil {
		return err
	}
	printLatency(lat)
	return nil
}

// printPlans compiles one replica of cfg at the given batch size as an
// inference graph and as a training graph and prints each arena's memory
// plan: with buffers sharing memory by lifetime (what the engine uses) and
// unshared (every buffer its own memory, the plan before lifetimes).
func printPlans(w io.Writer, cfg capsnet.Config, batch int) error {
	p, err := capsnet.NewParams(cfg)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "model %s, batch %d, kernels %s: parameters %s (shared by every replica)\n", cfg.Name, batch, kernels.Impl(), p.Arena.Plan())
	for _, g := range []struct {
		name string
		new  func(*capsnet.Params, int) (*capsnet.Net, error)
	}{{"inference", capsnet.NewInferenceNet}, {"training", capsnet.NewNet}} {
		n, err := g.new(p, batch)
		if err != nil {
			return err
		}
		pl := n.Plan()
		var kinds []string
		for k, b := range pl.Bytes {
			if b > 0 {
				kinds = append(kinds, fmt.Sprintf("%s %s", graph.Kind(k), graph.MiB(b)))
			}
		}
		fmt.Fprintf(w, "  %-9s graph: %s shared by lifetime, %s unshared (%.0f%%); buffers by kind, unshared: %s\n", g.name, graph.MiB(pl.Total), graph.MiB(pl.Unshared),
			100*float64(pl.Total)/float64(max(pl.Unshared, 1)), strings.Join(kinds, ", "))
	}
	return nil
}
