//go:build arm64 && !noasm

package kernels

import "github.com/capstan-ml/capstan/asm"

// sgemmNEON blocks for a typical 64 KiB L1d / 1 MiB L2 arm64 core: the
// kc×12 micro-panel of B (12 KiB) stays in L1, the mc×kc block of A in L2.
var sgemmNEON = newSgemmBlocked(asm.SgemmKernel8x12NEON, 8, 12, 256, 128, 1020)

var _ = registerSgemm("neon", sgemmNEON)
