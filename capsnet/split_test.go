package capsnet

import (
	"math"
	"strings"
	"testing"
)

// TestConvThreads checks a batch-1 inference Net on two conv threads
// against one thread, bit for bit, on both paper models; that it does not
// allocate; and the refusals. TestConvSplitWork checks which convolutions
// split by default.
func TestConvThreads(t *testing.T) {
	// Every convolution of 16 channels or more is split, whatever its work.
	defer func(f float64) { convSplitMinFLOPs = f }(convSplitMinFLOPs)
	convSplitMinFLOPs = 0
	for _, preset := range []string{"deep", "sabour"} {
		p, err := NewParams(Presets()[preset])
		if err != nil {
			t.Fatal(err)
		}
		p.Init(2)
		one, err := NewInferenceNet(p, 1)
		if err != nil {
			t.Fatal(err)
		}
		two, err := NewInferenceNet(p, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := two.SetConvThreads(2); err != nil {
			t.Fatal(err)
		}
		split := 0
		for _, L := range two.convs {
			if L.split != nil {
				split++
			}
		}
		if split == 0 {
			t.Fatalf("%s: no convolution was split", preset)
		}
		x := make([]float32, one.InputLen())
		for i := range x {
			x[i] = float32(i%13) / 13
		}
		for _, n := range []*Net{one, two} {
			if err := n.Forward(x, nil); err != nil {
				t.Fatal(err)
			}
		}
		// The last convolution's output (pinned: the primary capsules read
		// it), the class capsules' norms and the reconstruction.
		last := len(one.convs) - 1
		for what, pair := range map[string][2][]float32{
			"last conv": {one.convs[last].y.Data(), two.convs[last].y.Data()},
			"norms":     {one.Norms(), two.Norms()},
			"recon":     {one.Recon(), two.Recon()},
		} {
			a, b := pair[0], pair[1]
			for j := range a {
				if math.Float32bits(a[j]) != math.Float32bits(b[j]) {
					t.Fatalf("%s %s[%d]: %v on two threads, %v on one", preset, what, j, b[j], a[j])
				}
			}
		}
		if a := testing.AllocsPerRun(3, func() { _ = two.Forward(x, nil) }); a != 0 {
			t.Errorf("%s: a forward on two conv threads allocates %.1f times", preset, a)
		}
		two.Close()
		two.Close() // idempotent
		if err := two.Forward(x, nil); err != nil {
			t.Errorf("%s: forward after Close: %v", preset, err)
		}
		one.Close()
	}
	p, err := NewParams(Presets()["tiny-deep3"])
	if err != nil {
		t.Fatal(err)
	}
	train1, err := NewNet(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	inf2, err := NewInferenceNet(p, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		n       *Net
		threads int
		want    string
	}{{train1, 2, "inference Net of batch 1"}, {inf2, 2, "batch 2"}, {inf2, 3, "want 1 or 2"}, {inf2, 0, "want 1 or 2"}} {
		if err := c.n.SetConvThreads(c.threads); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SetConvThreads(%d): %v, want an error mentioning %q", c.threads, err, c.want)
		}
	}
}

// TestConvSplitWork checks the default policy of SetConvThreads(2): the
// deep model's convolutions (at most 38 MFLOP at batch 1) stay whole,
// Sabour's primary capsules (382 MFLOP) split.
func TestConvSplitWork(t *testing.T) {
	for preset, want := range map[string]int{"deep": 0, "sabour": 1} {
		p, err := NewParams(Presets()[preset])
		if err != nil {
			t.Fatal(err)
		}
		n, err := NewInferenceNet(p, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.SetConvThreads(2); err != nil {
			t.Fatal(err)
		}
		split := 0
		for _, L := range n.convs {
			if L.split != nil {
				split++
			}
		}
		n.Close()
		if split != want {
			t.Errorf("%s: %d convolutions split, want %d", preset, split, want)
		}
	}
}
