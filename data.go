// Package capstan is a Go engine for capsule networks (CapsNets). The
// engine lives in the subpackages (kernels, capsnet, train, …); this root
// package holds what is embedded in the binaries: EmbeddedMNIST.
package capstan

import (
	"embed"
	"io/fs"
)

//go:embed testdata/mnist/*.gz
var embeddedMNIST embed.FS

// EmbeddedMNIST is a small MNIST subset built into the binary, so tests,
// examples and smoke runs need no download: the first 6000 training and
// the first 1000 test digits of MNIST, as the four standard gzipped IDX
// files at the root of this file system (train-images-idx3-ubyte.gz,
// train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz,
// t10k-labels-idx1-ubyte.gz). LoadEmbeddedMNIST of package train/data
// loads it; the full dataset is fetched with ./build.sh data.
var EmbeddedMNIST fs.FS = embeddedMNISTRoot()

func embeddedMNISTRoot() fs.FS {
	// fs.Sub only fails on an invalid path, and this one is a constant.
	sub, err := fs.Sub(embeddedMNIST, "testdata/mnist")
	if err != nil {
		return embeddedMNIST
	}
	return sub
}
