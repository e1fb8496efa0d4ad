package capsnet

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/capstan-ml/capstan/capsnet/safetensors"
)

// Tensor is a float32 tensor with its PyTorch shape, as Dump returns them
// and state dicts hold them (an alias of safetensors.Tensor).
type Tensor = safetensors.Tensor

// CheckpointFormat is stored in every checkpoint's metadata as "format".
const CheckpointFormat = "capstan/1"

// Init fills the parameters as PyTorch initialises the reference model,
// from a seeded generator: conv and linear weights and biases uniform in
// ±1/sqrt(fan_in), capsule votes matrices normal with the layer's InitStd
// (DefaultInitStd, 0.05, when unset) or as the layer's Init says, priors 0
// (each parameter as its ParamSpec.Init says, in the order of List).
func (p *Params) Init(seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 0x6361707374616e))
	for _, q := range p.List {
		initParam(rng, q.Buf.Data(), q.init)
	}
}

// initParam draws data as init says.
func initParam(rng *rand.Rand, data []float32, init ParamInit) {
	switch init.Kind {
	case InitZero:
		clear(data)
	case InitTruncNormal:
		for i := range data {
			x := rng.NormFloat64()
			for math.Abs(x) > 2 {
				x = rng.NormFloat64()
			}
			data[i] = float32(x * init.Scale)
		}
	case InitNormal:
		for i := range data {
			data[i] = float32(rng.NormFloat64() * init.Scale)
		}
	default:
		for i := range data {
			data[i] = float32((rng.Float64()*2 - 1) * init.Scale)
		}
	}
}

// TorchTensors returns every parameter in PyTorch layout under its PyTorch
// name (a state dict).
func (p *Params) TorchTensors() map[string]safetensors.Tensor {
	out := make(map[string]safetensors.Tensor, len(p.List))
	for _, q := range p.List {
		t := safetensors.Tensor{Shape: slices.Clone(q.TorchShape), Data: make([]float32, q.Buf.Len())}
		q.ToTorch(t.Data)
		out[q.Name] = t
	}
	return out
}

// SaveCheckpoint writes the parameters as a safetensors state dict with the
// PyTorch names and layouts, and the config (JSON) and extra entries in the
// header metadata. The write is atomic: temp file, fsync, rename.
func (p *Params) SaveCheckpoint(path string, extra map[string]string) error {
	meta := map[string]string{"format": CheckpointFormat, "config": p.Config.JSON()}
	for k, v := range extra {
		meta[k] = v
	}
	return safetensors.Write(path, p.TorchTensors(), meta)
}

// Checkpoint is a checkpoint file read once (ReadCheckpoint): a PyTorch
// state dict and its metadata. Load copies it into parameters.
type Checkpoint struct {
	// Path is the file it was read from (named in errors).
	Path string
	// Config is the model of the metadata's "config" entry; it is the zero
	// Config (HasConfig false) for a PyTorch state dict saved without one.
	Config Config
	// Tensors is the state dict: PyTorch names and layouts.
	Tensors map[string]safetensors.Tensor
	// Meta is the header metadata: format, config, epoch, step, kernels.
	Meta map[string]string
}

// Int8FormatPrefix starts the "format" metadata of the int8 models of
// package quant ("capstan-int8/1"); ReadCheckpoint refuses such a file
// with an error saying what it is.
const Int8FormatPrefix = "capstan-int8/"

// ReadCheckpoint reads and validates a checkpoint file (or a plain PyTorch
// state dict) once. A "config" metadata entry must parse as a model
// configuration; the tensors are checked against it only by Load. An int8
// model (package quant) is refused from its header, before its data is
// read.
func ReadCheckpoint(path string) (*Checkpoint, error) {
	if err := CheckCheckpointPath(path); err != nil {
		return nil, err
	}
	h, err := safetensors.ReadHeader(path)
	if err != nil {
		return nil, err
	}
	if f := h.Metadata["format"]; strings.HasPrefix(f, Int8FormatPrefix) {
		return nil, fmt.Errorf("%s is an int8 model (quant, format %s), not a float checkpoint: tools/infer runs either kind; in Go, quant.Load", path, f)
	}
	if isOptimizerState(h) {
		return nil, fmt.Errorf("%s is an optimizer state (Adam moments of step %s), not a checkpoint: give the run's checkpoint, %s", path, h.Metadata["step"], filepath.Join(filepath.Dir(path), CheckpointFileName))
	}
	st, err := safetensors.Read(path)
	if err != nil {
		return nil, err
	}
	ck := &Checkpoint{Path: path, Tensors: st.Tensors, Meta: st.Metadata}
	if js := st.Metadata["config"]; js != "" {
		if ck.Config, err = ParseConfig([]byte(js), path+" (metadata)"); err != nil {
			return nil, err
		}
	}
	return ck, nil
}

// CheckpointFileName is the checkpoint's file name in a run directory
// (train.CheckpointName): the file an error suggests when a run directory
// or an optimizer state is given as a checkpoint.
const CheckpointFileName = "checkpoint.safetensors"

// CheckCheckpointPath refuses a checkpoint path that is a directory before
// anything is read from it (a directory would read as a truncated file):
// for a run directory the error names its checkpoint,
// DIR/checkpoint.safetensors. A path that does not exist, or any other
// file, is left to the reader.
func CheckCheckpointPath(path string) error {
	st, err := os.Stat(path)
	if err != nil || !st.IsDir() {
		return nil
	}
	ck := filepath.Join(path, CheckpointFileName)
	if s, err := os.Stat(ck); err == nil && s.Mode().IsRegular() {
		return fmt.Errorf("%s is a directory, not a checkpoint file: for the run in it, give %s", path, ck)
	}
	return fmt.Errorf("%s is a directory, not a checkpoint file (a safetensors file)", path)
}

// isOptimizerState reports whether header h is an optimizer state as
// package train saves it beside a checkpoint (optimizer-STEP.safetensors):
// no model config, and only the Adam moments adam.m.NAME and adam.v.NAME
// of the parameters.
func isOptimizerState(h *safetensors.Header) bool {
	if h.Metadata["config"] != "" || len(h.Tensors) == 0 {
		return false
	}
	for name := range h.Tensors {
		if !strings.HasPrefix(name, "adam.m.") && !strings.HasPrefix(name, "adam.v.") {
			return false
		}
	}
	return true
}

// HasConfig reports whether the checkpoint names its model (a "config"
// metadata entry).
func (ck *Checkpoint) HasConfig() bool { return ck.Meta["config"] != "" }

// Params builds the checkpoint's model and loads the weights into it. The
// model is the checkpoint's own Config; cfg (may be nil) names it for a
// state dict without config metadata and is ignored otherwise.
func (ck *Checkpoint) Params(cfg *Config) (*Params, error) {
	c := ck.Config
	if !ck.HasConfig() {
		if cfg == nil {
			return nil, fmt.Errorf("%s: no model config in the metadata: name the model (preset or config file)", ck.Path)
		}
		c = *cfg
	}
	p, err := NewParams(c)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ck.Path, err)
	}
	if err := p.load(ck.Tensors, ck.Path); err != nil {
		return nil, err
	}
	return p, nil
}

// Load copies the checkpoint's weights into p, converting them from the
// PyTorch layouts once. A checkpoint that names its model must name p's
// exact configuration; every parameter must be present with its shape and
// finite values, and no other tensor may be (a checkpoint of another
// model). On error p is unchanged; on success p is marked Modified.
func (p *Params) Load(ck *Checkpoint) error {
	if ck.HasConfig() && ck.Config.JSON() != p.Config.JSON() {
		if ck.Config.Name == p.Config.Name {
			return fmt.Errorf("%s holds another configuration of model %s than the one given (a changed preset or config file)", ck.Path, p.Config.Name)
		}
		return fmt.Errorf("%s holds model %s, not %s", ck.Path, ck.Config.Name, p.Config.Name)
	}
	return p.load(ck.Tensors, ck.Path)
}

// load copies a PyTorch state dict into the parameters after checking it
// whole (see Load).
func (p *Params) load(ts map[string]safetensors.Tensor, source string) error {
	for _, q := range p.List {
		t, ok := ts[q.Name]
		if !ok {
			return fmt.Errorf("%s: tensor %q missing (model %s)", source, q.Name, p.Config.Name)
		}
		if t.I8 != nil {
			return fmt.Errorf("%s: tensor %q is I8 (quantized), model %s needs F32", source, q.Name, p.Config.Name)
		}
		if !slices.Equal(t.Shape, q.TorchShape) {
			return fmt.Errorf("%s: tensor %q has shape %v, model %s needs %v", source, q.Name, t.Shape, p.Config.Name, q.TorchShape)
		}
		if len(t.Data) != q.Buf.Len() { // a Checkpoint built by hand
			return fmt.Errorf("%s: tensor %q has %d values for its shape %v of %d", source, q.Name, len(t.Data), t.Shape, q.Buf.Len())
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
		q.FromTorch(ts[q.Name].Data) // marks p Modified
	}
	return nil
}
