package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// within runs f in a goroutine and fails the test when it has not
// returned within d: a hang fails rather than blocks (the goroutine is
// left spinning until the test binary exits).
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s: not done within %v (an infinite axis range hangs gonum's tick search)", what, d)
	}
}

// TestOverflowingMetrics: losses of +1e308 and −1e308 (finite, but their
// range is not) are left out of the training curves with a note in the
// caption; the report is written within a second.
func TestOverflowingMetrics(t *testing.T) {
	in := Input{Model: "m", Metrics: []Epoch{
		{Epoch: 1, Loss: 0.5, MarginLoss: 0.4, ReconLoss: 90, TrainAcc: 0.5, ValAcc: 0.5, TestAcc: 0.5},
		{Epoch: 2, Loss: 1e308, MarginLoss: -1e308, ReconLoss: 80, TrainAcc: 0.7, ValAcc: 0.6, TestAcc: 0.6},
		{Epoch: 3, Loss: 0.3, MarginLoss: 0.2, ReconLoss: 1e308, TrainAcc: 0.9, ValAcc: 0.8, TestAcc: 0.8},
	}}
	var b bytes.Buffer
	var err error
	within(t, time.Second, "report with losses of ±1e308", func() { err = Write(&b, in) })
	if err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	for _, want := range []string{"margin loss L_m per epoch (2 value(s) not finite or beyond ±1e+30 left out)", "reconstruction loss per epoch (1 value(s) not finite or beyond ±1e+30 left out)"} {
		if !strings.Contains(doc, want) {
			t.Errorf("report lacks the caption %q", want)
		}
	}
	if strings.Contains(doc, "accuracy per epoch (") {
		t.Error("the accuracy caption notes values left out, but none were")
	}
}
