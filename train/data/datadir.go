package data

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DataDirEnv is the environment variable that overrides the data cache
// directory.
const DataDirEnv = "CAPSTAN_DATA"

// Subdirectories of the data cache directory, one per dataset, as
// tools/data writes them.
const (
	MNISTSubdir        = "mnist"
	FashionMNISTSubdir = "fashion-mnist"
	CIFAR10Subdir      = "cifar10"
)

// DataDir returns the data cache directory: $CAPSTAN_DATA when set and not
// empty, else os.UserCacheDir()/capstan ($XDG_CACHE_HOME/capstan or
// ~/.cache/capstan on Linux, ~/Library/Caches/capstan on macOS). It does
// not create it. Datasets live in its subdirectories mnist/,
// fashion-mnist/ and cifar10/.
func DataDir() (string, error) {
	if d := os.Getenv(DataDirEnv); d != "" {
		return d, nil
	}
	c, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("data: no data directory: set %s (%w)", DataDirEnv, err)
	}
	return filepath.Join(c, "capstan"), nil
}

// FindMNIST returns the directory holding the four MNIST files (raw or
// gzipped). It looks in dir itself, then dir/mnist (dir is typically a
// -data flag; "" skips both), then DataDir()/mnist. When none has them the
// error says where it looked and what to run.
func FindMNIST(dir string) (string, error) {
	return Lookup("mnist").Find(dir)
}

// FindFashionMNIST is FindMNIST for Fashion-MNIST (subdirectory
// fashion-mnist).
func FindFashionMNIST(dir string) (string, error) {
	return Lookup("fashion").Find(dir)
}

// FindCIFAR10 returns the directory holding the CIFAR10 binary batches
// (data_batch_1.bin … test_batch.bin), looking in dir,
// dir/cifar-10-batches-bin, dir/cifar10, then DataDir()/cifar10 and its
// cifar-10-batches-bin. CIFAR10 cannot be fetched by tools/data; the
// error says where to put it.
func FindCIFAR10(dir string) (string, error) {
	return Lookup("cifar10").Find(dir)
}

// findCIFAR10 finds the directory of CIFAR10's set s (see FindCIFAR10).
func findCIFAR10(s *Set, dir string) (string, error) {
	var cands []string
	if dir != "" {
		cands = append(cands, dir, filepath.Join(dir, "cifar-10-batches-bin"), filepath.Join(dir, CIFAR10Subdir), filepath.Join(dir, CIFAR10Subdir, "cifar-10-batches-bin"))
	}
	cache, cerr := DataDir()
	if cerr == nil {
		cands = append(cands, filepath.Join(cache, CIFAR10Subdir), filepath.Join(cache, CIFAR10Subdir, "cifar-10-batches-bin"))
	}
	for _, d := range cands {
		if hasFiles(d, s.FileNames(), false) {
			return d, nil
		}
	}
	where := filepath.Join("$"+DataDirEnv, CIFAR10Subdir)
	if cerr == nil {
		where = filepath.Join(cache, CIFAR10Subdir)
	}
	return "", fmt.Errorf("%s not found in %s: %s %s", s.Title, strings.Join(cands, " or "), s.Fetch.Hint, where)
}

// findIDXSet finds the directory of IDX set s (see FindMNIST).
func findIDXSet(s *Set, dir string) (string, error) {
	var cands []string
	if dir != "" {
		cands = append(cands, dir, filepath.Join(dir, s.Subdir))
	}
	cache, cerr := DataDir()
	if cerr == nil {
		cands = append(cands, filepath.Join(cache, s.Subdir))
	}
	for _, d := range cands {
		if hasFiles(d, s.FileNames(), true) {
			return d, nil
		}
	}
	msg := fmt.Sprintf("%s not found in %s: %s", s.Title, strings.Join(cands, " or "), s.Fetch.Hint)
	if cerr != nil {
		msg += "; " + cerr.Error()
	}
	return "", errors.New(msg)
}

// hasFiles reports whether dir holds every name (or name.gz when gz).
func hasFiles(dir string, names []string, gz bool) bool {
	for _, n := range names {
		if isFile(filepath.Join(dir, n)) {
			continue
		}
		if gz && isFile(filepath.Join(dir, n+".gz")) {
			continue
		}
		return false
	}
	return true
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
