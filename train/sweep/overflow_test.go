package sweep

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/capstan-ml/capstan/capsnet/analysis"
)

// TestHeatmapsOverflow: the summary's heatmaps of accuracies of ±1e308
// (a damaged result) are drawn within a second.
func TestHeatmapsOverflow(t *testing.T) {
	s := &Summary{Manifest: "m", Eval: "affnist", Archs: []Arch{
		{Arch: "a", Depth: 1, Capsules: 8, Dim: 4, RBA: Accuracy{Seeds: 1, Eval: analysis.Value{Mean: 1e306}}, Uniform: Accuracy{Seeds: 1, Eval: analysis.Value{Mean: -1e306}}},
		{Arch: "b", Depth: 2, Capsules: 8, Dim: 4, RBA: Accuracy{Seeds: 1, Eval: analysis.Value{Mean: 0.9}}, Uniform: Accuracy{Seeds: 1, Eval: analysis.Value{Mean: 0.8}}},
	}}
	var page bytes.Buffer
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		err = s.WriteHTML(&page)
	}()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("the summary's heatmaps of ±1e308 accuracies: not done within a second")
	}
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(page.String(), "<svg"); n != 3 {
		t.Errorf("%d heatmaps, want 3", n)
	}
	if !strings.Contains(page.String(), "1 value(s) not finite or beyond ±1e+30 left out") {
		t.Error("no caption notes the values left out")
	}
}
