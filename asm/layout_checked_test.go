//go:build amd64 && !noasm

package asm

import (
	"math/rand"
	"testing"

	"github.com/klauspost/cpuid/v2"
)

// TestLayoutWrappersCheck: the CompactAct, DeinterleaveRows and
// Transpose16 wrappers run on exact lengths (and do the work: every value
// checked), panic with a BoundsError naming the operand when one value is
// missing or an argument is negative, and return quietly on an empty
// shape with nil operands.
func TestLayoutWrappersCheck(t *testing.T) {
	if !cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2, cpuid.FMA3) {
		t.Skip("no AVX2")
	}
	type compact func(ch, rows, n int, y, src []float32, lds, ldc int, bias []float32, relu int)
	ks := map[string]compact{"AVX2": CompactActAVX2}
	avx512 := cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512DQ, cpuid.AVX512BW, cpuid.AVX512VL)
	if avx512 {
		ks["AVX512"] = CompactActAVX512
	}
	for name, k := range ks {
		const ch, rows, n, lds, ldc = 2, 3, 19, 21, 70
		src := mk((ch-1)*ldc + (rows-1)*lds + n)
		for i := range src {
			src[i] = float32(i%9) - 4
		}
		y := mk(ch * rows * n)
		k(ch, rows, n, y, src, lds, ldc, []float32{1, -2}, 1)
		for o := 0; o < ch; o++ {
			for r := 0; r < rows; r++ {
				for c := 0; c < n; c++ {
					if want := max(src[o*ldc+r*lds+c]+[]float32{1, -2}[o], 0); y[(o*rows+r)*n+c] != want {
						t.Fatalf("CompactAct%s: y[%d,%d,%d] = %v, want %v", name, o, r, c, y[(o*rows+r)*n+c], want)
					}
				}
			}
		}
		mustPanic(t, "CompactAct"+name, "y", func() { k(ch, rows, n, mk(ch*rows*n-1), src, lds, ldc, mk(ch), 0) })
		mustPanic(t, "CompactAct"+name, "src", func() { k(ch, rows, n, y, src[1:], lds, ldc, mk(ch), 0) })
		mustPanic(t, "CompactAct"+name, "bias", func() { k(ch, rows, n, y, src, lds, ldc, mk(ch-1), 0) })
		mustPanic(t, "CompactAct"+name+" negative ldc", "stride", func() { k(ch, rows, n, y, src, lds, -1, mk(ch), 0) })
		mustPanic(t, "CompactAct"+name+" negative rows", "dimension", func() { k(ch, -1, n, y, src, lds, ldc, mk(ch), 0) })
		k(0, rows, n, nil, nil, lds, ldc, nil, 1)
		k(ch, rows, 0, nil, nil, lds, ldc, nil, 1)
	}
	if !avx512 {
		return
	}
	const rows, n, lds, ldd = 3, 37, 40, 20
	src := mk((rows-1)*lds + n)
	for i := range src {
		src[i] = float32(i)
	}
	d0, d1 := mk((rows-1)*ldd+(n+1)/2), mk((rows-1)*ldd+(n+1)/2)
	DeinterleaveRowsAVX512(rows, n, src, lds, d0, d1, ldd)
	for r := 0; r < rows; r++ {
		for j := 0; j < (n+1)/2; j++ {
			w1 := float32(0)
			if 2*j+1 < n {
				w1 = src[r*lds+2*j+1]
			}
			if d0[r*ldd+j] != src[r*lds+2*j] || d1[r*ldd+j] != w1 {
				t.Fatalf("DeinterleaveRowsAVX512: row %d slot %d: %v, %v; want %v, %v", r, j, d0[r*ldd+j], d1[r*ldd+j], src[r*lds+2*j], w1)
			}
		}
	}
	mustPanic(t, "DeinterleaveRowsAVX512", "src", func() { DeinterleaveRowsAVX512(rows, n, src[1:], lds, d0, d1, ldd) })
	mustPanic(t, "DeinterleaveRowsAVX512", "d0", func() { DeinterleaveRowsAVX512(rows, n, src, lds, d0[1:], d1, ldd) })
	mustPanic(t, "DeinterleaveRowsAVX512", "d1", func() { DeinterleaveRowsAVX512(rows, n, src, lds, d0, d1[1:], ldd) })
	mustPanic(t, "DeinterleaveRowsAVX512 negative ldd", "stride", func() { DeinterleaveRowsAVX512(rows, n, src, lds, d0, d1, -1) })
	DeinterleaveRowsAVX512(0, n, nil, lds, nil, nil, ldd)

	const trows, tn, tlds, srow, tldd, drow = 2, 21, 50, 23, 32, 700
	tsrc := mk(15*tlds + (trows-1)*srow + tn)
	for i := range tsrc {
		tsrc[i] = float32(i)
	}
	dst := mk((trows-1)*drow + (tn-1)*tldd + 16)
	Transpose16AVX512(trows, tn, tsrc, tlds, srow, dst, tldd, drow)
	for r := 0; r < trows; r++ {
		for p := 0; p < tn; p++ {
			for j := 0; j < 16; j++ {
				if got, want := dst[r*drow+p*tldd+j], tsrc[j*tlds+r*srow+p]; got != want {
					t.Fatalf("Transpose16AVX512: [%d,%d,%d] = %v, want %v", r, p, j, got, want)
				}
			}
		}
	}
	mustPanic(t, "Transpose16AVX512", "src", func() { Transpose16AVX512(trows, tn, tsrc[1:], tlds, srow, dst, tldd, drow) })
	mustPanic(t, "Transpose16AVX512", "dst", func() { Transpose16AVX512(trows, tn, tsrc, tlds, srow, dst[1:], tldd, drow) })
	mustPanic(t, "Transpose16AVX512 negative srow", "stride", func() { Transpose16AVX512(trows, tn, tsrc, tlds, -1, dst, tldd, drow) })
	Transpose16AVX512(trows, 0, nil, tlds, srow, nil, tldd, drow)
}

// TestLayoutFastPaths: fastCompactAct, fastDeinterleaveRows and
// fastTranspose16 accept only what their checks accept, and accept the
// exact lengths of ordinary shapes.
func TestLayoutFastPaths(t *testing.T) {
	rng := rand.New(rand.NewSource(27))
	dim, buf := fastRand(rng)
	var accepted int
	for it := 0; it < 20000; it++ {
		ch, rows, n, s1, s2, s3, s4 := dim(), dim(), dim(), dim(), dim(), dim(), dim()
		if rng.Intn(2) == 0 {
			s1 += n
			s2 += rows * s1
		}
		y, src, bias := buf(ch*rows*n), buf((ch-1)*s2+(rows-1)*s1+n), buf(ch)
		d0, d1 := buf((rows-1)*s2+(n+1)/2), buf((rows-1)*s2+(n+1)/2)
		tsrc, dst := buf(15*s1+(rows-1)*s2+n), buf((rows-1)*s4+(n-1)*s3+16)
		for _, p := range []struct {
			fast, check func() bool
		}{
			{func() bool { return fastCompactAct(ch, rows, n, y, src, s1, s2, bias) },
				func() bool { return checkCompactAct("k", ch, rows, n, y, src, s1, s2, bias) }},
			{func() bool { return fastDeinterleaveRows(rows, n, src, s1, d0, d1, s2) },
				func() bool { return checkDeinterleaveRows("k", rows, n, src, s1, d0, d1, s2) }},
			{func() bool { return fastTranspose16(rows, n, tsrc, s1, s2, dst, s3, s4) },
				func() bool { return checkTranspose16("k", rows, n, tsrc, s1, s2, dst, s3, s4) }},
		} {
			if p.fast() {
				accepted++
				if !noPanicTrue(p.check) {
					t.Fatalf("fast path accepts ch=%d rows=%d n=%d strides %d %d %d %d, the check does not", ch, rows, n, s1, s2, s3, s4)
				}
			}
		}
	}
	if accepted < 1000 {
		t.Errorf("fast paths accepted only %d cases", accepted)
	}
	if !fastCompactAct(2, 3, 5, mk(30), mk(20+2*7+5), 7, 20, mk(2)) || !fastDeinterleaveRows(3, 5, mk(2*7+5), 7, mk(2*4+3), mk(2*4+3), 4) ||
		!fastTranspose16(2, 5, mk(15*20+9+5), 20, 9, mk(100+4*16+16), 16, 100) {
		t.Error("fast paths reject exact lengths")
	}
}
