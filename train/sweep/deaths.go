package sweep

import (
	"fmt"
	"math"
	"slices"

	"github.com/capstan-ml/capstan/capsnet/analysis"
	"github.com/capstan-ml/capstan/train/telemetry"
)

// Deaths summarises a task's training telemetry (Task.Telemetry) in its
// result: per capsule layer, the capsules that died during training (their
// largest norm over the batch below Theta, the analysis's ε₁ = 0.01, in
// every record from their death step to the end, at least MinRecords
// records: telemetry.Log.Deaths), when they died, how many had come back
// from an earlier stretch below Theta, and, when the log has w_norm, what
// became of their votes matrices. Error says why there is no summary
// (an unreadable log): the result is kept without it.
type Deaths struct {
	Theta      float64       `json:"theta"`
	MinRecords int           `json:"min_records"`
	Records    int           `json:"records"`
	LastStep   int           `json:"last_step"`
	WNorm      bool          `json:"w_norm"`
	Layers     []LayerDeaths `json:"layers,omitempty"`
	Error      string        `json:"error,omitempty"`
}

// LayerDeaths is one capsule layer of Deaths. The step fields are 0 and
// the norms nil (JSON null) when no capsule of the layer is dead at the
// end (or, for the norms, the log has no w_norm or the layer no next
// routing layer).
type LayerDeaths struct {
	Name string `json:"name"`
	N    int    `json:"n"`
	// Dead capsules at the end of training; FirstDeath, MedianDeath and
	// LastDeath their death steps.
	Dead        int `json:"dead"`
	FirstDeath  int `json:"first_death"`
	MedianDeath int `json:"median_death"`
	LastDeath   int `json:"last_death"`
	// NeverAlive of the Dead were below Theta from the log's first record
	// on (never lit, rather than died).
	NeverAlive int `json:"never_alive"`
	// Revived capsules came back from a stretch below Theta that began
	// after the log's first record (they had been lit before it: a stretch
	// from the first record on is a capsule lighting up late, not a
	// revival) at least once, Revivals such stretches in all; some may
	// have died again since.
	Revived  int `json:"revived"`
	Revivals int `json:"revivals"`
	// The dead capsules' outgoing votes matrices ‖W[j,i]‖_F (i the dead
	// capsule, mean over the outputs j, then over the dead capsules): in
	// the first record, at the death step and at the end; OutEndMax is the
	// largest single matrix norm of any dead capsule at the end (0: every
	// one is exactly zero).
	OutFirst   *float64 `json:"out_w_first"`
	OutAtDeath *float64 `json:"out_w_at_death"`
	OutEnd     *float64 `json:"out_w_end"`
	OutEndMax  *float64 `json:"out_w_end_max"`
}

// logDeaths returns the Deaths of a telemetry log at the analysis's dead
// threshold ε₁ and telemetry.DarkMinRecords.
func logDeaths(g *telemetry.Log) (*Deaths, error) {
	d := &Deaths{Theta: analysis.DefaultThresholds().Dead1, MinRecords: telemetry.DarkMinRecords(len(g.Records)), Records: len(g.Records), WNorm: g.HasWNorm()}
	if len(g.Records) == 0 {
		return d, nil
	}
	d.LastStep = g.Records[len(g.Records)-1].Step
	all, err := g.Deaths(d.Theta, d.MinRecords)
	if err != nil {
		return nil, err
	}
	first := g.Records[0].Step
	for l, L := range g.Header.Layers {
		ld := LayerDeaths{Name: L.Name, N: L.N}
		var steps []int
		var wFirst, at, end, endMax []float64
		for _, c := range all {
			if c.Layer != l {
				continue
			}
			n := 0
			for _, r := range c.Revivals {
				if r.Died > first {
					n++
				}
			}
			if n > 0 {
				ld.Revived++
				ld.Revivals += n
			}
			if !c.Dead {
				continue
			}
			ld.Dead++
			if c.Since == first {
				ld.NeverAlive++
			}
			steps = append(steps, c.Since)
			if o := c.Out; o != nil {
				wFirst, at, end = append(wFirst, o.First), append(at, o.AtDeath), append(end, o.End)
				endMax = append(endMax, o.EndMax)
			}
		}
		if len(steps) > 0 {
			slices.Sort(steps)
			ld.FirstDeath, ld.MedianDeath, ld.LastDeath = steps[0], steps[(len(steps)-1)/2], steps[len(steps)-1]
		}
		if len(end) > 0 {
			ld.OutFirst, ld.OutAtDeath, ld.OutEnd = mean(wFirst), mean(at), mean(end)
			m := slices.Max(endMax)
			ld.OutEndMax = &m
		}
		d.Layers = append(d.Layers, ld)
	}
	return d, nil
}

// mean returns the mean of xs, nil when it is not finite (JSON has no
// NaN).
func mean(xs []float64) *float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	s /= float64(len(xs))
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return nil
	}
	return &s
}

// taskDeaths reads the telemetry of a task's run directory and returns
// its Deaths; a log that cannot be read gives Deaths with Error set.
func taskDeaths(runDir string) *Deaths {
	path, err := telemetry.Find(runDir)
	if err == nil && path == "" {
		err = fmt.Errorf("no telemetry file in %s", runDir)
	}
	var g *telemetry.Log
	if err == nil {
		g, err = telemetry.ReadFile(path)
	}
	var d *Deaths
	if err == nil {
		d, err = logDeaths(g)
	}
	if err != nil {
		return &Deaths{Theta: analysis.DefaultThresholds().Dead1, Error: oneLine(err.Error())}
	}
	return d
}

// check checks a Deaths read from a result file (untrusted): counts
// within their layer's size, steps within the log.
func (d *Deaths) check() error {
	if d.Error != "" {
		return nil
	}
	if !(d.Theta > 0) || d.MinRecords < 1 || d.Records < 0 || d.LastStep < 0 || len(d.Layers) > maxLayers {
		return fmt.Errorf("deaths: theta %v, min_records %d, records %d, last_step %d, %d layers", d.Theta, d.MinRecords, d.Records, d.LastStep, len(d.Layers))
	}
	for _, l := range d.Layers {
		if l.N < 1 || l.Dead < 0 || l.Dead > l.N || l.NeverAlive < 0 || l.NeverAlive > l.Dead || l.Revived < 0 || l.Revived > l.N || l.Revivals < l.Revived ||
			l.FirstDeath < 0 || l.FirstDeath > l.MedianDeath || l.MedianDeath > l.LastDeath || l.LastDeath > d.LastStep {
			return fmt.Errorf("deaths: layer %q: %d capsules, %d dead (steps %d–%d), %d revived", trunc(l.Name), l.N, l.Dead, l.FirstDeath, l.LastDeath, l.Revived)
		}
	}
	return nil
}
