package kernels

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// sameBits32 reports whether a and b hold the same bits.
func sameBits32(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

// TestSgemmWork checks SgemmWork against Sgemm bit for bit on every
// implementation, with work poisoned with NaN (its contents must be
// ignored), that a blocked driver really packs into work (it changes), that
// it refuses a short work, and that it does not allocate.
func TestSgemmWork(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	shapes := [][3]int{{1, 1, 1}, {7, 9, 11}, {33, 65, 17}, {200, 600, 300}, {13, 1030, 270}, {500, 40, 9}}
	forEachImpl(t, func(t *testing.T, name string) {
		for _, sh := range shapes {
			m, n, k := sh[0], sh[1], sh[2]
			for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
				a, b := convRand(rng, m*k, 0), convRand(rng, k*n, 0)
				lda, ldb := k, n
				if tr[0] {
					lda = m
				}
				if tr[1] {
					ldb = k
				}
				c0 := convRand(rng, m*n, 0)
				want, got := slices.Clone(c0), slices.Clone(c0)
				if err := Sgemm(tr[0], tr[1], m, n, k, 0.5, a, lda, b, ldb, 0.25, want, n); err != nil {
					t.Fatal(err)
				}
				ws := SgemmWorkSize(m, n, k)
				if ws < cur.sgemmWorkSize(m, n, k) {
					t.Fatalf("%s %v: SgemmWorkSize %d < the implementation's %d", name, sh, ws, cur.sgemmWorkSize(m, n, k))
				}
				work := convNaN(ws, 0)
				if err := SgemmWork(tr[0], tr[1], m, n, k, 0.5, a, lda, b, ldb, 0.25, got, n, work); err != nil {
					t.Fatal(err)
				}
				if !sameBits32(got, want) {
					t.Fatalf("%s %v trans %v: SgemmWork differs from Sgemm", name, sh, tr)
				}
				if own := cur.sgemmWorkSize(m, n, k); own > 0 && !slices.ContainsFunc(work[:own], func(v float32) bool { return v == v }) {
					t.Errorf("%s %v: work of %d floats left untouched: the packing did not use it", name, sh, own)
				}
				if own := cur.sgemmWorkSize(m, n, k); own > 0 {
					err := SgemmWork(tr[0], tr[1], m, n, k, 0.5, a, lda, b, ldb, 0.25, got, n, work[:own-1])
					if err == nil {
						t.Errorf("%s %v: short work accepted", name, sh)
					}
					if allocs := testing.AllocsPerRun(3, func() {
						_ = SgemmWork(tr[0], tr[1], m, n, k, 0.5, a, lda, b, ldb, 0.25, got, n, work)
					}); allocs != 0 {
						t.Errorf("%s %v: SgemmWork allocates %.1f times", name, sh, allocs)
					}
				}
			}
		}
	})
	if SgemmWorkSize(-1, 2, 3) != 0 || SgemmWorkSize(2, 2, 2) != 0 {
		t.Error("SgemmWorkSize of a bad or tiny product is not 0")
	}
}

// TestConvArenaWork checks that the convolutions given ArenaWorkSize floats
// of work compute the same bits as with WorkSize only.
func TestConvArenaWork(t *testing.T) {
	forEachImpl(t, func(t *testing.T, _ string) {
		rng := rand.New(rand.NewPCG(5, 6))
		for _, s := range convTestShapes()[:20] {
			x, w, dy := convRand(rng, s.XLen(), 0), convRand(rng, s.WLen(), 0), convRand(rng, s.YLen(), 0)
			small, big := make([]float32, s.WorkSize()), convNaN(s.ArenaWorkSize(), 0)
			if s.ArenaWorkSize() < s.WorkSize() {
				t.Fatalf("%+v: ArenaWorkSize %d < WorkSize %d", s, s.ArenaWorkSize(), s.WorkSize())
			}
			y1, y2 := make([]float32, s.YLen()), make([]float32, s.YLen())
			dx1, dx2 := make([]float32, s.XLen()), make([]float32, s.XLen())
			dw1, dw2 := make([]float32, s.WLen()), make([]float32, s.WLen())
			if err := ConvForward(s, y1, x, w, nil, small); err != nil {
				t.Fatal(err)
			}
			if err := ConvForward(s, y2, x, w, nil, big); err != nil {
				t.Fatal(err)
			}
			if tail := big[s.WorkSize():]; Impl() != "ref" && len(tail) > 0 && !slices.ContainsFunc(tail, func(v float32) bool { return v == v }) {
				t.Errorf("%+v: the SGEMM packing space of ArenaWorkSize was not used", s)
			}
			if err := ConvBackwardData(s, dx1, dy, w, small); err != nil {
				t.Fatal(err)
			}
			if err := ConvBackwardData(s, dx2, dy, w, big); err != nil {
				t.Fatal(err)
			}
			if err := ConvBackwardFilter(s, dw1, nil, x, dy, small); err != nil {
				t.Fatal(err)
			}
			if err := ConvBackwardFilter(s, dw2, nil, x, dy, big); err != nil {
				t.Fatal(err)
			}
			if !sameBits32(y1, y2) || !sameBits32(dx1, dx2) || !sameBits32(dw1, dw2) {
				t.Fatalf("%+v: results with arena work differ", s)
			}
		}
	})
}
