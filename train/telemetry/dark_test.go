package telemetry

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// darkLog builds a log of one layer of len(series) capsules; series[i][k]
// is capsule i's largest norm in record k (step 10+k, epoch 1+k/2).
func darkLog(series [][]float32) *Log {
	g := &Log{Header: Header{Format: Format, Model: "dark", Batch: 4, Layers: []Layer{{"primary", len(series), 2}}}}
	for k := range series[0] {
		r := Record{Epoch: 1 + k/2, Step: 10 + k, MaxNorm: [][]float32{make([]float32, len(series))}}
		for i := range series {
			r.MaxNorm[0][i] = series[i][k]
		}
		g.Records = append(g.Records, r)
	}
	return g
}

func TestDarkCapsules(t *testing.T) {
	nan := float32(math.NaN())
	g := darkLog([][]float32{
		{0.01, 0.02, 0.03, 0.04, 0.05}, // 0: dark throughout
		{0.9, 0.8, 0.05, 0.02, 0.01},   // 1: dark from the third record (step 12, epoch 2)
		{0.9, 0.01, 0.01, 0.01, 0.5},   // 2: came back in the last record
		{0.01, 0.01, 0.01, 0.01, 0.1},  // 3: exactly at the threshold: not dark
		{0.01, 0.01, nan, 0.01, 0.01},  // 4: NaN ends the stretch: dark for 2 records
		{0.5, 0.5, 0.5, 0.5, 0.09},     // 5: dark in the last record only
		{0, 0, 0, 0, 0},                // 6: zero (a starved capsule): peak 0
	})
	got, err := g.DarkCapsules(0.1, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []Dark{
		{Layer: 0, Capsule: 0, Since: 10, Epoch: 1, Records: 5, Peak: 0.05},
		{Layer: 0, Capsule: 1, Since: 12, Epoch: 2, Records: 3, Peak: 0.05},
		{Layer: 0, Capsule: 4, Since: 13, Epoch: 2, Records: 2, Peak: 0.01},
		{Layer: 0, Capsule: 5, Since: 14, Epoch: 3, Records: 1, Peak: 0.09},
		{Layer: 0, Capsule: 6, Since: 10, Epoch: 1, Records: 5, Peak: 0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DarkCapsules(0.1, 1):\n got %+v\nwant %+v", got, want)
	}
	// A longer required stretch drops the short ones.
	got, err = g.DarkCapsules(0.1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := []Dark{want[0], want[1], want[4]}; !reflect.DeepEqual(got, want) {
		t.Fatalf("DarkCapsules(0.1, 3):\n got %+v\nwant %+v", got, want)
	}
	// A threshold below every norm: only the zero capsule.
	got, err = g.DarkCapsules(0.005, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Capsule != 6 {
		t.Fatalf("DarkCapsules(0.005, 1) = %+v, want capsule 6 only", got)
	}
}

func TestDarkCapsulesLayers(t *testing.T) {
	// Two layers: the index of the layer is reported, records in order.
	g := &Log{Header: Header{Format: Format, Model: "dark", Batch: 4, Layers: []Layer{{"primary", 1, 2}, {"caps.0", 2, 2}}}}
	for k := 0; k < 4; k++ {
		g.Records = append(g.Records, Record{Epoch: 1, Step: 1 + k, MaxNorm: [][]float32{{0.9}, {0.9, float32(0.04) / float32(k+1)}}})
	}
	got, err := g.DarkCapsules(DefaultDarkNorm, DarkMinRecords(len(g.Records)))
	if err != nil {
		t.Fatal(err)
	}
	if want := []Dark{{Layer: 1, Capsule: 1, Since: 1, Epoch: 1, Records: 4, Peak: 0.04}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if in := InLayer(got, 1); len(in) != 1 || in[0].Capsule != 1 {
		t.Errorf("InLayer(got, 1) = %+v", in)
	}
	if in := InLayer(got, 0); len(in) != 0 {
		t.Errorf("InLayer(got, 0) = %+v, want none", in)
	}
	// An empty log has no dark capsule.
	if got, err := (&Log{Header: g.Header}).DarkCapsules(0.1, 1); err != nil || len(got) != 0 {
		t.Fatalf("empty log: %+v, %v", got, err)
	}
}

func TestDarkCapsulesErrors(t *testing.T) {
	g := darkLog([][]float32{{0.01, 0.02}})
	for _, c := range []struct {
		theta float64
		min   int
		want  string
	}{
		{0, 1, "threshold 0"},
		{-1, 1, "threshold -1"},
		{math.NaN(), 1, "threshold NaN"},
		{0.1, 0, "at least 0 record"},
	} {
		if _, err := g.DarkCapsules(c.theta, c.min); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("DarkCapsules(%g, %d): %v, want an error with %q", c.theta, c.min, err, c.want)
		}
	}
	bad := darkLog([][]float32{{0.01, 0.02}})
	bad.Records[1].MaxNorm[0] = nil
	if _, err := bad.DarkCapsules(0.1, 1); err == nil || !strings.Contains(err.Error(), "record 1 (step 11)") {
		t.Errorf("mismatched record: %v", err)
	}
	bad.Records[1].MaxNorm = nil
	if _, err := bad.DarkCapsules(0.1, 1); err == nil || !strings.Contains(err.Error(), "0 max_norm layers") {
		t.Errorf("record without layers: %v", err)
	}
}

func TestDarkMinRecords(t *testing.T) {
	for n, want := range map[int]int{0: 1, 1: 1, 10: 1, 11: 2, 100: 10, 336: 34} {
		if got := DarkMinRecords(n); got != want {
			t.Errorf("DarkMinRecords(%d) = %d, want %d", n, got, want)
		}
	}
}
