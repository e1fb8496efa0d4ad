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

// TestLoadTest: the embedded test split, AffNIST generated from it (same
// count, 40×40, reproducible by seed), and an unknown name.
func TestLoadTest(t *testing.T) {
	te, err := LoadTest("embedded", "", 1)
	if err != nil || te.N != 1000 {
		t.Fatalf("embedded: %v (%v images)", err, te)
	}
	a, err := LoadTest("affnist-embedded", "", 3)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := LoadTest("affnist-embedded", "", 3)
	if a.N != 1000 || a.H != 40 || a.W != 40 || a.X[40*40*5+820] != b.X[40*40*5+820] {
		t.Errorf("affnist-embedded: %d images of %d×%d, not reproducible by seed", a.N, a.H, a.W)
	}
	if _, err := LoadTest("nope", "", 1); err == nil {
		t.Error("unknown data set accepted")
	}
}
