//go:build arm64 && !noasm

#include "textflag.h"

// NEON kernels for the non-GEMM primitives of package kernels. Every kernel
// vectorizes over the contiguous column index, 4 float32 per Q register, with
// 16-column and 4-column blocks and a 1-column tail. The 1-column tails use
// scalar FP instructions, or the block's vector code on lane 0 only (FMOVS
// loads a single float into lane 0 and zeroes lanes 1-3; FMOVS stores lane
// 0), so that tails get the same exp and the same operation order as the
// vector blocks. Nothing outside the elements of the equivalent Go loop is
// read or written.
//
// The Go assembler lacks the vector floating-point arithmetic of A64
// Advanced SIMD, so those instructions are emitted as WORDs by the macros
// below, from the encodings of the Arm ARM (C7.2, .4S arrangement: Q=1,
// sz=0). Their operands are vector register numbers in Go operand order
// (sources first, destination last): OP(m, n, d) is "op vd.4s, vn.4s, vm.4s",
// i.e. Vd = Vn op Vm. Every encoding was checked against
// aarch64-linux-gnu-as and by disassembling the built kernels.

// fadd vd.4s, vn.4s, vm.4s: Vd = Vn + Vm
#define VFADD(m, n, d) WORD $(0x4e20d400 | ((m)<<16) | ((n)<<5) | (d))
// fsub vd.4s, vn.4s, vm.4s: Vd = Vn - Vm
#define VFSUB(m, n, d) WORD $(0x4ea0d400 | ((m)<<16) | ((n)<<5) | (d))
// fmul vd.4s, vn.4s, vm.4s: Vd = Vn * Vm
#define VFMUL(m, n, d) WORD $(0x6e20dc00 | ((m)<<16) | ((n)<<5) | (d))
// fdiv vd.4s, vn.4s, vm.4s: Vd = Vn / Vm
#define VFDIV(m, n, d) WORD $(0x6e20fc00 | ((m)<<16) | ((n)<<5) | (d))
// fmax vd.4s, vn.4s, vm.4s: Vd = max(Vn, Vm), NaN if either is NaN
#define VFMAX(m, n, d) WORD $(0x4e20f400 | ((m)<<16) | ((n)<<5) | (d))
// fmin vd.4s, vn.4s, vm.4s: Vd = min(Vn, Vm), NaN if either is NaN
#define VFMIN(m, n, d) WORD $(0x4ea0f400 | ((m)<<16) | ((n)<<5) | (d))
// faddp vd.4s, vn.4s, vm.4s: Vd = {Vn[0]+Vn[1], Vn[2]+Vn[3], Vm[0]+Vm[1], Vm[2]+Vm[3]}
#define VFADDP(m, n, d) WORD $(0x6e20d400 | ((m)<<16) | ((n)<<5) | (d))
// fmla vd.4s, vn.4s, vm.4s: Vd += Vn * Vm (fused; same as Go's VFMLA)
#define VFMLAW(m, n, d) WORD $(0x4e20cc00 | ((m)<<16) | ((n)<<5) | (d))
// fmls vd.4s, vn.4s, vm.4s: Vd -= Vn * Vm (fused; same as Go's VFMLS)
#define VFMLSW(m, n, d) WORD $(0x4ea0cc00 | ((m)<<16) | ((n)<<5) | (d))
// mov vd.16b, vn.16b (orr vd, vn, vn): Vd = Vn
#define VCOPY(n, d) WORD $(0x4ea01c00 | ((n)<<16) | ((n)<<5) | (d))
// fsqrt vd.4s, vn.4s: Vd = sqrt(Vn), correctly rounded
#define VFSQRT(n, d) WORD $(0x6ea1f800 | ((n)<<5) | (d))
// fneg vd.4s, vn.4s: Vd = -Vn
#define VFNEG(n, d) WORD $(0x6ea0f800 | ((n)<<5) | (d))
// fcvtns vd.4s, vn.4s: Vd = int32(round-to-nearest-even(Vn))
#define VFCVTNS(n, d) WORD $(0x4e21a800 | ((n)<<5) | (d))
// scvtf vd.4s, vn.4s: Vd = float32(int32 Vn)
#define VSCVTF(n, d) WORD $(0x4e21d800 | ((n)<<5) | (d))
// sshr vd.4s, vn.4s, #1: Vd = int32 Vn >> 1 (arithmetic)
#define VSSHR1(n, d) WORD $(0x4f3f0400 | ((n)<<5) | (d))
// shl vd.4s, vn.4s, #23: Vd = int32 Vn << 23
#define VSHL23(n, d) WORD $(0x4f375400 | ((n)<<5) | (d))
// add vd.4s, vn.4s, vm.4s: Vd = Vn + Vm (int32)
#define VIADD(m, n, d) WORD $(0x4ea08400 | ((m)<<16) | ((n)<<5) | (d))
// sub vd.4s, vn.4s, vm.4s: Vd = Vn - Vm (int32)
#define VISUB(m, n, d) WORD $(0x6ea08400 | ((m)<<16) | ((n)<<5) | (d))

// Constant registers of the kernels that compute exp (set by EXPCONST).
#define cONE 19   // V19 = 1.0
#define cHI 20    // V20 = 88.7228394, ln(MaxFloat32): exp input upper clamp
#define cLO 21    // V21 = -105, exp input lower clamp: exp(-105) rounds to 0
#define cLOG2E 22 // V22 = log2(e)
#define cLN2HI 23 // V23 = 0.693359375, ln 2 high part (Cody-Waite)
#define cLN2LO 24 // V24 = -2.12194440e-4, ln 2 low part: ln 2 = hi + lo
#define cP0 25    // V25..V30: Cephes expf coefficients of e^r ≈ 1 + r + r²·P(r)
#define cP1 26
#define cP2 27
#define cP3 28
#define cP4 29
#define cP5 30
#define cBIAS 31  // V31 = int32 127, the float32 exponent bias

// EXPCONST loads the exp constants into V19..V31, using R16.
#define EXPCONST \
	MOVW $0x3f800000, R16; VDUP R16, V19.S4; \
	MOVW $0x42b17218, R16; VDUP R16, V20.S4; \
	MOVW $0xc2d20000, R16; VDUP R16, V21.S4; \
	MOVW $0x3fb8aa3b, R16; VDUP R16, V22.S4; \
	MOVW $0x3f318000, R16; VDUP R16, V23.S4; \
	MOVW $0xb95e8083, R16; VDUP R16, V24.S4; \
	MOVW $0x39506967, R16; VDUP R16, V25.S4; \
	MOVW $0x3ab743ce, R16; VDUP R16, V26.S4; \
	MOVW $0x3c088908, R16; VDUP R16, V27.S4; \
	MOVW $0x3d2aa9c1, R16; VDUP R16, V28.S4; \
	MOVW $0x3e2aaaaa, R16; VDUP R16, V29.S4; \
	MOVW $0x3f000000, R16; VDUP R16, V30.S4; \
	MOVW $127, R16; VDUP R16, V31.S4

// EXP(x, n, t, z, p) computes Vx = exp(Vx) on 4 lanes, clobbering Vn, Vt,
// Vz and Vp; the constants must be loaded (EXPCONST). In Go terms, per lane:
//
//	x = min(max(x, -105), 88.7228394)     // NaN stays NaN
//	k := int32(math.RoundToEven(x * log2e)) // VFCVTNS
//	t := float32(k)
//	r := x - t*ln2hi - t*ln2lo            // fused, |r| <= ln2/2
//	p := ((((P0*r+P1)*r+P2)*r+P3)*r+P4)*r + P5
//	e := (1 + r) + p*(r*r)                // e^r, Cephes expf polynomial
//	k1 := k >> 1; k2 := k - k1            // 2^k as 2^k1·2^k2, both normal
//	x = e * 2^k1 * 2^k2                   // exponent fields (k+127)<<23
//
// Splitting 2^k keeps both factors normal for k in [-151, 128], so results
// underflow gradually to 0 below -87.3 (exactly 0 below about -103.9) and
// overflow to +Inf above 88.72, like float32(math.Exp(x)).
#define EXP(x, n, t, z, p) \
	VFMIN(cHI, x, x); \
	VFMAX(cLO, x, x); \
	VFMUL(cLOG2E, x, t); \
	VFCVTNS(t, n); \
	VSCVTF(n, t); \
	VFMLSW(cLN2HI, t, x); \
	VFMLSW(cLN2LO, t, x); \
	VFMUL(x, x, z); \
	VCOPY(cP1, p); \
	VFMLAW(x, cP0, p); \
	VCOPY(cP2, t); \
	VFMLAW(x, p, t); \
	VCOPY(cP3, p); \
	VFMLAW(x, t, p); \
	VCOPY(cP4, t); \
	VFMLAW(x, p, t); \
	VCOPY(cP5, p); \
	VFMLAW(x, t, p); \
	VFADD(cONE, x, t); \
	VFMLAW(z, p, t); \
	VSSHR1(n, x); \
	VISUB(x, n, n); \
	VIADD(cBIAS, x, x); \
	VSHL23(x, x); \
	VIADD(cBIAS, n, n); \
	VSHL23(n, n); \
	VFMUL(x, t, t); \
	VFMUL(n, t, x)

// ---------------------------------------------------------------------------
// func ExpNEON(x, y []float32)
// y[i] = exp(x[i]) for i < len(x). Vectors: V0-V3 values, V4-V7, V8-V11,
// V12-V15, V16-V18 exp temporaries.
#define ePX R0 // x pointer
#define ePY R1 // y pointer
#define eN R2  // elements left

TEXT ·ExpNEON(SB), NOSPLIT, $0-48
	MOVD x_base+0(FP), ePX // ePX = &x[0]
	MOVD x_len+8(FP), eN   // eN = len(x)
	MOVD y_base+24(FP), ePY // ePY = &y[0]
	EXPCONST               // V19..V31 = exp constants

exp16:
	CMP  $16, eN                                   // at least 16 left?
	BLT  exp4
	VLD1.P 64(ePX), [V0.S4, V1.S4, V2.S4, V3.S4]   // V0..V3 = x[i:i+16]
	EXP(0, 4, 5, 6, 7)                             // V0 = exp(V0)
	EXP(1, 8, 9, 10, 11)                           // V1 = exp(V1)
	EXP(2, 12, 13, 14, 15)                         // V2 = exp(V2)
	EXP(3, 16, 17, 18, 4)                          // V3 = exp(V3)
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(ePY)   // y[i:i+16] = V0..V3
	SUB  $16, eN                                   // eN -= 16
	B    exp16

exp4:
	CMP  $4, eN              // at least 4 left?
	BLT  exp1
	VLD1.P 16(ePX), [V0.S4]  // V0 = x[i:i+4]
	EXP(0, 4, 5, 6, 7)       // V0 = exp(V0)
	VST1.P [V0.S4], 16(ePY)  // y[i:i+4] = V0
	SUB  $4, eN              // eN -= 4
	B    exp4

exp1:
	CBZ  eN, expdone         // done?
	FMOVS.P 4(ePX), F0       // V0 = {x[i], 0, 0, 0}
	EXP(0, 4, 5, 6, 7)       // V0 = exp(V0)
	FMOVS.P F0, 4(ePY)       // y[i] = V0[0]
	SUB  $1, eN              // eN--
	B    exp1

expdone:
	RET

#undef ePX
#undef ePY
#undef eN

// ---------------------------------------------------------------------------
// func GemvNNEON(m, n int, a []float32, lda int, x, y []float32)
// y[r] += a[r,:n]·x[:n]. Rows in blocks of 4 sharing the x loads, 8 columns
// per step into 8 accumulators: V0..V3 (columns 0-3 of the step, rows 0-3)
// and V4..V7 (columns 4-7; also the lane-0 tail), reduced with FADDP.
#define gM R0   // rows left
#define gN R1   // n
#define gA R2   // &a[r*lda]
#define gLD R3  // lda in bytes
#define gX R4   // &x[0]
#define gY R5   // &y[r]
#define gP0 R6  // row pointers
#define gP1 R7
#define gP2 R8
#define gP3 R9
#define gPX R10 // x pointer
#define gC R11  // columns left

TEXT ·GemvNNEON(SB), NOSPLIT, $0-96
	MOVD m+0(FP), gM       // gM = m
	MOVD n+8(FP), gN       // gN = n
	MOVD a_base+16(FP), gA // gA = &a[0]
	MOVD lda+40(FP), gLD   // gLD = lda
	MOVD x_base+48(FP), gX // gX = &x[0]
	MOVD y_base+72(FP), gY // gY = &y[0]
	LSL  $2, gLD           // gLD = lda*4 bytes
	CMP  $4, gM            // fewer than 4 rows?
	BLT  gnrow1

gnrow4:
	MOVD gA, gP0        // gP0 = &a[r*lda]
	ADD  gLD, gP0, gP1  // gP1 = row r+1
	ADD  gLD, gP1, gP2  // gP2 = row r+2
	ADD  gLD, gP2, gP3  // gP3 = row r+3
	MOVD gX, gPX        // gPX = &x[0]
	MOVD gN, gC         // gC = n
	VEOR V0.B16, V0.B16, V0.B16 // accumulators = 0
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	VEOR V4.B16, V4.B16, V4.B16
	VEOR V5.B16, V5.B16, V5.B16
	VEOR V6.B16, V6.B16, V6.B16
	VEOR V7.B16, V7.B16, V7.B16
	CMP  $8, gC         // fewer than 8 columns?
	BLT  gn4c4

gn4c8:
	VLD1.P 32(gPX), [V16.S4, V17.S4] // V16,V17 = x[c:c+8]
	VLD1.P 32(gP0), [V18.S4, V19.S4] // row r
	VLD1.P 32(gP1), [V20.S4, V21.S4] // row r+1
	VLD1.P 32(gP2), [V22.S4, V23.S4] // row r+2
	VLD1.P 32(gP3), [V24.S4, V25.S4] // row r+3
	VFMLA V16.S4, V18.S4, V0.S4      // V0 += x·a[r]
	VFMLA V17.S4, V19.S4, V4.S4      // V4 += x·a[r]
	VFMLA V16.S4, V20.S4, V1.S4      // V1 += x·a[r+1]
	VFMLA V17.S4, V21.S4, V5.S4      // V5 += x·a[r+1]
	VFMLA V16.S4, V22.S4, V2.S4      // V2 += x·a[r+2]
	VFMLA V17.S4, V23.S4, V6.S4      // V6 += x·a[r+2]
	VFMLA V16.S4, V24.S4, V3.S4      // V3 += x·a[r+3]
	VFMLA V17.S4, V25.S4, V7.S4      // V7 += x·a[r+3]
	SUB  $8, gC                      // gC -= 8
	CMP  $8, gC                      // 8 more?
	BGE  gn4c8

gn4c4:
	CMP  $4, gC                 // fewer than 4 columns?
	BLT  gn4c1
	VLD1.P 16(gPX), [V16.S4]    // V16 = x[c:c+4]
	VLD1.P 16(gP0), [V18.S4]    // rows r..r+3
	VLD1.P 16(gP1), [V20.S4]
	VLD1.P 16(gP2), [V22.S4]
	VLD1.P 16(gP3), [V24.S4]
	VFMLA V16.S4, V18.S4, V0.S4 // V0 += x·a[r]
	VFMLA V16.S4, V20.S4, V1.S4 // V1 += x·a[r+1]
	VFMLA V16.S4, V22.S4, V2.S4 // V2 += x·a[r+2]
	VFMLA V16.S4, V24.S4, V3.S4 // V3 += x·a[r+3]
	SUB  $4, gC                 // gC -= 4

gn4c1:
	CBZ  gC, gn4sum             // no tail?
	FMOVS.P 4(gPX), F16         // V16 = {x[c], 0, 0, 0}
	FMOVS.P 4(gP0), F18         // lane 0 of rows r..r+3
	FMOVS.P 4(gP1), F20
	FMOVS.P 4(gP2), F22
	FMOVS.P 4(gP3), F24
	VFMLA V16.S4, V18.S4, V4.S4 // V4[0] += x[c]·a[r,c]
	VFMLA V16.S4, V20.S4, V5.S4 // V5[0] += x[c]·a[r+1,c]
	VFMLA V16.S4, V22.S4, V6.S4 // V6[0] += x[c]·a[r+2,c]
	VFMLA V16.S4, V24.S4, V7.S4 // V7[0] += x[c]·a[r+3,c]
	SUB  $1, gC                 // gC--
	B    gn4c1

gn4sum:
	VFADD(4, 0, 0)           // V0 += V4
	VFADD(5, 1, 1)           // V1 += V5
	VFADD(6, 2, 2)           // V2 += V6
	VFADD(7, 3, 3)           // V3 += V7
	VFADDP(1, 0, 0)          // V0 = {V0 pair sums, V1 pair sums}
	VFADDP(3, 2, 2)          // V2 = {V2 pair sums, V3 pair sums}
	VFADDP(2, 0, 0)          // V0 = {Σa[r]x, Σa[r+1]x, Σa[r+2]x, Σa[r+3]x}
	VLD1 (gY), [V16.S4]      // V16 = y[r:r+4]
	VFADD(0, 16, 16)         // V16 += V0
	VST1.P [V16.S4], 16(gY)  // y[r:r+4] = V16
	ADD  gLD<<2, gA          // gA += 4 rows
	SUB  $4, gM              // gM -= 4
	CMP  $4, gM              // 4 more rows?
	BGE  gnrow4

gnrow1:
	CBZ  gM, gndone            // no rows left?
	MOVD gA, gP0               // gP0 = &a[r*lda]
	MOVD gX, gPX               // gPX = &x[0]
	MOVD gN, gC                // gC = n
	VEOR V0.B16, V0.B16, V0.B16 // accumulators = 0
	VEOR V4.B16, V4.B16, V4.B16

gn1c8:
	CMP  $8, gC                      // fewer than 8 columns?
	BLT  gn1c4
	VLD1.P 32(gPX), [V16.S4, V17.S4] // V16,V17 = x[c:c+8]
	VLD1.P 32(gP0), [V18.S4, V19.S4] // V18,V19 = a[r,c:c+8]
	VFMLA V16.S4, V18.S4, V0.S4      // V0 += x·a
	VFMLA V17.S4, V19.S4, V4.S4      // V4 += x·a
	SUB  $8, gC                      // gC -= 8
	B    gn1c8

gn1c4:
	CMP  $4, gC                 // fewer than 4 columns?
	BLT  gn1c1
	VLD1.P 16(gPX), [V16.S4]    // V16 = x[c:c+4]
	VLD1.P 16(gP0), [V18.S4]    // V18 = a[r,c:c+4]
	VFMLA V16.S4, V18.S4, V0.S4 // V0 += x·a
	SUB  $4, gC                 // gC -= 4

gn1c1:
	CBZ  gC, gn1sum             // no tail?
	FMOVS.P 4(gPX), F16         // V16 = {x[c], 0, 0, 0}
	FMOVS.P 4(gP0), F18         // V18 = {a[r,c], 0, 0, 0}
	VFMLA V16.S4, V18.S4, V4.S4 // V4[0] += x[c]·a[r,c]
	SUB  $1, gC                 // gC--
	B    gn1c1

gn1sum:
	VFADD(4, 0, 0)          // V0 += V4
	VFADDP(0, 0, 0)         // V0 = pair sums
	VFADDP(0, 0, 0)         // V0[0] = Σ a[r,:]·x
	FMOVS (gY), F16         // F16 = y[r]
	FADDS F0, F16, F16      // F16 += Σ
	FMOVS.P F16, 4(gY)      // y[r] = F16
	ADD  gLD, gA            // next row
	SUB  $1, gM             // gM--
	B    gnrow1

gndone:
	RET

#undef gM
#undef gN
#undef gA
#undef gLD
#undef gX
#undef gY
#undef gP0
#undef gP1
#undef gP2
#undef gP3
#undef gPX
#undef gC

// ---------------------------------------------------------------------------
// func GemvTNEON(m, n int, a []float32, lda int, x, y []float32)
// y[c] += Σ_r x[r]·a[r,c]. Column blocks of 16 (then 4, then 1) keep y in
// registers; rows go two at a time into two accumulator sets (V0..V3 even
// rows, V4..V7 odd rows) that are added at the end.
#define tM R0   // m
#define tN R1   // columns left
#define tA R2   // &a[0,c]
#define tLD R3  // lda in bytes
#define tX R4   // &x[0]
#define tY R5   // &y[c]
#define tP R6   // &a[r,c]
#define tPX R7  // &x[r]
#define tR R8   // rows left

TEXT ·GemvTNEON(SB), NOSPLIT, $0-96
	MOVD m+0(FP), tM       // tM = m
	MOVD n+8(FP), tN       // tN = n
	MOVD a_base+16(FP), tA // tA = &a[0]
	MOVD lda+40(FP), tLD   // tLD = lda
	MOVD x_base+48(FP), tX // tX = &x[0]
	MOVD y_base+72(FP), tY // tY = &y[0]
	LSL  $2, tLD           // tLD = lda*4 bytes

gtc16:
	CMP  $16, tN                              // fewer than 16 columns?
	BLT  gtc4
	VLD1 (tY), [V0.S4, V1.S4, V2.S4, V3.S4]   // V0..V3 = y[c:c+16]
	VEOR V4.B16, V4.B16, V4.B16               // V4..V7 = 0
	VEOR V5.B16, V5.B16, V5.B16
	VEOR V6.B16, V6.B16, V6.B16
	VEOR V7.B16, V7.B16, V7.B16
	MOVD tA, tP                               // tP = &a[0,c]
	MOVD tX, tPX                              // tPX = &x[0]
	MOVD tM, tR                               // tR = m
	CMP  $2, tR                               // fewer than 2 rows?
	BLT  gt16r1

gt16r2:
	VLD1R.P 4(tPX), [V16.S4]                           // V16 = x[r] ×4
	VLD1R.P 4(tPX), [V17.S4]                           // V17 = x[r+1] ×4
	VLD1.P (tP)(tLD), [V18.S4, V19.S4, V20.S4, V21.S4] // a[r,c:c+16]
	VLD1.P (tP)(tLD), [V22.S4, V23.S4, V24.S4, V25.S4] // a[r+1,c:c+16]
	VFMLA V16.S4, V18.S4, V0.S4                        // V0..V3 += x[r]·a[r]
	VFMLA V16.S4, V19.S4, V1.S4
	VFMLA V16.S4, V20.S4, V2.S4
	VFMLA V16.S4, V21.S4, V3.S4
	VFMLA V17.S4, V22.S4, V4.S4                        // V4..V7 += x[r+1]·a[r+1]
	VFMLA V17.S4, V23.S4, V5.S4
	VFMLA V17.S4, V24.S4, V6.S4
	VFMLA V17.S4, V25.S4, V7.S4
	SUB  $2, tR                                        // tR -= 2
	CMP  $2, tR                                        // 2 more?
	BGE  gt16r2

gt16r1:
	CBZ  tR, gt16st                              // even row count?
	VLD1R (tPX), [V16.S4]                        // V16 = x[r] ×4
	VLD1 (tP), [V18.S4, V19.S4, V20.S4, V21.S4]  // a[r,c:c+16]
	VFMLA V16.S4, V18.S4, V0.S4                  // V0..V3 += x[r]·a[r]
	VFMLA V16.S4, V19.S4, V1.S4
	VFMLA V16.S4, V20.S4, V2.S4
	VFMLA V16.S4, V21.S4, V3.S4

gt16st:
	VFADD(4, 0, 0)                                // V0 += V4
	VFADD(5, 1, 1)                                // V1 += V5
	VFADD(6, 2, 2)                                // V2 += V6
	VFADD(7, 3, 3)                                // V3 += V7
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(tY)   // y[c:c+16] = V0..V3
	ADD  $64, tA                                  // next 16 columns
	SUB  $16, tN                                  // tN -= 16
	B    gtc16

gtc4:
	CMP  $4, tN                 // fewer than 4 columns?
	BLT  gtc1
	VLD1 (tY), [V0.S4]          // V0 = y[c:c+4]
	VEOR V4.B16, V4.B16, V4.B16 // V4 = 0
	MOVD tA, tP                 // tP = &a[0,c]
	MOVD tX, tPX                // tPX = &x[0]
	MOVD tM, tR                 // tR = m
	CMP  $2, tR                 // fewer than 2 rows?
	BLT  gt4r1

gt4r2:
	VLD1R.P 4(tPX), [V16.S4]      // V16 = x[r] ×4
	VLD1R.P 4(tPX), [V17.S4]      // V17 = x[r+1] ×4
	VLD1.P (tP)(tLD), [V18.S4]    // V18 = a[r,c:c+4]
	VLD1.P (tP)(tLD), [V22.S4]    // V22 = a[r+1,c:c+4]
	VFMLA V16.S4, V18.S4, V0.S4   // V0 += x[r]·a[r]
	VFMLA V17.S4, V22.S4, V4.S4   // V4 += x[r+1]·a[r+1]
	SUB  $2, tR                   // tR -= 2
	CMP  $2, tR                   // 2 more?
	BGE  gt4r2

gt4r1:
	CBZ  tR, gt4st              // even row count?
	VLD1R (tPX), [V16.S4]       // V16 = x[r] ×4
	VLD1 (tP), [V18.S4]         // V18 = a[r,c:c+4]
	VFMLA V16.S4, V18.S4, V0.S4 // V0 += x[r]·a[r]

gt4st:
	VFADD(4, 0, 0)          // V0 += V4
	VST1.P [V0.S4], 16(tY)  // y[c:c+4] = V0
	ADD  $16, tA            // next 4 columns
	SUB  $4, tN             // tN -= 4
	B    gtc4

gtc1:
	CBZ  tN, gtdone             // done?
	FMOVS (tY), F0              // F0 = y[c] (even rows)
	VEOR V1.B16, V1.B16, V1.B16 // F1 = 0 (odd rows)
	MOVD tA, tP                 // tP = &a[0,c]
	MOVD tX, tPX                // tPX = &x[0]
	MOVD tM, tR                 // tR = m

gt1r2:
	CMP  $2, tR                 // fewer than 2 rows?
	BLT  gt1r1
	FMOVS.P 4(tPX), F16         // F16 = x[r]
	FMOVS.P 4(tPX), F17         // F17 = x[r+1]
	FMOVS (tP), F18             // F18 = a[r,c]
	ADD  tLD, tP                // next row
	FMOVS (tP), F19             // F19 = a[r+1,c]
	ADD  tLD, tP                // next row
	FMADDS F18, F0, F16, F0     // F0 += x[r]·a[r,c]
	FMADDS F19, F1, F17, F1     // F1 += x[r+1]·a[r+1,c]
	SUB  $2, tR                 // tR -= 2
	B    gt1r2

gt1r1:
	CBZ  tR, gt1st              // even row count?
	FMOVS (tPX), F16            // F16 = x[r]
	FMOVS (tP), F18             // F18 = a[r,c]
	FMADDS F18, F0, F16, F0     // F0 += x[r]·a[r,c]

gt1st:
	FADDS F1, F0, F0            // F0 += F1
	FMOVS.P F0, 4(tY)           // y[c] = F0
	ADD  $4, tA              // next column
	SUB  $1, tN              // tN--
	B    gtc1

gtdone:
	RET

#undef tM
#undef tN
#undef tA
#undef tLD
#undef tX
#undef tY
#undef tP
#undef tPX
#undef tR

// ---------------------------------------------------------------------------
// func GerNEON(m, n int, x, y, a []float32, lda int)
// a[r,c] += x[r]·y[c]: row by row, x[r] broadcast in V16, 16/4/1 columns.
#define rM R0   // rows left
#define rN R1   // n
#define rX R2   // &x[r]
#define rY R3   // &y[0]
#define rA R4   // &a[r*lda]
#define rLD R5  // lda in bytes
#define rP R6   // &a[r,c]
#define rPY R7  // &y[c]
#define rC R8   // columns left

TEXT ·GerNEON(SB), NOSPLIT, $0-96
	MOVD m+0(FP), rM       // rM = m
	MOVD n+8(FP), rN       // rN = n
	MOVD x_base+16(FP), rX // rX = &x[0]
	MOVD y_base+40(FP), rY // rY = &y[0]
	MOVD a_base+64(FP), rA // rA = &a[0]
	MOVD lda+88(FP), rLD   // rLD = lda
	LSL  $2, rLD           // rLD = lda*4 bytes

gerrow:
	CBZ  rM, gerdone         // rows done?
	VLD1R.P 4(rX), [V16.S4]  // V16 = x[r] ×4 (F16 = x[r])
	MOVD rA, rP              // rP = &a[r,0]
	MOVD rY, rPY             // rPY = &y[0]
	MOVD rN, rC              // rC = n

gerc16:
	CMP  $16, rC                                  // fewer than 16 columns?
	BLT  gerc4
	VLD1.P 64(rPY), [V0.S4, V1.S4, V2.S4, V3.S4]  // V0..V3 = y[c:c+16]
	VLD1 (rP), [V4.S4, V5.S4, V6.S4, V7.S4]       // V4..V7 = a[r,c:c+16]
	VFMLA V16.S4, V0.S4, V4.S4                    // V4..V7 += x[r]·y
	VFMLA V16.S4, V1.S4, V5.S4
	VFMLA V16.S4, V2.S4, V6.S4
	VFMLA V16.S4, V3.S4, V7.S4
	VST1.P [V4.S4, V5.S4, V6.S4, V7.S4], 64(rP)   // a[r,c:c+16] = V4..V7
	SUB  $16, rC                                  // rC -= 16
	B    gerc16

gerc4:
	CMP  $4, rC                 // fewer than 4 columns?
	BLT  gerc1
	VLD1.P 16(rPY), [V0.S4]     // V0 = y[c:c+4]
	VLD1 (rP), [V4.S4]          // V4 = a[r,c:c+4]
	VFMLA V16.S4, V0.S4, V4.S4  // V4 += x[r]·y
	VST1.P [V4.S4], 16(rP)      // a[r,c:c+4] = V4
	SUB  $4, rC                 // rC -= 4
	B    gerc4

gerc1:
	CBZ  rC, gernext         // columns done?
	FMOVS.P 4(rPY), F0       // F0 = y[c]
	FMOVS (rP), F4           // F4 = a[r,c]
	FMADDS F0, F4, F16, F4   // F4 += x[r]·y[c]
	FMOVS.P F4, 4(rP)        // a[r,c] = F4
	SUB  $1, rC              // rC--
	B    gerc1

gernext:
	ADD  rLD, rA             // next row
	SUB  $1, rM              // rM--
	B    gerrow

gerdone:
	RET

#undef rM
#undef rN
#undef rX
#undef rY
#undef rA
#undef rLD
#undef rP
#undef rPY
#undef rC

// ---------------------------------------------------------------------------
// func MulAddRowsNEON(k, n int, a []float32, lda int, x []float32, ldx int, y []float32)
// y[c] += Σ_l a[l,c]·x[l,c]. Column blocks of 16/4/1 keep y in registers;
// row pairs go into two accumulator sets (V0..V3, V4..V7).
#define mK R0   // k
#define mN R1   // columns left
#define mA R2   // &a[0,c]
#define mLA R3  // lda in bytes
#define mX R4   // &x[0,c]
#define mLX R5  // ldx in bytes
#define mY R6   // &y[c]
#define mPA R7  // &a[l,c]
#define mPX R8  // &x[l,c]
#define mL R9   // rows left

TEXT ·MulAddRowsNEON(SB), NOSPLIT, $0-104
	MOVD k+0(FP), mK       // mK = k
	MOVD n+8(FP), mN       // mN = n
	MOVD a_base+16(FP), mA // mA = &a[0]
	MOVD lda+40(FP), mLA   // mLA = lda
	MOVD x_base+48(FP), mX // mX = &x[0]
	MOVD ldx+72(FP), mLX   // mLX = ldx
	MOVD y_base+80(FP), mY // mY = &y[0]
	LSL  $2, mLA           // mLA = lda*4 bytes
	LSL  $2, mLX           // mLX = ldx*4 bytes

mac16:
	CMP  $16, mN                              // fewer than 16 columns?
	BLT  mac4
	VLD1 (mY), [V0.S4, V1.S4, V2.S4, V3.S4]   // V0..V3 = y[c:c+16]
	VEOR V4.B16, V4.B16, V4.B16               // V4..V7 = 0
	VEOR V5.B16, V5.B16, V5.B16
	VEOR V6.B16, V6.B16, V6.B16
	VEOR V7.B16, V7.B16, V7.B16
	MOVD mA, mPA                              // mPA = &a[0,c]
	MOVD mX, mPX                              // mPX = &x[0,c]
	MOVD mK, mL                               // mL = k
	CMP  $2, mL                               // fewer than 2 rows?
	BLT  ma16r1

ma16r2:
	VLD1.P (mPA)(mLA), [V16.S4, V17.S4, V18.S4, V19.S4] // a[l,c:c+16]
	VLD1.P (mPX)(mLX), [V20.S4, V21.S4, V22.S4, V23.S4] // x[l,c:c+16]
	VLD1.P (mPA)(mLA), [V24.S4, V25.S4, V26.S4, V27.S4] // a[l+1,c:c+16]
	VLD1.P (mPX)(mLX), [V28.S4, V29.S4, V30.S4, V31.S4] // x[l+1,c:c+16]
	VFMLA V20.S4, V16.S4, V0.S4                         // V0..V3 += a[l]·x[l]
	VFMLA V21.S4, V17.S4, V1.S4
	VFMLA V22.S4, V18.S4, V2.S4
	VFMLA V23.S4, V19.S4, V3.S4
	VFMLA V28.S4, V24.S4, V4.S4                         // V4..V7 += a[l+1]·x[l+1]
	VFMLA V29.S4, V25.S4, V5.S4
	VFMLA V30.S4, V26.S4, V6.S4
	VFMLA V31.S4, V27.S4, V7.S4
	SUB  $2, mL                                         // mL -= 2
	CMP  $2, mL                                         // 2 more?
	BGE  ma16r2

ma16r1:
	CBZ  mL, ma16st                               // even row count?
	VLD1 (mPA), [V16.S4, V17.S4, V18.S4, V19.S4]  // a[l,c:c+16]
	VLD1 (mPX), [V20.S4, V21.S4, V22.S4, V23.S4]  // x[l,c:c+16]
	VFMLA V20.S4, V16.S4, V0.S4                   // V0..V3 += a[l]·x[l]
	VFMLA V21.S4, V17.S4, V1.S4
	VFMLA V22.S4, V18.S4, V2.S4
	VFMLA V23.S4, V19.S4, V3.S4

ma16st:
	VFADD(4, 0, 0)                                // V0 += V4
	VFADD(5, 1, 1)                                // V1 += V5
	VFADD(6, 2, 2)                                // V2 += V6
	VFADD(7, 3, 3)                                // V3 += V7
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(mY)   // y[c:c+16] = V0..V3
	ADD  $64, mA                                  // next 16 columns
	ADD  $64, mX
	SUB  $16, mN                                  // mN -= 16
	B    mac16

mac4:
	CMP  $4, mN                 // fewer than 4 columns?
	BLT  mac1
	VLD1 (mY), [V0.S4]          // V0 = y[c:c+4]
	VEOR V4.B16, V4.B16, V4.B16 // V4 = 0
	MOVD mA, mPA                // mPA = &a[0,c]
	MOVD mX, mPX                // mPX = &x[0,c]
	MOVD mK, mL                 // mL = k
	CMP  $2, mL                 // fewer than 2 rows?
	BLT  ma4r1

ma4r2:
	VLD1.P (mPA)(mLA), [V16.S4] // V16 = a[l,c:c+4]
	VLD1.P (mPX)(mLX), [V20.S4] // V20 = x[l,c:c+4]
	VLD1.P (mPA)(mLA), [V24.S4] // V24 = a[l+1,c:c+4]
	VLD1.P (mPX)(mLX), [V28.S4] // V28 = x[l+1,c:c+4]
	VFMLA V20.S4, V16.S4, V0.S4 // V0 += a[l]·x[l]
	VFMLA V28.S4, V24.S4, V4.S4 // V4 += a[l+1]·x[l+1]
	SUB  $2, mL                 // mL -= 2
	CMP  $2, mL                 // 2 more?
	BGE  ma4r2

ma4r1:
	CBZ  mL, ma4st              // even row count?
	VLD1 (mPA), [V16.S4]        // V16 = a[l,c:c+4]
	VLD1 (mPX), [V20.S4]        // V20 = x[l,c:c+4]
	VFMLA V20.S4, V16.S4, V0.S4 // V0 += a[l]·x[l]

ma4st:
	VFADD(4, 0, 0)           // V0 += V4
	VST1.P [V0.S4], 16(mY)   // y[c:c+4] = V0
	ADD  $16, mA             // next 4 columns
	ADD  $16, mX
	SUB  $4, mN              // mN -= 4
	B    mac4

mac1:
	CBZ  mN, madone             // done?
	FMOVS (mY), F0              // F0 = y[c] (even rows)
	VEOR V1.B16, V1.B16, V1.B16 // F1 = 0 (odd rows)
	MOVD mA, mPA                // mPA = &a[0,c]
	MOVD mX, mPX                // mPX = &x[0,c]
	MOVD mK, mL                 // mL = k

ma1r2:
	CMP  $2, mL                 // fewer than 2 rows?
	BLT  ma1r1
	FMOVS (mPA), F16            // F16 = a[l,c]
	FMOVS (mPX), F20            // F20 = x[l,c]
	ADD  mLA, mPA               // next row of a
	ADD  mLX, mPX               // next row of x
	FMOVS (mPA), F17            // F17 = a[l+1,c]
	FMOVS (mPX), F21            // F21 = x[l+1,c]
	ADD  mLA, mPA               // next row of a
	ADD  mLX, mPX               // next row of x
	FMADDS F20, F0, F16, F0     // F0 += a[l,c]·x[l,c]
	FMADDS F21, F1, F17, F1     // F1 += a[l+1,c]·x[l+1,c]
	SUB  $2, mL                 // mL -= 2
	B    ma1r2

ma1r1:
	CBZ  mL, ma1st              // even row count?
	FMOVS (mPA), F16            // F16 = a[l,c]
	FMOVS (mPX), F20            // F20 = x[l,c]
	FMADDS F20, F0, F16, F0     // F0 += a[l,c]·x[l,c]

ma1st:
	FADDS F1, F0, F0            // F0 += F1
	FMOVS.P F0, 4(mY)           // y[c] = F0
	ADD  $4, mA              // next column
	ADD  $4, mX
	SUB  $1, mN              // mN--
	B    mac1

madone:
	RET

#undef mK
#undef mN
#undef mA
#undef mLA
#undef mX
#undef mLX
#undef mY
#undef mPA
#undef mPX
#undef mL

// ---------------------------------------------------------------------------
// func SoftmaxColsNEON(rows, n int, l, c []float32)
// For each column i: mx = max_r l[r,i]; c[r,i] = exp(l[r,i]−mx);
// c[:,i] *= 1/Σ_r c[r,i]. Vectors: V0..V3 column max, V4..V7 sums then
// their inverses, V8..V11 values, V12..V15 exp temporaries, V19..V31
// exp constants.
#define sR R0   // rows
#define sN R1   // columns left
#define sL R2   // &l[0,i]
#define sC R3   // &c[0,i]
#define sLD R4  // row stride n*4 bytes
#define sPL R5  // &l[r,i]
#define sPC R6  // &c[r,i]
#define sK R7   // rows left

TEXT ·SoftmaxColsNEON(SB), NOSPLIT, $0-64
	MOVD rows+0(FP), sR    // sR = rows
	MOVD n+8(FP), sN       // sN = n
	MOVD l_base+16(FP), sL // sL = &l[0]
	MOVD c_base+40(FP), sC // sC = &c[0]
	LSL  $2, sN, sLD       // sLD = n*4 bytes
	CBZ  sR, smdone        // no rows: nothing to do
	EXPCONST               // V19..V31 = exp constants

smc16:
	CMP  $16, sN                                          // fewer than 16 columns?
	BLT  smc4
	MOVD sL, sPL                                          // sPL = &l[0,i]
	VLD1.P (sPL)(sLD), [V0.S4, V1.S4, V2.S4, V3.S4]       // V0..V3 = l[0,i:i+16]
	SUB  $1, sR, sK                                       // sK = rows-1

sm16max:
	CBZ  sK, sm16exp                                      // rows done?
	VLD1.P (sPL)(sLD), [V8.S4, V9.S4, V10.S4, V11.S4]     // V8..V11 = l[r,i:i+16]
	VFMAX(8, 0, 0)                                        // V0..V3 = max(V0..V3, l[r])
	VFMAX(9, 1, 1)
	VFMAX(10, 2, 2)
	VFMAX(11, 3, 3)
	SUB  $1, sK                                           // sK--
	B    sm16max

sm16exp:
	MOVD sL, sPL                                          // sPL = &l[0,i]
	MOVD sC, sPC                                          // sPC = &c[0,i]
	MOVD sR, sK                                           // sK = rows
	VEOR V4.B16, V4.B16, V4.B16                           // V4..V7 = 0
	VEOR V5.B16, V5.B16, V5.B16
	VEOR V6.B16, V6.B16, V6.B16
	VEOR V7.B16, V7.B16, V7.B16

sm16e:
	VLD1.P (sPL)(sLD), [V8.S4, V9.S4, V10.S4, V11.S4]     // V8..V11 = l[r,i:i+16]
	VFSUB(0, 8, 8)                                        // V8..V11 -= max
	VFSUB(1, 9, 9)
	VFSUB(2, 10, 10)
	VFSUB(3, 11, 11)
	EXP(8, 12, 13, 14, 15)                                // V8..V11 = exp(V8..V11)
	EXP(9, 12, 13, 14, 15)
	EXP(10, 12, 13, 14, 15)
	EXP(11, 12, 13, 14, 15)
	VST1.P [V8.S4, V9.S4, V10.S4, V11.S4], (sPC)(sLD)     // c[r,i:i+16] = V8..V11
	VFADD(8, 4, 4)                                        // V4..V7 += e
	VFADD(9, 5, 5)
	VFADD(10, 6, 6)
	VFADD(11, 7, 7)
	SUB  $1, sK                                           // sK--
	CBNZ sK, sm16e

	VFDIV(4, cONE, 4)                                     // V4..V7 = 1/sum
	VFDIV(5, cONE, 5)
	VFDIV(6, cONE, 6)
	VFDIV(7, cONE, 7)
	MOVD sC, sPC                                          // sPC = &c[0,i]
	MOVD sR, sK                                           // sK = rows

sm16n:
	VLD1 (sPC), [V8.S4, V9.S4, V10.S4, V11.S4]            // V8..V11 = c[r,i:i+16]
	VFMUL(4, 8, 8)                                        // V8..V11 *= 1/sum
	VFMUL(5, 9, 9)
	VFMUL(6, 10, 10)
	VFMUL(7, 11, 11)
	VST1.P [V8.S4, V9.S4, V10.S4, V11.S4], (sPC)(sLD)     // c[r,i:i+16] = V8..V11
	SUB  $1, sK                                           // sK--
	CBNZ sK, sm16n

	ADD  $64, sL                                          // next 16 columns
	ADD  $64, sC
	SUB  $16, sN                                          // sN -= 16
	B    smc16

smc4:
	CMP  $4, sN                    // fewer than 4 columns?
	BLT  smc1
	MOVD sL, sPL                   // sPL = &l[0,i]
	VLD1.P (sPL)(sLD), [V0.S4]     // V0 = l[0,i:i+4]
	SUB  $1, sR, sK                // sK = rows-1

sm4max:
	CBZ  sK, sm4exp                // rows done?
	VLD1.P (sPL)(sLD), [V8.S4]     // V8 = l[r,i:i+4]
	VFMAX(8, 0, 0)                 // V0 = max(V0, V8)
	SUB  $1, sK                    // sK--
	B    sm4max

sm4exp:
	MOVD sL, sPL                   // sPL = &l[0,i]
	MOVD sC, sPC                   // sPC = &c[0,i]
	MOVD sR, sK                    // sK = rows
	VEOR V4.B16, V4.B16, V4.B16    // V4 = 0

sm4e:
	VLD1.P (sPL)(sLD), [V8.S4]     // V8 = l[r,i:i+4]
	VFSUB(0, 8, 8)                 // V8 -= max
	EXP(8, 12, 13, 14, 15)         // V8 = exp(V8)
	VST1.P [V8.S4], (sPC)(sLD)     // c[r,i:i+4] = V8
	VFADD(8, 4, 4)                 // V4 += V8
	SUB  $1, sK                    // sK--
	CBNZ sK, sm4e

	VFDIV(4, cONE, 4)              // V4 = 1/sum
	MOVD sC, sPC                   // sPC = &c[0,i]
	MOVD sR, sK                    // sK = rows

sm4n:
	VLD1 (sPC), [V8.S4]            // V8 = c[r,i:i+4]
	VFMUL(4, 8, 8)                 // V8 *= 1/sum
	VST1.P [V8.S4], (sPC)(sLD)     // c[r,i:i+4] = V8
	SUB  $1, sK                    // sK--
	CBNZ sK, sm4n

	ADD  $16, sL                   // next 4 columns
	ADD  $16, sC
	SUB  $4, sN                    // sN -= 4
	B    smc4

smc1:
	CBZ  sN, smdone                // done?
	MOVD sL, sPL                   // sPL = &l[0,i]
	FMOVS (sPL), F0                // V0 = {l[0,i], 0, 0, 0}
	ADD  sLD, sPL                  // next row
	SUB  $1, sR, sK                // sK = rows-1

sm1max:
	CBZ  sK, sm1exp                // rows done?
	FMOVS (sPL), F8                // V8 = {l[r,i], 0, 0, 0}
	ADD  sLD, sPL                  // next row
	VFMAX(8, 0, 0)                 // V0 = max(V0, V8)
	SUB  $1, sK                    // sK--
	B    sm1max

sm1exp:
	MOVD sL, sPL                   // sPL = &l[0,i]
	MOVD sC, sPC                   // sPC = &c[0,i]
	MOVD sR, sK                    // sK = rows
	VEOR V4.B16, V4.B16, V4.B16    // V4 = 0

sm1e:
	FMOVS (sPL), F8                // V8 = {l[r,i], 0, 0, 0}
	ADD  sLD, sPL                  // next row
	VFSUB(0, 8, 8)                 // V8 -= max
	EXP(8, 12, 13, 14, 15)         // V8 = exp(V8)
	FMOVS F8, (sPC)                // c[r,i] = V8[0]
	ADD  sLD, sPC                  // next row
	VFADD(8, 4, 4)                 // V4 += V8
	SUB  $1, sK                    // sK--
	CBNZ sK, sm1e

	VFDIV(4, cONE, 4)              // V4 = 1/sum
	MOVD sC, sPC                   // sPC = &c[0,i]
	MOVD sR, sK                    // sK = rows

sm1n:
	FMOVS (sPC), F8                // F8 = c[r,i]
	FMULS F4, F8, F8               // F8 *= 1/sum
	FMOVS F8, (sPC)                // c[r,i] = F8
	ADD  sLD, sPC                  // next row
	SUB  $1, sK                    // sK--
	CBNZ sK, sm1n

	ADD  $4, sL                    // next column
	ADD  $4, sC
	SUB  $1, sN                    // sN--
	B    smc1

smdone:
	RET

#undef sR
#undef sN
#undef sL
#undef sC
#undef sLD
#undef sPL
#undef sPC
#undef sK

// ---------------------------------------------------------------------------
// func SoftmaxColsGradNEON(rows, n int, c, dc, dl []float32)
// For each column i: dot = Σ_r c[r,i]·dc[r,i]; dl[r,i] = c[r,i]·(dc[r,i]−dot).
// Vectors: V0..V3 dot, V4..V7 c, V8..V11 dc then dl.
#define qR R0   // rows
#define qN R1   // columns left
#define qC R2   // &c[0,i]
#define qD R3   // &dc[0,i]
#define qL R4   // &dl[0,i]
#define qLD R5  // row stride n*4 bytes
#define qPC R6  // &c[r,i]
#define qPD R7  // &dc[r,i]
#define qPL R8  // &dl[r,i]
#define qK R9   // rows left

TEXT ·SoftmaxColsGradNEON(SB), NOSPLIT, $0-88
	MOVD rows+0(FP), qR     // qR = rows
	MOVD n+8(FP), qN        // qN = n
	MOVD c_base+16(FP), qC  // qC = &c[0]
	MOVD dc_base+40(FP), qD // qD = &dc[0]
	MOVD dl_base+64(FP), qL // qL = &dl[0]
	LSL  $2, qN, qLD        // qLD = n*4 bytes
	CBZ  qR, sgdone         // no rows: nothing to do

sgc16:
	CMP  $16, qN                                        // fewer than 16 columns?
	BLT  sgc4
	VEOR V0.B16, V0.B16, V0.B16                         // V0..V3 = 0
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	MOVD qC, qPC                                        // qPC = &c[0,i]
	MOVD qD, qPD                                        // qPD = &dc[0,i]
	MOVD qR, qK                                         // qK = rows

sg16dot:
	VLD1.P (qPC)(qLD), [V4.S4, V5.S4, V6.S4, V7.S4]     // V4..V7 = c[r,i:i+16]
	VLD1.P (qPD)(qLD), [V8.S4, V9.S4, V10.S4, V11.S4]   // V8..V11 = dc[r,i:i+16]
	VFMLA V8.S4, V4.S4, V0.S4                           // V0..V3 += c·dc
	VFMLA V9.S4, V5.S4, V1.S4
	VFMLA V10.S4, V6.S4, V2.S4
	VFMLA V11.S4, V7.S4, V3.S4
	SUB  $1, qK                                         // qK--
	CBNZ qK, sg16dot

	MOVD qC, qPC                                        // qPC = &c[0,i]
	MOVD qD, qPD                                        // qPD = &dc[0,i]
	MOVD qL, qPL                                        // qPL = &dl[0,i]
	MOVD qR, qK                                         // qK = rows

sg16out:
	VLD1.P (qPC)(qLD), [V4.S4, V5.S4, V6.S4, V7.S4]     // V4..V7 = c[r,i:i+16]
	VLD1.P (qPD)(qLD), [V8.S4, V9.S4, V10.S4, V11.S4]   // V8..V11 = dc[r,i:i+16]
	VFSUB(0, 8, 8)                                      // V8..V11 = dc − dot
	VFSUB(1, 9, 9)
	VFSUB(2, 10, 10)
	VFSUB(3, 11, 11)
	VFMUL(8, 4, 8)                                      // V8..V11 = c·(dc − dot)
	VFMUL(9, 5, 9)
	VFMUL(10, 6, 10)
	VFMUL(11, 7, 11)
	VST1.P [V8.S4, V9.S4, V10.S4, V11.S4], (qPL)(qLD)   // dl[r,i:i+16] = V8..V11
	SUB  $1, qK                                         // qK--
	CBNZ qK, sg16out

	ADD  $64, qC                                        // next 16 columns
	ADD  $64, qD
	ADD  $64, qL
	SUB  $16, qN                                        // qN -= 16
	B    sgc16

sgc4:
	CMP  $4, qN                    // fewer than 4 columns?
	BLT  sgc1
	VEOR V0.B16, V0.B16, V0.B16    // V0 = 0
	MOVD qC, qPC                   // qPC = &c[0,i]
	MOVD qD, qPD                   // qPD = &dc[0,i]
	MOVD qR, qK                    // qK = rows

sg4dot:
	VLD1.P (qPC)(qLD), [V4.S4]     // V4 = c[r,i:i+4]
	VLD1.P (qPD)(qLD), [V8.S4]     // V8 = dc[r,i:i+4]
	VFMLA V8.S4, V4.S4, V0.S4      // V0 += c·dc
	SUB  $1, qK                    // qK--
	CBNZ qK, sg4dot

	MOVD qC, qPC                   // qPC = &c[0,i]
	MOVD qD, qPD                   // qPD = &dc[0,i]
	MOVD qL, qPL                   // qPL = &dl[0,i]
	MOVD qR, qK                    // qK = rows

sg4out:
	VLD1.P (qPC)(qLD), [V4.S4]     // V4 = c[r,i:i+4]
	VLD1.P (qPD)(qLD), [V8.S4]     // V8 = dc[r,i:i+4]
	VFSUB(0, 8, 8)                 // V8 = dc − dot
	VFMUL(8, 4, 8)                 // V8 = c·(dc − dot)
	VST1.P [V8.S4], (qPL)(qLD)     // dl[r,i:i+4] = V8
	SUB  $1, qK                    // qK--
	CBNZ qK, sg4out

	ADD  $16, qC                   // next 4 columns
	ADD  $16, qD
	ADD  $16, qL
	SUB  $4, qN                    // qN -= 4
	B    sgc4

sgc1:
	CBZ  qN, sgdone                // done?
	VEOR V0.B16, V0.B16, V0.B16    // F0 = 0
	MOVD qC, qPC                   // qPC = &c[0,i]
	MOVD qD, qPD                   // qPD = &dc[0,i]
	MOVD qR, qK                    // qK = rows

sg1dot:
	FMOVS (qPC), F4                // F4 = c[r,i]
	FMOVS (qPD), F8                // F8 = dc[r,i]
	ADD  qLD, qPC                  // next row
	ADD  qLD, qPD
	FMADDS F8, F0, F4, F0          // F0 += c·dc
	SUB  $1, qK                    // qK--
	CBNZ qK, sg1dot

	MOVD qC, qPC                   // qPC = &c[0,i]
	MOVD qD, qPD                   // qPD = &dc[0,i]
	MOVD qL, qPL                   // qPL = &dl[0,i]
	MOVD qR, qK                    // qK = rows

sg1out:
	FMOVS (qPC), F4                // F4 = c[r,i]
	FMOVS (qPD), F8                // F8 = dc[r,i]
	ADD  qLD, qPC                  // next row
	ADD  qLD, qPD
	FSUBS F0, F8, F8               // F8 = dc − dot
	FMULS F4, F8, F8               // F8 = c·(dc − dot)
	FMOVS F8, (qPL)                // dl[r,i] = F8
	ADD  qLD, qPL                  // next row
	SUB  $1, qK                    // qK--
	CBNZ qK, sg1out

	ADD  $4, qC                    // next column
	ADD  $4, qD
	ADD  $4, qL
	SUB  $1, qN                    // qN--
	B    sgc1

sgdone:
	RET

#undef qR
#undef qN
#undef qC
#undef qD
#undef qL
#undef qLD
#undef qPC
#undef qPD
#undef qPL
#undef qK

// ---------------------------------------------------------------------------
// Squash scale factors, 4 capsules per vector; V16 = ε, exp constants set.

// SCALEM(q, nn, e, t0, t1, t2, t3): Mazzia, Vq = |s|² in, f out:
//	nn = sqrt(q + ε); e = exp(−nn); q = (1 − e)/nn
#define SCALEM(q, nn, e, t0, t1, t2, t3) \
	VFADD(16, q, nn); \
	VFSQRT(nn, nn); \
	VFNEG(nn, e); \
	EXP(e, t0, t1, t2, t3); \
	VFSUB(e, cONE, e); \
	VFDIV(nn, e, q)

// SCALES(q, nn, a): Sabour, Vq = |s|² in, f out:
//	nn = sqrt(q + ε); a = q/(1 + q); q = a/nn
#define SCALES(q, nn, a) \
	VFADD(16, q, nn); \
	VFSQRT(nn, nn); \
	VFADD(cONE, q, a); \
	VFDIV(a, q, a); \
	VFDIV(nn, a, q)

// func SquashNEON(kind, d, n int, s, v []float32)
// For each capsule (column) i: q = Σ_l s[l,i]²; v[:,i] = f(q)·s[:,i] with
// f from SCALEM (kind 0) or SCALES (kind 1). Vectors: V0..V3 q then f,
// V4..V7 norms, V8..V11 values, V12..V15 exp temporaries, V16 ε.
#define uK R0   // kind
#define uD R1   // d
#define uN R2   // columns left
#define uS R3   // &s[0,i]
#define uV R4   // &v[0,i]
#define uLD R5  // row stride n*4 bytes
#define uPS R6  // &s[l,i]
#define uPV R7  // &v[l,i]
#define uL R8   // rows left

TEXT ·SquashNEON(SB), NOSPLIT, $0-72
	MOVD kind+0(FP), uK     // uK = kind
	MOVD d+8(FP), uD        // uD = d
	MOVD n+16(FP), uN       // uN = n
	MOVD s_base+24(FP), uS  // uS = &s[0]
	MOVD v_base+48(FP), uV  // uV = &v[0]
	LSL  $2, uN, uLD        // uLD = n*4 bytes
	CBZ  uD, sqdone         // d = 0: nothing to do
	EXPCONST                // V19..V31 = exp constants
	MOVW $0x33d6bf95, R16   // float32(1e-7)
	VDUP R16, V16.S4        // V16 = ε

sqc16:
	CMP  $16, uN                                      // fewer than 16 columns?
	BLT  sqc4
	VEOR V0.B16, V0.B16, V0.B16                       // V0..V3 = 0
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	MOVD uS, uPS                                      // uPS = &s[0,i]
	MOVD uD, uL                                       // uL = d

sq16q:
	VLD1.P (uPS)(uLD), [V8.S4, V9.S4, V10.S4, V11.S4] // V8..V11 = s[l,i:i+16]
	VFMLA V8.S4, V8.S4, V0.S4                         // V0..V3 += s²
	VFMLA V9.S4, V9.S4, V1.S4
	VFMLA V10.S4, V10.S4, V2.S4
	VFMLA V11.S4, V11.S4, V3.S4
	SUB  $1, uL                                       // uL--
	CBNZ uL, sq16q

	CMP  $1, uK                                       // Sabour?
	BEQ  sq16sab
	SCALEM(0, 4, 8, 12, 13, 14, 15)                   // V0..V3 = Mazzia f
	SCALEM(1, 5, 9, 12, 13, 14, 15)
	SCALEM(2, 6, 10, 12, 13, 14, 15)
	SCALEM(3, 7, 11, 12, 13, 14, 15)
	B    sq16apply

sq16sab:
	SCALES(0, 4, 8)                                   // V0..V3 = Sabour f
	SCALES(1, 5, 9)
	SCALES(2, 6, 10)
	SCALES(3, 7, 11)

sq16apply:
	MOVD uS, uPS                                      // uPS = &s[0,i]
	MOVD uV, uPV                                      // uPV = &v[0,i]
	MOVD uD, uL                                       // uL = d

sq16v:
	VLD1.P (uPS)(uLD), [V8.S4, V9.S4, V10.S4, V11.S4] // V8..V11 = s[l,i:i+16]
	VFMUL(0, 8, 8)                                    // V8..V11 = f·s
	VFMUL(1, 9, 9)
	VFMUL(2, 10, 10)
	VFMUL(3, 11, 11)
	VST1.P [V8.S4, V9.S4, V10.S4, V11.S4], (uPV)(uLD) // v[l,i:i+16] = V8..V11
	SUB  $1, uL                                       // uL--
	CBNZ uL, sq16v

	ADD  $64, uS                                      // next 16 columns
	ADD  $64, uV
	SUB  $16, uN                                      // uN -= 16
	B    sqc16

sqc4:
	CMP  $4, uN                    // fewer than 4 columns?
	BLT  sqc1
	VEOR V0.B16, V0.B16, V0.B16    // V0 = 0
	MOVD uS, uPS                   // uPS = &s[0,i]
	MOVD uD, uL                    // uL = d

sq4q:
	VLD1.P (uPS)(uLD), [V8.S4]     // V8 = s[l,i:i+4]
	VFMLA V8.S4, V8.S4, V0.S4      // V0 += s²
	SUB  $1, uL                    // uL--
	CBNZ uL, sq4q

	CMP  $1, uK                    // Sabour?
	BEQ  sq4sab
	SCALEM(0, 4, 8, 12, 13, 14, 15) // V0 = Mazzia f
	B    sq4apply

sq4sab:
	SCALES(0, 4, 8)                // V0 = Sabour f

sq4apply:
	MOVD uS, uPS                   // uPS = &s[0,i]
	MOVD uV, uPV                   // uPV = &v[0,i]
	MOVD uD, uL                    // uL = d

sq4v:
	VLD1.P (uPS)(uLD), [V8.S4]     // V8 = s[l,i:i+4]
	VFMUL(0, 8, 8)                 // V8 = f·s
	VST1.P [V8.S4], (uPV)(uLD)     // v[l,i:i+4] = V8
	SUB  $1, uL                    // uL--
	CBNZ uL, sq4v

	ADD  $16, uS                   // next 4 columns
	ADD  $16, uV
	SUB  $4, uN                    // uN -= 4
	B    sqc4

sqc1:
	CBZ  uN, sqdone                // done?
	VEOR V0.B16, V0.B16, V0.B16    // V0 = 0
	MOVD uS, uPS                   // uPS = &s[0,i]
	MOVD uD, uL                    // uL = d

sq1q:
	FMOVS (uPS), F8                // V8 = {s[l,i], 0, 0, 0}
	ADD  uLD, uPS                  // next row
	VFMLA V8.S4, V8.S4, V0.S4      // V0[0] += s²
	SUB  $1, uL                    // uL--
	CBNZ uL, sq1q

	CMP  $1, uK                    // Sabour?
	BEQ  sq1sab
	SCALEM(0, 4, 8, 12, 13, 14, 15) // V0[0] = Mazzia f
	B    sq1apply

sq1sab:
	SCALES(0, 4, 8)                // V0[0] = Sabour f

sq1apply:
	MOVD uS, uPS                   // uPS = &s[0,i]
	MOVD uV, uPV                   // uPV = &v[0,i]
	MOVD uD, uL                    // uL = d

sq1v:
	FMOVS (uPS), F8                // F8 = s[l,i]
	ADD  uLD, uPS                  // next row
	FMULS F0, F8, F8               // F8 = f·s
	FMOVS F8, (uPV)                // v[l,i] = F8
	ADD  uLD, uPV                  // next row
	SUB  $1, uL                    // uL--
	CBNZ uL, sq1v

	ADD  $4, uS                    // next column
	ADD  $4, uV
	SUB  $1, uN                    // uN--
	B    sqc1

sqdone:
	RET

#undef uK
#undef uD
#undef uN
#undef uS
#undef uV
#undef uLD
#undef uPS
#undef uPV
#undef uL

// ---------------------------------------------------------------------------
// Squash gradient terms for one vector of 4 capsules: Vq = |s|² in, f out;
// Vg = s·dv in, g = h·(s·dv) out; V8..V15 clobbered, V16 = ε.

// GRADM(q, g): Mazzia, as squashScale in Go:
//	n = sqrt(q + ε); e = exp(−n); f = (1 − e)/n
//	h = (e/n − (1 − e)/(n·n))/n; g = h·g
#define GRADM(q, g) \
	VFADD(16, q, 8); \
	VFSQRT(8, 8); \
	VFNEG(8, 9); \
	EXP(9, 12, 13, 14, 15); \
	VFSUB(9, cONE, 10); \
	VFDIV(8, 10, q); \
	VFDIV(8, 9, 11); \
	VFMUL(8, 8, 12); \
	VFDIV(12, 10, 12); \
	VFSUB(12, 11, 11); \
	VFDIV(8, 11, 11); \
	VFMUL(11, g, g)

// GRADS(q, g): Sabour, as squashScale in Go:
//	n = sqrt(q + ε); a = q/(1 + q); f = a/n
//	h = 2/((1 + q)·(1 + q)·n) − a/(n·n·n); g = h·g
#define GRADS(q, g) \
	VFADD(16, q, 8); \
	VFSQRT(8, 8); \
	VFADD(cONE, q, 9); \
	VFDIV(9, q, 10); \
	VFMUL(9, 9, 11); \
	VFMUL(8, 11, 11); \
	VFADD(cONE, cONE, 12); \
	VFDIV(11, 12, 11); \
	VFMUL(8, 8, 12); \
	VFMUL(8, 12, 12); \
	VFDIV(12, 10, 12); \
	VFSUB(12, 11, 11); \
	VFDIV(8, 10, q); \
	VFMUL(11, g, g)

// func SquashGradNEON(kind, d, n int, s, dv, ds []float32)
// For each capsule (column) i: q = Σ_l s[l,i]², dot = Σ_l s[l,i]·dv[l,i];
// ds[l,i] = f·dv[l,i] + (h·dot)·s[l,i] with f, h from GRADM (kind 0) or
// GRADS (kind 1). Vectors: V0..V3 q then f, V4..V7 dot then h·dot,
// V8..V11 s, V12..V15 dv then ds, V16 ε.
#define wK R0   // kind
#define wD R1   // d
#define wN R2   // columns left
#define wS R3   // &s[0,i]
#define wG R4   // &dv[0,i]
#define wO R5   // &ds[0,i]
#define wLD R6  // row stride n*4 bytes
#define wPS R7  // &s[l,i]
#define wPG R8  // &dv[l,i]
#define wPO R9  // &ds[l,i]
#define wL R10  // rows left

TEXT ·SquashGradNEON(SB), NOSPLIT, $0-96
	MOVD kind+0(FP), wK     // wK = kind
	MOVD d+8(FP), wD        // wD = d
	MOVD n+16(FP), wN       // wN = n
	MOVD s_base+24(FP), wS  // wS = &s[0]
	MOVD dv_base+48(FP), wG // wG = &dv[0]
	MOVD ds_base+72(FP), wO // wO = &ds[0]
	LSL  $2, wN, wLD        // wLD = n*4 bytes
	CBZ  wD, sgrdone        // d = 0: nothing to do
	EXPCONST                // V19..V31 = exp constants
	MOVW $0x33d6bf95, R16   // float32(1e-7)
	VDUP R16, V16.S4        // V16 = ε

sgrc16:
	CMP  $16, wN                                        // fewer than 16 columns?
	BLT  sgrc4
	VEOR V0.B16, V0.B16, V0.B16                         // V0..V7 = 0
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16
	VEOR V4.B16, V4.B16, V4.B16
	VEOR V5.B16, V5.B16, V5.B16
	VEOR V6.B16, V6.B16, V6.B16
	VEOR V7.B16, V7.B16, V7.B16
	MOVD wS, wPS                                        // wPS = &s[0,i]
	MOVD wG, wPG                                        // wPG = &dv[0,i]
	MOVD wD, wL                                         // wL = d

sgr16q:
	VLD1.P (wPS)(wLD), [V8.S4, V9.S4, V10.S4, V11.S4]   // V8..V11 = s[l,i:i+16]
	VLD1.P (wPG)(wLD), [V12.S4, V13.S4, V14.S4, V15.S4] // V12..V15 = dv[l,i:i+16]
	VFMLA V8.S4, V8.S4, V0.S4                           // V0..V3 += s²
	VFMLA V9.S4, V9.S4, V1.S4
	VFMLA V10.S4, V10.S4, V2.S4
	VFMLA V11.S4, V11.S4, V3.S4
	VFMLA V12.S4, V8.S4, V4.S4                          // V4..V7 += s·dv
	VFMLA V13.S4, V9.S4, V5.S4
	VFMLA V14.S4, V10.S4, V6.S4
	VFMLA V15.S4, V11.S4, V7.S4
	SUB  $1, wL                                         // wL--
	CBNZ wL, sgr16q

	CMP  $1, wK                                         // Sabour?
	BEQ  sgr16sab
	GRADM(0, 4)                                         // V0..V3 = f, V4..V7 = h·dot
	GRADM(1, 5)
	GRADM(2, 6)
	GRADM(3, 7)
	B    sgr16apply

sgr16sab:
	GRADS(0, 4)                                         // V0..V3 = f, V4..V7 = h·dot
	GRADS(1, 5)
	GRADS(2, 6)
	GRADS(3, 7)

sgr16apply:
	MOVD wS, wPS                                        // wPS = &s[0,i]
	MOVD wG, wPG                                        // wPG = &dv[0,i]
	MOVD wO, wPO                                        // wPO = &ds[0,i]
	MOVD wD, wL                                         // wL = d

sgr16o:
	VLD1.P (wPS)(wLD), [V8.S4, V9.S4, V10.S4, V11.S4]   // V8..V11 = s[l,i:i+16]
	VLD1.P (wPG)(wLD), [V12.S4, V13.S4, V14.S4, V15.S4] // V12..V15 = dv[l,i:i+16]
	VFMUL(0, 12, 12)                                    // V12..V15 = f·dv
	VFMUL(1, 13, 13)
	VFMUL(2, 14, 14)
	VFMUL(3, 15, 15)
	VFMLA V4.S4, V8.S4, V12.S4                          // V12..V15 += (h·dot)·s
	VFMLA V5.S4, V9.S4, V13.S4
	VFMLA V6.S4, V10.S4, V14.S4
	VFMLA V7.S4, V11.S4, V15.S4
	VST1.P [V12.S4, V13.S4, V14.S4, V15.S4], (wPO)(wLD) // ds[l,i:i+16] = V12..V15
	SUB  $1, wL                                         // wL--
	CBNZ wL, sgr16o

	ADD  $64, wS                                        // next 16 columns
	ADD  $64, wG
	ADD  $64, wO
	SUB  $16, wN                                        // wN -= 16
	B    sgrc16

sgrc4:
	CMP  $4, wN                    // fewer than 4 columns?
	BLT  sgrc1
	VEOR V0.B16, V0.B16, V0.B16    // V0 = 0
	VEOR V4.B16, V4.B16, V4.B16    // V4 = 0
	MOVD wS, wPS                   // wPS = &s[0,i]
	MOVD wG, wPG                   // wPG = &dv[0,i]
	MOVD wD, wL                    // wL = d

sgr4q:
	VLD1.P (wPS)(wLD), [V8.S4]     // V8 = s[l,i:i+4]
	VLD1.P (wPG)(wLD), [V12.S4]    // V12 = dv[l,i:i+4]
	VFMLA V8.S4, V8.S4, V0.S4      // V0 += s²
	VFMLA V12.S4, V8.S4, V4.S4     // V4 += s·dv
	SUB  $1, wL                    // wL--
	CBNZ wL, sgr4q

	CMP  $1, wK                    // Sabour?
	BEQ  sgr4sab
	GRADM(0, 4)                    // V0 = f, V4 = h·dot
	B    sgr4apply

sgr4sab:
	GRADS(0, 4)                    // V0 = f, V4 = h·dot

sgr4apply:
	MOVD wS, wPS                   // wPS = &s[0,i]
	MOVD wG, wPG                   // wPG = &dv[0,i]
	MOVD wO, wPO                   // wPO = &ds[0,i]
	MOVD wD, wL                    // wL = d

sgr4o:
	VLD1.P (wPS)(wLD), [V8.S4]     // V8 = s[l,i:i+4]
	VLD1.P (wPG)(wLD), [V12.S4]    // V12 = dv[l,i:i+4]
	VFMUL(0, 12, 12)               // V12 = f·dv
	VFMLA V4.S4, V8.S4, V12.S4     // V12 += (h·dot)·s
	VST1.P [V12.S4], (wPO)(wLD)    // ds[l,i:i+4] = V12
	SUB  $1, wL                    // wL--
	CBNZ wL, sgr4o

	ADD  $16, wS                   // next 4 columns
	ADD  $16, wG
	ADD  $16, wO
	SUB  $4, wN                    // wN -= 4
	B    sgrc4

sgrc1:
	CBZ  wN, sgrdone               // done?
	VEOR V0.B16, V0.B16, V0.B16    // V0 = 0
	VEOR V4.B16, V4.B16, V4.B16    // V4 = 0
	MOVD wS, wPS                   // wPS = &s[0,i]
	MOVD wG, wPG                   // wPG = &dv[0,i]
	MOVD wD, wL                    // wL = d

sgr1q:
	FMOVS (wPS), F8                // V8 = {s[l,i], 0, 0, 0}
	FMOVS (wPG), F12               // V12 = {dv[l,i], 0, 0, 0}
	ADD  wLD, wPS                  // next row
	ADD  wLD, wPG
	VFMLA V8.S4, V8.S4, V0.S4      // V0[0] += s²
	VFMLA V12.S4, V8.S4, V4.S4     // V4[0] += s·dv
	SUB  $1, wL                    // wL--
	CBNZ wL, sgr1q

	CMP  $1, wK                    // Sabour?
	BEQ  sgr1sab
	GRADM(0, 4)                    // V0[0] = f, V4[0] = h·dot
	B    sgr1apply

sgr1sab:
	GRADS(0, 4)                    // V0[0] = f, V4[0] = h·dot

sgr1apply:
	MOVD wS, wPS                   // wPS = &s[0,i]
	MOVD wG, wPG                   // wPG = &dv[0,i]
	MOVD wO, wPO                   // wPO = &ds[0,i]
	MOVD wD, wL                    // wL = d

sgr1o:
	FMOVS (wPS), F8                // F8 = s[l,i]
	FMOVS (wPG), F12               // F12 = dv[l,i]
	ADD  wLD, wPS                  // next row
	ADD  wLD, wPG
	FMULS F0, F12, F12             // F12 = f·dv
	FMADDS F8, F12, F4, F12        // F12 += (h·dot)·s
	FMOVS F12, (wPO)               // ds[l,i] = F12
	ADD  wLD, wPO                  // next row
	SUB  $1, wL                    // wL--
	CBNZ wL, sgr1o

	ADD  $4, wS                    // next column
	ADD  $4, wG
	ADD  $4, wO
	SUB  $1, wN                    // wN--
	B    sgrc1

sgrdone:
	RET

// ---------------------------------------------------------------------------
// Grouped kernels: ng blocks of d rows of a, stacked (block j is rows
// j·d … j·d+d−1, so the rows of all blocks follow each other with stride
// lda), block j paired with its own row of the other operand, in one call.
// The strided operand (x of ger and gemvT, y of gemvN) has element (j, k) at
// j·s + k·sk. Columns go in blocks of 16, then 4, then 1 as above.
#define qG R0    // groups left
#define qD R1    // d
#define qN R2    // n
#define qX R3    // &x of the current group
#define qXS R4   // group stride of x (ger, gemvT: xs; gemvN: ldx) in bytes
#define qK R5    // row stride of the strided operand (xk or yk) in bytes
#define qY R6    // &y of the current group
#define qLDY R7  // group stride of y (ldy or ys) in bytes
#define qA R8    // &a of the current row (ger, gemvN) or group (gemvT)
#define qLDA R9  // lda in bytes
#define qR R10   // rows left in the group
#define qPX R11  // walks x
#define qP R12   // walks a
#define qPY R13  // walks y
#define qC R14   // columns left
#define qDA R15  // d·lda in bytes (gemvT)

// func GerGroupsNEON(ng, d, n int, x []float32, xs, xk int, y []float32, ldy int, a []float32, lda int)
// a[j·d+k, c] += x[j·xs+k·xk]·y[j·ldy+c]: row by row, the x element
// broadcast in V16, y of the group re-read for every row.
TEXT ·GerGroupsNEON(SB), NOSPLIT, $0-128
	MOVD ng+0(FP), qG      // qG = ng
	MOVD d+8(FP), qD       // qD = d
	MOVD n+16(FP), qN      // qN = n
	MOVD x_base+24(FP), qX // qX = &x[0]
	MOVD xs+48(FP), qXS    // qXS = xs
	MOVD xk+56(FP), qK     // qK = xk
	MOVD y_base+64(FP), qY // qY = &y[0]
	MOVD ldy+88(FP), qLDY  // qLDY = ldy
	MOVD a_base+96(FP), qA // qA = &a[0]
	MOVD lda+120(FP), qLDA // qLDA = lda
	CBZ  qG, gergdone      // nothing to do?
	CBZ  qD, gergdone
	CBZ  qN, gergdone
	LSL  $2, qXS           // strides in bytes
	LSL  $2, qK
	LSL  $2, qLDY
	LSL  $2, qLDA

gergroup:
	MOVD qX, qPX           // qPX = &x[j·xs]
	MOVD qD, qR            // qR = d

gergrow:
	VLD1R (qPX), [V16.S4]  // V16 = x[j,k] ×4 (F16 = x[j,k])
	ADD  qK, qPX           // next x
	MOVD qA, qP            // qP = &a[r,0]
	MOVD qY, qPY           // qPY = &y[j,0]
	MOVD qN, qC            // qC = n

gergc16:
	CMP  $16, qC                                  // fewer than 16 columns?
	BLT  gergc4
	VLD1.P 64(qPY), [V0.S4, V1.S4, V2.S4, V3.S4]  // V0..V3 = y[j,c:c+16]
	VLD1 (qP), [V4.S4, V5.S4, V6.S4, V7.S4]       // V4..V7 = a[r,c:c+16]
	VFMLA V16.S4, V0.S4, V4.S4                    // V4..V7 += x·y
	VFMLA V16.S4, V1.S4, V5.S4
	VFMLA V16.S4, V2.S4, V6.S4
	VFMLA V16.S4, V3.S4, V7.S4
	VST1.P [V4.S4, V5.S4, V6.S4, V7.S4], 64(qP)   // a[r,c:c+16] = V4..V7
	SUB  $16, qC                                  // qC -= 16
	B    gergc16

gergc4:
	CMP  $4, qC                 // fewer than 4 columns?
	BLT  gergc1
	VLD1.P 16(qPY), [V0.S4]     // V0 = y[j,c:c+4]
	VLD1 (qP), [V4.S4]          // V4 = a[r,c:c+4]
	VFMLA V16.S4, V0.S4, V4.S4  // V4 += x·y
	VST1.P [V4.S4], 16(qP)      // a[r,c:c+4] = V4
	SUB  $4, qC                 // qC -= 4
	B    gergc4

gergc1:
	CBZ  qC, gergnext        // columns done?
	FMOVS.P 4(qPY), F0       // F0 = y[j,c]
	FMOVS (qP), F4           // F4 = a[r,c]
	FMADDS F0, F4, F16, F4   // F4 += x·y[j,c]
	FMOVS.P F4, 4(qP)        // a[r,c] = F4
	SUB  $1, qC              // qC--
	B    gergc1

gergnext:
	ADD  qLDA, qA            // next row of a
	SUB  $1, qR              // qR--
	CBNZ qR, gergrow
	ADD  qXS, qX             // next group of x
	ADD  qLDY, qY            // next group of y
	SUB  $1, qG              // qG--
	CBNZ qG, gergroup

gergdone:
	RET

// func GemvTGroupsNEON(ng, d, n int, a []float32, lda int, x []float32, xs, xk int, y []float32, ldy int)
// y[j·ldy+c] += Σ_k x[j·xs+k·xk]·a[j·d+k, c]: per group, column blocks of
// 16 (then 4, then 1) keep y in registers while the d rows go by.
TEXT ·GemvTGroupsNEON(SB), NOSPLIT, $0-128
	MOVD ng+0(FP), qG      // qG = ng
	MOVD d+8(FP), qD       // qD = d
	MOVD n+16(FP), qN      // qN = n
	MOVD a_base+24(FP), qA // qA = &a[0]
	MOVD lda+48(FP), qLDA  // qLDA = lda
	MOVD x_base+56(FP), qX // qX = &x[0]
	MOVD xs+80(FP), qXS    // qXS = xs
	MOVD xk+88(FP), qK     // qK = xk
	MOVD y_base+96(FP), qY // qY = &y[0]
	MOVD ldy+120(FP), qLDY // qLDY = ldy
	CBZ  qG, gtgdone       // nothing to do?
	CBZ  qD, gtgdone
	CBZ  qN, gtgdone
	LSL  $2, qXS           // strides in bytes
	LSL  $2, qK
	LSL  $2, qLDY
	LSL  $2, qLDA
	MUL  qD, qLDA, qDA     // qDA = d·lda bytes: one group of rows

gtggroup:
	MOVD qA, qP            // qP = &a[j·d, 0] (column base, qP walks from it)
	MOVD qY, qPY           // qPY = &y[j,0]
	MOVD qN, qC            // qC = n

gtgc16:
	CMP  $16, qC                                 // fewer than 16 columns?
	BLT  gtgc4
	VLD1 (qPY), [V0.S4, V1.S4, V2.S4, V3.S4]     // V0..V3 = y[j,c:c+16]
	MOVD qP, R16                                 // R16 = &a[j·d, c]
	MOVD qX, qPX                                 // qPX = &x[j·xs]
	MOVD qD, qR                                  // qR = d

gtg16r:
	VLD1R (qPX), [V16.S4]                        // V16 = x[j,k] ×4
	ADD  qK, qPX                                 // next x
	VLD1.P (R16)(qLDA), [V18.S4, V19.S4, V20.S4, V21.S4] // a[r,c:c+16]
	VFMLA V16.S4, V18.S4, V0.S4                  // V0..V3 += x·a[r]
	VFMLA V16.S4, V19.S4, V1.S4
	VFMLA V16.S4, V20.S4, V2.S4
	VFMLA V16.S4, V21.S4, V3.S4
	SUB  $1, qR                                  // qR--
	CBNZ qR, gtg16r
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(qPY) // y[j,c:c+16] = V0..V3
	ADD  $64, qP                                 // next 16 columns
	SUB  $16, qC                                 // qC -= 16
	B    gtgc16

gtgc4:
	CMP  $4, qC                 // fewer than 4 columns?
	BLT  gtgc1
	VLD1 (qPY), [V0.S4]         // V0 = y[j,c:c+4]
	MOVD qP, R16                // R16 = &a[j·d, c]
	MOVD qX, qPX                // qPX = &x[j·xs]
	MOVD qD, qR                 // qR = d

gtg4r:
	VLD1R (qPX), [V16.S4]       // V16 = x[j,k] ×4
	ADD  qK, qPX                // next x
	VLD1.P (R16)(qLDA), [V18.S4] // V18 = a[r,c:c+4]
	VFMLA V16.S4, V18.S4, V0.S4 // V0 += x·a[r]
	SUB  $1, qR                 // qR--
	CBNZ qR, gtg4r
	VST1.P [V0.S4], 16(qPY)     // y[j,c:c+4] = V0
	ADD  $16, qP                // next 4 columns
	SUB  $4, qC                 // qC -= 4
	B    gtgc4

gtgc1:
	CBZ  qC, gtgnext            // columns done?
	FMOVS (qPY), F0             // F0 = y[j,c]
	MOVD qP, R16                // R16 = &a[j·d, c]
	MOVD qX, qPX                // qPX = &x[j·xs]
	MOVD qD, qR                 // qR = d

gtg1r:
	FMOVS (qPX), F16            // F16 = x[j,k]
	ADD  qK, qPX                // next x
	FMOVS (R16), F18            // F18 = a[r,c]
	ADD  qLDA, R16              // next row
	FMADDS F18, F0, F16, F0     // F0 += x·a[r,c]
	SUB  $1, qR                 // qR--
	CBNZ qR, gtg1r
	FMOVS.P F0, 4(qPY)          // y[j,c] = F0
	ADD  $4, qP                 // next column
	SUB  $1, qC                 // qC--
	B    gtgc1

gtgnext:
	ADD  qDA, qA                // next group of rows
	ADD  qXS, qX                // next group of x
	ADD  qLDY, qY               // next row of y
	SUB  $1, qG                 // qG--
	CBNZ qG, gtggroup

gtgdone:
	RET

// func GemvNGroupsNEON(ng, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int)
// y[j·ys+k·yk] += Σ_c a[j·d+k, c]·x[j·ldx+c]: row by row, four
// accumulators over 16-column blocks, one over 4-column blocks, single
// columns in lane 0 of V1, then a pairwise reduction.
TEXT ·GemvNGroupsNEON(SB), NOSPLIT, $0-128
	MOVD ng+0(FP), qG      // qG = ng
	MOVD d+8(FP), qD       // qD = d
	MOVD n+16(FP), qN      // qN = n
	MOVD a_base+24(FP), qA // qA = &a[0]
	MOVD lda+48(FP), qLDA  // qLDA = lda
	MOVD x_base+56(FP), qX // qX = &x[0]
	MOVD ldx+80(FP), qXS   // qXS = ldx
	MOVD y_base+88(FP), qY // qY = &y[0]
	MOVD ys+112(FP), qLDY  // qLDY = ys
	MOVD yk+120(FP), qK    // qK = yk
	CBZ  qG, gngdone       // nothing to do?
	CBZ  qD, gngdone
	CBZ  qN, gngdone
	LSL  $2, qXS           // strides in bytes
	LSL  $2, qK
	LSL  $2, qLDY
	LSL  $2, qLDA

gnggroup:
	MOVD qY, qPY           // qPY = &y[j·ys]
	MOVD qD, qR            // qR = d

gngrow:
	MOVD qA, qP                 // qP = &a[r,0]
	MOVD qX, qPX                // qPX = &x[j,0]
	MOVD qN, qC                 // qC = n
	VEOR V0.B16, V0.B16, V0.B16 // accumulators = 0
	VEOR V1.B16, V1.B16, V1.B16
	VEOR V2.B16, V2.B16, V2.B16
	VEOR V3.B16, V3.B16, V3.B16

gngc16:
	CMP  $16, qC                                     // fewer than 16 columns?
	BLT  gngc4
	VLD1.P 64(qPX), [V16.S4, V17.S4, V18.S4, V19.S4] // x[j,c:c+16]
	VLD1.P 64(qP), [V20.S4, V21.S4, V22.S4, V23.S4]  // a[r,c:c+16]
	VFMLA V16.S4, V20.S4, V0.S4                      // V0..V3 += x·a
	VFMLA V17.S4, V21.S4, V1.S4
	VFMLA V18.S4, V22.S4, V2.S4
	VFMLA V19.S4, V23.S4, V3.S4
	SUB  $16, qC                                     // qC -= 16
	B    gngc16

gngc4:
	CMP  $4, qC                 // fewer than 4 columns?
	BLT  gngc1
	VLD1.P 16(qPX), [V16.S4]    // V16 = x[j,c:c+4]
	VLD1.P 16(qP), [V20.S4]     // V20 = a[r,c:c+4]
	VFMLA V16.S4, V20.S4, V0.S4 // V0 += x·a
	SUB  $4, qC                 // qC -= 4
	B    gngc4

gngc1:
	CBZ  qC, gngsum             // no tail?
	FMOVS.P 4(qPX), F16         // V16 = {x[j,c], 0, 0, 0}
	FMOVS.P 4(qP), F20          // V20 = {a[r,c], 0, 0, 0}
	VFMLA V16.S4, V20.S4, V1.S4 // V1[0] += x·a
	SUB  $1, qC                 // qC--
	B    gngc1

gngsum:
	VFADD(1, 0, 0)          // V0 += V1
	VFADD(3, 2, 2)          // V2 += V3
	VFADD(2, 0, 0)          // V0 += V2
	VFADDP(0, 0, 0)         // V0 = pair sums
	VFADDP(0, 0, 0)         // V0[0] = Σ a[r,:]·x
	FMOVS (qPY), F16        // F16 = y[j,k]
	FADDS F0, F16, F16      // F16 += Σ
	FMOVS F16, (qPY)        // y[j,k] = F16
	ADD  qK, qPY            // next y
	ADD  qLDA, qA           // next row of a
	SUB  $1, qR             // qR--
	CBNZ qR, gngrow
	ADD  qXS, qX            // next row of x
	ADD  qLDY, qY           // next group of y
	SUB  $1, qG             // qG--
	CBNZ qG, gnggroup

gngdone:
	RET

// func Ger2GroupsNEON(ng, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int)
// a[j·d+k, c] += x[j·xs+k·xk]·y[j·ldy+c] + x2[j·xs+k·xk]·y2[j·ldy+c]: as
// GerGroupsNEON with a second pair (broadcast in V17, rows walked by
// R19/R20), both products added in turn.
#define qX2 R16   // &x2 of the current group
#define qY2 R17   // &y2 of the current group
#define qPX2 R19  // walks x2
#define qPY2 R20  // walks y2

TEXT ·Ger2GroupsNEON(SB), NOSPLIT, $0-176
	MOVD ng+0(FP), qG        // qG = ng
	MOVD d+8(FP), qD         // qD = d
	MOVD n+16(FP), qN        // qN = n
	MOVD x_base+24(FP), qX   // qX = &x[0]
	MOVD x2_base+48(FP), qX2 // qX2 = &x2[0]
	MOVD xs+72(FP), qXS      // qXS = xs
	MOVD xk+80(FP), qK       // qK = xk
	MOVD y_base+88(FP), qY   // qY = &y[0]
	MOVD y2_base+112(FP), qY2 // qY2 = &y2[0]
	MOVD ldy+136(FP), qLDY   // qLDY = ldy
	MOVD a_base+144(FP), qA  // qA = &a[0]
	MOVD lda+168(FP), qLDA   // qLDA = lda
	CBZ  qG, ger2gdone       // nothing to do?
	CBZ  qD, ger2gdone
	CBZ  qN, ger2gdone
	LSL  $2, qXS             // strides in bytes
	LSL  $2, qK
	LSL  $2, qLDY
	LSL  $2, qLDA

ger2group:
	MOVD qX, qPX             // qPX = &x[j·xs]
	MOVD qX2, qPX2           // qPX2 = &x2[j·xs]
	MOVD qD, qR              // qR = d

ger2row:
	VLD1R (qPX), [V16.S4]    // V16 = x[j,k] ×4 (F16 = x[j,k])
	VLD1R (qPX2), [V17.S4]   // V17 = x2[j,k] ×4 (F17 = x2[j,k])
	ADD  qK, qPX             // next x
	ADD  qK, qPX2            // next x2
	MOVD qA, qP              // qP = &a[r,0]
	MOVD qY, qPY             // qPY = &y[j,0]
	MOVD qY2, qPY2           // qPY2 = &y2[j,0]
	MOVD qN, qC              // qC = n

ger2c16:
	CMP  $16, qC                                   // fewer than 16 columns?
	BLT  ger2c4
	VLD1.P 64(qPY), [V0.S4, V1.S4, V2.S4, V3.S4]   // V0..V3 = y[j,c:c+16]
	VLD1.P 64(qPY2), [V8.S4, V9.S4, V10.S4, V11.S4] // V8..V11 = y2[j,c:c+16]
	VLD1 (qP), [V4.S4, V5.S4, V6.S4, V7.S4]        // V4..V7 = a[r,c:c+16]
	VFMLA V16.S4, V0.S4, V4.S4                     // V4..V7 += x·y
	VFMLA V16.S4, V1.S4, V5.S4
	VFMLA V16.S4, V2.S4, V6.S4
	VFMLA V16.S4, V3.S4, V7.S4
	VFMLA V17.S4, V8.S4, V4.S4                     // V4..V7 += x2·y2
	VFMLA V17.S4, V9.S4, V5.S4
	VFMLA V17.S4, V10.S4, V6.S4
	VFMLA V17.S4, V11.S4, V7.S4
	VST1.P [V4.S4, V5.S4, V6.S4, V7.S4], 64(qP)    // a[r,c:c+16] = V4..V7
	SUB  $16, qC                                   // qC -= 16
	B    ger2c16

ger2c4:
	CMP  $4, qC                 // fewer than 4 columns?
	BLT  ger2c1
	VLD1.P 16(qPY), [V0.S4]     // V0 = y[j,c:c+4]
	VLD1.P 16(qPY2), [V8.S4]    // V8 = y2[j,c:c+4]
	VLD1 (qP), [V4.S4]          // V4 = a[r,c:c+4]
	VFMLA V16.S4, V0.S4, V4.S4  // V4 += x·y
	VFMLA V17.S4, V8.S4, V4.S4  // V4 += x2·y2
	VST1.P [V4.S4], 16(qP)      // a[r,c:c+4] = V4
	SUB  $4, qC                 // qC -= 4
	B    ger2c4

ger2c1:
	CBZ  qC, ger2next        // columns done?
	FMOVS.P 4(qPY), F0       // F0 = y[j,c]
	FMOVS.P 4(qPY2), F8      // F8 = y2[j,c]
	FMOVS (qP), F4           // F4 = a[r,c]
	FMADDS F0, F4, F16, F4   // F4 += x·y[j,c]
	FMADDS F8, F4, F17, F4   // F4 += x2·y2[j,c]
	FMOVS.P F4, 4(qP)        // a[r,c] = F4
	SUB  $1, qC              // qC--
	B    ger2c1

ger2next:
	ADD  qLDA, qA            // next row of a
	SUB  $1, qR              // qR--
	CBNZ qR, ger2row
	ADD  qXS, qX             // next group of x
	ADD  qXS, qX2            // next group of x2
	ADD  qLDY, qY            // next group of y
	ADD  qLDY, qY2           // next group of y2
	SUB  $1, qG              // qG--
	CBNZ qG, ger2group

ger2gdone:
	RET

// func Ger2GroupsSetNEON(ng, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int)
// a[j·d+k, c] = x[j·xs+k·xk]·y[j·ldy+c] + x2[j·xs+k·xk]·y2[j·ldy+c]: as
// Ger2GroupsNEON with zero in place of the old a (a is only written).

TEXT ·Ger2GroupsSetNEON(SB), NOSPLIT, $0-176
	MOVD ng+0(FP), qG        // qG = ng
	MOVD d+8(FP), qD         // qD = d
	MOVD n+16(FP), qN        // qN = n
	MOVD x_base+24(FP), qX   // qX = &x[0]
	MOVD x2_base+48(FP), qX2 // qX2 = &x2[0]
	MOVD xs+72(FP), qXS      // qXS = xs
	MOVD xk+80(FP), qK       // qK = xk
	MOVD y_base+88(FP), qY   // qY = &y[0]
	MOVD y2_base+112(FP), qY2 // qY2 = &y2[0]
	MOVD ldy+136(FP), qLDY   // qLDY = ldy
	MOVD a_base+144(FP), qA  // qA = &a[0]
	MOVD lda+168(FP), qLDA   // qLDA = lda
	CBZ  qG, ger2sgdone       // nothing to do?
	CBZ  qD, ger2sgdone
	CBZ  qN, ger2sgdone
	LSL  $2, qXS             // strides in bytes
	LSL  $2, qK
	LSL  $2, qLDY
	LSL  $2, qLDA

ger2sgroup:
	MOVD qX, qPX             // qPX = &x[j·xs]
	MOVD qX2, qPX2           // qPX2 = &x2[j·xs]
	MOVD qD, qR              // qR = d

ger2srow:
	VLD1R (qPX), [V16.S4]    // V16 = x[j,k] ×4 (F16 = x[j,k])
	VLD1R (qPX2), [V17.S4]   // V17 = x2[j,k] ×4 (F17 = x2[j,k])
	ADD  qK, qPX             // next x
	ADD  qK, qPX2            // next x2
	MOVD qA, qP              // qP = &a[r,0]
	MOVD qY, qPY             // qPY = &y[j,0]
	MOVD qY2, qPY2           // qPY2 = &y2[j,0]
	MOVD qN, qC              // qC = n

ger2sc16:
	CMP  $16, qC                                   // fewer than 16 columns?
	BLT  ger2sc4
	VLD1.P 64(qPY), [V0.S4, V1.S4, V2.S4, V3.S4]   // V0..V3 = y[j,c:c+16]
	VLD1.P 64(qPY2), [V8.S4, V9.S4, V10.S4, V11.S4] // V8..V11 = y2[j,c:c+16]
	VEOR V4.B16, V4.B16, V4.B16                    // V4..V7 = 0 (a not read)
	VEOR V5.B16, V5.B16, V5.B16
	VEOR V6.B16, V6.B16, V6.B16
	VEOR V7.B16, V7.B16, V7.B16
	VFMLA V16.S4, V0.S4, V4.S4                     // V4..V7 += x·y
	VFMLA V16.S4, V1.S4, V5.S4
	VFMLA V16.S4, V2.S4, V6.S4
	VFMLA V16.S4, V3.S4, V7.S4
	VFMLA V17.S4, V8.S4, V4.S4                     // V4..V7 += x2·y2
	VFMLA V17.S4, V9.S4, V5.S4
	VFMLA V17.S4, V10.S4, V6.S4
	VFMLA V17.S4, V11.S4, V7.S4
	VST1.P [V4.S4, V5.S4, V6.S4, V7.S4], 64(qP)    // a[r,c:c+16] = V4..V7
	SUB  $16, qC                                   // qC -= 16
	B    ger2sc16

ger2sc4:
	CMP  $4, qC                 // fewer than 4 columns?
	BLT  ger2sc1
	VLD1.P 16(qPY), [V0.S4]     // V0 = y[j,c:c+4]
	VLD1.P 16(qPY2), [V8.S4]    // V8 = y2[j,c:c+4]
	VEOR V4.B16, V4.B16, V4.B16 // V4 = 0 (a not read)
	VFMLA V16.S4, V0.S4, V4.S4  // V4 += x·y
	VFMLA V17.S4, V8.S4, V4.S4  // V4 += x2·y2
	VST1.P [V4.S4], 16(qP)      // a[r,c:c+4] = V4
	SUB  $4, qC                 // qC -= 4
	B    ger2sc4

ger2sc1:
	CBZ  qC, ger2snext        // columns done?
	FMOVS.P 4(qPY), F0       // F0 = y[j,c]
	FMOVS.P 4(qPY2), F8      // F8 = y2[j,c]
	VEOR V4.B16, V4.B16, V4.B16 // F4 = 0 (a not read)
	FMADDS F0, F4, F16, F4   // F4 += x·y[j,c]
	FMADDS F8, F4, F17, F4   // F4 += x2·y2[j,c]
	FMOVS.P F4, 4(qP)        // a[r,c] = F4
	SUB  $1, qC              // qC--
	B    ger2sc1

ger2snext:
	ADD  qLDA, qA            // next row of a
	SUB  $1, qR              // qR--
	CBNZ qR, ger2srow
	ADD  qXS, qX             // next group of x
	ADD  qXS, qX2            // next group of x2
	ADD  qLDY, qY            // next group of y
	ADD  qLDY, qY2           // next group of y2
	SUB  $1, qG              // qG--
	CBNZ qG, ger2sgroup

ger2sgdone:
	RET

#undef qX2
#undef qY2
#undef qPX2
#undef qPY2

#undef qG
#undef qD
#undef qN
#undef qX
#undef qXS
#undef qK
#undef qY
#undef qLDY
#undef qA
#undef qLDA
#undef qR
#undef qPX
#undef qP
#undef qPY
#undef qC
#undef qDA
