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
			gemmI8Tiles(false, m, a, lda, p, c, ldc)
		}
	})
	_ = register("avx512", func(o *ops) {
		if !cpuid.CPU.Supports(cpuid.AVX512VNNI) {
			return
		}
		o.i8Name = "avx512vnni"
		o.gemmI8 = func(m int, a []int8, lda int, p *PackedI8, c []int32, ldc int) {
			gemmI8Tiles(true, m, a, lda, p, c, ldc)
		}
	})
)

// gemmI8Tiles is the driver of the SIMD int8 kernels: for every tile of
// mr ≤ maxMR rows of A and nr columns (blocks of 32, halves for nr = 16),
// kernel adds the tile's product to C, or to a zeroed stack tile that is
// then added to the first columns of C when the tile passes the last
// column. Rows outermost: a tile of A stays in L1 while the packed B
// streams from L2.
func gemmI8Tiles(vnni bool, m int, a []int8, lda int, p *PackedI8, c []int32, ldc int) {
	const bc = asm.I8BlockCols
	maxMR, nr := asm.I8RowsAVX2, bc/2
	if vnni {
		maxMR, nr = asm.I8RowsVNNI, bc
	}
	kernel := func(mr, kg int, a []int8, lda int, tail []uint32, b []int8, corr []int32, c []int32, ldc int) {
		if vnni {
			asm.GemmI8KernelVNNI(mr, kg, a, lda, tail, b, corr, c, ldc)
		} else {
			asm.GemmI8KernelAVX2(mr, kg, a, lda, tail, b, c, ldc)
		}
	}
	kg := p.k / 4
	blockBytes := p.groups * asm.I8GroupBytes
	var tailBuf [asm.I8RowsVNNI]uint32
	var tile [asm.I8RowsVNNI * bc]int32
	for i0 := 0; i0 < m; i0 += maxMR {
		mr := min(maxMR, m-i0)
		ai := a[i0*lda:]
		tail := i8Tail(&tailBuf, mr, p.k, ai, lda)
		for j0 := 0; j0 < p.n; j0 += nr {
			blk := j0 / bc
			b := p.data[blk*blockBytes+4*(j0%bc) : (blk+1)*blockBytes]
			corr := p.corr[j0:]
			if cols := p.n - j0; cols < nr {
				t := tile[:mr*nr]
				clear(t)
				kernel(mr, kg, ai, lda, tail, b, corr, t, nr)
				for r := range mr {
					cr := c[(i0+r)*ldc+j0 : (i0+r)*ldc+p.n]
					for j := range cr {
						cr[j] += t[r*nr+j]
					}
				}
				continue
			}
			kernel(mr, kg, ai, lda, tail, b, corr, c[i0*ldc+j0:], ldc)
		}
	}
}
