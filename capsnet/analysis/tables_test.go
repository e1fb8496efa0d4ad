package analysis

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestSummarize: mean and population std over models, NaN printed as –
// and written as null, and reports of different architectures refused.
func TestSummarize(t *testing.T) {
	rep := func(cns, dyr float64, dead int) Report {
		return Report{Thresholds: DefaultThresholds(),
			Layers:  []LayerReport{{Name: "a", N: 4, K: 10, CNS: cns, CDS: dead}, {Name: "b", N: 2, K: 10}},
			Routing: []RoutingReport{{From: "a", To: "b", NIn: 4, NOut: 2, AliveIn: 4 - dead, AliveOut: 2, DYR: dyr, DYS: 2 * dyr}}}
	}
	tab, err := Summarize([]Report{rep(1, 0.5, 0), rep(3, 0.25, 2)})
	if err != nil {
		t.Fatal(err)
	}
	if v := tab.Table2[0].CNS; v != (Value{2, 1}) {
		t.Errorf("cns %+v, want 2 ± 1", v)
	}
	if v := tab.Table1[0].AliveIn; v != (Value{3, 1}) {
		t.Errorf("alive in %+v, want 3 ± 1", v)
	}
	if v := tab.Table1[0].DYR; v != (Value{0.375, 0.125}) {
		t.Errorf("dyr %+v, want 0.375 ± 0.125", v)
	}
	var sb strings.Builder
	if err := tab.WriteText(&sb); err != nil || !strings.Contains(sb.String(), "2 ± 1") || !strings.Contains(sb.String(), "3 ± 1/4 → 2/2") {
		t.Errorf("text (%v):\n%s", err, sb.String())
	}
	nan, _ := Summarize([]Report{rep(1, math.NaN(), 4)})
	if s := nan.Table1[0].DYR.String(); s != "–" {
		t.Errorf("NaN dyr prints %q", s)
	}
	if b, err := json.Marshal(nan); err != nil || !strings.Contains(string(b), `"DYR":{"mean":null,"std":null}`) {
		t.Errorf("JSON of NaN (%v): %s", err, b)
	}
	other := rep(1, 1, 0)
	other.Layers[1].N = 3
	if _, err := Summarize([]Report{rep(1, 1, 0), other}); err == nil {
		t.Error("reports of different architectures summarized")
	}
}
