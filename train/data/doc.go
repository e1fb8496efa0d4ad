// Package data holds the data sets and their preparation for training and
// evaluation: the data-set table (Sets, Lookup: every data set's name,
// files and checksums, image counts, canvas, validation split, default
// plan and source, which loading, the tools' flags, tools/data and the
// sweep's estimates read), the IDX format (MNIST, Fashion-MNIST) and the embedded MNIST
// subset (LoadEmbeddedMNIST, from capstan.EmbeddedMNIST), CIFAR10's binary
// format, the data cache directory and the Find*/Load*/LoadNamed look-up,
// the canvas placement (centred, random, shifted), affine maps and the
// generated AffNIST of docs/semantics.md §6 with the viewpoint families (transform.go),
// the Batcher that turns a Dataset into reproducible batches (batch.go),
// and PNG input (ReadPNG, ReadPNGInput: the size checked from the header
// before the pixels are allocated).
package data
