// Command infer evaluates a checkpoint on a data set (accuracy, confusion
// matrix, img/s) or classifies one image file.
//
//	go run ./tools/infer -checkpoint runs/default/checkpoint.safetensors            # embedded MNIST test digits
//	go run ./tools/infer -checkpoint CK -data mnist                                  # full MNIST test set
//	go run ./tools/infer -checkpoint CK -data affnist                                # AffNIST generated from MNIST test digits
//	go run ./tools/infer -checkpoint CK -image digit.png                             # one image (PNG, grey or colour)
//	go run ./tools/infer -model sabour-small -batch 100 -plan                        # memory plans, no checkpoint needed
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/graph"
	"github.com/capstan-ml/capstan/kernels"
	"github.com/capstan-ml/capstan/train/data"
	"github.com/capstan-ml/capstan/train/eval"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "infer:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("infer", flag.ContinueOnError)
	ck := fs.String("checkpoint", "runs/default/checkpoint.safetensors", "checkpoint (safetensors with config metadata)")
	model := fs.String("model", "", "model preset or JSON config, only for a state dict without config metadata")
	dataName := fs.String("data", "embedded", "data set to evaluate: embedded, mnist, fashion, cifar10, or affnist / affnist-embedded (AffNIST generated from the MNIST / embedded test digits)")
	dataDir := fs.String("data-dir", "", "directory holding the data set")
	img := fs.String("image", "", "classify this PNG image instead of evaluating a data set")
	batch := fs.Int("batch", 100, "batch size")
	threads := fs.Int("threads", runtime.NumCPU(), "replicas (one per core)")
	seed := fs.Uint64("seed", 1, "seed of the AffNIST transformations")
	plan := fs.Bool("plan", false, "print the memory plans of one replica's inference and training graphs at -batch (of -model, or the checkpoint's) and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if *batch <= 0 || *threads <= 0 {
		return fmt.Errorf("-batch and -threads must be positive")
	}
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
	ckpt, err := capsnet.ReadCheckpoint(*ck)
	if err != nil {
		return fmt.Errorf("-checkpoint: %w", err)
	}
	p, err := ckpt.Params(cfg)
	if err != nil {
		return fmt.Errorf("-checkpoint: %w", err)
	}
	if *plan {
		return printPlans(os.Stdout, p.Config, *batch)
	}
	if *img != "" {
		return classify(p, *img)
	}
	ds, err := loadEval(*dataName, *dataDir, *seed)
	if err != nil {
		return fmt.Errorf("-data %s: %w", *dataName, err)
	}
	placement := data.PlacementNone
	in := p.Config.Input
	if in[1] != ds.H || in[2] != ds.W {
		placement = data.PlacementCenter
	}
	if in[0] != ds.C {
		return fmt.Errorf("model %s takes %d channel(s), %s has %d", p.Config.Name, in[0], ds.Name, ds.C)
	}
	b := min(*batch, ds.N)
	ev, err := eval.New(p, b, *threads)
	if err != nil {
		return err
	}
	defer ev.Close()
	vb, err := data.NewBatcher(ds, data.BatchConfig{Size: b, Placement: placement, CanvasH: in[1], CanvasW: in[2]})
	if err != nil {
		return err
	}
	rep, err := ev.Confusion(vb)
	if err != nil {
		return err
	}
	conf := rep.Confusion
	fmt.Printf("model %s, %s: %d images, accuracy %.2f%%, %.0f img/s (batch %d, %d thread(s), kernels %s; memory %s)\n",
		p.Config.Name, ds.Name, ds.N, 100*rep.Accuracy(), float64(ds.N)/rep.Seconds, b, ev.Replicas(), kernels.Impl(), ev.Plan())
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
	return nil
}

func loadEval(name, dir string, seed uint64) (*data.Dataset, error) {
	switch name {
	case "affnist", "affnist-embedded":
		src := "mnist"
		if name == "affnist-embedded" {
			src = "embedded"
		}
		_, test, err := data.LoadNamed(src, dir)
		if err != nil {
			return nil, err
		}
		return data.AffNIST(test, seed)
	}
	_, test, err := data.LoadNamed(name, dir)
	return test, err
}

func classify(p *capsnet.Params, path string) error {
	in := p.Config.Input
	im, err := readImage(path, in[2], in[1])
	if err != nil {
		return err
	}
	r := im.Bounds()
	if r.Dx() > in[2] || r.Dy() > in[1] || in[0] != 1 {
		return fmt.Errorf("-image %s: %d×%d image; model %s takes %d×%d×%d (smaller grey images are centred)", path, r.Dx(), r.Dy(), p.Config.Name, in[0], in[1], in[2])
	}
	ev, err := eval.New(p, 1, 1)
	if err != nil {
		return err
	}
	defer ev.Close()
	x := make([]float32, in[0]*in[1]*in[2])
	oy, ox := (in[1]-r.Dy())/2, (in[2]-r.Dx())/2
	for y := 0; y < r.Dy(); y++ {
		for xx := 0; xx < r.Dx(); xx++ {
			cr, cg, cb, _ := im.At(r.Min.X+xx, r.Min.Y+y).RGBA()
			x[(oy+y)*in[2]+ox+xx] = float32(cr+cg+cb) / (3 * 65535)
		}
	}
	pred, norms := make([]int, 1), make([]float32, p.Config.Classes)
	if err := ev.Predict(x, nil, pred); err != nil {
		return err
	}
	if err := ev.Norms(norms); err != nil {
		return err
	}
	fmt.Printf("%s: class %d (batch-1 inference graph and parameters: %s)\n", path, pred[0], ev.Plan())
	fmt.Println("capsule lengths:")
	for j, v := range norms {
		fmt.Printf("  %d: %.4f\n", j, v)
	}
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
