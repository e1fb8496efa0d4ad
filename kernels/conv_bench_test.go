package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// convBenchShapes are the convolutions of the two models at batch 32:
// Sabour's conv1 and primary capsules (28×28 MNIST), and the deep model's
// backbone on 40×40 inputs (n·d = 128).
var convBenchShapes = []struct {
	name string
	s    ConvShape
}{
	{"sabour-conv1", ConvShape{Batch: 32, InC: 1, InH: 28, InW: 28, OutC: 256, KH: 9, KW: 9, StrideH: 1, StrideW: 1, Groups: 1}},
	{"sabour-prim", ConvShape{Batch: 32, InC: 256, InH: 20, InW: 20, OutC: 256, KH: 9, KW: 9, StrideH: 2, StrideW: 2, Groups: 1}},
	{"deep-c1", ConvShape{Batch: 32, InC: 1, InH: 40, InW: 40, OutC: 32, KH: 7, KW: 7, StrideH: 1, StrideW: 1, Groups: 1}},
	{"deep-c2", ConvShape{Batch: 32, InC: 32, InH: 34, InW: 34, OutC: 64, KH: 3, KW: 3, StrideH: 1, StrideW: 1, Groups: 1}},
	{"deep-c3", ConvShape{Batch: 32, InC: 64, InH: 32, InW: 32, OutC: 64, KH: 3, KW: 3, StrideH: 2, StrideW: 2, Groups: 1}},
	{"deep-c4", ConvShape{Batch: 32, InC: 64, InH: 15, InW: 15, OutC: 128, KH: 3, KW: 3, StrideH: 2, StrideW: 2, Groups: 1}},
	{"deep-dw", ConvShape{Batch: 32, InC: 128, InH: 7, InW: 7, OutC: 128, KH: 7, KW: 7, StrideH: 1, StrideW: 1, Groups: 128}},
}

// benchConv runs one pass (0 forward, 1 backward data, 2 backward filter)
// of every benchmark shape on every implementation. The reference GEMM is
// skipped with -short (a primary-capsules pass takes seconds on it).
func benchConv(b *testing.B, pass int) {
	for _, bs := range convBenchShapes {
		s := bs.s
		rng := rand.New(rand.NewPCG(1, 1))
		x, w, bias := convRand(rng, s.XLen(), 0), convRand(rng, s.WLen(), 0), convRand(rng, s.OutC, 0)
		y := convRand(rng, s.YLen(), 0)
		dx, dw, db := make([]float32, s.XLen()), make([]float32, s.WLen()), make([]float32, s.OutC)
		work := make([]float32, s.WorkSize())
		b.Run(bs.name, func(b *testing.B) {
			forEachImpl(b, func(b *testing.B, impl string) {
				if impl == "ref" && testing.Short() && !s.convDirect() {
					b.Skip("reference GEMM skipped with -short")
				}
				run := func(b *testing.B) {
					b.ReportAllocs()
					var err error
					for b.Loop() {
						switch pass {
						case 0:
							err = ConvForward(s, y, x, w, bias, work)
						case 1:
							err = ConvBackwardData(s, dx, y, w, work)
						default:
							err = ConvBackwardFilter(s, dw, db, x, y, work)
						}
					}
					if err != nil {
						b.Fatal(err)
					}
					b.ReportMetric(s.FLOPs()*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				}
				if s.convDirect() || convDriver() == nil {
					run(b)
					return
				}
				// The GEMM paths side by side in one run: the default (the
				// direct path where it applies, conv_direct.go; else the
				// implicit GEMM, or im2col for the backward passes of
				// stride 1, see implicitBackward), the implicit GEMM where
				// the direct path is the default, and the im2col path.
				b.Run("path=default", run)
				// The implicit GEMM where the direct path runs by default.
				if f, mr, nr := convDirectKernel(); f != nil {
					_, fok := s.directForwardGeom(mr, nr)
					_, dok := s.directDataGeom(mr, nr)
					if (pass == 0 && fok) || (pass == 1 && dok) || (pass == 2 && s.directFilter()) {
						b.Run("path=implicit", func(b *testing.B) {
							defer func() { convDirectOn = true }()
							convDirectOn = false
							run(b)
						})
					}
				}
				// Winograd's F(2×2, 5×5) (conv_winograd.go) where it
				// pays: ConvForwardTrain, and ConvBackwardTrain's data or
				// filter gradient alone after it (the filter gradient's
				// flag set again before each call: it overwrites only the
				// saved weights, which it does not read).
				save, wwork := make([]float32, s.WinogradSaveSize()), make([]float32, s.WinogradWorkSize())
				if s.winoTake(save, wwork) {
					b.Run("path=winograd", func(b *testing.B) {
						b.ReportAllocs()
						if err := ConvForwardTrain(s, y, x, w, bias, save, wwork, false); err != nil {
							b.Fatal(err)
						}
						var err error
						for b.Loop() {
							switch pass {
							case 0:
								err = ConvForwardTrain(s, y, x, w, bias, save, wwork, false)
							case 1:
								err = ConvBackwardTrain(s, nil, nil, dx, x, y, w, nil, save, wwork)
							default:
								save[len(save)-1] = winoSavedAll
								err = ConvBackwardTrain(s, dw, db, nil, x, y, nil, nil, save, wwork)
							}
						}
						if err != nil {
							b.Fatal(err)
						}
						b.ReportMetric(s.FLOPs()*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
					})
				}
				b.Run("path=im2col", func(b *testing.B) {
					defer func() { convImplicit = true }()
					convImplicit = false
					run(b)
				})
			})
		})
	}
}

func BenchmarkConvForward(b *testing.B)        { benchConv(b, 0) }
func BenchmarkConvBackwardData(b *testing.B)   { benchConv(b, 1) }
func BenchmarkConvBackwardFilter(b *testing.B) { benchConv(b, 2) }

// BenchmarkConvForwardPacked runs the forward of every benchmark shape
// but the depthwise one at batch 1 (the latency case packed weights are
// for) and 32, on every implementation, with the weights packed once
// (PackConv, ConvForwardPacked) beside the same forward packing them on
// every call (ConvForward): the difference is the packing's cost.
func BenchmarkConvForwardPacked(b *testing.B) {
	for _, bs := range convBenchShapes {
		if bs.s.convDirect() {
			continue // depthwise: nothing to pack
		}
		for _, batch := range []int{1, 32} {
			s := bs.s
			s.Batch = batch
			rng := rand.New(rand.NewPCG(1, 1))
			x, w, bias := convRand(rng, s.XLen(), 0), convRand(rng, s.WLen(), 0), convRand(rng, s.OutC, 0)
			y := make([]float32, s.YLen())
			work := make([]float32, s.WorkSize())
			buf := make([]float32, s.PackedSize())
			b.Run(fmt.Sprintf("%s/batch=%d", bs.name, batch), func(b *testing.B) {
				forEachImpl(b, func(b *testing.B, impl string) {
					if impl == "ref" && testing.Short() {
						b.Skip("reference GEMM skipped with -short")
					}
					p, err := PackConv(s, buf, w)
					if err != nil {
						b.Fatal(err)
					}
					for _, packed := range []bool{false, true} {
						b.Run(fmt.Sprintf("packed=%v", packed), func(b *testing.B) {
							b.ReportAllocs()
							var err error
							for b.Loop() {
								if packed {
									err = ConvForwardPacked(s, y, x, p, bias, work)
								} else {
									err = ConvForward(s, y, x, w, bias, work)
								}
							}
							if err != nil {
								b.Fatal(err)
							}
							b.ReportMetric(s.FLOPs()*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
						})
					}
				})
			})
		}
	}
}
