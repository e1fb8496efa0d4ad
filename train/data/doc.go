// Package data holds the data sets and their preparation for training and
// evaluation: the IDX format (MNIST, Fashion-MNIST) and the embedded MNIST
// subset (LoadEmbeddedMNIST, from capstan.EmbeddedMNIST), CIFAR10's binary
// format, the data cache directory and the Find*/Load*/LoadNamed look-up,
// the canvas placement (centred, random, shifted), affine maps and the
// generated AffNIST of spec §6 with the viewpoint families (transform.go),
// and the Batcher that turns a Dataset into reproducible batches
// (batch.go).
package data
