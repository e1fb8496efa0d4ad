package infer

import (
	"fmt"
	"os"
	"strings"

	"github.com/capstan-ml/capstan/quant"
	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/train/data"
	"github.com/capstan-ml/capstan/train/eval"
)

// runInt8 runs an int8 model file (tools/quantize): its footprint at
// -batch (-plan), one -image, or a data set.
func runInt8(given map[string]bool, o options) error {
	path := o.ck
	for _, f := range []string{"model", "recon", "perturb", "perturb-index"} {
		if given[f] {
			return cli.Usagef("-%s does not apply to an int8 model (%s): its config is in the file, and the figures need the float checkpoint", f, path)
		}
	}
	m, err := quant.Load(path)
	if err != nil {
		return fmt.Errorf("-checkpoint: %w", err)
	}
	if o.plan {
		n, err := quant.NewNet(m, o.batch)
		if err != nil {
			return err
		}
		fmt.Printf("int8 model %s, batch %d: static memory %s\n", m.Config.Name, o.batch, n.Footprint())
		return nil
	}
	if o.image != "" {
		x, err := imageInput(m.Config, o.image)
		if err != nil {
			return err
		}
		ev, err := eval.NewInt8(m, 1, 1)
		if err != nil {
			return err
		}
		defer ev.Close()
		return classifyWith(ev, "int8", o.image, x, o.repeat)
	}
	if msg := data.EvalWarning(m.Source["data"], o.data); msg != "" {
		fmt.Fprintf(os.Stderr, "warning: %s: %s\n", path, strings.Replace(msg, "the checkpoint", "the int8 model's checkpoint", 1))
	}
	if err := checkMemory(quant.ProcessMemory(m, o.batch, o.threads)); err != nil {
		return err
	}
	ds, err := loadData(m.Config, o)
	if err != nil {
		return err
	}
	noteRescale(m.Config, ds)
	b := min(o.batch, ds.N)
	ev, err := eval.NewInt8(m, b, o.threads)
	if err != nil {
		return err
	}
	defer ev.Close()
	_, err = evaluate(ev, ds, "int8", b)
	return err
}
