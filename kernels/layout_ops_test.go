package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Tests of the direct convolutions' data-movement kernels: compactAct
// (the forward's epilogue from the wide grid), deinterleaveRows (the
// stride-2 phases) and transpose16 (the filter gradient's dY panels).
// Every implementation against the Go reference, bit for bit, over random
// shapes with vector tails, strides wider than the rows, unaligned starts
// and special values; guard values around and between the rows must stay
// untouched. TestLayoutOpsCompareCanFail runs the comparisons on
// plausible bugs.

// guarded returns a buffer of n values plus off in front and 5 behind,
// every one epiGuard.
func guarded(off, n int) []float32 {
	b := make([]float32, off+n+5)
	for i := range b {
		b[i] = epiGuard
	}
	return b
}

// firstDiff describes the first element whose bits differ, "" if none.
func firstDiff(got, want []float32, off int) string {
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			return fmt.Sprintf("element %d: %#08x, want %#08x", i-off, math.Float32bits(got[i]), math.Float32bits(want[i]))
		}
	}
	return ""
}

type compactActFn = func(ch, rows, n int, y, src []float32, lds, ldc int, bias []float32, relu int)

// compactActMismatch runs compactAct f and the reference on one random
// case and describes the first bit difference, nil when there is none.
func compactActMismatch(rng *rand.Rand, f compactActFn) error {
	ch, rows, n := 1+rng.IntN(5), 1+rng.IntN(6), epiWidth(rng)%90+1
	lds := n + rng.IntN(4)*rng.IntN(3)
	ldc := (rows-1)*lds + n + rng.IntN(40)
	relu, off, soff := rng.IntN(2), rng.IntN(4), rng.IntN(4)
	src := guarded(soff, (ch-1)*ldc+(rows-1)*lds+n)
	for o := 0; o < ch; o++ {
		for r := 0; r < rows; r++ {
			for c := 0; c < n; c++ {
				src[soff+o*ldc+r*lds+c] = epiVal(rng)
			}
		}
	}
	bias := make([]float32, ch+1)
	for o := range ch {
		bias[o] = epiBias(rng)
	}
	bias[ch] = epiGuard
	size := ch * rows * n
	got, want := guarded(off, size), guarded(off, size)
	s0 := append([]float32(nil), src...)
	compactActRef(ch, rows, n, want[off:off+size], src[soff:], lds, ldc, bias, relu)
	f(ch, rows, n, got[off:off+size], src[soff:], lds, ldc, bias, relu)
	what := fmt.Sprintf("ch=%d rows=%d n=%d lds=%d ldc=%d relu=%d off=%d", ch, rows, n, lds, ldc, relu, off)
	if d := firstDiff(src, s0, soff); d != "" {
		return fmt.Errorf("%s: src written: %s", what, d)
	}
	if d := firstDiff(got, want, off); d != "" {
		return fmt.Errorf("%s: y %s", what, d)
	}
	return nil
}

type deinterleaveFn = func(rows, n int, src []float32, lds int, d0, d1 []float32, ldd int)

// deinterleaveMismatch runs deinterleaveRows f and the reference on one
// random case (n around the 16- and 32-value chunks) and describes the
// first bit difference, nil when there is none.
func deinterleaveMismatch(rng *rand.Rand, f deinterleaveFn) error {
	rows := 1 + rng.IntN(6)
	n := 1 + rng.IntN(40)
	if rng.IntN(3) == 0 {
		n = 32*(1+rng.IntN(3)) + rng.IntN(5) - 2
	}
	n0 := (n + 1) / 2
	lds, ldd := n+rng.IntN(3)*n, n0+rng.IntN(3)
	off, soff := rng.IntN(4), rng.IntN(4)
	src := guarded(soff, (rows-1)*lds+n)
	for i := soff; i < len(src)-5; i++ {
		src[i] = epiVal(rng)
	}
	size := (rows-1)*ldd + n0
	g0, g1, w0, w1 := guarded(off, size), guarded(off, size), guarded(off, size), guarded(off, size)
	deinterleaveRowsRef(rows, n, src[soff:], lds, w0[off:], w1[off:], ldd)
	f(rows, n, src[soff:], lds, g0[off:], g1[off:], ldd)
	what := fmt.Sprintf("rows=%d n=%d lds=%d ldd=%d off=%d", rows, n, lds, ldd, off)
	if d := firstDiff(g0, w0, off); d != "" {
		return fmt.Errorf("%s: d0 %s", what, d)
	}
	if d := firstDiff(g1, w1, off); d != "" {
		return fmt.Errorf("%s: d1 %s", what, d)
	}
	return nil
}

type transpose16Fn = func(rows, n int, src []float32, lds, srow int, dst []float32, ldd, drow int)

// transpose16Mismatch runs transpose16 f and the reference on one random
// case (n around 16, strides of a channel plane and of panels) and
// describes the first bit difference, nil when there is none.
func transpose16Mismatch(rng *rand.Rand, f transpose16Fn) error {
	rows, n := 1+rng.IntN(5), 1+rng.IntN(40)
	srow := n + rng.IntN(3)
	lds := (rows-1)*srow + n + rng.IntN(20)
	ldd := 16 + 16*rng.IntN(3) + rng.IntN(2)*rng.IntN(5)
	drow := (n-1)*ldd + 16 + rng.IntN(3)*ldd
	off, soff := rng.IntN(4), rng.IntN(4)
	src := guarded(soff, 15*lds+(rows-1)*srow+n)
	for i := soff; i < len(src)-5; i++ {
		src[i] = epiVal(rng)
	}
	size := (rows-1)*drow + (n-1)*ldd + 16
	got, want := guarded(off, size), guarded(off, size)
	transpose16Ref(rows, n, src[soff:], lds, srow, want[off:], ldd, drow)
	f(rows, n, src[soff:], lds, srow, got[off:], ldd, drow)
	if d := firstDiff(got, want, off); d != "" {
		return fmt.Errorf("rows=%d n=%d lds=%d srow=%d ldd=%d drow=%d off=%d: dst %s", rows, n, lds, srow, ldd, drow, off, d)
	}
	return nil
}

func TestCompactAct(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl string) {
		rng := rand.New(rand.NewPCG(27, 1))
		for range epiTrials() {
			if err := compactActMismatch(rng, cur.compactAct); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestDeinterleaveRows(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl string) {
		rng := rand.New(rand.NewPCG(27, 2))
		for range epiTrials() {
			if err := deinterleaveMismatch(rng, cur.deinterleaveRows); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestTranspose16(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl string) {
		if cur.transpose16 == nil {
			t.Skip("no transpose16 kernel: transposePanels runs its loops (TestTransposePanels)")
		}
		rng := rand.New(rand.NewPCG(27, 3))
		for range epiTrials() {
			if err := transpose16Mismatch(rng, cur.transpose16); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestLayoutOpsCompareCanFail: each comparison above catches a plausible
// bug of its kernel.
func TestLayoutOpsCompareCanFail(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 4))
	caught := func(name string, mismatch func() error) {
		t.Helper()
		for range 200 {
			if mismatch() != nil {
				return
			}
		}
		t.Errorf("%s: not caught in 200 cases", name)
	}
	caught("compactAct: the last row's bias of the next channel", func() error {
		return compactActMismatch(rng, func(ch, rows, n int, y, src []float32, lds, ldc int, bias []float32, relu int) {
			compactActRef(ch, rows, n, y, src, lds, ldc, bias, relu)
			if ch > 1 {
				r := (rows - 1) * n
				for c := 0; c < n; c++ {
					y[r+c] = max(src[(rows-1)*lds+c]+bias[1], 0)
				}
			}
		})
	})
	caught("compactAct: the row stride taken as n", func() error {
		return compactActMismatch(rng, func(ch, rows, n int, y, src []float32, lds, ldc int, bias []float32, relu int) {
			compactActRef(ch, rows, n, y, src, n, ldc, bias, relu)
		})
	})
	caught("compactAct: one value past the output", func() error {
		return compactActMismatch(rng, func(ch, rows, n int, y, src []float32, lds, ldc int, bias []float32, relu int) {
			compactActRef(ch, rows, n, y, src, lds, ldc, bias, relu)
			y[:cap(y)][ch*rows*n] = 0 // the guard after the output
		})
	})
	caught("deinterleaveRows: d1's last slot left alone for odd n", func() error {
		return deinterleaveMismatch(rng, func(rows, n int, src []float32, lds int, d0, d1 []float32, ldd int) {
			for r := 0; r < rows; r++ {
				deinterleave(src[r*lds:r*lds+n], d0[r*ldd:r*ldd+(n+1)/2], d1[r*ldd:r*ldd+n/2])
			}
		})
	})
	caught("deinterleaveRows: phases swapped", func() error {
		return deinterleaveMismatch(rng, func(rows, n int, src []float32, lds int, d0, d1 []float32, ldd int) {
			deinterleaveRowsRef(rows, n, src, lds, d1, d0, ldd)
		})
	})
	caught("transpose16: channels 7 and 8 swapped", func() error {
		return transpose16Mismatch(rng, func(rows, n int, src []float32, lds, srow int, dst []float32, ldd, drow int) {
			transpose16Ref(rows, n, src, lds, srow, dst, ldd, drow)
			for r := 0; r < rows; r++ {
				for t := 0; t < n; t++ {
					d := dst[r*drow+t*ldd:]
					d[7], d[8] = d[8], d[7]
				}
			}
		})
	})
	caught("transpose16: the last position of a row dropped", func() error {
		return transpose16Mismatch(rng, func(rows, n int, src []float32, lds, srow int, dst []float32, ldd, drow int) {
			transpose16Ref(rows, n-1, src, lds, srow, dst, ldd, drow)
		})
	})
}

// BenchmarkLayoutOps times the three data-movement kernels on the deep
// model's shapes, one image, on every implementation (transpose16 where
// one has it; elsewhere transposePanels' Go loops, "loops"), in GB/s of
// values read and written:
//   - compactAct: its second convolution's output, 64 channels of 32×32
//     from the 32×34 wide grid, bias and ReLU;
//   - deinterleaveRows: its third convolution's input, 64 channels of
//     32×32 split into the four phases (two calls per channel);
//   - transpose: that convolution's dY (64 channels of 32×32) into two
//     panels of 32 channels (transposePanels).
func BenchmarkLayoutOps(b *testing.B) {
	const ch, rows, n, lds = 64, 32, 32, 34
	rng := rand.New(rand.NewPCG(27, 5))
	src := convRand(rng, ch*rows*lds, 0)
	bias := convRand(rng, ch, 0)
	y := make([]float32, ch*rows*n)
	d := make([]float32, 4*ch*(rows/2)*(n/2))
	bp := make([]float32, 2*rows*n*32)
	gbps := func(b *testing.B, values int) {
		b.ReportMetric(float64(8*values)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
	}
	forEachImpl(b, func(b *testing.B, impl string) {
		b.Run("op=compactAct", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cur.compactAct(ch, rows, n, y, src, lds, rows*lds, bias, 1)
			}
			gbps(b, ch*rows*n)
		})
		b.Run("op=deinterleaveRows", func(b *testing.B) {
			b.ReportAllocs()
			pp := (rows / 2) * (n / 2)
			for b.Loop() {
				for c := 0; c < ch; c++ {
					for a := 0; a < 2; a++ {
						cur.deinterleaveRows(rows/2, n, y[c*rows*n+a*n:], 2*n, d[(2*a*ch+c)*pp:], d[((2*a+1)*ch+c)*pp:], n/2)
					}
				}
			}
			gbps(b, ch*rows*n)
		})
		name := "op=transpose/path=loops"
		if cur.transpose16 != nil {
			name = "op=transpose/path=transpose16"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				transposePanels(bp, y, ch, rows, n, n, rows*n, 32)
			}
			gbps(b, ch*rows*n)
		})
	})
}
