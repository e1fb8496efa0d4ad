package telemetry

import "math"

// DefaultDarkNorm is the default threshold of DarkCapsules: a capsule
// whose norm stays below m⁻ = 0.1 on every image of every batch is, for
// the margin loss, as absent as a class that is not there.
const DefaultDarkNorm = 0.1

// Dark is a capsule that stayed dark at the end of a log: its largest
// norm over the batch was below the threshold in every record from step
// Since (epoch SinceEpoch) to the last one.
type Dark struct {
	Layer   int     // capsule layer, 0 = primary capsules
	Capsule int     // capsule index in the layer
	Since   int     // first step of the dark stretch
	Epoch   int     // epoch of step Since
	Records int     // records in the dark stretch (the log's last ones)
	Peak    float32 // largest norm over the dark stretch (< the threshold)
}

// DarkCapsules returns the capsules whose largest norm over the batch
// stayed below theta in at least minRecords records at the end of the
// log (every record from some step on), by layer then capsule: the
// capsules that went dark during training and have not come back, with
// the step they went dark. A NaN norm ends a dark stretch. It returns an
// error for theta ≤ 0 or NaN, minRecords < 1, or a record whose layers do
// not match the header's (Read has checked the logs it returns).
//
// The equivalent loop, for capsule i of layer l:
//
//	k := len(g.Records)
//	for k > 0 && g.Records[k-1].MaxNorm[l][i] < theta { k-- }
//	dark := len(g.Records)-k >= minRecords; since := g.Records[k].Step
func (g *Log) DarkCapsules(theta float64, minRecords int) ([]Dark, error) {
	if err := g.checkDark(theta, minRecords); err != nil {
		return nil, err
	}
	ls := g.Header.Layers
	var out []Dark
	n := len(g.Records)
	for l, L := range ls {
		for i := 0; i < L.N; i++ {
			k, peak := n, float32(0)
			for k > 0 {
				v := g.Records[k-1].MaxNorm[l][i]
				if !(float64(v) < theta) { // NaN ends the stretch too
					break
				}
				peak = float32(math.Max(float64(peak), float64(v)))
				k--
			}
			if n-k < minRecords {
				continue
			}
			out = append(out, Dark{Layer: l, Capsule: i, Since: g.Records[k].Step, Epoch: g.Records[k].Epoch, Records: n - k, Peak: peak})
		}
	}
	return out, nil
}

// InLayer returns the entries of dark (as DarkCapsules returns them) of
// capsule layer l, in capsule order.
func InLayer(dark []Dark, l int) []Dark {
	var out []Dark
	for _, d := range dark {
		if d.Layer == l {
			out = append(out, d)
		}
	}
	return out
}

// DarkMinRecords is the dark stretch DarkCapsules asks for by default in
// a log of n records: the last 10% of them (at least one), so that a
// capsule silent for one batch does not count.
func DarkMinRecords(n int) int {
	return max(1, (n+9)/10)
}
