package quant

import (
	"fmt"
	"math"
)

// accRange is the magnitude bound of the int32 sums the int8 kernels form
// (GemmI8Packed, DepthwiseI8, the votes GEMM): |acc| ≤ 2³¹. Requant and
// Dequant compute float32(acc)·mul + add with mul = input scale × weight
// scale / next input scale (requantConsts), DequantVotes float32(acc)·mul
// with mul = input scale × weight scale (packVotes).
const accRange = 1 << 31

// isFinite32 reports whether v is neither NaN nor ±Inf.
func isFinite32(v float32) bool {
	return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0)
}

// checkActScale checks an activation scale a: finite, > 0, a·127 (the
// largest activation it stands for) finite and 1/a (the quantization's
// multiplier, QuantizeNHWC, QuantizeCaps, QuantizeI8) finite.
func checkActScale(a float32) error {
	switch {
	case !isFinite32(a) || !(a > 0):
		return fmt.Errorf("is %v, an activation scale must be finite and > 0", a)
	case !isFinite32(float32(a * 127)):
		return fmt.Errorf("is %v: scale·127 overflows float32", a)
	case !isFinite32(float32(1 / a)):
		return fmt.Errorf("is %v: 1/scale overflows float32", a)
	}
	return nil
}

// checkWeightScales checks a quantized weight's scales: each finite,
// > 0, s·127 (the largest weight it stands for, Dequantize) finite and,
// when the input's activation scale act is known (act > 0), s·act·2³¹
// (the kernels' largest dequantized sum, accRange) finite.
func checkWeightScales(scales []float32, act float32) error {
	for i, s := range scales {
		switch {
		case !isFinite32(s):
			return fmt.Errorf("element %d is %v", i, s)
		case !(s > 0):
			return fmt.Errorf("element %d is %v, a scale must be > 0", i, s)
		case !isFinite32(float32(s * 127)):
			return fmt.Errorf("element %d is %v: scale·127 overflows float32", i, s)
		case act > 0 && !isFinite32(float32(float32(s*act)*accRange)):
			return fmt.Errorf("element %d is %v: scale × activation scale %v × 2^31 (the int32 sums' range) overflows float32", i, s, act)
		}
	}
	return nil
}

// checkScales checks every scale of the model as Load does (checkActScale,
// checkWeightScales), naming the tensor.
func (m *Model) checkScales() error {
	act := map[string]float32{}
	if m.Calibration != nil {
		for _, s := range m.Calibration.Scales {
			if err := checkActScale(s.Scale); err != nil {
				return fmt.Errorf("tensor %q %w", s.Name+actSuffix, err)
			}
			act[s.Name] = s.Scale
		}
	}
	for i := range m.Tensors {
		t := &m.Tensors[i]
		if t.Q == nil {
			continue
		}
		if err := checkWeightScales(t.Scales, act[t.Name]); err != nil {
			return fmt.Errorf("tensor %q %w", t.Name+scaleSuffix, err)
		}
	}
	return nil
}

// checkRequant checks a layer's requantization constants (requantConsts,
// or packVotes' multipliers with add nil): |mul|·2³¹ + |add| finite, so
// that no sum the kernels form dequantizes to ±Inf.
func checkRequant(mul, add []float32) error {
	for c, m := range mul {
		y := float32(float32(m) * accRange)
		if add != nil {
			y = float32(y + float32(math.Abs(float64(add[c]))))
		}
		if !isFinite32(y) {
			a := float32(0)
			if add != nil {
				a = add[c]
			}
			return fmt.Errorf("channel %d: multiplier %v × 2^31 + bias %v overflows float32 (the next layer's activation scale is too small for these scales)", c, m, a)
		}
	}
	return nil
}
