package data

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
)

// embeddedTrain loads the embedded training digits once for all tests.
var embeddedTrain = sync.OnceValues(func() (*Dataset, error) {
	tr, _, err := LoadEmbeddedMNIST()
	return tr, err
})

// testDigits returns the first n embedded MNIST training digits (shared:
// tests must not modify them).
func testDigits(t *testing.T, n int) *Dataset {
	t.Helper()
	tr, err := embeddedTrain()
	if err != nil {
		t.Fatal(err)
	}
	d, err := tr.Slice(0, n)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func canvas(c, h, w int) Image { return Image{C: c, H: h, W: w, Pix: make([]float32, c*h*w)} }

func sum(p []float32) float64 {
	s := 0.0
	for _, v := range p {
		s += float64(v)
	}
	return s
}

// at returns pixel (y, x) of channel 0, zero outside the image.
func at(im Image, y, x int) float32 {
	if y < 0 || x < 0 || y >= im.H || x >= im.W {
		return 0
	}
	return im.Pix[y*im.W+x]
}

func TestPlaceKeepsPixels(t *testing.T) {
	d := testDigits(t, 20)
	dst := canvas(1, 40, 40)
	rng := rand.New(rand.NewPCG(5, 6))
	seenY, seenX := map[int]bool{}, map[int]bool{}
	for i := 0; i < d.N; i++ {
		src := d.Image(i)
		for rep := 0; rep < 20; rep++ {
			// stale content must be cleared
			for k := range dst.Pix {
				dst.Pix[k] = 0.5
			}
			y0, x0, err := PlaceRandom(dst, src, rng)
			if err != nil {
				t.Fatal(err)
			}
			if y0 < 0 || x0 < 0 || y0 > 12 || x0 > 12 {
				t.Fatalf("offset (%d,%d) outside 0..12", y0, x0)
			}
			seenY[y0], seenX[x0] = true, true
			// every source pixel exactly where it belongs, zero elsewhere
			for y := 0; y < 40; y++ {
				for x := 0; x < 40; x++ {
					if want := at(src, y-y0, x-x0); at(dst, y, x) != want {
						t.Fatalf("image %d at (%d,%d): pixel (%d,%d) = %v, want %v", i, y0, x0, y, x, at(dst, y, x), want)
					}
				}
			}
			if s, w := sum(dst.Pix), sum(src.Pix); s != w {
				t.Fatalf("sum %v, want %v", s, w)
			}
		}
	}
	if len(seenY) != 13 || len(seenX) != 13 {
		t.Errorf("400 random placements used %d row and %d column offsets, want all 13", len(seenY), len(seenX))
	}

	if err := PlaceCenter(dst, d.Image(0)); err != nil {
		t.Fatal(err)
	}
	if y0, x0 := CenterOffset(40, 40, 28, 28); y0 != 6 || x0 != 6 {
		t.Errorf("CenterOffset = (%d,%d), want (6,6)", y0, x0)
	}
	for y := 0; y < 40; y++ {
		for x := 0; x < 40; x++ {
			if at(dst, y, x) != at(d.Image(0), y-6, x-6) {
				t.Fatalf("centered: pixel (%d,%d) wrong", y, x)
			}
		}
	}
	// two channels, non-square
	src := canvas(2, 2, 3)
	for k := range src.Pix {
		src.Pix[k] = float32(k+1) / 10
	}
	dst = canvas(2, 4, 5)
	if err := PlaceAt(dst, src, 1, 2); err != nil {
		t.Fatal(err)
	}
	if dst.Pix[1*5+2] != 0.1 || dst.Pix[20+2*5+4] != 1.2 || sum(dst.Pix) != sum(src.Pix) {
		t.Errorf("two-channel placement wrong: %v", dst.Pix)
	}
	if err := PlaceAt(dst, src, 3, 0); err == nil {
		t.Error("placement past the bottom: no error")
	}
	if err := PlaceAt(canvas(1, 4, 5), src, 0, 0); err == nil {
		t.Error("channel mismatch: no error")
	}
	if err := PlaceCenter(canvas(2, 1, 5), src); err == nil {
		t.Error("canvas smaller than the image: no error")
	}
}

func TestPlaceRandomDeterministic(t *testing.T) {
	d := testDigits(t, 1)
	run := func(seed uint64) []int {
		rng := rand.New(rand.NewPCG(seed, 0))
		var offs []int
		for i := 0; i < 50; i++ {
			y0, x0, err := PlaceRandom(canvas(1, 40, 40), d.Image(0), rng)
			if err != nil {
				t.Fatal(err)
			}
			offs = append(offs, y0, x0)
		}
		return offs
	}
	a, b, c := run(1), run(1), run(2)
	same := func(u, v []int) bool {
		for i := range u {
			if u[i] != v[i] {
				return false
			}
		}
		return true
	}
	if !same(a, b) {
		t.Error("same seed, different placements")
	}
	if same(a, c) {
		t.Error("seeds 1 and 2 gave the same 50 placements")
	}
}

func TestAffineIdentityAndTranslation(t *testing.T) {
	d := testDigits(t, 5)
	padded, out := canvas(1, 40, 40), canvas(1, 40, 40)
	for i := 0; i < d.N; i++ {
		src := d.Image(i)
		if err := PlaceCenter(padded, src); err != nil {
			t.Fatal(err)
		}
		// magnitude 0 of every family, and the identity, reproduce the
		// padded digit bit for bit
		for _, f := range Families() {
			if err := Transform(out, src, f, 0); err != nil {
				t.Fatal(err)
			}
			for k := range out.Pix {
				if out.Pix[k] != padded.Pix[k] {
					t.Fatalf("%v at magnitude 0: pixel %d = %v, want %v", f, k, out.Pix[k], padded.Pix[k])
				}
			}
		}
		// same-size source: identity is a copy
		if err := IdentityAffine().Apply(out, padded); err != nil {
			t.Fatal(err)
		}
		for k := range out.Pix {
			if out.Pix[k] != padded.Pix[k] {
				t.Fatalf("identity on 40×40: pixel %d differs", k)
			}
		}
		// integer translations move pixels exactly
		for _, s := range [][2]int{{3, -2}, {-8, 8}, {1, 0}, {0, -5}} {
			a := IdentityAffine()
			a.TX, a.TY = float64(s[0]), float64(s[1])
			if err := a.Apply(out, src); err != nil {
				t.Fatal(err)
			}
			for y := 0; y < 40; y++ {
				for x := 0; x < 40; x++ {
					if got, want := at(out, y, x), at(padded, y-s[1], x-s[0]); got != want {
						t.Fatalf("shift %v: pixel (%d,%d) = %v, want %v", s, y, x, got, want)
					}
				}
			}
			if s[0] == 3 {
				// the TranslateX / TranslateY families are the same maps
				if err := Transform(padded, src, FamilyTranslateX, 3); err != nil {
					t.Fatal(err)
				}
				for y := 0; y < 40; y++ {
					for x := 0; x < 40; x++ {
						if at(padded, y, x) != at(d.Image(i), y-6, x-6-3) {
							t.Fatalf("translate-x 3: pixel (%d,%d) wrong", y, x)
						}
					}
				}
				if err := PlaceCenter(padded, src); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// TestAffineConventions pins the documented directions with a single lit
// pixel on an odd canvas (center on a pixel): rotation counter-clockwise,
// shear moving lower rows right, scale about the center.
func TestAffineConventions(t *testing.T) {
	const n = 21 // center (10,10)
	dot := func(y, x int) Image {
		im := canvas(1, n, n)
		im.Pix[y*n+x] = 1
		return im
	}
	argmax := func(im Image) (int, int) {
		best, by, bx := float32(-1), 0, 0
		for y := 0; y < n; y++ {
			for x := 0; x < n; x++ {
				if v := im.Pix[y*n+x]; v > best {
					best, by, bx = v, y, x
				}
			}
		}
		return by, bx
	}
	out := canvas(1, n, n)
	cases := []struct {
		a          Affine
		y, x       int // the dot
		wantY, wX  int // where it goes
		exactValue bool
	}{
		{Affine{Rotation: 90, Scale: 1}, 10, 15, 5, 10, false},   // right of center → above
		{Affine{Rotation: -90, Scale: 1}, 10, 15, 15, 10, false}, // → below
		{Affine{Shear: 45, Scale: 1}, 14, 10, 14, 14, true},      // 4 below center → 4 right
		{Affine{Shear: 45, Scale: 1}, 6, 10, 6, 6, true},         // 4 above → 4 left
		{Affine{Scale: 2}, 10, 13, 10, 16, false},                // 3 right → 6 right
		{Affine{Rotation: 90, Scale: 1, TX: 2}, 10, 15, 5, 12, false},
	}
	for _, c := range cases {
		if err := c.a.Apply(out, dot(c.y, c.x)); err != nil {
			t.Fatal(err)
		}
		gy, gx := argmax(out)
		if gy != c.wantY || gx != c.wX {
			t.Errorf("%+v: dot at (%d,%d) went to (%d,%d), want (%d,%d)", c.a, c.y, c.x, gy, gx, c.wantY, c.wX)
		}
		if v := out.Pix[gy*n+gx]; c.exactValue && math.Abs(float64(v)-1) > 1e-9 {
			t.Errorf("%+v: value %v, want 1", c.a, v)
		}
	}
	// Matrix (forward) and the inverse used for sampling agree.
	rng := rand.New(rand.NewPCG(8, 8))
	for i := 0; i < 100; i++ {
		a := AffNISTRanges.Sample(rng)
		m := a.Matrix()
		inv, err := a.inverse()
		if err != nil {
			t.Fatal(err)
		}
		for r := 0; r < 2; r++ {
			for c := 0; c < 2; c++ {
				v := m[r][0]*inv[0][c] + m[r][1]*inv[1][c]
				want := 0.0
				if r == c {
					want = 1
				}
				if math.Abs(v-want) > 1e-12 {
					t.Fatalf("%+v: Matrix·inverse [%d][%d] = %v", a, r, c, v)
				}
			}
		}
	}
	for _, bad := range []Affine{{}, {Scale: -1}, {Scale: 1, Shear: 90}, {Scale: 1, TX: math.NaN()}} {
		if err := bad.Apply(out, out); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

func TestAffNIST(t *testing.T) {
	d := testDigits(t, 40)
	a, err := AffNIST(d, 7)
	if err != nil {
		t.Fatal(err)
	}
	if a.N != 40 || a.H != 40 || a.W != 40 || a.C != 1 || a.Name != d.Name+"-affnist" {
		t.Fatalf("got %s %d×%d×%d×%d", a.Name, a.N, a.C, a.H, a.W)
	}
	if err := a.Validate(); err != nil { // pixels in [0,1], labels kept in range
		t.Fatal(err)
	}
	for i := range d.Y {
		if a.Y[i] != d.Y[i] {
			t.Fatal("labels changed")
		}
	}
	b, _ := AffNIST(d, 7)
	c, _ := AffNIST(d, 8)
	sameB, sameC := true, true
	for k := range a.X {
		sameB = sameB && a.X[k] == b.X[k]
		sameC = sameC && a.X[k] == c.X[k]
	}
	if !sameB || sameC {
		t.Errorf("determinism: same seed equal = %v (want true), other seed equal = %v (want false)", sameB, sameC)
	}
	// a map depends on (seed, i) only: image 3 of a subset starting at 0
	// is image 3 of the whole.
	s, _ := d.Slice(0, 4)
	sa, _ := AffNIST(s, 7)
	for k := range sa.X {
		if sa.X[k] != a.X[k] {
			t.Fatal("AffNIST of a prefix differs from the prefix of AffNIST")
		}
	}
	// maps within the ranges of docs/semantics.md §6, and they vary
	var prev Affine
	for i := 0; i < 200; i++ {
		m := AffNISTAffine(7, i)
		if math.Abs(m.Rotation) > 20 || math.Abs(m.Shear) > 40 || m.Scale < 0.8 || m.Scale > 1.2 || math.Abs(m.TX) > 8 || math.Abs(m.TY) > 8 {
			t.Fatalf("map %d out of range: %+v", i, m)
		}
		if m == prev {
			t.Fatalf("maps %d and %d equal", i-1, i)
		}
		prev = m
	}
	// The transformed digits keep roughly their ink: scale changes it by
	// s², and little falls off a 40×40 canvas; bounds are loose.
	for i := 0; i < d.N; i++ {
		r := sum(a.Image(i).Pix) / sum(d.Image(i).Pix)
		if r < 0.3 || r > 1.6 {
			t.Errorf("image %d: ink ratio %.2f after %+v", i, r, AffNISTAffine(7, i))
		}
	}
}

func TestFamilies(t *testing.T) {
	for _, f := range Families() {
		g, err := ParseFamily(f.String())
		if err != nil || g != f {
			t.Errorf("ParseFamily(%q) = %v, %v", f.String(), g, err)
		}
	}
	if _, err := ParseFamily("zoom"); err == nil {
		t.Error("ParseFamily(zoom): no error")
	}
	a, _ := FamilyAffine(FamilyScale, 0.2)
	if a.Scale != 1.2 || a.Rotation != 0 {
		t.Errorf("scale 0.2: %+v", a)
	}
	if _, err := FamilyAffine(Family(99), 1); err == nil {
		t.Error("unknown family: no error")
	}
	// outputs in [0,1] over a sweep of magnitudes
	d := testDigits(t, 3)
	out := canvas(1, 40, 40)
	for _, f := range Families() {
		for _, m := range []float64{-30, -7.5, -0.3, 0.25, 3, 12.7, 45} {
			if f == FamilyScale {
				m = m / 100
			}
			for i := 0; i < d.N; i++ {
				if err := Transform(out, d.Image(i), f, m); err != nil {
					t.Fatal(err)
				}
				for _, v := range out.Pix {
					if !(v >= 0 && v <= 1) {
						t.Fatalf("%v %v: value %v", f, m, v)
					}
				}
			}
		}
	}
}

func TestAffineApplyNoAlloc(t *testing.T) {
	d := testDigits(t, 1)
	out := canvas(1, 40, 40)
	a := Affine{Rotation: 13, Shear: -20, Scale: 1.1, TX: 2.5, TY: -1}
	if n := testing.AllocsPerRun(20, func() { _ = a.Apply(out, d.Image(0)) }); n != 0 {
		t.Errorf("Apply: %v allocations", n)
	}
}

func TestShift(t *testing.T) {
	ds := testDigits(t, 3)
	rng := rand.New(rand.NewPCG(5, 6))
	for k := 0; k < ds.N; k++ {
		src := ds.Image(k)
		out := canvas(1, 28, 28)
		for _, s := range [][2]int{{0, 0}, {2, -2}, {-1, 2}, {-2, 0}, {0, 1}, {27, 0}, {0, -27}, {28, 3}, {-40, -40}} {
			if err := Shift(out, src, s[0], s[1]); err != nil {
				t.Fatal(err)
			}
			for y := 0; y < 28; y++ {
				for x := 0; x < 28; x++ {
					if got, want := at(out, y, x), at(src, y-s[0], x-s[1]); got != want {
						t.Fatalf("shift %v: pixel (%d,%d) = %v, want %v", s, y, x, got, want)
					}
				}
			}
		}
		seen := map[[2]int]bool{}
		for n := 0; n < 200; n++ {
			dy, dx, err := ShiftRandom(out, src, 2, rng)
			if err != nil {
				t.Fatal(err)
			}
			if dy < -2 || dy > 2 || dx < -2 || dx > 2 {
				t.Fatalf("ShiftRandom(2) drew (%d,%d)", dy, dx)
			}
			seen[[2]int{dy, dx}] = true
			if at(out, 14, 14) != at(src, 14-dy, 14-dx) {
				t.Fatalf("ShiftRandom returned (%d,%d) but shifted otherwise", dy, dx)
			}
		}
		if len(seen) != 25 {
			t.Errorf("ShiftRandom(2) drew %d of the 25 shifts in 200 tries", len(seen))
		}
	}
	if err := Shift(canvas(1, 40, 40), ds.Image(0), 0, 0); err == nil {
		t.Error("shift into a larger image: no error")
	}
	if _, _, err := ShiftRandom(canvas(1, 28, 28), ds.Image(0), -1, rng); err == nil {
		t.Error("negative maximum shift: no error")
	}
}
