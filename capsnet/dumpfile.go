package capsnet

import (
	"fmt"
	"math"

	"github.com/capstan-ml/capstan/capsnet/safetensors"
)

// DumpFiles is the file form of Dump: it loads the weights (a checkpoint or
// a PyTorch state dict; cfg names the model when the file has no config
// metadata), reads the batch file (safetensors with x (B, C, H, W) and y (B)
// as floats holding class numbers) and writes the docs/semantics.md §8 tensors to out,
// atomically.
func DumpFiles(cfg *Config, weights, batch, out string) error {
	ck, err := ReadCheckpoint(weights)
	if err != nil {
		return err
	}
	p, err := ck.Params(cfg)
	if err != nil {
		return err
	}
	st, err := safetensors.Read(batch)
	if err != nil {
		return err
	}
	x, okx := st.Tensors["x"]
	y, oky := st.Tensors["y"]
	if !okx || !oky {
		return fmt.Errorf("%s: needs tensors x (B, C, H, W) and y (B)", batch)
	}
	if x.I8 != nil || y.I8 != nil {
		return fmt.Errorf("%s: tensors x and y must be F32, not I8", batch)
	}
	in := p.Config.Input
	if len(x.Shape) != 4 || x.Shape[1] != in[0] || x.Shape[2] != in[1] || x.Shape[3] != in[2] {
		return fmt.Errorf("%s: x has shape %v, model %s takes (B, %d, %d, %d)", batch, x.Shape, p.Config.Name, in[0], in[1], in[2])
	}
	if len(y.Shape) != 1 || y.Shape[0] != x.Shape[0] {
		return fmt.Errorf("%s: y has shape %v, want (%d)", batch, y.Shape, x.Shape[0])
	}
	labels := make([]int, len(y.Data))
	for i, v := range y.Data {
		if v != float32(math.Trunc(float64(v))) || v < 0 || int(v) >= p.Config.Classes {
			return fmt.Errorf("%s: y[%d] = %v is not a class in 0..%d", batch, i, v, p.Config.Classes-1)
		}
		labels[i] = int(v)
	}
	ts, err := Dump(p, x.Data, labels)
	if err != nil {
		return fmt.Errorf("%s: %w", batch, err)
	}
	return safetensors.Write(out, ts, map[string]string{"format": CheckpointFormat, "config": p.Config.JSON()})
}
