package kernels

import (
	"math"
	"testing"
)

// expULPDiff is the distance in units in the last place between two
// non-negative finite float32 (exp results).
func expULPDiff(a, b float32) int64 {
	ia, ib := int64(math.Float32bits(a)), int64(math.Float32bits(b))
	if ia > ib {
		return ia - ib
	}
	return ib - ia
}

// expWant is the correctly rounded exp of the clamped argument (expRef).
func expWant(v float32) float32 {
	y := []float32{0}
	expRef([]float32{v}, y)
	return y[0]
}

// TestExpAccuracy checks the exp primitive of every implementation against
// float32(math.Exp) of the clamped argument, at most 2 ulp over a dense
// sweep of [-110, 90] (subnormal results included: their last scaling step
// rounds once), at special values, and that every length from 0 to 70 at
// offsets 0..3 writes exactly len(x) values (tails of every ISA).
func TestExpAccuracy(t *testing.T) {
	const lo, hi, steps = -110.0, 90.0, 200003 // odd step count: irregular grid
	x := make([]float32, 0, steps+64)
	for i := 0; i < steps; i++ {
		x = append(x, float32(lo+(hi-lo)*float64(i)/float64(steps-1)))
	}
	// Near 0, the overflow and underflow boundaries, the subnormal range.
	x = append(x, 0, float32(math.Copysign(0, -1)), 1e-8, -1e-8, 1e-3, -1e-3, 0.34657359, -0.34657359,
		88.72283, 88.7228394, 88.0, -87.33654, -87.5, -88, -90, -95, -100, -103.0, -103.97, -103.98,
		-104, -104.5, -105, -106)
	nan := float32(math.NaN())
	special := []float32{nan, float32(math.Inf(-1)), float32(math.Inf(1)), -1e30, 1e30, 89, -200, -103.99, -104.2}
	for _, name := range Available() {
		o := tables[name]
		y := make([]float32, len(x))
		o.exp(x, y)
		var worst int64
		var worstX float32
		for i, v := range x {
			want, got := expWant(v), y[i]
			if math.IsInf(float64(want), 1) {
				if !math.IsInf(float64(got), 1) {
					t.Errorf("%s: exp(%g) = %g, want +Inf", name, v, got)
				}
				continue
			}
			d := expULPDiff(got, want)
			if d > 2 || math.IsNaN(float64(got)) {
				t.Errorf("%s: exp(%g) = %g (%#08x), want %g (%#08x): %d ulp", name, v, got, math.Float32bits(got), want, math.Float32bits(want), d)
			}
			if d > worst {
				worst, worstX = d, v
			}
		}
		t.Logf("%s: max error %d ulp at x = %g", name, worst, worstX)

		out := make([]float32, len(special))
		o.exp(special, out)
		if !math.IsNaN(float64(out[0])) {
			t.Errorf("%s: exp(NaN) = %g", name, out[0])
		}
		for _, i := range []int{1, 3, 6, 7, 8} { // exactly 0 below -103.98
			if out[i] != 0 || math.Signbit(float64(out[i])) {
				t.Errorf("%s: exp(%g) = %g, want +0", name, special[i], out[i])
			}
		}
		for _, i := range []int{2, 4, 5} {
			if !math.IsInf(float64(out[i]), 1) {
				t.Errorf("%s: exp(%g) = %g, want +Inf", name, special[i], out[i])
			}
		}
		// Some subnormal results must be nonzero (gradual underflow kept).
		sub := []float32{-88, -95, -100, -103}
		sy := make([]float32, len(sub))
		o.exp(sub, sy)
		for i, v := range sy {
			if v == 0 || v >= 0x1p-126 {
				t.Errorf("%s: exp(%g) = %g, want a nonzero subnormal", name, sub[i], v)
			}
		}

		if name == "avx512" && tables["avx2"] != nil { // one algorithm, one rounding: same bits
			y2 := make([]float32, len(x))
			tables["avx2"].exp(x, y2)
			for i := range x {
				if math.Float32bits(y[i]) != math.Float32bits(y2[i]) {
					t.Errorf("exp(%g): avx512 %g, avx2 %g: not bit-identical", x[i], y[i], y2[i])
					break
				}
			}
		}

		const guard = -12345
		for n := 0; n <= 70; n++ {
			for off := 0; off < 4; off++ {
				xs := make([]float32, off+n)
				ys := make([]float32, off+n+16)
				for i := range xs {
					xs[i] = float32(i%7) - 3.5
				}
				for i := range ys {
					ys[i] = guard
				}
				o.exp(xs[off:], ys[off:off+n])
				for i := range ys {
					in := i >= off && i < off+n
					if !in && ys[i] != guard {
						t.Fatalf("%s: n=%d off=%d: wrote y[%d]", name, n, off, i)
					}
					if in && expULPDiff(ys[i], expWant(xs[i])) > 2 {
						t.Fatalf("%s: n=%d off=%d: y[%d] = %g, want %g", name, n, off, i, ys[i], expWant(xs[i]))
					}
				}
			}
		}
	}
}
