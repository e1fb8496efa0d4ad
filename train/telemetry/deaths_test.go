package telemetry

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestDeaths(t *testing.T) {
	nan := float32(math.NaN())
	g := darkLog([][]float32{ // steps 10..17, epochs 1 + k/2
		{0.5, 0.01, 0.02, 0.5, 0.03, 0.04, 0.05, 0.06}, // 0: died at 11, back at 13; dead since 14
		{0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5},       // 1: never below: left out
		{0.5, 0.05, 0.5, 0.05, 0.05, 0.05, 0.2, 0.3},   // 2: a 1-record dip, then 3 records and back at 16
		{0.01, 0.01, nan, 0.01, 0.01, 0.01, 0.01, 0.1}, // 3: NaN ends a stretch (no revival), then back at 17 (exactly the threshold)
		{0, 0, 0, 0, 0, 0, 0, 0},                       // 4: dead throughout
		{0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.09},      // 5: dead in the last record only
	})
	got, err := g.Deaths(0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []Death{
		{Layer: 0, Capsule: 0, Dead: true, Since: 14, Epoch: 3, Records: 4, Peak: 0.06,
			Revivals: []Revival{{Died: 11, DiedEpoch: 1, Revived: 13, RevivedEpoch: 2, Records: 2, Peak: 0.02, Norm: 0.5}}},
		{Layer: 0, Capsule: 2, Revivals: []Revival{
			{Died: 11, DiedEpoch: 1, Revived: 12, RevivedEpoch: 2, Records: 1, Peak: 0.05, Norm: 0.5},
			{Died: 13, DiedEpoch: 2, Revived: 16, RevivedEpoch: 4, Records: 3, Peak: 0.05, Norm: 0.2}}},
		{Layer: 0, Capsule: 3, Revivals: []Revival{{Died: 13, DiedEpoch: 2, Revived: 17, RevivedEpoch: 4, Records: 4, Peak: 0.01, Norm: 0.1}}},
		{Layer: 0, Capsule: 4, Dead: true, Since: 10, Epoch: 1, Records: 8, Peak: 0},
		{Layer: 0, Capsule: 5, Dead: true, Since: 17, Epoch: 4, Records: 1, Peak: 0.09},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Deaths(0.1, 1):\n got %+v\nwant %+v", got, want)
	}
	// A longer stretch drops the short dips and deaths; the dead ones are
	// DarkCapsules'.
	got, err = g.Deaths(0.1, 3)
	if err != nil {
		t.Fatal(err)
	}
	want = []Death{
		{Layer: 0, Capsule: 0, Dead: true, Since: 14, Epoch: 3, Records: 4, Peak: 0.06},
		{Layer: 0, Capsule: 2, Revivals: []Revival{want[1].Revivals[1]}},
		want[2],
		want[3],
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Deaths(0.1, 3):\n got %+v\nwant %+v", got, want)
	}
	for _, min := range []int{1, 2, 3, 5} {
		dark, _ := g.DarkCapsules(0.1, min)
		deaths, _ := g.Deaths(0.1, min)
		var dead []Dark
		for _, d := range deaths {
			if d.Dead {
				dead = append(dead, Dark{Layer: d.Layer, Capsule: d.Capsule, Since: d.Since, Epoch: d.Epoch, Records: d.Records, Peak: d.Peak})
			}
		}
		if !reflect.DeepEqual(dead, dark) {
			t.Errorf("minRecords %d: the dead of Deaths %+v, DarkCapsules %+v", min, dead, dark)
		}
	}
	if g.HasWNorm() || got[0].Out != nil || got[0].In != nil {
		t.Error("a log without w_norm has votes-matrix trajectories")
	}
}

// wnormLog is a log of primary (3 capsules) → caps (2 capsules) → top (2
// capsules) with w_norm: capsule 1 of caps dies at step 3 (record 2);
// its outgoing ‖W[j,1]‖ of caps → top decay to 0, its incoming ‖W[1,i]‖
// of primary → caps halve.
func wnormLog() *Log {
	g := &Log{Header: Header{Format: Format, Model: "w", Batch: 2, Layers: []Layer{{"primary", 3, 2}, {"caps", 2, 2}, {"top", 2, 2}}}}
	caps1 := []float32{0.5, 0.4, 0.05, 0.01, 0, 0}
	for k, c := range caps1 {
		decay := float32(1) / float32(1+k*k) // 1, 1/2, 1/5, 1/10, 1/17, 1/26
		if k == 5 {
			decay = 0
		}
		r := Record{Epoch: 1, Step: k + 1,
			MaxNorm: [][]float32{{1, 1, 1}, {1, c}, {1, 1}},
			GradW:   [][]float32{make([]float32, 6), make([]float32, 4)},
			WNorm: [][]float32{
				{1, 1, 1, 2 * decay, 4 * decay, 6 * decay}, // W[j,i] of primary → caps at j·3+i: row j = 1 is caps 1's incoming
				{1, 3 * decay, 1, 1 * decay},               // caps → top at j·2+i: i = 1 is caps 1's outgoing
			}}
		g.Records = append(g.Records, r)
	}
	return g
}

func TestDeathsWNorm(t *testing.T) {
	g := wnormLog()
	got, err := g.Deaths(0.1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Layer != 1 || got[0].Capsule != 1 || !got[0].Dead || got[0].Since != 3 {
		t.Fatalf("Deaths: %+v, want capsule 1 of layer 1 dead since step 3", got)
	}
	d := got[0]
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-6 }
	// Outgoing: mean over j of (3, 1)·decay = 2·decay.
	o := d.Out
	if o == nil || !near(o.First, 2) || !near(o.AtDeath, 2.0/5) || o.End != 0 || o.Min != 0 || o.MinStep != 6 || o.EndMax != 0 {
		t.Errorf("Out = %+v, want first 2, at death 0.4, end 0, min 0 at step 6, end max 0", o)
	}
	// Incoming: mean over i of (2, 4, 6)·decay = 4·decay.
	in := d.In
	if in == nil || !near(in.First, 4) || !near(in.AtDeath, 4.0/5) || in.End != 0 || in.MinStep != 6 || in.EndMax != 0 {
		t.Errorf("In = %+v, want first 4, at death 0.8, end 0, min at step 6", in)
	}
	// The top layer's capsules have no outgoing votes, the primary ones no
	// incoming: a dead primary capsule has Out only.
	g.Records[4].MaxNorm[0][2], g.Records[5].MaxNorm[0][2] = 0, 0
	got, _ = g.Deaths(0.1, 2)
	if len(got) != 2 || got[0].Layer != 0 || got[0].Capsule != 2 || got[0].In != nil || got[0].Out == nil {
		t.Fatalf("a dead primary capsule: %+v", got)
	}
	// Out of primary capsule 2: ‖W[j,2]‖ = 1 and 6·decay, at the end 1 and 0.
	if o := got[0].Out; !near(o.AtDeath, (1+6.0/17)/2) || !near(o.End, 0.5) || o.EndMax != 1 || !near(o.Min, 0.5) {
		t.Errorf("Out of primary capsule 2 = %+v", o)
	}
	// A NaN w_norm is left out of the minimum.
	g.Records[5].WNorm[1][3] = float32(math.NaN())
	got, _ = g.Deaths(0.1, 2)
	if o := got[1].Out; !math.IsNaN(o.End) || !math.IsNaN(o.EndMax) || !near(o.Min, 2.0/17) || o.MinStep != 5 {
		t.Errorf("Out with a NaN at the end = %+v, want end NaN, min 2/17 at step 5", o)
	}
}

func TestDeathsErrors(t *testing.T) {
	g := wnormLog()
	for _, theta := range []float64{0, -1, math.NaN()} {
		if _, err := g.Deaths(theta, 1); err == nil || !strings.Contains(err.Error(), "threshold") {
			t.Errorf("threshold %v: %v", theta, err)
		}
	}
	if _, err := g.Deaths(0.1, 0); err == nil {
		t.Error("minRecords 0: no error")
	}
	if got, err := g.Deaths(math.Inf(1), 1); err != nil || len(got) != 7 {
		t.Errorf("an infinite threshold: %d capsules (%v), want all 7 dead", len(got), err)
	}
	g.Records[3].WNorm = nil
	if _, err := g.Deaths(0.1, 1); err == nil || !strings.Contains(err.Error(), "record 3 (step 4) has no w_norm") {
		t.Errorf("w_norm missing in one record: %v", err)
	}
	g = wnormLog()
	g.Records[2].WNorm[1] = g.Records[2].WNorm[1][:3]
	if _, err := g.Deaths(0.1, 1); err == nil || !strings.Contains(err.Error(), "record 2 (step 3): 3 w_norm values") {
		t.Errorf("a short w_norm row: %v", err)
	}
	g = wnormLog()
	g.Records[1].MaxNorm = g.Records[1].MaxNorm[:2]
	if _, err := g.Deaths(0.1, 1); err == nil || !strings.Contains(err.Error(), "record 1") {
		t.Errorf("a record without a layer: %v", err)
	}
	// A log without records, or without w_norm: no deaths, no error.
	if got, err := (&Log{Header: g.Header}).Deaths(0.1, 1); err != nil || got != nil {
		t.Errorf("an empty log: %v, %v", got, err)
	}
}
