package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// i8Values fills s by mode: "random" int8, "min" all −128, "max" all 127,
// "extreme" −128 or 127 at random.
func i8Values(rng *rand.Rand, s []int8, mode string) {
	for i := range s {
		switch mode {
		case "min":
			s[i] = -128
		case "max":
			s[i] = 127
		case "extreme":
			s[i] = [2]int8{-128, 127}[rng.IntN(2)]
		default:
			s[i] = int8(rng.IntN(256) - 128)
		}
	}
}

// i8Case is one random GemmI8 problem: A and B with strides and offsets,
// C with a stride, random initial values, and sentinels outside the m×n
// window.
type i8Case struct {
	m, n, k, lda, ldb, ldc int
	a, b                   []int8
	c0                     []int32
	offC                   int
}

func newI8Case(rng *rand.Rand, m, n, k int, modeA, modeB string) i8Case {
	t := i8Case{m: m, n: n, k: k, lda: k + rng.IntN(5), ldb: k + rng.IntN(5), ldc: n + rng.IntN(5)}
	offA, offB := rng.IntN(7), rng.IntN(7)
	t.offC = rng.IntN(7)
	a := make([]int8, offA+(m-1)*t.lda+k)
	b := make([]int8, offB+(n-1)*t.ldb+k)
	i8Values(rng, a, modeA)
	i8Values(rng, b, modeB)
	t.a, t.b = a[offA:], b[offB:]
	t.c0 = make([]int32, t.offC+(m-1)*t.ldc+n+3)
	for i := range t.c0 {
		t.c0[i] = int32(rng.IntN(1<<20) - 1<<19)
	}
	return t
}

// want returns C after the reference product.
func (t i8Case) want() []int32 {
	w := slices.Clone(t.c0)
	gemmI8Ref(t.m, t.n, t.k, t.a, t.lda, t.b, t.ldb, w[t.offC:], t.ldc)
	return w
}

// i8Shapes are the shapes of TestGemmI8: every tail of the 32-column
// blocks, the 16-column halves, the 8- and 4-row tiles and k mod 4, then
// random ones up to 70.
func i8Shapes(rng *rand.Rand) [][3]int {
	s := [][3]int{{1, 1, 1}, {1, 1, 3}, {8, 32, 4}, {4, 16, 8}, {9, 33, 5}, {5, 17, 7}, {16, 64, 64}, {70, 70, 70}, {3, 100, 130}}
	for range 60 {
		s = append(s, [3]int{1 + rng.IntN(70), 1 + rng.IntN(70), 1 + rng.IntN(70)})
	}
	return s
}

// TestGemmI8 checks GemmI8 and GemmI8Packed of every implementation
// against the reference loop, exactly, on random and extreme values,
// strides and offsets, and that nothing outside the m×n window of C moves.
func TestGemmI8(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl string) {
		t.Logf("impl=%s int8 path=%s", impl, ImplI8())
		rng := rand.New(rand.NewPCG(11, 8))
		for _, sh := range i8Shapes(rng) {
			m, n, k := sh[0], sh[1], sh[2]
			for _, modes := range [][2]string{{"random", "random"}, {"min", "min"}, {"max", "max"}, {"min", "max"}, {"max", "min"}, {"extreme", "extreme"}} {
				tc := newI8Case(rng, m, n, k, modes[0], modes[1])
				want := tc.want()
				got := slices.Clone(tc.c0)
				if err := GemmI8(m, n, k, tc.a, tc.lda, tc.b, tc.ldb, got[tc.offC:], tc.ldc); err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("GemmI8 m=%d n=%d k=%d A=%s B=%s", m, n, k, modes[0], modes[1])
				i8Compare(t, name, got, want)
				p, err := PackI8(n, k, tc.b, tc.ldb)
				if err != nil {
					t.Fatal(err)
				}
				got = slices.Clone(tc.c0)
				if err := GemmI8Packed(m, tc.a, tc.lda, p, got[tc.offC:], tc.ldc); err != nil {
					t.Fatal(err)
				}
				i8Compare(t, "GemmI8Packed "+name[7:], got, want)
			}
		}
	})
}

func i8Compare(t *testing.T, name string, got, want []int32) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: c[%d] = %d, want %d", name, i, got[i], want[i])
		}
	}
}

// TestGemmI8Extremes pins the exact sums at the saturation limits of
// VPMADDUBSW: every product is ±128·128 or 127·(−128) and k is large
// enough for many groups and a tail.
func TestGemmI8Extremes(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl string) {
		const m, n, k = 9, 40, 1027
		for _, tc := range []struct {
			a, b int8
		}{{-128, -128}, {127, 127}, {-128, 127}, {127, -128}} {
			a := make([]int8, m*k)
			b := make([]int8, n*k)
			for i := range a {
				a[i] = tc.a
			}
			for i := range b {
				b[i] = tc.b
			}
			c := make([]int32, m*n)
			if err := GemmI8(m, n, k, a, k, b, k, c, n); err != nil {
				t.Fatal(err)
			}
			want := int32(k) * int32(tc.a) * int32(tc.b)
			for i, v := range c {
				if v != want {
					t.Fatalf("%s a=%d b=%d: c[%d] = %d, want %d", ImplI8(), tc.a, tc.b, i, v, want)
				}
			}
		}
	})
}

// TestGemmI8Errors checks that bad arguments are errors, not panics.
func TestGemmI8Errors(t *testing.T) {
	a := make([]int8, 12)
	b := make([]int8, 12)
	c := make([]int32, 9)
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"negative m", GemmI8(-1, 3, 4, a, 4, b, 4, c, 3)},
		{"short a", GemmI8(4, 3, 4, a, 4, b, 4, c, 3)},
		{"short b", GemmI8(3, 4, 4, a, 4, b, 4, c, 4)},
		{"short c", GemmI8(3, 3, 4, a, 4, b, 4, c[:8], 3)},
		{"small lda", GemmI8(3, 3, 4, a, 3, b, 4, c, 3)},
		{"small ldb", GemmI8(3, 3, 4, a, 4, b, 3, c, 3)},
		{"small ldc", GemmI8(3, 3, 4, a, 4, b, 4, c, 2)},
		{"nil packed", GemmI8Packed(3, a, 4, nil, c, 3)},
	} {
		if tc.err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if _, err := PackI8(4, 4, b, 4); err == nil {
		t.Error("PackI8 with a short b: no error")
	}
	if _, err := PackI8(3, -1, b, 4); err == nil {
		t.Error("PackI8 with k < 0: no error")
	}
	// Shapes within maxI8Dim whose span wraps a 32-bit int: an error
	// there, never an index past the slice (on 64-bit targets the span
	// fits and the short slices are the error).
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"a span past an int", GemmI8(maxI8Dim, 1, 1, a, maxI8Dim, b, 1, c, 1)},
		{"c span past an int", GemmI8(maxI8Dim, 1, 1, a, 1, b, 1, c, maxI8Dim)},
		{"b span past an int", GemmI8(1, maxI8Dim, 1, a, 1, b, maxI8Dim, c, maxI8Dim)},
	} {
		if tc.err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if _, err := PackI8(maxI8Dim, 1, b, maxI8Dim); err == nil {
		t.Error("PackI8 of a b whose span passes an int: no error")
	}
	if n, ok := i8Span(3, 4, 5); n != 14 || !ok {
		t.Errorf("i8Span(3, 4, 5) = %d, %v, want 14, true", n, ok)
	}
	if _, ok := i8Span(math.MaxInt/2, 3, 3); ok {
		t.Error("i8Span of a wrapping span: ok")
	}
	p, err := PackI8(3, 4, b, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := GemmI8Packed(3, a[:11], 4, p, c, 3); err == nil {
		t.Error("GemmI8Packed with a short a: no error")
	}
}

// TestGemmI8PackedAllocs checks GemmI8Packed allocates nothing, with tails
// in m, n and k (the stack tiles must not escape).
func TestGemmI8PackedAllocs(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl string) {
		const m, n, k = 13, 45, 37
		rng := rand.New(rand.NewPCG(1, 2))
		a := make([]int8, m*k)
		b := make([]int8, n*k)
		i8Values(rng, a, "random")
		i8Values(rng, b, "random")
		c := make([]int32, m*n)
		p, err := PackI8(n, k, b, k)
		if err != nil {
			t.Fatal(err)
		}
		if allocs := testing.AllocsPerRun(10, func() {
			if err := GemmI8Packed(m, a, k, p, c, n); err != nil {
				t.Fatal(err)
			}
		}); allocs != 0 {
			t.Errorf("%s: %v allocations per GemmI8Packed", ImplI8(), allocs)
		}
	})
}
