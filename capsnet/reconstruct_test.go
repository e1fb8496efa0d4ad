package capsnet

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// TestReconstruct checks that the decoder run alone on the unmodified
// output capsule gives Recon of the Forward bit for bit, on the shared plan
// in debug mode too (where every buffer dead after the forward holds NaN,
// so reading one shows), that a shifted capsule changes only its sample's
// row, that it does not allocate, and its refusals.
func TestReconstruct(t *testing.T) {
	for _, name := range []string{"tiny-sabour", "tiny-deep"} {
		p, err := NewParams(Presets()[name])
		if err != nil {
			t.Fatal(err)
		}
		p.Init(3)
		for _, mode := range []planMode{planShared, planDebug} {
			for _, inference := range []bool{true, false} {
				checkReconstruct(t, p, name, mode, inference)
			}
		}
	}
}

// checkReconstruct runs the checks of TestReconstruct on a Net of model p
// (preset name) of batch 3 in plan mode mode, for inference or training.
func checkReconstruct(t *testing.T, p *Params, name string, mode planMode, inference bool) {
	n, err := newNet(p, 3, inference, mode)
	if err != nil {
		t.Fatal(err)
	}
	caps := make([]float32, n.Layers()[len(n.Layers())-1].D)
	if _, err := n.Reconstruct(0, caps); err == nil || !strings.Contains(err.Error(), "before") {
		t.Errorf("%s: Reconstruct before Forward: %v", name, err)
	}
	x := make([]float32, n.Batch*n.InputLen())
	for i := range x {
		x[i] = float32((i*37)%23) / 23
	}
	if err := n.Forward(x, []int{1, 4, 2}); err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(n.Recon())
	v, sh, err := n.Capsules(len(n.Layers()) - 1)
	if err != nil {
		t.Fatal(err)
	}
	checkReconstructUnmodified(t, n, name, mode, inference, v, sh, want, caps)
	checkReconstructShifted(t, n, name, inference, v, sh, want, caps)
	// The next Forward restores the pass: Backward runs again.
	if err := n.Forward(x, []int{1, 4, 2}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(n.Recon(), want) {
		t.Errorf("%s: Forward after Reconstruct gives another reconstruction", name)
	}
	if !inference {
		if err := n.Backward(); err != nil {
			t.Errorf("%s: Backward after Forward: %v", name, err)
		}
	}
	// A failed Forward leaves nothing to reconstruct.
	x[0] = float32(math.NaN())
	if err := n.Forward(x, []int{1, 4, 2}); err == nil {
		t.Fatal("NaN input accepted")
	}
	if _, err := n.Reconstruct(0, caps); err == nil {
		t.Errorf("%s: Reconstruct after a failed Forward accepted", name)
	}
}

// checkReconstructUnmodified checks that Reconstruct of every sample's
// unmodified output capsule (of the prediction, or of the label when
// training; v and sh from Capsules) gives Recon of the Forward (want) bit
// for bit. caps is the capsule's buffer.
func checkReconstructUnmodified(t *testing.T, n *Net, name string, mode planMode, inference bool, v []float32, sh CapsShape, want, caps []float32) {
	px := len(want) / n.Batch
	for b := 0; b < n.Batch; b++ {
		class := n.Pred()[b]
		if !inference {
			class = n.Labels()[b]
		}
		sh.Capsule(v, b, class, caps)
		got, err := n.Reconstruct(b, caps)
		if err != nil {
			t.Fatal(err)
		}
		if err := sameBits([][]float32{want[b*px : (b+1)*px], want}, [][]float32{got, n.Recon()}); err != nil {
			t.Errorf("%s mode %d inference=%v sample %d: Reconstruct of the unmodified capsule differs from Recon: %v", name, mode, inference, b, err)
		}
	}
}

// checkReconstructShifted checks that a shifted capsule of sample 1 (into
// caps, from v and sh) changes its reconstruction only, without allocating,
// that Backward refuses to run after Reconstruct, and Reconstruct's
// refusals of a bad sample or capsule length. want is Recon of the Forward.
func checkReconstructShifted(t *testing.T, n *Net, name string, inference bool, v []float32, sh CapsShape, want, caps []float32) {
	px := len(want) / n.Batch
	// A shifted dimension changes sample 1's reconstruction only.
	sh.Capsule(v, 1, n.Pred()[1], caps)
	if !inference {
		sh.Capsule(v, 1, n.Labels()[1], caps)
	}
	caps[0] += 0.25
	got, err := n.Reconstruct(1, caps)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(got, want[px:2*px]) {
		t.Errorf("%s: a shifted capsule gives the same reconstruction", name)
	}
	if !slices.Equal(n.Recon()[:px], want[:px]) || !slices.Equal(n.Recon()[2*px:], want[2*px:]) {
		t.Errorf("%s: a shifted capsule of sample 1 changed other samples' reconstructions", name)
	}
	if a := testing.AllocsPerRun(5, func() { _, _ = n.Reconstruct(2, caps) }); a != 0 {
		t.Errorf("%s: Reconstruct allocates %.1f times", name, a)
	}
	if !inference {
		if err := n.Backward(); err == nil || !strings.Contains(err.Error(), "Reconstruct") {
			t.Errorf("%s: Backward after Reconstruct: %v", name, err)
		}
		if err := n.BackwardMargin(); err == nil || !strings.Contains(err.Error(), "Reconstruct") {
			t.Errorf("%s: BackwardMargin after Reconstruct: %v", name, err)
		}
	}
	for _, tc := range []struct {
		b    int
		caps []float32
		want string
	}{{-1, caps, "sample -1"}, {3, caps, "sample 3"}, {0, caps[1:], "values"}} {
		if _, err := n.Reconstruct(tc.b, tc.caps); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Reconstruct(%d, %d values): %v, want an error naming %q", name, tc.b, len(tc.caps), err, tc.want)
		}
	}
}
