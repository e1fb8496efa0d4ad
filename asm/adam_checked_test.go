//go:build (amd64 || arm64) && !noasm

package asm

import (
	"math"
	"testing"
)

// adamKernel is one exported AdamStep kernel this CPU runs, by name
// (adamWrappers in vec_amd64_checked_test.go and vec_arm64_checked_test.go).
type adamKernel struct {
	name string
	f    func(n, decoupled int, w, g, h, m, v []float32, b1, c1, b2, c2, wd, step, rbc2, eps float32)
}

// adamLoop is the Go loop of the AdamStep wrappers' doc comments.
func adamLoop(n, decoupled int, w, g, h, m, v []float32, b1, c1, b2, c2, wd, step, rbc2, eps float32) {
	for i := 0; i < n; i++ {
		gi := g[i]
		if len(h) > 0 {
			gi += h[i]
		}
		if decoupled == 0 {
			gi += wd * w[i]
		}
		mi := b1*m[i] + c1*gi
		vi := b2*v[i] + c2*gi*gi
		m[i], v[i] = mi, vi
		den := float32(math.Sqrt(float64(vi)))*rbc2 + eps
		if decoupled == 0 {
			w[i] = w[i] - step*mi/den
		} else {
			w[i] = w[i]*wd - step*mi/den
		}
	}
}

// TestAdamStepWrappersCheck: the AdamStep wrappers run on exact lengths
// and agree with their Go loop (to 4 ulp: Go may fuse the loop's
// multiply-adds on arm64; package kernels checks exactness on amd64) on
// every length of the block, vector and tail paths, in both forms, with
// one gradient (h empty) and with two (g + h); they panic with a
// BoundsError naming the operand when one value is missing or n is
// negative, and return quietly on n = 0 with nil operands. h and g are
// never written.
func TestAdamStepWrappersCheck(t *testing.T) {
	ks := adamWrappers()
	if len(ks) == 0 {
		t.Skip("no vector kernels on this CPU")
	}
	const b1, c1, b2, c2, wd, step, rbc2, eps = 0.9, 0.1, 0.999, 0.001, 0.01, 0.05, 1.2, 1e-8
	for _, k := range ks {
		for _, sum := range []bool{false, true} {
			for _, dec := range []int{0, 1} {
				for n := 0; n <= 70; n++ {
					var ws [2][5][]float32 // w, g, m, v, h
					for c := range ws {
						for j := range ws[c] {
							ws[c][j] = make([]float32, n+1)
							for i := range ws[c][j] {
								x := float32((i*7+j*3)%11) - 5
								if j == 3 {
									x = x * x / 9 // v ≥ 0
								}
								if j == 4 {
									x = x/3 + 0.25
								}
								ws[c][j][i] = x
							}
						}
					}
					got, want := ws[0], ws[1]
					var hg, hw []float32
					if sum {
						hg, hw = got[4], want[4]
					}
					k.f(n, dec, got[0], got[1], hg, got[2], got[3], b1, c1, b2, c2, wd, step, rbc2, eps)
					adamLoop(n, dec, want[0], want[1], hw, want[2], want[3], b1, c1, b2, c2, wd, step, rbc2, eps)
					for j, name := range []string{"w", "g", "m", "v", "h"} {
						for i := range want[j] {
							if d := ulps(got[j][i], want[j][i]); d > 4 {
								t.Fatalf("AdamStep%s sum=%v decoupled=%d n=%d: %s[%d] = %v, want %v (%d ulp)", k.name, sum, dec, n, name, i, got[j][i], want[j][i], d)
							}
						}
					}
				}
			}
		}
		const n = 21
		for i, op := range []string{"w", "g", "h", "m", "v"} {
			a := [5][]float32{mk(n), mk(n), mk(n), mk(n), mk(n)}
			a[i] = mk(n - 1)
			mustPanic(t, "AdamStep"+k.name, op, func() { k.f(n, 0, a[0], a[1], a[2], a[3], a[4], b1, c1, b2, c2, wd, step, rbc2, eps) })
		}
		mustPanic(t, "AdamStep"+k.name+" negative n", "dimension", func() { k.f(-1, 0, nil, nil, nil, nil, nil, b1, c1, b2, c2, wd, step, rbc2, eps) })
		k.f(0, 1, nil, nil, nil, nil, nil, b1, c1, b2, c2, wd, step, rbc2, eps)
	}
}

// ulps is the distance of a and b in float32 steps (0 for two NaNs).
func ulps(a, b float32) int64 {
	if a != a && b != b {
		return 0
	}
	ia, ib := int64(int32(math.Float32bits(a))), int64(int32(math.Float32bits(b)))
	if ia < 0 {
		ia = math.MinInt32 - ia
	}
	if ib < 0 {
		ib = math.MinInt32 - ib
	}
	if ia > ib {
		return ia - ib
	}
	return ib - ia
}

// TestAdamStepFastPath: fastAdamStep accepts only what checkAdamStep
// accepts, and the exact lengths.
func TestAdamStepFastPath(t *testing.T) {
	for _, n := range []int{-2, -1, 0, 1, 5, fastMax - 1, fastMax, fastMax + 1} {
		for _, l := range []int{0, 1, 4, 5, 6} {
			a, b := mk(l), mk(5)
			if fastAdamStep(n, a, b, nil, b, b) && !noPanicTrue(func() bool { return checkAdamStep("k", n, a, b, nil, b, b) }) {
				t.Fatalf("fast path accepts n=%d len(w)=%d, the check does not", n, l)
			}
			if fastAdamStep(n, b, b, nil, a, b) && !noPanicTrue(func() bool { return checkAdamStep("k", n, b, b, nil, a, b) }) {
				t.Fatalf("fast path accepts n=%d len(m)=%d, the check does not", n, l)
			}
			if fastAdamStep(n, b, b, a, b, b) && !noPanicTrue(func() bool { return checkAdamStep("k", n, b, b, a, b, b) }) {
				t.Fatalf("fast path accepts n=%d len(h)=%d, the check does not", n, l)
			}
		}
	}
	if b := mk(5); !fastAdamStep(5, b, b, nil, b, b) || !fastAdamStep(5, b, b, b, b, b) {
		t.Error("fast path rejects exact lengths")
	}
}
