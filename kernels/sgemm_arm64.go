//go:build arm64 && !noasm

package kernels

import "github.com/capstan-ml/capstan/asm"

// sgemmNEON blocks for a typical 64 KiB L1d / 1 MiB L2 arm64 core: the
// kc×12 micro-panel of B (12 KiB) stays in L1, the mc×kc block of A in L2.
// package asm also generates 8×8 and 12×8 tiles from the same template
// (asm.BenchmarkSgemmKernelsNEON compares them); 8×12 stays the default
// until another tile is measured faster on arm64 hardware.
var sgemmNEON = newSgemmBlocked(asm.SgemmKernel8x12NEON, 8, 12, 256, 128, 1020)

var _ = registerSgemm("neon", sgemmNEON)
