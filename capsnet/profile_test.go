package capsnet

import (
	"slices"
	"testing"
)

func TestNetProfile(t *testing.T) {
	n, _, _, step := tinyTrainingNet(t, "tiny-deep3")
	step() // not profiled
	n.SetProfiling(true)
	const runs = 3
	for range runs {
		step()
	}
	// Timing is off again after SetProfiling(false), and allocation-free
	// while on.
	if a := testing.AllocsPerRun(3, step); a != 0 {
		t.Errorf("a profiled step allocates %.1f times", a)
	}
	fwd, bwd := n.Profile()
	if got := names(fwd); !slices.Equal(got, n.ForwardSteps()) {
		t.Errorf("forward profile steps %v, want %v", got, n.ForwardSteps())
	}
	if got := names(bwd); !slices.Equal(got, n.BackwardSteps()) {
		t.Errorf("backward profile steps %v, want %v", got, n.BackwardSteps())
	}
	for _, s := range append(fwd, bwd...) {
		if s.Runs != runs+4 { // 3 steps, then AllocsPerRun's warm-up run and 3 runs
			t.Errorf("step %q: %d runs, want %d", s.Name, s.Runs, runs+4)
		}
		if s.Time <= 0 {
			t.Errorf("step %q: time %v, want > 0", s.Name, s.Time)
		}
	}
	// FLOPs: the first conv's forward is its shape's, its backward only
	// the filter gradient (no data gradient below the input), the others
	// both; the votes' backward is two products.
	c0 := n.convs[0]
	if fwd[0].Name != "conv "+c0.Name || fwd[0].FLOPs != c0.sh.FLOPs() || fwd[0].FLOPs <= 0 {
		t.Errorf("first forward step %q has %v FLOPs, want conv %s with %v", fwd[0].Name, fwd[0].FLOPs, c0.Name, c0.sh.FLOPs())
	}
	for _, s := range bwd {
		for i, c := range n.convs {
			if s.Name != "conv "+c.Name {
				continue
			}
			want := c.sh.FLOPs()
			if i > 0 {
				want *= 2
			}
			if s.FLOPs != want {
				t.Errorf("backward %q: %v FLOPs, want %v", s.Name, s.FLOPs, want)
			}
		}
		if s.Name == "votes "+n.caps[0].Name && s.FLOPs != 2*votesFLOPs(n.caps[0].Votes) {
			t.Errorf("backward %q: %v FLOPs, want %v", s.Name, s.FLOPs, 2*votesFLOPs(n.caps[0].Votes))
		}
	}
	n.SetProfiling(false)
	step()
	fwd, _ = n.Profile()
	if fwd[0].Runs != 0 || fwd[0].Time != 0 {
		t.Errorf("after SetProfiling(false): %d runs, %v", fwd[0].Runs, fwd[0].Time)
	}
}

func names(s []StepTime) []string {
	var out []string
	for _, x := range s {
		out = append(out, x.Name)
	}
	return out
}
