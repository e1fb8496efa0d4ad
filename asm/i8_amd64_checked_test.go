//go:build amd64 && !noasm

package asm

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/cpuid/v2"
)

func TestGemmI8KernelBoundsAMD64(t *testing.T) {
	testI8KernelBounds(t, i8KernelUnderTest{"GemmI8KernelVNNI", 32, I8GroupBytes, true,
		cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512VNNI), GemmI8KernelVNNI})
	testI8KernelBounds(t, i8KernelUnderTest{"GemmI8KernelAVX2", 16, I8GroupBytes / 2, false,
		cpuid.CPU.Supports(cpuid.AVX2),
		func(mr, kg int, a []int8, lda int, tail []uint32, b []int8, _, c []int32, ldc int) {
			GemmI8KernelAVX2(mr, kg, a, lda, tail, b, c, ldc)
		}})
}

// requantRowGo is the loop RequantRowAVX512 and RequantRowAVX2 document.
func requantRowGo(q []int8, acc []int32, mul, add []float32, lo float32) {
	for c := range q {
		v := float32(float32(acc[c])*mul[c]) + add[c]
		switch {
		case v != v:
			q[c] = 0
		default:
			q[c] = int8(math.RoundToEven(float64(max(lo, min(127, v)))))
		}
	}
}

// TestRequantRowAMD64 checks both requantization row kernels against the
// documented loop, bit for bit: every length up to 70 (the count returned,
// nothing written past it) at odd offsets of every slice, ties (x.5),
// values far beyond ±127, ±Inf products (huge mul) and NaN (NaN add).
func TestRequantRowAMD64(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, k := range []struct {
		name  string
		width int
		ok    bool
		run   func(q []int8, acc []int32, mul, add []float32, lo float32) int
	}{
		{"RequantRowAVX512", 16, cpuid.CPU.Supports(cpuid.AVX512F), RequantRowAVX512},
		{"RequantRowAVX2", 8, cpuid.CPU.Supports(cpuid.AVX2), RequantRowAVX2},
	} {
		if !k.ok {
			t.Logf("%s: not supported by this CPU", k.name)
			continue
		}
		for n := range 71 {
			const off = 3 // odd offsets: unaligned slices
			acc := make([]int32, n+off)[off:]
			mul := make([]float32, n+off)[off:]
			add := make([]float32, n+off)[off:]
			for c := range n {
				acc[c] = int32(rng.IntN(1<<17) - 1<<16)
				mul[c] = float32(rng.NormFloat64() * 0.01)
				add[c] = float32(rng.NormFloat64() * 50)
				switch rng.IntN(8) {
				case 0: // a tie: acc·1 + x.5
					mul[c], add[c] = 1, float32(rng.IntN(301)-150)+0.5
					acc[c] = int32(rng.IntN(11) - 5)
				case 1: // ±Inf product
					mul[c] = float32(math.Copysign(math.MaxFloat32, rng.NormFloat64()))
					acc[c] = int32(rng.IntN(1000) + 2)
				case 2: // beyond the int32 range, finite
					mul[c] = 1e6
					acc[c] = int32(rng.IntN(1<<20) - 1<<19)
				case 3:
					if n%5 == 0 {
						add[c] = float32(math.NaN())
					}
				}
			}
			for _, lo := range []float32{0, -127} {
				got := make([]int8, n+off+1)[off:]
				want := make([]int8, n)
				got[n] = 99 // sentinel
				m := k.run(got[:n], acc, mul, add, lo)
				if m != n&^(k.width-1) {
					t.Fatalf("%s n=%d: did %d values, want %d", k.name, n, m, n&^(k.width-1))
				}
				requantRowGo(want[:m], acc, mul, add, lo)
				for c := range m {
					if got[c] != want[c] {
						t.Fatalf("%s n=%d lo=%v: q[%d] = %d, want %d (acc %d mul %v add %v)",
							k.name, n, lo, c, got[c], want[c], acc[c], mul[c], add[c])
					}
				}
				for c := m; c <= n; c++ {
					w := int8(0)
					if c == n {
						w = 99
					}
					if got[c] != w {
						t.Fatalf("%s n=%d: q[%d] = %d written past the %d done", k.name, n, c, got[c], m)
					}
				}
			}
			// Short slices: never a panic, never past the shortest.
			if m := k.run(make([]int8, n), acc, mul[:n/2], add, -127); m != n/2&^(k.width-1) {
				t.Fatalf("%s: mul of %d: did %d values", k.name, n/2, m)
			}
		}
	}
}
