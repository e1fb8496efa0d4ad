package kernels

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// The FMA peak: how many float32 flops per second the cores reach on a
// loop that does nothing but independent fused multiply-adds, the yardstick
// against which the per-operation profile states its GFLOP/s. Each
// implementation has its own loop (ops.fmaPeak): avx2 and avx512 the
// generated asm.FMAPeakAVX2 / FMAPeakAVX512 (8 lanes × 12 accumulators,
// 16 lanes × 24), neon asm.FMAPeakNEON (4 lanes × 24) and ref the Go loop
// fmaPeakRef (8 lanes × 8 accumulators, which the compiler turns into
// scalar code: it measures what plain Go reaches, not the hardware).

// fmaLoop is one implementation's FMA throughput loop: fn(out, in, iters)
// sets acc_k = 0 for k < a, repeats iters times acc_k += in[0:w]·in[w:2w]
// (one FMA per accumulator and lane; all a accumulators independent) and
// writes out[0:w] = ((acc_0 + acc_1) + acc_2) + … + acc_{a−1}. A call does
// 2·a·w·iters flops.
type fmaLoop struct {
	fn   func(out, in []float32, iters int)
	w, a int
}

// The shape of the reference loop: 8 lanes, 8 accumulators.
const fmaRefW, fmaRefA = 8, 8

// fmaPeakRef is the reference FMA throughput loop (fmaLoop with w = fmaRefW,
// a = fmaRefA). acc += x·y is fused or not as the compiler decides (the Go
// spec allows both): either way it counts as 2 flops.
func fmaPeakRef(out, in []float32, iters int) {
	x, y := (*[fmaRefW]float32)(in[:fmaRefW]), (*[fmaRefW]float32)(in[fmaRefW:2*fmaRefW])
	o := (*[fmaRefW]float32)(out[:fmaRefW])
	var acc [fmaRefA][fmaRefW]float32
	for range iters {
		for k := range acc {
			for l := range fmaRefW {
				acc[k][l] += x[l] * y[l]
			}
		}
	}
	*o = acc[0]
	for k := 1; k < fmaRefA; k++ {
		for l := range o {
			o[l] += acc[k][l]
		}
	}
}

// FMALoop describes the FMA throughput loop FMAPeak runs.
type FMALoop struct {
	Impl         string // the implementation (Impl): "ref", "avx2", "avx512", "neon"
	Lanes        int    // float32 lanes per vector (8 for ref)
	Accumulators int    // independent accumulator vectors
}

// FlopsPerIter is the flops of one iteration of the loop: one FMA (2
// flops) per lane of every accumulator.
func (l FMALoop) FlopsPerIter() int { return 2 * l.Lanes * l.Accumulators }

// String is e.g. "avx512, 16 lanes × 24 accumulators".
func (l FMALoop) String() string {
	return fmt.Sprintf("%s, %d lanes × %d accumulators", l.Impl, l.Lanes, l.Accumulators)
}

// FMAPeakInfo describes the loop FMAPeak runs with the implementation in
// use.
func FMAPeakInfo() FMALoop {
	return FMALoop{Impl: cur.name, Lanes: cur.fmaPeak.w, Accumulators: cur.fmaPeak.a}
}

// The timing of FMAPeak: calls of about fmaPeakCall, fmaPeakRoundCalls
// per thread in each timed round, at least fmaPeakMinRounds rounds.
const (
	fmaPeakCall       = time.Millisecond
	fmaPeakRoundCalls = 4
	fmaPeakMinRounds  = 10
)

// FMAPeak measures the float32 FMA throughput of the implementation in use
// (FMAPeakInfo) on threads cores and returns it in GFLOP/s, the total of
// all threads.
//
// It runs the implementation's FMA loop (independent accumulators, no
// memory access: the FMA issue rate) on threads goroutines, each locked to
// an OS thread with its own operands, with the iteration count of one call
// calibrated to about 1 ms. The threads run timed rounds of 4 calls each,
// together (they meet at a spinning barrier before every round): a round's
// time runs from the first thread's start to the last one's end, and its
// flops are 2 per FMA lane (2·lanes·accumulators per iteration). The best round counts, so that rounds slowed by other
// processes (a preempted thread), a frequency change or a late thread do
// not lower the result: short rounds, many of them, make it likely that
// one ran undisturbed on every thread. Rounds start until d has passed
// (after the calibration, a few ms), at least 10 of them.
//
// The threads keep their cores busy for the whole measurement (they spin
// between rounds). threads must be between 1 and runtime.GOMAXPROCS(0) and
// d positive; otherwise FMAPeak returns an error. It must not run
// concurrently with Use.
func FMAPeak(threads int, d time.Duration) (gflops float64, err error) {
	if maxT := runtime.GOMAXPROCS(0); threads < 1 || threads > maxT {
		return 0, fmt.Errorf("kernels.FMAPeak: %d threads, want 1 to GOMAXPROCS = %d", threads, maxT)
	}
	if d <= 0 {
		return 0, fmt.Errorf("kernels.FMAPeak: duration %v, want > 0", d)
	}
	loop := cur.fmaPeak
	iters := fmaPeakCalibrate(loop)
	flops := float64(threads) * fmaPeakRoundCalls * float64(iters) * float64(2*loop.w*loop.a)
	end := time.Now().Add(d)

	// The threads meet at a spinning barrier before every round (no thread
	// sleeps, so none waits for a wake-up, and the OS keeps them on
	// different cores when it can). Thread 0 decides before each barrier
	// whether the round after it runs (stopAt, the round at which every
	// thread returns: a round number, not a flag, so that a thread that
	// reads it late does not see the decision of a later round), and after
	// it rates the previous round from the spans the threads wrote then
	// (double-buffered: a thread rewrites its span of round r in round r+2,
	// past the next barrier, which thread 0 reaches only after reading it).
	type span struct{ t0, t1 time.Time }
	var (
		arrived atomic.Int64
		stopAt  atomic.Int64
		spans   = [2][]span{make([]span, threads), make([]span, threads)}
		wg      sync.WaitGroup
	)
	rate := func(ss []span) float64 {
		w := ss[0] // from the first start to the last end
		for _, s := range ss[1:] {
			if s.t0.Before(w.t0) {
				w.t0 = s.t0
			}
			if s.t1.After(w.t1) {
				w.t1 = s.t1
			}
		}
		if sec := w.t1.Sub(w.t0).Seconds(); sec > 0 {
			return flops / sec / 1e9
		}
		return 0
	}
	stopAt.Store(math.MaxInt64)
	for i := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			out, in := fmaPeakOperands(loop)
			for round := 0; ; round++ {
				if i == 0 && round >= fmaPeakMinRounds && !time.Now().Before(end) {
					stopAt.Store(int64(round))
				}
				arrived.Add(1)
				for arrived.Load() < int64((round+1)*threads) {
				}
				if i == 0 && round > 0 {
					gflops = max(gflops, rate(spans[(round-1)%2]))
				}
				if int64(round) >= stopAt.Load() {
					return
				}
				t0 := time.Now()
				for range fmaPeakRoundCalls {
					loop.fn(out, in, iters)
				}
				spans[round%2][i] = span{t0, time.Now()}
			}
		}()
	}
	wg.Wait()
	return gflops, nil
}

// fmaPeakOperands are the operands of the loop: x = 1.5, y = 0.75 in every
// lane (normal numbers; the accumulators grow by 1.125 per iteration and
// stay normal and finite for any iters FMAPeak uses).
func fmaPeakOperands(loop fmaLoop) (out, in []float32) {
	out, in = make([]float32, loop.w), make([]float32, 2*loop.w)
	for l := range loop.w {
		in[l], in[loop.w+l] = 1.5, 0.75
	}
	return out, in
}

// fmaPeakCalibrate returns the iteration count of a call of loop that
// takes about fmaPeakCall on this thread: the count grows fourfold until a
// call takes a tenth of it, then scales to it.
func fmaPeakCalibrate(loop fmaLoop) (iters int) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	out, in := fmaPeakOperands(loop)
	const maxIters = 1 << 30
	iters = 64
	for {
		t := fmaPeakTime(loop, out, in, iters)
		if t >= fmaPeakCall/10 || iters >= maxIters {
			iters = int(min(maxIters, max(1, float64(iters)*float64(fmaPeakCall)/float64(max(t, 1)))))
			break
		}
		iters = min(maxIters, 4*iters)
	}
	return iters
}

// fmaPeakTime is the shorter time of two calls of loop.
func fmaPeakTime(loop fmaLoop, out, in []float32, iters int) time.Duration {
	var best time.Duration
	for i := range 2 {
		t0 := time.Now()
		loop.fn(out, in, iters)
		if t := time.Since(t0); i == 0 || t < best {
			best = t
		}
	}
	return best
}
