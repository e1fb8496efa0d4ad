package kernels

import "testing"

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
