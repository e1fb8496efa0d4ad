package data

import (
	"path/filepath"
	"testing"
)

// TestWhere checks that Where names the directory each data set is read
// from, "built in" for the embedded set.
func TestWhere(t *testing.T) {
	cache := t.TempDir()
	t.Setenv(DataDirEnv, cache)
	for _, n := range MNISTFiles() {
		writeFile(t, filepath.Join(cache, "mnist", n), []byte("x"))
	}
	for _, tc := range []struct{ name, want string }{
		{"embedded", BuiltIn}, {"embedded-val", BuiltIn}, {"affnist-embedded", BuiltIn},
		{"mnist", filepath.Join(cache, "mnist")}, {"mnist-val", filepath.Join(cache, "mnist")}, {"affnist", filepath.Join(cache, "mnist")},
	} {
		if got, err := Where(tc.name, ""); err != nil || got != tc.want {
			t.Errorf("Where(%s) = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	if _, err := Where("fashion", ""); err == nil {
		t.Error("Where(fashion) found a set that is not there")
	}
	if _, err := Where("imagenet", ""); err == nil {
		t.Error("Where(imagenet) succeeded")
	}
}
