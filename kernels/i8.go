package kernels

import (
	"fmt"
	"math"

	"github.com/capstan-ml/capstan/asm"
)

// The int8 matrix product of quantized inference: C[m×n] int32 += A[m×k]
// int8 (activations, row-major) × Bᵀ, B the n×k int8 weights (row-major,
// one row per output), every sum exact (integer arithmetic, no
// saturation). The weights are packed once (PackI8) into the layout of the
// SIMD micro-kernels; GemmI8Packed then runs without allocating. The
// reference, gemmI8Ref, is the oracle of every implementation.

// PackedI8 is an n×k int8 weight matrix packed for GemmI8Packed: columns
// (outputs) in blocks of asm.I8BlockCols, k in groups of 4 consecutive
// values, zero-padded to whole blocks and groups (byte q of group g of
// column j of block bl at data[(bl·groups+g)·I8GroupBytes + 4·(j mod 32) + q]),
// and the column corrections corr[j] = −128·Σ_p B[j][p] of the +128 offset
// of A used by the VNNI kernels (zero for padding columns). A PackedI8 is
// read-only once packed and can be shared by goroutines.
type PackedI8 struct {
	n, k   int
	groups int // ⌈k/4⌉
	data   []int8
	corr   []int32
}

// N returns the number of columns (outputs, rows of the unpacked B).
func (p *PackedI8) N() int { return p.n }

// K returns the inner dimension.
func (p *PackedI8) K() int { return p.k }

// Bytes returns the size in bytes of the packed weights and corrections.
func (p *PackedI8) Bytes() int { return len(p.data) + 4*len(p.corr) }

// maxI8Dim bounds n and k of PackI8 and the products of GemmI8 so that
// every index and the packed size fit an int on 64-bit targets; on 32-bit
// ones a shape within it may still need more than an int can index, which
// i8Span and PackI8's size check refuse.
const maxI8Dim = 1 << 30

// i8Span is the number of elements a rows×cols matrix with row stride ld
// spans, (rows−1)·ld + cols, and whether that fits an int (rows, cols ≥ 1,
// ld ≥ 1): where int has 32 bits, dimensions of up to maxI8Dim can wrap.
func i8Span(rows, cols, ld int) (int, bool) {
	if rows-1 > (math.MaxInt-cols)/ld {
		return 0, false
	}
	return (rows-1)*ld + cols, true
}

// PackI8 packs the n×k int8 matrix b (row stride ldb ≥ k) for
// GemmI8Packed. It returns an error (never panics) when a dimension is
// negative or too large, the stride is too small or b too short.
func PackI8(n, k int, b []int8, ldb int) (*PackedI8, error) {
	if n < 0 || k < 0 || n > maxI8Dim || k > maxI8Dim {
		return nil, fmt.Errorf("kernels.PackI8: bad shape n=%d, k=%d", n, k)
	}
	if ldb < max(k, 1) || ldb > maxI8Dim {
		return nil, fmt.Errorf("kernels.PackI8: ldb=%d for k=%d", ldb, k)
	}
	if n > 0 && k > 0 {
		need, ok := i8Span(n, k, ldb)
		if !ok {
			return nil, fmt.Errorf("kernels.PackI8: b of %d rows with stride %d is larger than an int can index", n, ldb)
		}
		if len(b) < need {
			return nil, fmt.Errorf("kernels.PackI8: b has %d values, n=%d, k=%d, ldb=%d need %d", len(b), n, k, ldb, need)
		}
	}
	const bc = asm.I8BlockCols
	blocks := (n + bc - 1) / bc
	p := &PackedI8{n: n, k: k, groups: (k + 3) / 4}
	if p.groups > math.MaxInt/asm.I8GroupBytes || (p.groups > 0 && blocks > math.MaxInt/(p.groups*asm.I8GroupBytes)) {
		return nil, fmt.Errorf("kernels.PackI8: %d×%d weights pack into more bytes than an int can index", n, k)
	}
	p.data = make([]int8, blocks*p.groups*asm.I8GroupBytes)
	p.corr = make([]int32, blocks*bc)
	for j := range n {
		row := b[j*ldb : j*ldb+k]
		base := j / bc * p.groups * asm.I8GroupBytes
		var s int32
		for q, v := range row {
			p.data[base+q/4*asm.I8GroupBytes+4*(j%bc)+q%4] = v
			s += int32(v)
		}
		p.corr[j] = -128 * s
	}
	return p, nil
}

// gemmI8Check checks the operands of GemmI8 and GemmI8Packed.
func gemmI8Check(fn string, m, n, k int, a []int8, lda int, c []int32, ldc int) error {
	if m < 0 || n < 0 || k < 0 || m > maxI8Dim || n > maxI8Dim || k > maxI8Dim {
		return fmt.Errorf("kernels.%s: bad shape m=%d, n=%d, k=%d", fn, m, n, k)
	}
	if lda < max(k, 1) || lda > maxI8Dim {
		return fmt.Errorf("kernels.%s: lda=%d for k=%d", fn, lda, k)
	}
	if ldc < max(n, 1) || ldc > maxI8Dim {
		return fmt.Errorf("kernels.%s: ldc=%d for n=%d", fn, ldc, n)
	}
	if m == 0 || n == 0 {
		return nil
	}
	if k > 0 {
		need, ok := i8Span(m, k, lda)
		if !ok {
			return fmt.Errorf("kernels.%s: a of %d rows with stride %d is larger than an int can index", fn, m, lda)
		}
		if len(a) < need {
			return fmt.Errorf("kernels.%s: a has %d values, m=%d, k=%d, lda=%d need %d", fn, len(a), m, k, lda, need)
		}
	}
	need, ok := i8Span(m, n, ldc)
	if !ok {
		return fmt.Errorf("kernels.%s: c of %d rows with stride %d is larger than an int can index", fn, m, ldc)
	}
	if len(c) < need {
		return fmt.Errorf("kernels.%s: c has %d values, m=%d, n=%d, ldc=%d need %d", fn, len(c), m, n, ldc, need)
	}
	return nil
}

// GemmI8 adds to the m×n int32 matrix C the exact product of the m×k int8
// matrix A with the transpose of the n×k int8 matrix B (all row-major,
// strides lda, ldb, ldc). It is equivalent to
//
//	for i := 0; i < m; i++ {
//		for j := 0; j < n; j++ {
//			var s int32
//			for p := 0; p < k; p++ {
//				s += int32(a[i*lda+p]) * int32(b[j*ldb+p])
//			}
//			c[i*ldc+j] += s
//		}
//	}
//
// with wrapping int32 arithmetic (exact while k·128·128 + |C| < 2³¹, that
// is for k up to 131071 when C starts at 0). The reference runs that loop;
// the SIMD implementations pack B first (PackI8, which allocates): for
// weights used more than once, pack them once and call GemmI8Packed. It
// returns an error (never panics) for a negative dimension, a stride too
// small or a slice too short.
func GemmI8(m, n, k int, a []int8, lda int, b []int8, ldb int, c []int32, ldc int) error {
	if err := gemmI8Check("GemmI8", m, n, k, a, lda, c, ldc); err != nil {
		return err
	}
	if ldb < max(k, 1) || ldb > maxI8Dim {
		return fmt.Errorf("kernels.GemmI8: ldb=%d for k=%d", ldb, k)
	}
	if n > 0 && k > 0 {
		need, ok := i8Span(n, k, ldb)
		if !ok {
			return fmt.Errorf("kernels.GemmI8: b of %d rows with stride %d is larger than an int can index", n, ldb)
		}
		if len(b) < need {
			return fmt.Errorf("kernels.GemmI8: b has %d values, n=%d, k=%d, ldb=%d need %d", len(b), n, k, ldb, need)
		}
	}
	if m == 0 || n == 0 || k == 0 {
		return nil
	}
	if cur.i8Name == "ref" {
		gemmI8Ref(m, n, k, a, lda, b, ldb, c, ldc)
		return nil
	}
	p, err := PackI8(n, k, b, ldb)
	if err != nil {
		return err
	}
	cur.gemmI8(m, a, lda, p, c, ldc)
	return nil
}

// GemmI8Packed is GemmI8 with B packed by PackI8 (n = p.N(), k = p.K()):
// c[i*ldc+j] += Σ_p int32(a[i*lda+p])·int32(B[j][p]) for i < m, j < n. It
// does not allocate and returns an error (never panics) for a nil p, a
// negative m, a stride too small or a slice too short.
func GemmI8Packed(m int, a []int8, lda int, p *PackedI8, c []int32, ldc int) error {
	if p == nil {
		return fmt.Errorf("kernels.GemmI8Packed: nil packed weights")
	}
	if err := gemmI8Check("GemmI8Packed", m, p.n, p.k, a, lda, c, ldc); err != nil {
		return err
	}
	if m == 0 || p.n == 0 || p.k == 0 {
		return nil
	}
	cur.gemmI8(m, a, lda, p, c, ldc)
	return nil
}

// ImplI8 names the int8 GEMM path of the implementation in use: "ref",
// "avx2" (VPMADDUBSW/VPMADDWD), "avx512vnni" (VPDPBUSD), "neonsdot" (SDOT)
// or "neon" (SMULL/SADALP). The avx512 implementation uses avx512vnni when
// the CPU has AVX512-VNNI and avx2 otherwise; neon uses neonsdot when the
// CPU has the dot-product extension (ASIMDDP) and neon otherwise.
func ImplI8() string { return cur.i8Name }

// gemmI8Ref is the reference loop of GemmI8, arguments checked.
func gemmI8Ref(m, n, k int, a []int8, lda int, b []int8, ldb int, c []int32, ldc int) {
	for i := range m {
		ai := a[i*lda : i*lda+k]
		ci := c[i*ldc : i*ldc+n]
		for j := range ci {
			bj := b[j*ldb : j*ldb+k]
			var s int32
			for p, v := range ai {
				s += int32(v) * int32(bj[p])
			}
			ci[j] += s
		}
	}
}

// gemmI8PackedRef is the reference of ops.gemmI8: the same sums as
// gemmI8Ref, B read from its packed form.
func gemmI8PackedRef(m int, a []int8, lda int, p *PackedI8, c []int32, ldc int) {
	const bc = asm.I8BlockCols
	for i := range m {
		ai := a[i*lda : i*lda+p.k]
		for j := range p.n {
			blk := p.data[j/bc*p.groups*asm.I8GroupBytes:]
			col := 4 * (j % bc)
			var s int32
			for q, v := range ai {
				s += int32(v) * int32(blk[q/4*asm.I8GroupBytes+col+q%4])
			}
			c[i*ldc+j] += s
		}
	}
}

// i8Tail fills tail[r] (r < mr) with the k mod 4 last values of row r of
// the tile of A at a (stride lda), little-endian, missing bytes zero, and
// returns the tail slice for the kernels: empty when k is a multiple of 4.
func i8Tail(tail *[asm.I8RowsVNNI]uint32, mr, k int, a []int8, lda int) []uint32 {
	kt := k % 4
	if kt == 0 {
		return nil
	}
	k0 := k - kt
	for r := range mr {
		var w uint32
		for q := range kt {
			w |= uint32(uint8(a[r*lda+k0+q])) << (8 * q)
		}
		tail[r] = w
	}
	return tail[:mr]
}
