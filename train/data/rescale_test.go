package data

import (
	"math"
	"slices"
	"testing"
)

func image1(h, w int, pix ...float32) Image { return Image{C: 1, H: h, W: w, Pix: pix} }

// TestRescaleHandComputed checks Rescale against cases computed by hand.
func TestRescaleHandComputed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		src      Image
		dh, dw   int
		want     []float32
		tolerate float64
	}{
		// 4×4 → 2×2: block means of 2×2.
		{"block means", image1(4, 4,
			0, 1, 2, 3,
			4, 5, 6, 7,
			8, 9, 10, 11,
			12, 13, 14, 15), 2, 2, []float32{2.5, 4.5, 10.5, 12.5}, 0},
		// 3×3 → 2×2: output pixel 0 covers source rows [0, 1.5): row 0
		// with weight 2/3, row 1 with 1/3; columns likewise. A single 9
		// at the centre reaches every output pixel with weight 1/9.
		{"centre pixel", image1(3, 3,
			0, 0, 0,
			0, 9, 0,
			0, 0, 0), 2, 2, []float32{1, 1, 1, 1}, 0},
		// A 9 in the corner: weight (2/3)² = 4/9 in its own output pixel.
		{"corner pixel", image1(3, 3,
			9, 0, 0,
			0, 0, 0,
			0, 0, 0), 2, 2, []float32{4, 0, 0, 0}, 0},
		// One row of three, weights (2/3, 1/3) and (1/3, 2/3) per output column:
		// (2·3 + 6)/3 = 4 and (6 + 2·9)/3 = 8.
		{"row 3→2", image1(1, 3, 3, 6, 9), 1, 2, []float32{4, 8}, 1e-6},
		// Each axis on its own: 2×4 → 1×2 averages the two 2×2 halves.
		{"non-square", image1(2, 4,
			1, 2, 3, 4,
			5, 6, 7, 8), 1, 2, []float32{3.5, 5.5}, 0},
		// Upscaling 2 → 3 along a row: the middle pixel straddles both.
		{"upscale", image1(1, 2, 3, 6), 1, 3, []float32{3, 4.5, 6}, 0},
		// Equal sizes: a copy.
		{"identity", image1(2, 2, 0.1, 0.2, 0.3, 0.4), 2, 2, []float32{0.1, 0.2, 0.3, 0.4}, 0},
	} {
		dst := canvas(1, tc.dh, tc.dw)
		if err := Rescale(dst, tc.src); err != nil {
			t.Fatal(err)
		}
		for i, v := range dst.Pix {
			if d := math.Abs(float64(v - tc.want[i])); d > tc.tolerate {
				t.Errorf("%s: got %v, want %v", tc.name, dst.Pix, tc.want)
				break
			}
		}
	}
}

// TestRescaleDigits: 40×40 AffNIST digits shrunk to 28×28 keep their ink
// (sum times 28²/40²), stay in [0, 1], a constant image stays exactly
// constant, and the batcher's PlacementRescale gives Rescale's images
// without allocating.
func TestRescaleDigits(t *testing.T) {
	aff, err := AffNIST(testDigits(t, 12), 3)
	if err != nil {
		t.Fatal(err)
	}
	small := canvas(1, 28, 28)
	for i := 0; i < aff.N; i++ {
		if err := Rescale(small, aff.Image(i)); err != nil {
			t.Fatal(err)
		}
		want := sum(aff.Image(i).Pix) * 28 * 28 / (40 * 40)
		if got := sum(small.Pix); math.Abs(got-want) > 1e-4*want {
			t.Errorf("digit %d: ink %v after rescaling, want %v", i, got, want)
		}
		for _, v := range small.Pix {
			if !(v >= 0 && v <= 1) {
				t.Fatalf("digit %d: value %v", i, v)
			}
		}
	}
	flat := canvas(1, 40, 40)
	for i := range flat.Pix {
		flat.Pix[i] = 0.7
	}
	if err := Rescale(small, flat); err != nil {
		t.Fatal(err)
	}
	for _, v := range small.Pix {
		if v != 0.7 {
			t.Fatalf("a constant 0.7 image rescales to %v", v)
		}
	}
	it, err := NewBatcher(aff, BatchConfig{Size: 5, Placement: PlacementRescale, CanvasH: 28, CanvasW: 28})
	if err != nil {
		t.Fatal(err)
	}
	if c, h, w := it.Shape(); c != 1 || h != 28 || w != 28 {
		t.Fatalf("rescale placement: shape %d×%d×%d, want 1×28×28", c, h, w)
	}
	b := it.NewBatch()
	for it.Next(b) {
		for k := 0; k < b.N; k++ {
			if err := Rescale(small, aff.Image(b.Index[k])); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(b.Image(k).Pix, small.Pix) {
				t.Fatalf("batch image %d differs from Rescale's", b.Index[k])
			}
		}
	}
	if it.Err() != nil {
		t.Fatal(it.Err())
	}
	it.StartEpoch(0)
	if a := testing.AllocsPerRun(5, func() {
		if !it.Next(b) {
			it.StartEpoch(0)
		}
	}); a != 0 {
		t.Errorf("rescaling batches allocates %v times", a)
	}
}

func TestRescaleErrors(t *testing.T) {
	if err := Rescale(canvas(3, 2, 2), canvas(1, 4, 4)); err == nil {
		t.Error("1 channel into 3: no error")
	}
	if err := Rescale(canvas(1, 2, 2), Image{C: 1, H: 4, W: 4, Pix: make([]float32, 15)}); err == nil {
		t.Error("short source: no error")
	}
	ds := testDigits(t, 2)
	for _, hw := range [][2]int{{-1, 28}, {28, 0}, {1 << 20, 1 << 20}} {
		if _, err := NewBatcher(ds, BatchConfig{Size: 1, Placement: PlacementRescale, CanvasH: hw[0], CanvasW: hw[1]}); err == nil {
			t.Errorf("rescale to %d×%d: no error", hw[0], hw[1])
		}
	}
}

func TestPlacementFor(t *testing.T) {
	for _, tc := range []struct {
		h, w, mh, mw int
		want         Placement
	}{
		{28, 28, 28, 28, PlacementNone},
		{28, 28, 40, 40, PlacementCenter},
		{40, 40, 28, 28, PlacementRescale},
		{28, 40, 40, 28, PlacementRescale},
	} {
		if got := PlacementFor(tc.h, tc.w, tc.mh, tc.mw); got != tc.want {
			t.Errorf("PlacementFor(%d×%d on %d×%d) = %v, want %v", tc.h, tc.w, tc.mh, tc.mw, got, tc.want)
		}
	}
	if PlacementRescale.String() != "rescale" {
		t.Errorf("PlacementRescale prints as %q", PlacementRescale)
	}
}
