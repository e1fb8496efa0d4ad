package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/capstan-ml/capstan/quant"
	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/train/data"
	"github.com/capstan-ml/capstan/train/eval"
)

// int8Run is what an int8 model's run takes from the flags.
type int8Run struct {
	data, dir string
	seed      uint64
	batch     int
	threads   int
	plan      bool
	image     string
	repeat    int
}

// runInt8 runs an int8 model file (tools/quantize): its footprint at
// -batch (-plan), one -image, or a data set.
func runInt8(path string, given map[string]bool, r int8Run) error {
	for _, f := range []string{"model", "recon", "perturb", "perturb-index"} {
		if given[f] {
			return cli.Usagef("-%s does not apply to an int8 model (%s): its config is in the file, and the figures need the float checkpoint", f, path)
		}
	}
	m, err := quant.Load(path)
	if err != nil {
		return fmt.Errorf("-checkpoint: %w", err)
	}
	if r.plan {
		n, err := quant.NewNet(m, r.batch)
		if err != nil {
			return err
		}
		fmt.Printf("int8 model %s, batch %d: static memory %s\n", m.Config.Name, r.batch, n.Footprint())
		return nil
	}
	if r.image != "" {
		x, err := imageInput(m.Config, r.image)
		if err != nil {
			return err
		}
		ev, err := eval.NewInt8(m, 1, 1)
		if err != nil {
			return err
		}
		defer ev.Close()
		return classifyWith(ev, "int8", r.image, x, r.repeat)
	}
	if msg := data.EvalWarning(m.Source["data"], r.data); msg != "" {
		fmt.Fprintf(os.Stderr, "warning: %s: %s\n", path, strings.Replace(msg, "the checkpoint", "the int8 model's checkpoint", 1))
	}
	ds, err := data.LoadTest(r.data, r.dir, r.seed)
	if err != nil {
		return fmt.Errorf("-data %s: %w", r.data, err)
	}
	in := m.Config.Input
	if in[0] != ds.C {
		return fmt.Errorf("model %s takes %d channel(s), %s has %d", m.Config.Name, in[0], ds.Name, ds.C)
	}
	if data.PlacementFor(ds.H, ds.W, in[1], in[2]) == data.PlacementRescale {
		fmt.Printf("note: the %d×%d images of %s are rescaled to %d×%d (area averaging) for model %s\n", ds.H, ds.W, ds.Name, in[1], in[2], m.Config.Name)
	}
	b := min(r.batch, ds.N)
	ev, err := eval.NewInt8(m, b, r.threads)
	if err != nil {
		return err
	}
	defer ev.Close()
	_, err = evaluate(ev, ds, "int8", b)
	return err
}
