//go:build unix

package train

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within runs fn and fails the test when it does not return within a
// second (an open that blocks on a FIFO).
func within(t *testing.T, what string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Second):
		t.Fatalf("%s: still blocked after a second", what)
		return nil
	}
}

// TestLockSymlinkOutside: a lock that is a link to a file outside the
// run directory is refused; the target is untouched.
func TestLockSymlinkOutside(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "run")
	target := filepath.Join(base, "precious")
	if err := os.WriteFile(target, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, LockName)); err != nil {
		t.Fatal(err)
	}
	o := tinyOptions(t, dir)
	o.Epochs = 1
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a run over a symlinked lock: %v, want a refusal", err)
	}
	if b, _ := os.ReadFile(target); string(b) != "precious" {
		t.Errorf("the lock's link target now holds %q", b)
	}
}

// TestLockDangling: a lock that is a dangling link is refused; nothing is
// created at its target.
func TestLockDangling(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "run")
	target := filepath.Join(base, "elsewhere")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, LockName)); err != nil {
		t.Fatal(err)
	}
	o := tinyOptions(t, dir)
	o.Epochs = 1
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a run over a dangling lock link: %v, want a refusal", err)
	}
	if exists(target) {
		t.Error("a file was created at the dangling lock's target")
	}
}

// TestTelemetrySymlink: a resume whose telemetry.ndjson.gz is a link to a
// file outside the run directory is refused; the target is neither cut
// nor appended to.
func TestTelemetrySymlink(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "run")
	o := oneEpochTelemetry(t, dir)
	tel := filepath.Join(dir, "telemetry.ndjson.gz")
	target := filepath.Join(base, "telemetry-elsewhere.ndjson.gz")
	if err := os.Rename(tel, target); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, tel); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(target)
	o.Epochs, o.Resume = 2, dir
	if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("a resume over a symlinked telemetry file: %v, want a refusal", err)
	} else {
		t.Log(err)
	}
	if after, _ := os.ReadFile(target); string(after) != string(before) {
		t.Errorf("the telemetry link's target changed: %d bytes, was %d", len(after), len(before))
	}
}

// TestFIFORunFiles: a FIFO as telemetry, metrics, checkpoint or optimizer
// state makes a resume return an error within a second (the FIFO left as
// it was), and a FIFO as metrics makes ReadMetrics return one.
func TestFIFORunFiles(t *testing.T) {
	for _, name := range []string{"telemetry.ndjson.gz", "telemetry.ndjson", MetricsName, CheckpointName, "optimizer-6.safetensors"} {
		dir := filepath.Join(t.TempDir(), "run")
		o := oneEpochTelemetry(t, dir)
		p := filepath.Join(dir, name)
		if err := os.Remove(p); err != nil && name != "telemetry.ndjson" { // the run wrote the .gz
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
		o.Epochs, o.Resume = 2, dir
		err := within(t, name, func() error {
			_, err := Run(context.Background(), o)
			return err
		})
		if err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("resume with a FIFO as %s: %v, want a one-line error", name, err)
		}
		t.Log(err)
		if st, _ := os.Lstat(p); st == nil || st.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("resume with a FIFO as %s: the FIFO was replaced", name)
		}
	}
	p := filepath.Join(t.TempDir(), MetricsName)
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := within(t, "ReadMetrics", func() error { _, err := ReadMetrics(p); return err }); err == nil {
		t.Error("ReadMetrics of a FIFO: no error")
	}
}
