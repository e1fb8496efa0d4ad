// Package train holds what training and evaluation need around the engine:
// the datasets (MNIST, Fashion-MNIST, CIFAR10, the generated AffNIST of
// spec §6), the canvas placement and affine transformations, a batch
// iterator, and where the data lives on disk.
package train
