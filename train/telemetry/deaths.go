package telemetry

import (
	"fmt"
	"math"
)

// Death is a capsule whose largest norm over the batch went below a
// threshold for a stretch of records (Log.Deaths): dead at the end of the
// log (Dead, as DarkCapsules finds it), revived after earlier stretches
// (Revivals), or both.
type Death struct {
	Layer   int // capsule layer, 0 = primary capsules
	Capsule int // capsule index in the layer
	// Dead: below the threshold in every record from step Since (epoch
	// Epoch) to the last one, Records records (at least minRecords), its
	// largest norm there Peak: DarkCapsules' Dark. Zero when not Dead.
	Dead    bool
	Since   int
	Epoch   int
	Records int
	Peak    float32
	// Revivals are the capsule's earlier stretches below the threshold
	// that a record at or above it ended, in log order.
	Revivals []Revival
	// Out summarises ‖W[j,i]‖_F of the votes matrices from the capsule
	// (input capsule i) to every capsule j of the next layer, In those
	// into it (output capsule j = the capsule, over the inputs i of the
	// layer before): set for a Dead capsule when the log has w_norm
	// (Log.HasWNorm), Out when a layer follows, In when one precedes
	// (layer ≥ 1); nil otherwise.
	Out, In *WTrajectory
}

// Revival is a stretch of at least minRecords records in which a
// capsule's largest norm stayed below the threshold, from step Died (epoch
// DiedEpoch), ended by a record at or above it, of step Revived (epoch
// RevivedEpoch) and norm Norm. Peak is the largest norm of the stretch.
type Revival struct {
	Died, DiedEpoch       int
	Revived, RevivedEpoch int
	Records               int
	Peak, Norm            float32
}

// WTrajectory summarises a set of votes-matrix norms ‖W[j,i]‖_F (a dead
// capsule's outgoing or incoming ones, see Death) over a log, through
// their mean per record: First in the log's first record, AtDeath in the
// record of the death step (Death.Since), End in the last, Min the
// smallest from the death step to the end (NaN means left out), first
// reached at step MinStep; EndMax is the largest single norm of the set in
// the last record, 0 when every one of them is 0 at the end. A pooled log
// holds each window's largest norms (Pool), so these are of the windows'
// maxima.
type WTrajectory struct {
	First, AtDeath, End, Min float64
	MinStep                  int
	EndMax                   float64
}

// Deaths returns the capsules whose largest norm over the batch went
// below theta for at least minRecords consecutive records, by layer then
// capsule: whether each is dead at the end of the log (Dead, Since: the
// same capsules and steps as DarkCapsules(theta, minRecords)), its
// revivals, and, for the dead ones of a log with w_norm, the norms of
// their votes matrices from the death step on (Out, In: whether they
// decay to zero). A NaN norm ends a stretch below theta without being a
// revival (it is not ≥ theta). It returns an error for theta ≤ 0 or NaN,
// minRecords < 1, a record whose layers do not match the header's, or a
// log with w_norm in some records only or of the wrong shapes (Read has
// checked the logs it returns).
//
// The equivalent loop, for capsule i of layer l, v(k) =
// g.Records[k].MaxNorm[l][i], n = len(g.Records):
//
//	for k := 0; k < n; {
//		if !(v(k) < theta) { k++; continue }
//		s := k
//		for k < n && v(k) < theta { k++ }
//		switch {
//		case k-s < minRecords: // too short to count
//		case k == n: // dead since g.Records[s].Step
//		case v(k) >= theta: // revival: died at g.Records[s].Step, back at g.Records[k].Step
//		}
//	}
//
// and for a dead capsule, Out's mean of record k is the mean over j of
// g.Records[k].WNorm[l][j·N_l+i] (In's: the mean over i' of
// g.Records[k].WNorm[l-1][i·N_{l-1}+i']), taken in float64.
func (g *Log) Deaths(theta float64, minRecords int) ([]Death, error) {
	if err := g.checkDark(theta, minRecords); err != nil {
		return nil, err
	}
	wnorm := g.HasWNorm()
	if wnorm {
		if err := g.checkWNormShapes(); err != nil {
			return nil, err
		}
	}
	var out []Death
	n := len(g.Records)
	ls := g.Header.Layers
	for l, L := range ls {
		for i := 0; i < L.N; i++ {
			d := Death{Layer: l, Capsule: i}
			v := func(k int) float32 { return g.Records[k].MaxNorm[l][i] }
			for k := 0; k < n; {
				if !(float64(v(k)) < theta) {
					k++
					continue
				}
				s, peak := k, float32(0)
				for k < n && float64(v(k)) < theta {
					peak = max(peak, v(k))
					k++
				}
				switch {
				case k-s < minRecords:
				case k == n:
					d.Dead, d.Since, d.Epoch, d.Records, d.Peak = true, g.Records[s].Step, g.Records[s].Epoch, n-s, peak
					if wnorm && l+1 < len(ls) {
						d.Out = g.trajectory(s, l, i, ls[l+1].N, L.N) // W[j,i] of routing layer l+1: j·N_l + i
					}
					if wnorm && l > 0 {
						d.In = g.trajectory(s, l-1, i*ls[l-1].N, ls[l-1].N, 1) // W[i,i'] of routing layer l: i·N_{l-1} + i'
					}
				case float64(v(k)) >= theta:
					d.Revivals = append(d.Revivals, Revival{Died: g.Records[s].Step, DiedEpoch: g.Records[s].Epoch,
						Revived: g.Records[k].Step, RevivedEpoch: g.Records[k].Epoch, Records: k - s, Peak: peak, Norm: v(k)})
				}
			}
			if d.Dead || len(d.Revivals) > 0 {
				out = append(out, d)
			}
		}
	}
	return out, nil
}

// trajectory summarises the w_norm values WNorm[row][first + m·stride],
// m < count, from record s (the death) to the end (see WTrajectory).
func (g *Log) trajectory(s, row, first, count, stride int) *WTrajectory {
	mean := func(k int) (m, top float64) {
		w := g.Records[k].WNorm[row]
		for c := 0; c < count; c++ {
			x := float64(w[first+c*stride])
			m += x
			top = math.Max(top, x)
			if math.IsNaN(x) {
				top = x
			}
		}
		return m / float64(count), top
	}
	n := len(g.Records)
	t := &WTrajectory{Min: math.NaN()}
	t.First, _ = mean(0)
	t.AtDeath, _ = mean(s)
	t.End, t.EndMax = mean(n - 1)
	for k := s; k < n; k++ {
		if m, _ := mean(k); m < t.Min || math.IsNaN(t.Min) && !math.IsNaN(m) {
			t.Min, t.MinStep = m, g.Records[k].Step
		}
	}
	return t
}

// checkDark checks DarkCapsules' and Deaths' arguments and the records'
// max_norm shapes.
func (g *Log) checkDark(theta float64, minRecords int) error {
	if !(theta > 0) {
		return fmt.Errorf("telemetry: dark-capsule threshold %g, must be > 0", theta)
	}
	if minRecords < 1 {
		return fmt.Errorf("telemetry: dark capsules need at least %d record(s), must be ≥ 1", minRecords)
	}
	ls := g.Header.Layers
	for k, r := range g.Records {
		if len(r.MaxNorm) != len(ls) {
			return fmt.Errorf("telemetry: record %d (step %d): %d max_norm layers, the header has %d", k, r.Step, len(r.MaxNorm), len(ls))
		}
		for l, v := range r.MaxNorm {
			if len(v) != ls[l].N {
				return fmt.Errorf("telemetry: record %d (step %d): %d max_norm values for layer %s of %d capsules", k, r.Step, len(v), ls[l].Name, ls[l].N)
			}
		}
	}
	return nil
}

// checkWNormShapes checks that every record holds w_norm (checkWNorm) of
// the header's shapes.
func (g *Log) checkWNormShapes() error {
	if err := g.checkWNorm(); err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	ls := g.Header.Layers
	for k, r := range g.Records {
		if len(r.WNorm) != len(ls)-1 {
			return fmt.Errorf("telemetry: record %d (step %d): %d w_norm layers, want %d routing layers", k, r.Step, len(r.WNorm), len(ls)-1)
		}
		for l, w := range r.WNorm {
			if want := ls[l].N * ls[l+1].N; len(w) != want {
				return fmt.Errorf("telemetry: record %d (step %d): %d w_norm values for %s → %s, want %d", k, r.Step, len(w), ls[l].Name, ls[l+1].Name, want)
			}
		}
	}
	return nil
}

// String describes the revival in one line, as the report and
// tools/analyze print it: "below from step 11 (epoch 1, 2 records, peak
// 0.02), back at step 13 (norm 0.5)".
func (r Revival) String() string {
	return fmt.Sprintf("below from step %d (epoch %d, %d records, peak %.3g), back at step %d (norm %.3g)", r.Died, r.DiedEpoch, r.Records, r.Peak, r.Revived, r.Norm)
}

// String describes the trajectory in one line, as the report and
// tools/analyze print it: "mean 2 (first step) → 0.4 (death) → 0 (end),
// min 0 at step 6, largest at the end 0".
func (t *WTrajectory) String() string {
	return fmt.Sprintf("mean %.3g (first step) → %.3g (death) → %.3g (end), min %.3g at step %d, largest at the end %.3g", t.First, t.AtDeath, t.End, t.Min, t.MinStep, t.EndMax)
}
