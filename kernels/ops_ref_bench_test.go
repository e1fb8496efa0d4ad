package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Benchmarks of the vector primitives on the paper's shapes, one
// sub-benchmark per implementation (…/shape/impl=name) so that benchstat
// can compare them with ref. GFLOP/s counts 2 flops per multiply-add;
// GB/s counts the bytes the call must read and write once (the arrays of
// its signature), not the internal passes.

// benchOp runs f for every available implementation under name/shape.
func benchOp(b *testing.B, shape string, flops, bytes float64, f func(o *ops)) {
	b.Run(shape, func(b *testing.B) {
		forEachImpl(b, func(b *testing.B, impl string) {
			o := tables[impl]
			b.ReportAllocs()
			for b.Loop() {
				f(o)
			}
			sec := b.Elapsed().Seconds() / float64(b.N)
			if flops > 0 {
				b.ReportMetric(flops/sec/1e9, "GFLOP/s")
			}
			if bytes > 0 {
				b.ReportMetric(bytes/sec/1e9, "GB/s")
			}
		})
	})
}

func benchVec(rng *rand.Rand, n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = scale * uni(rng)
	}
	return v
}

// Votes and routing shapes: Sabour's digit layer routes d = 16 rows over
// 1152 input capsules; the deep model has 16 capsules of dimension 8.
var benchMatShapes = [][2]int{{16, 1152}, {8, 16}}

func BenchmarkGemvN(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, sh := range benchMatShapes {
		m, n := sh[0], sh[1]
		a, x, y := benchVec(rng, m*n, 1), benchVec(rng, n, 1), benchVec(rng, m, 1)
		benchOp(b, fmt.Sprintf("m=%d,n=%d", m, n), 2*float64(m*n), 0, func(o *ops) { o.gemvN(m, n, a, n, x, y) })
	}
}

func BenchmarkGemvT(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sh := range benchMatShapes {
		m, n := sh[0], sh[1]
		a, x, y := benchVec(rng, m*n, 1), benchVec(rng, m, 1), benchVec(rng, n, 1)
		benchOp(b, fmt.Sprintf("m=%d,n=%d", m, n), 2*float64(m*n), 0, func(o *ops) { o.gemvT(m, n, a, n, x, y) })
	}
}

func BenchmarkGer(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 3))
	for _, sh := range benchMatShapes {
		m, n := sh[0], sh[1]
		a, x, y := benchVec(rng, m*n, 1), benchVec(rng, m, 1e-3), benchVec(rng, n, 1e-3)
		benchOp(b, fmt.Sprintf("m=%d,n=%d", m, n), 2*float64(m*n), 0, func(o *ops) { o.ger(m, n, x, y, a, n) })
	}
}

func BenchmarkMulAddRows(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 4))
	for _, sh := range [][2]int{{8, 1152}, {8, 16}} {
		k, n := sh[0], sh[1]
		a, x, y := benchVec(rng, k*n, 1), benchVec(rng, k*n, 1), benchVec(rng, n, 1)
		benchOp(b, fmt.Sprintf("k=%d,n=%d", k, n), 2*float64(k*n), 0, func(o *ops) { o.mulAddRows(k, n, a, n, x, n, y) })
	}
}

// BenchmarkMulAddRowsBatch runs the batched primitive on the votes
// forward's shape (one output row of Sabour's digit layer for a group of 4
// samples, their rows 1152·8 floats apart) and on all 32 samples; ref is
// mulAddRowsBatchRef (refOps has no such field).
func BenchmarkMulAddRowsBatch(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 14))
	for _, sh := range [][3]int{{4, 8, 1152}, {32, 8, 1152}, {4, 8, 16}} {
		nb, k, n := sh[0], sh[1], sh[2]
		a, x, y := benchVec(rng, k*n, 1), benchVec(rng, nb*k*n, 1), benchVec(rng, nb*n, 1)
		for _, set := range []bool{false, true} {
			name := fmt.Sprintf("nb=%d,k=%d,n=%d", nb, k, n)
			if set {
				name += ",set"
			}
			benchOp(b, name, 2*float64(nb*k*n), 0, func(o *ops) {
				f, ref := o.mulAddRowsBatch, mulAddRowsBatchRef
				if set {
					f, ref = o.mulAddRowsBatchSet, mulAddRowsBatchSetRef
				}
				if f == nil {
					f = ref
				}
				f(nb, k, n, a, n, x, n, k*n, y, n)
			})
		}
	}
}

// Routing couplings: 10 digit capsules × 1152 inputs (Sabour), 16 × 16 (deep).
var benchSoftmaxShapes = [][2]int{{10, 1152}, {16, 16}}

func BenchmarkSoftmaxCols(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 5))
	for _, sh := range benchSoftmaxShapes {
		rows, n := sh[0], sh[1]
		l, c := benchVec(rng, rows*n, 5), make([]float32, rows*n)
		benchOp(b, fmt.Sprintf("rows=%d,n=%d", rows, n), 0, 8*float64(rows*n), func(o *ops) { o.softmaxCols(rows, n, l, c) })
	}
}

func BenchmarkSoftmaxColsGrad(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 6))
	for _, sh := range benchSoftmaxShapes {
		rows, n := sh[0], sh[1]
		c, dc, dl := make([]float32, rows*n), benchVec(rng, rows*n, 1), make([]float32, rows*n)
		softmaxColsRef(rows, n, benchVec(rng, rows*n, 5), c)
		benchOp(b, fmt.Sprintf("rows=%d,n=%d", rows, n), 0, 12*float64(rows*n), func(o *ops) { o.softmaxColsGrad(rows, n, c, dc, dl) })
	}
}

// Squash: 1152 primary capsules of dimension 8; 10 output capsules of 16.
var benchSquashShapes = [][2]int{{8, 1152}, {16, 10}}

func BenchmarkSquash(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 7))
	for _, kind := range []Squash{SquashMazzia, SquashSabour} {
		for _, sh := range benchSquashShapes {
			d, n := sh[0], sh[1]
			s, v := benchVec(rng, d*n, 1), make([]float32, d*n)
			benchOp(b, fmt.Sprintf("%v/d=%d,n=%d", kind, d, n), 0, 8*float64(d*n), func(o *ops) { o.squash(kind, d, n, s, v) })
		}
	}
}

func BenchmarkSquashGrad(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 8))
	for _, kind := range []Squash{SquashMazzia, SquashSabour} {
		for _, sh := range benchSquashShapes {
			d, n := sh[0], sh[1]
			s, dv, ds := benchVec(rng, d*n, 1), benchVec(rng, d*n, 1), make([]float32, d*n)
			benchOp(b, fmt.Sprintf("%v/d=%d,n=%d", kind, d, n), 0, 12*float64(d*n), func(o *ops) { o.squashGrad(kind, d, n, s, dv, ds) })
		}
	}
}

// Grouped shapes (groups, rows per group, columns): one routing step of the
// deep model (16 output capsules of dimension 8 over 16 input capsules) and
// of Sabour's digit layer (10 of dimension 16 over 1152). The strided
// operand is component-major, as routing uses it.
var benchGroupShapes = [][3]int{{16, 8, 16}, {10, 16, 1152}}

func BenchmarkGerGroups(b *testing.B) {
	rng := rand.New(rand.NewPCG(2, 1))
	for _, sh := range benchGroupShapes {
		g, d, n := sh[0], sh[1], sh[2]
		a, x, y := benchVec(rng, g*d*n, 1), benchVec(rng, g*d, 1e-3), benchVec(rng, g*n, 1e-3)
		benchOp(b, fmt.Sprintf("g=%d,d=%d,n=%d", g, d, n), 2*float64(g*d*n), 0,
			func(o *ops) { o.gerGroups(g, d, n, x, 1, g, y, n, a, n) })
	}
}

func BenchmarkGer2Groups(b *testing.B) {
	rng := rand.New(rand.NewPCG(2, 2))
	for _, sh := range benchGroupShapes {
		g, d, n := sh[0], sh[1], sh[2]
		a := benchVec(rng, g*d*n, 1)
		x, x2 := benchVec(rng, g*d, 1e-3), benchVec(rng, g*d, 1e-3)
		y, y2 := benchVec(rng, g*n, 1e-3), benchVec(rng, g*n, 1e-3)
		benchOp(b, fmt.Sprintf("g=%d,d=%d,n=%d", g, d, n), 4*float64(g*d*n), 0,
			func(o *ops) { o.ger2Groups(g, d, n, x, x2, 1, g, y, y2, n, a, n) })
	}
}

func BenchmarkGemvTGroups(b *testing.B) {
	rng := rand.New(rand.NewPCG(2, 3))
	for _, sh := range benchGroupShapes {
		g, d, n := sh[0], sh[1], sh[2]
		a, x, y := benchVec(rng, g*d*n, 1), benchVec(rng, g*d, 1), benchVec(rng, g*n, 1)
		benchOp(b, fmt.Sprintf("g=%d,d=%d,n=%d", g, d, n), 2*float64(g*d*n), 0,
			func(o *ops) { o.gemvTGroups(g, d, n, a, n, x, 1, g, y, n) })
	}
}

func BenchmarkGemvNGroups(b *testing.B) {
	rng := rand.New(rand.NewPCG(2, 4))
	for _, sh := range benchGroupShapes {
		g, d, n := sh[0], sh[1], sh[2]
		a, x, y := benchVec(rng, g*d*n, 1), benchVec(rng, g*n, 1), benchVec(rng, g*d, 1)
		benchOp(b, fmt.Sprintf("g=%d,d=%d,n=%d", g, d, n), 2*float64(g*d*n), 0,
			func(o *ops) { o.gemvNGroups(g, d, n, a, n, x, n, y, 1, g) })
	}
}

// BenchmarkExp: the exp primitive on 11520 values (a softmax of 10 rows of
// 1152 columns), on ordinary arguments in [-10, 10] and on arguments in
// [-104, -88] whose results are subnormal or zero (the slow path of
// hardware that takes a microcode assist on underflow; the amd64 kernels
// build those results with integer arithmetic instead).
func BenchmarkExp(b *testing.B) {
	const n = 11520
	rng := rand.New(rand.NewPCG(1, 9))
	normal, under, y := make([]float32, n), make([]float32, n), make([]float32, n)
	for i := range normal {
		normal[i] = 20*rng.Float32() - 10
		under[i] = -88 - 16*rng.Float32()
	}
	benchOp(b, "range=normal", 0, 8*n, func(o *ops) { o.exp(normal, y) })
	benchOp(b, "range=underflow", 0, 8*n, func(o *ops) { o.exp(under, y) })
}
