//go:build (amd64 || arm64) && !noasm

package asm

import (
	"math"
	"math/rand/v2"
	"testing"
)

// requantRowsGo is the loop RequantRowsAVX512, RequantRowsAVX2 and
// RequantRowsNEON document, for columns c < n of a rows×cols matrix.
func requantRowsGo(rows, cols, n int, q []int8, acc []int32, mul, add []float32, lo float32) {
	for r := range rows {
		for c := range n {
			v := float32(float32(acc[r*cols+c])*mul[c]) + add[c]
			if v != v {
				q[r*cols+c] = 0
				continue
			}
			q[r*cols+c] = int8(math.RoundToEven(float64(max(lo, min(127, v)))))
		}
	}
}

// requantUnderTest is one requantization kernel for testRequantRows: its
// exported name, width (the columns it does are cols rounded down to a
// multiple of it), whether this CPU runs it, and the kernel.
type requantUnderTest struct {
	name  string
	width int
	ok    bool
	run   func(rows, cols int, q []int8, acc []int32, mul, add []float32, lo float32) int
}

// testRequantRows checks a requantization kernel against the documented
// loop, bit for bit: every cols up to 70 (the count returned, the other
// columns untouched) at odd offsets of every slice, ties (x.5), values far
// beyond ±127 and the int32 range, ±Inf products (huge mul) and NaN (NaN
// add); bad shapes and short slices do nothing, no panic.
func testRequantRows(t *testing.T, k requantUnderTest) {
	if !k.ok {
		t.Logf("%s: not supported by this CPU", k.name)
		return
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for cols := range 71 {
		const off = 3 // odd offsets: unaligned slices
		rows := 1 + rng.IntN(4)
		acc := make([]int32, rows*cols+off)[off:]
		mul := make([]float32, cols+off)[off:]
		add := make([]float32, cols+off)[off:]
		for i := range acc {
			acc[i] = int32(rng.IntN(1<<17) - 1<<16)
		}
		for c := range cols {
			mul[c] = float32(rng.NormFloat64() * 0.01)
			add[c] = float32(rng.NormFloat64() * 50)
			switch rng.IntN(8) {
			case 0: // ties: acc·1 + x.5
				mul[c], add[c] = 1, float32(rng.IntN(301)-150)+0.5
				for r := range rows {
					acc[r*cols+c] = int32(rng.IntN(11) - 5)
				}
			case 1: // ±Inf products
				mul[c] = float32(math.Copysign(math.MaxFloat32, rng.NormFloat64()))
			case 2: // beyond the int32 range, finite
				mul[c] = 1e6
			case 3:
				if cols%5 == 0 {
					add[c] = float32(math.NaN())
				}
			case 4: // ±Inf sums
				add[c] = float32(math.Inf(rng.IntN(2)*2 - 1))
			case 5: // Inf·0 = NaN for acc = 0, else ±Inf
				if cols%3 == 0 {
					mul[c] = float32(math.Inf(1))
					acc[c] = 0
				}
			}
		}
		for _, lo := range []float32{0, -127} {
			got := make([]int8, rows*cols+off+1)[off:]
			want := make([]int8, rows*cols+1)
			for i := range got {
				got[i], want[i] = 99, 99 // untouched columns and the end stay 99
			}
			n := k.run(rows, cols, got[:rows*cols], acc, mul, add, lo)
			if n != cols&^(k.width-1) {
				t.Fatalf("%s cols=%d: did %d columns, want %d", k.name, cols, n, cols&^(k.width-1))
			}
			requantRowsGo(rows, cols, n, want, acc, mul, add, lo)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("%s %dx%d lo=%v: q[%d] = %d, want %d", k.name, rows, cols, lo, i, got[i], want[i])
				}
			}
		}
		if cols < k.width {
			continue
		}
		q := make([]int8, rows*cols)
		for _, bad := range []struct {
			what string
			n    int
		}{
			{"q", k.run(rows, cols, q[:rows*cols-1], acc, mul, add, 0)},
			{"acc", k.run(rows, cols, q, acc[:rows*cols-1], mul, add, 0)},
			{"mul", k.run(rows, cols, q, acc, mul[:cols-1], add, 0)},
			{"add", k.run(rows, cols, q, acc, mul, add[:cols-1], 0)},
			{"rows", k.run(-1, cols, q, acc, mul, add, 0)},
			{"cols", k.run(rows, -cols, q, acc, mul, add, 0)},
			{"huge", k.run(1<<40, 1<<40, q, acc, mul, add, 0)},
		} {
			if bad.n != 0 {
				t.Fatalf("%s: bad %s did %d columns", k.name, bad.what, bad.n)
			}
		}
		for i := range q {
			if q[i] != 0 {
				t.Fatalf("%s: a bad call wrote q[%d]", k.name, i)
			}
		}
	}
}
