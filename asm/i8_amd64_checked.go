//go:build amd64 && !noasm

package asm

// GemmI8KernelVNNI adds to an mr×32 tile of C (1 ≤ mr ≤ I8RowsVNNI) the
// product of mr rows of A with one packed block b of 32 columns, with
// AVX512-VNNI (VPDPBUSD on the +128-offset A). A row i of A holds its
// first 4·kg values at a[i*lda:]; its k mod 4 last values, if any, are in
// tail[i] (byte q = value 4·kg+q, missing bytes 0), and tail is empty
// otherwise. corr holds the 32 column corrections, −128 times the sum of
// the bytes of each column over the groups read. It is equivalent to
//
//	for i := 0; i < mr; i++ {
//		for j := 0; j < 32; j++ {
//			s := corr[j]
//			for p := 0; p < 4*kg; p++ { // then 4 more from tail[i] if tail is not empty
//				s += int32(uint8(a[i*lda+p])^0x80) * int32(b[p/4*I8GroupBytes+4*j+p%4])
//			}
//			c[i*ldc+j] += s
//		}
//	}
//
// which is the exact int8 product when corr is as described. It panics
// with a BoundsError if a slice is too short or an argument out of range.
func GemmI8KernelVNNI(mr, kg int, a []int8, lda int, tail []uint32, b []int8, corr []int32, c []int32, ldc int) {
	if checkGemmI8Kernel("GemmI8KernelVNNI", I8RowsVNNI, 32, I8GroupBytes, 32, mr, kg, a, lda, tail, b, corr, c, ldc) {
		// A switch, not a table of funcs: calls through func values would
		// lose //go:noescape and move the caller's stack tiles to the heap.
		switch mr {
		case 1:
			gemmI8VNNI1(kg, a, lda, tail, b, corr, c, ldc)
		case 2:
			gemmI8VNNI2(kg, a, lda, tail, b, corr, c, ldc)
		case 3:
			gemmI8VNNI3(kg, a, lda, tail, b, corr, c, ldc)
		case 4:
			gemmI8VNNI4(kg, a, lda, tail, b, corr, c, ldc)
		case 5:
			gemmI8VNNI5(kg, a, lda, tail, b, corr, c, ldc)
		case 6:
			gemmI8VNNI6(kg, a, lda, tail, b, corr, c, ldc)
		case 7:
			gemmI8VNNI7(kg, a, lda, tail, b, corr, c, ldc)
		default:
			gemmI8VNNI8(kg, a, lda, tail, b, corr, c, ldc)
		}
	}
}

// GemmI8KernelAVX2 adds to an mr×16 tile of C (1 ≤ mr ≤ I8RowsAVX2) the
// exact int8 product of mr rows of A with the first 16 columns of the
// packed block b (pass b[64:] for the other 16), with AVX2
// (VPMADDUBSW/VPMADDWD on a split into its 7 low bits and its sign bit,
// so that no int16 sum saturates). A and tail are as for GemmI8KernelVNNI.
// It is equivalent to
//
//	for i := 0; i < mr; i++ {
//		for j := 0; j < 16; j++ {
//			var s int32
//			for p := 0; p < 4*kg; p++ { // then 4 more from tail[i] if tail is not empty
//				s += int32(a[i*lda+p]) * int32(b[p/4*I8GroupBytes+4*j+p%4])
//			}
//			c[i*ldc+j] += s
//		}
//	}
//
// It panics with a BoundsError if a slice is too short or an argument out
// of range.
func GemmI8KernelAVX2(mr, kg int, a []int8, lda int, tail []uint32, b []int8, c []int32, ldc int) {
	if checkGemmI8Kernel("GemmI8KernelAVX2", I8RowsAVX2, 16, I8GroupBytes/2, 0, mr, kg, a, lda, tail, b, nil, c, ldc) {
		switch mr {
		case 1:
			gemmI8AVX21(kg, a, lda, tail, b, nil, c, ldc)
		case 2:
			gemmI8AVX22(kg, a, lda, tail, b, nil, c, ldc)
		case 3:
			gemmI8AVX23(kg, a, lda, tail, b, nil, c, ldc)
		default:
			gemmI8AVX24(kg, a, lda, tail, b, nil, c, ldc)
		}
	}
}

// RequantRowsAVX512 requantizes, with AVX-512 (AVX512F; the caller checks
// the CPU), the first n columns of the rows×cols row-major q and acc, n =
// cols rounded down to a multiple of 16, and returns n. It never panics:
// it does nothing and returns 0 when a dimension is negative or beyond
// 2³¹, q or acc holds fewer than rows·cols values, or mul or add fewer
// than cols; the columns from n on are left to the caller. It is
// equivalent to
//
//	for r := 0; r < rows; r++ {
//		for c := 0; c < n; c++ {
//			v := float32(float32(acc[r*cols+c])*mul[c]) + add[c] // two roundings, no FMA
//			q[r*cols+c] = int8(roundToEven(clamp(v, lo, 127)))  // NaN gives 0
//		}
//	}
//
// for lo in [−127, 127], so that ±Inf (and any value beyond the int32
// range) gives 127 or lo as in Go.
func RequantRowsAVX512(rows, cols int, q []int8, acc []int32, mul, add []float32, lo float32) int {
	n := requantFits(rows, cols, q, acc, mul, add) &^ 15
	if n > 0 {
		requantRowsAVX512(rows, n, cols, q, acc, mul, add, lo)
	}
	return n
}

// RequantRowsAVX2 is RequantRowsAVX512 with AVX2, 8 values per step: n is
// cols rounded down to a multiple of 8.
func RequantRowsAVX2(rows, cols int, q []int8, acc []int32, mul, add []float32, lo float32) int {
	n := requantFits(rows, cols, q, acc, mul, add) &^ 7
	if n > 0 {
		requantRowsAVX2(rows, n, cols, q, acc, mul, add, lo)
	}
	return n
}
