package capsnet

import (
	"time"

	"github.com/capstan-ml/capstan/graph"
)

// StepTime is the profile of one schedule step: its name (as ForwardSteps
// and BackwardSteps give it), the floating-point work of one run (a
// multiply-add counts 2; 0 where the step's work is not counted: data
// movement, element-wise maps, the routing loops) and the wall-clock time
// of all the runs since profiling was switched on.
type StepTime struct {
	Name  string
	FLOPs float64
	Runs  int
	Time  time.Duration
}

// profile holds the per-step timers of a Net (see SetProfiling).
type profile struct {
	on               bool
	fwdNs, bwdNs     []int64 // nanoseconds per step
	convNs           []int64 // per convolution, when they run in chunks (Net.convChunks)
	fwdRuns, bwdRuns int
}

// SetProfiling switches per-step timing of Forward and Backward on or off
// and clears the timers. Timing costs two clock reads per step and does
// not allocate after the first call; the margin-only pass (BackwardMargin)
// is not timed.
func (n *Net) SetProfiling(on bool) {
	p := &n.prof
	if p.fwdNs == nil {
		p.fwdNs = make([]int64, len(n.forward))
		p.bwdNs = make([]int64, len(n.backw))
		p.convNs = make([]int64, len(n.convs))
	}
	clear(p.fwdNs)
	clear(p.bwdNs)
	clear(p.convNs)
	p.on, p.fwdRuns, p.bwdRuns = on, 0, 0
}

// Profile returns the forward and backward steps' timings since the last
// SetProfiling(true), in schedule order. Where the convolutions run in
// chunks of images (one step of the schedule), each has its row, named
// and counted as the step it is without chunks ("conv NAME"), with its
// time summed over the chunks; ForwardSteps names the same rows.
func (n *Net) Profile() (forward, backward []StepTime) {
	p := &n.prof
	forward = stepTimes(n.forward, p.fwdNs, p.fwdRuns)
	if n.chunk > 0 {
		rows := make([]StepTime, len(n.convs))
		for i, L := range n.convs {
			rows[i] = StepTime{Name: "conv " + L.Name, FLOPs: L.sh.FLOPs(), Runs: p.fwdRuns}
			if i < len(p.convNs) {
				rows[i].Time = time.Duration(p.convNs[i])
			}
		}
		forward = append(rows, forward[1:]...) // the chunks' step is the first
	}
	return forward, stepTimes(n.backw, p.bwdNs, p.bwdRuns)
}

// stepTimes pairs the steps of s with their timers.
func stepTimes(s graph.Schedule, ns []int64, runs int) []StepTime {
	out := make([]StepTime, len(s))
	for i, st := range s {
		out[i] = StepTime{Name: st.Name, FLOPs: st.FLOPs, Runs: runs}
		if i < len(ns) {
			out[i].Time = time.Duration(ns[i])
		}
	}
	return out
}

// runForward runs the forward schedule, timed when profiling.
func (n *Net) runForward() error {
	if !n.prof.on {
		return n.forward.Run()
	}
	n.prof.fwdRuns++
	return n.forward.RunTimed(n.prof.fwdNs)
}

// runBackward runs the backward schedule, timed when profiling.
func (n *Net) runBackward() error {
	if !n.prof.on {
		return n.backw.Run()
	}
	n.prof.bwdRuns++
	return n.backw.RunTimed(n.prof.bwdNs)
}
