// Package kernels holds Capstan's numerical kernels: SGEMM, the 2-D
// convolution and its gradients, the capsule votes and routing by agreement
// with their gradients, and the small kernels of a CapsNet (squash, margin
// and reconstruction losses, masking, softmax, activations, bias, Adam).
//
// The kernels are Go code over a table of primitives (GEMV, rank-1 and
// grouped updates, column softmax, squash, the SGEMM micro-kernels) with one
// implementation per instruction set: the pure-Go reference "ref", and
// "avx2", "avx512" and "neon", whose primitives are the Plan 9 assembly of
// package asm. The best implementation for the CPU is chosen once at
// start-up; CAPSTAN_KERNELS (EnvVar) or Use forces another, Impl and
// Available report them, and the build tag noasm leaves only the reference.
//
// Every kernel runs on the calling goroutine, does not allocate, and
// returns an error (never panics) on a bad shape or a slice of the wrong
// length. Capsule tensors are stored component-major; the converters
// (VotesWeightsFromTorch, CapsFromTorch, PriorFromTorch and their inverses)
// map them to and from PyTorch's layouts. docs/kernels.md describes the
// layouts, algorithms, dispatch and tests.
package kernels
