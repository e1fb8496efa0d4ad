//go:build amd64 && !noasm

package kernels

import (
	"github.com/capstan-ml/capstan/asm"
	"github.com/klauspost/cpuid/v2"
)

// sgemmArchTiles lists the generated amd64 micro-kernels (asm.SgemmTilesAMD64).
func sgemmArchTiles() []sgemmTile {
	ts := make([]sgemmTile, len(asm.SgemmTilesAMD64))
	for i, t := range asm.SgemmTilesAMD64 {
		ts[i] = sgemmTile{name: t.Name, isa: t.ISA, mr: t.MR, nr: t.NR, micro: t.Kernel, direct: t.Direct, directA: t.DirectA}
	}
	return ts
}

// The sgemm of avx2 and avx512 is the blocked driver around the tile and
// blocking that sgemmCPUTable (sgemm_tiles.go) picks for this CPU, or that
// CAPSTAN_SGEMM_TILE forces.
var (
	_ = registerSgemmTile("avx2")
	_ = registerSgemmTile("avx512")
)

func init() {
	if cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2) {
		sgemmPackA8 = asm.SgemmPackA8AVX2
	}
}
