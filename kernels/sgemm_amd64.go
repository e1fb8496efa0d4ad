//go:build amd64 && !noasm

package kernels

import "github.com/capstan-ml/capstan/asm"

// Blocking for Zen 4 (32 KiB L1d, 1 MiB L2 per core), measured with
// BenchmarkSgemm: the kc×nr micro-panel of B stays in L1, the mc×kc block of
// A in L2.
var (
	sgemmAVX2   = newSgemmBlocked(asm.SgemmKernel6x16AVX2, 6, 16, 256, 192, 512)
	sgemmAVX512 = newSgemmBlocked(asm.SgemmKernel8x32AVX512, 8, 32, 256, 144, 512)
)

var (
	_ = registerSgemm("avx2", sgemmAVX2)
	_ = registerSgemm("avx512", sgemmAVX512)
)
