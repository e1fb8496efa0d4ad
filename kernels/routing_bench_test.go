package kernels

import (
	"slices"
	"testing"
	"time"
)

// routingFlops counts the multiply-adds over the votes as 2 flops each
// (softmax and squash are lower order): per iteration the forward has s
// (D·NOut·NIn) and, except in the last, the agreement (as many); the
// backward has the gradient of s (its ger and gemvT, 2·D·NOut·NIn) and,
// except in the last, that of the agreement (2·D·NOut·NIn).
func routingFlops(sh RoutingShape, backward bool) float64 {
	r := float64(sh.iters())
	per := 2 * float64(sh.Batch) * float64(sh.D*sh.NOut*sh.NIn)
	if backward {
		return per * (2*r + 2*(r-1))
	}
	return per * (2*r - 1)
}

func BenchmarkRoutingForward(b *testing.B) {
	capsBenchEach(b, func(b *testing.B, sh RoutingShape, dIn int) {
		d := newCapsBenchData(sh, dIn)
		b.ReportAllocs()
		for b.Loop() {
			if err := RoutingForward(sh, d.v, d.c, d.uhat, d.prior, d.wk); err != nil {
				b.Fatal(err)
			}
		}
		capsReport(b, routingFlops(sh, false))
	})
}

func BenchmarkRoutingBackward(b *testing.B) {
	capsBenchEach(b, func(b *testing.B, sh RoutingShape, dIn int) {
		d := newCapsBenchData(sh, dIn)
		if err := RoutingForward(sh, d.v, d.c, d.uhat, d.prior, d.wk); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if err := RoutingBackward(sh, d.duhat, d.dprior, d.dv, d.uhat, d.prior, d.wk); err != nil {
				b.Fatal(err)
			}
		}
		capsReport(b, routingFlops(sh, true))
	})
}

// BenchmarkRoutingSpeedup measures the target for self-attention
// routing: forward + backward of the routing of the deep model's 16→16
// layer (batch 128, D 8) under every routing kind against routing by
// agreement with r = 10, in one run. The kinds' calls alternate, so that
// the load of a shared machine weighs on all alike; it reports each kind's
// median µs per call and its speed-up over RBA ("KIND-vs-rba", > 1:
// faster). The votes, the same for every kind, are not included
// (BenchmarkCapsLayer times the whole layer).
func BenchmarkRoutingSpeedup(b *testing.B) {
	base := RoutingShape{Batch: 128, NIn: 16, NOut: 16, D: 8, Iters: 10, Squash: SquashMazzia}
	data := make([]*capsBenchData, NumRoutingKinds)
	shapes := make([]RoutingShape, NumRoutingKinds)
	times := make([][]float64, NumRoutingKinds)
	for k := range NumRoutingKinds {
		shapes[k] = base
		shapes[k].Kind = k
		data[k] = newCapsBenchData(shapes[k], 8)
	}
	run := func(k RoutingKind) {
		sh, d := shapes[k], data[k]
		start := time.Now()
		if err := RoutingForward(sh, d.v, d.c, d.uhat, d.prior, d.wk); err != nil {
			b.Fatal(err)
		}
		if err := RoutingBackward(sh, d.duhat, d.dprior, d.dv, d.uhat, d.prior, d.wk); err != nil {
			b.Fatal(err)
		}
		times[k] = append(times[k], time.Since(start).Seconds())
	}
	for k := range NumRoutingKinds {
		run(k) // warm-up
		times[k] = times[k][:0]
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for k := range NumRoutingKinds {
			run(k)
		}
	}
	b.StopTimer()
	rba := capsMedian(times[RoutingRBA])
	for k := range NumRoutingKinds {
		m := capsMedian(times[k])
		b.ReportMetric(m*1e6, k.String()+"-µs")
		if k != RoutingRBA {
			b.ReportMetric(rba/m, k.String()+"-vs-rba")
		}
	}
}

// capsMedian returns the median of v (v is reordered).
func capsMedian(v []float64) float64 {
	slices.Sort(v)
	return v[len(v)/2]
}
