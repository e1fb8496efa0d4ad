package eval

import (
	"math"
	"slices"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/train/data"
)

// TestParseTreeSamples takes the parse trees of three test digits: the
// layers as the Net has them, every input capsule's couplings summing to
// 1 over its outputs, the predictions and output norms the evaluator
// gives, and a sample that does not depend on the rest of its batch.
func TestParseTreeSamples(t *testing.T) {
	p, te := tinyModel(t)
	const n = 3
	sz := te.ImageSize()
	labels := []int{int(te.Y[0]), int(te.Y[1]), int(te.Y[2])}
	ss, err := ParseTreeSamples(p, te.X, labels, []string{"a", "b", "c"}, n)
	if err != nil {
		t.Fatal(err)
	}
	net, err := capsnet.NewInferenceNet(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	infos := net.Layers()
	ev, err := New(p, n, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer ev.Close()
	pred := make([]int, n)
	if err := ev.Predict(te.X[:n*sz], nil, pred); err != nil {
		t.Fatal(err)
	}
	norms := make([]float32, n*10)
	if err := ev.Norms(norms); err != nil {
		t.Fatal(err)
	}
	for b, s := range ss {
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		if s.Caption != []string{"a", "b", "c"}[b] || s.Label != labels[b] || s.Pred != pred[b] || !slices.Equal(s.Pixels, te.X[b*sz:(b+1)*sz]) {
			t.Errorf("sample %d: caption %q, label %d, pred %d (evaluator %d)", b, s.Caption, s.Label, s.Pred, pred[b])
		}
		if len(s.Layers) != len(infos) {
			t.Fatalf("%d layers, the net has %d", len(s.Layers), len(infos))
		}
		for l, L := range s.Layers {
			if L.Name != infos[l].Name || len(L.Norms) != infos[l].N {
				t.Errorf("layer %d: %s of %d, want %s of %d", l, L.Name, len(L.Norms), infos[l].Name, infos[l].N)
			}
		}
		top := s.Layers[len(s.Layers)-1].Norms
		for j, v := range top {
			if math.Abs(float64(v-norms[b*10+j])) > 1e-5 {
				t.Errorf("sample %d class %d: norm %g, evaluator %g", b, j, v, norms[b*10+j])
			}
		}
		for l, c := range s.Couplings {
			nIn, nOut := infos[l].N, infos[l+1].N
			for i := 0; i < nIn; i++ {
				var sum float64
				for j := 0; j < nOut; j++ {
					sum += float64(c[j*nIn+i])
				}
				if math.Abs(sum-1) > 1e-4 {
					t.Errorf("sample %d layer %d input %d: couplings sum to %g", b, l+1, i, sum)
				}
			}
		}
	}
	// The same image alone in its batch: the same tree.
	one, err := ParseTreeSamples(p, te.X[sz:2*sz], nil, nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if one[0].Label != -1 || one[0].Pred != ss[1].Pred {
		t.Errorf("alone: label %d, pred %d", one[0].Label, one[0].Pred)
	}
	for l := range one[0].Layers {
		for i, v := range one[0].Layers[l].Norms {
			if math.Abs(float64(v-ss[1].Layers[l].Norms[i])) > 1e-5 {
				t.Fatalf("layer %d capsule %d: norm %g alone, %g in a batch", l, i, v, ss[1].Layers[l].Norms[i])
			}
		}
	}
	// Bad arguments.
	for _, bad := range []func() error{
		func() error { _, err := ParseTreeSamples(p, te.X[:sz], nil, nil, 2); return err },
		func() error { _, err := ParseTreeSamples(p, te.X, []int{1}, nil, 2); return err },
		func() error { _, err := ParseTreeSamples(p, te.X, nil, nil, 0); return err },
		func() error { _, err := ParseTreeSamples(p, te.X, nil, nil, MaxSamples+1); return err },
	} {
		if bad() == nil {
			t.Error("bad arguments accepted")
		}
	}
}

// TestTransformedSamples: the first view is the digit as it is, the
// others are the AffNIST transform of it, captioned.
func TestTransformedSamples(t *testing.T) {
	p, te := tinyModel(t)
	views := append([]View{{data.FamilyTranslateX, 0}}, DefaultViews...)
	ss, err := TransformedSamples(p, te.Image(5), int(te.Y[5]), views)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 4 {
		t.Fatalf("%d samples", len(ss))
	}
	want := []string{"original", "translate-x 0 px", "rotation 30°", "shear 30°"}
	for k, s := range ss {
		if s.Caption != want[k] || s.Label != int(te.Y[5]) {
			t.Errorf("view %d: %q, label %d", k, s.Caption, s.Label)
		}
	}
	if !slices.Equal(ss[0].Pixels, te.Image(5).Pix) || !slices.Equal(ss[1].Pixels, ss[0].Pixels) {
		t.Error("the original or the identity view differs from the digit")
	}
	rot := make([]float32, len(ss[0].Pixels))
	if err := data.Transform(data.Image{C: 1, H: 28, W: 28, Pix: rot}, te.Image(5), data.FamilyRotation, 30); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ss[2].Pixels, rot) || slices.Equal(ss[2].Pixels, ss[0].Pixels) {
		t.Error("the rotation view is not the digit rotated by 30°")
	}
	if _, err := TransformedSamples(p, data.Image{C: 1, H: 40, W: 40, Pix: make([]float32, 1600)}, 0, nil); err == nil {
		t.Error("an image larger than the model's input accepted")
	}
}
