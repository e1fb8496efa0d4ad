package data

import (
	"path/filepath"
	"testing"
)

// TestMissingDataDir checks that a -data-dir or a $CAPSTAN_DATA that does
// not exist is an error naming it, never replaced by the data cache or
// the default cache that holds the set.
func TestMissingDataDir(t *testing.T) {
	cache := t.TempDir()
	for _, n := range MNISTFiles() {
		writeFile(t, filepath.Join(cache, "mnist", n), []byte("x"))
	}
	writeCIFAR(t, filepath.Join(cache, "cifar10"), cifarNames(), []int{1, 1, 1, 1, 1, 1})
	t.Setenv(DataDirEnv, cache)
	missing := filepath.Join(t.TempDir(), "no-such-dir")
	for _, name := range []string{"mnist", "cifar10"} {
		d, err := Lookup(name).Find(missing)
		if err == nil {
			t.Errorf("%s: Find(%s) = %q, want an error naming the missing directory", name, missing, d)
			continue
		}
		wantErr(t, err, missing, "does not exist")
	}
	file := writeFile(t, filepath.Join(t.TempDir(), "f"), []byte("x"))
	_, err := FindMNIST(file)
	wantErr(t, err, file, "not a directory")

	// $CAPSTAN_DATA names a missing directory: not the default cache.
	xdg := t.TempDir()
	for _, n := range MNISTFiles() {
		writeFile(t, filepath.Join(xdg, "capstan", "mnist", n), []byte("x"))
	}
	t.Setenv("XDG_CACHE_HOME", xdg)
	t.Setenv("HOME", xdg)
	t.Setenv(DataDirEnv, missing)
	for _, name := range []string{"mnist", "cifar10"} {
		_, err := Lookup(name).Find("")
		wantErr(t, err, DataDirEnv, missing, "does not exist")
	}
}
