package quant

import (
	"fmt"
	"math"
	"slices"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/safetensors"
)

// Format is the "format" metadata of an int8 model file.
const Format = capsnet.Int8FormatPrefix + "1"

// Granularity is the channel of the votes matrices' scales.
type Granularity int

const (
	// PerCapsule gives each output capsule j of a votes matrix one scale
	// (over its n_in·d_out·d_in weights).
	PerCapsule Granularity = iota
	// PerBlock gives each (j, i) block of a votes matrix, the d_out×d_in
	// matrix from input capsule i to output capsule j, one scale.
	PerBlock
)

// String returns the granularity's name in the file's metadata: "capsule"
// or "block".
func (g Granularity) String() string {
	switch g {
	case PerCapsule:
		return "capsule"
	case PerBlock:
		return "block"
	}
	return fmt.Sprintf("Granularity(%d)", int(g))
}

// ParseGranularity parses "capsule" or "block".
func ParseGranularity(s string) (Granularity, error) {
	switch s {
	case "capsule":
		return PerCapsule, nil
	case "block":
		return PerBlock, nil
	}
	return 0, fmt.Errorf("granularity %q: want capsule or block", s)
}

// Options are the settings of Quantize.
type Options struct {
	// Granularity of the votes matrices' scales (PerCapsule by default).
	Granularity Granularity
}

// Tensor is one parameter of an int8 model, under its PyTorch name and in
// its PyTorch layout: either float32 values (Float: biases and priors) or
// int8 values Q with one scale per channel (Scales), the channels being
// the first ChannelDims dimensions of Shape; weight e of channel c is
// approximately Q[e]·Scales[c].
type Tensor struct {
	Name  string
	Shape []int
	Role  capsnet.ParamRole
	// Float holds an unquantized tensor's values (nil for a quantized one).
	Float []float32
	// Q holds a quantized tensor's values, in [-127, 127].
	Q []int8
	// Scales holds one positive scale per channel.
	Scales []float32
	// ChannelDims is the number of leading dimensions of Shape that index
	// the channels: len(Scales) is their product.
	ChannelDims int
}

// Model is an int8 model: its config, its quantization settings and its
// tensors in the order of capsnet.Params.List.
type Model struct {
	Config      capsnet.Config
	Granularity Granularity
	Tensors     []Tensor
	// Calibration holds the activation scales of the int8 GEMM inputs
	// (Calibrate), or is nil for a model not calibrated.
	Calibration *Calibration
	// Source is the provenance of the float checkpoint the model was
	// quantized from (e.g. "data", "seed", "epoch", "val_acc", and
	// "checkpoint": its file), saved in the metadata as "source_KEY"; nil
	// or empty when unknown. Keys are lower-case letters, digits and '_'.
	Source map[string]string
}

// SourceKeys are the float checkpoint's metadata entries a quantizer
// copies into Model.Source (CopySource).
var SourceKeys = []string{"data", "train_set", "val_set", "test_set", "seed", "epoch", "val_acc", "test_acc"}

// CopySource returns the SourceKeys entries of a float checkpoint's
// metadata, with "checkpoint" set to its path.
func CopySource(meta map[string]string, path string) map[string]string {
	src := map[string]string{"checkpoint": path}
	for _, k := range SourceKeys {
		if v, ok := meta[k]; ok {
			src[k] = v
		}
	}
	return src
}

// channelDims returns how many leading dimensions index the channels of a
// parameter of that role, 0 for one that stays float32.
func channelDims(role capsnet.ParamRole, g Granularity) int {
	switch role {
	case capsnet.RoleConvWeight, capsnet.RoleFCWeight:
		return 1
	case capsnet.RoleVotes:
		if g == PerBlock {
			return 2
		}
		return 1
	}
	return 0
}

// Quantize quantizes the weights of p (see the package doc); biases and
// priors are copied. p is not modified. A weight that is not finite is an
// error naming the tensor.
func Quantize(p *capsnet.Params, opts Options) (*Model, error) {
	if opts.Granularity != PerCapsule && opts.Granularity != PerBlock {
		return nil, fmt.Errorf("quantize: unknown granularity %v", opts.Granularity)
	}
	m := &Model{Config: p.Config, Granularity: opts.Granularity}
	for _, q := range p.List {
		w := make([]float32, q.Buf.Len())
		q.ToTorch(w)
		t := Tensor{Name: q.Name, Shape: slices.Clone(q.TorchShape), Role: q.Role, ChannelDims: channelDims(q.Role, opts.Granularity)}
		if t.ChannelDims == 0 {
			t.Float = w
			m.Tensors = append(m.Tensors, t)
			continue
		}
		nch := safetensors.NumElements(t.Shape[:t.ChannelDims])
		per := len(w) / max(nch, 1)
		t.Q = make([]int8, len(w))
		t.Scales = make([]float32, nch)
		for c := range nch {
			s, err := quantizeChannel(w[c*per:(c+1)*per], t.Q[c*per:(c+1)*per])
			if err != nil {
				return nil, fmt.Errorf("quantize: tensor %q channel %d: %w", q.Name, c, err)
			}
			t.Scales[c] = s
		}
		m.Tensors = append(m.Tensors, t)
	}
	return m, nil
}

// quantizeChannel quantizes one channel of weights into q and returns its
// scale s = max|w|/127: q = round(w/s) clamped to [-127, 127] (the clamp
// only absorbs the rounding of s). A channel whose max|w|/127 is zero
// (all-zero weights, or so small that the division underflows) gets scale
// 1 and q = 0. A weight that is not finite is an error.
func quantizeChannel(w []float32, q []int8) (float32, error) {
	var m float32
	for i, v := range w {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return 0, fmt.Errorf("element %d is %v", i, v)
		}
		m = max(m, float32(math.Abs(float64(v))))
	}
	s := m / 127
	if s == 0 {
		clear(q)
		return 1, nil
	}
	for i, v := range w {
		r := math.Round(float64(v) / float64(s))
		q[i] = int8(max(-127, min(127, r)))
	}
	return s, nil
}

// Dequantize returns the float model the int8 model stands for: every
// quantized weight replaced by Q·scale (rounded to float32 once), biases
// and priors as stored. It is the reference for accuracy checks.
func (m *Model) Dequantize() (*capsnet.Params, error) {
	p, err := capsnet.NewParams(m.Config)
	if err != nil {
		return nil, err
	}
	if len(m.Tensors) != len(p.List) {
		return nil, fmt.Errorf("dequantize: %d tensors, model %s has %d parameters", len(m.Tensors), m.Config.Name, len(p.List))
	}
	for k, q := range p.List {
		t := &m.Tensors[k]
		if err := t.check(q.Name, q.TorchShape); err != nil {
			return nil, fmt.Errorf("dequantize: %w", err)
		}
		w := t.Float
		if w == nil {
			w = t.Dequantized(make([]float32, len(t.Q)))
		}
		q.FromTorch(w)
	}
	return p, nil
}

// Dequantized writes the tensor's float values (Q·scale per channel, or
// Float) into dst (at least as long as the tensor) and returns
// dst[:len].
func (t *Tensor) Dequantized(dst []float32) []float32 {
	if t.Float != nil {
		return append(dst[:0], t.Float...)
	}
	dst = dst[:len(t.Q)]
	per := len(t.Q) / max(len(t.Scales), 1)
	for i, v := range t.Q {
		dst[i] = float32(v) * t.Scales[i/per]
	}
	return dst
}

// check verifies a tensor built by hand against the parameter it stands
// for: name, shape, and the lengths of its values and scales.
func (t *Tensor) check(name string, shape []int) error {
	switch {
	case t.Name != name:
		return fmt.Errorf("tensor %q where parameter %q is expected", t.Name, name)
	case !slices.Equal(t.Shape, shape):
		return fmt.Errorf("tensor %q has shape %v, want %v", name, t.Shape, shape)
	case t.Float != nil && (t.Q != nil || len(t.Float) != safetensors.NumElements(shape)):
		return fmt.Errorf("tensor %q: %d float values for shape %v", name, len(t.Float), shape)
	case t.Float == nil && (len(t.Q) != safetensors.NumElements(shape) || t.ChannelDims < 1 || t.ChannelDims > len(shape) || len(t.Scales) != safetensors.NumElements(shape[:t.ChannelDims])):
		return fmt.Errorf("tensor %q: %d int8 values and %d scales for shape %v", name, len(t.Q), len(t.Scales), shape)
	}
	return nil
}
