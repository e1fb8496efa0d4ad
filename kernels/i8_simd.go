//go:build (amd64 || arm64) && !noasm

package kernels

import "github.com/capstan-ml/capstan/asm"

// i8Kind names an int8 micro-kernel family.
type i8Kind int

const (
	i8AVX2  i8Kind = iota // amd64 VPMADDUBSW/VPMADDWD, 4×16
	i8VNNI                // amd64 AVX512-VNNI VPDPBUSD, 8×32
	i8SDOT                // arm64 dot-product SDOT, 4×16
	i8SMULL               // arm64 SMULL/SADALP, 4×8
)

// gemmI8Tiles is the driver of the SIMD int8 kernels: for every tile of
// mr ≤ maxMR rows of A and nr columns (blocks of 32, halves for nr = 16),
// kernel adds the tile's product to C, or to a zeroed stack tile that is
// then added to the first columns of C when the tile passes the last
// column. Rows outermost: a tile of A stays in L1 while the packed B
// streams from L2.
func gemmI8Tiles(kind i8Kind, m int, a []int8, lda int, p *PackedI8, c []int32, ldc int) {
	const bc = asm.I8BlockCols
	maxMR, nr := i8Tile(kind)
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
				i8Kernel(kind, mr, kg, ai, lda, tail, b, corr, t, nr)
				for r := range mr {
					cr := c[(i0+r)*ldc+j0 : (i0+r)*ldc+p.n]
					for j := range cr {
						cr[j] += t[r*nr+j]
					}
				}
				continue
			}
			i8Kernel(kind, mr, kg, ai, lda, tail, b, corr, c[i0*ldc+j0:], ldc)
		}
	}
}
