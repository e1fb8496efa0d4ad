package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// sgemmCase is one Sgemm call: shapes, flags, scalars, padding and offsets.
type sgemmCase struct {
	transA, transB bool
	m, n, k        int
	alpha, beta    float32
	padA, padB     int // extra elements per row beyond what is needed
	padC           int
	offA, offB     int // sub-slice start (unaligned data)
	offC           int
}

func (tc sgemmCase) String() string {
	t := func(b bool) string {
		if b {
			return "T"
		}
		return "N"
	}
	return fmt.Sprintf("%s%s m=%d n=%d k=%d alpha=%g beta=%g pad=%d,%d,%d off=%d,%d,%d",
		t(tc.transA), t(tc.transB), tc.m, tc.n, tc.k, tc.alpha, tc.beta,
		tc.padA, tc.padB, tc.padC, tc.offA, tc.offB, tc.offC)
}

// sgemmOperands builds random A, B and C for tc and returns them with their
// strides (slices already offset).
func sgemmOperands(rng *rand.Rand, tc sgemmCase) (a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	ar, ac := tc.m, tc.k
	if tc.transA {
		ar, ac = tc.k, tc.m
	}
	br, bc := tc.k, tc.n
	if tc.transB {
		br, bc = tc.n, tc.k
	}
	lda, ldb, ldc = max(ac, 1)+tc.padA, max(bc, 1)+tc.padB, max(tc.n, 1)+tc.padC
	fill := func(rows, ld, off int) []float32 {
		x := make([]float32, off+rows*ld)
		for i := range x {
			x[i] = rng.Float32()*2 - 1
		}
		return x[off:]
	}
	return fill(ar, lda, tc.offA), lda, fill(br, ldb, tc.offB), ldb, fill(tc.m, ldc, tc.offC), ldc
}

// sgemmTol returns, for every element of C, the error bound we accept:
//
//	tol = 4·eps32·(k+2)·(|alpha|·Σ_p |op(A)_ip·op(B)_pj| + |beta·c_ij|) + tiny
//
// Both the reference and the implementation under test sum k products in
// float32, in different orders (blocking, FMA contraction), and each has a
// forward error of at most about (k+2)·eps32 times the sum of the absolute
// values of the terms (the classical γ_k bound for recursive summation, plus
// the alpha and beta roundings); the factor 4 covers the two of them with
// margin. The bound scales with k and with the magnitudes actually summed,
// so a dropped or duplicated term (about |a·b| ≈ 1/4 here) is far outside it.
func sgemmTol(tc sgemmCase, a []float32, lda int, b []float32, ldb int, c0 []float32, ldc int) []float64 {
	const eps = 1.0 / (1 << 23)
	tol := make([]float64, tc.m*tc.n)
	for i := 0; i < tc.m; i++ {
		for j := 0; j < tc.n; j++ {
			var s float64
			for p := 0; p < tc.k; p++ {
				var av, bv float32
				if tc.transA {
					av = a[p*lda+i]
				} else {
					av = a[i*lda+p]
				}
				if tc.transB {
					bv = b[j*ldb+p]
				} else {
					bv = b[p*ldb+j]
				}
				s += math.Abs(float64(av) * float64(bv))
			}
			s = math.Abs(float64(tc.alpha))*s + math.Abs(float64(tc.beta)*float64(c0[i*ldc+j]))
			tol[i*tc.n+j] = 4*eps*float64(tc.k+2)*s + 1e-30
		}
	}
	return tol
}

// sgemmCompare returns a description of the first element of got outside
// tol of want (m×n with stride ldc), and also fails on any difference in the
// padding between rows, which must be left untouched; "" means equal.
func sgemmCompare(m, n int, got, want []float32, ldc int, tol []float64) string {
	for i := range got {
		if i >= len(want) {
			break
		}
		r, col := i/ldc, i%ldc
		if r >= m || col >= n {
			if got[i] != want[i] && !(isNaN32(got[i]) && isNaN32(want[i])) {
				return fmt.Sprintf("element %d outside C changed: %g, want %g", i, got[i], want[i])
			}
			continue
		}
		g, w := got[i], want[i]
		if isNaN32(g) || isNaN32(w) {
			if isNaN32(g) != isNaN32(w) {
				return fmt.Sprintf("C[%d,%d] = %g, want %g", r, col, g, w)
			}
			continue
		}
		if d := math.Abs(float64(g) - float64(w)); !(d <= tol[r*n+col]) {
			return fmt.Sprintf("C[%d,%d] = %g, want %g (|diff| %g > tol %g)", r, col, g, w, d, tol[r*n+col])
		}
	}
	return ""
}

func isNaN32(x float32) bool { return x != x }

// sgemmRunCase runs one case through sgemm and sgemmRef and compares.
func sgemmRunCase(t *testing.T, rng *rand.Rand, name string, sgemm func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) error, tc sgemmCase) {
	t.Helper()
	a, lda, b, ldb, c, ldc := sgemmOperands(rng, tc)
	want := append([]float32(nil), c...)
	got := append([]float32(nil), c...)
	sgemmRef(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, want, ldc)
	if err := sgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, got, ldc); err != nil {
		t.Fatalf("%s %v: %v", name, tc, err)
	}
	tol := sgemmTol(tc, a, lda, b, ldb, c, ldc)
	if msg := sgemmCompare(tc.m, tc.n, got, want, ldc, tol); msg != "" {
		t.Fatalf("%s %v: %s", name, tc, msg)
	}
}

var sgemmSizes = []int{0, 1, 2, 3, 5, 7, 15, 16, 17, 31, 33, 63, 65}

// sgemmRandomCase draws a case from the size list with random flags,
// scalars, padding and offsets.
func sgemmRandomCase(rng *rand.Rand, m, n, k int) sgemmCase {
	alphas := []float32{1, -0.5, 0}
	betas := []float32{0, 1, 0.3}
	return sgemmCase{
		transA: rng.IntN(2) == 1, transB: rng.IntN(2) == 1,
		m: m, n: n, k: k,
		alpha: alphas[rng.IntN(len(alphas))], beta: betas[rng.IntN(len(betas))],
		padA: rng.IntN(3) * rng.IntN(5), padB: rng.IntN(3) * rng.IntN(5), padC: rng.IntN(3) * rng.IntN(5),
		offA: rng.IntN(4), offB: rng.IntN(4), offC: rng.IntN(4),
	}
}

// sgemmShapes returns the shapes of the sweep: random picks from
// sgemmSizes (every size appears as m, n and k), then larger shapes that
// cross the kc/mc/nc blocks of every driver.
func sgemmShapes(rng *rand.Rand) [][3]int {
	var shapes [][3]int
	picks := 150
	if runtime.GOARCH == "arm64" || testing.Short() {
		picks = 50
	}
	for _, s := range sgemmSizes {
		shapes = append(shapes, [3]int{s, sgemmSizes[rng.IntN(len(sgemmSizes))], sgemmSizes[rng.IntN(len(sgemmSizes))]})
		shapes = append(shapes, [3]int{sgemmSizes[rng.IntN(len(sgemmSizes))], s, sgemmSizes[rng.IntN(len(sgemmSizes))]})
		shapes = append(shapes, [3]int{sgemmSizes[rng.IntN(len(sgemmSizes))], sgemmSizes[rng.IntN(len(sgemmSizes))], s})
	}
	for range picks {
		shapes = append(shapes, [3]int{sgemmSizes[rng.IntN(len(sgemmSizes))], sgemmSizes[rng.IntN(len(sgemmSizes))], sgemmSizes[rng.IntN(len(sgemmSizes))]})
	}
	shapes = append(shapes, [3]int{200, 130, 257}, [3]int{97, 50, 513}, [3]int{13, 1030, 40})
	if runtime.GOARCH != "arm64" && !testing.Short() {
		shapes = append(shapes, [3]int{250, 1100, 300}, [3]int{32, 784, 1024})
	}
	return shapes
}

// TestSgemm checks every available implementation against sgemmRef.
func TestSgemm(t *testing.T) {
	forEachImpl(t, func(t *testing.T, name string) {
		rng := rand.New(rand.NewPCG(1, 2))
		for _, s := range sgemmShapes(rng) {
			sgemmRunCase(t, rng, name, Sgemm, sgemmRandomCase(rng, s[0], s[1], s[2]))
		}
		// All four transpose combinations on one shape with tails.
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				tc := sgemmRandomCase(rng, 37, 45, 70)
				tc.transA, tc.transB = ta, tb
				sgemmRunCase(t, rng, name, Sgemm, tc)
			}
		}
	})
}

// TestSgemmBlockedSmallBlocks runs every registered micro-kernel (and the
// portable Go one) through the blocked driver with tiny kc/mc/nc, so that
// every kind of block boundary, edge tile and beta-on-first-block-only path
// is crossed by small, fast shapes.
func TestSgemmBlockedSmallBlocks(t *testing.T) {
	type variant struct {
		name string
		g    *sgemmBlocked
	}
	vs := []variant{{"go4x4", newSgemmBlocked(sgemmMicroGo, 4, 4, 5, 9, 10)}}
	for _, name := range Available() {
		if g := sgemmBlockedByImpl[name]; g != nil {
			vs = append(vs, variant{name, newSgemmBlocked(g.micro, g.mr, g.nr, 3, g.mr+1, g.nr+1)})
			vs = append(vs, variant{name + "/kc7", newSgemmBlocked(g.micro, g.mr, g.nr, 7, 3*g.mr, 2*g.nr)})
		}
	}
	for _, v := range vs {
		t.Run(v.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			call := func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) error {
				v.g.sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
				return nil
			}
			n := 120
			if runtime.GOARCH == "arm64" || testing.Short() {
				n = 40
			}
			for range n {
				s := [3]int{sgemmSizes[rng.IntN(len(sgemmSizes))], sgemmSizes[rng.IntN(len(sgemmSizes))], sgemmSizes[rng.IntN(len(sgemmSizes))]}
				sgemmRunCase(t, rng, v.name, call, sgemmRandomCase(rng, s[0], s[1], s[2]))
			}
		})
	}
}

// TestSgemmCompareCanFail makes sure the comparison used above rejects a
// result with one product dropped, and one that wrote outside C.
func TestSgemmCompareCanFail(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	tc := sgemmCase{m: 7, n: 9, k: 300, alpha: 1, beta: 0.3, padC: 2}
	a, lda, b, ldb, c, ldc := sgemmOperands(rng, tc)
	want := append([]float32(nil), c...)
	sgemmRef(false, false, tc.m, tc.n, tc.k, 1, a, lda, b, ldb, tc.beta, want, ldc)
	tol := sgemmTol(tc, a, lda, b, ldb, c, ldc)
	if msg := sgemmCompare(tc.m, tc.n, want, want, ldc, tol); msg != "" {
		t.Fatalf("reference differs from itself: %s", msg)
	}
	bad := append([]float32(nil), want...)
	bad[3*ldc+4] -= a[3*lda+17] * b[17*ldb+4] // drop one product
	if sgemmCompare(tc.m, tc.n, bad, want, ldc, tol) == "" {
		t.Error("dropping one product was not detected")
	}
	bad = append([]float32(nil), want...)
	bad[2*ldc+tc.n] = 42 // padding between rows
	if sgemmCompare(tc.m, tc.n, bad, want, ldc, tol) == "" {
		t.Error("a write into the row padding was not detected")
	}
}

// TestSgemmSpecialValues checks, for every implementation, that beta = 0
// ignores NaN in C, that NaN in A reaches exactly its row of C, and that
// k = 0 gives beta·C.
func TestSgemmSpecialValues(t *testing.T) {
	nan := float32(math.NaN())
	forEachImpl(t, func(t *testing.T, name string) {
		rng := rand.New(rand.NewPCG(7, 8))
		for _, sz := range [][3]int{{3, 5, 4}, {37, 45, 70}, {64, 64, 300}} {
			m, n, k := sz[0], sz[1], sz[2]
			for _, tr := range [][2]bool{{false, false}, {true, true}} {
				tc := sgemmCase{transA: tr[0], transB: tr[1], m: m, n: n, k: k, alpha: 1.5}
				a, lda, b, ldb, c, ldc := sgemmOperands(rng, tc)
				// beta = 0: C full of NaN must be overwritten.
				for i := range c {
					c[i] = nan
				}
				if err := Sgemm(tc.transA, tc.transB, m, n, k, 1.5, a, lda, b, ldb, 0, c, ldc); err != nil {
					t.Fatal(err)
				}
				for i := range c {
					if isNaN32(c[i]) {
						t.Fatalf("%dx%dx%d beta=0: NaN of C propagated to C[%d]", m, n, k, i)
					}
				}
				// NaN in A at row r: row r of C is NaN, the others are not.
				r := m / 2
				if tc.transA {
					a[(k/2)*lda+r] = nan
				} else {
					a[r*lda+k/2] = nan
				}
				if err := Sgemm(tc.transA, tc.transB, m, n, k, 1, a, lda, b, ldb, 0.5, c, ldc); err != nil {
					t.Fatal(err)
				}
				for i := 0; i < m; i++ {
					for j := 0; j < n; j++ {
						if isNaN32(c[i*ldc+j]) != (i == r) {
							t.Fatalf("%dx%dx%d NaN in A row %d: C[%d,%d] = %g", m, n, k, r, i, j, c[i*ldc+j])
						}
					}
				}
			}
			// k = 0: C = beta·C, and C = 0 for beta = 0 even over NaN.
			c := make([]float32, m*n)
			for i := range c {
				c[i] = float32(i%7) - 3
			}
			if err := Sgemm(false, false, m, n, 0, 1, nil, 1, nil, n, 0.5, c, n); err != nil {
				t.Fatal(err)
			}
			for i := range c {
				if want := 0.5 * (float32(i%7) - 3); c[i] != want {
					t.Fatalf("k=0: C[%d] = %g, want %g", i, c[i], want)
				}
			}
			c[0] = nan
			if err := Sgemm(true, true, m, n, 0, 1, nil, m, nil, 1, 0, c, n); err != nil {
				t.Fatal(err)
			}
			for i := range c {
				if c[i] != 0 {
					t.Fatalf("k=0 beta=0: C[%d] = %g, want 0", i, c[i])
				}
			}
		}
	})
}

// TestSgemmBadArgs checks that invalid arguments return an error and do
// not panic, and that m or n of 0 with empty slices is fine.
func TestSgemmBadArgs(t *testing.T) {
	buf := make([]float32, 100)
	cases := []struct {
		name           string
		transA, transB bool
		m, n, k        int
		a              []float32
		lda            int
		b              []float32
		ldb            int
		c              []float32
		ldc            int
		ok             bool
	}{
		{"negative m", false, false, -1, 2, 2, buf, 2, buf, 2, buf, 2, false},
		{"negative n", false, false, 2, -1, 2, buf, 2, buf, 2, buf, 2, false},
		{"negative k", false, false, 2, 2, -3, buf, 2, buf, 2, buf, 2, false},
		{"lda small", false, false, 3, 3, 4, buf, 3, buf, 3, buf, 3, false},
		{"lda small transA", true, false, 3, 3, 4, buf, 2, buf, 3, buf, 3, false},
		{"ldb small transB", false, true, 3, 5, 4, buf, 4, buf, 3, buf, 5, false},
		{"ldc small", false, false, 3, 3, 3, buf, 3, buf, 3, buf, 2, false},
		{"A short", false, false, 10, 10, 10, buf[:99], 10, buf, 10, buf, 10, false},
		{"B short", false, false, 10, 10, 10, buf, 10, buf[:91], 10, buf, 10, false},
		{"C short", false, false, 10, 10, 10, buf, 10, buf, 10, buf[:50], 10, false},
		{"C short by stride", false, false, 5, 5, 5, buf, 5, buf, 5, buf, 25, false},
		{"ldc zero", false, false, 0, 0, 0, nil, 1, nil, 1, nil, 0, false},
		{"empty m", false, false, 0, 5, 5, nil, 5, buf, 5, nil, 5, true},
		{"empty all", true, true, 0, 0, 0, nil, 1, nil, 1, nil, 1, true},
		{"exact lengths", false, false, 10, 10, 10, buf, 10, buf, 10, buf, 10, true},
		// (m−1)·ldc wraps int: the length check must not see a small need.
		{"C rows × stride wraps", false, false, math.MaxInt/4 + 2, 1, 0, nil, 1, nil, 1, buf, 4, false},
	}
	forEachImpl(t, func(t *testing.T, name string) {
		for _, tc := range cases {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s %s: panic: %v", name, tc.name, r)
					}
				}()
				err := Sgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, 1, tc.a, tc.lda, tc.b, tc.ldb, 0, tc.c, tc.ldc)
				if (err == nil) != tc.ok {
					t.Errorf("%s %s: err = %v, want ok=%v", name, tc.name, err, tc.ok)
				}
				if err != nil && !strings.Contains(err.Error(), "Sgemm") {
					t.Errorf("%s %s: error %q lacks context", name, tc.name, err)
				}
			}()
		}
	})
}

// TestSgemmRefVsGonum checks sgemmRef itself against gonum's pure-Go
// blas32.Gemm, an independent implementation, on all four transposes.
func TestSgemmRefVsGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, s := range [][3]int{{1, 1, 1}, {5, 7, 3}, {17, 33, 65}, {40, 31, 130}, {3, 2, 0}} {
		for _, ta := range []bool{false, true} {
			for _, tb := range []bool{false, true} {
				tc := sgemmRandomCase(rng, s[0], s[1], s[2])
				tc.transA, tc.transB = ta, tb
				tc.alpha, tc.beta = -0.5, 0.3
				a, lda, b, ldb, c, ldc := sgemmOperands(rng, tc)
				want := append([]float32(nil), c...)
				got := append([]float32(nil), c...)
				sgemmRef(ta, tb, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, got, ldc)
				ar, ac := tc.m, tc.k
				if ta {
					ar, ac = tc.k, tc.m
				}
				br, bc := tc.k, tc.n
				if tb {
					br, bc = tc.n, tc.k
				}
				gen := func(rows, cols, ld int, x []float32) blas32.General {
					return blas32.General{Rows: rows, Cols: cols, Stride: ld, Data: x[:max((rows-1)*ld+cols, 0)]}
				}
				tr := func(b bool) blas.Transpose {
					if b {
						return blas.Trans
					}
					return blas.NoTrans
				}
				if tc.k == 0 {
					// gonum's Gemm panics on a k = 0 matrix; beta·C is
					// what BLAS defines.
					for i := 0; i < tc.m; i++ {
						for j := 0; j < tc.n; j++ {
							want[i*ldc+j] *= tc.beta
						}
					}
				} else {
					blas32.Gemm(tr(ta), tr(tb), tc.alpha, gen(ar, ac, lda, a), gen(br, bc, ldb, b), tc.beta, gen(tc.m, tc.n, ldc, want))
				}
				tol := sgemmTol(tc, a, lda, b, ldb, c, ldc)
				if msg := sgemmCompare(tc.m, tc.n, got, want, ldc, tol); msg != "" {
					t.Fatalf("sgemmRef vs gonum %v: %s", tc, msg)
				}
			}
		}
	}
}

// TestSgemmConcurrent runs Sgemm from several goroutines at once (shared
// packing-buffer pool) and checks every result.
func TestSgemmConcurrent(t *testing.T) {
	forEachImpl(t, func(t *testing.T, name string) {
		var wg sync.WaitGroup
		errs := make([]string, 4)
		for g := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(g), 11))
				for range 5 {
					tc := sgemmRandomCase(rng, 20+rng.IntN(60), 20+rng.IntN(60), 20+rng.IntN(300))
					a, lda, b, ldb, c, ldc := sgemmOperands(rng, tc)
					want := append([]float32(nil), c...)
					sgemmRef(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, want, ldc)
					tol := sgemmTol(tc, a, lda, b, ldb, c, ldc)
					if err := Sgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, tc.alpha, a, lda, b, ldb, tc.beta, c, ldc); err != nil {
						errs[g] = err.Error()
						return
					}
					if msg := sgemmCompare(tc.m, tc.n, c, want, ldc, tol); msg != "" {
						errs[g] = fmt.Sprintf("%v: %s", tc, msg)
						return
					}
				}
			}()
		}
		wg.Wait()
		for _, e := range errs {
			if e != "" {
				t.Fatal(e)
			}
		}
	})
}

// TestSgemmAllocs checks that Sgemm does not allocate after warm-up, on
// small, edge-tile and multi-block shapes.
func TestSgemmAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 13))
	forEachImpl(t, func(t *testing.T, name string) {
		for _, s := range [][3]int{{3, 4, 5}, {37, 45, 70}, {64, 64, 300}} {
			tc := sgemmCase{transA: true, m: s[0], n: s[1], k: s[2], alpha: 1, beta: 0.5}
			a, lda, b, ldb, c, ldc := sgemmOperands(rng, tc)
			allocs := testing.AllocsPerRun(20, func() {
				if err := Sgemm(tc.transA, tc.transB, tc.m, tc.n, tc.k, 1, a, lda, b, ldb, 0.5, c, ldc); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%s %v: %v allocations per call, want 0", name, s, allocs)
			}
		}
	})
}

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

// TestSgemmByRows covers the matrix-vector path of Sgemm and SgemmWork (C =
// A·Bᵀ with alpha 1 and one or two rows, a fully connected layer at batch 1
// or 2) on every implementation: it must be taken where there is a blocked
// driver and agree with the reference within sgemmTol, beta 0 (C not read)
// and beta ≠ 0, with padding and offsets.
func TestSgemmByRows(t *testing.T) {
	forEachImpl(t, func(t *testing.T, name string) {
		if got := sgemmByRows(false, true, 1, 70, 1); got != (cur.sgemmDriver != nil) {
			t.Errorf("sgemmByRows = %v on %s, want %v", got, name, cur.sgemmDriver != nil)
		}
		rng := rand.New(rand.NewPCG(9, 10))
		work := func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) error {
			return SgemmWork(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, make([]float32, SgemmWorkSize(m, n, k)))
		}
		for _, m := range []int{1, 2} {
			for _, beta := range []float32{0, 0.3} {
				for _, nk := range [][2]int{{45, 70}, {1600, 1024}, {3, 1}} {
					tc := sgemmCase{transB: true, m: m, n: nk[0], k: nk[1], alpha: 1, beta: beta, padA: 3, padB: 1, padC: 2, offA: 1, offB: 2, offC: 3}
					sgemmRunCase(t, rng, name+" Sgemm", Sgemm, tc)
					sgemmRunCase(t, rng, name+" SgemmWork", work, tc)
				}
			}
		}
	})
}
