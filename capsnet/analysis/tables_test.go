package analysis

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// rep is a report of a two-layer model.
func rep(cns, dyr float64, dead int) Report {
	return Report{Thresholds: DefaultThresholds(),
		Layers:  []LayerReport{{Name: "a", N: 4, K: 10, CNS: cns, CDS: dead}, {Name: "b", N: 2, K: 10}},
		Routing: []RoutingReport{{From: "a", To: "b", NIn: 4, NOut: 2, AliveIn: 4 - dead, AliveOut: 2, DYR: dyr, DYS: 2 * dyr}}}
}

// TestSummarize: mean and population std over models, NaN printed as –
// and written as null, and reports of different architectures refused.
func TestSummarize(t *testing.T) {
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
	if b, err := json.Marshal(nan); err != nil || !strings.Contains(string(b), `"dyr":{"mean":null,"std":null}`) {
		t.Errorf("JSON of NaN (%v): %s", err, b)
	}
	other := rep(1, 1, 0)
	other.Layers[1].N = 3
	if _, err := Summarize([]Report{rep(1, 1, 0), other}); err == nil {
		t.Error("reports of different architectures summarized")
	}
}

// TestLegends: each table is followed by its legend, which names the
// counts, sums, means and rates and the thresholds in use; as Markdown a
// paragraph after the table.
func TestLegends(t *testing.T) {
	tab, err := Summarize([]Report{rep(1, 1, 0), rep(3, 1, 0)})
	if err != nil {
		t.Fatal(err)
	}
	l1, l2 := tab.Legends()
	for _, want := range []string{"counts", "mean over alive inputs", "ε₁ = 0.01", "mean ± std over the 2 models"} {
		if !strings.Contains(l1, want) {
			t.Errorf("Table 1's legend lacks %q: %s", want, l1)
		}
	}
	for _, want := range []string{"sum of the layer's norms", "count of capsules with norm ≥ ε_active = 0.05", "rate", "count of dead capsules"} {
		if !strings.Contains(l2, want) {
			t.Errorf("Table 2's legend lacks %q: %s", want, l2)
		}
	}
	var text, md strings.Builder
	if err := tab.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := tab.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "\n"+Wrap(l1)+"\n\nTable 2") || !strings.HasSuffix(text.String(), "\n"+Wrap(l2)+"\n") {
		t.Errorf("text: legends not under their tables:\n%s", text.String())
	}
	for _, line := range strings.Split(Wrap(l1)+"\n"+Wrap(l2), "\n") {
		if n := len([]rune(line)); n > 100 {
			t.Errorf("legend line of %d characters: %s", n, line)
		}
	}
	if !strings.Contains(md.String(), " |\n\n"+l1+"\n\n**Table 2") || !strings.HasSuffix(md.String(), " |\n\n"+l2+"\n") {
		t.Errorf("Markdown: legends not paragraphs after their tables:\n%s", md.String())
	}
}
