// Command infer evaluates a checkpoint on a data set (accuracy, confusion
// matrix, img/s) or classifies one image file.
//
//	go run ./tools/infer -checkpoint runs/default/checkpoint.safetensors            # embedded MNIST test digits
//	go run ./tools/infer -checkpoint CK -data mnist                                  # full MNIST test set
//	go run ./tools/infer -checkpoint CK -data affnist                                # AffNIST generated from MNIST test digits
//	go run ./tools/infer -checkpoint CK -image digit.png                             # one image (PNG, grey or colour)
//	go run ./tools/infer -checkpoint CK -recon recon.png -perturb perturb.png        # also reconstruction and capsule perturbation figures
//	go run ./tools/infer -model sabour-small -batch 100 -plan                        # memory plans, no checkpoint needed
//
// A bad flag, flag value or argument exits 2, any other error 1 (see -h).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/graph"
	"github.com/capstan-ml/capstan/kernels"
	"github.com/capstan-ml/capstan/quant"
	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/train/data"
	"github.com/capstan-ml/capstan/train/eval"
)

func main() {
	os.Exit(cli.Exit(os.Stderr, "infer", run(os.Args[1:])))
}

const (
	summary = "infer: evaluates a checkpoint on a data set or classifies one image; usage: infer [flags]"
	notes   = `Exit status: 0 done, 1 error (a file, model or data set), 2 bad flag, flag
value or argument.
`
)

// evalData lists the -data names: the training data sets and AffNIST
// generated from the MNIST or the embedded test digits.
var evalData = data.TestSets

func run(args []string) error {
	fs := flag.NewFlagSet("infer", flag.ContinueOnError)
	cli.SetUsage(fs, summary, notes)
	ck := fs.String("checkpoint", "runs/default/checkpoint.safetensors", "checkpoint (safetensors with config metadata, or a PyTorch state dict with -model)")
	model := fs.String("model", "", "model preset or JSON config: for a state dict without config metadata (a checkpoint that has one must hold this model), or for -plan without a checkpoint")
	dataName := fs.String("data", "embedded", "data set to evaluate: embedded, mnist, fashion, cifar10, or affnist / affnist-embedded (AffNIST generated from the MNIST / embedded test digits)")
	dataDir := fs.String("data-dir", "", "directory holding the data set (mnist, fashion, cifar10, affnist)")
	img := fs.String("image", "", "classify this PNG image instead of evaluating a data set")
	batch := fs.Int("batch", 100, fmt.Sprintf("batch size, 1 to %d", capsnet.MaxBatch))
	threads := fs.Int("threads", min(runtime.NumCPU(), cli.MaxThreads), fmt.Sprintf("replicas, 1 to %d (one per core)", cli.MaxThreads))
	seed := fs.Uint64("seed", 1, "seed of the AffNIST transformations (affnist, affnist-embedded)")
	plan := fs.Bool("plan", false, "print the memory plans of one replica's inference and training graphs at -batch (of -model, or the checkpoint's) and exit")
	recon := fs.String("recon", "", "also write a PNG of the first 16 images (or the -image) beside their reconstructions to this file")
	perturb := fs.String("perturb", "", "also write a PNG of the capsule perturbations (Sabour et al.) of image -perturb-index (or the -image) to this file: the predicted class's output capsule, each dimension shifted by -0.25 to 0.25 in steps of 0.05, decoded")
	perturbIndex := fs.Int("perturb-index", 0, "the image of the data set whose capsule -perturb shifts (0: the first)")
	repeat := fs.Int("repeat", 100, fmt.Sprintf("with -image: batch-1 inferences timed for the latency percentiles, 1 to %d", maxRepeat))
	if err := cli.Parse(fs, args, 0, os.Stdout); err != nil {
		return err
	}
	given := cli.Given(fs)
	given["image"], given["plan"] = *img != "", *plan // the modes as set, not as flags
	if err := checkFlags(given, *ck, *dataName, *dataDir, *batch, *threads); err != nil {
		return err
	}
	if err := cli.Int("perturb-index", *perturbIndex, 0, data.MaxImages-1); err != nil {
		return err
	}
	if err := cli.Int("repeat", *repeat, 1, maxRepeat); err != nil {
		return err
	}
	if given["repeat"] && *img == "" {
		return cli.Usagef("-repeat: only with -image")
	}
	if given["perturb-index"] && *perturb == "" {
		return cli.Usagef("-perturb-index: only with -perturb")
	}
	figs := figures{recon: *recon, perturb: *perturb, index: *perturbIndex}
	var cfg *capsnet.Config
	if *model != "" {
		c, err := capsnet.LoadConfig(*model)
		if err != nil {
			return fmt.Errorf("-model: %w", err)
		}
		cfg = &c
	}
	if *plan && cfg != nil {
		return printPlans(os.Stdout, *cfg, *batch)
	}
	isInt8, err := quant.IsModelFile(*ck)
	if err != nil {
		return fmt.Errorf("-checkpoint: %w", err)
	}
	if isInt8 {
		return runInt8(*ck, given, int8Run{data: *dataName, dir: *dataDir, seed: *seed, batch: *batch, threads: *threads, plan: *plan, image: *img, repeat: *repeat})
	}
	ckpt, err := capsnet.ReadCheckpoint(*ck)
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
	if *plan {
		return printPlans(os.Stdout, p.Config, *batch)
	}
	if *img != "" {
		return classify(p, *img, figs, *repeat)
	}
	cli.WarnData(os.Stderr, *ck, ckpt, *dataName)
	ds, err := data.LoadTest(*dataName, *dataDir, *seed)
	if err != nil {
		return fmt.Errorf("-data %s: %w", *dataName, err)
	}
	in := p.Config.Input
	placement := data.PlacementFor(ds.H, ds.W, in[1], in[2])
	if in[0] != ds.C {
		return fmt.Errorf("model %s takes %d channel(s), %s has %d", p.Config.Name, in[0], ds.Name, ds.C)
	}
	if *perturb != "" && *perturbIndex >= ds.N {
		return cli.Usagef("-perturb-index %d: %s has %d images", *perturbIndex, ds.Name, ds.N)
	}
	if placement == data.PlacementRescale {
		fmt.Printf("note: the %d×%d images of %s are rescaled to %d×%d (area averaging) for model %s\n", ds.H, ds.W, ds.Name, in[1], in[2], p.Config.Name)
	}
	b := min(*batch, ds.N)
	ev, err := eval.New(p, b, *threads)
	if err != nil {
		return err
	}
	defer ev.Close()
	vb, err := evaluate(ev, ds, "float32", b)
	if err != nil {
		return err
	}
	return figs.fromData(p, ds, vb)
}

// maxRepeat bounds -repeat.
const maxRepeat = 1000000

// evaluate prints the evaluator's footprint and kernels, evaluates ds with
// it (at batch b) and prints the accuracy, speed, batch-1 latency
// percentiles and the confusion matrix; it returns the batcher (for the
// figures).
func evaluate(ev *eval.Evaluator, ds *data.Dataset, kind string, b int) (*data.Batcher, error) {
	cfg := ev.Config()
	in := cfg.Input
	vb, err := data.NewBatcher(ds, data.BatchConfig{Size: b, Placement: data.PlacementFor(ds.H, ds.W, in[1], in[2]), CanvasH: in[1], CanvasW: in[2]})
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
		printLatency(rep.Latency)
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
	return vb, nil
}

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

// printLatency prints the p50, p90 and p99 of batch-1 latencies (seconds).
func printLatency(lat []float64) {
	ms := func(p float64) float64 { return 1000 * eval.Percentile(lat, p) }
	fmt.Printf("latency at batch 1 over %d images: p50 %.3f ms, p90 %.3f ms, p99 %.3f ms\n", len(lat), ms(50), ms(90), ms(99))
}

// figures are the PNGs to write besides the evaluation (-recon, -perturb).
type figures struct {
	recon, perturb string
	index          int // -perturb-index
}

// fromData writes the figures of the data set: the first 16 images' reconstructions, the
// perturbations of image index.
func (f figures) fromData(p *capsnet.Params, ds *data.Dataset, b *data.Batcher) error {
	if f.recon != "" {
		fig, err := eval.ReconstructionFigureOf(p, b, 16, 8)
		if err = f.write("recon", f.recon, fig, err); err != nil {
			return err
		}
		fmt.Printf("reconstructions of the first %d images (inputs on the left): %s\n", min(16, ds.N), f.recon)
	}
	if f.perturb != "" {
		fig, label, class, err := eval.PerturbationFigureAt(p, ds, f.index)
		if err = f.write("perturb", f.perturb, fig, err); err != nil {
			return err
		}
		fmt.Printf("capsule perturbations of image %d (label %d, predicted %d; rows: dimensions, columns: shifts -0.25 to 0.25): %s\n", f.index, label, class, f.perturb)
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
		fmt.Printf("the image beside its reconstruction: %s\n", f.recon)
	}
	if f.perturb != "" {
		fig, class, err := eval.PerturbationFigure(p, x)
		if err = f.write("perturb", f.perturb, fig, err); err != nil {
			return err
		}
		fmt.Printf("capsule perturbations of class %d (rows: dimensions, columns: shifts -0.25 to 0.25): %s\n", class, f.perturb)
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
func checkFlags(given map[string]bool, ck, dataName, dataDir string, batch, threads int) error {
	if err := cli.Int("batch", batch, 1, capsnet.MaxBatch); err != nil {
		return err
	}
	if err := cli.Int("threads", threads, 1, cli.MaxThreads); err != nil {
		return err
	}
	if !slices.Contains(evalData, dataName) {
		return cli.Usagef("-data %q: want one of %s", dataName, strings.Join(evalData, ", "))
	}
	if ck == "" {
		return cli.Usagef("-checkpoint: a file is required")
	}
	mode, ignored := "", []string(nil)
	switch {
	case given["image"]:
		mode, ignored = "-image classifies one image", []string{"data", "data-dir", "seed", "batch", "threads", "plan", "perturb-index"}
	case given["plan"]:
		mode, ignored = "-plan prints memory plans without evaluating", []string{"data", "data-dir", "seed", "threads", "recon", "perturb", "perturb-index"}
		if given["model"] && given["checkpoint"] {
			return cli.Usagef("-plan takes the model of -model or of -checkpoint, not both")
		}
	case given["data-dir"] && strings.HasSuffix(dataName, "embedded"):
		return cli.Usagef("-data-dir: -data %s is in the binary, not in a directory", dataName)
	case given["seed"] && !strings.HasPrefix(dataName, "affnist"):
		return cli.Usagef("-seed: only for the generated AffNIST data (-data affnist or affnist-embedded)")
	}
	for _, f := range ignored {
		if given[f] {
			return cli.Usagef("-%s does not apply: %s", f, mode)
		}
	}
	return nil
}

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

// imageInput reads a PNG as the input of a cfg model (grey, centred).
func imageInput(cfg capsnet.Config, path string) ([]float32, error) {
	in := cfg.Input
	im, err := readImage(path, in[2], in[1])
	if err != nil {
		return nil, err
	}
	r := im.Bounds()
	if r.Dx() > in[2] || r.Dy() > in[1] || in[0] != 1 {
		return nil, fmt.Errorf("-image %s: %d×%d image; model %s takes %d×%d×%d (smaller grey images are centred)", path, r.Dx(), r.Dy(), cfg.Name, in[0], in[1], in[2])
	}
	x := make([]float32, in[0]*in[1]*in[2])
	oy, ox := (in[1]-r.Dy())/2, (in[2]-r.Dx())/2
	for y := 0; y < r.Dy(); y++ {
		for xx := 0; xx < r.Dx(); xx++ {
			cr, cg, cb, _ := im.At(r.Min.X+xx, r.Min.Y+y).RGBA()
			x[(oy+y)*in[2]+ox+xx] = float32(cr+cg+cb) / (3 * 65535)
		}
	}
	return x, nil
}

// classifyWith prints the footprint and kernels of a batch-1 evaluator,
// classifies x, prints the class and capsule lengths, then times repeat
// more inferences and prints the latency percentiles.
func classifyWith(ev *eval.Evaluator, kind, path string, x []float32, repeat int) error {
	printFootprint(ev, kind, 1)
	pred, norms := make([]int, 1), make([]float32, ev.Config().Classes)
	if err := ev.Predict(x, nil, pred); err != nil {
		return err
	}
	if err := ev.Norms(norms); err != nil {
		return err
	}
	fmt.Printf("%s: class %d\n", path, pred[0])
	fmt.Println("capsule lengths:")
	for j, v := range norms {
		fmt.Printf("  %d: %.4f\n", j, v)
	}
	lat := make([]float64, repeat)
	for i := range lat {
		t0 := time.Now()
		if err := ev.Predict(x, nil, pred); err != nil {
			return err
		}
		lat[i] = time.Since(t0).Seconds()
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
