package asm

import (
	"math/rand"
	"testing"
)

// noPanicTrue reports whether f returns true without panicking.
func noPanicTrue(f func() bool) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return f()
}

// TestFastPathsImplyChecks draws random shapes, strides and operand lengths
// around the exact requirement (short by one, exact, longer, empty) and
// requires that whenever a fast path accepts, the precise check returns true
// without panicking; it also requires the fast paths to accept the exact
// lengths of ordinary shapes, so that they are actually taken.
func TestFastPathsImplyChecks(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	dim := func() int { // mostly small, sometimes 0, negative or huge
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
	buf := func(need int) []float32 { // need±1 values, or none
		n := need + rng.Intn(3) - 1
		if n < 0 || rng.Intn(15) == 0 {
			n = 0
		}
		if n > 1<<16 {
			n = 1 << 16
		}
		return make([]float32, n)
	}
	var accepted int
	for it := 0; it < 20000; it++ {
		m, n, k, nb, d := dim(), dim(), dim(), dim(), dim()
		s1, s2, s3, s4 := dim()+n, dim(), dim()+n, dim()+n
		sz := func(v int) int { return max(0, min(v, 1<<15)) }
		a := buf(sz(m*s1 + n))
		x, y, x2, y2 := buf(sz(m*s2+n)), buf(sz(m*s3+n)), buf(sz(m*s2+n)), buf(sz(m*s3+n))
		for _, c := range []struct {
			fast, check func() bool
		}{
			{func() bool { return fastGemv(false, m, n, a, s1, x, y) }, func() bool { return checkGemv("k", false, m, n, a, s1, x, y) }},
			{func() bool { return fastGemv(true, m, n, a, s1, x, y) }, func() bool { return checkGemv("k", true, m, n, a, s1, x, y) }},
			{func() bool { return fastGer(m, n, x, y, a, s1) }, func() bool { return checkGer("k", m, n, x, y, a, s1) }},
			{func() bool { return fastMulAddRows(k, n, a, s1, x, s2, y) }, func() bool { return checkMulAddRows("k", k, n, a, s1, x, s2, y) }},
			{func() bool { return fastMulAddRowsBatch(8, nb, k, n, a, s1, x, s2, s3, y, s4) }, func() bool {
				return checkMulAddRowsBatch("k", 8, nb, k, n, a, s1, x, s2, s3, y, s4)
			}},
			{func() bool { return fastCols2(m, n, a, x) }, func() bool { return checkCols("k", m, n, "ax", a, x) }},
			{func() bool { return fastCols3(m, n, a, x, y) }, func() bool { return checkCols("k", m, n, "axy", a, x, y) }},
			{func() bool { return fastGerGroups(nb, d, n, x, x2, s2, k, y, y2, s3, a, s1) }, func() bool {
				return checkGerGroups("k", nb, d, n, x, x2, s2, k, y, y2, s3, a, s1, true)
			}},
			{func() bool { return fastGerGroups(nb, d, n, x, x, s2, k, y, y, s3, a, s1) }, func() bool {
				return checkGerGroups("k", nb, d, n, x, nil, s2, k, y, nil, s3, a, s1, false)
			}},
			{func() bool { return fastGemvTGroups(nb, d, n, a, s1, x, s2, k, y, s3) }, func() bool {
				return checkGemvTGroups("k", nb, d, n, a, s1, x, s2, k, y, s3)
			}},
			{func() bool { return fastGemvNGroups(nb, d, n, a, s1, x, s3, y, s2, k) }, func() bool {
				return checkGemvNGroups("k", nb, d, n, a, s1, x, s3, y, s2, k)
			}},
		} {
			if c.fast() {
				accepted++
				if !noPanicTrue(c.check) {
					t.Fatalf("iteration %d: a fast path accepts a shape its check rejects (m=%d n=%d k=%d nb=%d d=%d strides %d %d %d %d)",
						it, m, n, k, nb, d, s1, s2, s3, s4)
				}
			}
		}
	}
	if accepted < 1000 {
		t.Errorf("fast paths accepted only %d random shapes", accepted)
	}
	// Exact lengths of ordinary shapes take the fast path.
	mk := func(n int) []float32 { return make([]float32, n) }
	for _, ok := range []bool{
		fastGemv(false, 3, 5, mk(15), 5, mk(5), mk(3)),
		fastGemv(true, 3, 5, mk(15), 5, mk(3), mk(5)),
		fastGer(3, 5, mk(3), mk(5), mk(15), 5),
		fastMulAddRows(2, 9, mk(18), 9, mk(18), 9, mk(9)),
		fastMulAddRowsBatch(8, 2, 3, 9, mk(27), 9, mk(54), 9, 27, mk(18), 9),
		fastCols2(3, 9, mk(27), mk(27)),
		fastCols3(3, 9, mk(27), mk(27), mk(27)),
		fastGerGroups(2, 3, 9, mk(6), mk(6), 3, 1, mk(18), mk(18), 9, mk(54), 9),
		fastGemvTGroups(2, 3, 9, mk(54), 9, mk(6), 3, 1, mk(18), 9),
		fastGemvNGroups(2, 3, 9, mk(54), 9, mk(18), 9, mk(6), 3, 1),
	} {
		if !ok {
			t.Errorf("a fast path rejects an exact, valid shape")
		}
	}
}
