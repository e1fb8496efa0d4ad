package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// entries lists dir's names.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.bin")
	if err := WriteBytes(path, []byte("first")); err != nil {
		t.Fatal(err)
	}
	if err := WriteBytes(path, []byte("second")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "second" {
		t.Fatalf("content %q, %v; want second", b, err)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != DefaultPerm {
		t.Fatalf("mode %v, want %v", fi.Mode().Perm(), DefaultPerm)
	}
	if names := entries(t, dir); len(names) != 1 {
		t.Fatalf("directory holds %v, want the file alone", names)
	}
}

// TestWriteFailureKeepsTarget: a failing fill or verify leaves the old
// content and no temporary file, with an error naming the path.
func TestWriteFailureKeepsTarget(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keep.txt")
	if err := WriteBytes(path, []byte("old")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	for name, write := range map[string]func() error{
		"fill": func() error {
			return Write(path, func(w io.Writer) error {
				io.WriteString(w, "partial")
				return boom
			})
		},
		"verify": func() error {
			return WriteWith(path, Options{Verify: func(tmp string) error {
				if b, _ := os.ReadFile(tmp); string(b) != "new" {
					t.Errorf("verify saw %q, want the complete content", b)
				}
				return boom
			}}, func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err })
		},
	} {
		err := write()
		if !errors.Is(err, boom) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v, want boom naming %s", name, err, path)
		}
		if b, _ := os.ReadFile(path); string(b) != "old" {
			t.Errorf("%s: target now %q, want old", name, b)
		}
		if names := entries(t, dir); len(names) != 1 {
			t.Errorf("%s: directory holds %v, want the target alone", name, names)
		}
	}
}

func TestWritePermAndMissingDir(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "script.sh")
	if err := WriteWith(path, Options{Perm: 0o755}, func(w io.Writer) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v, want 0755", fi.Mode().Perm())
	}
	missing := filepath.Join(dir, "no", "such", "f")
	if err := WriteBytes(missing, nil); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("write into a missing directory: %v", err)
	}
	if err := SyncDir(filepath.Join(dir, "absent")); err == nil {
		t.Fatal("SyncDir of a missing directory: no error")
	}
}
