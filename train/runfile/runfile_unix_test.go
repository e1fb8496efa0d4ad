//go:build unix

package runfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestRefused: links, dangling links, FIFOs and directories are refused
// by OpenFile without blocking and without touching a link's target.
func TestRefused(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "target")
	if err := os.WriteFile(outside, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	dangling := filepath.Join(dir, "dangling")
	fifo := filepath.Join(dir, "fifo")
	sub := filepath.Join(dir, "sub")
	must(t, os.Symlink(outside, link))
	must(t, os.Symlink(outside+".new", dangling))
	must(t, syscall.Mkfifo(fifo, 0o644))
	must(t, os.Mkdir(sub, 0o755))
	for _, p := range []string{link, dangling, fifo, sub} {
		done := make(chan error, 1)
		go func() {
			f, err := OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
			if err == nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotRegular) {
				t.Errorf("%s: got %v, want ErrNotRegular", p, err)
			}
		case <-time.After(time.Second):
			t.Fatalf("%s: open blocked", p)
		}
	}
	if b, _ := os.ReadFile(outside); string(b) != "keep" {
		t.Errorf("link target now %q", b)
	}
	if _, err := os.Lstat(outside + ".new"); err == nil {
		t.Error("dangling link's target created")
	}
	if _, err := Open(fifo); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Open(fifo): %v", err)
	}
	if f, err := Open(link); err != nil {
		t.Errorf("Open(link to a regular file): %v", err)
	} else {
		f.Close()
	}
}

// TestRegular: a regular file opens, and is created when missing.
func TestRegular(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	f, err := OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
	must(t, err)
	_, err = f.Write([]byte("x"))
	must(t, err)
	must(t, f.Close())
	must(t, Check(p))
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
