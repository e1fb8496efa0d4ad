// Package dump is the dump command: tools/dump (go run ./tools/dump) and
// capstan dump (tools/capstan) are thin wrappers of its Main. See
// tools/dump for what it does.
package dump

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/kernels"
	"github.com/capstan-ml/capstan/tools/internal/cli"
)

// Main runs the dump command with args (the arguments after its name) and
// returns its exit status; it prints on os.Stdout and os.Stderr. tools/dump
// and capstan dump both call it.
func Main(args []string) int {
	return cli.Exit(os.Stderr, "dump", run(args))
}

const (
	summary = "dump: writes every intermediate of one forward and backward pass on a batch (docs/semantics.md §8); usage: dump -weights W -batch B -out OUT [flags]"
	notes   = `The batch file is a safetensors file with x (B, C, H, W) and y (B, class
numbers as floats). Exit status: 0 done, 1 error (a file or model), 2 bad
flag, flag value or argument.
`
)

func run(args []string) error {
	fs := flag.NewFlagSet("dump", flag.ContinueOnError)
	cli.SetUsage(fs, summary, notes)
	model := fs.String("model", "", "model preset or JSON config: for weights without config metadata (weights that have one must hold this model)")
	weights := fs.String("weights", "", "checkpoint or PyTorch state dict (safetensors), required")
	batch := fs.String("batch", "", "safetensors file with x and y, required")
	out := fs.String("out", "", "output safetensors file, required (replaced atomically; not one of the inputs)")
	impl := fs.String("kernels", "", "force a kernel implementation: "+strings.Join(kernels.Available(), ", "))
	if err := cli.Parse(fs, args, 0, os.Stdout); err != nil {
		return err
	}
	for _, f := range []struct{ name, v string }{{"-weights", *weights}, {"-batch", *batch}, {"-out", *out}} {
		if f.v == "" {
			return cli.Usagef("%s is required (see -h)", f.name)
		}
	}
	if err := capsnet.CheckCheckpointPath(*weights); err != nil {
		return fmt.Errorf("-weights: %w", err)
	}
	inputs := []cli.Path{{Flag: "-weights", Value: *weights}, {Flag: "-batch", Value: *batch}, cli.ModelInput(*model)}
	if err := cli.CheckOutputs([]cli.Path{{Flag: "-out", Value: *out}}, inputs); err != nil {
		return err
	}
	if *impl != "" {
		if err := kernels.Use(*impl); err != nil {
			return cli.UsageError{Err: fmt.Errorf("-kernels: %w", err)}
		}
	}
	var cfg *capsnet.Config
	if *model != "" {
		c, err := capsnet.LoadConfig(*model)
		if err != nil {
			return fmt.Errorf("-model: %w", err)
		}
		cfg = &c
		// DumpFiles would use a checkpoint's own config and ignore -model:
		// a -model that differs is refused here. (The file is read again
		// by DumpFiles; only with -model.)
		ck, err := capsnet.ReadCheckpoint(*weights)
		if err != nil {
			return fmt.Errorf("-weights: %w", err)
		}
		if err := cli.CheckModel(ck, cfg); err != nil {
			return err
		}
	}
	if err := capsnet.DumpFiles(cfg, *weights, *batch, *out); err != nil {
		return err
	}
	cli.Wrote(os.Stdout, *out, "kernels "+kernels.Impl())
	return nil
}
