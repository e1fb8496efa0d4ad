package sweep

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// within runs f in a goroutine and fails the test when it takes longer
// than limit (so that a quadratic parser fails instead of hanging).
func within(t *testing.T, limit time.Duration, f func()) time.Duration {
	t.Helper()
	done := make(chan time.Duration, 1)
	go func() {
		t0 := time.Now()
		f()
		done <- time.Since(t0)
	}()
	select {
	case d := <-done:
		return d
	case <-time.After(limit):
		t.Fatalf("not done after %v", limit)
		return 0
	}
}

// TestResultNesting: 8 MB results of malformed or deep nesting (repeated
// "[" and the skipped keys' arrays opened and never closed) are invalid
// in Collect and errors of ReadResult, each in linear time (well under a
// second natively).
func TestResultNesting(t *testing.T) {
	dir := t.TempDir()
	tasks := gridTasks([][2]int{{1, 4}}, 2)[:4]
	mp := writeManifest(t, dir, tasks)
	os.MkdirAll(filepath.Join(dir, "results"), 0o755)
	const size = 8 << 20
	bodies := []string{
		strings.Repeat("[", size),
		strings.Repeat(`"NormMean":[[`, size/13) + "]",
		strings.Repeat(`"Dead":[`, size/8) + "]",
		`{"analysis":` + strings.Repeat(`{"a":[`, size/6),
	}
	for i, b := range bodies {
		if err := os.WriteFile(filepath.Join(dir, tasks[i].Result), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The guard against a scan that is quadratic in the nesting is the
	// 5-second limit of within: quadratic on 8 MB is of order 10^13 steps,
	// hours. A tighter absolute bound (1 s, as before) measured the machine
	// instead: under qemu-user beside two trainings one body took 1.07 s.
	for i, b := range bodies {
		d := within(t, 5*time.Second, func() { stripArrays(nil, []byte(b)) })
		t.Logf("stripArrays of body %d: %v", i, d)
	}
	var s *Summary
	var err error
	d := within(t, 5*time.Second, func() { s, err = Collect(mp) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("collect of 4 × 8 MB: %v", d)
	if s.Done != 0 || len(s.Invalid) != len(bodies) {
		t.Fatalf("done %d, invalid %+v", s.Done, s.Invalid)
	}
	for i, p := range s.Invalid {
		if strings.Contains(p.Problem, "\n") || len(p.Problem) > 300 {
			t.Errorf("task %d: problem %q", i, p.Problem)
		}
	}
	for i := range bodies {
		path := filepath.Join(dir, tasks[i].Result)
		within(t, 5*time.Second, func() {
			if _, err := ReadResult(path); err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("ReadResult %d: error %v", i, err)
			}
		})
	}
}

// TestCheckNesting: the depth bound counts brackets and braces outside
// strings only, and a real result is far below it.
func TestCheckNesting(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{
		{`{"a":[1,[2]],"b":"[[[[{{{{"}`, true},
		{`"\"[[[["`, true},
		{strings.Repeat("[", maxResultDepth) + strings.Repeat("]", maxResultDepth), true},
		{strings.Repeat("[", maxResultDepth+1), false},
		{strings.Repeat(`{"a":`, maxResultDepth+1), false},
		{"]]]", false},
		{`{"a":[}`, true}, // mismatched kinds are left to encoding/json
	} {
		if err := checkNesting([]byte(c.in)); (err == nil) != c.ok {
			t.Errorf("%.40q: error %v", c.in, err)
		}
	}
	r := Result{Task: gridTasks([][2]int{{8, 64}}, 1)[0], Status: "done", Params: 10,
		Analysis: synthReport(9, 64, 100, 0.1, rand.New(rand.NewPCG(1, 2)))}
	path := filepath.Join(t.TempDir(), "r.json")
	if err := WriteResult(path, r); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if d := depth(b); d > maxResultDepth/4 {
		t.Errorf("a real result nests %d deep", d)
	}
	if _, err := ReadResult(path); err != nil {
		t.Error(err)
	}
}

// depth is the nesting depth of the JSON text b.
func depth(b []byte) int {
	for d := 1; ; d++ {
		if checkNestingDepth(b, d) == nil {
			return d
		}
	}
}
