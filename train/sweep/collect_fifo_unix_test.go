//go:build unix

package sweep

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestCollectFIFOResult: a FIFO as a task's result file is reported as an
// invalid result within a second, not waited on; so is a FIFO manifest.
func TestCollectFIFOResult(t *testing.T) {
	dir := t.TempDir()
	tasks := gridTasks([][2]int{{1, 4}}, 1)
	mp := writeManifest(t, dir, tasks)
	if err := os.MkdirAll(filepath.Join(dir, "results"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, tasks[0].Result), 0o644); err != nil {
		t.Fatal(err)
	}
	fifoManifest := filepath.Join(dir, "fifo-manifest.ndjson")
	if err := syscall.Mkfifo(fifoManifest, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		s, err := Collect(mp)
		if err == nil && len(s.Invalid) == 0 {
			t.Errorf("a FIFO result: no invalid task")
		}
		_, err = Collect(fifoManifest)
		if err == nil {
			t.Errorf("a FIFO manifest: no error")
		}
		done <- nil
	}()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("Collect blocked on a FIFO")
	}
}
