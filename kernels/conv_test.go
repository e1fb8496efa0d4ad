package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// convEps32 is the float32 machine epsilon 2⁻²³.
const convEps32 = 1.0 / (1 << 23)

// convRand returns n uniform values in [-1, 1) starting at offset off of a
// larger backing array (to exercise unaligned starts).
func convRand(rng *rand.Rand, n, off int) []float32 {
	b := make([]float32, n+off)
	for i := range b {
		b[i] = float32(rng.Float64()*2 - 1)
	}
	return b[off : off+n]
}

func convNaN(n, off int) []float32 {
	b := make([]float32, n+off)
	for i := range b {
		b[i] = float32(math.NaN())
	}
	return b[off : off+n]
}

func convAbs(x []float32) []float32 {
	a := make([]float32, len(x))
	for i, v := range x {
		a[i] = float32(math.Abs(float64(v)))
	}
	return a
}

// randConvShape draws a valid shape with strides 1-3, paddings 0-2, groups
// 1, 2 or depthwise, kernels 1-5, odd and even image sizes and batch 1-3.
func randConvShape(rng *rand.Rand) ConvShape {
	var s ConvShape
	s.Batch = 1 + rng.IntN(3)
	s.StrideH, s.StrideW = 1+rng.IntN(3), 1+rng.IntN(3)
	s.PadH, s.PadW = rng.IntN(3), rng.IntN(3)
	s.KH, s.KW = 1+rng.IntN(5), 1+rng.IntN(5)
	s.InH = max(1, s.KH-2*s.PadH+rng.IntN(9))
	s.InW = max(1, s.KW-2*s.PadW+rng.IntN(9))
	switch rng.IntN(3) {
	case 0:
		s.Groups = 1
		s.InC, s.OutC = 1+rng.IntN(5), 1+rng.IntN(6)
	case 1:
		s.Groups = 2
		s.InC, s.OutC = 2*(1+rng.IntN(3)), 2*(1+rng.IntN(3))
	default:
		s.Groups = 1 + rng.IntN(5)
		s.InC, s.OutC = s.Groups, s.Groups
	}
	return s
}

// fixedConvShapes are shapes the random sweep may miss: whole-image
// depthwise kernel (the deep model's last layer), several GEMM chunks with a
// partial last chunk (P = 225 gives chunks of 3 images; batch 4 = 3 + 1),
// 1×1 kernels, and a kernel equal to the padded input.
var fixedConvShapes = []ConvShape{
	{Batch: 2, InC: 5, InH: 7, InW: 7, OutC: 5, KH: 7, KW: 7, StrideH: 1, StrideW: 1, Groups: 5},
	{Batch: 4, InC: 3, InH: 16, InW: 16, OutC: 4, KH: 2, KW: 2, StrideH: 1, StrideW: 1, Groups: 1},
	{Batch: 5, InC: 4, InH: 16, InW: 16, OutC: 6, KH: 2, KW: 2, StrideH: 1, StrideW: 1, Groups: 2},
	{Batch: 3, InC: 3, InH: 5, InW: 4, OutC: 2, KH: 1, KW: 1, StrideH: 1, StrideW: 1, Groups: 1},
	{Batch: 1, InC: 2, InH: 3, InW: 2, OutC: 3, KH: 5, KW: 4, StrideH: 2, StrideW: 3, PadH: 1, PadW: 1, Groups: 1},
	{Batch: 3, InC: 4, InH: 9, InW: 8, OutC: 4, KH: 3, KW: 3, StrideH: 2, StrideW: 1, PadH: 1, PadW: 2, Groups: 4},
	{Batch: 2, InC: 6, InH: 12, InW: 12, OutC: 8, KH: 9, KW: 9, StrideH: 2, StrideW: 2, Groups: 1},
	// Wide padded outputs: the implicit GEMM's runs reach the padding
	// (strides 2 and 3, and stride 1 with 16 input channels).
	{Batch: 2, InC: 3, InH: 9, InW: 40, OutC: 5, KH: 3, KW: 5, StrideH: 2, StrideW: 2, PadH: 1, PadW: 2, Groups: 1},
	{Batch: 1, InC: 2, InH: 7, InW: 50, OutC: 3, KH: 4, KW: 4, StrideH: 1, StrideW: 3, PadH: 2, PadW: 3, Groups: 1},
	{Batch: 2, InC: 16, InH: 6, InW: 37, OutC: 4, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, Groups: 1},
	// Batched chunks on CHWN slabs (nc ≥ 2·OutW, implicitCHWN) whose panels
	// reach the padding: 9 and 17 images of 4 and 3 output columns.
	{Batch: 9, InC: 3, InH: 7, InW: 7, OutC: 5, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, Groups: 1},
	{Batch: 17, InC: 4, InH: 5, InW: 5, OutC: 6, KH: 3, KW: 2, StrideH: 1, StrideW: 2, PadH: 1, PadW: 1, Groups: 2},
	// Stride 1 without padding on wide rows: the direct path
	// (conv_direct.go), with channels that fill no tile, taps that fill no
	// unrolled step, and the last image's last tile reaching past x.
	// Stride 2 the same way, on the input's four phases, with odd heights
	// and widths (phases of unequal sizes).
	{Batch: 3, InC: 12, InH: 9, InW: 37, OutC: 15, KH: 3, KW: 2, StrideH: 1, StrideW: 1, Groups: 1},
	{Batch: 2, InC: 15, InH: 12, InW: 34, OutC: 23, KH: 3, KW: 3, StrideH: 1, StrideW: 1, Groups: 1},
	{Batch: 1, InC: 1, InH: 14, InW: 40, OutC: 7, KH: 7, KW: 7, StrideH: 1, StrideW: 1, Groups: 1},
	{Batch: 2, InC: 12, InH: 17, InW: 36, OutC: 15, KH: 3, KW: 3, StrideH: 2, StrideW: 2, Groups: 1},
	{Batch: 3, InC: 8, InH: 16, InW: 33, OutC: 23, KH: 3, KW: 3, StrideH: 2, StrideW: 2, Groups: 1},
	// Many output channels over few positions at batch 1 (Sabour's primary
	// capsules' proportions): a column panel mostly padding.
	{Batch: 1, InC: 3, InH: 7, InW: 7, OutC: 64, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, Groups: 1},
	{Batch: 1, InC: 4, InH: 9, InW: 8, OutC: 66, KH: 3, KW: 2, StrideH: 2, StrideW: 2, Groups: 2},
	// Kernels narrower than the stride: the direct data gradient's phases
	// without a tap (odd rows, odd columns or both) hold zeros.
	{Batch: 2, InC: 8, InH: 9, InW: 11, OutC: 8, KH: 1, KW: 1, StrideH: 2, StrideW: 2, Groups: 1},
	{Batch: 2, InC: 8, InH: 10, InW: 9, OutC: 16, KH: 1, KW: 3, StrideH: 2, StrideW: 2, Groups: 1},
}

// convCheckClose compares got with want element by element. The tolerance is
// 2·convEps32·(L+2)·abs[i], where abs[i] is Σ|terms| of element i (the same
// reference run on absolute values) and L the reduction length: the
// classical bound for a float32 sum of L products in any order (blocked,
// FMA or pairwise) is (L−1)·u·Σ|terms| with u = convEps32/2, plus one rounding
// for the product and one for the final store or accumulation. The float64
// reference contributes nothing at this scale. A wrong index or a missed tap
// changes an element by one whole term, far above this bound.
func convCheckClose(t *testing.T, what string, got, want, abs []float32, l int) {
	t.Helper()
	bad := 0
	for i := range want {
		tol := 2 * convEps32 * float64(l+2) * float64(abs[i])
		if d := math.Abs(float64(got[i]) - float64(want[i])); !(d <= tol) {
			if bad < 5 {
				t.Errorf("%s[%d] = %g, want %g (|diff| %.3g > tol %.3g)", what, i, got[i], want[i], d, tol)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d elements out of tolerance", what, bad, len(want))
	}
}

func convTestShapes() []ConvShape {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 120
	if testing.Short() || runtime.GOARCH == "arm64" {
		n = 30
	}
	shapes := append([]ConvShape(nil), fixedConvShapes...)
	for range n {
		s := randConvShape(rng)
		if s.Validate() != nil {
			panic(fmt.Sprintf("randConvShape drew an invalid shape %+v: %v", s, s.Validate()))
		}
		shapes = append(shapes, s)
	}
	return shapes
}

func TestConvVsRef(t *testing.T) {
	c0, f0 := convTargetCols, convMaxColFloats
	t.Run("plan=default", testConvVsRef)
	// Tiny chunks and one-channel slabs: several chunks with a partial last
	// one, and beta = 1 accumulation over slabs, on small shapes.
	defer func(c, f int) { convTargetCols, convMaxColFloats = c, f }(convTargetCols, convMaxColFloats)
	convTargetCols, convMaxColFloats = 40, 1
	t.Run("plan=tiny", testConvVsRef)
	convTargetCols, convMaxColFloats = c0, f0
	// The im2col path, which the implicit GEMM replaced on every
	// implementation with a blocked driver (it still runs on ref).
	t.Run("path=im2col", func(t *testing.T) {
		defer func() { convImplicit = true }()
		convImplicit = false
		testConvVsRef(t)
	})
	// The direct path on every shape it can take, however much of its
	// wide grid is thrown away.
	t.Run("path=direct-any", func(t *testing.T) {
		defer func(w float64, p int) { convDirectMaxWaste, convDirectMinFilterP = w, p }(convDirectMaxWaste, convDirectMinFilterP)
		convDirectMaxWaste, convDirectMinFilterP = 1, 0
		testConvVsRef(t)
	})
	// The implicit GEMM where the direct path (conv_direct.go) would run.
	t.Run("path=implicit", func(t *testing.T) {
		defer func() { convDirectOn = true }()
		convDirectOn = false
		testConvVsRef(t)
	})
	// The implicit GEMM on a portable 4×4 driver with tiny blocking (kc 5,
	// mc 9, nc 10): several reduction blocks, edge panels and tiles, and
	// the data-gradient sink over partial tiles, and the direct path on its
	// Go twin with reduction blocks of 5, on every GOARCH.
	t.Run("driver=go4x4-tiny", func(t *testing.T) {
		defer func(kc, fkc int) { convTestDriver, convDirectKC, convDirectFKC = nil, kc, fkc }(convDirectKC, convDirectFKC)
		convTestDriver = newSgemmBlocked(sgemmMicroGo, 4, 4, 5, 9, 10)
		convTestDriver.direct, convTestDriver.directA = sgemmDirectGo4x4, sgemmDirectAGo4x4
		convDirectKC, convDirectFKC = 5, 7 // several reduction blocks of the direct GEMMs
		defer func(p int) { convDirectMinFilterP = p }(convDirectMinFilterP)
		convDirectMinFilterP = 0
		testConvVsRef(t)
		// With tiny chunks and slabs too: batched chunks of the implicit
		// GEMM in several CHWN slabs (convImplicitSlabs), partial last
		// chunks, panels across positions and images.
		defer func(c, f int) { convTargetCols, convMaxColFloats = c, f }(convTargetCols, convMaxColFloats)
		convTargetCols, convMaxColFloats = 40, 1
		t.Run("plan=tiny", testConvVsRef)
	})
}

// sgemmDirectGo4x4 is the direct GEMM (sgemmDirectFn) on the portable 4×4
// micro-kernel: each tile's B rows gathered from their offsets into a
// packed panel, then sgemmMicroGo. It lets the direct convolutions run on
// every GOARCH in the tests.
func sgemmDirectGo4x4(m, n, kc int, a []float32, lda int, b []float32, offs []int32, c []float32, ldc int, alpha, beta float32) {
	const mr, nr = 4, 4
	panel := make([]float32, kc*nr)
	for j := 0; j < n; j += nr {
		for p := 0; p < kc; p++ {
			copy(panel[p*nr:(p+1)*nr], b[int(offs[p])+j:])
		}
		for i := 0; i < m; i += mr {
			sgemmMicroGo(kc, a[i/mr*lda:], panel, c[i*ldc+j:], ldc, alpha, beta)
		}
	}
}

// sgemmDirectAGo4x4 is the direct-A GEMM (sgemmDirectAFn) on the portable
// 4×4 micro-kernel: each tile's A rows gathered from their offsets into a
// packed panel, then sgemmMicroGo.
func sgemmDirectAGo4x4(m, n, kc int, a []float32, aoffs []int32, b []float32, ldb int, c []float32, ldc int, alpha, beta float32) {
	const mr, nr = 4, 4
	panel := make([]float32, kc*mr)
	for j := 0; j < n; j += nr {
		for i := 0; i < m; i += mr {
			for r := 0; r < mr; r++ {
				for p := 0; p < kc; p++ {
					panel[p*mr+r] = a[int(aoffs[i+r])+p]
				}
			}
			sgemmMicroGo(kc, panel, b[j/nr*ldb:], c[i*ldc+j:], ldc, alpha, beta)
		}
	}
}

// TestConvDirectTaken checks that the direct path runs where it should:
// on some of the test shapes (so that TestConvVsRef covers it) and on the
// deep model's stride-1 layer, for every implementation with a direct
// kernel.
func TestConvDirectTaken(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl string) {
		f, mr, nr := convDirectKernel()
		if f == nil {
			t.Skipf("%s has no direct kernel", impl)
		}
		fwd, data := 0, 0
		for _, s := range convTestShapes() {
			if _, ok := s.directForwardGeom(mr, nr); ok {
				fwd++
			}
			if _, ok := s.directDataGeom(mr, nr); ok {
				data++
			}
		}
		if fwd < 3 || data < 3 {
			t.Errorf("%s: %d test shapes take the direct forward and %d the direct data gradient, want 3 or more", impl, fwd, data)
		}
		deep := ConvShape{Batch: 32, InC: 32, InH: 34, InW: 34, OutC: 64, KH: 3, KW: 3, StrideH: 1, StrideW: 1, Groups: 1}
		deep2 := ConvShape{Batch: 32, InC: 64, InH: 32, InW: 32, OutC: 64, KH: 3, KW: 3, StrideH: 2, StrideW: 2, Groups: 1}
		for _, s := range []ConvShape{deep, deep2} {
			_, fok := s.directForwardGeom(mr, nr)
			_, dok := s.directDataGeom(mr, nr)
			wok := s.directFilter()
			if !fok || !dok || !wok {
				t.Errorf("%s: the deep model's 3×3 layer of stride %d: direct forward %v, data gradient %v, filter gradient %v", impl, s.StrideH, fok, dok, wok)
			}
		}
	})
}

// TestConvFilterFallback runs every tile of this build whose nr is not a
// power of two (avx512 8×48 and 6×48, the table's choice on Intel family 6
// model 167; avx2 4×24) as the convolutions' driver: a 3×3 filter gradient
// of 32 output channels, which such a tile would round up to 48 columns,
// takes the direct path on the fallback tile (sgemmBlocked.filterA), and
// every convolution matches the reference.
func TestConvFilterFallback(t *testing.T) {
	tiles := sgemmRunnableTiles()
	ran := 0
	for _, tile := range tiles {
		if tile.nr&(tile.nr-1) == 0 || tile.directA == nil {
			continue
		}
		ran++
		t.Run(tile.name, func(t *testing.T) {
			defer func() { convTestDriver = nil }()
			convTestDriver = newSgemmFromChoice(sgemmDefaultBlocking(tile))
			if convTestDriver.filterA == nil {
				t.Fatalf("%s: no fallback direct-A tile", tile.name)
			}
			// 32 output channels: 48 columns on any of these tiles.
			deep := ConvShape{Batch: 32, InC: 32, InH: 34, InW: 34, OutC: 32, KH: 3, KW: 3, StrideH: 1, StrideW: 1, Groups: 1}
			if _, _, ok := deep.directFilterGeom(tile.mr, tile.nr); ok {
				t.Fatalf("%s: the deep layer's filter gradient fits the tile itself; the test needs a shape that does not", tile.name)
			}
			if !deep.directFilter() {
				t.Errorf("%s: the deep model's 3×3 filter gradient does not take the fallback's direct path", tile.name)
			}
			testConvVsRef(t)
		})
	}
	if ran == 0 {
		t.Skip("no tile with nr not a power of two runs on this CPU (arm64, noasm)")
	}
}

func testConvVsRef(t *testing.T) {
	shapes := convTestShapes()
	forEachImpl(t, func(t *testing.T, _ string) {
		rng := rand.New(rand.NewPCG(3, 4))
		for si, s := range shapes {
			off := si % 4
			x := convRand(rng, s.XLen(), off)
			w := convRand(rng, s.WLen(), (off+1)%4)
			bias := convRand(rng, s.OutC, (off+2)%4)
			dy := convRand(rng, s.YLen(), (off+3)%4)
			work := convNaN(s.WorkSize(), off)
			name := fmt.Sprintf("shape %d %+v", si, s)
			cg, og := s.InC/s.Groups, s.OutC/s.Groups

			// Forward (output overwritten: prefilled with NaN; bias
			// alternately present and absent).
			b := bias
			if si%3 == 2 {
				b = nil
			}
			y := convNaN(s.YLen(), off)
			if err := ConvForward(s, y, x, w, b, work); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			want := make([]float32, s.YLen())
			convRef(s, want, x, w, b)
			abs := make([]float32, s.YLen())
			var absB []float32
			if b != nil {
				absB = convAbs(b)
			}
			convRef(s, abs, convAbs(x), convAbs(w), absB)
			convCheckClose(t, name+" y", y, want, abs, cg*s.KH*s.KW+1)

			// Backward data (dx overwritten).
			dx := convNaN(s.XLen(), off)
			for i := range work {
				work[i] = float32(math.NaN())
			}
			if err := ConvBackwardData(s, dx, dy, w, work); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			wantDx := make([]float32, s.XLen())
			convBackwardDataRef(s, wantDx, dy, w)
			absDx := make([]float32, s.XLen())
			convBackwardDataRef(s, absDx, convAbs(dy), convAbs(w))
			convCheckClose(t, name+" dx", dx, wantDx, absDx, og*s.KH*s.KW)

			// Backward filter (accumulating into non-zero dw, dbias).
			dw := convRand(rng, s.WLen(), off)
			db := convRand(rng, s.OutC, off)
			wantDw := append([]float32(nil), dw...)
			wantDb := append([]float32(nil), db...)
			absDw, absDb := convAbs(dw), convAbs(db)
			for i := range work {
				work[i] = float32(math.NaN())
			}
			if err := ConvBackwardFilter(s, dw, db, x, dy, work); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			convBackwardFilterRef(s, wantDw, wantDb, x, dy)
			convBackwardFilterRef(s, absDw, absDb, convAbs(x), convAbs(dy))
			l := s.Batch * s.OutH() * s.OutW()
			convCheckClose(t, name+" dw", dw, wantDw, absDw, l+1)
			convCheckClose(t, name+" dbias", db, wantDb, absDb, l+1)

			// dbias nil leaves the weight gradient unchanged.
			dw2 := convRand(rng, s.WLen(), 0)
			want2 := append([]float32(nil), dw2...)
			abs2 := convAbs(dw2)
			if err := ConvBackwardFilter(s, dw2, nil, x, dy, work); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			convBackwardFilterRef(s, want2, nil, x, dy)
			convBackwardFilterRef(s, abs2, nil, convAbs(x), convAbs(dy))
			convCheckClose(t, name+" dw (nil dbias)", dw2, want2, abs2, l+1)
			checkConvFused(t, name, s, x, w, b, dy, work)
			if t.Failed() {
				return
			}
		}
	})
}

// checkConvFused checks ConvForwardReLU against ConvForward then ReLU, and
// ConvBackward (with the ReLU mask, without, without dx) against
// ReLUBackward, ConvBackwardFilter and ConvBackwardData in sequence: the
// same operations in the same order, so the same bits.
func checkConvFused(t *testing.T, name string, s ConvShape, x, w, b, dy, work []float32) {
	t.Helper()
	y := make([]float32, s.YLen())
	yr := convNaN(s.YLen(), 0)
	if err := ConvForward(s, y, x, w, b, work); err != nil {
		t.Fatal(err)
	}
	if err := ConvForwardReLU(s, yr, x, w, b, work); err != nil {
		t.Fatal(err)
	}
	want := make([]float32, len(y))
	if err := ReLU(y, want); err != nil {
		t.Fatal(err)
	}
	convSameBits(t, name+" ConvForwardReLU", yr, want)
	for _, c := range []struct {
		what     string
		mask, dx bool
	}{{"ReLU mask", true, true}, {"no mask", false, true}, {"ReLU mask, no dx", true, false}} {
		rng := rand.New(rand.NewPCG(5, 6))
		dw, db := convRand(rng, s.WLen(), 0), convRand(rng, s.OutC, 0)
		wantDw, wantDb := append([]float32(nil), dw...), append([]float32(nil), db...)
		g, gWant := append([]float32(nil), dy...), append([]float32(nil), dy...)
		var yy, dx, wantDx []float32
		if c.mask {
			yy = yr
			if err := ReLUBackward(yr, gWant, gWant); err != nil {
				t.Fatal(err)
			}
		}
		if c.dx {
			dx, wantDx = convNaN(s.XLen(), 0), convNaN(s.XLen(), 0)
			if err := ConvBackwardData(s, wantDx, gWant, w, work); err != nil {
				t.Fatal(err)
			}
		}
		if err := ConvBackwardFilter(s, wantDw, wantDb, x, gWant, work); err != nil {
			t.Fatal(err)
		}
		if err := ConvBackward(s, dw, db, dx, x, g, w, yy, work); err != nil {
			t.Fatalf("%s ConvBackward (%s): %v", name, c.what, err)
		}
		convSameBits(t, name+" ConvBackward dy ("+c.what+")", g, gWant)
		convSameBits(t, name+" ConvBackward dw ("+c.what+")", dw, wantDw)
		convSameBits(t, name+" ConvBackward dbias ("+c.what+")", db, wantDb)
		convSameBits(t, name+" ConvBackward dx ("+c.what+")", dx, wantDx)
	}
}

// convSameBits reports the first elements where got and want differ in
// their bits.
func convSameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	bad := 0
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			if bad < 3 {
				t.Errorf("%s[%d] = %g, want %g (same bits)", what, i, got[i], want[i])
			}
			bad++
		}
	}
}

// convDot64 returns Σ a[i]·b[i] in float64.
func convDot64(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func convAbsDot64(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += math.Abs(float64(a[i]) * float64(b[i]))
	}
	return s
}

// TestConvRefFiniteDifference checks that the reference backward passes are
// the derivatives of the reference forward pass: with L = <R, y(x, w, b)>
// and a random direction δ, (L(p+δ) − L(p−δ))/2 must equal <∂L/∂p, δ>.
// The convolution is linear in each argument, so the central difference is
// exact in real arithmetic for any step (step 1 is used); what remains is
// the float32 rounding of y, at most convEps32·Σ|R·y| per evaluation.
func TestConvRefFiniteDifference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	shapes := append([]ConvShape(nil), fixedConvShapes...)
	for range 40 {
		shapes = append(shapes, randConvShape(rng))
	}
	for si, s := range shapes {
		name := fmt.Sprintf("shape %d %+v", si, s)
		x := convRand(rng, s.XLen(), 0)
		w := convRand(rng, s.WLen(), 0)
		bias := convRand(rng, s.OutC, 0)
		r := convRand(rng, s.YLen(), 0)
		y := make([]float32, s.YLen())
		loss := func(x, w, bias []float32) (l, scale float64) {
			convRef(s, y, x, w, bias)
			return convDot64(r, y), convAbsDot64(r, y)
		}
		dx := make([]float32, s.XLen())
		convBackwardDataRef(s, dx, r, w)
		dw := make([]float32, s.WLen())
		db := make([]float32, s.OutC)
		convBackwardFilterRef(s, dw, db, x, r)

		plusMinus := func(p, d []float32, sign float32) []float32 {
			q := make([]float32, len(p))
			for i := range p {
				q[i] = p[i] + sign*d[i]
			}
			return q
		}
		check := func(what string, grad, dir []float32, lp, sp, lm, sm float64) {
			fd := (lp - lm) / 2
			an := convDot64(grad, dir)
			tol := 4*convEps32*(sp+sm) + 1e-6*math.Abs(an)
			if math.Abs(fd-an) > tol {
				t.Errorf("%s: d/d%s: finite difference %g, backward %g (tol %g)", name, what, fd, an, tol)
			}
		}
		d := convRand(rng, len(x), 0)
		lp, sp := loss(plusMinus(x, d, 1), w, bias)
		lm, sm := loss(plusMinus(x, d, -1), w, bias)
		check("x", dx, d, lp, sp, lm, sm)
		d = convRand(rng, len(w), 0)
		lp, sp = loss(x, plusMinus(w, d, 1), bias)
		lm, sm = loss(x, plusMinus(w, d, -1), bias)
		check("w", dw, d, lp, sp, lm, sm)
		d = convRand(rng, len(bias), 0)
		lp, sp = loss(x, w, plusMinus(bias, d, 1))
		lm, sm = loss(x, w, plusMinus(bias, d, -1))
		check("bias", db, d, lp, sp, lm, sm)
	}
}

func TestConvShapeErrors(t *testing.T) {
	good := ConvShape{Batch: 2, InC: 4, InH: 6, InW: 5, OutC: 6, KH: 3, KW: 3, StrideH: 1, StrideW: 2, PadH: 1, PadW: 0, Groups: 2}
	if err := good.Validate(); err != nil {
		t.Fatalf("good shape: %v", err)
	}
	if good.OutH() != 6 || good.OutW() != 2 {
		t.Fatalf("OutH, OutW = %d, %d; want 6, 2", good.OutH(), good.OutW())
	}
	edge := ConvShape{Batch: 1, InC: 1, InH: 1, InW: 1, OutC: 1, KH: 3, KW: 5, StrideH: 1, StrideW: 1, PadH: 1, PadW: 2, Groups: 1}
	if err := edge.Validate(); err != nil || edge.OutH() != 1 || edge.OutW() != 1 {
		t.Fatalf("kernel equal to padded input: err %v, out %d×%d", err, edge.OutH(), edge.OutW())
	}
	cases := []struct {
		field string
		mod   func(*ConvShape)
	}{
		{"Batch", func(s *ConvShape) { s.Batch = -1 }},
		{"InC", func(s *ConvShape) { s.InC = 0 }},
		{"InH", func(s *ConvShape) { s.InH = -3 }},
		{"InW", func(s *ConvShape) { s.InW = 0 }},
		{"OutC", func(s *ConvShape) { s.OutC = 0 }},
		{"KH", func(s *ConvShape) { s.KH = 0 }},
		{"KW", func(s *ConvShape) { s.KW = -1 }},
		{"StrideH", func(s *ConvShape) { s.StrideH = 0 }},
		{"StrideW", func(s *ConvShape) { s.StrideW = -2 }},
		{"PadH", func(s *ConvShape) { s.PadH = -1 }},
		{"PadW", func(s *ConvShape) { s.PadW = -1 }},
		{"Groups", func(s *ConvShape) { s.Groups = 0 }},
		{"InC=5", func(s *ConvShape) { s.InC = 5 }},
		{"OutC=7", func(s *ConvShape) { s.OutC = 7 }},
		{"KH=9", func(s *ConvShape) { s.KH = 9 }},
		{"KW=6", func(s *ConvShape) { s.KW = 6 }},
	}
	for _, c := range cases {
		s := good
		c.mod(&s)
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: Validate() = %v, want an error naming %s", c.field, err, c.field)
			continue
		}
		big := make([]float32, 1<<12)
		if err := ConvForward(s, big, big, big, nil, big); err == nil {
			t.Errorf("%s: ConvForward accepted the bad shape", c.field)
		}
		if err := ConvBackwardData(s, big, big, big, big); err == nil {
			t.Errorf("%s: ConvBackwardData accepted the bad shape", c.field)
		}
		if err := ConvBackwardFilter(s, big, nil, big, big, big); err == nil {
			t.Errorf("%s: ConvBackwardFilter accepted the bad shape", c.field)
		}
		if err := ConvForwardReLU(s, big, big, big, nil, big); err == nil {
			t.Errorf("%s: ConvForwardReLU accepted the bad shape", c.field)
		}
		if err := ConvBackward(s, big, nil, big, big, big, big, big, big); err == nil {
			t.Errorf("%s: ConvBackward accepted the bad shape", c.field)
		}
	}

	// Short slices, each in turn.
	s := good
	x, y, w, b := make([]float32, s.XLen()), make([]float32, s.YLen()), make([]float32, s.WLen()), make([]float32, s.OutC)
	work := make([]float32, s.WorkSize())
	if s.WorkSize() == 0 {
		t.Fatal("GEMM-path shape has WorkSize 0")
	}
	if err := ConvForward(s, y, x, w, b, work); err != nil {
		t.Fatalf("good call: %v", err)
	}
	short := func(v []float32) []float32 { return v[:len(v)-1] }
	for i, err := range []error{
		ConvForward(s, short(y), x, w, b, work),
		ConvForward(s, y, short(x), w, b, work),
		ConvForward(s, y, x, short(w), b, work),
		ConvForward(s, y, x, w, short(b), work),
		ConvForward(s, y, x, w, b, short(work)),
		ConvBackwardData(s, short(x), y, w, work),
		ConvBackwardData(s, x, short(y), w, work),
		ConvBackwardData(s, x, y, short(w), work),
		ConvBackwardData(s, x, y, w, short(work)),
		ConvBackwardFilter(s, short(w), b, x, y, work),
		ConvBackwardFilter(s, w, short(b), x, y, work),
		ConvBackwardFilter(s, w, b, short(x), y, work),
		ConvBackwardFilter(s, w, b, x, short(y), work),
		ConvBackwardFilter(s, w, b, x, y, short(work)),
		ConvForwardReLU(s, short(y), x, w, b, work),
		ConvForwardReLU(s, y, x, w, short(b), work),
		ConvBackward(s, short(w), b, x, x, y, w, y, work),
		ConvBackward(s, w, short(b), x, x, y, w, y, work),
		ConvBackward(s, w, b, short(x), x, y, w, y, work),
		ConvBackward(s, w, b, x, short(x), y, w, y, work),
		ConvBackward(s, w, b, x, x, short(y), w, y, work),
		ConvBackward(s, w, b, x, x, y, short(w), y, work),
		ConvBackward(s, w, b, x, x, y, w, short(y), work),
		ConvBackward(s, w, b, x, x, y, w, y, short(work)),
	} {
		if err == nil {
			t.Errorf("short-slice case %d: no error", i)
		}
	}
	// Batch 0 is a valid no-op.
	s.Batch = 0
	if err := ConvForward(s, nil, nil, w, nil, nil); err != nil {
		t.Errorf("batch 0: %v", err)
	}
}

func TestConvAllocs(t *testing.T) {
	shapes := []ConvShape{
		fixedConvShapes[0], // depthwise direct
		fixedConvShapes[2], // GEMM, chunked, groups
		{Batch: 1, InC: 3, InH: 8, InW: 8, OutC: 4, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, Groups: 1},
	}
	forEachImpl(t, func(t *testing.T, _ string) {
		rng := rand.New(rand.NewPCG(7, 8))
		for _, s := range shapes {
			x, w, b := convRand(rng, s.XLen(), 0), convRand(rng, s.WLen(), 0), convRand(rng, s.OutC, 0)
			y, dy := convRand(rng, s.YLen(), 0), convRand(rng, s.YLen(), 0)
			dx, dw, db := make([]float32, s.XLen()), make([]float32, s.WLen()), make([]float32, s.OutC)
			work := make([]float32, s.WorkSize())
			var err error
			for what, f := range map[string]func(){
				"ConvForward":        func() { err = ConvForward(s, y, x, w, b, work) },
				"ConvBackwardData":   func() { err = ConvBackwardData(s, dx, dy, w, work) },
				"ConvBackwardFilter": func() { err = ConvBackwardFilter(s, dw, db, x, dy, work) },
				"ConvForwardReLU":    func() { err = ConvForwardReLU(s, y, x, w, b, work) },
				"ConvBackward":       func() { err = ConvBackward(s, dw, db, dx, x, dy, w, y, work) },
			} {
				if a := testing.AllocsPerRun(5, f); a != 0 || err != nil {
					t.Errorf("%s %+v: %v allocations per call, err %v", what, s, a, err)
				}
			}
		}
	})
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
			_, mr, nr := convDirectKernel()
			_, direct := s.directForwardGeom(mr, nr)
			if tail := big[s.WorkSize():]; Impl() != "ref" && !direct && len(tail) > 0 && !slices.ContainsFunc(tail, func(v float32) bool { return v == v }) {
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

// TestTransposePanels: the blocked transpose of the direct filter
// gradient writes what its doc comment's loop writes, and nothing at the
// thrown-away positions or past the channels, for channel counts around
// the tile's width and rows around the block's length, on every
// implementation (AVX-512's transpose16 takes the groups of 16 channels).
func TestTransposePanels(t *testing.T) {
	forEachImpl(t, testTransposePanels)
}

func testTransposePanels(t *testing.T, impl string) {
	for _, tc := range []struct{ c, oh, ow, wp, nr int }{
		{32, 34, 34, 40, 32}, {1, 1, 1, 1, 16}, {17, 3, 15, 16, 16}, {33, 5, 17, 20, 32},
		{64, 7, 16, 16, 32}, {5, 2, 33, 40, 8}, {48, 3, 7, 8, 32}, {128, 7, 7, 8, 32}, {16, 2, 1, 1, 16},
	} {
		p := tc.oh * tc.wp
		n := roundUp(tc.c, tc.nr)
		dy := make([]float32, tc.c*tc.oh*tc.ow)
		for i := range dy {
			dy[i] = float32(i + 1)
		}
		want := make([]float32, p*n)
		got := make([]float32, p*n)
		for i := range want {
			want[i], got[i] = -1, -1
		}
		for o := 0; o < tc.c; o++ {
			for y := 0; y < tc.oh; y++ {
				for x := 0; x < tc.ow; x++ {
					want[o/tc.nr*p*tc.nr+(y*tc.wp+x)*tc.nr+o%tc.nr] = dy[o*tc.oh*tc.ow+y*tc.ow+x]
				}
			}
		}
		transposePanels(got, dy, tc.c, tc.oh, tc.ow, tc.wp, p, tc.nr)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%+v: element %d is %v, want %v", tc, i, got[i], want[i])
			}
		}
	}
}
