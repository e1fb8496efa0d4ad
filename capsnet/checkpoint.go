package capsnet

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// CheckpointFormat is stored in every checkpoint's metadata as "format".
const CheckpointFormat = "capstan/1"

// Init fills the parameters as PyTorch initialises the reference model,
// from a seeded generator: conv and linear weights and biases uniform in
// ±1/sqrt(fan_in), capsule votes matrices normal with the layer's InitStd
// (DefaultInitStd, 0.05, when unset), priors 0.
func (p *Params) Init(seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x6361707374616e))
	std := map[string]float64{}
	for _, c := range p.Config.Caps {
		std[c.Name+".W"] = c.InitStd
	}
	for _, q := range p.List {
		data := q.Buf.Data()
		switch q.kind {
		case votesW:
			sd := std[q.Name]
			if sd == 0 {
				sd = DefaultInitStd
			}
			for i := range data {
				data[i] = float32(rng.NormFloat64() * sd)
			}
		case prior:
			clear(data)
		default:
			fanIn := 1
			if len(q.TorchShape) > 1 { // weight: fan_in = in·kh·kw
				for _, s := range q.TorchShape[1:] {
					fanIn *= s
				}
			} else { // bias: PyTorch uses the weight's fan_in
				w := p.Get(q.Name[:len(q.Name)-len("bias")] + "weight")
				for _, s := range w.TorchShape[1:] {
					fanIn *= s
				}
			}
			bound := 1 / math.Sqrt(float64(fanIn))
			for i := range data {
				data[i] = float32((rng.Float64()*2 - 1) * bound)
			}
		}
	}
}

// TorchTensors returns every parameter in PyTorch layout under its PyTorch
// name (a state dict).
func (p *Params) TorchTensors() map[string]Tensor {
	out := make(map[string]Tensor, len(p.List))
	for _, q := range p.List {
		t := Tensor{Shape: slices.Clone(q.TorchShape), Data: make([]float32, q.Buf.Len())}
		q.ToTorch(t.Data)
		out[q.Name] = t
	}
	return out
}

// LoadTensors copies a PyTorch state dict into the parameters. Every
// parameter must be present with its exact shape and finite values; extra
// tensors are an error too (a checkpoint of another model).
func (p *Params) LoadTensors(ts map[string]Tensor, source string) error {
	for _, q := range p.List {
		t, ok := ts[q.Name]
		if !ok {
			return fmt.Errorf("%s: tensor %q missing (model %s)", source, q.Name, p.Config.Name)
		}
		if !slices.Equal(t.Shape, q.TorchShape) {
			return fmt.Errorf("%s: tensor %q has shape %v, model %s needs %v", source, q.Name, t.Shape, p.Config.Name, q.TorchShape)
		}
		for i, v := range t.Data {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("%s: tensor %q element %d is %v", source, q.Name, i, v)
			}
		}
	}
	for name := range ts {
		if p.Get(name) == nil {
			return fmt.Errorf("%s: unexpected tensor %q (not a parameter of model %s)", source, name, p.Config.Name)
		}
	}
	for _, q := range p.List {
		q.FromTorch(ts[q.Name].Data)
	}
	return nil
}

// SaveCheckpoint writes the parameters as a safetensors state dict with the
// PyTorch names and layouts, and the config (JSON) and extra entries in the
// header metadata. The write is atomic: temp file, fsync, rename.
func (p *Params) SaveCheckpoint(path string, extra map[string]string) error {
	meta := map[string]string{"format": CheckpointFormat, "config": p.Config.JSON()}
	for k, v := range extra {
		meta[k] = v
	}
	return WriteSafeTensors(path, p.TorchTensors(), meta)
}

// LoadCheckpoint reads a checkpoint. Its model comes from the "config"
// metadata entry; a PyTorch state dict without one needs cfg (pass nil to
// require the metadata). It returns the parameters and the metadata.
func LoadCheckpoint(path string, cfg *Config) (*Params, map[string]string, error) {
	st, err := ReadSafeTensors(path)
	if err != nil {
		return nil, nil, err
	}
	var c Config
	switch {
	case st.Metadata["config"] != "":
		if c, err = ParseConfig([]byte(st.Metadata["config"]), path+" (metadata)"); err != nil {
			return nil, nil, err
		}
	case cfg != nil:
		c = *cfg
	default:
		return nil, nil, fmt.Errorf("%s: no model config in the metadata: name the model (preset or config file)", path)
	}
	p, err := NewParams(c)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := p.LoadTensors(st.Tensors, path); err != nil {
		return nil, nil, err
	}
	return p, st.Metadata, nil
}
