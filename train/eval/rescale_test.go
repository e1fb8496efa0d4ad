package eval

import (
	"math"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/analysis"
	"github.com/capstan-ml/capstan/train/data"
)

// TestInvarianceRescaled: 40×40 AffNIST images for a 28×28 model are
// transformed at 40×40 and then rescaled, both versions: the sweep equals
// that computed image by image that way, and magnitude 0 is the identity.
// ParseTree takes them through the batcher's PlacementRescale.
func TestInvarianceRescaled(t *testing.T) {
	p, te := tinyModel(t)
	digits, _ := te.Slice(0, 6)
	aff, err := data.AffNIST(digits, 1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := data.NewBatcher(aff, data.BatchConfig{Size: 4})
	if err != nil {
		t.Fatal(err)
	}
	mags := map[data.Family][]float64{data.FamilyTranslateX: {0, 7}}
	pts, err := Invariance(p, b, 0, []data.Family{data.FamilyTranslateX}, mags)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 2 || pts[0].K != 6 {
		t.Fatalf("%d points, k %d; want 2, 6", len(pts), pts[0].K)
	}
	for _, l := range pts[0].Layers {
		if math.Abs(l.Corr-1) > 1e-9 {
			t.Errorf("magnitude 0: layer %s corr %v, want 1", l.Name, l.Corr)
		}
	}
	// By hand: rescale the originals; translate by 7 px at 40×40, then rescale.
	x, xt := make([]float32, 6*784), make([]float32, 6*784)
	big := data.Image{C: 1, H: 40, W: 40, Pix: make([]float32, 1600)}
	for i := 0; i < 6; i++ {
		if err := data.Rescale(data.Image{C: 1, H: 28, W: 28, Pix: x[i*784 : (i+1)*784]}, aff.Image(i)); err != nil {
			t.Fatal(err)
		}
		if err := data.Transform(big, aff.Image(i), data.FamilyTranslateX, 7); err != nil {
			t.Fatal(err)
		}
		if err := data.Rescale(data.Image{C: 1, H: 28, W: 28, Pix: xt[i*784 : (i+1)*784]}, big); err != nil {
			t.Fatal(err)
		}
	}
	net, err := capsnet.NewInferenceNet(p, 6)
	if err != nil {
		t.Fatal(err)
	}
	acc, err := analysis.NewInvariance(net.Layers(), 6)
	if err != nil {
		t.Fatal(err)
	}
	if err := acc.AddNet(net, x, xt, 6); err != nil {
		t.Fatal(err)
	}
	_, want := acc.Report()
	for l, got := range pts[1].Layers {
		if math.Abs(got.Corr-want[l].Corr) > 1e-12 {
			t.Errorf("translate-x 7, layer %s: corr %v, by hand %v", got.Name, got.Corr, want[l].Corr)
		}
	}
	if math.Abs(pts[1].Layers[0].Corr-1) < 1e-6 {
		t.Errorf("translate-x 7: primary corr %v, want below 1", pts[1].Layers[0].Corr)
	}
	// ParseTree on the rescaled batcher sees 28×28 images.
	rb, err := data.NewBatcher(aff, data.BatchConfig{Size: 4, Placement: data.PlacementRescale, CanvasH: 28, CanvasW: 28})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := ParseTree(p, rb, 0, analysis.DefaultThresholds()); err != nil || rep.Layers[0].K != 6 {
		t.Errorf("ParseTree on rescaled images: %v", err)
	}
	// Smaller images of another size are refused (they need a placement).
	small, _ := data.NewDataset("small", 2, 1, 20, 20, 10)
	sb, _ := data.NewBatcher(small, data.BatchConfig{Size: 2})
	if _, err := Invariance(p, sb, 0, data.Families(), nil); err == nil {
		t.Error("20×20 images for a 28×28 model accepted")
	}
}
