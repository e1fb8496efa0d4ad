package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func BenchmarkConvTune(b *testing.B) {
	prev := Impl()
	defer func() { _ = Use(prev) }()
	defer func(c, f int) { convTargetCols, convMaxColFloats = c, f }(convTargetCols, convMaxColFloats)
	for _, bs := range convBenchShapes[1:2] {
		s := bs.s
		rng := rand.New(rand.NewPCG(1, 1))
		x, w, bias := convRand(rng, s.XLen(), 0), convRand(rng, s.WLen(), 0), convRand(rng, s.OutC, 0)
		y := convRand(rng, s.YLen(), 0)
		for _, tc := range [][2]int{{1, 1 << 30}, {1024, 1 << 30}, {1024, 81 * 576 * 64}, {1024, 81 * 576 * 22}, {1024, 81 * 576 * 8}, {2048, 81 * 1152 * 32}} {
			convTargetCols, convMaxColFloats = tc[0], tc[1]
			nb, cs := s.convPlan()
			work := make([]float32, s.WorkSize())
			for _, impl := range []string{"avx512"} {
				b.Run(fmt.Sprintf("%s/nb=%d/cs=%d/impl=%s", bs.name, nb, cs, impl), func(b *testing.B) {
					_ = Use(impl)
					for b.Loop() {
						_ = ConvForward(s, y, x, w, bias, work)
					}
					b.ReportMetric(s.FLOPs()*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

func BenchmarkConvIm2col(b *testing.B) {
	for _, bs := range convBenchShapes[:5] {
		s := bs.s
		nb, cs := s.convPlan()
		cg := s.InC / s.Groups
		_ = cs
		rng := rand.New(rand.NewPCG(1, 1))
		x := convRand(rng, s.XLen(), 0)
		col := make([]float32, cg*s.KH*s.KW*nb*s.OutH()*s.OutW())
		b.Run(bs.name, func(b *testing.B) {
			for b.Loop() {
				convIm2col(s, x, 0, nb, 0, 0, cg, col)
			}
			b.ReportMetric(float64(len(col))*4*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}

func BenchmarkConvIm2colSlab(b *testing.B) {
	s := convBenchShapes[1].s
	nb := 16
	rng := rand.New(rand.NewPCG(1, 1))
	x := convRand(rng, s.XLen(), 0)
	for _, cs := range []int{256, 64, 22, 8, 2} {
		col := make([]float32, cs*s.KH*s.KW*nb*s.OutH()*s.OutW())
		b.Run(fmt.Sprintf("cs=%d", cs), func(b *testing.B) {
			for b.Loop() {
				for c0 := 0; c0 < 256; c0 += cs {
					convIm2col(s, x, 0, nb, 0, c0, min(cs, 256-c0), col)
				}
			}
			b.ReportMetric(float64(256*81*576)*4*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
		})
	}
}
