//go:build arm64 && !noasm

package kernels

import (
	"math"
	"testing"

	"github.com/capstan-ml/capstan/asm"
)

// ulpDiff returns the distance in units in the last place between two
// finite float32 of the same sign (or zero).
func ulpDiff(a, b float32) int64 {
	ia, ib := int64(math.Float32bits(a)), int64(math.Float32bits(b))
	if ia > ib {
		return ia - ib
	}
	return ib - ia
}

// TestExpNEONAccuracy sweeps ExpNEON over [-110, 90] against the correctly
// rounded float32(math.Exp) and requires at most 2 ulp everywhere, subnormal
// results included (their last scaling step rounds once, so the error stays
// within a couple of subnormal ulps). The ops tests compare exp-based
// primitives with a 16-ulp relative slack, which would not notice a wrong
// polynomial coefficient of a few ulp: this test does.
func TestExpNEONAccuracy(t *testing.T) {
	const lo, hi, steps = -110.0, 90.0, 200003 // odd step count: irregular grid
	x := make([]float32, steps)
	for i := range x {
		x[i] = float32(lo + (hi-lo)*float64(i)/float64(steps-1))
	}
	// Exact boundaries and small arguments near 0.
	x = append(x, 0, float32(math.Copysign(0, -1)), 1e-8, -1e-8, 1e-3, -1e-3,
		88.72283, 88.7228394, -87.33654, -88, -103.97, -104, -105, -106)
	y := make([]float32, len(x))
	asm.ExpNEON(x, y)
	var worst int64
	var worstX float32
	for i, v := range x {
		want := float32(math.Exp(float64(v)))
		got := y[i]
		if math.IsInf(float64(want), 1) {
			if v < 88.72 || !(math.IsInf(float64(got), 1) || got > 3.4e38) {
				t.Fatalf("exp(%g) = %g, want +Inf", v, got)
			}
			continue
		}
		d := ulpDiff(got, want)
		if d > 2 {
			t.Errorf("exp(%g) = %g (%#08x), want %g (%#08x): %d ulp", v, got, math.Float32bits(got), want, math.Float32bits(want), d)
		}
		if d > worst {
			worst, worstX = d, v
		}
	}
	t.Logf("max error %d ulp at x = %g", worst, worstX)
	if y[len(x)-14] != 1 || y[len(x)-13] != 1 {
		t.Errorf("exp(±0) = %g, %g, want 1", y[len(x)-14], y[len(x)-13])
	}
}

// TestExpNEONSpecial checks NaN, ±Inf, huge arguments, and that every
// length from 0 to 40 at offsets 0..3 writes exactly len(x) values.
func TestExpNEONSpecial(t *testing.T) {
	nan := float32(math.NaN())
	in := []float32{nan, float32(math.Inf(-1)), float32(math.Inf(1)), -1e30, 1e30, 89, -200}
	out := make([]float32, len(in))
	asm.ExpNEON(in, out)
	if !math.IsNaN(float64(out[0])) {
		t.Errorf("exp(NaN) = %g", out[0])
	}
	if out[1] != 0 || out[3] != 0 || out[6] != 0 {
		t.Errorf("exp(-Inf), exp(-1e30), exp(-200) = %g, %g, %g, want 0", out[1], out[3], out[6])
	}
	for _, i := range []int{2, 4, 5} {
		if !math.IsInf(float64(out[i]), 1) {
			t.Errorf("exp(%g) = %g, want +Inf", in[i], out[i])
		}
	}
	const guard = -12345
	for n := 0; n <= 40; n++ {
		for off := 0; off < 4; off++ {
			x := make([]float32, off+n)
			y := make([]float32, off+n+8)
			for i := range x {
				x[i] = float32(i%7) - 3.5
			}
			for i := range y {
				y[i] = guard
			}
			asm.ExpNEON(x[off:], y[off:])
			for i := 0; i < len(y); i++ {
				in := i >= off && i < off+n
				if !in && y[i] != guard {
					t.Fatalf("n=%d off=%d: wrote y[%d]", n, off, i)
				}
				if in {
					want := float32(math.Exp(float64(x[i])))
					if ulpDiff(y[i], want) > 2 {
						t.Fatalf("n=%d off=%d: y[%d] = %g, want %g", n, off, i, y[i], want)
					}
				}
			}
		}
	}
}
