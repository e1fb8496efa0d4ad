package data

import (
	"strings"
	"testing"
)

func TestLoadNamed(t *testing.T) {
	tr, te, err := LoadNamed("embedded", "")
	if err != nil {
		t.Fatal(err)
	}
	if tr.N != 6000 || te.N != 1000 || tr.Name != "mnist-embedded-train" {
		t.Errorf("embedded: %s %d, %s %d", tr.Name, tr.N, te.Name, te.N)
	}
	t.Setenv(DataDirEnv, t.TempDir()) // an empty cache
	for _, tc := range []struct{ name, want string }{
		{"imagenet", "unknown data set"},
		{"mnist", "./build.sh data mnist"},
		{"fashion", "Fashion-MNIST not found"},
		{"cifar10", "CIFAR10 not found"},
	} {
		if _, _, err := LoadNamed(tc.name, ""); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadNamed(%q): %v, want an error mentioning %q", tc.name, err, tc.want)
		}
	}
	// A directory holding the files is found and loaded.
	dir := t.TempDir()
	writeMNISTDir(t, dir, 7, 3)
	if tr, te, err := LoadNamed("mnist", dir); err != nil || tr.N != 7 || te.N != 3 {
		t.Errorf("mnist from %s: %v", dir, err)
	}
}
