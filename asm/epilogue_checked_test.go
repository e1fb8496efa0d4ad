//go:build (amd64 || arm64) && !noasm

package asm

import (
	"math/rand"
	"testing"
)

// epilogueKernels are the exported biasAct and reluMask kernels this CPU
// runs, by name (epilogueWrappers in vec_amd64_checked_test.go and
// vec_arm64_checked_test.go).
type epilogueKernels struct {
	name     string
	biasAct  func(rows, n int, y []float32, ldy int, bias []float32, relu int)
	reluMask func(n int, y, dy, dx []float32)
}

// TestEpilogueWrappersCheck: the BiasAct and ReluMask wrappers run on
// exact lengths (and do the work: a spot check of the values), panic with a
// BoundsError naming the operand when one value is missing or an argument
// is negative, and return quietly on an empty shape with nil operands.
func TestEpilogueWrappersCheck(t *testing.T) {
	ks := epilogueWrappers()
	if len(ks) == 0 {
		t.Skip("no vector kernels on this CPU")
	}
	for _, k := range ks {
		const rows, n, ldy = 3, 21, 25
		y := mk((rows-1)*ldy + n)
		for i := range y {
			y[i] = float32(i%7) - 3
		}
		k.biasAct(rows, n, y, ldy, []float32{1, 2, 3}, 1)
		for r := 0; r < rows; r++ {
			for c := 0; c < n; c++ {
				if want := max(float32((r*ldy+c)%7)-3+float32(r+1), 0); y[r*ldy+c] != want {
					t.Fatalf("BiasAct%s: y[%d,%d] = %v, want %v", k.name, r, c, y[r*ldy+c], want)
				}
			}
		}
		dx := mk(n)
		k.reluMask(n, y, y, dx)
		for i, v := range dx {
			if v != y[i] {
				t.Fatalf("ReluMask%s: dx[%d] = %v, want %v", k.name, i, v, y[i])
			}
		}
		mustPanic(t, "BiasAct"+k.name, "y", func() { k.biasAct(rows, n, mk((rows-1)*ldy+n-1), ldy, mk(rows), 0) })
		mustPanic(t, "BiasAct"+k.name, "bias", func() { k.biasAct(rows, n, mk((rows-1)*ldy+n), ldy, mk(rows-1), 1) })
		mustPanic(t, "BiasAct"+k.name+" negative ldy", "stride", func() { k.biasAct(rows, n, mk(100), -1, mk(rows), 0) })
		mustPanic(t, "BiasAct"+k.name+" negative n", "dimension", func() { k.biasAct(rows, -1, mk(100), ldy, mk(rows), 0) })
		mustPanic(t, "ReluMask"+k.name, "y", func() { k.reluMask(n, mk(n-1), mk(n), mk(n)) })
		mustPanic(t, "ReluMask"+k.name, "dy", func() { k.reluMask(n, mk(n), mk(n-1), mk(n)) })
		mustPanic(t, "ReluMask"+k.name, "dx", func() { k.reluMask(n, mk(n), mk(n), mk(n-1)) })
		mustPanic(t, "ReluMask"+k.name+" negative n", "dimension", func() { k.reluMask(-1, nil, nil, nil) })
		k.biasAct(0, n, nil, ldy, nil, 1)
		k.biasAct(rows, 0, nil, ldy, nil, 1)
		k.reluMask(0, nil, nil, nil)
	}
}

// TestEpilogueFastPaths: fastBiasAct and fastReluMask accept only what
// checkBiasAct and checkReluMask accept (as TestFastPathsImplyChecks), and
// accept the exact lengths of ordinary shapes.
func TestEpilogueFastPaths(t *testing.T) {
	rng := rand.New(rand.NewSource(26))
	dim, buf := fastRand(rng)
	var accepted int
	for it := 0; it < 20000; it++ {
		rows, n, ldy := dim(), dim(), dim()
		if rng.Intn(2) == 0 {
			ldy += n
		}
		y, bias := buf((rows-1)*ldy+n), buf(rows)
		a, b, c := buf(n), buf(n), buf(n)
		for _, p := range []struct {
			fast, check func() bool
		}{
			{func() bool { return fastBiasAct(rows, n, y, ldy, bias) }, func() bool { return checkBiasAct("k", rows, n, y, ldy, bias) }},
			{func() bool { return fastReluMask(n, a, b, c) }, func() bool { return checkReluMask("k", n, a, b, c) }},
		} {
			if p.fast() {
				accepted++
				if !noPanicTrue(p.check) {
					t.Fatalf("fast path accepts rows=%d n=%d ldy=%d len(y)=%d len(bias)=%d lens %d %d %d, the check does not",
						rows, n, ldy, len(y), len(bias), len(a), len(b), len(c))
				}
			}
		}
	}
	if accepted < 1000 {
		t.Errorf("fast paths accepted only %d cases", accepted)
	}
	if !fastBiasAct(3, 5, mk(2*7+5), 7, mk(3)) || !fastReluMask(5, mk(5), mk(5), mk(5)) {
		t.Error("fast paths reject exact lengths")
	}
}

// fastRand returns the random draws of the fast-path tests: a dimension
// or stride (mostly small, sometimes 0, negative or at fastMax) and an
// operand of need±1 values (at most 2^15), sometimes none.
func fastRand(rng *rand.Rand) (dim func() int, buf func(need int) []float32) {
	dim = func() int {
		switch rng.Intn(20) {
		case 0:
			return 0
		case 1:
			return -1 - rng.Intn(3)
		case 2:
			return fastMax + rng.Intn(3) - 1
		}
		return 1 + rng.Intn(9)
	}
	buf = func(need int) []float32 {
		n := max(0, min(need, 1<<15)) + rng.Intn(3) - 1
		if n < 0 || rng.Intn(15) == 0 {
			n = 0
		}
		return make([]float32, n)
	}
	return dim, buf
}
