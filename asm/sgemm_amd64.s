//go:build amd64 && !noasm

// SGEMM micro-kernels for amd64: AVX2+FMA and AVX-512F. The kernels are
// fully unrolled over the register tile, so they are regular and long: every
// k step loads one row of packed B and multiplies it by each packed A value.
//
// Each kernel computes one mr×nr tile of C from packed panels:
//
//	for i := 0; i < mr; i++ {
//		for j := 0; j < nr; j++ {
//			var s float32
//			for p := 0; p < kc; p++ {
//				s += a[p*mr+i] * b[p*nr+j]
//			}
//			if beta == 0 {
//				c[i*ldc+j] = alpha * s // c not read
//			} else {
//				c[i*ldc+j] = alpha*s + beta*c[i*ldc+j]
//			}
//		}
//	}
//
// The accumulators live in registers for the whole k loop (unrolled by 4).

#include "textflag.h"

// func SgemmKernel6x16AVX2(kc int, a, b, c []float32, ldc int, alpha, beta float32)
TEXT ·SgemmKernel6x16AVX2(SB), NOSPLIT, $0-96
	MOVQ kc+0(FP), CX           // CX = kc
	MOVQ a_base+8(FP), AX       // AX = &a[0], packed A: a[p*6+i]
	MOVQ b_base+32(FP), BX      // BX = &b[0], packed B: b[p*16+j]
	MOVQ c_base+56(FP), DI      // DI = &c[0]
	MOVQ ldc+80(FP), DX         // DX = ldc
	SHLQ $2, DX                 // DX = ldc in bytes
	VXORPS Y0, Y0, Y0          // acc[0][0:8] = 0
	VXORPS Y1, Y1, Y1          // acc[0][8:16] = 0
	VXORPS Y2, Y2, Y2          // acc[1][0:8] = 0
	VXORPS Y3, Y3, Y3          // acc[1][8:16] = 0
	VXORPS Y4, Y4, Y4          // acc[2][0:8] = 0
	VXORPS Y5, Y5, Y5          // acc[2][8:16] = 0
	VXORPS Y6, Y6, Y6          // acc[3][0:8] = 0
	VXORPS Y7, Y7, Y7          // acc[3][8:16] = 0
	VXORPS Y8, Y8, Y8          // acc[4][0:8] = 0
	VXORPS Y9, Y9, Y9          // acc[4][8:16] = 0
	VXORPS Y10, Y10, Y10          // acc[5][0:8] = 0
	VXORPS Y11, Y11, Y11          // acc[5][8:16] = 0
	MOVQ DI, R8                 // R8 = &c[0]
	PREFETCHT0 (R8)             // prefetch c[0*ldc:]
	ADDQ DX, R8                 // next row of c
	PREFETCHT0 (R8)             // prefetch c[1*ldc:]
	ADDQ DX, R8                 // next row of c
	PREFETCHT0 (R8)             // prefetch c[2*ldc:]
	ADDQ DX, R8                 // next row of c
	PREFETCHT0 (R8)             // prefetch c[3*ldc:]
	ADDQ DX, R8                 // next row of c
	PREFETCHT0 (R8)             // prefetch c[4*ldc:]
	ADDQ DX, R8                 // next row of c
	PREFETCHT0 (R8)             // prefetch c[5*ldc:]
	ADDQ DX, R8                 // next row of c
	MOVQ CX, R9                 // R9 = kc
	SHRQ $2, R9                 // R9 = kc / 4
	JZ   tail
loop:
	VMOVUPS 0(BX), Y12       // b[p+0][0:8]
	VMOVUPS 32(BX), Y13       // b[p+0][8:16]
	VBROADCASTSS 0(AX), Y14        // a[p+0][0] in every lane
	VFMADD231PS Y12, Y14, Y0     // acc[0][0:] += a·b
	VFMADD231PS Y13, Y14, Y1     // acc[0][8:] += a·b
	VBROADCASTSS 4(AX), Y15        // a[p+0][1] in every lane
	VFMADD231PS Y12, Y15, Y2     // acc[1][0:] += a·b
	VFMADD231PS Y13, Y15, Y3     // acc[1][8:] += a·b
	VBROADCASTSS 8(AX), Y14        // a[p+0][2] in every lane
	VFMADD231PS Y12, Y14, Y4     // acc[2][0:] += a·b
	VFMADD231PS Y13, Y14, Y5     // acc[2][8:] += a·b
	VBROADCASTSS 12(AX), Y15        // a[p+0][3] in every lane
	VFMADD231PS Y12, Y15, Y6     // acc[3][0:] += a·b
	VFMADD231PS Y13, Y15, Y7     // acc[3][8:] += a·b
	VBROADCASTSS 16(AX), Y14        // a[p+0][4] in every lane
	VFMADD231PS Y12, Y14, Y8     // acc[4][0:] += a·b
	VFMADD231PS Y13, Y14, Y9     // acc[4][8:] += a·b
	VBROADCASTSS 20(AX), Y15        // a[p+0][5] in every lane
	VFMADD231PS Y12, Y15, Y10     // acc[5][0:] += a·b
	VFMADD231PS Y13, Y15, Y11     // acc[5][8:] += a·b
	VMOVUPS 64(BX), Y12       // b[p+1][0:8]
	VMOVUPS 96(BX), Y13       // b[p+1][8:16]
	VBROADCASTSS 24(AX), Y14        // a[p+1][0] in every lane
	VFMADD231PS Y12, Y14, Y0     // acc[0][0:] += a·b
	VFMADD231PS Y13, Y14, Y1     // acc[0][8:] += a·b
	VBROADCASTSS 28(AX), Y15        // a[p+1][1] in every lane
	VFMADD231PS Y12, Y15, Y2     // acc[1][0:] += a·b
	VFMADD231PS Y13, Y15, Y3     // acc[1][8:] += a·b
	VBROADCASTSS 32(AX), Y14        // a[p+1][2] in every lane
	VFMADD231PS Y12, Y14, Y4     // acc[2][0:] += a·b
	VFMADD231PS Y13, Y14, Y5     // acc[2][8:] += a·b
	VBROADCASTSS 36(AX), Y15        // a[p+1][3] in every lane
	VFMADD231PS Y12, Y15, Y6     // acc[3][0:] += a·b
	VFMADD231PS Y13, Y15, Y7     // acc[3][8:] += a·b
	VBROADCASTSS 40(AX), Y14        // a[p+1][4] in every lane
	VFMADD231PS Y12, Y14, Y8     // acc[4][0:] += a·b
	VFMADD231PS Y13, Y14, Y9     // acc[4][8:] += a·b
	VBROADCASTSS 44(AX), Y15        // a[p+1][5] in every lane
	VFMADD231PS Y12, Y15, Y10     // acc[5][0:] += a·b
	VFMADD231PS Y13, Y15, Y11     // acc[5][8:] += a·b
	VMOVUPS 128(BX), Y12       // b[p+2][0:8]
	VMOVUPS 160(BX), Y13       // b[p+2][8:16]
	VBROADCASTSS 48(AX), Y14        // a[p+2][0] in every lane
	VFMADD231PS Y12, Y14, Y0     // acc[0][0:] += a·b
	VFMADD231PS Y13, Y14, Y1     // acc[0][8:] += a·b
	VBROADCASTSS 52(AX), Y15        // a[p+2][1] in every lane
	VFMADD231PS Y12, Y15, Y2     // acc[1][0:] += a·b
	VFMADD231PS Y13, Y15, Y3     // acc[1][8:] += a·b
	VBROADCASTSS 56(AX), Y14        // a[p+2][2] in every lane
	VFMADD231PS Y12, Y14, Y4     // acc[2][0:] += a·b
	VFMADD231PS Y13, Y14, Y5     // acc[2][8:] += a·b
	VBROADCASTSS 60(AX), Y15        // a[p+2][3] in every lane
	VFMADD231PS Y12, Y15, Y6     // acc[3][0:] += a·b
	VFMADD231PS Y13, Y15, Y7     // acc[3][8:] += a·b
	VBROADCASTSS 64(AX), Y14        // a[p+2][4] in every lane
	VFMADD231PS Y12, Y14, Y8     // acc[4][0:] += a·b
	VFMADD231PS Y13, Y14, Y9     // acc[4][8:] += a·b
	VBROADCASTSS 68(AX), Y15        // a[p+2][5] in every lane
	VFMADD231PS Y12, Y15, Y10     // acc[5][0:] += a·b
	VFMADD231PS Y13, Y15, Y11     // acc[5][8:] += a·b
	VMOVUPS 192(BX), Y12       // b[p+3][0:8]
	VMOVUPS 224(BX), Y13       // b[p+3][8:16]
	VBROADCASTSS 72(AX), Y14        // a[p+3][0] in every lane
	VFMADD231PS Y12, Y14, Y0     // acc[0][0:] += a·b
	VFMADD231PS Y13, Y14, Y1     // acc[0][8:] += a·b
	VBROADCASTSS 76(AX), Y15        // a[p+3][1] in every lane
	VFMADD231PS Y12, Y15, Y2     // acc[1][0:] += a·b
	VFMADD231PS Y13, Y15, Y3     // acc[1][8:] += a·b
	VBROADCASTSS 80(AX), Y14        // a[p+3][2] in every lane
	VFMADD231PS Y12, Y14, Y4     // acc[2][0:] += a·b
	VFMADD231PS Y13, Y14, Y5     // acc[2][8:] += a·b
	VBROADCASTSS 84(AX), Y15        // a[p+3][3] in every lane
	VFMADD231PS Y12, Y15, Y6     // acc[3][0:] += a·b
	VFMADD231PS Y13, Y15, Y7     // acc[3][8:] += a·b
	VBROADCASTSS 88(AX), Y14        // a[p+3][4] in every lane
	VFMADD231PS Y12, Y14, Y8     // acc[4][0:] += a·b
	VFMADD231PS Y13, Y14, Y9     // acc[4][8:] += a·b
	VBROADCASTSS 92(AX), Y15        // a[p+3][5] in every lane
	VFMADD231PS Y12, Y15, Y10     // acc[5][0:] += a·b
	VFMADD231PS Y13, Y15, Y11     // acc[5][8:] += a·b
	ADDQ $96, AX                 // a += 4·6
	ADDQ $256, BX                 // b += 4·16
	DECQ R9
	JNZ  loop
tail:
	ANDQ $3, CX                 // CX = kc % 4
	JZ   store
tailloop:
	VMOVUPS 0(BX), Y12       // b[p+0][0:8]
	VMOVUPS 32(BX), Y13       // b[p+0][8:16]
	VBROADCASTSS 0(AX), Y14        // a[p+0][0] in every lane
	VFMADD231PS Y12, Y14, Y0     // acc[0][0:] += a·b
	VFMADD231PS Y13, Y14, Y1     // acc[0][8:] += a·b
	VBROADCASTSS 4(AX), Y15        // a[p+0][1] in every lane
	VFMADD231PS Y12, Y15, Y2     // acc[1][0:] += a·b
	VFMADD231PS Y13, Y15, Y3     // acc[1][8:] += a·b
	VBROADCASTSS 8(AX), Y14        // a[p+0][2] in every lane
	VFMADD231PS Y12, Y14, Y4     // acc[2][0:] += a·b
	VFMADD231PS Y13, Y14, Y5     // acc[2][8:] += a·b
	VBROADCASTSS 12(AX), Y15        // a[p+0][3] in every lane
	VFMADD231PS Y12, Y15, Y6     // acc[3][0:] += a·b
	VFMADD231PS Y13, Y15, Y7     // acc[3][8:] += a·b
	VBROADCASTSS 16(AX), Y14        // a[p+0][4] in every lane
	VFMADD231PS Y12, Y14, Y8     // acc[4][0:] += a·b
	VFMADD231PS Y13, Y14, Y9     // acc[4][8:] += a·b
	VBROADCASTSS 20(AX), Y15        // a[p+0][5] in every lane
	VFMADD231PS Y12, Y15, Y10     // acc[5][0:] += a·b
	VFMADD231PS Y13, Y15, Y11     // acc[5][8:] += a·b
	ADDQ $24, AX                 // a += 6
	ADDQ $64, BX                 // b += 16
	DECQ CX
	JNZ  tailloop
store:
	VBROADCASTSS alpha+88(FP), Y14   // alpha in every lane
	VBROADCASTSS beta+92(FP), Y15     // beta in every lane
	MOVL beta+92(FP), R10       // R10 = bits of beta
	SHLL $1, R10                // drop the sign: zero iff beta == ±0
	JNZ  storebeta
	MOVQ DI, R8                 // beta == 0: C = alpha·acc, C never read
	VMULPS Y14, Y0, Y0      // acc[0][0:] *= alpha
	VMOVUPS Y0, 0(R8)       // c[0*ldc+0:] = acc
	VMULPS Y14, Y1, Y1      // acc[0][8:] *= alpha
	VMOVUPS Y1, 32(R8)       // c[0*ldc+8:] = acc
	ADDQ DX, R8                 // next row of c
	VMULPS Y14, Y2, Y2      // acc[1][0:] *= alpha
	VMOVUPS Y2, 0(R8)       // c[1*ldc+0:] = acc
	VMULPS Y14, Y3, Y3      // acc[1][8:] *= alpha
	VMOVUPS Y3, 32(R8)       // c[1*ldc+8:] = acc
	ADDQ DX, R8                 // next row of c
	VMULPS Y14, Y4, Y4      // acc[2][0:] *= alpha
	VMOVUPS Y4, 0(R8)       // c[2*ldc+0:] = acc
	VMULPS Y14, Y5, Y5      // acc[2][8:] *= alpha
	VMOVUPS Y5, 32(R8)       // c[2*ldc+8:] = acc
	ADDQ DX, R8                 // next row of c
	VMULPS Y14, Y6, Y6      // acc[3][0:] *= alpha
	VMOVUPS Y6, 0(R8)       // c[3*ldc+0:] = acc
	VMULPS Y14, Y7, Y7      // acc[3][8:] *= alpha
	VMOVUPS Y7, 32(R8)       // c[3*ldc+8:] = acc
	ADDQ DX, R8                 // next row of c
	VMULPS Y14, Y8, Y8      // acc[4][0:] *= alpha
	VMOVUPS Y8, 0(R8)       // c[4*ldc+0:] = acc
	VMULPS Y14, Y9, Y9      // acc[4][8:] *= alpha
	VMOVUPS Y9, 32(R8)       // c[4*ldc+8:] = acc
	ADDQ DX, R8                 // next row of c
	VMULPS Y14, Y10, Y10      // acc[5][0:] *= alpha
	VMOVUPS Y10, 0(R8)       // c[5*ldc+0:] = acc
	VMULPS Y14, Y11, Y11      // acc[5][8:] *= alpha
	VMOVUPS Y11, 32(R8)       // c[5*ldc+8:] = acc
	VZEROUPPER
	RET
storebeta:
	MOVQ DI, R8                 // C = alpha·acc + beta·C
	VMULPS Y14, Y0, Y0      // acc[0][0:] *= alpha
	VFMADD231PS 0(R8), Y15, Y0  // acc += beta·c[0*ldc+0:]
	VMOVUPS Y0, 0(R8)       // c[0*ldc+0:] = acc
	VMULPS Y14, Y1, Y1      // acc[0][8:] *= alpha
	VFMADD231PS 32(R8), Y15, Y1  // acc += beta·c[0*ldc+8:]
	VMOVUPS Y1, 32(R8)       // c[0*ldc+8:] = acc
	ADDQ DX, R8                 // next row of c
	VMULPS Y14, Y2, Y2      // acc[1][0:] *= alpha
	VFMADD231PS 0(R8), Y15, Y2  // acc += beta·c[1*ldc+0:]
	VMOVUPS Y2, 0(R8)       // c[1*ldc+0:] = acc
	VMULPS Y14, Y3, Y3      // acc[1][8:] *= alpha
	VFMADD231PS 32(R8), Y15, Y3  // acc += beta·c[1*ldc+8:]
	VMOVUPS Y3, 32(R8)       // c[1*ldc+8:] = acc
	ADDQ DX, R8                 // next row of c
	VMULPS Y14, Y4, Y4      // acc[2][0:] *= alpha
	VFMADD231PS 0(R8), Y15, Y4  // acc += beta·c[2*ldc+0:]
	VMOVUPS Y4, 0(R8)       // c[2*ldc+0:] = acc
	VMULPS Y14, Y5, Y5      // acc[2][8:] *= alpha
	VFMADD231PS 32(R8), Y15, Y5  // acc += beta·c[2*ldc+8:]
	VMOVUPS Y5, 32(R8)       // c[2*ldc+8:] = acc
	ADDQ DX, R8                 // next row of c
	VMULPS Y14, Y6, Y6      // acc[3][0:] *= alpha
	VFMADD231PS 0(R8), Y15, Y6  // acc += beta·c[3*ldc+0:]
	VMOVUPS Y6, 0(R8)       // c[3*ldc+0:] = acc
	VMULPS Y14, Y7, Y7      // acc[3][8:] *= alpha
	VFMADD231PS 32(R8), Y15, Y7  // acc += beta·c[3*ldc+8:]
	VMOVUPS Y7, 32(R8)       // c[3*ldc+8:] = acc
	ADDQ DX, R8                 // next row of c
	VMULPS Y14, Y8, Y8      // acc[4][0:] *= alpha
	VFMADD231PS 0(R8), Y15, Y8  // acc += beta·c[4*ldc+0:]
	VMOVUPS Y8, 0(R8)       // c[4*ldc+0:] = acc
	VMULPS Y14, Y9, Y9      // acc[4][8:] *= alpha
	VFMADD231PS 32(R8), Y15, Y9  // acc += beta·c[4*ldc+8:]
	VMOVUPS Y9, 32(R8)       // c[4*ldc+8:] = acc
	ADDQ DX, R8                 // next row of c
	VMULPS Y14, Y10, Y10      // acc[5][0:] *= alpha
	VFMADD231PS 0(R8), Y15, Y10  // acc += beta·c[5*ldc+0:]
	VMOVUPS Y10, 0(R8)       // c[5*ldc+0:] = acc
	VMULPS Y14, Y11, Y11      // acc[5][8:] *= alpha
	VFMADD231PS 32(R8), Y15, Y11  // acc += beta·c[5*ldc+8:]
	VMOVUPS Y11, 32(R8)       // c[5*ldc+8:] = acc
	VZEROUPPER
	RET

// func SgemmKernel8x32AVX512(kc int, a, b, c []float32, ldc int, alpha, beta float32)
TEXT ·SgemmKernel8x32AVX512(SB), NOSPLIT, $0-96
	MOVQ kc+0(FP), CX           // CX = kc
	MOVQ a_base+8(FP), AX       // AX = &a[0], packed A: a[p*8+i]
	MOVQ b_base+32(FP), BX      // BX = &b[0], packed B: b[p*32+j]
	MOVQ c_base+56(FP), DI      // DI = &c[0]
	MOVQ ldc+80(FP), DX         // DX = ldc
	SHLQ $2, DX                 // DX = ldc in bytes
	VXORPS Z0, Z0, Z0          // acc[0][0:16] = 0
	VXORPS Z1, Z1, Z1          // acc[0][16:32] = 0
	VXORPS Z2, Z2, Z2          // acc[1][0:16] = 0
	VXORPS Z3, Z3, Z3          // acc[1][16:32] = 0
	VXORPS Z4, Z4, Z4          // acc[2][0:16] = 0
	VXORPS Z5, Z5, Z5          // acc[2][16:32] = 0
	VXORPS Z6, Z6, Z6          // acc[3][0:16] = 0
	VXORPS Z7, Z7, Z7          // acc[3][16:32] = 0
	VXORPS Z8, Z8, Z8          // acc[4][0:16] = 0
	VXORPS Z9, Z9, Z9          // acc[4][16:32] = 0
	VXORPS Z10, Z10, Z10          // acc[5][0:16] = 0
	VXORPS Z11, Z11, Z11          // acc[5][16:32] = 0
	VXORPS Z12, Z12, Z12          // acc[6][0:16] = 0
	VXORPS Z13, Z13, Z13          // acc[6][16:32] = 0
	VXORPS Z14, Z14, Z14          // acc[7][0:16] = 0
	VXORPS Z15, Z15, Z15          // acc[7][16:32] = 0
	MOVQ DI, R8                 // R8 = &c[0]
	PREFETCHT0 (R8)             // prefetch c[0*ldc:]
	PREFETCHT0 124(R8)           // and its last element
	ADDQ DX, R8                 // next row of c
	PREFETCHT0 (R8)             // prefetch c[1*ldc:]
	PREFETCHT0 124(R8)           // and its last element
	ADDQ DX, R8                 // next row of c
	PREFETCHT0 (R8)             // prefetch c[2*ldc:]
	PREFETCHT0 124(R8)           // and its last element
	ADDQ DX, R8                 // next row of c
	PREFETCHT0 (R8)             // prefetch c[3*ldc:]
	PREFETCHT0 124(R8)           // and its last element
	ADDQ DX, R8                 // next row of c
	PREFETCHT0 (R8)             // prefetch c[4*ldc:]
	PREFETCHT0 124(R8)           // and its last element
	ADDQ DX, R8                 // next row of c
	PREFETCHT0 (R8)             // prefetch c[5*ldc:]
	PREFETCHT0 124(R8)           // and its last element
	ADDQ DX, R8                 // next row of c
	PREFETCHT0 (R8)             // prefetch c[6*ldc:]
	PREFETCHT0 124(R8)           // and its last element
	ADDQ DX, R8                 // next row of c
	PREFETCHT0 (R8)             // prefetch c[7*ldc:]
	PREFETCHT0 124(R8)           // and its last element
	ADDQ DX, R8                 // next row of c
	MOVQ CX, R9                 // R9 = kc
	SHRQ $2, R9                 // R9 = kc / 4
	JZ   tail
loop:
	VMOVUPS 0(BX), Z28       // b[p+0][0:16]
	VMOVUPS 64(BX), Z29       // b[p+0][16:32]
	VFMADD231PS.BCST 0(AX), Z28, Z0 // acc[0][0:] += a[p+0][0]·b
	VFMADD231PS.BCST 0(AX), Z29, Z1 // acc[0][16:] += a[p+0][0]·b
	VFMADD231PS.BCST 4(AX), Z28, Z2 // acc[1][0:] += a[p+0][1]·b
	VFMADD231PS.BCST 4(AX), Z29, Z3 // acc[1][16:] += a[p+0][1]·b
	VFMADD231PS.BCST 8(AX), Z28, Z4 // acc[2][0:] += a[p+0][2]·b
	VFMADD231PS.BCST 8(AX), Z29, Z5 // acc[2][16:] += a[p+0][2]·b
	VFMADD231PS.BCST 12(AX), Z28, Z6 // acc[3][0:] += a[p+0][3]·b
	VFMADD231PS.BCST 12(AX), Z29, Z7 // acc[3][16:] += a[p+0][3]·b
	VFMADD231PS.BCST 16(AX), Z28, Z8 // acc[4][0:] += a[p+0][4]·b
	VFMADD231PS.BCST 16(AX), Z29, Z9 // acc[4][16:] += a[p+0][4]·b
	VFMADD231PS.BCST 20(AX), Z28, Z10 // acc[5][0:] += a[p+0][5]·b
	VFMADD231PS.BCST 20(AX), Z29, Z11 // acc[5][16:] += a[p+0][5]·b
	VFMADD231PS.BCST 24(AX), Z28, Z12 // acc[6][0:] += a[p+0][6]·b
	VFMADD231PS.BCST 24(AX), Z29, Z13 // acc[6][16:] += a[p+0][6]·b
	VFMADD231PS.BCST 28(AX), Z28, Z14 // acc[7][0:] += a[p+0][7]·b
	VFMADD231PS.BCST 28(AX), Z29, Z15 // acc[7][16:] += a[p+0][7]·b
	VMOVUPS 128(BX), Z28       // b[p+1][0:16]
	VMOVUPS 192(BX), Z29       // b[p+1][16:32]
	VFMADD231PS.BCST 32(AX), Z28, Z0 // acc[0][0:] += a[p+1][0]·b
	VFMADD231PS.BCST 32(AX), Z29, Z1 // acc[0][16:] += a[p+1][0]·b
	VFMADD231PS.BCST 36(AX), Z28, Z2 // acc[1][0:] += a[p+1][1]·b
	VFMADD231PS.BCST 36(AX), Z29, Z3 // acc[1][16:] += a[p+1][1]·b
	VFMADD231PS.BCST 40(AX), Z28, Z4 // acc[2][0:] += a[p+1][2]·b
	VFMADD231PS.BCST 40(AX), Z29, Z5 // acc[2][16:] += a[p+1][2]·b
	VFMADD231PS.BCST 44(AX), Z28, Z6 // acc[3][0:] += a[p+1][3]·b
	VFMADD231PS.BCST 44(AX), Z29, Z7 // acc[3][16:] += a[p+1][3]·b
	VFMADD231PS.BCST 48(AX), Z28, Z8 // acc[4][0:] += a[p+1][4]·b
	VFMADD231PS.BCST 48(AX), Z29, Z9 // acc[4][16:] += a[p+1][4]·b
	VFMADD231PS.BCST 52(AX), Z28, Z10 // acc[5][0:] += a[p+1][5]·b
	VFMADD231PS.BCST 52(AX), Z29, Z11 // acc[5][16:] += a[p+1][5]·b
	VFMADD231PS.BCST 56(AX), Z28, Z12 // acc[6][0:] += a[p+1][6]·b
	VFMADD231PS.BCST 56(AX), Z29, Z13 // acc[6][16:] += a[p+1][6]·b
	VFMADD231PS.BCST 60(AX), Z28, Z14 // acc[7][0:] += a[p+1][7]·b
	VFMADD231PS.BCST 60(AX), Z29, Z15 // acc[7][16:] += a[p+1][7]·b
	VMOVUPS 256(BX), Z28       // b[p+2][0:16]
	VMOVUPS 320(BX), Z29       // b[p+2][16:32]
	VFMADD231PS.BCST 64(AX), Z28, Z0 // acc[0][0:] += a[p+2][0]·b
	VFMADD231PS.BCST 64(AX), Z29, Z1 // acc[0][16:] += a[p+2][0]·b
	VFMADD231PS.BCST 68(AX), Z28, Z2 // acc[1][0:] += a[p+2][1]·b
	VFMADD231PS.BCST 68(AX), Z29, Z3 // acc[1][16:] += a[p+2][1]·b
	VFMADD231PS.BCST 72(AX), Z28, Z4 // acc[2][0:] += a[p+2][2]·b
	VFMADD231PS.BCST 72(AX), Z29, Z5 // acc[2][16:] += a[p+2][2]·b
	VFMADD231PS.BCST 76(AX), Z28, Z6 // acc[3][0:] += a[p+2][3]·b
	VFMADD231PS.BCST 76(AX), Z29, Z7 // acc[3][16:] += a[p+2][3]·b
	VFMADD231PS.BCST 80(AX), Z28, Z8 // acc[4][0:] += a[p+2][4]·b
	VFMADD231PS.BCST 80(AX), Z29, Z9 // acc[4][16:] += a[p+2][4]·b
	VFMADD231PS.BCST 84(AX), Z28, Z10 // acc[5][0:] += a[p+2][5]·b
	VFMADD231PS.BCST 84(AX), Z29, Z11 // acc[5][16:] += a[p+2][5]·b
	VFMADD231PS.BCST 88(AX), Z28, Z12 // acc[6][0:] += a[p+2][6]·b
	VFMADD231PS.BCST 88(AX), Z29, Z13 // acc[6][16:] += a[p+2][6]·b
	VFMADD231PS.BCST 92(AX), Z28, Z14 // acc[7][0:] += a[p+2][7]·b
	VFMADD231PS.BCST 92(AX), Z29, Z15 // acc[7][16:] += a[p+2][7]·b
	VMOVUPS 384(BX), Z28       // b[p+3][0:16]
	VMOVUPS 448(BX), Z29       // b[p+3][16:32]
	VFMADD231PS.BCST 96(AX), Z28, Z0 // acc[0][0:] += a[p+3][0]·b
	VFMADD231PS.BCST 96(AX), Z29, Z1 // acc[0][16:] += a[p+3][0]·b
	VFMADD231PS.BCST 100(AX), Z28, Z2 // acc[1][0:] += a[p+3][1]·b
	VFMADD231PS.BCST 100(AX), Z29, Z3 // acc[1][16:] += a[p+3][1]·b
	VFMADD231PS.BCST 104(AX), Z28, Z4 // acc[2][0:] += a[p+3][2]·b
	VFMADD231PS.BCST 104(AX), Z29, Z5 // acc[2][16:] += a[p+3][2]·b
	VFMADD231PS.BCST 108(AX), Z28, Z6 // acc[3][0:] += a[p+3][3]·b
	VFMADD231PS.BCST 108(AX), Z29, Z7 // acc[3][16:] += a[p+3][3]·b
	VFMADD231PS.BCST 112(AX), Z28, Z8 // acc[4][0:] += a[p+3][4]·b
	VFMADD231PS.BCST 112(AX), Z29, Z9 // acc[4][16:] += a[p+3][4]·b
	VFMADD231PS.BCST 116(AX), Z28, Z10 // acc[5][0:] += a[p+3][5]·b
	VFMADD231PS.BCST 116(AX), Z29, Z11 // acc[5][16:] += a[p+3][5]·b
	VFMADD231PS.BCST 120(AX), Z28, Z12 // acc[6][0:] += a[p+3][6]·b
	VFMADD231PS.BCST 120(AX), Z29, Z13 // acc[6][16:] += a[p+3][6]·b
	VFMADD231PS.BCST 124(AX), Z28, Z14 // acc[7][0:] += a[p+3][7]·b
	VFMADD231PS.BCST 124(AX), Z29, Z15 // acc[7][16:] += a[p+3][7]·b
	ADDQ $128, AX                 // a += 4·8
	ADDQ $512, BX                 // b += 4·32
	DECQ R9
	JNZ  loop
tail:
	ANDQ $3, CX                 // CX = kc % 4
	JZ   store
tailloop:
	VMOVUPS 0(BX), Z28       // b[p+0][0:16]
	VMOVUPS 64(BX), Z29       // b[p+0][16:32]
	VFMADD231PS.BCST 0(AX), Z28, Z0 // acc[0][0:] += a[p+0][0]·b
	VFMADD231PS.BCST 0(AX), Z29, Z1 // acc[0][16:] += a[p+0][0]·b
	VFMADD231PS.BCST 4(AX), Z28, Z2 // acc[1][0:] += a[p+0][1]·b
	VFMADD231PS.BCST 4(AX), Z29, Z3 // acc[1][16:] += a[p+0][1]·b
	VFMADD231PS.BCST 8(AX), Z28, Z4 // acc[2][0:] += a[p+0][2]·b
	VFMADD231PS.BCST 8(AX), Z29, Z5 // acc[2][16:] += a[p+0][2]·b
	VFMADD231PS.BCST 12(AX), Z28, Z6 // acc[3][0:] += a[p+0][3]·b
	VFMADD231PS.BCST 12(AX), Z29, Z7 // acc[3][16:] += a[p+0][3]·b
	VFMADD231PS.BCST 16(AX), Z28, Z8 // acc[4][0:] += a[p+0][4]·b
	VFMADD231PS.BCST 16(AX), Z29, Z9 // acc[4][16:] += a[p+0][4]·b
	VFMADD231PS.BCST 20(AX), Z28, Z10 // acc[5][0:] += a[p+0][5]·b
	VFMADD231PS.BCST 20(AX), Z29, Z11 // acc[5][16:] += a[p+0][5]·b
	VFMADD231PS.BCST 24(AX), Z28, Z12 // acc[6][0:] += a[p+0][6]·b
	VFMADD231PS.BCST 24(AX), Z29, Z13 // acc[6][16:] += a[p+0][6]·b
	VFMADD231PS.BCST 28(AX), Z28, Z14 // acc[7][0:] += a[p+0][7]·b
	VFMADD231PS.BCST 28(AX), Z29, Z15 // acc[7][16:] += a[p+0][7]·b
	ADDQ $32, AX                 // a += 8
	ADDQ $128, BX                 // b += 32
	DECQ CX
	JNZ  tailloop
store:
	VBROADCASTSS alpha+88(FP), Z30   // alpha in every lane
	VBROADCASTSS beta+92(FP), Z31     // beta in every lane
	MOVL beta+92(FP), R10       // R10 = bits of beta
	SHLL $1, R10                // drop the sign: zero iff beta == ±0
	JNZ  storebeta
	MOVQ DI, R8                 // beta == 0: C = alpha·acc, C never read
	VMULPS Z30, Z0, Z0      // acc[0][0:] *= alpha
	VMOVUPS Z0, 0(R8)       // c[0*ldc+0:] = acc
	VMULPS Z30, Z1, Z1      // acc[0][16:] *= alpha
	VMOVUPS Z1, 64(R8)       // c[0*ldc+16:] = acc
	ADDQ DX, R8                 // next row of c
	VMULPS Z30, Z2, Z2      // acc[1][0:] *= alpha
	VMOVUPS Z2, 0(R8)       // c[1*ldc+0:] = acc
	VMULPS Z30, Z3, Z3      // acc[1][16:] *= alpha
	VMOVUPS Z3, 64(R8)       // c[1*ldc+16:] = acc
	ADDQ DX, R8                 // next row of c
	VMULPS Z30, Z4, Z4      // acc[2][0:] *= alpha
	VMOVUPS Z4, 0(R8)       // c[2*ldc+0:] = acc
	VMULPS Z30, Z5, Z5      // acc[2][16:] *= alpha
	VMOVUPS Z5, 64(R8)       // c[2*ldc+16:] = acc
	ADDQ DX, R8                 // next row of c
	VMULPS Z30, Z6, Z6      // acc[3][0:] *= alpha
	VMOVUPS Z6, 0(R8)       // c[3*ldc+0:] = acc
	VMULPS Z30, Z7, Z7      // acc[3][16:] *= alpha
	VMOVUPS Z7, 64(R8)       // c[3*ldc+16:] = acc
	ADDQ DX, R8                 // next row of c
	VMULPS Z30, Z8, Z8      // acc[4][0:] *= alpha
	VMOVUPS Z8, 0(R8)       // c[4*ldc+0:] = acc
	VMULPS Z30, Z9, Z9      // acc[4][16:] *= alpha
	VMOVUPS Z9, 64(R8)       // c[4*ldc+16:] = acc
	ADDQ DX, R8                 // next row of c
	VMULPS Z30, Z10, Z10      // acc[5][0:] *= alpha
	VMOVUPS Z10, 0(R8)       // c[5*ldc+0:] = acc
	VMULPS Z30, Z11, Z11      // acc[5][16:] *= alpha
	VMOVUPS Z11, 64(R8)       // c[5*ldc+16:] = acc
	ADDQ DX, R8                 // next row of c
	VMULPS Z30, Z12, Z12      // acc[6][0:] *= alpha
	VMOVUPS Z12, 0(R8)       // c[6*ldc+0:] = acc
	VMULPS Z30, Z13, Z13      // acc[6][16:] *= alpha
	VMOVUPS Z13, 64(R8)       // c[6*ldc+16:] = acc
	ADDQ DX, R8                 // next row of c
	VMULPS Z30, Z14, Z14      // acc[7][0:] *= alpha
	VMOVUPS Z14, 0(R8)       // c[7*ldc+0:] = acc
	VMULPS Z30, Z15, Z15      // acc[7][16:] *= alpha
	VMOVUPS Z15, 64(R8)       // c[7*ldc+16:] = acc
	VZEROUPPER
	RET
storebeta:
	MOVQ DI, R8                 // C = alpha·acc + beta·C
	VMULPS Z30, Z0, Z0      // acc[0][0:] *= alpha
	VFMADD231PS 0(R8), Z31, Z0  // acc += beta·c[0*ldc+0:]
	VMOVUPS Z0, 0(R8)       // c[0*ldc+0:] = acc
	VMULPS Z30, Z1, Z1      // acc[0][16:] *= alpha
	VFMADD231PS 64(R8), Z31, Z1  // acc += beta·c[0*ldc+16:]
	VMOVUPS Z1, 64(R8)       // c[0*ldc+16:] = acc
	ADDQ DX, R8                 // next row of c
	VMULPS Z30, Z2, Z2      // acc[1][0:] *= alpha
	VFMADD231PS 0(R8), Z31, Z2  // acc += beta·c[1*ldc+0:]
	VMOVUPS Z2, 0(R8)       // c[1*ldc+0:] = acc
	VMULPS Z30, Z3, Z3      // acc[1][16:] *= alpha
	VFMADD231PS 64(R8), Z31, Z3  // acc += beta·c[1*ldc+16:]
	VMOVUPS Z3, 64(R8)       // c[1*ldc+16:] = acc
	ADDQ DX, R8                 // next row of c
	VMULPS Z30, Z4, Z4      // acc[2][0:] *= alpha
	VFMADD231PS 0(R8), Z31, Z4  // acc += beta·c[2*ldc+0:]
	VMOVUPS Z4, 0(R8)       // c[2*ldc+0:] = acc
	VMULPS Z30, Z5, Z5      // acc[2][16:] *= alpha
	VFMADD231PS 64(R8), Z31, Z5  // acc += beta·c[2*ldc+16:]
	VMOVUPS Z5, 64(R8)       // c[2*ldc+16:] = acc
	ADDQ DX, R8                 // next row of c
	VMULPS Z30, Z6, Z6      // acc[3][0:] *= alpha
	VFMADD231PS 0(R8), Z31, Z6  // acc += beta·c[3*ldc+0:]
	VMOVUPS Z6, 0(R8)       // c[3*ldc+0:] = acc
	VMULPS Z30, Z7, Z7      // acc[3][16:] *= alpha
	VFMADD231PS 64(R8), Z31, Z7  // acc += beta·c[3*ldc+16:]
	VMOVUPS Z7, 64(R8)       // c[3*ldc+16:] = acc
	ADDQ DX, R8                 // next row of c
	VMULPS Z30, Z8, Z8      // acc[4][0:] *= alpha
	VFMADD231PS 0(R8), Z31, Z8  // acc += beta·c[4*ldc+0:]
	VMOVUPS Z8, 0(R8)       // c[4*ldc+0:] = acc
	VMULPS Z30, Z9, Z9      // acc[4][16:] *= alpha
	VFMADD231PS 64(R8), Z31, Z9  // acc += beta·c[4*ldc+16:]
	VMOVUPS Z9, 64(R8)       // c[4*ldc+16:] = acc
	ADDQ DX, R8                 // next row of c
	VMULPS Z30, Z10, Z10      // acc[5][0:] *= alpha
	VFMADD231PS 0(R8), Z31, Z10  // acc += beta·c[5*ldc+0:]
	VMOVUPS Z10, 0(R8)       // c[5*ldc+0:] = acc
	VMULPS Z30, Z11, Z11      // acc[5][16:] *= alpha
	VFMADD231PS 64(R8), Z31, Z11  // acc += beta·c[5*ldc+16:]
	VMOVUPS Z11, 64(R8)       // c[5*ldc+16:] = acc
	ADDQ DX, R8                 // next row of c
	VMULPS Z30, Z12, Z12      // acc[6][0:] *= alpha
	VFMADD231PS 0(R8), Z31, Z12  // acc += beta·c[6*ldc+0:]
	VMOVUPS Z12, 0(R8)       // c[6*ldc+0:] = acc
	VMULPS Z30, Z13, Z13      // acc[6][16:] *= alpha
	VFMADD231PS 64(R8), Z31, Z13  // acc += beta·c[6*ldc+16:]
	VMOVUPS Z13, 64(R8)       // c[6*ldc+16:] = acc
	ADDQ DX, R8                 // next row of c
	VMULPS Z30, Z14, Z14      // acc[7][0:] *= alpha
	VFMADD231PS 0(R8), Z31, Z14  // acc += beta·c[7*ldc+0:]
	VMOVUPS Z14, 0(R8)       // c[7*ldc+0:] = acc
	VMULPS Z30, Z15, Z15      // acc[7][16:] *= alpha
	VFMADD231PS 64(R8), Z31, Z15  // acc += beta·c[7*ldc+16:]
	VMOVUPS Z15, 64(R8)       // c[7*ldc+16:] = acc
	VZEROUPPER
	RET

