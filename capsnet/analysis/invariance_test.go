package analysis

import (
	"math"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/train/data"
)

// TestInvarianceHandCases: corr of capsule norms over k = 2 images:
// (1, 0) vs (0, 1) is 0, (1, 1) vs (1, 0) is 1/√2, (0.5, 2) vs (1, 4) is
// 1 (a scaled copy), and a capsule that is 0 on every original image is
// left out; streaming the two images one by one gives the same.
func TestInvarianceHandCases(t *testing.T) {
	layers := []capsnet.LayerInfo{{Name: "l", N: 4, D: 2}}
	orig := [][]float64{{1, 1, 0.5, 0}, {0, 1, 2, 0}}
	trans := [][]float64{{0, 1, 1, 0.3}, {1, 0, 4, 0.3}}
	want := []float64{0, 1 / math.Sqrt2, 1, math.NaN()}
	for _, split := range []bool{false, true} {
		v, err := NewInvariance(layers, 2)
		if err != nil {
			t.Fatal(err)
		}
		if split {
			for b := 0; b < 2; b++ {
				o, sh := caps(orig[b:b+1], 2)
				tr, _ := caps(trans[b:b+1], 2)
				if err := v.AddPair(0, o, tr, sh, 1); err != nil {
					t.Fatal(err)
				}
				v.AddImages(1)
			}
		} else {
			o, sh := caps(orig, 2)
			tr, _ := caps(trans, 2)
			if err := v.AddPair(0, o, tr, sh, 2); err != nil {
				t.Fatal(err)
			}
			v.AddImages(2)
		}
		k, rep := v.Report()
		L := rep[0]
		for i, w := range want {
			if got := L.PerCapsule[i]; !(near(got, w) || math.IsNaN(got) && math.IsNaN(w)) {
				t.Errorf("split %v: capsule %d corr %v, want %v", split, i, got, w)
			}
		}
		if k != 2 || L.Skipped != 1 || !near(L.Corr, (1/math.Sqrt2+1)/3) {
			t.Errorf("split %v: k %d, skipped %d, layer corr %v; want 2, 1, %v", split, k, L.Skipped, L.Corr, (1/math.Sqrt2+1)/3)
		}
	}
}

// TestInvarianceNet: on a tiny model, the identity transform gives corr 1
// for every capsule with a norm, a 45° rotation gives less than 1 on some
// layer and never outside [0, 1] (norms are ≥ 0); AddNet does not
// allocate.
func TestInvarianceNet(t *testing.T) {
	const batch = 6
	net, te := tinyNet(t, 5, batch)
	sz := te.ImageSize()
	x := te.X[:batch*sz]
	xr := make([]float32, len(x))
	for b := 0; b < batch; b++ {
		dst := data.Image{C: 1, H: te.H, W: te.W, Pix: xr[b*sz : (b+1)*sz]}
		if err := data.Transform(dst, te.Image(b), data.FamilyRotation, 45); err != nil {
			t.Fatal(err)
		}
	}
	same, _ := NewInvariance(net.Layers(), batch)
	rot, _ := NewInvariance(net.Layers(), batch)
	if err := same.AddNet(net, x, x, batch); err != nil {
		t.Fatal(err)
	}
	if err := rot.AddNet(net, x, xr, batch); err != nil {
		t.Fatal(err)
	}
	_, s := same.Report()
	k, r := rot.Report()
	below := false
	for l := range s {
		for i, c := range s[l].PerCapsule {
			if !math.IsNaN(c) && math.Abs(c-1) > 1e-12 {
				t.Errorf("identity: layer %d capsule %d corr %v, want 1", l, i, c)
			}
		}
		if !(r[l].Corr >= 0 && r[l].Corr <= 1+1e-12) {
			t.Errorf("rotation: layer %d corr %v outside [0, 1]", l, r[l].Corr)
		}
		below = below || r[l].Corr < 1-1e-6
	}
	if !below || k != batch {
		t.Errorf("a 45° rotation left every layer's corr at 1 (k %d)", k)
	}
	if n := testing.AllocsPerRun(3, func() { rot.AddNet(net, x, xr, batch) }); n != 0 {
		t.Errorf("AddNet allocates %v times", n)
	}
}
