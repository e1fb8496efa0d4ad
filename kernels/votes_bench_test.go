package kernels

import (
	"fmt"
	"math/rand"
	"testing"
)

// capsBenchShapes are the paper's capsule layers: Sabour's digit layer
// (1152 primary capsules of dim 8 → 10 of dim 16, r = 3) at batch 32, and
// the deep model's layers (16 capsules of dim 8 → 16 or → 10, r = 10) at
// batch 128.
var capsBenchShapes = []struct {
	name string
	sh   RoutingShape
	dIn  int
}{
	{"sabour-digit", RoutingShape{Batch: 32, NIn: 1152, NOut: 10, D: 16, Iters: 3, Squash: SquashSabour}, 8},
	{"deep-16x16", RoutingShape{Batch: 128, NIn: 16, NOut: 16, D: 8, Iters: 10, Squash: SquashMazzia}, 8},
	{"deep-16x10", RoutingShape{Batch: 128, NIn: 16, NOut: 10, D: 8, Iters: 10, Squash: SquashMazzia}, 8},
}

// capsBenchEach runs f as the sub-benchmarks shape/impl=name of every
// benchmark shape and available implementation, ref included.
func capsBenchEach(b *testing.B, f func(b *testing.B, sh RoutingShape, dIn int)) {
	for _, s := range capsBenchShapes {
		b.Run(s.name, func(b *testing.B) {
			forEachImpl(b, func(b *testing.B, _ string) { f(b, s.sh, s.dIn) })
		})
	}
}

type capsBenchData struct {
	vs                          VotesShape
	w, u, uhat, dw, du, duhat   []float32
	v, c, prior, dprior, dv, wk []float32
}

func newCapsBenchData(sh RoutingShape, dIn int) *capsBenchData {
	rng := rand.New(rand.NewSource(9))
	vs := VotesShape{Batch: sh.Batch, NIn: sh.NIn, NOut: sh.NOut, DIn: dIn, DOut: sh.D}
	d := &capsBenchData{vs: vs}
	d.w = capsRand(rng, vs.NOut*vs.DOut*vs.DIn*vs.NIn, 0, 0.5)
	d.u = capsRand(rng, vs.Batch*vs.DIn*vs.NIn, 0, 0.5)
	d.uhat = capsRand(rng, vs.Batch*vs.NOut*vs.DOut*vs.NIn, 0, 0.5)
	d.dw = capsBuf(len(d.w), 0)
	d.du = capsBuf(len(d.u), 0)
	d.duhat = capsRand(rng, len(d.uhat), 0, 0.5)
	d.v = capsBuf(sh.Batch*sh.D*sh.NOut, 0)
	d.c = capsBuf(sh.Batch*sh.NOut*sh.NIn, 0)
	d.prior = capsRand(rng, sh.NOut*sh.NIn, 0, 0.5)
	d.dprior = capsBuf(len(d.prior), 0)
	d.dv = capsRand(rng, len(d.v), 0, 0.5)
	d.wk = capsBuf(sh.WorkSize(), 0)
	return d
}

// votesFlops counts the multiply-adds of VotesForward as 2 flops each;
// VotesBackward does twice as many (du and dw).
func votesFlops(vs VotesShape) float64 {
	return 2 * float64(vs.Batch) * float64(vs.NOut*vs.DOut*vs.DIn*vs.NIn)
}

func capsReport(b *testing.B, flops float64) {
	b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func BenchmarkVotesForward(b *testing.B) {
	capsBenchEach(b, func(b *testing.B, sh RoutingShape, dIn int) {
		d := newCapsBenchData(sh, dIn)
		b.ReportAllocs()
		for b.Loop() {
			if err := VotesForward(d.vs, d.uhat, d.w, d.u); err != nil {
				b.Fatal(err)
			}
		}
		capsReport(b, votesFlops(d.vs))
	})
}

func BenchmarkVotesBackward(b *testing.B) {
	capsBenchEach(b, func(b *testing.B, sh RoutingShape, dIn int) {
		d := newCapsBenchData(sh, dIn)
		b.ReportAllocs()
		for b.Loop() {
			if err := VotesBackward(d.vs, d.dw, d.du, d.w, d.u, d.duhat); err != nil {
				b.Fatal(err)
			}
		}
		capsReport(b, 2*votesFlops(d.vs))
	})
}

// BenchmarkVotesGroups sweeps the sample groups of the votes forward
// (votesFwdGroup) and of the du sum (votesBwdGroup) on Sabour's digit layer,
// the only layer large enough for them to matter, on the implementation in
// use: the measurement behind their values on a new CPU.
func BenchmarkVotesGroups(b *testing.B) {
	s := capsBenchShapes[0]
	d := newCapsBenchData(s.sh, s.dIn)
	defer func(f, g int) { votesFwdGroup, votesBwdGroup = f, g }(votesFwdGroup, votesBwdGroup)
	for _, g := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("forward/group=%d", g), func(b *testing.B) {
			votesFwdGroup = g
			for b.Loop() {
				if err := VotesForward(d.vs, d.uhat, d.w, d.u); err != nil {
					b.Fatal(err)
				}
			}
			capsReport(b, votesFlops(d.vs))
		})
		b.Run(fmt.Sprintf("du/group=%d", g), func(b *testing.B) {
			votesBwdGroup = g
			for b.Loop() {
				if err := VotesBackward(d.vs, nil, d.du, d.w, d.u, d.duhat); err != nil {
					b.Fatal(err)
				}
			}
			capsReport(b, votesFlops(d.vs))
		})
	}
}
