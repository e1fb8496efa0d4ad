package kernels

import (
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// sgemmBenchShape is one GEMM benchmarked by BenchmarkSgemm.
type sgemmBenchShape struct {
	name           string
	transA, transB bool
	m, n, k        int
}

// sgemmBenchOperands are the random operands of one benchmark shape:
// op(A) is m×k and op(B) k×n, stored ar×ac and br×bc (leading dimensions
// ac and bc), C is m×n; flops counts 2·m·n·k.
type sgemmBenchOperands struct {
	ar, ac, br, bc int
	a, b, c        []float32
	flops          float64
}

// operands draws the operands of s from rng.
func (s sgemmBenchShape) operands(rng *rand.Rand) sgemmBenchOperands {
	o := sgemmBenchOperands{ar: s.m, ac: s.k, br: s.k, bc: s.n}
	if s.transA {
		o.ar, o.ac = s.k, s.m
	}
	if s.transB {
		o.br, o.bc = s.n, s.k
	}
	o.a = make([]float32, o.ar*o.ac)
	o.b = make([]float32, o.br*o.bc)
	o.c = make([]float32, s.m*s.n)
	for i := range o.a {
		o.a[i] = rng.Float32()
	}
	for i := range o.b {
		o.b[i] = rng.Float32()
	}
	o.flops = 2 * float64(s.m) * float64(s.n) * float64(s.k)
	return o
}

// sgemmBenchShapes: square sizes, then the GEMMs of the Sabour model after
// im2col (forward and the two backward products of each layer: for
// Y = W·X, dX = Wᵀ·dY and dW = dY·Xᵀ), and the decoder's fully connected
// layers at batch 32 (Y = X·Wᵀ with W stored out×in, dX = dY·W,
// dW = dYᵀ·X).
var sgemmBenchShapes = []sgemmBenchShape{
	{"n=128", false, false, 128, 128, 128},
	{"n=512", false, false, 512, 512, 512},
	{"n=512/TN", true, false, 512, 512, 512},
	{"n=512/NT", false, true, 512, 512, 512},
	// conv1: W 256×81, im2col 81×400 per image.
	{"conv1/fwd", false, false, 256, 400, 81},
	{"conv1/dX", true, false, 81, 400, 256},
	{"conv1/dW", false, true, 256, 81, 400},
	// primary capsules: W 256×20736, im2col 20736×36 per image, or
	// 20736×1152 for a batch of 32.
	{"primcaps/fwd", false, false, 256, 36, 20736},
	{"primcaps/fwd-b32", false, false, 256, 1152, 20736},
	{"primcaps/dX-b32", true, false, 20736, 1152, 256},
	{"primcaps/dW-b32", false, true, 256, 20736, 1152},
	// decoder, batch 32: 160 → 512 → 1024 → 784.
	{"fc1/fwd", false, true, 32, 512, 160},
	{"fc2/fwd", false, true, 32, 1024, 512},
	{"fc3/fwd", false, true, 32, 784, 1024},
	{"fc3/dX", false, false, 32, 1024, 784},
	{"fc3/dW", true, false, 784, 1024, 32},
	{"fc2/dW", true, false, 1024, 512, 32},
}

// BenchmarkSgemm reports GFLOP/s (2·m·n·k per call) for every available
// implementation, gonum's pure-Go blas32 and, on small shapes, the
// reference loops.
func BenchmarkSgemm(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, s := range sgemmBenchShapes {
		op := s.operands(rng)
		ar, ac, br, bc, a, bm, c, flops := op.ar, op.ac, op.br, op.bc, op.a, op.b, op.c, op.flops
		report := func(b *testing.B) {
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		}
		b.Run(s.name, func(b *testing.B) {
			forEachImpl(b, func(b *testing.B, name string) {
				if name == "ref" && flops > 2*256*256*256 {
					b.Skip("reference loops skipped on large shapes")
				}
				// Warm-up call outside the timed loop: it may allocate the
				// packing buffers once.
				if err := Sgemm(s.transA, s.transB, s.m, s.n, s.k, 1, a, ac, bm, bc, 0, c, s.n); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if err := Sgemm(s.transA, s.transB, s.m, s.n, s.k, 1, a, ac, bm, bc, 0, c, s.n); err != nil {
						b.Fatal(err)
					}
				}
				report(b)
			})
			if flops > 2e9 {
				return // gonum takes seconds per call here
			}
			b.Run("impl=gonum", func(b *testing.B) {
				tr := func(t bool) blas.Transpose {
					if t {
						return blas.Trans
					}
					return blas.NoTrans
				}
				ga := blas32.General{Rows: ar, Cols: ac, Stride: ac, Data: a}
				gb := blas32.General{Rows: br, Cols: bc, Stride: bc, Data: bm}
				gc := blas32.General{Rows: s.m, Cols: s.n, Stride: s.n, Data: c}
				b.ReportAllocs()
				for b.Loop() {
					blas32.Gemm(tr(s.transA), tr(s.transB), 1, ga, gb, 0, gc)
				}
				report(b)
			})
		})
	}
}
