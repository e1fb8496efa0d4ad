//go:build amd64 && !noasm

package kernels

import (
	"github.com/capstan-ml/capstan/asm"
	"github.com/klauspost/cpuid/v2"
)

// The int8 GEMM of avx2 (VPMADDUBSW/VPMADDWD) and of avx512: AVX512-VNNI
// VPDPBUSD when the CPU has it, else the avx2 path it inherits.
var (
	_ = register("avx2", func(o *ops) {
		o.i8Name = "avx2"
		o.gemmI8 = func(m int, a []int8, lda int, p *PackedI8, c []int32, ldc int) {
			gemmI8Tiles(i8AVX2, m, a, lda, p, c, ldc)
		}
	})
	_ = register("avx512", func(o *ops) {
		if !cpuid.CPU.Supports(cpuid.AVX512VNNI) {
			return
		}
		o.i8Name = "avx512vnni"
		o.gemmI8 = func(m int, a []int8, lda int, p *PackedI8, c []int32, ldc int) {
			gemmI8Tiles(i8VNNI, m, a, lda, p, c, ldc)
		}
	})
)

// i8Tile gives the tile of an int8 kernel kind: rows and columns.
func i8Tile(kind i8Kind) (mr, nr int) {
	if kind == i8VNNI {
		return asm.I8RowsVNNI, asm.I8BlockCols
	}
	return asm.I8RowsAVX2, asm.I8BlockCols / 2
}

// i8Kernel calls the micro-kernel of kind (a direct call, so that the
// driver's stack tiles do not escape).
func i8Kernel(kind i8Kind, mr, kg int, a []int8, lda int, tail []uint32, b []int8, corr []int32, c []int32, ldc int) {
	if kind == i8VNNI {
		asm.GemmI8KernelVNNI(mr, kg, a, lda, tail, b, corr, c, ldc)
		return
	}
	asm.GemmI8KernelAVX2(mr, kg, a, lda, tail, b, c, ldc)
}
