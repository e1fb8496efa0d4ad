// Command train trains a CapsNet. With no flags it trains the default model
// on the MNIST subset embedded in the binary, printing progress, accuracy,
// throughput and the kernel implementation, and writes its checkpoint to
// ./runs/default.
//
//	go run ./tools/train                                 # default run
//	go run ./tools/train -model sabour -data mnist       # full MNIST (./build.sh data first)
//	go run ./tools/train -model deep -data mnist -target 0.992 -epochs 100
//	go run ./tools/train -resume runs/default            # continue a run
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/kernels"
	"github.com/capstan-ml/capstan/train"
	"github.com/capstan-ml/capstan/train/data"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "train:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	model := fs.String("model", "sabour-small", "model: a preset ("+strings.Join(presetHint(), ", ")+", …) or a JSON config file")
	dataName := fs.String("data", "embedded", "data set: "+strings.Join(data.DataSets, ", "))
	dataDir := fs.String("data-dir", "", "directory holding the data set (default: the cache, see ./build.sh data)")
	epochs := fs.Int("epochs", 0, "epochs (default: 5 for the embedded data, 30 otherwise)")
	batch := fs.Int("batch", 0, "batch size (default: 64 for the embedded data, the paper's 512 otherwise)")
	threads := fs.Int("threads", runtime.NumCPU(), "data-parallel replicas (one per core)")
	lr := fs.Float64("lr", 1e-3, "initial learning rate (decays ×0.97 per epoch)")
	decay := fs.Float64("decay", 0.97, "learning-rate decay per epoch")
	wd := fs.Float64("weight-decay", 1e-6, "Adam weight decay")
	target := fs.Float64("target", 0, "stop when validation accuracy reaches this (e.g. 0.992; 0 = never)")
	shift := fs.Int("shift", 2, "random shift of up to this many pixels per axis when the model takes the data's own size (Sabour's augmentation; 0 = none)")
	seed := fs.Uint64("seed", 1, "random seed (initialisation, shuffling, placement)")
	out := fs.String("out", "runs/default", "output directory for checkpoint.safetensors, optimizer.safetensors, metrics.ndjson (with -resume: the resumed run's directory)")
	resume := fs.String("resume", "", "continue from this run directory or checkpoint (with the checkpoint's model unless -model is given)")
	impl := fs.String("kernels", "", "force a kernel implementation: "+strings.Join(kernels.Available(), ", "))
	plain := fs.Bool("plain", false, "plain progress lines even on a terminal")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags only; see -h)", fs.Arg(0))
	}
	if *impl != "" {
		if err := kernels.Use(*impl); err != nil {
			return fmt.Errorf("-kernels: %w", err)
		}
	}
	modelSet, outSet := false, false
	var badSet error
	fs.Visit(func(f *flag.Flag) {
		modelSet = modelSet || f.Name == "model"
		outSet = outSet || f.Name == "out"
		// 0 means "the default" only when the flag is not given: an
		// explicit -epochs 0 or -batch 0 is a mistake, not a default.
		if (f.Name == "epochs" || f.Name == "batch") && f.Value.String() == "0" && badSet == nil {
			badSet = fmt.Errorf("-%s 0: must be positive (leave the flag out for the default)", f.Name)
		}
	})
	if badSet != nil {
		return badSet
	}
	if *resume != "" && !outSet {
		// A resumed run goes on in its own directory, not in the default
		// -out (which would leave it behind and overwrite another run).
		*out = train.ResumeDir(*resume)
	}
	var cfg capsnet.Config
	var ck *capsnet.Checkpoint // the -resume checkpoint, read once
	var err error
	if *resume != "" {
		if ck, err = train.ReadResume(*resume); err != nil {
			return fmt.Errorf("-resume: %w", err)
		}
	}
	if ck != nil && !modelSet { // continue with the checkpoint's own model
		if !ck.HasConfig() {
			return fmt.Errorf("-resume: %s has no model config in its metadata: name the model with -model", ck.Path)
		}
		cfg = ck.Config
	} else if cfg, err = capsnet.LoadConfig(*model); err != nil {
		return fmt.Errorf("-model: %w", err)
	}
	trainSet, testSet, err := data.LoadNamed(*dataName, *dataDir)
	if err != nil {
		return fmt.Errorf("-data %s: %w", *dataName, err)
	}
	o := train.DefaultOptions(cfg)
	o.Train, o.Val = trainSet, testSet
	if cfg.Input[1] != trainSet.H || cfg.Input[2] != trainSet.W {
		// The paper's recipe: digits at a random position on an empty canvas
		// for training, centred for validation.
		o.TrainPlacement, o.ValPlacement, o.Canvas = data.PlacementRandom, data.PlacementCenter, cfg.Input[1]
	} else if *shift != 0 {
		if *shift < 0 || *shift >= trainSet.H {
			return fmt.Errorf("-shift %d: want 0 to %d pixels", *shift, trainSet.H-1)
		}
		o.TrainPlacement, o.MaxShift = data.PlacementShift, *shift
	}
	o.Epochs, o.Batch = 30, 512
	if *dataName == "embedded" {
		o.Epochs, o.Batch = 5, 64
	}
	if *epochs != 0 {
		o.Epochs = *epochs
	}
	if *batch != 0 {
		o.Batch = *batch
	}
	o.Threads, o.LR, o.LRDecay, o.WeightDecay = *threads, *lr, *decay, *wd
	o.TargetAcc, o.Seed, o.OutDir, o.Resume, o.ResumeFrom = *target, *seed, *out, *resume, ck
	o.Log = os.Stdout
	o.Progress = !*plain && isTerminal(os.Stdout)

	// SIGTERM (what a cluster scheduler sends before killing a job) saves
	// and stops like Ctrl-C.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("capstan train: model %s on %s (%d training, %d validation images), %d epochs, batch %d, placement %s, kernels %s\n",
		cfg.Name, trainSet.Name, trainSet.N, testSet.N, o.Epochs, o.Batch, placementHint(o), kernels.Impl())
	res, err := train.Run(ctx, o)
	if err != nil {
		return err
	}
	if res.Interrupted {
		return nil
	}
	if len(res.Epochs) == 0 { // a resumed run that had already trained every epoch asked for
		fmt.Printf("nothing to train: %s already holds epoch %s of %d; ask for more with a larger -epochs\n", res.Checkpoint, ck.Meta["epoch"], o.Epochs)
		return nil
	}
	last := res.Epochs[len(res.Epochs)-1]
	fmt.Printf("done: validation accuracy %.2f%% after %d epoch(s), %.0f img/s; checkpoint %s\n", 100*last.ValAcc, last.Epoch, last.ImgPerSec, res.Checkpoint)
	fmt.Printf("evaluate it: go run ./tools/infer -checkpoint %s -data %s\n", res.Checkpoint, *dataName)
	return nil
}

// placementHint describes how training images are placed.
func placementHint(o train.Options) string {
	switch o.TrainPlacement {
	case data.PlacementShift:
		return fmt.Sprintf("shift ±%d px", o.MaxShift)
	case data.PlacementRandom:
		return fmt.Sprintf("random on %d×%d", o.Canvas, o.Canvas)
	}
	return o.TrainPlacement.String()
}

func presetHint() []string {
	return []string{"sabour-small", "sabour", "deep", "deep-uniform", "deep-nN-dD-LL"}
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
