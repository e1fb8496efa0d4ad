package eval

import (
	"math"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/analysis"
	"github.com/capstan-ml/capstan/train/data"
)

// The tests of capsnet/analysis that run a Net on the embedded test
// digits: the statistics and the invariance read from a real model.

// TestAddNet runs a tiny model and checks that AddNet reads every layer
// (the report has the Net's layers and routing layers, k images each),
// equals adding the accessors' buffers by hand, and does not allocate.
func TestAddNet(t *testing.T) {
	const batch = 8
	net, te := tinyNet(t, 3, batch)
	x := te.X[:batch*te.ImageSize()]
	if err := net.Forward(x, nil); err != nil {
		t.Fatal(err)
	}
	s := newStats(t, net.Layers())
	if err := s.AddNet(net, 5); err != nil {
		t.Fatal(err)
	}
	hand := newStats(t, net.Layers())
	for l := range net.Layers() {
		v, sh, _ := net.Capsules(l)
		hand.AddCapsules(l, v, sh, 5)
		if l > 0 {
			c, cs, _ := net.Couplings(l)
			hand.AddCouplings(l, c, cs, 5)
		}
	}
	a, b := s.Report(), hand.Report()
	if len(a.Layers) != len(net.Layers()) || len(a.Routing) != len(net.Layers())-1 {
		t.Fatalf("report of %d layers and %d routing layers for a net of %d capsule layers", len(a.Layers), len(a.Routing), len(net.Layers()))
	}
	for l := range a.Layers {
		if a.Layers[l].K != 5 || a.Layers[l].CNS != b.Layers[l].CNS || a.Layers[l].CNS <= 0 {
			t.Errorf("layer %d: k %d cns %v, by hand %v", l, a.Layers[l].K, a.Layers[l].CNS, b.Layers[l].CNS)
		}
	}
	for r := range a.Routing {
		if x, y := a.Routing[r].DYR, b.Routing[r].DYR; x != y && !(math.IsNaN(x) && math.IsNaN(y)) {
			t.Errorf("routing %d: dyr %v, by hand %v", r, x, y)
		}
	}
	if n := testing.AllocsPerRun(5, func() { s.AddNet(net, batch) }); n != 0 {
		t.Errorf("AddNet allocates %v times per batch", n)
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
	same, _ := analysis.NewInvariance(net.Layers(), batch)
	rot, _ := analysis.NewInvariance(net.Layers(), batch)
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

// tinyNet returns an inference Net of tiny-deep initialised with seed, at
// batch, and the embedded test digits.
func tinyNet(t *testing.T, seed uint64, batch int) (*capsnet.Net, *data.Dataset) {
	t.Helper()
	p, err := capsnet.NewParams(capsnet.Presets()["tiny-deep"])
	if err != nil {
		t.Fatal(err)
	}
	p.Init(seed)
	net, err := capsnet.NewInferenceNet(p, batch)
	if err != nil {
		t.Fatal(err)
	}
	_, te, err := data.LoadEmbeddedMNIST()
	if err != nil {
		t.Fatal(err)
	}
	return net, te
}

// newStats returns analysis statistics of layers with the default
// thresholds.
func newStats(t *testing.T, layers []capsnet.LayerInfo) *analysis.Stats {
	t.Helper()
	s, err := analysis.New(layers, analysis.DefaultThresholds())
	if err != nil {
		t.Fatal(err)
	}
	return s
}
