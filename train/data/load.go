package data

import (
	"fmt"
	"strings"
)

// DataSets lists the names LoadNamed accepts: the rows of Sets that are
// not generated.
var DataSets = names(func(s *Set) bool { return !s.Generated() })

// LoadNamed loads a training and a test set by name (a DataSets name, see
// Sets): "embedded" (the MNIST subset built into the binary: 6000
// training and 1000 test digits), "mnist" and "fashion" (found by
// FindMNIST / FindFashionMNIST in dir or the data cache), "cifar10"
// (FindCIFAR10).
func LoadNamed(name, dir string) (trainSet, testSet *Dataset, err error) {
	s := Lookup(name)
	if s == nil || s.Generated() {
		return nil, nil, fmt.Errorf("unknown data set %q (one of %v)", name, DataSets)
	}
	d, err := s.Find(dir)
	if err != nil {
		return nil, nil, err
	}
	return s.LoadDir(d)
}

// The validation split is held out of the training set, never taken from
// the test set: the last ValidationImages training images of MNIST,
// Fashion-MNIST and CIFAR-10 (the last 5,000 MNIST training digits: the
// paper's "MNIST validation", and on the deep model's 40×40 canvas its
// "MNIST-40 validation"), the last EmbeddedValidationImages of the embedded
// subset's 6,000. A run trains on the images before them.
const (
	ValidationImages         = 5000
	EmbeddedValidationImages = 500
)

// ValidationSize is the default size of data set name's validation split.
func ValidationSize(name string) int {
	if s := Lookup(name); s != nil && s.ValImages > 0 {
		return s.ValImages
	}
	return ValidationImages
}

// Splits are a data set's three disjoint parts: training, validation (held
// out of the original training set) and test.
type Splits struct {
	Train, Val, Test *Dataset
}

// LoadSplits loads data set name (see LoadNamed) and holds its last nVal
// training images out as the validation split, named NAME-val (e.g.
// "mnist-val"); nVal ≤ 0 takes ValidationSize(name). The training split
// keeps the images before them and shares the memory.
func LoadSplits(name, dir string, nVal int) (Splits, error) {
	if nVal <= 0 {
		nVal = ValidationSize(name)
	}
	tr, te, err := LoadNamed(name, dir)
	if err != nil {
		return Splits{}, err
	}
	return HoldOut(tr, te, name, nVal)
}

// HoldOut splits the last nVal images of tr off as the validation set
// NAME-val; te is the test split.
func HoldOut(tr, te *Dataset, name string, nVal int) (Splits, error) {
	if nVal < 1 || nVal >= tr.N {
		return Splits{}, fmt.Errorf("data: %s: a validation split of %d images: want 1 to %d (the training set has %d)", tr.Name, nVal, tr.N-1, tr.N)
	}
	train, err := tr.Slice(0, tr.N-nVal)
	if err != nil {
		return Splits{}, err
	}
	val, err := tr.Slice(tr.N-nVal, tr.N)
	if err != nil {
		return Splits{}, err
	}
	val.Name = name + "-val"
	return Splits{Train: train, Val: val, Test: te}, nil
}

// TestSets lists the names LoadTest accepts: DataSets (their test splits),
// their validation splits (NAME-val) and the generated AffNIST of the
// MNIST or embedded test digits (the generated rows of Sets).
var TestSets = func() []string {
	s := append([]string(nil), DataSets...)
	for _, n := range DataSets {
		s = append(s, n+"-val")
	}
	return append(s, names((*Set).Generated)...)
}()

// LoadTest loads an evaluation set by name: the test split of a data set
// (see LoadNamed), its validation split ("mnist-val": the last
// ValidationSize training images, see LoadSplits), or AffNIST (docs/semantics.md §6,
// seeded) generated from the MNIST ("affnist") or the embedded
// ("affnist-embedded") test digits.
func LoadTest(name, dir string, seed uint64) (*Dataset, error) {
	s, val := LookupTest(name)
	switch {
	case s == nil:
		return loadTestSplit(name, dir) // the error of an unknown name
	case val:
		sp, err := LoadSplits(s.Name, dir, 0)
		if err != nil {
			return nil, err
		}
		return sp.Val, nil
	case s.Generated():
		test, err := loadTestSplit(s.Base, dir)
		if err != nil {
			return nil, err
		}
		return AffNIST(test, seed)
	}
	return loadTestSplit(name, dir)
}

// loadTestSplit loads the test split of data set name alone where its
// files allow (MNIST's format: the training images, six times the test
// set, are not read), else both splits.
func loadTestSplit(name, dir string) (*Dataset, error) {
	if s := Lookup(name); s != nil && s.loadTest != nil {
		d, err := s.Find(dir)
		if err != nil {
			return nil, err
		}
		return s.loadTest(d)
	}
	_, test, err := LoadNamed(name, dir)
	return test, err
}

// Source is the source of an evaluation set's images (Set.Source): "mnist"
// for the embedded subset, MNIST, their validation splits and AffNIST
// (made of MNIST test digits); otherwise the data set's own name
// ("fashion", "cifar10").
func Source(name string) string {
	name = strings.TrimSuffix(name, "-val")
	if s := Lookup(name); s != nil {
		return s.Source
	}
	return name
}

// EvalWarning returns a warning when a checkpoint trained on data set
// trained (its "data" metadata; "" for checkpoints that do not record it)
// is evaluated on evaluation set evalSet (a LoadTest name), or "" when
// that is what it was trained for.
func EvalWarning(trained, evalSet string) string {
	if trained == "" {
		return "the checkpoint does not record the data set it was trained on (an older checkpoint): its accuracy here may mean nothing"
	}
	if Source(trained) != Source(evalSet) {
		return fmt.Sprintf("the checkpoint was trained on %s, not on %s's images: its accuracy and statistics here describe another task", trained, evalSet)
	}
	return ""
}
