//go:build arm64 && !noasm

package asm

import (
	"fmt"
	"math"
	"testing"
)

// TestSgemmKernelsNEON checks every generated tile against the Go loop of
// its doc comment, computed in float64 (the operands are small multiples of
// 1/4, so the float32 products are exact and 1e-4 relative covers the
// rounding of the sums and of alpha and beta),
// that beta = 0 does not read c (NaN there stays unread), and that nothing
// outside the tile is written.
func TestSgemmKernelsNEON(t *testing.T) {
	tiles := []struct {
		mr, nr int
		f      func(kc int, a, b, c []float32, ldc int, alpha, beta float32)
	}{
		{8, 12, SgemmKernel8x12NEON},
		{8, 8, SgemmKernel8x8NEON},
		{12, 8, SgemmKernel12x8NEON},
	}
	const guard = -777
	for _, tl := range tiles {
		for _, kc := range []int{0, 1, 2, 7, 33} {
			for _, beta := range []float32{0, 1, -0.5} {
				name := fmt.Sprintf("%dx%d kc=%d beta=%g", tl.mr, tl.nr, kc, beta)
				ldc := tl.nr + 3
				a, b := mk(kc*tl.mr), mk(kc*tl.nr)
				for i := range a {
					a[i] = float32((i*7)%11) - 5
				}
				for i := range b {
					b[i] = float32((i*5)%13)/4 - 1.5
				}
				c := mk((tl.mr-1)*ldc + tl.nr + 5)
				for i := range c {
					c[i] = guard
				}
				c0 := append([]float32(nil), c...)
				for i := 0; i < tl.mr; i++ {
					for j := 0; j < tl.nr; j++ {
						c[i*ldc+j] = float32(i - j)
						if beta == 0 {
							c[i*ldc+j] = float32(math.NaN())
						}
						c0[i*ldc+j] = c[i*ldc+j]
					}
				}
				const alpha = 1.5
				tl.f(kc, a, b, c, ldc, alpha, beta)
				for idx := range c {
					i, j := idx/ldc, idx%ldc
					if j >= tl.nr || i >= tl.mr {
						if c[idx] != guard {
							t.Fatalf("%s: wrote c[%d] outside the tile", name, idx)
						}
						continue
					}
					var s float64
					for p := 0; p < kc; p++ {
						s += float64(a[p*tl.mr+i]) * float64(b[p*tl.nr+j])
					}
					want := alpha * s
					if beta != 0 {
						want += float64(beta) * float64(c0[idx])
					}
					if math.Abs(float64(c[idx])-want) > 1e-4*(1+math.Abs(want)) {
						t.Fatalf("%s: c[%d,%d] = %g, want %g", name, i, j, c[idx], want)
					}
				}
			}
		}
	}
}

// BenchmarkSgemmKernelsNEON times every generated tile on the blocking of
// package kernels (kc = 256, packed panels in L1), for tile sweeps on real
// hardware (under qemu the figures mean nothing):
//
//	go test -run X -bench SgemmKernelsNEON ./asm/
func BenchmarkSgemmKernelsNEON(b *testing.B) {
	const kc = 256
	for _, tl := range []struct {
		mr, nr int
		f      func(kc int, a, b, c []float32, ldc int, alpha, beta float32)
	}{
		{8, 12, SgemmKernel8x12NEON},
		{8, 8, SgemmKernel8x8NEON},
		{12, 8, SgemmKernel12x8NEON},
	} {
		b.Run(fmt.Sprintf("%dx%d", tl.mr, tl.nr), func(b *testing.B) {
			a, bp, c := mk(kc*tl.mr), mk(kc*tl.nr), mk(tl.mr*tl.nr)
			for i := range a {
				a[i] = 1
			}
			for i := range bp {
				bp[i] = 0.5
			}
			for b.Loop() {
				tl.f(kc, a, bp, c, tl.nr, 1, 1)
			}
			flops := 2 * float64(kc*tl.mr*tl.nr) * float64(b.N)
			b.ReportMetric(flops/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
