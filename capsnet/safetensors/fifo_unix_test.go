//go:build unix

package safetensors

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadFIFO: a FIFO named as a safetensors file is refused at once,
// not opened (which would block until a writer came).
func TestReadFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoint.safetensors")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	for name, read := range map[string]func() error{
		"Read":       func() error { _, err := Read(path); return err },
		"ReadHeader": func() error { _, err := ReadHeader(path); return err },
	} {
		done := make(chan error, 1)
		go func() { done <- read() }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "is a FIFO") {
				t.Errorf("%s of a FIFO: %v, want a refusal naming it", name, err)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("%s of a FIFO still blocked after 2 s", name)
		}
	}
}
