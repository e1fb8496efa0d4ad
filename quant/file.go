package quant

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/safetensors"
)

// scaleSuffix names a quantized weight's scales: NAME.scale (no parameter
// name ends so: they end in .weight, .bias, .W or .b).
const scaleSuffix = ".scale"

// Save writes the model to path atomically (temp file, fsync, rename) in
// the format of the package doc (see Encode).
func (m *Model) Save(path string) error {
	return safetensors.WriteAtomic(path, m.Encode)
}

// Encode writes the model to w in the format of the package doc. A tensor
// whose values, scales and shape disagree is an error naming it.
func (m *Model) Encode(w io.Writer) error {
	ts := make(map[string]safetensors.Tensor, 2*len(m.Tensors))
	for i := range m.Tensors {
		t := &m.Tensors[i]
		if t.Float != nil {
			ts[t.Name] = safetensors.Tensor{Shape: t.Shape, Data: t.Float}
			continue
		}
		if t.ChannelDims < 1 || t.ChannelDims > len(t.Shape) {
			return fmt.Errorf("tensor %q: %d channel dimensions for shape %v", t.Name, t.ChannelDims, t.Shape)
		}
		ts[t.Name] = safetensors.Tensor{Shape: t.Shape, I8: t.Q}
		ts[t.Name+scaleSuffix] = safetensors.Tensor{Shape: t.Shape[:t.ChannelDims], Data: t.Scales}
	}
	meta := map[string]string{"format": Format, "config": m.Config.JSON(), "granularity": m.Granularity.String()}
	return safetensors.Encode(w, ts, meta)
}

// expected is one tensor an int8 model file must hold.
type expected struct {
	name  string
	dtype string
	shape []int
}

// layout returns the tensors a file of the config and granularity must
// hold, each parameter followed by its scales when it is quantized, with
// the parameter's role and channel dimensions.
func layout(cfg capsnet.Config, g Granularity) ([]expected, []capsnet.ParamSpec, error) {
	specs, err := cfg.ParamSpecs()
	if err != nil {
		return nil, nil, err
	}
	var out []expected
	for _, sp := range specs {
		cd := channelDims(sp.Role, g)
		if cd == 0 {
			out = append(out, expected{sp.Name, "F32", sp.TorchShape})
			continue
		}
		out = append(out, expected{sp.Name, "I8", sp.TorchShape}, expected{sp.Name + scaleSuffix, "F32", sp.TorchShape[:cd]})
	}
	return out, specs, nil
}

// checkLayout checks a file's tensors (dtype and shape by name) against
// the expected ones: each present with its dtype and shape, no other.
func checkLayout(want []expected, have map[string]safetensors.Info, model string) error {
	for _, e := range want {
		h, ok := have[e.name]
		switch {
		case !ok:
			return fmt.Errorf("tensor %q missing (model %s)", e.name, model)
		case h.DType != e.dtype:
			return fmt.Errorf("tensor %q is %s, want %s", e.name, h.DType, e.dtype)
		case !slices.Equal(h.Shape, e.shape):
			return fmt.Errorf("tensor %q has shape %v, model %s needs %v", e.name, h.Shape, model, e.shape)
		}
	}
	if len(have) != len(want) {
		known := make(map[string]bool, len(want))
		for _, e := range want {
			known[e.name] = true
		}
		for _, name := range slices.Sorted(maps.Keys(have)) {
			if !known[name] {
				return fmt.Errorf("unexpected tensor %q (not a tensor of the int8 model %s)", name, model)
			}
		}
	}
	return nil
}

// Load reads an int8 model written by Save. It checks, from the header and
// before reading any tensor data, the format metadata (a float checkpoint
// or another file is refused saying what it is), the config (as
// capsnet.ParseConfig checks it), the granularity, and that every tensor
// the config implies is present with its dtype and shape and no other;
// then every scale is finite and > 0, every float finite and no int8 value
// is -128. Every error is one line naming the file (and the tensor).
func Load(path string) (*Model, error) {
	h, err := safetensors.ReadHeader(path)
	if err != nil {
		return nil, err
	}
	meta := h.Metadata
	switch f := meta["format"]; {
	case f == capsnet.CheckpointFormat:
		return nil, fmt.Errorf("%s is a float checkpoint (format %s), not an int8 model: quantize it first (quant.Quantize)", path, f)
	case f == "":
		return nil, fmt.Errorf("%s is not an int8 model: no format metadata (want %s)", path, Format)
	case f != Format:
		return nil, fmt.Errorf("%s is not an int8 model of this version: format %q (want %s)", path, f, Format)
	}
	if meta["config"] == "" {
		return nil, fmt.Errorf("%s: no model config in the metadata", path)
	}
	cfg, err := capsnet.ParseConfig([]byte(meta["config"]), path+" (metadata)")
	if err != nil {
		return nil, err
	}
	g, err := ParseGranularity(meta["granularity"])
	if err != nil {
		return nil, fmt.Errorf("%s: metadata: %w", path, err)
	}
	want, specs, err := layout(cfg, g)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := checkLayout(want, h.Tensors, cfg.Name); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	st, err := safetensors.Read(path)
	if err != nil {
		return nil, err
	}
	// The file may have changed between the two reads: check it again.
	have := make(map[string]safetensors.Info, len(st.Tensors))
	for name, t := range st.Tensors {
		have[name] = safetensors.Info{DType: t.DType(), Shape: t.Shape}
	}
	if err := checkLayout(want, have, cfg.Name); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if st.Metadata["format"] != Format || st.Metadata["config"] != meta["config"] || st.Metadata["granularity"] != meta["granularity"] {
		return nil, fmt.Errorf("%s: metadata changed while reading", path)
	}
	m := &Model{Config: cfg, Granularity: g}
	for _, sp := range specs {
		t := Tensor{Name: sp.Name, Shape: sp.TorchShape, Role: sp.Role, ChannelDims: channelDims(sp.Role, g)}
		if t.ChannelDims == 0 {
			t.Float = st.Tensors[sp.Name].Data
			if err := finite(t.Float); err != nil {
				return nil, fmt.Errorf("%s: tensor %q %w", path, sp.Name, err)
			}
		} else {
			t.Q = st.Tensors[sp.Name].I8
			t.Scales = st.Tensors[sp.Name+scaleSuffix].Data
			if i := slices.Index(t.Q, -128); i >= 0 {
				return nil, fmt.Errorf("%s: tensor %q element %d is -128, outside the symmetric range [-127, 127]", path, sp.Name, i)
			}
			if err := finite(t.Scales); err != nil {
				return nil, fmt.Errorf("%s: tensor %q %w", path, sp.Name+scaleSuffix, err)
			}
			for i, s := range t.Scales {
				if s <= 0 {
					return nil, fmt.Errorf("%s: tensor %q element %d is %v, a scale must be > 0", path, sp.Name+scaleSuffix, i, s)
				}
			}
		}
		m.Tensors = append(m.Tensors, t)
	}
	return m, nil
}

// finite reports the first value that is NaN or infinite.
func finite(v []float32) error {
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("element %d is %v", i, x)
		}
	}
	return nil
}
