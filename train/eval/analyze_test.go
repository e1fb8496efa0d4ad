package eval

import (
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/analysis"
	"github.com/capstan-ml/capstan/train/data"
)

// TestParseTree: the statistics over 10 images in batches of 4 (the last
// one partial) equal those of one batch of 10, and k limits the images.
func TestParseTree(t *testing.T) {
	p, te := tinyModel(t)
	ds, _ := te.Slice(0, 10)
	run := func(size, k int) analysis.Report {
		b, err := data.NewBatcher(ds, data.BatchConfig{Size: size})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := ParseTree(p, b, k, analysis.DefaultThresholds())
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	a, one, seven := run(4, 0), run(10, 0), run(4, 7)
	for l := range a.Layers {
		x, y := a.Layers[l], one.Layers[l]
		if x.K != 10 || y.K != 10 || seven.Layers[l].K != 7 {
			t.Fatalf("layer %d: k %d, %d, %d; want 10, 10, 7", l, x.K, y.K, seven.Layers[l].K)
		}
		if d := x.CNS - y.CNS; d > 1e-9 || d < -1e-9 || x.CDS != y.CDS || x.CAS != y.CAS {
			t.Errorf("layer %d: batches of 4 give cns %v cds %d cas %v, one batch %v %d %v", l, x.CNS, x.CDS, x.CAS, y.CNS, y.CDS, y.CAS)
		}
	}
	if _, err := ParseTree(p, mustBatcher(t, ds, 40), 0, analysis.DefaultThresholds()); err == nil {
		t.Error("40×40 images into a 28×28 model accepted")
	}
}

// TestParseTreeScored: the accuracy and confusion matrix of the analysis
// pass equal the Evaluator's over the same images, in batches of 4 (the last
// one partial) and with k = 7 of 10 (the Evaluator on the first 7 alone).
func TestParseTreeScored(t *testing.T) {
	p, te := tinyModel(t)
	for _, k := range []int{0, 7} {
		n := 10
		if k > 0 {
			n = k
		}
		ds, _ := te.Slice(0, 10)
		b, err := data.NewBatcher(ds, data.BatchConfig{Size: 4})
		if err != nil {
			t.Fatal(err)
		}
		rep, got, err := ParseTreeScored(p, b, k, analysis.DefaultThresholds())
		if err != nil {
			t.Fatal(err)
		}
		if rep.Layers[0].K != n {
			t.Fatalf("k %d: the statistics count %d images, want %d", k, rep.Layers[0].K, n)
		}
		first, _ := te.Slice(0, n)
		eb, err := data.NewBatcher(first, data.BatchConfig{Size: 4})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := New(p, 4, 1)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ev.Confusion(eb)
		if err != nil {
			t.Fatal(err)
		}
		if got.Total != n || got.Correct != want.Correct || got.Total != want.Total {
			t.Errorf("k %d: %d of %d correct, the Evaluator %d of %d", k, got.Correct, got.Total, want.Correct, want.Total)
		}
		for y := range want.Confusion {
			for c := range want.Confusion[y] {
				if got.Confusion[y][c] != want.Confusion[y][c] {
					t.Errorf("k %d: confusion[%d][%d] = %d, the Evaluator %d", k, y, c, got.Confusion[y][c], want.Confusion[y][c])
				}
			}
		}
	}
}

func mustBatcher(t *testing.T, ds *data.Dataset, canvas int) *data.Batcher {
	b, err := data.NewBatcher(ds, data.BatchConfig{Size: 4, Placement: data.PlacementCenter, CanvasH: canvas, CanvasW: canvas})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestInvariance: magnitude 0 of every family is the identity (corr 1 on
// every layer), larger rotations lower the primary capsules' corr, and k
// counts the images.
func TestInvariance(t *testing.T) {
	p, te := tinyModel(t)
	ds, _ := te.Slice(0, 12)
	b, err := data.NewBatcher(ds, data.BatchConfig{Size: 5})
	if err != nil {
		t.Fatal(err)
	}
	pts, err := Invariance(p, b, 0, data.Families(), map[data.Family][]float64{data.FamilyRotation: {0, 10, 45}})
	if err != nil {
		t.Fatal(err)
	}
	if want := 3 + 4 + 4 + 5 + 5; len(pts) != want {
		t.Fatalf("%d points, want %d", len(pts), want)
	}
	var rot []float64
	for _, pt := range pts {
		if pt.K != 12 {
			t.Fatalf("%s %g: k %d, want 12", pt.Family, pt.Magnitude, pt.K)
		}
		if pt.Magnitude == 0 {
			for _, l := range pt.Layers {
				if d := l.Corr - 1; d > 1e-9 || d < -1e-9 {
					t.Errorf("%s at 0 (identity): layer %s corr %v, want 1", pt.Family, l.Name, l.Corr)
				}
			}
		}
		if pt.Family == data.FamilyRotation {
			rot = append(rot, pt.Layers[0].Corr)
		}
	}
	if !(rot[0] > rot[1] && rot[1] > rot[2]) {
		t.Errorf("primary capsules' corr under rotation 0°, 10°, 45°: %v, want decreasing", rot)
	}
	// Invariance runs the originals once per batch for every point: the
	// same figures as analysis.Invariance.AddNet, which runs both.
	net, err := capsnet.NewInferenceNet(p, 5)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := analysis.NewInvariance(net.Layers(), 5)
	sz := ds.ImageSize()
	for lo := 0; lo < ds.N; lo += 5 {
		n := min(5, ds.N-lo)
		x, xt := make([]float32, 5*sz), make([]float32, 5*sz)
		copy(x, ds.X[lo*sz:(lo+n)*sz])
		for i := 0; i < n; i++ {
			dst := data.Image{C: 1, H: ds.H, W: ds.W, Pix: xt[i*sz : (i+1)*sz]}
			if err := data.Transform(dst, ds.Image(lo+i), data.FamilyRotation, 10); err != nil {
				t.Fatal(err)
			}
		}
		if err := ref.AddNet(net, x, xt, n); err != nil {
			t.Fatal(err)
		}
	}
	_, want := ref.Report()
	for l, got := range pts[1].Layers {
		if pts[1].Family != data.FamilyRotation || pts[1].Magnitude != 10 || got.Corr != want[l].Corr {
			t.Errorf("rotation 10°, layer %s: corr %v, want %v (AddNet on both versions)", got.Name, got.Corr, want[l].Corr)
		}
	}
}

// tinyModel returns tiny-deep initialised with seed 2 and the embedded
// test digits.
func tinyModel(t *testing.T) (*capsnet.Params, *data.Dataset) {
	t.Helper()
	p, err := capsnet.NewParams(capsnet.Presets()["tiny-deep"])
	if err != nil {
		t.Fatal(err)
	}
	p.Init(2)
	_, te, err := data.LoadEmbeddedMNIST()
	if err != nil {
		t.Fatal(err)
	}
	return p, te
}
