package analysis

import (
	"math"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
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
