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
// fashion-mnist/ and cifar10/. The finders (Set.Find) refuse a
// $CAPSTAN_DATA that does not exist (CheckEnvDir) rather than look
// anywhere else.
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

// CheckDir checks a data directory given by the user (a -data-dir flag):
// it must exist and be a directory, else the error names it. A data set
// is never looked up elsewhere instead of a directory that was named.
func CheckDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("data directory %s does not exist", dir)
	case err != nil:
		return fmt.Errorf("data directory %s: %w", dir, err)
	case !st.IsDir():
		return fmt.Errorf("data directory %s is not a directory", dir)
	}
	return nil
}

// CheckEnvDir checks $CAPSTAN_DATA when it is set: the directory must
// exist (a data set is never looked up in the default cache instead), and
// the error names the variable and the path.
func CheckEnvDir() error {
	d := os.Getenv(DataDirEnv)
	if d == "" {
		return nil
	}
	if err := CheckDir(d); err != nil {
		return fmt.Errorf("%s: %w (unset it for the default cache, or create it: ./build.sh data)", DataDirEnv, err)
	}
	return nil
}

// searchDirs is where a finder looks for a data set's files.
type searchDirs struct {
	// cands are the candidate directories in order: those under the
	// -data-dir flag, then those under the data cache.
	cands []string
	// cache is the data cache (DataDir), "" when there is none; cacheErr
	// says why there is none.
	cache    string
	cacheErr error
}

// findDirs returns where a finder looks: inDir(dir) when dir (a -data-dir
// flag) is given, which must exist (CheckDir), then inCache of the data
// cache (DataDir), whose $CAPSTAN_DATA must exist when set (CheckEnvDir).
// A directory that was named is never replaced by another.
func findDirs(dir string, inDir, inCache func(string) []string) (searchDirs, error) {
	var sd searchDirs
	if dir != "" {
		if err := CheckDir(dir); err != nil {
			return sd, err
		}
		sd.cands = inDir(dir)
	}
	if err := CheckEnvDir(); err != nil {
		return sd, err
	}
	if sd.cache, sd.cacheErr = DataDir(); sd.cacheErr == nil {
		sd.cands = append(sd.cands, inCache(sd.cache)...)
	}
	return sd, nil
}

// BuiltIn is what Where says of the embedded data set: it is in the
// binary, not in a directory.
const BuiltIn = "built in"

// Where says where data set name (a DataSets or TestSets name) is read
// from with dir as its -data-dir flag: the directory Find finds (a
// generated set's base's), BuiltIn for the embedded set, or the error of
// a set that cannot be found.
func Where(name, dir string) (string, error) {
	s, _ := LookupTest(name)
	if s != nil && s.Generated() {
		s = Lookup(s.Base)
	}
	switch {
	case s == nil:
		return "", fmt.Errorf("unknown data set %q (one of %v)", name, TestSets)
	case s.find == nil:
		return BuiltIn, nil
	}
	return s.Find(dir)
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
	sd, err := findDirs(dir, func(dir string) []string {
		return []string{dir, filepath.Join(dir, "cifar-10-batches-bin"), filepath.Join(dir, CIFAR10Subdir), filepath.Join(dir, CIFAR10Subdir, "cifar-10-batches-bin")}
	}, func(cache string) []string {
		return []string{filepath.Join(cache, CIFAR10Subdir), filepath.Join(cache, CIFAR10Subdir, "cifar-10-batches-bin")}
	})
	if err != nil {
		return "", err
	}
	for _, d := range sd.cands {
		if hasFiles(d, s.FileNames(), false) {
			return d, nil
		}
	}
	where := filepath.Join("$"+DataDirEnv, CIFAR10Subdir)
	if sd.cacheErr == nil {
		where = filepath.Join(sd.cache, CIFAR10Subdir)
	}
	return "", fmt.Errorf("%s not found in %s: %s %s", s.Title, strings.Join(sd.cands, " or "), s.Fetch.Hint, where)
}

// findIDXSet finds the directory of IDX set s (see FindMNIST).
func findIDXSet(s *Set, dir string) (string, error) {
	sd, err := findDirs(dir, func(dir string) []string {
		return []string{dir, filepath.Join(dir, s.Subdir)}
	}, func(cache string) []string {
		return []string{filepath.Join(cache, s.Subdir)}
	})
	if err != nil {
		return "", err
	}
	for _, d := range sd.cands {
		if hasFiles(d, s.FileNames(), true) {
			return d, nil
		}
	}
	msg := fmt.Sprintf("%s not found in %s: %s", s.Title, strings.Join(sd.cands, " or "), s.Fetch.Hint)
	if sd.cacheErr != nil {
		msg += "; " + sd.cacheErr.Error()
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
