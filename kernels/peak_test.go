package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestFMAPeakLoops checks the FMA throughput loop of every implementation
// against its own shape (w lanes, a accumulators):
//
//   - exact: with x = in[l] = l+1 and y = in[w+l] = w−l, small integers,
//     every partial sum is an integer below 2^24 and so exact, and lane l
//     must be exactly a·iters·x·y. A dropped, doubled or uninitialised
//     accumulator, a lost lane or misplaced operands change it.
//   - random x, y in [−1, 1]: lane l must be within tol of a·iters·x·y
//     computed in float64 (see fmaPeakTol);
//   - iters = 0 writes zeros, nothing past out[w] is written, and a short
//     out or in panics (asm.BoundsError for the SIMD loops, an index error
//     for the Go reference).
func TestFMAPeakLoops(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 1))
	for _, name := range Available() {
		l := tables[name].fmaPeak
		if l.fn == nil || l.w <= 0 || l.a <= 0 {
			t.Fatalf("%s: no FMA loop (w = %d, a = %d)", name, l.w, l.a)
		}
		in := make([]float32, 2*l.w)
		for i := range l.w {
			in[i], in[l.w+i] = float32(i+1), float32(l.w-i)
		}
		for _, iters := range []int{0, 1, 2, 7, 1000} {
			out := fmaPeakOut(l.w)
			l.fn(out, in, iters)
			for i := range l.w {
				if want := float32(l.a * iters * (i + 1) * (l.w - i)); out[i] != want {
					t.Errorf("%s, exact, iters=%d: out[%d] = %g, want %g (%d accumulators)", name, iters, i, out[i], want, l.a)
				}
			}
			if out[l.w] != -1 {
				t.Errorf("%s, iters=%d: out[%d] written", name, iters, l.w)
			}
		}
		for _, iters := range []int{1, 3, 500} {
			for i := range in {
				in[i] = 2*rng.Float32() - 1
			}
			out := fmaPeakOut(l.w)
			l.fn(out, in, iters)
			for i := range l.w {
				p := float64(in[i]) * float64(in[l.w+i])
				want := float64(l.a) * float64(iters) * p
				if d, tol := math.Abs(float64(out[i])-want), fmaPeakTol(l.a, iters, p); !(d <= tol) {
					t.Errorf("%s, random, iters=%d: out[%d] = %g, want %g ± %g", name, iters, i, out[i], want, tol)
				}
			}
		}
		for _, c := range []struct {
			what    string
			out, in []float32
		}{
			{"out", make([]float32, l.w-1), make([]float32, 2*l.w)},
			{"in", make([]float32, l.w), make([]float32, 2*l.w-1)},
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s: short %s: no panic", name, c.what)
					}
				}()
				l.fn(c.out, c.in, 1)
			}()
		}
	}
}

// fmaPeakOut is an output of w values and a sentinel −1 past them.
func fmaPeakOut(w int) []float32 {
	out := make([]float32, w+1)
	for i := range out {
		out[i] = -1
	}
	return out
}

// fmaPeakTol bounds the error of a lane of the FMA loop against the exact
// a·n·p (p = x·y, n = iters), with u = 2^−24 the unit roundoff of float32.
// Each accumulator adds p n times; the i-th addition rounds once (fused:
// p is exact), by at most u·i·|p|, so an accumulator is within
// u·|p|·n(n+1)/2 of n·p (an unfused reference rounds p too: n·u·|p| more).
// The a−1 additions of the final sum each round by at most u·a·n·|p|. In
// all, a·n·|p|·u·(n/2 + a + 1/2) ≤ a·n·|p|·u·(n + a) for n ≥ 1, the
// tolerance: about 7.5e−4 of the result for a = 24, n = 500, still far
// below the 1/a a dropped accumulator would change it by.
func fmaPeakTol(a, n int, p float64) float64 {
	const u = 0x1p-24
	return float64(a) * float64(n) * math.Abs(p) * u * float64(n+a)
}

// TestFMAPeak checks FMAPeak with every implementation: a positive,
// finite rate on one thread (and on two where GOMAXPROCS allows), and
// errors for threads outside [1, GOMAXPROCS] and a non-positive duration.
// FMAPeakInfo describes the loop in use.
func TestFMAPeak(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl string) {
		info := FMAPeakInfo()
		if info.Impl != impl || info.Lanes != tables[impl].fmaPeak.w || info.Accumulators != tables[impl].fmaPeak.a {
			t.Errorf("FMAPeakInfo() = %+v with %s in use", info, impl)
		}
		if s := info.String(); !strings.HasPrefix(s, impl+", ") || !strings.Contains(s, fmt.Sprintf("%d lanes × %d accumulators", info.Lanes, info.Accumulators)) {
			t.Errorf("FMAPeakInfo().String() = %q", s)
		}
		for threads := 1; threads <= min(2, runtime.GOMAXPROCS(0)); threads++ {
			g, err := FMAPeak(threads, 20*time.Millisecond)
			if err != nil || !(g > 0) || math.IsInf(g, 0) {
				t.Errorf("FMAPeak(%d, 20ms) = %g, %v", threads, g, err)
			}
			t.Logf("%v: %d thread(s): %.1f GFLOP/s", info, threads, g)
		}
	})
	for _, c := range []struct {
		threads int
		d       time.Duration
	}{{0, time.Millisecond}, {-1, time.Millisecond}, {runtime.GOMAXPROCS(0) + 1, time.Millisecond}, {1, 0}, {1, -time.Second}} {
		if g, err := FMAPeak(c.threads, c.d); err == nil {
			t.Errorf("FMAPeak(%d, %v) = %g, no error", c.threads, c.d, g)
		}
	}
}

// BenchmarkFMAPeak reports the FMA peak of the implementation in use
// (FMAPeakInfo) on one and two threads, as GFLOP/s: the best of the
// FMAPeak measurements (100 ms each) of the run. Run it with
//
//	go test ./kernels/ -run '^$' -bench FMAPeak
func BenchmarkFMAPeak(b *testing.B) {
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			if threads > runtime.GOMAXPROCS(0) {
				b.Skipf("GOMAXPROCS = %d", runtime.GOMAXPROCS(0))
			}
			b.ReportAllocs()
			var best float64
			for b.Loop() {
				g, err := FMAPeak(threads, 100*time.Millisecond)
				if err != nil {
					b.Fatal(err)
				}
				best = max(best, g)
			}
			b.ReportMetric(best, "GFLOP/s")
			b.Logf("%v", FMAPeakInfo())
		})
	}
}
