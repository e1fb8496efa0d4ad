package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// Tolerances. Every implementation is compared with the pure-Go reference,
// not with exact arithmetic, so a bound must cover the error of both.
//
// Reductions (gemvN, gemvT, mulAddRows, the dot products of softmaxColsGrad
// and squashGrad): a float32 sum of K products, in any order, with or
// without FMA, is within γ_K·Σ|terms| of the exact sum, γ_K ≈ K·u with
// u = 2⁻²⁴ the unit roundoff (Higham, Accuracy and Stability, §3.1). Ref and
// SIMD each obey it, so |simd − ref| ≤ 2·K·u·Σ|terms| = K·eps32·Σ|terms|.
// We allow 2·(K+1)·eps32·Σ|terms| (K+1 counts the initial y value as a term;
// the factor 2 is slack for the few extra roundings of the epilogue).
//
// exp-based results (softmaxCols, squash, squashGrad): relative
// expRel = 32·eps32 ≈ 3.8e-6 (16 ulp: the vectorised exp polynomials are
// ~2 ulp, plus a handful of correctly rounded divisions/sqrt), plus the
// reduction term above for the sums over rows or capsule components. Where
// the reference itself cancels catastrophically (Mazzia's 1 − exp(−n) for
// tiny capsules) the absolute error of a few ulp of exp(−n) is added,
// divided by the powers of n it is scaled by; see checkSquash.
const (
	unitRound = 1.0 / (1 << 24) // u, float32 unit roundoff
	eps32     = 1.0 / (1 << 23) // float32 machine epsilon, 2u
	expRel    = 32 * eps32      // relative slack for exp-based results
	tinyAbs   = 1e-37           // absolute floor: below the smallest normal float32 (1.18e-38) exp may flush to 0
)

// opsTestSizes are the rows/cols every primitive is swept over: 0 and 1,
// tails around the 4-, 8- and 16-lane vector widths, and the paper's 1152.
var opsTestSizes = []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 1152}

// opsTestSmall reports whether to use a smaller sweep (arm64 runs under qemu).
func opsTestSmall() bool { return runtime.GOARCH == "arm64" || testing.Short() }

// opsShapes returns the (rows, cols) pairs of the sweep.
func opsShapes() [][2]int {
	limit := 1 << 30
	if opsTestSmall() {
		limit = 20000
	}
	var out [][2]int
	for _, r := range opsTestSizes {
		for _, c := range opsTestSizes {
			if r*c <= limit {
				out = append(out, [2]int{r, c})
			}
		}
	}
	return out
}

// guardBits is a quiet NaN with a payload, written around and between the
// data of every test buffer: reading it poisons a result, and writing over
// it is detected.
const guardBits = 0x7fc5a5a5

// tbuf is a test buffer: its data starts at a random offset 0..3 of a larger
// allocation (so SIMD code sees unaligned addresses) and is surrounded by
// guard NaNs. For a matrix with a row stride larger than its width, the
// padding between rows holds guards too.
type tbuf struct {
	all             []float32
	off, n          int
	rows, cols, ld  int
	before, touched []float32
}

const tbufTail = 8 // guard elements after the data

func newTMat(rng *rand.Rand, rows, cols, ld int, gen func(r, c int) float32) *tbuf {
	n := 0 // (rows−1)·ld + cols: the reference slices every row, even empty ones
	if rows > 0 {
		n = (rows-1)*ld + cols
	}
	b := &tbuf{off: rng.IntN(4), n: n, rows: rows, cols: cols, ld: ld}
	b.all = make([]float32, b.off+n+tbufTail)
	g := math.Float32frombits(guardBits)
	for i := range b.all {
		b.all[i] = g
	}
	d := b.s()
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			d[r*ld+c] = gen(r, c)
		}
	}
	b.before = append([]float32(nil), b.all...)
	return b
}

func newTVec(rng *rand.Rand, n int, gen func(i int) float32) *tbuf {
	return newTMat(rng, 1, n, n, func(_, c int) float32 { return gen(c) })
}

// s returns the data, with its capacity cut at its length.
func (b *tbuf) s() []float32 { return b.all[b.off : b.off+b.n : b.off+b.n] }

// inData reports whether index i of all is a data element.
func (b *tbuf) inData(i int) bool {
	i -= b.off
	if i < 0 || i >= b.n {
		return false
	}
	return i%b.ld < b.cols
}

// unchanged checks that a read-only buffer was not written at all.
func (b *tbuf) unchanged(name string) error {
	for i, v := range b.all {
		if math.Float32bits(v) != math.Float32bits(b.before[i]) {
			return fmt.Errorf("read-only %s modified at element %d (offset %d): %g → %g", name, i-b.off, b.off, b.before[i], v)
		}
	}
	return nil
}

// guardsIntact checks that an output buffer was written only in its data.
func (b *tbuf) guardsIntact(name string) error {
	for i, v := range b.all {
		if !b.inData(i) && math.Float32bits(v) != guardBits {
			return fmt.Errorf("%s written outside its data at element %d (offset %d, rows %d cols %d ld %d): %g", name, i-b.off, b.off, b.rows, b.cols, b.ld, v)
		}
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// within reports whether |got−want| ≤ tol (NaN in either fails).
func within(got, want float32, tol float64) bool {
	return math.Abs(float64(got)-float64(want)) <= tol
}

// mismatch describes a failed comparison; what is formatted from format and
// args only here, off the hot path.
func mismatch(got, want float32, tol float64, format string, args ...any) error {
	return fmt.Errorf("%s = %g, ref %g, |diff| %.3g > tol %.3g", fmt.Sprintf(format, args...), got, want,
		math.Abs(float64(got)-float64(want)), tol)
}

func uni(rng *rand.Rand) float32 { return float32(2*rng.Float64() - 1) }

// pickLd returns a row stride: tight, or larger than the width.
func pickLd(rng *rand.Rand, cols int) int {
	return max(cols, 1) + []int{0, 0, 1, 3, 16}[rng.IntN(5)]
}

func checkGemvN(o *ops, rng *rand.Rand, m, n int) error {
	lda := pickLd(rng, n)
	A := newTMat(rng, m, n, lda, func(int, int) float32 { return uni(rng) })
	x := newTVec(rng, n, func(int) float32 { return uni(rng) })
	y := newTVec(rng, m, func(int) float32 { return uni(rng) })
	y0 := append([]float32(nil), y.s()...)
	want := append([]float32(nil), y0...)
	gemvNRef(m, n, A.s(), lda, x.s(), want)
	o.gemvN(m, n, A.s(), lda, x.s(), y.s())
	if err := firstErr(A.unchanged("a"), x.unchanged("x"), y.guardsIntact("y")); err != nil {
		return fmt.Errorf("gemvN m=%d n=%d lda=%d: %w", m, n, lda, err)
	}
	a, xs, ys := A.s(), x.s(), y.s()
	for r := 0; r < m; r++ {
		sum := math.Abs(float64(y0[r]))
		for c := 0; c < n; c++ {
			sum += math.Abs(float64(a[r*lda+c]) * float64(xs[c]))
		}
		if tol := 2 * eps32 * float64(n+1) * sum; !within(ys[r], want[r], tol) {
			return mismatch(ys[r], want[r], tol, "gemvN m=%d n=%d lda=%d: y[%d]", m, n, lda, r)
		}
	}
	return nil
}

func checkGemvT(o *ops, rng *rand.Rand, m, n int) error {
	lda := pickLd(rng, n)
	A := newTMat(rng, m, n, lda, func(int, int) float32 { return uni(rng) })
	x := newTVec(rng, m, func(int) float32 { return uni(rng) })
	y := newTVec(rng, n, func(int) float32 { return uni(rng) })
	y0 := append([]float32(nil), y.s()...)
	want := append([]float32(nil), y0...)
	gemvTRef(m, n, A.s(), lda, x.s(), want)
	o.gemvT(m, n, A.s(), lda, x.s(), y.s())
	if err := firstErr(A.unchanged("a"), x.unchanged("x"), y.guardsIntact("y")); err != nil {
		return fmt.Errorf("gemvT m=%d n=%d lda=%d: %w", m, n, lda, err)
	}
	a, xs, ys := A.s(), x.s(), y.s()
	for c := 0; c < n; c++ {
		sum := math.Abs(float64(y0[c]))
		for r := 0; r < m; r++ {
			sum += math.Abs(float64(a[r*lda+c]) * float64(xs[r]))
		}
		if tol := 2 * eps32 * float64(m+1) * sum; !within(ys[c], want[c], tol) {
			return mismatch(ys[c], want[c], tol, "gemvT m=%d n=%d lda=%d: y[%d]", m, n, lda, c)
		}
	}
	return nil
}

func checkGer(o *ops, rng *rand.Rand, m, n int) error {
	lda := pickLd(rng, n)
	A := newTMat(rng, m, n, lda, func(int, int) float32 { return uni(rng) })
	x := newTVec(rng, m, func(int) float32 { return uni(rng) })
	y := newTVec(rng, n, func(int) float32 { return uni(rng) })
	a0 := append([]float32(nil), A.s()...)
	want := append([]float32(nil), a0...)
	gerRef(m, n, x.s(), y.s(), want, lda)
	o.ger(m, n, x.s(), y.s(), A.s(), lda)
	if err := firstErr(x.unchanged("x"), y.unchanged("y"), A.guardsIntact("a")); err != nil {
		return fmt.Errorf("ger m=%d n=%d lda=%d: %w", m, n, lda, err)
	}
	a, xs, ys := A.s(), x.s(), y.s()
	for r := 0; r < m; r++ {
		for c := 0; c < n; c++ {
			i := r*lda + c
			sum := math.Abs(float64(a0[i])) + math.Abs(float64(xs[r])*float64(ys[c]))
			if tol := 2 * eps32 * 2 * sum; !within(a[i], want[i], tol) {
				return mismatch(a[i], want[i], tol, "ger m=%d n=%d lda=%d: a[%d,%d]", m, n, lda, r, c)
			}
		}
	}
	return nil
}

func checkMulAddRows(o *ops, rng *rand.Rand, k, n int) error {
	lda, ldx := pickLd(rng, n), pickLd(rng, n)
	A := newTMat(rng, k, n, lda, func(int, int) float32 { return uni(rng) })
	X := newTMat(rng, k, n, ldx, func(int, int) float32 { return uni(rng) })
	y := newTVec(rng, n, func(int) float32 { return uni(rng) })
	y0 := append([]float32(nil), y.s()...)
	want := append([]float32(nil), y0...)
	mulAddRowsRef(k, n, A.s(), lda, X.s(), ldx, want)
	o.mulAddRows(k, n, A.s(), lda, X.s(), ldx, y.s())
	if err := firstErr(A.unchanged("a"), X.unchanged("x"), y.guardsIntact("y")); err != nil {
		return fmt.Errorf("mulAddRows k=%d n=%d lda=%d ldx=%d: %w", k, n, lda, ldx, err)
	}
	a, xs, ys := A.s(), X.s(), y.s()
	for c := 0; c < n; c++ {
		sum := math.Abs(float64(y0[c]))
		for l := 0; l < k; l++ {
			sum += math.Abs(float64(a[l*lda+c]) * float64(xs[l*ldx+c]))
		}
		if tol := 2 * eps32 * float64(k+1) * sum; !within(ys[c], want[c], tol) {
			return mismatch(ys[c], want[c], tol, "mulAddRows k=%d n=%d lda=%d ldx=%d: y[%d]", k, n, lda, ldx, c)
		}
	}
	return nil
}

// softmaxLogits fills a rows×n logit matrix whose columns cycle through:
// moderate values, all-equal, ±80 (needs max subtraction), ≈100 (exp
// overflows without it), a ramp over [−77, 10] (exp over its whole range
// down to ≈1e-38) and wide values in [−30, 30].
func softmaxLogits(rng *rand.Rand, rows, n int) func(r, c int) float32 {
	shift := rng.IntN(6)
	eq := make([]float32, n)
	for i := range eq {
		eq[i] = 5 * uni(rng)
	}
	return func(r, c int) float32 {
		switch (c + shift) % 6 {
		case 0:
			return 5 * uni(rng)
		case 1:
			return eq[c]
		case 2:
			if (r+c)%2 == 0 {
				return 80
			}
			return -80
		case 3:
			return 100 + uni(rng)
		case 4:
			return 10 - 87*float32(r)/float32(max(rows-1, 1))
		default:
			return 30 * uni(rng)
		}
	}
}

func checkSoftmaxCols(o *ops, rng *rand.Rand, rows, n int) error {
	L := newTMat(rng, rows, n, n, softmaxLogits(rng, rows, n))
	C := newTMat(rng, rows, n, n, func(int, int) float32 { return float32(math.NaN()) })
	want := make([]float32, rows*n)
	softmaxColsRef(rows, n, L.s(), want)
	o.softmaxCols(rows, n, L.s(), C.s())
	if err := firstErr(L.unchanged("l"), C.guardsIntact("c")); err != nil {
		return fmt.Errorf("softmaxCols rows=%d n=%d: %w", rows, n, err)
	}
	c := C.s()
	rel := expRel + 2*unitRound*float64(rows)
	for i := range want {
		if tol := rel*math.Abs(float64(want[i])) + tinyAbs; !within(c[i], want[i], tol) {
			return mismatch(c[i], want[i], tol, "softmaxCols rows=%d n=%d: c[%d,%d]", rows, n, i/n, i%n)
		}
	}
	return nil
}

func checkSoftmaxColsGrad(o *ops, rng *rand.Rand, rows, n int) error {
	// c: a genuine softmax output (positive, columns sum to 1).
	cs := make([]float32, rows*n)
	softmaxColsRef(rows, n, newTMat(rng, rows, n, n, softmaxLogits(rng, rows, n)).s(), cs)
	Cm := newTMat(rng, rows, n, n, func(r, i int) float32 { return cs[r*n+i] })
	DC := newTMat(rng, rows, n, n, func(int, int) float32 { return 3 * uni(rng) })
	DL := newTMat(rng, rows, n, n, func(int, int) float32 { return float32(math.NaN()) })
	want := make([]float32, rows*n)
	softmaxColsGradRef(rows, n, Cm.s(), DC.s(), want)
	o.softmaxColsGrad(rows, n, Cm.s(), DC.s(), DL.s())
	if err := firstErr(Cm.unchanged("c"), DC.unchanged("dc"), DL.guardsIntact("dl")); err != nil {
		return fmt.Errorf("softmaxColsGrad rows=%d n=%d: %w", rows, n, err)
	}
	c, dc, dl := Cm.s(), DC.s(), DL.s()
	for i := 0; i < n; i++ {
		var sum float64
		for r := 0; r < rows; r++ {
			sum += math.Abs(float64(c[r*n+i]) * float64(dc[r*n+i]))
		}
		for r := 0; r < rows; r++ {
			j := r*n + i
			// dot error ≤ 2(rows+1)·eps32·sum, then one subtraction and
			// one multiplication (2 more roundings of |dc|+|dot|).
			tol := math.Abs(float64(c[j])) * 2 * eps32 * (float64(rows+2)*sum + math.Abs(float64(dc[j])))
			if !within(dl[j], want[j], tol) {
				return mismatch(dl[j], want[j], tol, "softmaxColsGrad rows=%d n=%d: dl[%d,%d]", rows, n, r, i)
			}
		}
	}
	return nil
}

// softmaxRowLogits is softmaxLogits transposed: the rows of a rows×n logit
// matrix cycle through its columns' patterns.
func softmaxRowLogits(rng *rand.Rand, rows, n int) func(r, c int) float32 {
	g := softmaxLogits(rng, n, rows)
	return func(r, c int) float32 { return g(c, r) }
}

func checkSoftmaxRows(o *ops, rng *rand.Rand, rows, n int) error {
	L := newTMat(rng, rows, n, n, softmaxRowLogits(rng, rows, n))
	C := newTMat(rng, rows, n, n, func(int, int) float32 { return float32(math.NaN()) })
	want := make([]float32, rows*n)
	softmaxRowsRef(rows, n, L.s(), want)
	o.softmaxRows(rows, n, L.s(), C.s())
	if err := firstErr(L.unchanged("l"), C.guardsIntact("c")); err != nil {
		return fmt.Errorf("softmaxRows rows=%d n=%d: %w", rows, n, err)
	}
	c := C.s()
	// The sum runs over the n values of a row.
	rel := expRel + 2*unitRound*float64(n)
	for i := range want {
		if tol := rel*math.Abs(float64(want[i])) + tinyAbs; !within(c[i], want[i], tol) {
			return mismatch(c[i], want[i], tol, "softmaxRows rows=%d n=%d: c[%d,%d]", rows, n, i/n, i%n)
		}
	}
	return nil
}

func checkSoftmaxRowsGrad(o *ops, rng *rand.Rand, rows, n int) error {
	// c: a genuine softmax output (positive, rows sum to 1).
	cs := make([]float32, rows*n)
	softmaxRowsRef(rows, n, newTMat(rng, rows, n, n, softmaxRowLogits(rng, rows, n)).s(), cs)
	Cm := newTMat(rng, rows, n, n, func(r, i int) float32 { return cs[r*n+i] })
	DC := newTMat(rng, rows, n, n, func(int, int) float32 { return 3 * uni(rng) })
	DL := newTMat(rng, rows, n, n, func(int, int) float32 { return float32(math.NaN()) })
	want := make([]float32, rows*n)
	softmaxRowsGradRef(rows, n, Cm.s(), DC.s(), want)
	o.softmaxRowsGrad(rows, n, Cm.s(), DC.s(), DL.s())
	if err := firstErr(Cm.unchanged("c"), DC.unchanged("dc"), DL.guardsIntact("dl")); err != nil {
		return fmt.Errorf("softmaxRowsGrad rows=%d n=%d: %w", rows, n, err)
	}
	c, dc, dl := Cm.s(), DC.s(), DL.s()
	for r := 0; r < rows; r++ {
		var sum float64
		for i := 0; i < n; i++ {
			sum += math.Abs(float64(c[r*n+i]) * float64(dc[r*n+i]))
		}
		for i := 0; i < n; i++ {
			j := r*n + i
			// dot error ≤ 2(n+1)·eps32·sum, then one subtraction and one
			// multiplication (2 more roundings of |dc|+|dot|).
			tol := math.Abs(float64(c[j])) * 2 * eps32 * (float64(n+2)*sum + math.Abs(float64(dc[j])))
			if !within(dl[j], want[j], tol) {
				return mismatch(dl[j], want[j], tol, "softmaxRowsGrad rows=%d n=%d: dl[%d,%d]", rows, n, r, i)
			}
		}
	}
	return nil
}

// squashInput returns d×n capsules (component-major) cycling through
// moderate (|s| ~ 1), tiny (|s| ~ 1e-4), large (|s| ~ 1e3), zero and
// unit-scale random capsules.
func squashInput(rng *rand.Rand, d, n int) func(l, i int) float32 {
	shift := rng.IntN(5)
	sd := float32(math.Sqrt(float64(max(d, 1)) / 3)) // |s| of uniform[-1,1]^d ≈ sd
	return func(_, i int) float32 {
		switch (i + shift) % 5 {
		case 0:
			return 2 * uni(rng) / sd
		case 1:
			return 1e-4 * uni(rng) / sd
		case 2:
			return 1e3 * uni(rng) / sd
		case 3:
			return 0
		default:
			return uni(rng)
		}
	}
}

// squashTol returns, for one capsule of squared length q (float64, from
// float32 data), the factor f, the derivative term h and their tolerances.
// rel covers the float32 sum of d squares (relative ≤ d·u, and f, h depend
// on q at most like q^{±3/2}), sqrt and divisions and exp. For Mazzia, the
// reference computes 1 − e with e = exp(−n) in float32, which cancels when
// n is small: a few ulp of e (4·eps32·e) become an absolute error, divided
// by n in f and by n³ in h.
func squashTol(kind Squash, d int, q float64) (f, tf, h, th float64) {
	rel := expRel + 3*unitRound*float64(d)
	n := math.Sqrt(q + SquashEps)
	switch kind {
	case SquashSabour:
		a := q / (1 + q)
		f = a / n
		t1, t2 := 2/((1+q)*(1+q)*n), a/(n*n*n)
		h = t1 - t2
		return f, rel * f, h, rel * (math.Abs(t1) + math.Abs(t2))
	default:
		e := math.Exp(-n)
		f = -math.Expm1(-n) / n
		t1, t2 := e/(n*n), f/(n*n)
		h = t1 - t2
		ce := 4 * eps32 * e
		return f, rel*f + ce/n, h, rel*(math.Abs(t1)+math.Abs(t2)) + ce/(n*n*n)
	}
}

func checkSquash(o *ops, rng *rand.Rand, kind Squash, d, n int) error {
	S := newTMat(rng, d, n, n, squashInput(rng, d, n))
	V := newTMat(rng, d, n, n, func(int, int) float32 { return float32(math.NaN()) })
	want := make([]float32, d*n)
	squashRef(kind, d, n, S.s(), want)
	o.squash(kind, d, n, S.s(), V.s())
	if err := firstErr(S.unchanged("s"), V.guardsIntact("v")); err != nil {
		return fmt.Errorf("squash %v d=%d n=%d: %w", kind, d, n, err)
	}
	s, v := S.s(), V.s()
	for i := 0; i < n; i++ {
		var q float64
		for l := 0; l < d; l++ {
			q += float64(s[l*n+i]) * float64(s[l*n+i])
		}
		f, tf, _, _ := squashTol(kind, d, q)
		for l := 0; l < d; l++ {
			j := l*n + i
			sl := math.Abs(float64(s[j]))
			tol := sl*tf + 2*eps32*sl*f + tinyAbs
			if !within(v[j], want[j], tol) {
				return mismatch(v[j], want[j], tol, "squash %v d=%d n=%d: v[%d,%d] (|s|²=%.3g)", kind, d, n, l, i, q)
			}
		}
	}
	return nil
}

func checkSquashGrad(o *ops, rng *rand.Rand, kind Squash, d, n int) error {
	S := newTMat(rng, d, n, n, squashInput(rng, d, n))
	DV := newTMat(rng, d, n, n, func(int, int) float32 { return uni(rng) })
	DS := newTMat(rng, d, n, n, func(int, int) float32 { return float32(math.NaN()) })
	want := make([]float32, d*n)
	squashGradRef(kind, d, n, S.s(), DV.s(), want)
	o.squashGrad(kind, d, n, S.s(), DV.s(), DS.s())
	if err := firstErr(S.unchanged("s"), DV.unchanged("dv"), DS.guardsIntact("ds")); err != nil {
		return fmt.Errorf("squashGrad %v d=%d n=%d: %w", kind, d, n, err)
	}
	s, dv, ds := S.s(), DV.s(), DS.s()
	for i := 0; i < n; i++ {
		var q, dot, adot float64
		for l := 0; l < d; l++ {
			x, g := float64(s[l*n+i]), float64(dv[l*n+i])
			q += x * x
			dot += x * g
			adot += math.Abs(x * g)
		}
		f, tf, h, th := squashTol(kind, d, q)
		tdot := 2 * eps32 * float64(d+1) * adot
		for l := 0; l < d; l++ {
			j := l*n + i
			sl, gl := math.Abs(float64(s[j])), math.Abs(float64(dv[j]))
			// ds = f·dv + h·dot·s: propagate the tolerances of f, h and
			// dot, plus 4 roundings of the result's two terms.
			tol := gl*tf + sl*(th*math.Abs(dot)+math.Abs(h)*tdot) +
				4*eps32*(f*gl+math.Abs(h*dot)*sl) + tinyAbs
			if !within(ds[j], want[j], tol) {
				return mismatch(ds[j], want[j], tol, "squashGrad %v d=%d n=%d: ds[%d,%d] (|s|²=%.3g)", kind, d, n, l, i, q)
			}
		}
	}
	return nil
}

// opsChecks lists every primitive's checker, by name, for a (rows, cols)
// shape.
var opsChecks = []struct {
	name string
	run  func(o *ops, rng *rand.Rand, r, c int) error
}{
	{"gemvN", checkGemvN},
	{"gemvT", checkGemvT},
	{"ger", checkGer},
	{"mulAddRows", checkMulAddRows},
	{"softmaxCols", checkSoftmaxCols},
	{"softmaxColsGrad", checkSoftmaxColsGrad},
	{"softmaxRows", checkSoftmaxRows},
	{"softmaxRowsGrad", checkSoftmaxRowsGrad},
	{"squash/mazzia", func(o *ops, rng *rand.Rand, r, c int) error { return checkSquash(o, rng, SquashMazzia, r, c) }},
	{"squash/sabour", func(o *ops, rng *rand.Rand, r, c int) error { return checkSquash(o, rng, SquashSabour, r, c) }},
	{"squashGrad/mazzia", func(o *ops, rng *rand.Rand, r, c int) error { return checkSquashGrad(o, rng, SquashMazzia, r, c) }},
	{"squashGrad/sabour", func(o *ops, rng *rand.Rand, r, c int) error { return checkSquashGrad(o, rng, SquashSabour, r, c) }},
}

// TestOps compares every primitive of every available implementation with
// the reference over the shape sweep.
func TestOps(t *testing.T) {
	shapes := opsShapes()
	forEachImpl(t, func(t *testing.T, impl string) {
		o := tables[impl]
		for _, ck := range opsChecks {
			t.Run(ck.name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(1, 2))
				fails := 0
				for _, sh := range shapes {
					if err := ck.run(o, rng, sh[0], sh[1]); err != nil {
						t.Error(err)
						if fails++; fails >= 5 {
							t.Fatal("too many failures")
						}
					}
				}
			})
		}
	})
}

// TestOpsCheckersDetectBugs feeds slightly broken implementations to the
// checkers: each must be rejected, or the tolerances are too loose to mean
// anything.
func TestOpsCheckersDetectBugs(t *testing.T) {
	bugs := append(opsLinearBugs(), opsNonlinearBugs()...)
	for _, b := range bugs {
		checkBugCaught(t, b)
	}
}

// opsBug is a broken implementation for TestOpsCheckersDetectBugs: patch
// breaks one primitive of a copy of refOps, and the checker named check,
// run up to ntries times on a rows×cols problem, must reject it.
type opsBug struct {
	name   string
	patch  func(o *ops)
	check  string
	rows   int
	cols   int
	ntries int
}

// opsLinearBugs returns the broken gemvN, gemvT, ger and mulAddRows of
// TestOpsCheckersDetectBugs.
func opsLinearBugs() []opsBug {
	return []opsBug{
		{"gemvN off by 1e-4", func(o *ops) {
			o.gemvN = func(m, n int, a []float32, lda int, x, y []float32) {
				gemvNRef(m, n, a, lda, x, y)
				y[m-1] += 1e-4
			}
		}, "gemvN", 16, 37, 1},
		{"gemvN skips the last column", func(o *ops) {
			o.gemvN = func(m, n int, a []float32, lda int, x, y []float32) { gemvNRef(m, n-1, a, lda, x, y) }
		}, "gemvN", 8, 1152, 1},
		{"gemvT skips the last row", func(o *ops) {
			o.gemvT = func(m, n int, a []float32, lda int, x, y []float32) { gemvTRef(m-1, n, a, lda, x, y) }
		}, "gemvT", 16, 33, 1},
		{"ger misses the tail", func(o *ops) {
			o.ger = func(m, n int, x, y, a []float32, lda int) { gerRef(m, n&^7, x, y, a, lda) }
		}, "ger", 5, 17, 1},
		{"mulAddRows off by 1e-4", func(o *ops) {
			o.mulAddRows = func(k, n int, a []float32, lda int, x []float32, ldx int, y []float32) {
				mulAddRowsRef(k, n, a, lda, x, ldx, y)
				y[0] += 1e-4
			}
		}, "mulAddRows", 8, 16, 1},
	}
}

// opsNonlinearBugs returns the broken softmaxCols, softmaxColsGrad, squash
// and squashGrad of TestOpsCheckersDetectBugs.
func opsNonlinearBugs() []opsBug {
	return []opsBug{
		{"softmaxCols without max subtraction", func(o *ops) {
			o.softmaxCols = func(rows, n int, l, c []float32) {
				for i := 0; i < n; i++ {
					var sum float32
					for r := 0; r < rows; r++ {
						c[r*n+i] = float32(math.Exp(float64(l[r*n+i])))
						sum += c[r*n+i]
					}
					for r := 0; r < rows; r++ {
						c[r*n+i] /= sum
					}
				}
			}
		}, "softmaxCols", 10, 16, 1},
		{"softmaxCols with a 1e-5 exp error", func(o *ops) {
			o.softmaxCols = func(rows, n int, l, c []float32) {
				softmaxColsRef(rows, n, l, c)
				c[0] *= 1 + 1e-5
			}
		}, "softmaxCols", 10, 16, 6},
		{"softmaxColsGrad wrong sign", func(o *ops) {
			o.softmaxColsGrad = func(rows, n int, c, dc, dl []float32) {
				softmaxColsGradRef(rows, n, c, dc, dl)
				dl[n] = -dl[n]
			}
		}, "softmaxColsGrad", 4, 16, 1},
		{"softmaxRows without max subtraction", func(o *ops) {
			o.softmaxRows = func(rows, n int, l, c []float32) {
				for r := 0; r < rows; r++ {
					var sum float32
					for i := 0; i < n; i++ {
						c[r*n+i] = float32(math.Exp(float64(l[r*n+i])))
						sum += c[r*n+i]
					}
					for i := 0; i < n; i++ {
						c[r*n+i] /= sum
					}
				}
			}
		}, "softmaxRows", 16, 10, 1},
		{"softmaxRows with a 1e-5 exp error", func(o *ops) {
			o.softmaxRows = func(rows, n int, l, c []float32) {
				softmaxRowsRef(rows, n, l, c)
				c[0] *= 1 + 1e-5
			}
		}, "softmaxRows", 16, 10, 6},
		{"softmaxRows misses the last column", func(o *ops) {
			o.softmaxRows = func(rows, n int, l, c []float32) {
				for r := 0; r < rows; r++ {
					softmaxRowsRef(1, n-1, l[r*n:], c[r*n:])
					c[r*n+n-1] = 0
				}
			}
		}, "softmaxRows", 4, 17, 1},
		{"softmaxRowsGrad wrong sign", func(o *ops) {
			o.softmaxRowsGrad = func(rows, n int, c, dc, dl []float32) {
				softmaxRowsGradRef(rows, n, c, dc, dl)
				dl[n] = -dl[n]
			}
		}, "softmaxRowsGrad", 4, 16, 1},
		{"softmaxRowsGrad dot over the column", func(o *ops) {
			o.softmaxRowsGrad = softmaxColsGradRef
		}, "softmaxRowsGrad", 8, 8, 1},
		{"squash kinds swapped", func(o *ops) {
			o.squash = func(kind Squash, d, n int, s, v []float32) { squashRef(1-kind, d, n, s, v) }
		}, "squash/mazzia", 8, 16, 1},
		{"squash with 1e-5 relative error", func(o *ops) {
			o.squash = func(kind Squash, d, n int, s, v []float32) {
				squashRef(kind, d, n, s, v)
				for i := range v {
					v[i] *= 1 + 1e-5
				}
			}
		}, "squash/sabour", 8, 16, 1},
		{"squashGrad without the h term", func(o *ops) {
			o.squashGrad = func(kind Squash, d, n int, s, dv, ds []float32) {
				for i := 0; i < n; i++ {
					var q float32
					for l := 0; l < d; l++ {
						q += s[l*n+i] * s[l*n+i]
					}
					f, _ := squashScale(kind, q)
					for l := 0; l < d; l++ {
						ds[l*n+i] = f * dv[l*n+i]
					}
				}
			}
		}, "squashGrad/mazzia", 16, 10, 1},
		{"squashGrad h off by 1e-3", func(o *ops) {
			o.squashGrad = func(kind Squash, d, n int, s, dv, ds []float32) {
				for i := 0; i < n; i++ {
					var q, dot float32
					for l := 0; l < d; l++ {
						q += s[l*n+i] * s[l*n+i]
						dot += s[l*n+i] * dv[l*n+i]
					}
					f, h := squashScale(kind, q)
					h *= 1 + 1e-3
					for l := 0; l < d; l++ {
						ds[l*n+i] = f*dv[l*n+i] + h*dot*s[l*n+i]
					}
				}
			}
		}, "squashGrad/sabour", 16, 10, 1},
	}
}

// checkBugCaught patches a copy of refOps with b and fails t unless b's
// checker rejects it within b.ntries runs.
func checkBugCaught(t *testing.T, b opsBug) {
	o := refOps
	b.patch(&o)
	var run func(o *ops, rng *rand.Rand, r, c int) error
	for _, ck := range opsChecks {
		if ck.name == b.check {
			run = ck.run
		}
	}
	if run == nil {
		t.Fatalf("%s: no checker %q", b.name, b.check)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	caught := false
	for i := 0; i < b.ntries && !caught; i++ {
		caught = run(&o, rng, b.rows, b.cols) != nil
	}
	if !caught {
		t.Errorf("checker %s accepted a broken implementation: %s", b.check, b.name)
	}
}

// TestOpsNoAlloc checks that no primitive of any implementation allocates.
func TestOpsNoAlloc(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl string) {
		o := tables[impl]
		const m, n = 16, 37
		rng := rand.New(rand.NewPCG(5, 6))
		mk := func(k int) []float32 {
			v := make([]float32, k)
			for i := range v {
				v[i] = uni(rng)
			}
			return v
		}
		a, b, c := mk(m*n), mk(m*n), mk(m*n)
		x, y := mk(n), mk(n)
		cs := make([]float32, m*n)
		softmaxColsRef(m, n, a, cs)
		for _, tc := range []struct {
			name string
			f    func()
		}{
			{"gemvN", func() { o.gemvN(m, n, a, n, x, y) }},
			{"gemvT", func() { o.gemvT(m, n, a, n, x[:m], y) }},
			{"ger", func() { o.ger(m, n, x[:m], y, c, n) }},
			{"mulAddRows", func() { o.mulAddRows(m, n, a, n, b, n, y) }},
			{"softmaxCols", func() { o.softmaxCols(m, n, a, c) }},
			{"softmaxColsGrad", func() { o.softmaxColsGrad(m, n, cs, b, c) }},
			{"squash/mazzia", func() { o.squash(SquashMazzia, m, n, a, c) }},
			{"squash/sabour", func() { o.squash(SquashSabour, m, n, a, c) }},
			{"squashGrad/mazzia", func() { o.squashGrad(SquashMazzia, m, n, a, b, c) }},
			{"squashGrad/sabour", func() { o.squashGrad(SquashSabour, m, n, a, b, c) }},
			// 4 groups of 4 rows of the 16×37 a, x component-major.
			{"gerGroups", func() { o.gerGroups(4, 4, n, x, 1, 4, b, n, c, n) }},
			{"ger2Groups", func() { o.ger2Groups(4, 4, n, x, y, 1, 4, a, b, n, c, n) }},
			{"ger2GroupsSet", func() { o.ger2GroupsSet(4, 4, n, x, y, 1, 4, a, b, n, c, n) }},
			{"ger2GemvGroups", func() { o.ger2GemvGroups(4, 4, n, 0.5, a, n, x, y, 1, 4, b, a, n, c) }},
			{"gemvNTGroups", func() { o.gemvNTGroups(4, 4, n, a, n, b, n, y, 1, 4, c, n) }},
			{"gemvTGroups", func() { o.gemvTGroups(4, 4, n, a, n, x, 1, 4, c, n) }},
			{"gemvNGroups", func() { o.gemvNGroups(4, 4, n, a, n, b, n, y, 1, 4) }},
		} {
			if got := testing.AllocsPerRun(20, tc.f); got != 0 {
				t.Errorf("%s: %v allocations per call, want 0", tc.name, got)
			}
		}
	})
}

// Grouped primitives (gerGroups, gemvTGroups, gemvNGroups): ng blocks of d
// rows of a, block j paired with its own row (or strided column) of the
// other operand. The sweep covers ng and d of 0, 1 and odd sizes, the
// routing shapes (16 or 10 groups of 8 or 16 rows), n with tails around the
// vector widths, unaligned buffers, padded strides and both capsule layouts
// of the strided operand.

// groupShape is one point of the grouped sweep, with the strides of the
// strided operand (x of gerGroups and gemvTGroups, y of gemvNGroups:
// element (j, k) at j·s + k·sk), the row stride of a and that of the other
// operand's rows.
type groupShape struct {
	ng, d, n    int
	s, sk       int
	lda, ldRows int
}

func (g groupShape) String() string {
	return fmt.Sprintf("ng=%d d=%d n=%d s=%d sk=%d lda=%d ld=%d", g.ng, g.d, g.n, g.s, g.sk, g.lda, g.ldRows)
}

// stridedLen is the length of the strided operand: one past its last index.
func (g groupShape) stridedLen() int {
	if g.ng == 0 || g.d == 0 {
		return 0
	}
	return (g.ng-1)*g.s + (g.d-1)*g.sk + 1
}

// isTarget reports whether element i of the strided operand is some (j, k).
func (g groupShape) isTarget(i int) bool {
	for j := 0; j < g.ng; j++ {
		for k := 0; k < g.d; k++ {
			if j*g.s+k*g.sk == i {
				return true
			}
		}
	}
	return false
}

// groupShapes returns the sweep; each point gets a random layout of the
// strided operand: capsule-major (s = d, sk = 1), component-major (s = 1,
// sk = ng) or either with padding, so that the strides differ from the
// tight ones.
func groupShapes(rng *rand.Rand) []groupShape {
	gs := []int{0, 1, 2, 3, 5, 10, 16}
	ds := []int{0, 1, 2, 3, 4, 5, 7, 8, 16}
	ns := []int{0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 64, 100, 1152}
	limit := 300000
	if opsTestSmall() {
		limit = 8000
	}
	var out []groupShape
	for _, ng := range gs {
		for _, d := range ds {
			for _, n := range ns {
				if ng*d*n > limit {
					continue
				}
				sh := groupShape{ng: ng, d: d, n: n, lda: pickLd(rng, n), ldRows: pickLd(rng, n)}
				pad := []int{0, 0, 1, 3}[rng.IntN(4)]
				if rng.IntN(2) == 0 {
					sh.s, sh.sk = max(d, 1)+pad, 1 // capsule-major
				} else {
					sh.s, sh.sk = 1, max(ng, 1)+pad // component-major
				}
				out = append(out, sh)
			}
		}
	}
	return out
}

// newStrided returns the strided operand: random values at the (j, k)
// elements and guard NaNs in the gaps, so that reading a gap poisons the
// result.
func newStrided(rng *rand.Rand, sh groupShape) *tbuf {
	g := math.Float32frombits(guardBits)
	return newTVec(rng, sh.stridedLen(), func(i int) float32 {
		if sh.isTarget(i) {
			return uni(rng)
		}
		return g
	})
}

func checkGerGroups(o *ops, rng *rand.Rand, sh groupShape) error {
	ng, d, n, lda, ldy := sh.ng, sh.d, sh.n, sh.lda, sh.ldRows
	A := newTMat(rng, ng*d, n, lda, func(int, int) float32 { return uni(rng) })
	x := newStrided(rng, sh)
	y := newTMat(rng, ng, n, ldy, func(int, int) float32 { return uni(rng) })
	a0 := append([]float32(nil), A.s()...)
	want := append([]float32(nil), a0...)
	gerGroupsRef(ng, d, n, x.s(), sh.s, sh.sk, y.s(), ldy, want, lda)
	o.gerGroups(ng, d, n, x.s(), sh.s, sh.sk, y.s(), ldy, A.s(), lda)
	if err := firstErr(x.unchanged("x"), y.unchanged("y"), A.guardsIntact("a")); err != nil {
		return fmt.Errorf("gerGroups %v: %w", sh, err)
	}
	a, xs, ys := A.s(), x.s(), y.s()
	for j := 0; j < ng; j++ {
		for k := 0; k < d; k++ {
			for c := 0; c < n; c++ {
				// One multiply-add per element, fused or not: as in checkGer.
				i := (j*d+k)*lda + c
				sum := math.Abs(float64(a0[i])) + math.Abs(float64(xs[j*sh.s+k*sh.sk])*float64(ys[j*ldy+c]))
				if tol := 2 * eps32 * 2 * sum; !within(a[i], want[i], tol) {
					return mismatch(a[i], want[i], tol, "gerGroups %v: a[%d,%d,%d]", sh, j, k, c)
				}
			}
		}
	}
	return nil
}

// checkGer2Groups checks ger2Groups, or ger2GroupsSet when set: then the
// data of a start as NaN, which must not reach the result (a is not read).
func checkGer2Groups(o *ops, rng *rand.Rand, sh groupShape, set bool) error {
	ng, d, n, lda, ldy := sh.ng, sh.d, sh.n, sh.lda, sh.ldRows
	name, f, ref := "ger2Groups", o.ger2Groups, ger2GroupsRef
	gen := func(int, int) float32 { return uni(rng) }
	if set {
		name, f, ref = "ger2GroupsSet", o.ger2GroupsSet, ger2GroupsSetRef
		gen = func(int, int) float32 { return float32(math.NaN()) }
	}
	A := newTMat(rng, ng*d, n, lda, gen)
	x, x2 := newStrided(rng, sh), newStrided(rng, sh)
	y := newTMat(rng, ng, n, ldy, func(int, int) float32 { return uni(rng) })
	y2 := newTMat(rng, ng, n, ldy, func(int, int) float32 { return uni(rng) })
	a0 := append([]float32(nil), A.s()...)
	want := append([]float32(nil), a0...)
	ref(ng, d, n, x.s(), x2.s(), sh.s, sh.sk, y.s(), y2.s(), ldy, want, lda)
	f(ng, d, n, x.s(), x2.s(), sh.s, sh.sk, y.s(), y2.s(), ldy, A.s(), lda)
	if err := firstErr(x.unchanged("x"), x2.unchanged("x2"), y.unchanged("y"), y2.unchanged("y2"), A.guardsIntact("a")); err != nil {
		return fmt.Errorf("%s %v: %w", name, sh, err)
	}
	a, xs, x2s, ys, y2s := A.s(), x.s(), x2.s(), y.s(), y2.s()
	for j := 0; j < ng; j++ {
		for k := 0; k < d; k++ {
			for c := 0; c < n; c++ {
				// A sum of three terms (a, or 0, and two products):
				// 2·3·eps32·Σ|terms|.
				i, xi, yi := (j*d+k)*lda+c, j*sh.s+k*sh.sk, j*ldy+c
				sum := math.Abs(float64(xs[xi])*float64(ys[yi])) + math.Abs(float64(x2s[xi])*float64(y2s[yi]))
				if !set {
					sum += math.Abs(float64(a0[i]))
				}
				if tol := 2 * eps32 * 3 * sum; !within(a[i], want[i], tol) {
					return mismatch(a[i], want[i], tol, "%s %v: a[%d,%d,%d]", name, sh, j, k, c)
				}
			}
		}
	}
	return nil
}

// checkGer2GemvGroups checks ger2GemvGroups: out starts as NaN, which must
// not reach the result (out is not read); a has out's row stride.
func checkGer2GemvGroups(o *ops, rng *rand.Rand, sh groupShape) error {
	ng, d, n, lda, ldy := sh.ng, sh.d, sh.n, sh.lda, sh.ldRows
	alpha := 0.25 + uni(rng)
	A := newTMat(rng, ng*d, n, lda, func(int, int) float32 { return uni(rng) })
	Out := newTMat(rng, ng*d, n, lda, func(int, int) float32 { return float32(math.NaN()) })
	x, x2 := newStrided(rng, sh), newStrided(rng, sh)
	y := newTMat(rng, ng, n, ldy, func(int, int) float32 { return uni(rng) })
	y2 := newTMat(rng, ng, n, ldy, func(int, int) float32 { return uni(rng) })
	want := append([]float32(nil), Out.s()...)
	ger2GemvGroupsRef(ng, d, n, alpha, A.s(), lda, x.s(), x2.s(), sh.s, sh.sk, y.s(), y2.s(), ldy, want)
	o.ger2GemvGroups(ng, d, n, alpha, A.s(), lda, x.s(), x2.s(), sh.s, sh.sk, y.s(), y2.s(), ldy, Out.s())
	if err := firstErr(A.unchanged("a"), x.unchanged("x"), x2.unchanged("x2"), y.unchanged("y"), y2.unchanged("y2"), Out.guardsIntact("out")); err != nil {
		return fmt.Errorf("ger2GemvGroups %v: %w", sh, err)
	}
	a, out, xs, x2s, ys, y2s := A.s(), Out.s(), x.s(), x2.s(), y.s(), y2.s()
	for j := 0; j < ng; j++ {
		for k := 0; k < d; k++ {
			r := j*d + k
			// The dot product of n terms errs by 2(n+1)·eps32·Σ|a·y2| in
			// either implementation, then α and the sum of three terms
			// (2·3·eps32·Σ|terms|).
			var adot float64
			for c := 0; c < n; c++ {
				adot += math.Abs(float64(a[r*lda+c]) * float64(y2s[j*ldy+c]))
			}
			adot *= math.Abs(float64(alpha))
			for c := 0; c < n; c++ {
				i, xi, yi := r*lda+c, j*sh.s+k*sh.sk, j*ldy+c
				sum := adot + math.Abs(float64(xs[xi])*float64(ys[yi])) + math.Abs(float64(x2s[xi])*float64(y2s[yi]))
				tol := 2*eps32*float64(n+2)*adot + 2*eps32*3*sum
				if !within(out[i], want[i], tol) {
					return mismatch(out[i], want[i], tol, "ger2GemvGroups %v: out[%d,%d,%d]", sh, j, k, c)
				}
			}
		}
	}
	return nil
}

func checkGemvTGroups(o *ops, rng *rand.Rand, sh groupShape) error {
	ng, d, n, lda, ldy := sh.ng, sh.d, sh.n, sh.lda, sh.ldRows
	A := newTMat(rng, ng*d, n, lda, func(int, int) float32 { return uni(rng) })
	x := newStrided(rng, sh)
	y := newTMat(rng, ng, n, ldy, func(int, int) float32 { return uni(rng) })
	y0 := append([]float32(nil), y.s()...)
	want := append([]float32(nil), y0...)
	gemvTGroupsRef(ng, d, n, A.s(), lda, x.s(), sh.s, sh.sk, want, ldy)
	o.gemvTGroups(ng, d, n, A.s(), lda, x.s(), sh.s, sh.sk, y.s(), ldy)
	if err := firstErr(A.unchanged("a"), x.unchanged("x"), y.guardsIntact("y")); err != nil {
		return fmt.Errorf("gemvTGroups %v: %w", sh, err)
	}
	a, xs, ys := A.s(), x.s(), y.s()
	for j := 0; j < ng; j++ {
		for c := 0; c < n; c++ {
			// A sum of d products and the initial y: 2·(d+1)·eps32·Σ|terms|
			// as for gemvT.
			sum := math.Abs(float64(y0[j*ldy+c]))
			for k := 0; k < d; k++ {
				sum += math.Abs(float64(a[(j*d+k)*lda+c]) * float64(xs[j*sh.s+k*sh.sk]))
			}
			if tol := 2 * eps32 * float64(d+1) * sum; !within(ys[j*ldy+c], want[j*ldy+c], tol) {
				return mismatch(ys[j*ldy+c], want[j*ldy+c], tol, "gemvTGroups %v: y[%d,%d]", sh, j, c)
			}
		}
	}
	return nil
}

func checkGemvNGroups(o *ops, rng *rand.Rand, sh groupShape) error {
	ng, d, n, lda, ldx := sh.ng, sh.d, sh.n, sh.lda, sh.ldRows
	A := newTMat(rng, ng*d, n, lda, func(int, int) float32 { return uni(rng) })
	x := newTMat(rng, ng, n, ldx, func(int, int) float32 { return uni(rng) })
	y := newStrided(rng, sh)
	y0 := append([]float32(nil), y.s()...)
	want := append([]float32(nil), y0...)
	gemvNGroupsRef(ng, d, n, A.s(), lda, x.s(), ldx, want, sh.s, sh.sk)
	o.gemvNGroups(ng, d, n, A.s(), lda, x.s(), ldx, y.s(), sh.s, sh.sk)
	if err := firstErr(A.unchanged("a"), x.unchanged("x")); err != nil {
		return fmt.Errorf("gemvNGroups %v: %w", sh, err)
	}
	ys := y.s()
	for i := range y.all {
		if !y.inData(i) && math.Float32bits(y.all[i]) != guardBits {
			return fmt.Errorf("gemvNGroups %v: y written outside its data at %d", sh, i-y.off)
		}
	}
	for i, v := range ys {
		if !sh.isTarget(i) && math.Float32bits(v) != guardBits {
			return fmt.Errorf("gemvNGroups %v: y written in a gap at %d: %g", sh, i, v)
		}
	}
	a, xs := A.s(), x.s()
	for j := 0; j < ng; j++ {
		for k := 0; k < d; k++ {
			// A sum of n products and the initial y, as for gemvN.
			i := j*sh.s + k*sh.sk
			sum := math.Abs(float64(y0[i]))
			for c := 0; c < n; c++ {
				sum += math.Abs(float64(a[(j*d+k)*lda+c]) * float64(xs[j*ldx+c]))
			}
			if tol := 2 * eps32 * float64(n+1) * sum; !within(ys[i], want[i], tol) {
				return mismatch(ys[i], want[i], tol, "gemvNGroups %v: y[%d,%d]", sh, j, k)
			}
		}
	}
	return nil
}

// checkGemvNTGroups checks gemvNTGroups: y (strided, its data NaN, which
// must not be read) and z (NaN, not read) are overwritten. Tolerances: y
// as gemvNGroups' (n products); z a sum of d products of y, whose own
// error (relative 2(n+1)·eps32 of Σ|a·x|) is carried through.
func checkGemvNTGroups(o *ops, rng *rand.Rand, sh groupShape) error {
	ng, d, n, lda, ldx := sh.ng, sh.d, sh.n, sh.lda, sh.ldRows
	nan := float32(math.NaN())
	A := newTMat(rng, ng*d, n, lda, func(int, int) float32 { return uni(rng) })
	x := newTMat(rng, ng, n, ldx, func(int, int) float32 { return uni(rng) })
	y := newStrided(rng, sh)
	for i := range y.s() {
		if sh.isTarget(i) {
			y.s()[i] = nan
		}
	}
	copy(y.before, y.all)
	Z := newTMat(rng, ng, n, ldx, func(int, int) float32 { return nan })
	wantY := append([]float32(nil), y.s()...)
	wantZ := append([]float32(nil), Z.s()...)
	gemvNTGroupsRef(ng, d, n, A.s(), lda, x.s(), ldx, wantY, sh.s, sh.sk, wantZ, ldx)
	o.gemvNTGroups(ng, d, n, A.s(), lda, x.s(), ldx, y.s(), sh.s, sh.sk, Z.s(), ldx)
	if err := firstErr(A.unchanged("a"), x.unchanged("x"), Z.guardsIntact("z")); err != nil {
		return fmt.Errorf("gemvNTGroups %v: %w", sh, err)
	}
	if d == 0 || n == 0 { // nothing is written
		return firstErr(y.unchanged("y"), Z.unchanged("z"))
	}
	ys, zs := y.s(), Z.s()
	for i := range y.all {
		if !y.inData(i) && math.Float32bits(y.all[i]) != guardBits {
			return fmt.Errorf("gemvNTGroups %v: y written outside its data at %d", sh, i-y.off)
		}
	}
	for i, v := range ys {
		if !sh.isTarget(i) && math.Float32bits(v) != guardBits {
			return fmt.Errorf("gemvNTGroups %v: y written in a gap at %d: %g", sh, i, v)
		}
	}
	a, xs := A.s(), x.s()
	for j := 0; j < ng; j++ {
		rel := make([]float64, d) // per row: |y| plus its tolerance
		for k := 0; k < d; k++ {
			i := j*sh.s + k*sh.sk
			var sum float64
			for c := 0; c < n; c++ {
				sum += math.Abs(float64(a[(j*d+k)*lda+c]) * float64(xs[j*ldx+c]))
			}
			tol := 2 * eps32 * float64(n+1) * sum
			if !within(ys[i], wantY[i], tol) {
				return mismatch(ys[i], wantY[i], tol, "gemvNTGroups %v: y[%d,%d]", sh, j, k)
			}
			rel[k] = tol + math.Abs(float64(wantY[i]))
		}
		for c := 0; c < n; c++ {
			// The error of y carried (Σ_k tol_k·|a|), and the sum of d
			// products (2(d+1)·eps32·Σ|terms|).
			var carried, zsum float64
			for k := 0; k < d; k++ {
				i := j*sh.s + k*sh.sk
				aa := math.Abs(float64(a[(j*d+k)*lda+c]))
				carried += (rel[k] - math.Abs(float64(wantY[i]))) * aa
				zsum += rel[k] * aa
			}
			tol := carried + 2*eps32*float64(d+1)*zsum
			if i := j*ldx + c; !within(zs[i], wantZ[i], tol) {
				return mismatch(zs[i], wantZ[i], tol, "gemvNTGroups %v: z[%d,%d]", sh, j, c)
			}
		}
	}
	return nil
}

var opsGroupChecks = []struct {
	name string
	run  func(o *ops, rng *rand.Rand, sh groupShape) error
}{
	{"gerGroups", checkGerGroups},
	{"ger2Groups", func(o *ops, rng *rand.Rand, sh groupShape) error { return checkGer2Groups(o, rng, sh, false) }},
	{"ger2GroupsSet", func(o *ops, rng *rand.Rand, sh groupShape) error { return checkGer2Groups(o, rng, sh, true) }},
	{"ger2GemvGroups", checkGer2GemvGroups},
	{"gemvNTGroups", checkGemvNTGroups},
	{"gemvTGroups", checkGemvTGroups},
	{"gemvNGroups", checkGemvNGroups},
}

// TestOpsGroups compares the grouped primitives of every available
// implementation with the reference over the grouped sweep.
func TestOpsGroups(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl string) {
		o := tables[impl]
		for _, ck := range opsGroupChecks {
			t.Run(ck.name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(7, 8))
				fails := 0
				for _, sh := range groupShapes(rng) {
					if err := ck.run(o, rng, sh); err != nil {
						t.Error(err)
						if fails++; fails >= 5 {
							t.Fatal("too many failures")
						}
					}
				}
			})
		}
	})
}

// TestOpsGroupsCheckersDetectBugs feeds slightly broken grouped primitives
// to their checkers: each must be rejected.
func TestOpsGroupsCheckersDetectBugs(t *testing.T) {
	sh := groupShape{ng: 8, d: 8, n: 17, s: 1, sk: 9, lda: 17, ldRows: 20}
	bugs := []struct {
		name, check string
		patch       func(o *ops)
	}{
		{"gerGroups reads x capsule-major", "gerGroups", func(o *ops) {
			o.gerGroups = func(ng, d, n int, x []float32, xs, xk int, y []float32, ldy int, a []float32, lda int) {
				gerGroupsRef(ng, d, n, x, xk, xs, y, ldy, a, lda)
			}
		}},
		{"gerGroups misses the tail", "gerGroups", func(o *ops) {
			o.gerGroups = func(ng, d, n int, x []float32, xs, xk int, y []float32, ldy int, a []float32, lda int) {
				gerGroupsRef(ng, d, n&^7, x, xs, xk, y, ldy, a, lda)
			}
		}},
		{"ger2Groups drops the second product", "ger2Groups", func(o *ops) {
			o.ger2Groups = func(ng, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int) {
				gerGroupsRef(ng, d, n, x, xs, xk, y, ldy, a, lda)
			}
		}},
		{"ger2Groups pairs x2 with y", "ger2Groups", func(o *ops) {
			o.ger2Groups = func(ng, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int) {
				ger2GroupsRef(ng, d, n, x, x2, xs, xk, y, y, ldy, a, lda)
			}
		}},
		{"ger2GroupsSet adds to a", "ger2GroupsSet", func(o *ops) {
			o.ger2GroupsSet = ger2GroupsRef
		}},
		{"gemvNTGroups adds to z", "gemvNTGroups", func(o *ops) {
			o.gemvNTGroups = func(ng, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int, z []float32, ldz int) {
				for j := 0; j < ng; j++ {
					for k := 0; k < d; k++ {
						y[j*ys+k*yk] = 0
					}
				}
				gemvNGroupsRef(ng, d, n, a, lda, x, ldx, y, ys, yk)
				gemvTGroupsRef(ng, d, n, a, lda, y, ys, yk, z, ldz)
			}
		}},
		{"gemvNTGroups skips the last row of each group in z", "gemvNTGroups", func(o *ops) {
			o.gemvNTGroups = func(ng, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int, z []float32, ldz int) {
				gemvNTGroupsRef(ng, d, n, a, lda, x, ldx, y, ys, yk, z, ldz)
				for j := 0; j < ng; j++ {
					for c := 0; c < n; c++ {
						z[j*ldz+c] -= y[j*ys+(d-1)*yk] * a[(j*d+d-1)*lda+c]
					}
				}
			}
		}},
		{"ger2GemvGroups drops the row term", "ger2GemvGroups", func(o *ops) {
			o.ger2GemvGroups = func(ng, d, n int, alpha float32, a []float32, lda int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, out []float32) {
				ger2GroupsSetRef(ng, d, n, x, x2, xs, xk, y, y2, ldy, out, lda)
			}
		}},
		{"ger2GemvGroups dots a with y", "ger2GemvGroups", func(o *ops) {
			o.ger2GemvGroups = func(ng, d, n int, alpha float32, a []float32, lda int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, out []float32) {
				for j := 0; j < ng; j++ {
					for k := 0; k < d; k++ {
						r := j*d + k
						var dot float32
						for c := 0; c < n; c++ {
							dot += a[r*lda+c] * y[j*ldy+c]
						}
						for c := 0; c < n; c++ {
							out[r*lda+c] = alpha*dot + x[j*xs+k*xk]*y[j*ldy+c] + x2[j*xs+k*xk]*y2[j*ldy+c]
						}
					}
				}
			}
		}},
		{"ger2GemvGroups ignores alpha", "ger2GemvGroups", func(o *ops) {
			o.ger2GemvGroups = func(ng, d, n int, alpha float32, a []float32, lda int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, out []float32) {
				ger2GemvGroupsRef(ng, d, n, 1, a, lda, x, x2, xs, xk, y, y2, ldy, out)
			}
		}},
		{"gemvTGroups skips the last group", "gemvTGroups", func(o *ops) {
			o.gemvTGroups = func(ng, d, n int, a []float32, lda int, x []float32, xs, xk int, y []float32, ldy int) {
				gemvTGroupsRef(ng-1, d, n, a, lda, x, xs, xk, y, ldy)
			}
		}},
		{"gemvTGroups skips the last row of each group", "gemvTGroups", func(o *ops) {
			o.gemvTGroups = func(ng, d, n int, a []float32, lda int, x []float32, xs, xk int, y []float32, ldy int) {
				for j := 0; j < ng; j++ {
					gemvTGroupsRef(1, d-1, n, a[j*d*lda:], lda, x[j*xs:], xs, xk, y[j*ldy:], ldy)
				}
			}
		}},
		{"gemvNGroups off by 1e-4", "gemvNGroups", func(o *ops) {
			o.gemvNGroups = func(ng, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int) {
				gemvNGroupsRef(ng, d, n, a, lda, x, ldx, y, ys, yk)
				y[0] += 1e-4
			}
		}},
		{"gemvNGroups uses x row 0 for every group", "gemvNGroups", func(o *ops) {
			o.gemvNGroups = func(ng, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int) {
				gemvNGroupsRef(ng, d, n, a, lda, x, 0, y, ys, yk)
			}
		}},
	}
	for _, b := range bugs {
		o := refOps
		b.patch(&o)
		var run func(o *ops, rng *rand.Rand, sh groupShape) error
		for _, ck := range opsGroupChecks {
			if ck.name == b.check {
				run = ck.run
			}
		}
		if run == nil {
			t.Fatalf("%s: no checker %q", b.name, b.check)
		}
		if run(&o, rand.New(rand.NewPCG(9, 10)), sh) == nil {
			t.Errorf("checker %s accepted a broken implementation: %s", b.check, b.name)
		}
	}
}

// mulAddRowsBatch (optional primitive): nb samples of k row pairs sharing
// the rows of a. x holds the k rows of every sample with row stride ldx and
// sample stride xstride = (k+gap)·ldx: gap rows of guard NaNs between
// samples (and the padding of ldx > n) poison the result if read.

// checkMulAddRowsBatch compares o.mulAddRowsBatch with mulAddRowsBatchRef
// on one shape. Tolerance: every y[b,c] is y0 plus k products, summed in
// float32 in any order by the kernel (the AVX kernels split the sum into
// two chains), so |got−want| ≤ 2·eps32·(k+1)·(|y0| + Σ|a·x|) (each of the
// two summations errs by at most (k+1)·u·Σ|terms|, u = eps32/2).
//
// With set, it checks o.mulAddRowsBatchSet against mulAddRowsBatchSetRef
// (y0 then counts as 0 in the tolerance).
func checkMulAddRowsBatch(o *ops, rng *rand.Rand, nb, k, n, gap int, set bool) error {
	lda, ldx, ldy := pickLd(rng, n), pickLd(rng, n), pickLd(rng, n)
	xstride := (k + gap) * ldx
	guard := math.Float32frombits(guardBits)
	A := newTMat(rng, k, n, lda, func(int, int) float32 { return uni(rng) })
	X := newTMat(rng, nb*(k+gap), n, ldx, func(r, _ int) float32 {
		if r%(k+gap) >= k {
			return guard
		}
		return uni(rng)
	})
	Y := newTMat(rng, nb, n, ldy, func(int, int) float32 { return uni(rng) })
	y0 := append([]float32(nil), Y.s()...)
	want := append([]float32(nil), y0...)
	ref, f, name := mulAddRowsBatchRef, o.mulAddRowsBatch, "mulAddRowsBatch"
	if set {
		ref, f, name = mulAddRowsBatchSetRef, o.mulAddRowsBatchSet, "mulAddRowsBatchSet"
		clear(y0)
	}
	ref(nb, k, n, A.s(), lda, X.s(), ldx, xstride, want, ldy)
	f(nb, k, n, A.s(), lda, X.s(), ldx, xstride, Y.s(), ldy)
	what := fmt.Sprintf("%s nb=%d k=%d n=%d lda=%d ldx=%d xstride=%d ystride=%d", name, nb, k, n, lda, ldx, xstride, ldy)
	if err := firstErr(A.unchanged("a"), X.unchanged("x"), Y.guardsIntact("y")); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	a, xs, ys := A.s(), X.s(), Y.s()
	for b := 0; b < nb; b++ {
		for c := 0; c < n; c++ {
			i := b*ldy + c
			sum := math.Abs(float64(y0[i]))
			for l := 0; l < k; l++ {
				sum += math.Abs(float64(a[l*lda+c]) * float64(xs[b*xstride+l*ldx+c]))
			}
			if tol := 2 * eps32 * float64(k+1) * sum; !within(ys[i], want[i], tol) {
				return mismatch(ys[i], want[i], tol, "%s: y[%d,%d]", what, b, c)
			}
		}
	}
	return nil
}

// mulAddRowsBatchSweep runs check over nb ∈ {0, 1, 3, 32}, k ∈ 0…9, 16,
// 17 (the kernels take 8 rows at a time), n over opsTestSizes, with and
// without guard rows between samples; smaller under qemu or -short.
func mulAddRowsBatchSweep(rng *rand.Rand, check func(nb, k, n, gap int) error) error {
	limit := 1 << 30
	if opsTestSmall() {
		limit = 40000
	}
	for _, nb := range []int{0, 1, 3, 32} {
		for _, k := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17} {
			for _, n := range opsTestSizes {
				if nb*k*n > limit {
					continue
				}
				if err := check(nb, k, n, rng.IntN(2)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// TestOpsMulAddRowsBatch compares the batched kernel of every
// implementation that has one with the reference.
func TestOpsMulAddRowsBatch(t *testing.T) {
	tested := 0
	forEachImpl(t, func(t *testing.T, impl string) {
		o := tables[impl]
		if o.mulAddRowsBatch == nil || o.mulAddRowsBatchSet == nil {
			if o.mulAddRowsBatch != nil || o.mulAddRowsBatchSet != nil {
				t.Fatal("mulAddRowsBatch and mulAddRowsBatchSet must be both nil or both set")
			}
			t.Skip("no mulAddRowsBatch")
		}
		tested++
		for _, set := range []bool{false, true} {
			rng := rand.New(rand.NewPCG(7, 8))
			if err := mulAddRowsBatchSweep(rng, func(nb, k, n, gap int) error {
				return checkMulAddRowsBatch(o, rng, nb, k, n, gap, set)
			}); err != nil {
				t.Error(err)
			}
		}
	})
	t.Logf("%d implementations with mulAddRowsBatch", tested)
}

// TestOpsMulAddRowsBatchCheckerDetectsBugs feeds broken batched kernels
// to the checker: each must be rejected.
func TestOpsMulAddRowsBatchCheckerDetectsBugs(t *testing.T) {
	type batchFn = func(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int)
	bugs := map[string]batchFn{
		"last sample skipped": func(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int) {
			mulAddRowsBatchRef(max(nb-1, 0), k, n, a, lda, x, ldx, xstride, y, ystride)
		},
		"last row skipped": func(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int) {
			mulAddRowsBatchRef(nb, max(k-1, 0), n, a, lda, x, ldx, xstride, y, ystride)
		},
		"last column off by 1e-4": func(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int) {
			mulAddRowsBatchRef(nb, k, n, a, lda, x, ldx, xstride, y, ystride)
			for b := 0; b < nb && n > 0; b++ {
				y[b*ystride+n-1] += 1e-4
			}
		},
		"one past the tail written": func(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int) {
			mulAddRowsBatchRef(nb, k, n, a, lda, x, ldx, xstride, y, ystride)
			if nb > 1 && ystride > n {
				y[n] = 0
			}
		},
	}
	for name, f := range bugs {
		o := refOps
		o.mulAddRowsBatch = f
		rng := rand.New(rand.NewPCG(9, 10))
		if err := mulAddRowsBatchSweep(rng, func(nb, k, n, gap int) error {
			return checkMulAddRowsBatch(&o, rng, nb, k, n, gap, false)
		}); err == nil {
			t.Errorf("bug %q not detected", name)
		}
	}
	// The overwriting variant must not add to y, nor leave it unwritten.
	for name, f := range map[string]batchFn{
		"adds": mulAddRowsBatchRef,
		"k=0 ignored": func(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int) {
			if k > 0 {
				mulAddRowsBatchSetRef(nb, k, n, a, lda, x, ldx, xstride, y, ystride)
			}
		},
	} {
		o := refOps
		o.mulAddRowsBatchSet = f
		rng := rand.New(rand.NewPCG(9, 10))
		if err := mulAddRowsBatchSweep(rng, func(nb, k, n, gap int) error {
			return checkMulAddRowsBatch(&o, rng, nb, k, n, gap, true)
		}); err == nil {
			t.Errorf("set bug %q not detected", name)
		}
	}
}

// TestOpsMulAddRowsBatchNoAlloc checks that the batched kernels do not
// allocate.
func TestOpsMulAddRowsBatchNoAlloc(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl string) {
		o := tables[impl]
		if o.mulAddRowsBatch == nil {
			t.Skip("no mulAddRowsBatch")
		}
		const nb, k, n = 3, 17, 37
		a, x, y := make([]float32, k*n), make([]float32, nb*k*n), make([]float32, nb*n)
		if got := testing.AllocsPerRun(20, func() { o.mulAddRowsBatch(nb, k, n, a, n, x, n, k*n, y, n) }); got != 0 {
			t.Errorf("mulAddRowsBatch: %v allocations per call, want 0", got)
		}
		if got := testing.AllocsPerRun(20, func() { o.mulAddRowsBatchSet(nb, k, n, a, n, x, n, k*n, y, n) }); got != 0 {
			t.Errorf("mulAddRowsBatchSet: %v allocations per call, want 0", got)
		}
	})
}
