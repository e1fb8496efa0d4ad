package data

import (
	"os"
	"path/filepath"
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
	// LoadTest reads the test files alone: with unreadable training files
	// it still loads the test split (and AffNIST from it).
	for _, f := range []string{mnistTrainImages, mnistTrainLabels} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("not IDX"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if te, err := LoadTest("mnist", dir, 1); err != nil || te.N != 3 || te.Name != "mnist-test" {
		t.Errorf("mnist test split without the training files: %v (%v)", err, te)
	}
	if a, err := LoadTest("affnist", dir, 1); err != nil || a.N != 3 || a.H != 40 {
		t.Errorf("affnist without the training files: %v", err)
	}
	if _, err := LoadTest("mnist-val", dir, 1); err == nil {
		t.Error("mnist-val with unreadable training files: no error")
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

// TestLoadSplits: the validation split is the last images of the training
// set, disjoint from the training split, and LoadTest's NAME-val is it.
func TestLoadSplits(t *testing.T) {
	s, err := LoadSplits("embedded", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	full, test, _ := LoadNamed("embedded", "")
	if s.Train.N != 6000-EmbeddedValidationImages || s.Val.N != EmbeddedValidationImages || s.Test.N != test.N {
		t.Fatalf("splits of %d, %d, %d images", s.Train.N, s.Val.N, s.Test.N)
	}
	sz := full.ImageSize()
	if s.Val.Name != "embedded-val" || &s.Val.X[0] == &s.Train.X[0] || s.Val.X[sz*7+300] != full.X[sz*(s.Train.N+7)+300] || s.Val.Y[11] != full.Y[s.Train.N+11] {
		t.Errorf("validation split %s is not the last %d training images", s.Val.Name, s.Val.N)
	}
	v, err := LoadTest("embedded-val", "", 1)
	if err != nil || v.N != s.Val.N || v.X[sz*3+200] != s.Val.X[sz*3+200] {
		t.Errorf("LoadTest(embedded-val): %v, %v", err, v)
	}
	for _, n := range []int{-1, 6000, 7000} {
		if _, err := HoldOut(full, test, "embedded", n); err == nil || !strings.Contains(err.Error(), "validation split") {
			t.Errorf("HoldOut %d: %v, want an error", n, err)
		}
	}
	if s, err := LoadSplits("embedded", "", 1234); err != nil || s.Val.N != 1234 || s.Train.N != 6000-1234 {
		t.Errorf("LoadSplits with 1234: %v", err)
	}
}

// TestEvalWarning: a checkpoint evaluated on its own data's splits or on
// AffNIST (MNIST digits) gets no warning; on other images, or without a
// record, it does.
func TestEvalWarning(t *testing.T) {
	for _, tc := range []struct {
		trained, eval string
		warn          bool
	}{
		{"mnist", "mnist", false}, {"mnist", "mnist-val", false}, {"mnist", "affnist", false},
		{"embedded", "affnist-embedded", false}, {"embedded", "mnist", false},
		{"fashion", "fashion-val", false}, {"fashion", "mnist", true}, {"mnist", "fashion", true},
		{"cifar10", "affnist", true}, {"", "mnist", true},
	} {
		if w := EvalWarning(tc.trained, tc.eval); (w != "") != tc.warn {
			t.Errorf("trained on %q, evaluated on %q: warning %q", tc.trained, tc.eval, w)
		}
	}
}
