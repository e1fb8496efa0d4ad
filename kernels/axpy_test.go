package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAxpy checks Axpy against its loop on every implementation, for
// lengths around the SIMD widths and the scalar cut-off, unaligned
// offsets, and alpha a power of two (bit for bit) or not (within one
// rounding of the sum: the SIMD kernels fuse the multiply-add).
func TestAxpy(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	forEachImpl(t, func(t *testing.T, impl string) {
		for _, n := range []int{0, 1, 7, 15, 16, 17, 31, 33, 64, 100, 1023, 4099} {
			for _, off := range []int{0, 1, 3} {
				for _, alpha := range []float32{0.5, 0.3, -2} {
					x := convRand(rng, n+off, 0)[off:]
					y := convRand(rng, n+off+2, 0)[off:]
					want := append([]float32(nil), y...)
					for i, v := range x {
						want[i] += alpha * v
					}
					if err := Axpy(alpha, x, y); err != nil {
						t.Fatal(err)
					}
					for i := range y {
						d := math.Abs(float64(y[i] - want[i]))
						// One rounding apart at most: half an ulp of the sum
						// and of alpha·x (|x|, |y| < 1 here, so 2^-24 each).
						tol := 0.0
						if alpha != 0.5 && alpha != -2 && i < n {
							tol = 2 * math.Pow(2, -24) * (1 + math.Abs(float64(alpha)))
						}
						if d > tol {
							t.Fatalf("%s n=%d off=%d alpha=%g: y[%d] = %g, want %g", impl, n, off, alpha, i, y[i], want[i])
						}
					}
				}
			}
		}
		if err := Axpy(1, make([]float32, 3), make([]float32, 2)); err == nil {
			t.Errorf("%s: Axpy with y shorter than x: no error", impl)
		}
	})
}

// BenchmarkAxpy sums a 4 Mi-element gradient into another (the trainer's
// replica reduction of Sabour's model is 6.8 M parameters) and reports
// GB/s moved (two reads, one write per element).
func BenchmarkAxpy(b *testing.B) {
	const n = 4 << 20
	x, y := make([]float32, n), make([]float32, n)
	forEachImpl(b, func(b *testing.B, impl string) {
		b.ReportAllocs()
		for b.Loop() {
			if err := Axpy(0.5, x, y); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(12*n*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
	})
}
