package quant

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/atomicfile"
	"github.com/capstan-ml/capstan/capsnet/safetensors"
)

// scaleSuffix names a quantized weight's scales: NAME.scale (no parameter
// name ends so: they end in .weight, .bias, .W or .b).
const scaleSuffix = ".scale"

// actSuffix names the activation scale of a quantized weight's input:
// NAME.act_scale, a scalar F32 tensor (calibrated models only).
const actSuffix = ".act_scale"

// Save writes the model to path atomically (temp file, fsync, rename) in
// the format of the package doc (see Encode).
func (m *Model) Save(path string) error {
	return atomicfile.Write(path, m.Encode)
}

// Encode writes the model to w in the format of the package doc. A tensor
// whose values, scales and shape disagree, or whose scales Load would
// refuse (checkScales), is an error naming it.
func (m *Model) Encode(w io.Writer) error {
	if err := m.checkScales(); err != nil {
		return err
	}
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
	if c := m.Calibration; c != nil {
		k := 0
		for i := range m.Tensors {
			t := &m.Tensors[i]
			if t.Float != nil {
				continue
			}
			if k >= len(c.Scales) || c.Scales[k].Name != t.Name {
				return fmt.Errorf("calibration: no activation scale for tensor %q (scales of another model)", t.Name)
			}
			ts[t.Name+actSuffix] = safetensors.Tensor{Shape: []int{}, Data: []float32{c.Scales[k].Scale}}
			k++
		}
		if k != len(c.Scales) {
			return fmt.Errorf("calibration: %d activation scales for %d quantized tensors", len(c.Scales), k)
		}
		meta["activation_method"] = c.Method.String()
		meta["activation_images"] = strconv.Itoa(c.Images)
		if c.Method == Percentile {
			meta["activation_percentile"] = formatPercentile(c.Percentile)
		}
	}
	for k, v := range m.Source {
		if !sourceKey(k) || len(v) > maxSourceValue {
			return fmt.Errorf("source %q: want a key of lower-case letters, digits and '_' (at most %d bytes) and a value of at most %d bytes", k, maxSourceKey, maxSourceValue)
		}
		meta[sourcePrefix+k] = v
	}
	return safetensors.Encode(w, ts, meta)
}

// The provenance entries of the metadata: "source_KEY" (Model.Source).
const (
	sourcePrefix   = "source_"
	maxSourceKey   = 64
	maxSourceValue = 4096
	maxSources     = 64
)

func sourceKey(k string) bool {
	if k == "" || len(k) > maxSourceKey {
		return false
	}
	for _, c := range k {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// readSource collects the "source_KEY" metadata entries (nil when none).
func readSource(meta map[string]string) (map[string]string, error) {
	var src map[string]string
	for k, v := range meta {
		key, ok := strings.CutPrefix(k, sourcePrefix)
		if !ok {
			continue
		}
		if !sourceKey(key) || len(v) > maxSourceValue {
			return nil, fmt.Errorf("metadata %.80q: a provenance entry wants a key of lower-case letters, digits and '_' and a value of at most %d bytes", k, maxSourceValue)
		}
		if src == nil {
			src = map[string]string{}
		}
		if len(src) == maxSources {
			return nil, fmt.Errorf("metadata: more than %d provenance entries", maxSources)
		}
		src[key] = v
	}
	return src, nil
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
func layout(cfg capsnet.Config, g Granularity, calibrated bool) ([]expected, []capsnet.ParamSpec, error) {
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
		if calibrated {
			out = append(out, expected{sp.Name + actSuffix, "F32", []int{}})
		}
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
// capsnet.ParseConfig checks it), the granularity, the activation
// settings if any, and that every tensor the config and settings imply is
// present with its dtype and shape and no other; then every scale
// (activation scales too) is finite and > 0 and the products the kernels
// form of it are finite (checkWeightScales, checkActScale), every float
// finite and no int8 value is -128. Every error is one line naming the file (and the tensor).
func Load(path string) (*Model, error) {
	h, err := safetensors.ReadHeader(path)
	if err != nil {
		return nil, err
	}
	return load(path, h)
}

// IsModelFile reports whether path is an int8 model file by its header's
// format metadata (any capstan-int8 version: Load then says whether it
// reads it), without reading its tensors.
func IsModelFile(path string) (bool, error) {
	h, err := safetensors.ReadHeader(path)
	if err != nil {
		return false, err
	}
	return strings.HasPrefix(h.Metadata["format"], capsnet.Int8FormatPrefix), nil
}

func load(path string, h *safetensors.Header) (*Model, error) {
	meta := h.Metadata
	switch f := meta["format"]; {
	case f == capsnet.CheckpointFormat:
		return nil, fmt.Errorf("%s is a float checkpoint (format %s), not an int8 model: quantize it first (tools/quantize, or quant.Quantize)", path, f)
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
	cal, err := parseCalibration(meta)
	if err != nil {
		return nil, fmt.Errorf("%s: metadata: %w", path, err)
	}
	src, err := readSource(meta)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	want, specs, err := layout(cfg, g, cal != nil)
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
	if !maps.Equal(st.Metadata, meta) {
		return nil, fmt.Errorf("%s: metadata changed while reading", path)
	}
	m := &Model{Config: cfg, Granularity: g, Calibration: cal, Source: src}
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
			var a float32 // the input's activation scale, 0 when not calibrated
			if cal != nil {
				a = st.Tensors[sp.Name+actSuffix].Data[0]
				if err := checkActScale(a); err != nil {
					return nil, fmt.Errorf("%s: tensor %q %w", path, sp.Name+actSuffix, err)
				}
				cal.Scales = append(cal.Scales, ActScale{Name: sp.Name, Scale: a})
			}
			if err := checkWeightScales(t.Scales, a); err != nil {
				return nil, fmt.Errorf("%s: tensor %q %w", path, sp.Name+scaleSuffix, err)
			}
		}
		m.Tensors = append(m.Tensors, t)
	}
	return m, nil
}

// parseCalibration reads the activation settings of the metadata: nil
// when there are none (activation_method absent, and then no other
// activation_ entry may be there).
func parseCalibration(meta map[string]string) (*Calibration, error) {
	ms, ok := meta["activation_method"]
	if !ok {
		for _, k := range []string{"activation_images", "activation_percentile"} {
			if _, ok := meta[k]; ok {
				return nil, fmt.Errorf("%s without activation_method", k)
			}
		}
		return nil, nil
	}
	method, err := ParseMethod(ms)
	if err != nil {
		return nil, err
	}
	c := &Calibration{Method: method}
	if c.Images, err = strconv.Atoi(meta["activation_images"]); err != nil || c.Images <= 0 {
		return nil, fmt.Errorf("activation_images %q: want a positive count", meta["activation_images"])
	}
	ps, hasP := meta["activation_percentile"]
	switch {
	case method == Percentile:
		if c.Percentile, err = strconv.ParseFloat(ps, 64); err != nil || !(c.Percentile > 0 && c.Percentile <= 100) {
			return nil, fmt.Errorf("activation_percentile %q: want a number in (0, 100]", ps)
		}
	case hasP:
		return nil, fmt.Errorf("activation_percentile with method %s", method)
	}
	return c, nil
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
