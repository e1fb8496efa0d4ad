// Command dump runs one forward and backward pass of a model on a batch and
// writes every intermediate the PyTorch reference's oracle writes (spec §8):
// loss, norms, recon, trace.K.v (capsules of layer K; K = 0 is the primary
// capsules), trace.K.c (last-iteration couplings), grad.NAME. Researchers
// use it to extract the routing of a batch; the tests use it to match
// PyTorch.
//
//	go run ./tools/dump -weights W.safetensors -batch B.safetensors -out OUT.safetensors [-model NAME|CONFIG.json]
//
// The batch file is a safetensors file with x (B, C, H, W) and y (B, class
// numbers as floats). -model is needed only when the weights file carries
// no config metadata (a plain PyTorch state dict).
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/kernels"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "dump:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("dump", flag.ContinueOnError)
	model := fs.String("model", "", "model preset or JSON config (only for weights without config metadata)")
	weights := fs.String("weights", "", "checkpoint or PyTorch state dict (safetensors)")
	batch := fs.String("batch", "", "safetensors file with x and y")
	out := fs.String("out", "", "output safetensors file")
	impl := fs.String("kernels", "", "force a kernel implementation")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	for _, f := range []struct{ name, v string }{{"-weights", *weights}, {"-batch", *batch}, {"-out", *out}} {
		if f.v == "" {
			return fmt.Errorf("%s is required (see -h)", f.name)
		}
	}
	if *impl != "" {
		if err := kernels.Use(*impl); err != nil {
			return fmt.Errorf("-kernels: %w", err)
		}
	}
	var cfg *capsnet.Config
	if *model != "" {
		c, err := capsnet.LoadConfig(*model)
		if err != nil {
			return fmt.Errorf("-model: %w", err)
		}
		cfg = &c
	}
	if err := capsnet.DumpFiles(cfg, *weights, *batch, *out); err != nil {
		return err
	}
	fmt.Printf("wrote %s (kernels %s)\n", *out, kernels.Impl())
	return nil
}
