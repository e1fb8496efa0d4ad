package data

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDataDir(t *testing.T) {
	t.Setenv(DataDirEnv, "/some/where")
	if d, err := DataDir(); err != nil || d != "/some/where" {
		t.Errorf("DataDir() = %q, %v with %s set", d, err, DataDirEnv)
	}
	t.Setenv(DataDirEnv, "")
	t.Setenv("XDG_CACHE_HOME", "/xdg/cache")
	d, err := DataDir()
	if c, cerr := os.UserCacheDir(); cerr == nil && (err != nil || d != filepath.Join(c, "capstan")) {
		t.Errorf("DataDir() = %q, %v; want %s", d, err, filepath.Join(c, "capstan"))
	}
}

func TestFindMNIST(t *testing.T) {
	cache, flag := t.TempDir(), t.TempDir()
	t.Setenv(DataDirEnv, cache)

	_, err := FindMNIST(flag)
	wantErr(t, err, "MNIST not found in "+flag+" or "+filepath.Join(flag, "mnist")+" or "+filepath.Join(cache, "mnist"),
		"run ./build.sh data", "go run ./tools/data mnist")
	_, err = FindMNIST("")
	wantErr(t, err, "MNIST not found in "+filepath.Join(cache, "mnist")+":")
	_, err = FindFashionMNIST("")
	wantErr(t, err, "Fashion-MNIST not found", filepath.Join(cache, "fashion-mnist"), "go run ./tools/data fashion")

	// in the cache (gzipped)
	for _, n := range MNISTFiles() {
		writeFile(t, filepath.Join(cache, "mnist", n+".gz"), []byte("x"))
	}
	if d, err := FindMNIST(flag); err != nil || d != filepath.Join(cache, "mnist") {
		t.Errorf("FindMNIST = %q, %v; want the cache", d, err)
	}
	// three of four files in the flag directory: still the cache
	for _, n := range MNISTFiles()[:3] {
		writeFile(t, filepath.Join(flag, n), []byte("x"))
	}
	if d, _ := FindMNIST(flag); d != filepath.Join(cache, "mnist") {
		t.Errorf("FindMNIST with an incomplete flag dir = %q", d)
	}
	// complete flag directory wins, then its mnist/ subdirectory
	writeFile(t, filepath.Join(flag, MNISTFiles()[3]), []byte("x"))
	if d, _ := FindMNIST(flag); d != flag {
		t.Errorf("FindMNIST = %q, want %q", d, flag)
	}
	flag2 := t.TempDir()
	for _, n := range MNISTFiles() {
		writeFile(t, filepath.Join(flag2, "mnist", n), []byte("x"))
	}
	if d, _ := FindMNIST(flag2); d != filepath.Join(flag2, "mnist") {
		t.Errorf("FindMNIST = %q, want %q", d, filepath.Join(flag2, "mnist"))
	}

	// CIFAR10: not fetchable, the error says where to put it
	_, err = FindCIFAR10("")
	wantErr(t, err, "CIFAR10 not found", filepath.Join(cache, "cifar10"), "test_batch.bin")
	writeCIFAR(t, filepath.Join(cache, "cifar10", "cifar-10-batches-bin"), cifarNames(), []int{1, 1, 1, 1, 1, 1})
	if d, err := FindCIFAR10(""); err != nil || d != filepath.Join(cache, "cifar10", "cifar-10-batches-bin") {
		t.Errorf("FindCIFAR10 = %q, %v", d, err)
	}
}
