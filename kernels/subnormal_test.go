package kernels

import (
	"fmt"
	"runtime"
	"testing"
)

// subnormalGemm returns the operands of an m×n×k product whose every
// partial product is subnormal (1e-20·1e-20 = 1e-40) and whose sums stay
// subnormal (k·1e-40 < 1.2e-38 for k < 100).
func subnormalGemm(m, n, k int) (a, b, c []float32) {
	a, b, c = make([]float32, m*k), make([]float32, k*n), make([]float32, m*n)
	for i := range a {
		a[i] = 1e-20
	}
	for i := range b {
		b[i] = 1e-20
	}
	return a, b, c
}

// TestFlushSubnormals runs a GEMM whose results are all subnormal on every
// implementation, with subnormals flushed and after restoring: flushed, the
// results are 0 where the build flushes (amd64 with assembly) and
// unchanged elsewhere; restored, they are the subnormal sums again.
func TestFlushSubnormals(t *testing.T) {
	const m, n, k = 19, 37, 64
	forEachImpl(t, func(t *testing.T, impl string) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		a, b, c := subnormalGemm(m, n, k)
		restore := FlushSubnormals()
		flushed := subnormalsFlushed()
		err := Sgemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n)
		restore()
		if err != nil {
			t.Fatal(err)
		}
		if flushed == subnormalsFlushed() && flushed {
			t.Fatalf("%s: restore left subnormals flushed", impl)
		}
		want := float32(0)
		if !flushed {
			want = k * 1e-40
		}
		for i, v := range c {
			if !close32(v, want) {
				t.Fatalf("%s: flushed %v: c[%d] = %g, want %g", impl, flushed, i, v, want)
			}
		}
		if err := Sgemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n); err != nil {
			t.Fatal(err)
		}
		for i, v := range c {
			if !close32(v, k*1e-40) {
				t.Fatalf("%s: after restore: c[%d] = %g, want %g", impl, i, v, float32(k*1e-40))
			}
		}
	})
}

// close32 reports whether v is within 1% of want (subnormal sums lose
// precision: 1e-40 has 17 significant bits).
func close32(v, want float32) bool {
	d := v - want
	if d < 0 {
		d = -d
	}
	return d <= want/100
}

// BenchmarkSgemmSubnormal runs a 256×256×64 GEMM whose products are all
// subnormal, with subnormals kept (IEEE) and flushed (FlushSubnormals), on
// every implementation, and reports GFLOP/s: the cost of subnormals on
// this CPU and what flushing them recovers.
func BenchmarkSgemmSubnormal(b *testing.B) {
	const m, n, k = 256, 256, 64
	forEachImpl(b, func(b *testing.B, impl string) {
		for _, flush := range []bool{false, true} {
			b.Run(fmt.Sprintf("flush=%v", flush), func(b *testing.B) {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				if flush {
					defer FlushSubnormals()()
				}
				x, y, c := subnormalGemm(m, n, k)
				b.ReportAllocs()
				for b.Loop() {
					if err := Sgemm(false, false, m, n, k, 1, x, k, y, n, 0, c, n); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(2*m*n*k*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	})
}
