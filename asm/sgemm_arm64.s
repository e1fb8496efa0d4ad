//go:build arm64 && !noasm

// SGEMM micro-kernel for arm64 NEON: one 8×12 tile of C from packed panels,
//
//	for i := 0; i < 8; i++ {
//		for j := 0; j < 12; j++ {
//			var s float32
//			for p := 0; p < kc; p++ {
//				s += a[p*8+i] * b[p*12+j]
//			}
//			if beta == 0 {
//				c[i*ldc+j] = alpha * s // c not read
//			} else {
//				c[i*ldc+j] = alpha*s + beta*c[i*ldc+j]
//			}
//		}
//	}
//
// Accumulators: V0…V23 (row i in V3i…V3i+2), A values in V24-V25, B row in
// V26-V28. Go's assembler lacks FMLA/FMUL by element: they are WORDs with the
// mnemonic in the comment.

#include "textflag.h"

// func SgemmKernel8x12NEON(kc int, a, b, c []float32, ldc int, alpha, beta float32)
TEXT ·SgemmKernel8x12NEON(SB), NOSPLIT, $0-96
	MOVD kc+0(FP), R0         // R0 = kc
	MOVD a_base+8(FP), R1     // R1 = &a[0], packed A: a[p*8+i]
	MOVD b_base+32(FP), R2    // R2 = &b[0], packed B: b[p*12+j]
	MOVD c_base+56(FP), R3    // R3 = &c[0]
	MOVD ldc+80(FP), R4       // R4 = ldc
	LSL  $2, R4, R4           // R4 = ldc in bytes
	VEOR V0.B16, V0.B16, V0.B16 // acc[0][0:4] = 0
	VEOR V1.B16, V1.B16, V1.B16 // acc[0][4:8] = 0
	VEOR V2.B16, V2.B16, V2.B16 // acc[0][8:12] = 0
	VEOR V3.B16, V3.B16, V3.B16 // acc[1][0:4] = 0
	VEOR V4.B16, V4.B16, V4.B16 // acc[1][4:8] = 0
	VEOR V5.B16, V5.B16, V5.B16 // acc[1][8:12] = 0
	VEOR V6.B16, V6.B16, V6.B16 // acc[2][0:4] = 0
	VEOR V7.B16, V7.B16, V7.B16 // acc[2][4:8] = 0
	VEOR V8.B16, V8.B16, V8.B16 // acc[2][8:12] = 0
	VEOR V9.B16, V9.B16, V9.B16 // acc[3][0:4] = 0
	VEOR V10.B16, V10.B16, V10.B16 // acc[3][4:8] = 0
	VEOR V11.B16, V11.B16, V11.B16 // acc[3][8:12] = 0
	VEOR V12.B16, V12.B16, V12.B16 // acc[4][0:4] = 0
	VEOR V13.B16, V13.B16, V13.B16 // acc[4][4:8] = 0
	VEOR V14.B16, V14.B16, V14.B16 // acc[4][8:12] = 0
	VEOR V15.B16, V15.B16, V15.B16 // acc[5][0:4] = 0
	VEOR V16.B16, V16.B16, V16.B16 // acc[5][4:8] = 0
	VEOR V17.B16, V17.B16, V17.B16 // acc[5][8:12] = 0
	VEOR V18.B16, V18.B16, V18.B16 // acc[6][0:4] = 0
	VEOR V19.B16, V19.B16, V19.B16 // acc[6][4:8] = 0
	VEOR V20.B16, V20.B16, V20.B16 // acc[6][8:12] = 0
	VEOR V21.B16, V21.B16, V21.B16 // acc[7][0:4] = 0
	VEOR V22.B16, V22.B16, V22.B16 // acc[7][4:8] = 0
	VEOR V23.B16, V23.B16, V23.B16 // acc[7][8:12] = 0
	CBZ  R0, store            // kc == 0: C = alpha·0 (+ beta·C)
loop:
	VLD1.P 32(R1), [V24.S4, V25.S4]         // V24, V25 = a[p*8 : p*8+8]; a += 8
	VLD1.P 48(R2), [V26.S4, V27.S4, V28.S4] // V26…V28 = b[p*12 : p*12+12]; b += 12
	WORD $0x4f981340 // FMLA V0.4S, V26.4S, V24.S[0]: acc[0][0:] += b·a[p*8+0]
	WORD $0x4f981361 // FMLA V1.4S, V27.4S, V24.S[0]: acc[0][4:] += b·a[p*8+0]
	WORD $0x4f981382 // FMLA V2.4S, V28.4S, V24.S[0]: acc[0][8:] += b·a[p*8+0]
	WORD $0x4fb81343 // FMLA V3.4S, V26.4S, V24.S[1]: acc[1][0:] += b·a[p*8+1]
	WORD $0x4fb81364 // FMLA V4.4S, V27.4S, V24.S[1]: acc[1][4:] += b·a[p*8+1]
	WORD $0x4fb81385 // FMLA V5.4S, V28.4S, V24.S[1]: acc[1][8:] += b·a[p*8+1]
	WORD $0x4f981b46 // FMLA V6.4S, V26.4S, V24.S[2]: acc[2][0:] += b·a[p*8+2]
	WORD $0x4f981b67 // FMLA V7.4S, V27.4S, V24.S[2]: acc[2][4:] += b·a[p*8+2]
	WORD $0x4f981b88 // FMLA V8.4S, V28.4S, V24.S[2]: acc[2][8:] += b·a[p*8+2]
	WORD $0x4fb81b49 // FMLA V9.4S, V26.4S, V24.S[3]: acc[3][0:] += b·a[p*8+3]
	WORD $0x4fb81b6a // FMLA V10.4S, V27.4S, V24.S[3]: acc[3][4:] += b·a[p*8+3]
	WORD $0x4fb81b8b // FMLA V11.4S, V28.4S, V24.S[3]: acc[3][8:] += b·a[p*8+3]
	WORD $0x4f99134c // FMLA V12.4S, V26.4S, V25.S[0]: acc[4][0:] += b·a[p*8+4]
	WORD $0x4f99136d // FMLA V13.4S, V27.4S, V25.S[0]: acc[4][4:] += b·a[p*8+4]
	WORD $0x4f99138e // FMLA V14.4S, V28.4S, V25.S[0]: acc[4][8:] += b·a[p*8+4]
	WORD $0x4fb9134f // FMLA V15.4S, V26.4S, V25.S[1]: acc[5][0:] += b·a[p*8+5]
	WORD $0x4fb91370 // FMLA V16.4S, V27.4S, V25.S[1]: acc[5][4:] += b·a[p*8+5]
	WORD $0x4fb91391 // FMLA V17.4S, V28.4S, V25.S[1]: acc[5][8:] += b·a[p*8+5]
	WORD $0x4f991b52 // FMLA V18.4S, V26.4S, V25.S[2]: acc[6][0:] += b·a[p*8+6]
	WORD $0x4f991b73 // FMLA V19.4S, V27.4S, V25.S[2]: acc[6][4:] += b·a[p*8+6]
	WORD $0x4f991b94 // FMLA V20.4S, V28.4S, V25.S[2]: acc[6][8:] += b·a[p*8+6]
	WORD $0x4fb91b55 // FMLA V21.4S, V26.4S, V25.S[3]: acc[7][0:] += b·a[p*8+7]
	WORD $0x4fb91b76 // FMLA V22.4S, V27.4S, V25.S[3]: acc[7][4:] += b·a[p*8+7]
	WORD $0x4fb91b97 // FMLA V23.4S, V28.4S, V25.S[3]: acc[7][8:] += b·a[p*8+7]
	SUBS $1, R0, R0           // kc--
	BNE  loop
store:
	FMOVS alpha+88(FP), F29   // V29.S[0] = alpha
	FMOVS beta+92(FP), F30    // V30.S[0] = beta
	FCMPS $(0.0), F30         // beta == 0 ? (NaN: not equal)
	BNE  storebeta
	WORD $0x4f9d9000 // FMUL V0.4S, V0.4S, V29.S[0]: acc[0][0:] *= alpha
	WORD $0x4f9d9021 // FMUL V1.4S, V1.4S, V29.S[0]: acc[0][4:] *= alpha
	WORD $0x4f9d9042 // FMUL V2.4S, V2.4S, V29.S[0]: acc[0][8:] *= alpha
	VST1 [V0.S4, V1.S4, V2.S4], (R3)    // c[0*ldc : 0*ldc+12] = acc[0] (c not read)
	ADD  R4, R3, R3           // next row of c
	WORD $0x4f9d9063 // FMUL V3.4S, V3.4S, V29.S[0]: acc[1][0:] *= alpha
	WORD $0x4f9d9084 // FMUL V4.4S, V4.4S, V29.S[0]: acc[1][4:] *= alpha
	WORD $0x4f9d90a5 // FMUL V5.4S, V5.4S, V29.S[0]: acc[1][8:] *= alpha
	VST1 [V3.S4, V4.S4, V5.S4], (R3)    // c[1*ldc : 1*ldc+12] = acc[1] (c not read)
	ADD  R4, R3, R3           // next row of c
	WORD $0x4f9d90c6 // FMUL V6.4S, V6.4S, V29.S[0]: acc[2][0:] *= alpha
	WORD $0x4f9d90e7 // FMUL V7.4S, V7.4S, V29.S[0]: acc[2][4:] *= alpha
	WORD $0x4f9d9108 // FMUL V8.4S, V8.4S, V29.S[0]: acc[2][8:] *= alpha
	VST1 [V6.S4, V7.S4, V8.S4], (R3)    // c[2*ldc : 2*ldc+12] = acc[2] (c not read)
	ADD  R4, R3, R3           // next row of c
	WORD $0x4f9d9129 // FMUL V9.4S, V9.4S, V29.S[0]: acc[3][0:] *= alpha
	WORD $0x4f9d914a // FMUL V10.4S, V10.4S, V29.S[0]: acc[3][4:] *= alpha
	WORD $0x4f9d916b // FMUL V11.4S, V11.4S, V29.S[0]: acc[3][8:] *= alpha
	VST1 [V9.S4, V10.S4, V11.S4], (R3)    // c[3*ldc : 3*ldc+12] = acc[3] (c not read)
	ADD  R4, R3, R3           // next row of c
	WORD $0x4f9d918c // FMUL V12.4S, V12.4S, V29.S[0]: acc[4][0:] *= alpha
	WORD $0x4f9d91ad // FMUL V13.4S, V13.4S, V29.S[0]: acc[4][4:] *= alpha
	WORD $0x4f9d91ce // FMUL V14.4S, V14.4S, V29.S[0]: acc[4][8:] *= alpha
	VST1 [V12.S4, V13.S4, V14.S4], (R3)    // c[4*ldc : 4*ldc+12] = acc[4] (c not read)
	ADD  R4, R3, R3           // next row of c
	WORD $0x4f9d91ef // FMUL V15.4S, V15.4S, V29.S[0]: acc[5][0:] *= alpha
	WORD $0x4f9d9210 // FMUL V16.4S, V16.4S, V29.S[0]: acc[5][4:] *= alpha
	WORD $0x4f9d9231 // FMUL V17.4S, V17.4S, V29.S[0]: acc[5][8:] *= alpha
	VST1 [V15.S4, V16.S4, V17.S4], (R3)    // c[5*ldc : 5*ldc+12] = acc[5] (c not read)
	ADD  R4, R3, R3           // next row of c
	WORD $0x4f9d9252 // FMUL V18.4S, V18.4S, V29.S[0]: acc[6][0:] *= alpha
	WORD $0x4f9d9273 // FMUL V19.4S, V19.4S, V29.S[0]: acc[6][4:] *= alpha
	WORD $0x4f9d9294 // FMUL V20.4S, V20.4S, V29.S[0]: acc[6][8:] *= alpha
	VST1 [V18.S4, V19.S4, V20.S4], (R3)    // c[6*ldc : 6*ldc+12] = acc[6] (c not read)
	ADD  R4, R3, R3           // next row of c
	WORD $0x4f9d92b5 // FMUL V21.4S, V21.4S, V29.S[0]: acc[7][0:] *= alpha
	WORD $0x4f9d92d6 // FMUL V22.4S, V22.4S, V29.S[0]: acc[7][4:] *= alpha
	WORD $0x4f9d92f7 // FMUL V23.4S, V23.4S, V29.S[0]: acc[7][8:] *= alpha
	VST1 [V21.S4, V22.S4, V23.S4], (R3)    // c[7*ldc : 7*ldc+12] = acc[7] (c not read)
	RET
storebeta:
	VLD1 (R3), [V26.S4, V27.S4, V28.S4] // V26…V28 = c[0*ldc : 0*ldc+12]
	WORD $0x4f9d9000 // FMUL V0.4S, V0.4S, V29.S[0]: acc[0][0:] *= alpha
	WORD $0x4f9e1340 // FMLA V0.4S, V26.4S, V30.S[0]: acc[0][0:] += beta·c
	WORD $0x4f9d9021 // FMUL V1.4S, V1.4S, V29.S[0]: acc[0][4:] *= alpha
	WORD $0x4f9e1361 // FMLA V1.4S, V27.4S, V30.S[0]: acc[0][4:] += beta·c
	WORD $0x4f9d9042 // FMUL V2.4S, V2.4S, V29.S[0]: acc[0][8:] *= alpha
	WORD $0x4f9e1382 // FMLA V2.4S, V28.4S, V30.S[0]: acc[0][8:] += beta·c
	VST1 [V0.S4, V1.S4, V2.S4], (R3)    // c[0*ldc : 0*ldc+12] = acc[0]
	ADD  R4, R3, R3           // next row of c
	VLD1 (R3), [V26.S4, V27.S4, V28.S4] // V26…V28 = c[1*ldc : 1*ldc+12]
	WORD $0x4f9d9063 // FMUL V3.4S, V3.4S, V29.S[0]: acc[1][0:] *= alpha
	WORD $0x4f9e1343 // FMLA V3.4S, V26.4S, V30.S[0]: acc[1][0:] += beta·c
	WORD $0x4f9d9084 // FMUL V4.4S, V4.4S, V29.S[0]: acc[1][4:] *= alpha
	WORD $0x4f9e1364 // FMLA V4.4S, V27.4S, V30.S[0]: acc[1][4:] += beta·c
	WORD $0x4f9d90a5 // FMUL V5.4S, V5.4S, V29.S[0]: acc[1][8:] *= alpha
	WORD $0x4f9e1385 // FMLA V5.4S, V28.4S, V30.S[0]: acc[1][8:] += beta·c
	VST1 [V3.S4, V4.S4, V5.S4], (R3)    // c[1*ldc : 1*ldc+12] = acc[1]
	ADD  R4, R3, R3           // next row of c
	VLD1 (R3), [V26.S4, V27.S4, V28.S4] // V26…V28 = c[2*ldc : 2*ldc+12]
	WORD $0x4f9d90c6 // FMUL V6.4S, V6.4S, V29.S[0]: acc[2][0:] *= alpha
	WORD $0x4f9e1346 // FMLA V6.4S, V26.4S, V30.S[0]: acc[2][0:] += beta·c
	WORD $0x4f9d90e7 // FMUL V7.4S, V7.4S, V29.S[0]: acc[2][4:] *= alpha
	WORD $0x4f9e1367 // FMLA V7.4S, V27.4S, V30.S[0]: acc[2][4:] += beta·c
	WORD $0x4f9d9108 // FMUL V8.4S, V8.4S, V29.S[0]: acc[2][8:] *= alpha
	WORD $0x4f9e1388 // FMLA V8.4S, V28.4S, V30.S[0]: acc[2][8:] += beta·c
	VST1 [V6.S4, V7.S4, V8.S4], (R3)    // c[2*ldc : 2*ldc+12] = acc[2]
	ADD  R4, R3, R3           // next row of c
	VLD1 (R3), [V26.S4, V27.S4, V28.S4] // V26…V28 = c[3*ldc : 3*ldc+12]
	WORD $0x4f9d9129 // FMUL V9.4S, V9.4S, V29.S[0]: acc[3][0:] *= alpha
	WORD $0x4f9e1349 // FMLA V9.4S, V26.4S, V30.S[0]: acc[3][0:] += beta·c
	WORD $0x4f9d914a // FMUL V10.4S, V10.4S, V29.S[0]: acc[3][4:] *= alpha
	WORD $0x4f9e136a // FMLA V10.4S, V27.4S, V30.S[0]: acc[3][4:] += beta·c
	WORD $0x4f9d916b // FMUL V11.4S, V11.4S, V29.S[0]: acc[3][8:] *= alpha
	WORD $0x4f9e138b // FMLA V11.4S, V28.4S, V30.S[0]: acc[3][8:] += beta·c
	VST1 [V9.S4, V10.S4, V11.S4], (R3)    // c[3*ldc : 3*ldc+12] = acc[3]
	ADD  R4, R3, R3           // next row of c
	VLD1 (R3), [V26.S4, V27.S4, V28.S4] // V26…V28 = c[4*ldc : 4*ldc+12]
	WORD $0x4f9d918c // FMUL V12.4S, V12.4S, V29.S[0]: acc[4][0:] *= alpha
	WORD $0x4f9e134c // FMLA V12.4S, V26.4S, V30.S[0]: acc[4][0:] += beta·c
	WORD $0x4f9d91ad // FMUL V13.4S, V13.4S, V29.S[0]: acc[4][4:] *= alpha
	WORD $0x4f9e136d // FMLA V13.4S, V27.4S, V30.S[0]: acc[4][4:] += beta·c
	WORD $0x4f9d91ce // FMUL V14.4S, V14.4S, V29.S[0]: acc[4][8:] *= alpha
	WORD $0x4f9e138e // FMLA V14.4S, V28.4S, V30.S[0]: acc[4][8:] += beta·c
	VST1 [V12.S4, V13.S4, V14.S4], (R3)    // c[4*ldc : 4*ldc+12] = acc[4]
	ADD  R4, R3, R3           // next row of c
	VLD1 (R3), [V26.S4, V27.S4, V28.S4] // V26…V28 = c[5*ldc : 5*ldc+12]
	WORD $0x4f9d91ef // FMUL V15.4S, V15.4S, V29.S[0]: acc[5][0:] *= alpha
	WORD $0x4f9e134f // FMLA V15.4S, V26.4S, V30.S[0]: acc[5][0:] += beta·c
	WORD $0x4f9d9210 // FMUL V16.4S, V16.4S, V29.S[0]: acc[5][4:] *= alpha
	WORD $0x4f9e1370 // FMLA V16.4S, V27.4S, V30.S[0]: acc[5][4:] += beta·c
	WORD $0x4f9d9231 // FMUL V17.4S, V17.4S, V29.S[0]: acc[5][8:] *= alpha
	WORD $0x4f9e1391 // FMLA V17.4S, V28.4S, V30.S[0]: acc[5][8:] += beta·c
	VST1 [V15.S4, V16.S4, V17.S4], (R3)    // c[5*ldc : 5*ldc+12] = acc[5]
	ADD  R4, R3, R3           // next row of c
	VLD1 (R3), [V26.S4, V27.S4, V28.S4] // V26…V28 = c[6*ldc : 6*ldc+12]
	WORD $0x4f9d9252 // FMUL V18.4S, V18.4S, V29.S[0]: acc[6][0:] *= alpha
	WORD $0x4f9e1352 // FMLA V18.4S, V26.4S, V30.S[0]: acc[6][0:] += beta·c
	WORD $0x4f9d9273 // FMUL V19.4S, V19.4S, V29.S[0]: acc[6][4:] *= alpha
	WORD $0x4f9e1373 // FMLA V19.4S, V27.4S, V30.S[0]: acc[6][4:] += beta·c
	WORD $0x4f9d9294 // FMUL V20.4S, V20.4S, V29.S[0]: acc[6][8:] *= alpha
	WORD $0x4f9e1394 // FMLA V20.4S, V28.4S, V30.S[0]: acc[6][8:] += beta·c
	VST1 [V18.S4, V19.S4, V20.S4], (R3)    // c[6*ldc : 6*ldc+12] = acc[6]
	ADD  R4, R3, R3           // next row of c
	VLD1 (R3), [V26.S4, V27.S4, V28.S4] // V26…V28 = c[7*ldc : 7*ldc+12]
	WORD $0x4f9d92b5 // FMUL V21.4S, V21.4S, V29.S[0]: acc[7][0:] *= alpha
	WORD $0x4f9e1355 // FMLA V21.4S, V26.4S, V30.S[0]: acc[7][0:] += beta·c
	WORD $0x4f9d92d6 // FMUL V22.4S, V22.4S, V29.S[0]: acc[7][4:] *= alpha
	WORD $0x4f9e1376 // FMLA V22.4S, V27.4S, V30.S[0]: acc[7][4:] += beta·c
	WORD $0x4f9d92f7 // FMUL V23.4S, V23.4S, V29.S[0]: acc[7][8:] *= alpha
	WORD $0x4f9e1397 // FMLA V23.4S, V28.4S, V30.S[0]: acc[7][8:] += beta·c
	VST1 [V21.S4, V22.S4, V23.S4], (R3)    // c[7*ldc : 7*ldc+12] = acc[7]
	RET
