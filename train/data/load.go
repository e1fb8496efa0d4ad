package data

import "fmt"

// DataSets lists the names LoadNamed accepts.
var DataSets = []string{"embedded", "mnist", "fashion", "cifar10"}

// LoadNamed loads a training and a test set by name: "embedded" (the MNIST
// subset built into the binary: 6000 training and 1000 test digits),
// "mnist" and "fashion" (found by FindMNIST / FindFashionMNIST in dir or
// the data cache), "cifar10" (FindCIFAR10).
func LoadNamed(name, dir string) (trainSet, testSet *Dataset, err error) {
	switch name {
	case "embedded":
		return LoadEmbeddedMNIST()
	case "mnist":
		d, err := FindMNIST(dir)
		if err != nil {
			return nil, nil, err
		}
		return LoadMNIST(d)
	case "fashion":
		d, err := FindFashionMNIST(dir)
		if err != nil {
			return nil, nil, err
		}
		return LoadFashionMNIST(d)
	case "cifar10":
		d, err := FindCIFAR10(dir)
		if err != nil {
			return nil, nil, err
		}
		return LoadCIFAR10(d)
	}
	return nil, nil, fmt.Errorf("unknown data set %q (one of %v)", name, DataSets)
}

// TestSets lists the names LoadTest accepts: DataSets and the generated
// AffNIST of the MNIST or embedded test digits.
var TestSets = append(append([]string(nil), DataSets...), "affnist", "affnist-embedded")

// LoadTest loads the test split of a data set by name (see LoadNamed), or
// generates AffNIST (spec §6, seeded) from the MNIST ("affnist") or the
// embedded ("affnist-embedded") test digits.
func LoadTest(name, dir string, seed uint64) (*Dataset, error) {
	switch name {
	case "affnist", "affnist-embedded":
		src := "mnist"
		if name == "affnist-embedded" {
			src = "embedded"
		}
		_, test, err := LoadNamed(src, dir)
		if err != nil {
			return nil, err
		}
		return AffNIST(test, seed)
	}
	_, test, err := LoadNamed(name, dir)
	return test, err
}
