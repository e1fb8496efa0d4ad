package kernels

import (
	"math/rand/v2"
	"testing"
)

// i8BenchShapes are int8 products of the deep model: a 3×3 convolution of
// 64 to 128 channels on a 5×5 map at batch 128 after im2col (m = 128·25
// output positions, n = 128 output channels, k = 64·9), and a decoder
// layer 512 → 1024 at batch 128.
var i8BenchShapes = []struct {
	name    string
	m, n, k int
}{
	{"conv3x3/m=3200,n=128,k=576", 128 * 25, 128, 64 * 9},
	{"fc/m=128,n=1024,k=512", 128, 1024, 512},
}

// BenchmarkGemmI8 runs GemmI8Packed of every implementation, the plain
// reference loop (gemmI8Ref) and, for comparison, the float32 Sgemm of
// the same shape (C = A·Bᵀ, B stored n×k) of the default implementation.
// GOPS counts 2·m·n·k operations (a multiply and an add per product).
func BenchmarkGemmI8(b *testing.B) {
	for _, s := range i8BenchShapes {
		rng := rand.New(rand.NewPCG(1, 2))
		a := make([]int8, s.m*s.k)
		w := make([]int8, s.n*s.k)
		i8Values(rng, a, "random")
		i8Values(rng, w, "random")
		c := make([]int32, s.m*s.n)
		p, err := PackI8(s.n, s.k, w, s.k)
		if err != nil {
			b.Fatal(err)
		}
		ops := 2 * float64(s.m) * float64(s.n) * float64(s.k)
		report := func(b *testing.B) {
			b.ReportMetric(ops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GOPS")
		}
		b.Run(s.name, func(b *testing.B) {
			forEachImpl(b, func(b *testing.B, impl string) {
				b.ReportAllocs()
				for b.Loop() {
					if err := GemmI8Packed(s.m, a, s.k, p, c, s.n); err != nil {
						b.Fatal(err)
					}
				}
				report(b)
			})
			b.Run("loop=ref", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					gemmI8Ref(s.m, s.n, s.k, a, s.k, w, s.k, c, s.n)
				}
				report(b)
			})
			b.Run("sgemm="+Impl(), func(b *testing.B) {
				af := make([]float32, len(a))
				wf := make([]float32, len(w))
				cf := make([]float32, len(c))
				for i, v := range a {
					af[i] = float32(v)
				}
				for i, v := range w {
					wf[i] = float32(v)
				}
				work := make([]float32, SgemmWorkSize(s.m, s.n, s.k))
				b.ReportAllocs()
				for b.Loop() {
					if err := SgemmWork(false, true, s.m, s.n, s.k, 1, af, s.k, wf, s.k, 0, cf, s.n, work); err != nil {
						b.Fatal(err)
					}
				}
				report(b)
			})
		})
	}
}
