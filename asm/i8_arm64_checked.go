//go:build arm64 && !noasm

package asm

// I8RowsNEON is the mr of the NEON int8 kernels (GemmI8KernelSDOT,
// GemmI8KernelSMULL): 1 ≤ mr ≤ 4.
const I8RowsNEON = 4

// i8NEONArgs turns the slice arguments of a NEON int8 kernel into the four
// row pointers of A and C its body takes: rows past mr read row 0 of A (or
// a dummy when A is not read) and add into a dummy row of C; tail is copied
// so that the body can load four words.
func i8NEONArgs(mr, kg int, a []int8, lda int, tail []uint32, c []int32, ldc int,
	dummyA *int8, tail4 *[4]uint32, dummyC *[16]int32) (ar [4]*int8, cr [4]*int32, tp *uint32, ntail int) {
	for i := range 4 {
		ar[i], cr[i] = dummyA, &dummyC[0]
		if i < mr {
			if kg > 0 {
				ar[i] = &a[i*lda]
			}
			cr[i] = &c[i*ldc]
		}
	}
	copy(tail4[:], tail)
	return ar, cr, &tail4[0], len(tail)
}

// gemmI8NEON calls the SDOT (sdot) or SMULL body on checked arguments.
func gemmI8NEON(sdot bool, mr, kg int, a []int8, lda int, tail []uint32, b []int8, c []int32, ldc int) {
	if kg == 0 && len(tail) == 0 {
		return // nothing to add
	}
	var dummyA int8
	var tail4 [4]uint32
	var dummyC [16]int32
	ar, cr, tp, nt := i8NEONArgs(mr, kg, a, lda, tail, c, ldc, &dummyA, &tail4, &dummyC)
	if sdot {
		gemmI8SDOTNEON(kg, ar[0], ar[1], ar[2], ar[3], tp, nt, &b[0], cr[0], cr[1], cr[2], cr[3])
		return
	}
	gemmI8SMULLNEON(kg, ar[0], ar[1], ar[2], ar[3], tp, nt, &b[0], cr[0], cr[1], cr[2], cr[3])
}

// GemmI8KernelSDOT adds to an mr×16 tile of C (1 ≤ mr ≤ I8RowsNEON) the
// exact int8 product of mr rows of A with the first 16 columns of the
// packed block b (pass b[64:] for the other 16), with the SDOT instruction
// of the Armv8.2 dot-product extension. A, tail and the result are as for
// GemmI8KernelAVX2 (amd64):
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
func GemmI8KernelSDOT(mr, kg int, a []int8, lda int, tail []uint32, b []int8, c []int32, ldc int) {
	if checkGemmI8Kernel("GemmI8KernelSDOT", I8RowsNEON, 16, I8GroupBytes/2, 0, mr, kg, a, lda, tail, b, nil, c, ldc) {
		gemmI8NEON(true, mr, kg, a, lda, tail, b, c, ldc)
	}
}

// GemmI8KernelSMULL is GemmI8KernelSDOT for an mr×8 tile (the first 8
// columns of b: pass b[32:], b[64:], b[96:] for the others) with baseline
// NEON (SMULL/SMULL2 into int16, SADALP into int32), for cores without the
// dot-product extension (Cortex-A72). The same loop with j < 8.
func GemmI8KernelSMULL(mr, kg int, a []int8, lda int, tail []uint32, b []int8, c []int32, ldc int) {
	if checkGemmI8Kernel("GemmI8KernelSMULL", I8RowsNEON, 8, I8GroupBytes/4, 0, mr, kg, a, lda, tail, b, nil, c, ldc) {
		gemmI8NEON(false, mr, kg, a, lda, tail, b, c, ldc)
	}
}

// RequantRowsNEON is RequantRowsAVX512 (amd64) with NEON, 8 values per
// step: it requantizes the first n columns of the rows×cols row-major q
// and acc, n = cols rounded down to a multiple of 8, and returns n. It
// never panics: it does nothing and returns 0 when a dimension is
// negative or beyond 2³¹, q or acc holds fewer than rows·cols values, or
// mul or add fewer than cols; the columns from n on are left to the
// caller. It is equivalent to
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
func RequantRowsNEON(rows, cols int, q []int8, acc []int32, mul, add []float32, lo float32) int {
	n := requantFits(rows, cols, q, acc, mul, add) &^ 7
	if n > 0 {
		requantRowsNEON(rows, n, cols, q, acc, mul, add, lo)
	}
	return n
}
