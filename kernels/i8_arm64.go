//go:build arm64 && !noasm

package kernels

import (
	"github.com/capstan-ml/capstan/asm"
	"github.com/klauspost/cpuid/v2"
)

// The int8 GEMM of neon: SDOT when the CPU has the dot-product extension
// (ASIMDDP, e.g. Cortex-A76), SMULL/SADALP otherwise (Cortex-A72); and
// Requant in NEON assembly (the ref table and noasm builds keep
// requantRef).
var _ = register("neon", func(o *ops) {
	kind, name := i8SMULL, "neon"
	if cpuid.CPU.Supports(cpuid.ASIMDDP) {
		kind, name = i8SDOT, "neonsdot"
	}
	o.i8Name = name
	o.gemmI8 = func(m int, a []int8, lda int, p *PackedI8, c []int32, ldc int) {
		gemmI8Tiles(kind, m, a, lda, p, c, ldc)
	}
	o.requant = requantNEON
})

// requantNEON is ops.requant with asm.RequantRowsNEON (8 values per step,
// bit-identical to requantRef, all the rows in one call); the columns past
// the last multiple of 8 stay in Go.
func requantNEON(rows, cols int, q []int8, acc []int32, mul, add []float32, lo float32) {
	requantTail(rows, cols, asm.RequantRowsNEON(rows, cols, q, acc, mul, add, lo), q, acc, mul, add, lo)
}

// i8Tile gives the tile of an int8 kernel kind: rows and columns.
func i8Tile(kind i8Kind) (mr, nr int) {
	if kind == i8SDOT {
		return asm.I8RowsNEON, asm.I8BlockCols / 2
	}
	return asm.I8RowsNEON, asm.I8BlockCols / 4
}

// i8Kernel calls the micro-kernel of kind (a direct call, so that the
// driver's stack tiles do not escape).
func i8Kernel(kind i8Kind, mr, kg int, a []int8, lda int, tail []uint32, b []int8, _ []int32, c []int32, ldc int) {
	if kind == i8SDOT {
		asm.GemmI8KernelSDOT(mr, kg, a, lda, tail, b, c, ldc)
		return
	}
	asm.GemmI8KernelSMULL(mr, kg, a, lda, tail, b, c, ldc)
}
