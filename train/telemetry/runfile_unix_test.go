//go:build unix

package telemetry

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/capstan-ml/capstan/train/runfile"
)

// TestResumeRefusesLinksAndFIFOs: Resume refuses a telemetry file (plain
// or gzip) that is a link, leaving the target as it was, or a FIFO,
// without blocking; Open and Find's file refuse a FIFO without blocking.
func TestResumeRefusesLinksAndFIFOs(t *testing.T) {
	h := testHeader()
	for _, name := range []string{FileName, GzipName} {
		dir := t.TempDir()
		target := filepath.Join(t.TempDir(), "elsewhere")
		if err := os.WriteFile(target, []byte("not telemetry\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
		if _, err := Resume(dir, h, 1, Plain); !errors.Is(err, runfile.ErrNotRegular) {
			t.Errorf("%s a link: %v, want ErrNotRegular", name, err)
		}
		if b, _ := os.ReadFile(target); string(b) != "not telemetry\n" {
			t.Errorf("%s a link: its target now holds %q", name, b)
		}
	}
	for _, name := range []string{FileName, GzipName} {
		dir := t.TempDir()
		p := filepath.Join(dir, name)
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan [2]error, 1)
		go func() {
			_, err := Resume(dir, h, 1, Plain)
			_, oerr := Open(p)
			done <- [2]error{err, oerr}
		}()
		select {
		case errs := <-done:
			for _, err := range errs {
				if !errors.Is(err, runfile.ErrNotRegular) {
					t.Errorf("%s a FIFO: %v, want ErrNotRegular", name, err)
				}
			}
		case <-time.After(time.Second):
			t.Fatalf("%s a FIFO: blocked", name)
		}
	}
}
