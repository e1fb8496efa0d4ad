package quant

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/capstan-ml/capstan/capsnet"
)

// benchNets returns the float32 inference Net of a freshly initialised
// preset and the int8 Net of its quantized model, at batch, with an input.
func benchNets(b *testing.B, preset string, batch int) (*capsnet.Net, *Net, []float32) {
	p := newParams(b, preset, 1)
	m := calibrated(b, p, digitImages(p, 16, 1), PerCapsule)
	fn, err := capsnet.NewInferenceNet(p, batch)
	if err != nil {
		b.Fatal(err)
	}
	qn, err := NewNet(m, batch)
	if err != nil {
		b.Fatal(err)
	}
	return fn, qn, digitImages(p, batch, 2)
}

// BenchmarkInfer times one Forward of the float32 and of the int8
// inference Net (both with the decoder, masked by the prediction) of the
// deep model and Sabour's at batch 1 and 32 on one core, reporting img/s;
// the footprint of the int8 Net is reported in bytes.
func BenchmarkInfer(b *testing.B) {
	for _, preset := range []string{"deep", "sabour"} {
		for _, batch := range []int{1, 32} {
			for _, kind := range []string{"float32", "int8"} {
				b.Run(fmt.Sprintf("model=%s/batch=%d/%s", preset, batch, kind), func(b *testing.B) {
					fn, qn, x := benchNets(b, preset, batch)
					run := func() error { return fn.Forward(x, nil) }
					if kind == "int8" {
						run = func() error { return qn.Forward(x) }
						b.ReportMetric(float64(qn.Footprint().Total()), "footprint-bytes")
					}
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						if err := run(); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(batch*b.N)/b.Elapsed().Seconds(), "img/s")
				})
			}
		}
	}
}

// BenchmarkInt8Speedup measures the int8 Net's throughput against the
// float32 one in one run: Forward passes of the two alternate, so that the
// load of a shared machine weighs on both alike, and the speed-up is the
// ratio of their median times (reported as "speedup"; the target is
// ≥ 2 at batch 1 and 32), for the deep model under routing by agreement
// and under self-attention routing, and Sabour's.
func BenchmarkInt8Speedup(b *testing.B) {
	for _, preset := range []string{"deep", "deep-self-attention", "sabour"} {
		for _, batch := range []int{1, 32} {
			b.Run(fmt.Sprintf("model=%s/batch=%d", preset, batch), func(b *testing.B) {
				fn, qn, x := benchNets(b, preset, batch)
				var tf, tq []float64
				b.ResetTimer()
				for range b.N {
					t0 := time.Now()
					if err := fn.Forward(x, nil); err != nil {
						b.Fatal(err)
					}
					t1 := time.Now()
					if err := qn.Forward(x); err != nil {
						b.Fatal(err)
					}
					tf = append(tf, t1.Sub(t0).Seconds())
					tq = append(tq, time.Since(t1).Seconds())
				}
				mf, mq := median(tf), median(tq)
				b.ReportMetric(mf/mq, "speedup")
				b.ReportMetric(float64(batch)/mf, "float32-img/s")
				b.ReportMetric(float64(batch)/mq, "int8-img/s")
			})
		}
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
