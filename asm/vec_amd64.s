//go:build amd64 && !noasm

// Vector primitives for amd64 (AVX2+FMA and AVX-512F): the matrix-vector
// products of capsule votes and routing, the column softmax of the routing
// couplings and the squash non-linearity, with their gradients.
//
// Every kernel vectorises over the contiguous column index (the capsule
// index i for softmax and squash, whose data are stored component-major
// with row stride n). AVX2 kernels handle the last n%8 columns with
// VMASKMOVPS loads and stores (masked lanes are neither read nor written,
// so no access goes past the data); AVX-512 kernels use K masks. The bodies
// that serve both the full and the masked chunks are macros taking the load
// and store macros (and their labels) as arguments.
//
// exp (EXP8) is the Cephes-style single-precision exp: x is clamped to
// [−88, 88] (below −87.7 the result is exactly 0), k = round(x·log2 e),
// r = x − k·ln2 in two parts (Cody–Waite), e^r by a degree-7 Horner
// polynomial ((p(r)·r + 1)·r + 1 with p of degree 5), and 2^k built by
// adding 127 to k and shifting it into the exponent field. Max error about
// 2 ulp. NaN propagates (the clamps keep a NaN operand).

#include "textflag.h"

// Constants, each replicated over 8 lanes (32 bytes) so that AVX2 code can
// use them as memory operands and AVX-512 code can broadcast them.
// +0: LO = -88.0, exp input clamp, below
DATA ·vecC<>+0(SB)/4, $0xc2b00000
DATA ·vecC<>+4(SB)/4, $0xc2b00000
DATA ·vecC<>+8(SB)/4, $0xc2b00000
DATA ·vecC<>+12(SB)/4, $0xc2b00000
DATA ·vecC<>+16(SB)/4, $0xc2b00000
DATA ·vecC<>+20(SB)/4, $0xc2b00000
DATA ·vecC<>+24(SB)/4, $0xc2b00000
DATA ·vecC<>+28(SB)/4, $0xc2b00000
// +32: HI = 88.0, exp input clamp, above
DATA ·vecC<>+32(SB)/4, $0x42b00000
DATA ·vecC<>+36(SB)/4, $0x42b00000
DATA ·vecC<>+40(SB)/4, $0x42b00000
DATA ·vecC<>+44(SB)/4, $0x42b00000
DATA ·vecC<>+48(SB)/4, $0x42b00000
DATA ·vecC<>+52(SB)/4, $0x42b00000
DATA ·vecC<>+56(SB)/4, $0x42b00000
DATA ·vecC<>+60(SB)/4, $0x42b00000
// +64: LOG2E = 1.4426950408889634, log2(e)
DATA ·vecC<>+64(SB)/4, $0x3fb8aa3b
DATA ·vecC<>+68(SB)/4, $0x3fb8aa3b
DATA ·vecC<>+72(SB)/4, $0x3fb8aa3b
DATA ·vecC<>+76(SB)/4, $0x3fb8aa3b
DATA ·vecC<>+80(SB)/4, $0x3fb8aa3b
DATA ·vecC<>+84(SB)/4, $0x3fb8aa3b
DATA ·vecC<>+88(SB)/4, $0x3fb8aa3b
DATA ·vecC<>+92(SB)/4, $0x3fb8aa3b
// +96: LN2HI = 0.693359375, ln 2, high part (exact in few bits)
DATA ·vecC<>+96(SB)/4, $0x3f318000
DATA ·vecC<>+100(SB)/4, $0x3f318000
DATA ·vecC<>+104(SB)/4, $0x3f318000
DATA ·vecC<>+108(SB)/4, $0x3f318000
DATA ·vecC<>+112(SB)/4, $0x3f318000
DATA ·vecC<>+116(SB)/4, $0x3f318000
DATA ·vecC<>+120(SB)/4, $0x3f318000
DATA ·vecC<>+124(SB)/4, $0x3f318000
// +128: LN2LO = -0.00021219444, ln 2 − LN2HI
DATA ·vecC<>+128(SB)/4, $0xb95e8083
DATA ·vecC<>+132(SB)/4, $0xb95e8083
DATA ·vecC<>+136(SB)/4, $0xb95e8083
DATA ·vecC<>+140(SB)/4, $0xb95e8083
DATA ·vecC<>+144(SB)/4, $0xb95e8083
DATA ·vecC<>+148(SB)/4, $0xb95e8083
DATA ·vecC<>+152(SB)/4, $0xb95e8083
DATA ·vecC<>+156(SB)/4, $0xb95e8083
// +160: P0 = 0.000198756915, exp polynomial coefficients, highest degree first
DATA ·vecC<>+160(SB)/4, $0x39506967
DATA ·vecC<>+164(SB)/4, $0x39506967
DATA ·vecC<>+168(SB)/4, $0x39506967
DATA ·vecC<>+172(SB)/4, $0x39506967
DATA ·vecC<>+176(SB)/4, $0x39506967
DATA ·vecC<>+180(SB)/4, $0x39506967
DATA ·vecC<>+184(SB)/4, $0x39506967
DATA ·vecC<>+188(SB)/4, $0x39506967
// +192: P1 = 0.0013981999507
DATA ·vecC<>+192(SB)/4, $0x3ab743ce
DATA ·vecC<>+196(SB)/4, $0x3ab743ce
DATA ·vecC<>+200(SB)/4, $0x3ab743ce
DATA ·vecC<>+204(SB)/4, $0x3ab743ce
DATA ·vecC<>+208(SB)/4, $0x3ab743ce
DATA ·vecC<>+212(SB)/4, $0x3ab743ce
DATA ·vecC<>+216(SB)/4, $0x3ab743ce
DATA ·vecC<>+220(SB)/4, $0x3ab743ce
// +224: P2 = 0.0083334519073
DATA ·vecC<>+224(SB)/4, $0x3c088908
DATA ·vecC<>+228(SB)/4, $0x3c088908
DATA ·vecC<>+232(SB)/4, $0x3c088908
DATA ·vecC<>+236(SB)/4, $0x3c088908
DATA ·vecC<>+240(SB)/4, $0x3c088908
DATA ·vecC<>+244(SB)/4, $0x3c088908
DATA ·vecC<>+248(SB)/4, $0x3c088908
DATA ·vecC<>+252(SB)/4, $0x3c088908
// +256: P3 = 0.041665795894
DATA ·vecC<>+256(SB)/4, $0x3d2aa9c1
DATA ·vecC<>+260(SB)/4, $0x3d2aa9c1
DATA ·vecC<>+264(SB)/4, $0x3d2aa9c1
DATA ·vecC<>+268(SB)/4, $0x3d2aa9c1
DATA ·vecC<>+272(SB)/4, $0x3d2aa9c1
DATA ·vecC<>+276(SB)/4, $0x3d2aa9c1
DATA ·vecC<>+280(SB)/4, $0x3d2aa9c1
DATA ·vecC<>+284(SB)/4, $0x3d2aa9c1
// +288: P4 = 0.16666665459
DATA ·vecC<>+288(SB)/4, $0x3e2aaaaa
DATA ·vecC<>+292(SB)/4, $0x3e2aaaaa
DATA ·vecC<>+296(SB)/4, $0x3e2aaaaa
DATA ·vecC<>+300(SB)/4, $0x3e2aaaaa
DATA ·vecC<>+304(SB)/4, $0x3e2aaaaa
DATA ·vecC<>+308(SB)/4, $0x3e2aaaaa
DATA ·vecC<>+312(SB)/4, $0x3e2aaaaa
DATA ·vecC<>+316(SB)/4, $0x3e2aaaaa
// +320: P5 = 0.50000001201
DATA ·vecC<>+320(SB)/4, $0x3f000000
DATA ·vecC<>+324(SB)/4, $0x3f000000
DATA ·vecC<>+328(SB)/4, $0x3f000000
DATA ·vecC<>+332(SB)/4, $0x3f000000
DATA ·vecC<>+336(SB)/4, $0x3f000000
DATA ·vecC<>+340(SB)/4, $0x3f000000
DATA ·vecC<>+344(SB)/4, $0x3f000000
DATA ·vecC<>+348(SB)/4, $0x3f000000
// +352: ONE = 1.0, 1
DATA ·vecC<>+352(SB)/4, $0x3f800000
DATA ·vecC<>+356(SB)/4, $0x3f800000
DATA ·vecC<>+360(SB)/4, $0x3f800000
DATA ·vecC<>+364(SB)/4, $0x3f800000
DATA ·vecC<>+368(SB)/4, $0x3f800000
DATA ·vecC<>+372(SB)/4, $0x3f800000
DATA ·vecC<>+376(SB)/4, $0x3f800000
DATA ·vecC<>+380(SB)/4, $0x3f800000
// +384: I127 = 127, int32 exponent bias
DATA ·vecC<>+384(SB)/4, $0x0000007f
DATA ·vecC<>+388(SB)/4, $0x0000007f
DATA ·vecC<>+392(SB)/4, $0x0000007f
DATA ·vecC<>+396(SB)/4, $0x0000007f
DATA ·vecC<>+400(SB)/4, $0x0000007f
DATA ·vecC<>+404(SB)/4, $0x0000007f
DATA ·vecC<>+408(SB)/4, $0x0000007f
DATA ·vecC<>+412(SB)/4, $0x0000007f
// +416: EPS = 1e-07, SquashEps
DATA ·vecC<>+416(SB)/4, $0x33d6bf95
DATA ·vecC<>+420(SB)/4, $0x33d6bf95
DATA ·vecC<>+424(SB)/4, $0x33d6bf95
DATA ·vecC<>+428(SB)/4, $0x33d6bf95
DATA ·vecC<>+432(SB)/4, $0x33d6bf95
DATA ·vecC<>+436(SB)/4, $0x33d6bf95
DATA ·vecC<>+440(SB)/4, $0x33d6bf95
DATA ·vecC<>+444(SB)/4, $0x33d6bf95
// +448: TWO = 2.0, 2
DATA ·vecC<>+448(SB)/4, $0x40000000
DATA ·vecC<>+452(SB)/4, $0x40000000
DATA ·vecC<>+456(SB)/4, $0x40000000
DATA ·vecC<>+460(SB)/4, $0x40000000
DATA ·vecC<>+464(SB)/4, $0x40000000
DATA ·vecC<>+468(SB)/4, $0x40000000
DATA ·vecC<>+472(SB)/4, $0x40000000
DATA ·vecC<>+476(SB)/4, $0x40000000
GLOBL ·vecC<>(SB), RODATA|NOPTR, $480

#define C_LO ·vecC<>+0(SB)
#define C_HI ·vecC<>+32(SB)
#define C_LOG2E ·vecC<>+64(SB)
#define C_LN2HI ·vecC<>+96(SB)
#define C_LN2LO ·vecC<>+128(SB)
#define C_P0 ·vecC<>+160(SB)
#define C_P1 ·vecC<>+192(SB)
#define C_P2 ·vecC<>+224(SB)
#define C_P3 ·vecC<>+256(SB)
#define C_P4 ·vecC<>+288(SB)
#define C_P5 ·vecC<>+320(SB)
#define C_ONE ·vecC<>+352(SB)
#define C_I127 ·vecC<>+384(SB)
#define C_EPS ·vecC<>+416(SB)
#define C_TWO ·vecC<>+448(SB)

// vecTailMask: 8 all-ones words then 8 zero words; the 8 words at
// +(8−r)·4 are the VMASKMOVPS mask of the first r lanes.
DATA ·vecTailMask<>+0(SB)/4, $0xffffffff
DATA ·vecTailMask<>+4(SB)/4, $0xffffffff
DATA ·vecTailMask<>+8(SB)/4, $0xffffffff
DATA ·vecTailMask<>+12(SB)/4, $0xffffffff
DATA ·vecTailMask<>+16(SB)/4, $0xffffffff
DATA ·vecTailMask<>+20(SB)/4, $0xffffffff
DATA ·vecTailMask<>+24(SB)/4, $0xffffffff
DATA ·vecTailMask<>+28(SB)/4, $0xffffffff
DATA ·vecTailMask<>+32(SB)/4, $0x00000000
DATA ·vecTailMask<>+36(SB)/4, $0x00000000
DATA ·vecTailMask<>+40(SB)/4, $0x00000000
DATA ·vecTailMask<>+44(SB)/4, $0x00000000
DATA ·vecTailMask<>+48(SB)/4, $0x00000000
DATA ·vecTailMask<>+52(SB)/4, $0x00000000
DATA ·vecTailMask<>+56(SB)/4, $0x00000000
DATA ·vecTailMask<>+60(SB)/4, $0x00000000
GLOBL ·vecTailMask<>(SB), RODATA|NOPTR, $64

// ---------------------------------------------------------------------------
// AVX2 + FMA

// Loads and stores of one 8-lane chunk: plain (U) or under MASK (M).
#define MASK Y15
#define LDU(src, dst) VMOVUPS src, dst
#define STU(src, dst) VMOVUPS src, dst
#define LDM(src, dst) VMASKMOVPS src, MASK, dst
#define STM(src, dst) VMASKMOVPS src, MASK, dst

// TAILMASK sets MASK to the first R lanes (0 < R < 8); clobbers R and T.
#define TAILMASK(R, T) \
	MOVQ $8, T                  /* T = 8 */ \
	SUBQ R, T                   /* T = 8 − r */ \
	LEAQ ·vecTailMask<>(SB), R  /* R = &mask table */ \
	VMOVDQU (R)(T*4), MASK      /* MASK = table[8−r : 16−r] */

// EXP8 sets X = exp(X) in 8 lanes; clobbers T and N. Needs YLO = −88 and
// YHI = 88 in every lane.
#define YLO Y13
#define YHI Y14
#define EXP8(X, T, N) \
	VMAXPS X, YLO, X            /* x = max(x, −88), NaN kept */ \
	VMINPS X, YHI, X            /* x = min(x, 88), NaN kept */ \
	VMULPS C_LOG2E, X, T        /* t = x·log2 e */ \
	VROUNDPS $0, T, T           /* k = round(t) */ \
	VFNMADD231PS C_LN2HI, T, X  /* x −= k·ln2hi */ \
	VFNMADD231PS C_LN2LO, T, X  /* r = x − k·ln2lo */ \
	VCVTPS2DQ T, N              /* k as int32 */ \
	VPADDD C_I127, N, N         /* k + 127 */ \
	VPSLLD $23, N, N            /* N = 2^k (exponent field) */ \
	VMOVUPS C_P0, T             /* p = P0 */ \
	VFMADD213PS C_P1, X, T      /* p = p·r + P1 */ \
	VFMADD213PS C_P2, X, T      /* p = p·r + P2 */ \
	VFMADD213PS C_P3, X, T      /* p = p·r + P3 */ \
	VFMADD213PS C_P4, X, T      /* p = p·r + P4 */ \
	VFMADD213PS C_P5, X, T      /* p = p·r + P5 */ \
	VFMADD213PS C_ONE, X, T     /* p = p·r + 1 */ \
	VFMADD213PS C_ONE, X, T     /* e^r = p·r + 1 */ \
	VMULPS N, T, X              /* x = e^r·2^k */

// ---------------------------------------------------------------------------
// func GemvNAVX2(m, n int, a []float32, lda int, x, y []float32)
//
// Four rows at a time: 8 accumulators (2 per row) over 16 columns, then one
// 8-column step, then a masked tail; the 4 row sums are reduced together
// with VHADDPS and added to y[r:r+4].

#define GN_A0 R8
#define GN_A1 R9
#define GN_A2 R10
#define GN_A3 R11
#define GN_X SI
#define GN_Y DI
#define GN_M R12
#define GN_N R13
#define GN_LDA R14
#define GN_C CX
#define GN_N16 BX
#define GN_N8 DX

// GN4_8 does one 8-column step of 4 rows into Y0, Y2, Y4, Y6.
#define GN4_8(LD) \
	LD((GN_X)(GN_C*4), Y8)      /* xv = x[c:c+8] */ \
	LD((GN_A0)(GN_C*4), Y9)     /* a[r0, c:c+8] */ \
	VFMADD231PS Y9, Y8, Y0      /* acc0 += a·x */ \
	LD((GN_A1)(GN_C*4), Y10)    /* a[r1, c:c+8] */ \
	VFMADD231PS Y10, Y8, Y2     /* acc1 += a·x */ \
	LD((GN_A2)(GN_C*4), Y11)    /* a[r2, c:c+8] */ \
	VFMADD231PS Y11, Y8, Y4     /* acc2 += a·x */ \
	LD((GN_A3)(GN_C*4), Y12)    /* a[r3, c:c+8] */ \
	VFMADD231PS Y12, Y8, Y6     /* acc3 += a·x */

// GN1_8 does one 8-column step of one row into Y0.
#define GN1_8(LD) \
	LD((GN_X)(GN_C*4), Y8)      /* xv = x[c:c+8] */ \
	LD((GN_A0)(GN_C*4), Y9)     /* a[r, c:c+8] */ \
	VFMADD231PS Y9, Y8, Y0      /* acc += a·x */

TEXT ·GemvNAVX2(SB), NOSPLIT, $0-96
	MOVQ m+0(FP), GN_M          // GN_M = rows left
	MOVQ n+8(FP), GN_N          // GN_N = n
	MOVQ a_base+16(FP), GN_A0   // GN_A0 = &a[0]
	MOVQ lda+40(FP), GN_LDA     // GN_LDA = lda
	MOVQ x_base+48(FP), GN_X    // GN_X = &x[0]
	MOVQ y_base+72(FP), GN_Y    // GN_Y = &y[0]
	TESTQ GN_M, GN_M            // m == 0: nothing to do
	JZ    gn_done
	TESTQ GN_N, GN_N            // n == 0: y += 0
	JZ    gn_done
	SHLQ  $2, GN_LDA            // lda in bytes
	MOVQ  GN_N, AX              // AX = n
	ANDQ  $7, AX                // AX = n % 8
	JZ    gn_nomask
	TAILMASK(AX, BX)            // MASK = first n%8 lanes

gn_nomask:
	MOVQ GN_N, GN_N16           // GN_N16 = n − 16: last start of a 16-step
	SUBQ $16, GN_N16
	MOVQ GN_N, GN_N8            // GN_N8 = n − 8: last start of an 8-step
	SUBQ $8, GN_N8

gn_rows4:
	CMPQ  GN_M, $4              // fewer than 4 rows left?
	JLT   gn_rows1
	LEAQ  (GN_A0)(GN_LDA*1), GN_A1 // GN_A1 = &a[r+1, 0]
	LEAQ  (GN_A1)(GN_LDA*1), GN_A2 // GN_A2 = &a[r+2, 0]
	LEAQ  (GN_A2)(GN_LDA*1), GN_A3 // GN_A3 = &a[r+3, 0]
	VXORPS Y0, Y0, Y0           // acc0 (cols 0:8 of each 16) = 0
	VXORPS Y1, Y1, Y1           // acc0' (cols 8:16) = 0
	VXORPS Y2, Y2, Y2           // acc1 = 0
	VXORPS Y3, Y3, Y3           // acc1' = 0
	VXORPS Y4, Y4, Y4           // acc2 = 0
	VXORPS Y5, Y5, Y5           // acc2' = 0
	VXORPS Y6, Y6, Y6           // acc3 = 0
	VXORPS Y7, Y7, Y7           // acc3' = 0
	XORQ  GN_C, GN_C            // c = 0

gn4_loop16:
	CMPQ GN_C, GN_N16           // c > n−16: no full 16-step left
	JGT  gn4_step8
	VMOVUPS (GN_X)(GN_C*4), Y8  // x[c:c+8]
	VMOVUPS 32(GN_X)(GN_C*4), Y9 // x[c+8:c+16]
	VFMADD231PS (GN_A0)(GN_C*4), Y8, Y0   // acc0 += a[r0, c:c+8]·x
	VFMADD231PS 32(GN_A0)(GN_C*4), Y9, Y1 // acc0' += a[r0, c+8:c+16]·x
	VFMADD231PS (GN_A1)(GN_C*4), Y8, Y2   // acc1 += a[r1, c:c+8]·x
	VFMADD231PS 32(GN_A1)(GN_C*4), Y9, Y3 // acc1' += a[r1, c+8:c+16]·x
	VFMADD231PS (GN_A2)(GN_C*4), Y8, Y4   // acc2 += a[r2, c:c+8]·x
	VFMADD231PS 32(GN_A2)(GN_C*4), Y9, Y5 // acc2' += a[r2, c+8:c+16]·x
	VFMADD231PS (GN_A3)(GN_C*4), Y8, Y6   // acc3 += a[r3, c:c+8]·x
	VFMADD231PS 32(GN_A3)(GN_C*4), Y9, Y7 // acc3' += a[r3, c+8:c+16]·x
	ADDQ $16, GN_C              // c += 16
	JMP  gn4_loop16

gn4_step8:
	CMPQ GN_C, GN_N8            // c > n−8: no full 8-step left
	JGT  gn4_tail
	GN4_8(LDU)                  // 8 columns of 4 rows
	ADDQ $8, GN_C               // c += 8

gn4_tail:
	CMPQ GN_C, GN_N             // c == n: no tail
	JGE  gn4_sum
	GN4_8(LDM)                  // last n%8 columns, masked

gn4_sum:
	VADDPS  Y1, Y0, Y0          // acc0 += acc0'
	VADDPS  Y3, Y2, Y2          // acc1 += acc1'
	VADDPS  Y5, Y4, Y4          // acc2 += acc2'
	VADDPS  Y7, Y6, Y6          // acc3 += acc3'
	VHADDPS Y2, Y0, Y0          // pairwise sums of rows 0, 1
	VHADDPS Y6, Y4, Y4          // pairwise sums of rows 2, 3
	VHADDPS Y4, Y0, Y0          // Y0 = [s0 s1 s2 s3 | s0' s1' s2' s3'] (half sums)
	VEXTRACTF128 $1, Y0, X1     // upper halves
	VADDPS  X1, X0, X0          // X0 = row sums of rows r..r+3
	VADDPS  (GN_Y), X0, X0      // += y[r:r+4]
	VMOVUPS X0, (GN_Y)          // y[r:r+4] = X0
	ADDQ    $16, GN_Y           // y += 4 rows
	LEAQ    (GN_A3)(GN_LDA*1), GN_A0 // GN_A0 = &a[r+4, 0]
	SUBQ    $4, GN_M            // 4 rows done
	JMP     gn_rows4

gn_rows1:
	TESTQ GN_M, GN_M            // rows left?
	JZ    gn_done
	VXORPS Y0, Y0, Y0           // acc = 0
	VXORPS Y1, Y1, Y1           // acc' = 0
	XORQ  GN_C, GN_C            // c = 0

gn1_loop16:
	CMPQ GN_C, GN_N16           // c > n−16: no full 16-step left
	JGT  gn1_step8
	VMOVUPS (GN_X)(GN_C*4), Y8  // x[c:c+8]
	VMOVUPS 32(GN_X)(GN_C*4), Y9 // x[c+8:c+16]
	VFMADD231PS (GN_A0)(GN_C*4), Y8, Y0   // acc += a[r, c:c+8]·x
	VFMADD231PS 32(GN_A0)(GN_C*4), Y9, Y1 // acc' += a[r, c+8:c+16]·x
	ADDQ $16, GN_C              // c += 16
	JMP  gn1_loop16

gn1_step8:
	CMPQ GN_C, GN_N8            // c > n−8: no full 8-step left
	JGT  gn1_tail
	GN1_8(LDU)                  // 8 columns
	ADDQ $8, GN_C               // c += 8

gn1_tail:
	CMPQ GN_C, GN_N             // c == n: no tail
	JGE  gn1_sum
	GN1_8(LDM)                  // last n%8 columns, masked

gn1_sum:
	VADDPS  Y1, Y0, Y0          // acc += acc'
	VEXTRACTF128 $1, Y0, X1     // upper half
	VADDPS  X1, X0, X0          // 4 partial sums
	VHADDPS X0, X0, X0          // 2 partial sums
	VHADDPS X0, X0, X0          // row sum
	VADDSS  (GN_Y), X0, X0      // += y[r]
	VMOVSS  X0, (GN_Y)          // y[r] = X0
	ADDQ    $4, GN_Y            // next y
	ADDQ    GN_LDA, GN_A0       // next row of a
	DECQ    GN_M                // one row done
	JMP     gn_rows1

gn_done:
	VZEROUPPER
	RET

// ---------------------------------------------------------------------------
// Column-chunk kernels: the y (or a) chunk of a column block stays in
// registers while the loop runs down the rows.

#define CC_A R8      // &a[0, 0]
#define CC_X SI      // &x[0]
#define CC_Y DI      // &y[0]
#define CC_M R12     // rows
#define CC_N R13     // columns
#define CC_LDA R14   // lda in bytes
#define CC_C CX      // column index
#define CC_NB BX     // n − block: last start of a full block
#define CC_N8 DX     // n − 8
#define CC_PA AX     // walks a down the rows
#define CC_PX R9     // walks x
#define CC_R R10     // rows left in the walk

// GT_8 does y[c:c+8] += Σ_r x[r]·a[r, c:c+8].
// Two accumulators (even and odd rows) halve the FMA latency chain, which
// bounds the small shapes (m = 8, n = 16).
#define GT_8(LD, ST, LOOP, DONE) \
	LD((CC_Y)(CC_C*4), Y0)      /* acc = y[c:c+8] */ \
	VXORPS Y1, Y1, Y1           /* acc' (odd rows) = 0 */ \
	LEAQ (CC_A)(CC_C*4), CC_PA  /* PA = &a[0, c] */ \
	MOVQ CC_X, CC_PX            /* PX = &x[0] */ \
	MOVQ CC_M, CC_R             /* R = m */ \
LOOP: \
	VBROADCASTSS (CC_PX), Y8    /* x[r] in every lane */ \
	LD((CC_PA), Y9)             /* a[r, c:c+8] */ \
	VFMADD231PS Y9, Y8, Y0      /* acc += x[r]·a */ \
	ADDQ CC_LDA, CC_PA          /* next row of a */ \
	ADDQ $4, CC_PX              /* next x */ \
	DECQ CC_R \
	JZ   DONE \
	VBROADCASTSS (CC_PX), Y8    /* x[r] in every lane */ \
	LD((CC_PA), Y9)             /* a[r, c:c+8] */ \
	VFMADD231PS Y9, Y8, Y1      /* acc' += x[r]·a */ \
	ADDQ CC_LDA, CC_PA          /* next row of a */ \
	ADDQ $4, CC_PX              /* next x */ \
	DECQ CC_R \
	JNZ  LOOP \
DONE: \
	VADDPS Y1, Y0, Y0           /* acc += acc' */ \
	ST(Y0, (CC_Y)(CC_C*4))      /* y[c:c+8] = acc */

// func GemvTAVX2(m, n int, a []float32, lda int, x, y []float32)
TEXT ·GemvTAVX2(SB), NOSPLIT, $0-96
	MOVQ m+0(FP), CC_M          // CC_M = m
	MOVQ n+8(FP), CC_N          // CC_N = n
	MOVQ a_base+16(FP), CC_A    // CC_A = &a[0]
	MOVQ lda+40(FP), CC_LDA     // CC_LDA = lda
	MOVQ x_base+48(FP), CC_X    // CC_X = &x[0]
	MOVQ y_base+72(FP), CC_Y    // CC_Y = &y[0]
	TESTQ CC_M, CC_M            // m == 0: y += 0
	JZ    gt_done
	TESTQ CC_N, CC_N            // n == 0: nothing to do
	JZ    gt_done
	SHLQ  $2, CC_LDA            // lda in bytes
	MOVQ  CC_N, AX              // AX = n
	ANDQ  $7, AX                // AX = n % 8
	JZ    gt_nomask
	TAILMASK(AX, BX)            // MASK = first n%8 lanes

gt_nomask:
	MOVQ CC_N, CC_NB            // CC_NB = n − 64
	SUBQ $64, CC_NB
	MOVQ CC_N, CC_N8            // CC_N8 = n − 8
	SUBQ $8, CC_N8
	XORQ CC_C, CC_C             // c = 0

gt_loop64:
	CMPQ CC_C, CC_NB            // c > n−64: no full 64-column block left
	JGT  gt_loop8
	VMOVUPS (CC_Y)(CC_C*4), Y0  // acc[0:8] = y[c:c+8]
	VMOVUPS 32(CC_Y)(CC_C*4), Y1 // acc[8:16]
	VMOVUPS 64(CC_Y)(CC_C*4), Y2 // acc[16:24]
	VMOVUPS 96(CC_Y)(CC_C*4), Y3 // acc[24:32]
	VMOVUPS 128(CC_Y)(CC_C*4), Y4 // acc[32:40]
	VMOVUPS 160(CC_Y)(CC_C*4), Y5 // acc[40:48]
	VMOVUPS 192(CC_Y)(CC_C*4), Y6 // acc[48:56]
	VMOVUPS 224(CC_Y)(CC_C*4), Y7 // acc[56:64]
	LEAQ (CC_A)(CC_C*4), CC_PA  // PA = &a[0, c]
	MOVQ CC_X, CC_PX            // PX = &x[0]
	MOVQ CC_M, CC_R             // R = m

gt_rows64:
	VBROADCASTSS (CC_PX), Y8    // x[r] in every lane
	VFMADD231PS (CC_PA), Y8, Y0     // acc[0:8] += x[r]·a[r, c:c+8]
	VFMADD231PS 32(CC_PA), Y8, Y1   // acc[8:16] += …
	VFMADD231PS 64(CC_PA), Y8, Y2   // acc[16:24] += …
	VFMADD231PS 96(CC_PA), Y8, Y3   // acc[24:32] += …
	VFMADD231PS 128(CC_PA), Y8, Y4  // acc[32:40] += …
	VFMADD231PS 160(CC_PA), Y8, Y5  // acc[40:48] += …
	VFMADD231PS 192(CC_PA), Y8, Y6  // acc[48:56] += …
	VFMADD231PS 224(CC_PA), Y8, Y7  // acc[56:64] += …
	ADDQ CC_LDA, CC_PA          // next row of a
	ADDQ $4, CC_PX              // next x
	DECQ CC_R
	JNZ  gt_rows64
	VMOVUPS Y0, (CC_Y)(CC_C*4)  // y[c:c+64] = acc
	VMOVUPS Y1, 32(CC_Y)(CC_C*4)
	VMOVUPS Y2, 64(CC_Y)(CC_C*4)
	VMOVUPS Y3, 96(CC_Y)(CC_C*4)
	VMOVUPS Y4, 128(CC_Y)(CC_C*4)
	VMOVUPS Y5, 160(CC_Y)(CC_C*4)
	VMOVUPS Y6, 192(CC_Y)(CC_C*4)
	VMOVUPS Y7, 224(CC_Y)(CC_C*4)
	ADDQ $64, CC_C              // c += 64
	JMP  gt_loop64

gt_loop8:
	CMPQ CC_C, CC_N8            // c > n−8: no full 8-column block left
	JGT  gt_tail
	GT_8(LDU, STU, gt_rows8, gt_sum8)    // 8 columns
	ADDQ $8, CC_C               // c += 8
	JMP  gt_loop8

gt_tail:
	CMPQ CC_C, CC_N             // c == n: no tail
	JGE  gt_done
	GT_8(LDM, STM, gt_rowsm, gt_summ)    // last n%8 columns, masked

gt_done:
	VZEROUPPER
	RET

// GER_8 does a[r, c:c+8] += x[r]·y[c:c+8] for every row r.
#define GER_8(LD, ST, LOOP) \
	LD((CC_Y)(CC_C*4), Y0)      /* yv = y[c:c+8] */ \
	LEAQ (CC_A)(CC_C*4), CC_PA  /* PA = &a[0, c] */ \
	MOVQ CC_X, CC_PX            /* PX = &x[0] */ \
	MOVQ CC_M, CC_R             /* R = m */ \
LOOP: \
	VBROADCASTSS (CC_PX), Y8    /* x[r] in every lane */ \
	LD((CC_PA), Y4)             /* a[r, c:c+8] */ \
	VFMADD231PS Y0, Y8, Y4      /* a += x[r]·yv */ \
	ST(Y4, (CC_PA))             /* store a[r, c:c+8] */ \
	ADDQ CC_LDA, CC_PA          /* next row of a */ \
	ADDQ $4, CC_PX              /* next x */ \
	DECQ CC_R \
	JNZ  LOOP

// func GerAVX2(m, n int, x, y, a []float32, lda int)
TEXT ·GerAVX2(SB), NOSPLIT, $0-96
	MOVQ m+0(FP), CC_M          // CC_M = m
	MOVQ n+8(FP), CC_N          // CC_N = n
	MOVQ x_base+16(FP), CC_X    // CC_X = &x[0]
	MOVQ y_base+40(FP), CC_Y    // CC_Y = &y[0]
	MOVQ a_base+64(FP), CC_A    // CC_A = &a[0]
	MOVQ lda+88(FP), CC_LDA     // CC_LDA = lda
	TESTQ CC_M, CC_M            // m == 0: nothing to do
	JZ    ger_done
	TESTQ CC_N, CC_N            // n == 0: nothing to do
	JZ    ger_done
	SHLQ  $2, CC_LDA            // lda in bytes
	MOVQ  CC_N, AX              // AX = n
	ANDQ  $7, AX                // AX = n % 8
	JZ    ger_nomask
	TAILMASK(AX, BX)            // MASK = first n%8 lanes

ger_nomask:
	MOVQ CC_N, CC_NB            // CC_NB = n − 32
	SUBQ $32, CC_NB
	MOVQ CC_N, CC_N8            // CC_N8 = n − 8
	SUBQ $8, CC_N8
	XORQ CC_C, CC_C             // c = 0

ger_loop32:
	CMPQ CC_C, CC_NB            // c > n−32: no full 32-column block left
	JGT  ger_loop8
	VMOVUPS (CC_Y)(CC_C*4), Y0  // yv[0:8] = y[c:c+8]
	VMOVUPS 32(CC_Y)(CC_C*4), Y1 // yv[8:16]
	VMOVUPS 64(CC_Y)(CC_C*4), Y2 // yv[16:24]
	VMOVUPS 96(CC_Y)(CC_C*4), Y3 // yv[24:32]
	LEAQ (CC_A)(CC_C*4), CC_PA  // PA = &a[0, c]
	MOVQ CC_X, CC_PX            // PX = &x[0]
	MOVQ CC_M, CC_R             // R = m

ger_rows32:
	VBROADCASTSS (CC_PX), Y8    // x[r] in every lane
	VMOVUPS (CC_PA), Y4         // a[r, c:c+8]
	VMOVUPS 32(CC_PA), Y5       // a[r, c+8:c+16]
	VMOVUPS 64(CC_PA), Y6       // a[r, c+16:c+24]
	VMOVUPS 96(CC_PA), Y7       // a[r, c+24:c+32]
	VFMADD231PS Y0, Y8, Y4      // a += x[r]·yv
	VFMADD231PS Y1, Y8, Y5
	VFMADD231PS Y2, Y8, Y6
	VFMADD231PS Y3, Y8, Y7
	VMOVUPS Y4, (CC_PA)         // store a[r, c:c+32]
	VMOVUPS Y5, 32(CC_PA)
	VMOVUPS Y6, 64(CC_PA)
	VMOVUPS Y7, 96(CC_PA)
	ADDQ CC_LDA, CC_PA          // next row of a
	ADDQ $4, CC_PX              // next x
	DECQ CC_R
	JNZ  ger_rows32
	ADDQ $32, CC_C              // c += 32
	JMP  ger_loop32

ger_loop8:
	CMPQ CC_C, CC_N8            // c > n−8: no full 8-column block left
	JGT  ger_tail
	GER_8(LDU, STU, ger_rows8)  // 8 columns
	ADDQ $8, CC_C               // c += 8
	JMP  ger_loop8

ger_tail:
	CMPQ CC_C, CC_N             // c == n: no tail
	JGE  ger_done
	GER_8(LDM, STM, ger_rowsm)  // last n%8 columns, masked

ger_done:
	VZEROUPPER
	RET

// MA_8 does y[c:c+8] += Σ_l a[l, c:c+8]·x[l, c:c+8].
#define MA_LDX R11   // ldx in bytes
// Two accumulators (even and odd l), as in GT_8.
#define MA_8(LD, ST, LOOP, DONE) \
	LD((CC_Y)(CC_C*4), Y0)      /* acc = y[c:c+8] */ \
	VXORPS Y1, Y1, Y1           /* acc' (odd l) = 0 */ \
	LEAQ (CC_A)(CC_C*4), CC_PA  /* PA = &a[0, c] */ \
	LEAQ (CC_X)(CC_C*4), CC_PX  /* PX = &x[0, c] */ \
	MOVQ CC_M, CC_R             /* R = k */ \
LOOP: \
	LD((CC_PA), Y4)             /* a[l, c:c+8] */ \
	LD((CC_PX), Y5)             /* x[l, c:c+8] */ \
	VFMADD231PS Y5, Y4, Y0      /* acc += a·x */ \
	ADDQ CC_LDA, CC_PA          /* next row of a */ \
	ADDQ MA_LDX, CC_PX          /* next row of x */ \
	DECQ CC_R \
	JZ   DONE \
	LD((CC_PA), Y4)             /* a[l, c:c+8] */ \
	LD((CC_PX), Y5)             /* x[l, c:c+8] */ \
	VFMADD231PS Y5, Y4, Y1      /* acc' += a·x */ \
	ADDQ CC_LDA, CC_PA          /* next row of a */ \
	ADDQ MA_LDX, CC_PX          /* next row of x */ \
	DECQ CC_R \
	JNZ  LOOP \
DONE: \
	VADDPS Y1, Y0, Y0           /* acc += acc' */ \
	ST(Y0, (CC_Y)(CC_C*4))      /* y[c:c+8] = acc */

// func MulAddRowsAVX2(k, n int, a []float32, lda int, x []float32, ldx int, y []float32)
TEXT ·MulAddRowsAVX2(SB), NOSPLIT, $0-104
	MOVQ k+0(FP), CC_M          // CC_M = k
	MOVQ n+8(FP), CC_N          // CC_N = n
	MOVQ a_base+16(FP), CC_A    // CC_A = &a[0]
	MOVQ lda+40(FP), CC_LDA     // CC_LDA = lda
	MOVQ x_base+48(FP), CC_X    // CC_X = &x[0]
	MOVQ ldx+72(FP), MA_LDX     // MA_LDX = ldx
	MOVQ y_base+80(FP), CC_Y    // CC_Y = &y[0]
	TESTQ CC_M, CC_M            // k == 0: y += 0
	JZ    ma_done
	TESTQ CC_N, CC_N            // n == 0: nothing to do
	JZ    ma_done
	SHLQ  $2, CC_LDA            // lda in bytes
	SHLQ  $2, MA_LDX            // ldx in bytes
	MOVQ  CC_N, AX              // AX = n
	ANDQ  $7, AX                // AX = n % 8
	JZ    ma_nomask
	TAILMASK(AX, BX)            // MASK = first n%8 lanes

ma_nomask:
	MOVQ CC_N, CC_NB            // CC_NB = n − 32
	SUBQ $32, CC_NB
	MOVQ CC_N, CC_N8            // CC_N8 = n − 8
	SUBQ $8, CC_N8
	XORQ CC_C, CC_C             // c = 0

ma_loop32:
	CMPQ CC_C, CC_NB            // c > n−32: no full 32-column block left
	JGT  ma_loop8
	VMOVUPS (CC_Y)(CC_C*4), Y0  // acc[0:8] = y[c:c+8]
	VMOVUPS 32(CC_Y)(CC_C*4), Y1 // acc[8:16]
	VMOVUPS 64(CC_Y)(CC_C*4), Y2 // acc[16:24]
	VMOVUPS 96(CC_Y)(CC_C*4), Y3 // acc[24:32]
	LEAQ (CC_A)(CC_C*4), CC_PA  // PA = &a[0, c]
	LEAQ (CC_X)(CC_C*4), CC_PX  // PX = &x[0, c]
	MOVQ CC_M, CC_R             // R = k

ma_rows32:
	VMOVUPS (CC_PA), Y4         // a[l, c:c+8]
	VMOVUPS 32(CC_PA), Y5       // a[l, c+8:c+16]
	VMOVUPS 64(CC_PA), Y6       // a[l, c+16:c+24]
	VMOVUPS 96(CC_PA), Y7       // a[l, c+24:c+32]
	VFMADD231PS (CC_PX), Y4, Y0     // acc[0:8] += a·x[l, c:c+8]
	VFMADD231PS 32(CC_PX), Y5, Y1   // acc[8:16] += …
	VFMADD231PS 64(CC_PX), Y6, Y2   // acc[16:24] += …
	VFMADD231PS 96(CC_PX), Y7, Y3   // acc[24:32] += …
	ADDQ CC_LDA, CC_PA          // next row of a
	ADDQ MA_LDX, CC_PX          // next row of x
	DECQ CC_R
	JNZ  ma_rows32
	VMOVUPS Y0, (CC_Y)(CC_C*4)  // y[c:c+32] = acc
	VMOVUPS Y1, 32(CC_Y)(CC_C*4)
	VMOVUPS Y2, 64(CC_Y)(CC_C*4)
	VMOVUPS Y3, 96(CC_Y)(CC_C*4)
	ADDQ $32, CC_C              // c += 32
	JMP  ma_loop32

ma_loop8:
	CMPQ CC_C, CC_N8            // c > n−8: no full 8-column block left
	JGT  ma_tail
	MA_8(LDU, STU, ma_rows8, ma_sum8)    // 8 columns
	ADDQ $8, CC_C               // c += 8
	JMP  ma_loop8

ma_tail:
	CMPQ CC_C, CC_N             // c == n: no tail
	JGE  ma_done
	MA_8(LDM, STM, ma_rowsm, ma_summ)    // last n%8 columns, masked

ma_done:
	VZEROUPPER
	RET

// ---------------------------------------------------------------------------
// Column-wise kernels on rows×n matrices with row stride n (softmax over
// the rows of each column; squash of capsules stored component-major).
// SI, R9 walk the inputs' columns, DI the output's, 8 columns per chunk.

#define CW_ROWS R12  // rows (or capsule dimension d)
#define CW_N R13     // n
#define CW_LD R14    // row stride in bytes (n·4)
#define CW_C CX      // column index
#define CW_N8 DX     // n − 8
#define CW_KIND R11  // squash kind

// SM_8: c[:, chunk] = softmax over rows of l[:, chunk].
#define SM_8(LD, ST, LMAX, LEXP, LSCALE) \
	MOVQ SI, AX                 /* AX = &l[0, c] */ \
	MOVQ CW_ROWS, R8            /* R8 = rows */ \
	LD((AX), Y0)                /* mx = l[0, c:c+8] */ \
LMAX: \
	LD((AX), Y1)                /* l[r, c:c+8] */ \
	VMAXPS Y1, Y0, Y0           /* mx = max(mx, l) */ \
	ADDQ CW_LD, AX              /* next row */ \
	DECQ R8 \
	JNZ  LMAX \
	VXORPS Y2, Y2, Y2           /* sum = 0 */ \
	MOVQ SI, AX                 /* AX = &l[0, c] */ \
	MOVQ DI, BX                 /* BX = &c[0, c] */ \
	MOVQ CW_ROWS, R8            /* R8 = rows */ \
LEXP: \
	LD((AX), Y3)                /* l[r, c:c+8] */ \
	VSUBPS Y0, Y3, Y3           /* x = l − mx */ \
	EXP8(Y3, Y4, Y5)            /* e = exp(x) */ \
	ST(Y3, (BX))                /* c[r, c:c+8] = e */ \
	VADDPS Y3, Y2, Y2           /* sum += e */ \
	ADDQ CW_LD, AX              /* next row of l */ \
	ADDQ CW_LD, BX              /* next row of c */ \
	DECQ R8 \
	JNZ  LEXP \
	VMOVUPS C_ONE, Y1           /* 1 */ \
	VDIVPS Y2, Y1, Y1           /* inv = 1/sum */ \
	MOVQ DI, BX                 /* BX = &c[0, c] */ \
	MOVQ CW_ROWS, R8            /* R8 = rows */ \
LSCALE: \
	LD((BX), Y3)                /* e */ \
	VMULPS Y3, Y1, Y3           /* e·inv */ \
	ST(Y3, (BX))                /* c[r, c:c+8] = e·inv */ \
	ADDQ CW_LD, BX              /* next row of c */ \
	DECQ R8 \
	JNZ  LSCALE

// func SoftmaxColsAVX2(rows, n int, l, c []float32)
TEXT ·SoftmaxColsAVX2(SB), NOSPLIT, $0-64
	MOVQ rows+0(FP), CW_ROWS    // CW_ROWS = rows
	MOVQ n+8(FP), CW_N          // CW_N = n
	MOVQ l_base+16(FP), SI      // SI = &l[0]
	MOVQ c_base+40(FP), DI      // DI = &c[0]
	TESTQ CW_ROWS, CW_ROWS      // rows == 0: nothing to do
	JZ    sm_done
	TESTQ CW_N, CW_N            // n == 0: nothing to do
	JZ    sm_done
	MOVQ  CW_N, CW_LD           // row stride = n
	SHLQ  $2, CW_LD             // in bytes
	VMOVUPS C_LO, YLO           // exp clamps
	VMOVUPS C_HI, YHI
	MOVQ  CW_N, AX              // AX = n
	ANDQ  $7, AX                // AX = n % 8
	JZ    sm_nomask
	TAILMASK(AX, BX)            // MASK = first n%8 lanes

sm_nomask:
	MOVQ CW_N, CW_N8            // CW_N8 = n − 8
	SUBQ $8, CW_N8
	XORQ CW_C, CW_C             // c = 0

sm_loop:
	CMPQ CW_C, CW_N8            // c > n−8: no full chunk left
	JGT  sm_tail
	SM_8(LDU, STU, sm_max, sm_exp, sm_scale)
	ADDQ $32, SI                // next 8 columns of l
	ADDQ $32, DI                // next 8 columns of c
	ADDQ $8, CW_C               // c += 8
	JMP  sm_loop

sm_tail:
	CMPQ CW_C, CW_N             // c == n: no tail
	JGE  sm_done
	SM_8(LDM, STM, smm_max, smm_exp, smm_scale)

sm_done:
	VZEROUPPER
	RET

// SG_8: dl = c·(dc − Σ_r c·dc) on a chunk; SI = c, R9 = dc, DI = dl.
#define SG_8(LD, ST, LDOT, LOUT) \
	VXORPS Y0, Y0, Y0           /* dot = 0 */ \
	MOVQ SI, AX                 /* AX = &c[0, col] */ \
	MOVQ R9, BX                 /* BX = &dc[0, col] */ \
	MOVQ CW_ROWS, R8            /* R8 = rows */ \
LDOT: \
	LD((AX), Y1)                /* c[r] */ \
	LD((BX), Y2)                /* dc[r] */ \
	VFMADD231PS Y2, Y1, Y0      /* dot += c·dc */ \
	ADDQ CW_LD, AX              /* next row */ \
	ADDQ CW_LD, BX \
	DECQ R8 \
	JNZ  LDOT \
	MOVQ SI, AX                 /* AX = &c[0, col] */ \
	MOVQ R9, BX                 /* BX = &dc[0, col] */ \
	MOVQ DI, R10                /* R10 = &dl[0, col] */ \
	MOVQ CW_ROWS, R8            /* R8 = rows */ \
LOUT: \
	LD((AX), Y1)                /* c[r] */ \
	LD((BX), Y2)                /* dc[r] */ \
	VSUBPS Y0, Y2, Y2           /* dc − dot */ \
	VMULPS Y2, Y1, Y1           /* c·(dc − dot) */ \
	ST(Y1, (R10))               /* dl[r] = … */ \
	ADDQ CW_LD, AX              /* next row */ \
	ADDQ CW_LD, BX \
	ADDQ CW_LD, R10 \
	DECQ R8 \
	JNZ  LOUT

// func SoftmaxColsGradAVX2(rows, n int, c, dc, dl []float32)
TEXT ·SoftmaxColsGradAVX2(SB), NOSPLIT, $0-88
	MOVQ rows+0(FP), CW_ROWS    // CW_ROWS = rows
	MOVQ n+8(FP), CW_N          // CW_N = n
	MOVQ c_base+16(FP), SI      // SI = &c[0]
	MOVQ dc_base+40(FP), R9     // R9 = &dc[0]
	MOVQ dl_base+64(FP), DI     // DI = &dl[0]
	TESTQ CW_ROWS, CW_ROWS      // rows == 0: nothing to do
	JZ    sg_done
	TESTQ CW_N, CW_N            // n == 0: nothing to do
	JZ    sg_done
	MOVQ  CW_N, CW_LD           // row stride = n
	SHLQ  $2, CW_LD             // in bytes
	MOVQ  CW_N, AX              // AX = n
	ANDQ  $7, AX                // AX = n % 8
	JZ    sg_nomask
	TAILMASK(AX, BX)            // MASK = first n%8 lanes

sg_nomask:
	MOVQ CW_N, CW_N8            // CW_N8 = n − 8
	SUBQ $8, CW_N8
	XORQ CW_C, CW_C             // c = 0

sg_loop:
	CMPQ CW_C, CW_N8            // c > n−8: no full chunk left
	JGT  sg_tail
	SG_8(LDU, STU, sg_dot, sg_out)
	ADDQ $32, SI                // next 8 columns
	ADDQ $32, R9
	ADDQ $32, DI
	ADDQ $8, CW_C               // c += 8
	JMP  sg_loop

sg_tail:
	CMPQ CW_C, CW_N             // c == n: no tail
	JGE  sg_done
	SG_8(LDM, STM, sgm_dot, sgm_out)

sg_done:
	VZEROUPPER
	RET

// SQ_8: v = f(|s|)·s on a chunk of capsules; SI = s, DI = v.
#define SQ_8(LD, ST, LQ, LSAB, LAPPLY, LOUT) \
	VXORPS Y0, Y0, Y0           /* q = 0 */ \
	MOVQ SI, AX                 /* AX = &s[0, i] */ \
	MOVQ CW_ROWS, R8            /* R8 = d */ \
LQ: \
	LD((AX), Y1)                /* s[l] */ \
	VFMADD231PS Y1, Y1, Y0      /* q += s² */ \
	ADDQ CW_LD, AX              /* next component */ \
	DECQ R8 \
	JNZ  LQ \
	VADDPS C_EPS, Y0, Y1        /* q + ε */ \
	VSQRTPS Y1, Y1              /* nrm = sqrt(q + ε) */ \
	CMPQ CW_KIND, $0            /* Sabour? */ \
	JNE  LSAB \
	VXORPS Y2, Y2, Y2           /* 0 */ \
	VSUBPS Y1, Y2, Y2           /* −nrm */ \
	EXP8(Y2, Y3, Y4)            /* e = exp(−nrm) */ \
	VMOVUPS C_ONE, Y3           /* 1 */ \
	VSUBPS Y2, Y3, Y3           /* 1 − e */ \
	VDIVPS Y1, Y3, Y5           /* f = (1 − e)/nrm */ \
	JMP  LAPPLY \
LSAB: \
	VADDPS C_ONE, Y0, Y3        /* 1 + q */ \
	VDIVPS Y3, Y0, Y3           /* a = q/(1 + q) */ \
	VDIVPS Y1, Y3, Y5           /* f = a/nrm */ \
LAPPLY: \
	MOVQ SI, AX                 /* AX = &s[0, i] */ \
	MOVQ DI, BX                 /* BX = &v[0, i] */ \
	MOVQ CW_ROWS, R8            /* R8 = d */ \
LOUT: \
	LD((AX), Y1)                /* s[l] */ \
	VMULPS Y1, Y5, Y1           /* f·s */ \
	ST(Y1, (BX))                /* v[l] = f·s */ \
	ADDQ CW_LD, AX              /* next component */ \
	ADDQ CW_LD, BX \
	DECQ R8 \
	JNZ  LOUT

// func SquashAVX2(kind, d, n int, s, v []float32)
TEXT ·SquashAVX2(SB), NOSPLIT, $0-72
	MOVQ kind+0(FP), CW_KIND    // CW_KIND = 0 (Mazzia) or 1 (Sabour)
	MOVQ d+8(FP), CW_ROWS       // CW_ROWS = d
	MOVQ n+16(FP), CW_N         // CW_N = n
	MOVQ s_base+24(FP), SI      // SI = &s[0]
	MOVQ v_base+48(FP), DI      // DI = &v[0]
	TESTQ CW_ROWS, CW_ROWS      // d == 0: nothing to do
	JZ    sq_done
	TESTQ CW_N, CW_N            // n == 0: nothing to do
	JZ    sq_done
	MOVQ  CW_N, CW_LD           // row stride = n
	SHLQ  $2, CW_LD             // in bytes
	VMOVUPS C_LO, YLO           // exp clamps
	VMOVUPS C_HI, YHI
	MOVQ  CW_N, AX              // AX = n
	ANDQ  $7, AX                // AX = n % 8
	JZ    sq_nomask
	TAILMASK(AX, BX)            // MASK = first n%8 lanes

sq_nomask:
	MOVQ CW_N, CW_N8            // CW_N8 = n − 8
	SUBQ $8, CW_N8
	XORQ CW_C, CW_C             // i = 0

sq_loop:
	CMPQ CW_C, CW_N8            // i > n−8: no full chunk left
	JGT  sq_tail
	SQ_8(LDU, STU, sq_q, sq_sab, sq_apply, sq_out)
	ADDQ $32, SI                // next 8 capsules
	ADDQ $32, DI
	ADDQ $8, CW_C               // i += 8
	JMP  sq_loop

sq_tail:
	CMPQ CW_C, CW_N             // i == n: no tail
	JGE  sq_done
	SQ_8(LDM, STM, sqm_q, sqm_sab, sqm_apply, sqm_out)

sq_done:
	VZEROUPPER
	RET

// SQG_8: ds = f·dv + h·(s·dv)·s on a chunk; SI = s, R9 = dv, DI = ds.
#define SQG_8(LD, ST, LQ, LSAB, LAPPLY, LOUT) \
	VXORPS Y0, Y0, Y0           /* q = 0 */ \
	VXORPS Y1, Y1, Y1           /* dot = 0 */ \
	MOVQ SI, AX                 /* AX = &s[0, i] */ \
	MOVQ R9, BX                 /* BX = &dv[0, i] */ \
	MOVQ CW_ROWS, R8            /* R8 = d */ \
LQ: \
	LD((AX), Y2)                /* s[l] */ \
	LD((BX), Y3)                /* dv[l] */ \
	VFMADD231PS Y2, Y2, Y0      /* q += s² */ \
	VFMADD231PS Y3, Y2, Y1      /* dot += s·dv */ \
	ADDQ CW_LD, AX              /* next component */ \
	ADDQ CW_LD, BX \
	DECQ R8 \
	JNZ  LQ \
	VADDPS C_EPS, Y0, Y2        /* q + ε */ \
	VSQRTPS Y2, Y2              /* nrm = sqrt(q + ε) */ \
	CMPQ CW_KIND, $0            /* Sabour? */ \
	JNE  LSAB \
	VXORPS Y3, Y3, Y3           /* 0 */ \
	VSUBPS Y2, Y3, Y3           /* −nrm */ \
	EXP8(Y3, Y4, Y5)            /* e = exp(−nrm) */ \
	VMOVUPS C_ONE, Y4           /* 1 */ \
	VSUBPS Y3, Y4, Y4           /* 1 − e */ \
	VDIVPS Y2, Y4, Y10          /* f = (1 − e)/nrm */ \
	VSUBPS Y10, Y3, Y3          /* e − f */ \
	VMULPS Y2, Y2, Y4           /* nrm² */ \
	VDIVPS Y4, Y3, Y11          /* h = (e − f)/nrm² = f'(nrm)/nrm */ \
	JMP  LAPPLY \
LSAB: \
	VADDPS C_ONE, Y0, Y3        /* t = 1 + q */ \
	VDIVPS Y3, Y0, Y4           /* a = q/t */ \
	VDIVPS Y2, Y4, Y10          /* f = a/nrm */ \
	VMULPS Y3, Y3, Y3           /* t² */ \
	VMULPS Y2, Y3, Y3           /* t²·nrm */ \
	VMOVUPS C_TWO, Y5           /* 2 */ \
	VDIVPS Y3, Y5, Y5           /* 2/(t²·nrm) */ \
	VMULPS Y2, Y2, Y6           /* nrm² */ \
	VMULPS Y2, Y6, Y6           /* nrm³ */ \
	VDIVPS Y6, Y4, Y6           /* a/nrm³ */ \
	VSUBPS Y6, Y5, Y11          /* h = 2/(t²·nrm) − a/nrm³ */ \
LAPPLY: \
	VMULPS Y1, Y11, Y11         /* hd = h·dot */ \
	MOVQ SI, AX                 /* AX = &s[0, i] */ \
	MOVQ R9, BX                 /* BX = &dv[0, i] */ \
	MOVQ DI, R10                /* R10 = &ds[0, i] */ \
	MOVQ CW_ROWS, R8            /* R8 = d */ \
LOUT: \
	LD((BX), Y2)                /* dv[l] */ \
	VMULPS Y2, Y10, Y2          /* f·dv */ \
	LD((AX), Y3)                /* s[l] */ \
	VFMADD231PS Y3, Y11, Y2     /* f·dv + hd·s */ \
	ST(Y2, (R10))               /* ds[l] = … */ \
	ADDQ CW_LD, AX              /* next component */ \
	ADDQ CW_LD, BX \
	ADDQ CW_LD, R10 \
	DECQ R8 \
	JNZ  LOUT

// func SquashGradAVX2(kind, d, n int, s, dv, ds []float32)
TEXT ·SquashGradAVX2(SB), NOSPLIT, $0-96
	MOVQ kind+0(FP), CW_KIND    // CW_KIND = 0 (Mazzia) or 1 (Sabour)
	MOVQ d+8(FP), CW_ROWS       // CW_ROWS = d
	MOVQ n+16(FP), CW_N         // CW_N = n
	MOVQ s_base+24(FP), SI      // SI = &s[0]
	MOVQ dv_base+48(FP), R9     // R9 = &dv[0]
	MOVQ ds_base+72(FP), DI     // DI = &ds[0]
	TESTQ CW_ROWS, CW_ROWS      // d == 0: nothing to do
	JZ    sqg_done
	TESTQ CW_N, CW_N            // n == 0: nothing to do
	JZ    sqg_done
	MOVQ  CW_N, CW_LD           // row stride = n
	SHLQ  $2, CW_LD             // in bytes
	VMOVUPS C_LO, YLO           // exp clamps
	VMOVUPS C_HI, YHI
	MOVQ  CW_N, AX              // AX = n
	ANDQ  $7, AX                // AX = n % 8
	JZ    sqg_nomask
	TAILMASK(AX, BX)            // MASK = first n%8 lanes

sqg_nomask:
	MOVQ CW_N, CW_N8            // CW_N8 = n − 8
	SUBQ $8, CW_N8
	XORQ CW_C, CW_C             // i = 0

sqg_loop:
	CMPQ CW_C, CW_N8            // i > n−8: no full chunk left
	JGT  sqg_tail
	SQG_8(LDU, STU, sqg_q, sqg_sab, sqg_apply, sqg_out)
	ADDQ $32, SI                // next 8 capsules
	ADDQ $32, R9
	ADDQ $32, DI
	ADDQ $8, CW_C               // i += 8
	JMP  sqg_loop

sqg_tail:
	CMPQ CW_C, CW_N             // i == n: no tail
	JGE  sqg_done
	SQG_8(LDM, STM, sqgm_q, sqgm_sab, sqgm_apply, sqgm_out)

sqg_done:
	VZEROUPPER
	RET

// ---------------------------------------------------------------------------
// AVX-512F

// Loads and stores of one 16-lane chunk: plain (U) or under K1 (M; masked
// lanes are zeroed on load, left alone on store, never accessed).
#define ZLDU(src, dst) VMOVUPS src, dst
#define ZSTU(src, dst) VMOVUPS src, dst
#define ZLDM(src, dst) VMOVUPS.Z src, K1, dst
#define ZSTM(src, dst) VMOVUPS src, K1, dst

// ZTAILMASK sets K1 to the first R lanes (0 < R < 16); clobbers CX and T.
#define ZTAILMASK(R, T) \
	MOVQ R, CX                  /* CX = r */ \
	MOVL $1, T                  /* T = 1 */ \
	SHLL CX, T                  /* T = 1 << r */ \
	DECL T                      /* T = (1 << r) − 1 */ \
	KMOVW T, K1                 /* K1 = first r lanes */

// EXP16 sets X = exp(X) in 16 lanes, as EXP8; clobbers T and N. Needs
// ZLO = −88 and ZHI = 88 in every lane.
#define ZLO Z13
#define ZHI Z14
#define EXP16(X, T, N) \
	VMAXPS X, ZLO, X            /* x = max(x, −88), NaN kept */ \
	VMINPS X, ZHI, X            /* x = min(x, 88), NaN kept */ \
	VMULPS.BCST C_LOG2E, X, T   /* t = x·log2 e */ \
	VRNDSCALEPS $0, T, T        /* k = round(t) */ \
	VFNMADD231PS.BCST C_LN2HI, T, X /* x −= k·ln2hi */ \
	VFNMADD231PS.BCST C_LN2LO, T, X /* r = x − k·ln2lo */ \
	VCVTPS2DQ T, N              /* k as int32 */ \
	VPADDD.BCST C_I127, N, N    /* k + 127 */ \
	VPSLLD $23, N, N            /* N = 2^k (exponent field) */ \
	VBROADCASTSS C_P0, T        /* p = P0 */ \
	VFMADD213PS.BCST C_P1, X, T /* p = p·r + P1 */ \
	VFMADD213PS.BCST C_P2, X, T /* p = p·r + P2 */ \
	VFMADD213PS.BCST C_P3, X, T /* p = p·r + P3 */ \
	VFMADD213PS.BCST C_P4, X, T /* p = p·r + P4 */ \
	VFMADD213PS.BCST C_P5, X, T /* p = p·r + P5 */ \
	VFMADD213PS.BCST C_ONE, X, T /* p = p·r + 1 */ \
	VFMADD213PS.BCST C_ONE, X, T /* e^r = p·r + 1 */ \
	VMULPS N, T, X              /* x = e^r·2^k */

// ---------------------------------------------------------------------------
// func GemvNAVX512(m, n int, a []float32, lda int, x, y []float32)
//
// As GemvNAVX2 on 16-lane registers: four rows at a time, 32-column steps,
// one 16-column step, a K1-masked tail; each row's 16 lanes are folded to 8
// before the shared VHADDPS reduction.

// GNZ4_16 does one 16-column step of 4 rows into Z0, Z2, Z4, Z6.
#define GNZ4_16(LD) \
	LD((GN_X)(GN_C*4), Z8)      /* xv = x[c:c+16] */ \
	LD((GN_A0)(GN_C*4), Z9)     /* a[r0, c:c+16] */ \
	VFMADD231PS Z9, Z8, Z0      /* acc0 += a·x */ \
	LD((GN_A1)(GN_C*4), Z10)    /* a[r1, c:c+16] */ \
	VFMADD231PS Z10, Z8, Z2     /* acc1 += a·x */ \
	LD((GN_A2)(GN_C*4), Z11)    /* a[r2, c:c+16] */ \
	VFMADD231PS Z11, Z8, Z4     /* acc2 += a·x */ \
	LD((GN_A3)(GN_C*4), Z12)    /* a[r3, c:c+16] */ \
	VFMADD231PS Z12, Z8, Z6     /* acc3 += a·x */

// GNZ1_16 does one 16-column step of one row into Z0.
#define GNZ1_16(LD) \
	LD((GN_X)(GN_C*4), Z8)      /* xv = x[c:c+16] */ \
	LD((GN_A0)(GN_C*4), Z9)     /* a[r, c:c+16] */ \
	VFMADD231PS Z9, Z8, Z0      /* acc += a·x */

TEXT ·GemvNAVX512(SB), NOSPLIT, $0-96
	MOVQ m+0(FP), GN_M          // GN_M = rows left
	MOVQ n+8(FP), GN_N          // GN_N = n
	MOVQ a_base+16(FP), GN_A0   // GN_A0 = &a[0]
	MOVQ lda+40(FP), GN_LDA     // GN_LDA = lda
	MOVQ x_base+48(FP), GN_X    // GN_X = &x[0]
	MOVQ y_base+72(FP), GN_Y    // GN_Y = &y[0]
	TESTQ GN_M, GN_M            // m == 0: nothing to do
	JZ    gnz_done
	TESTQ GN_N, GN_N            // n == 0: y += 0
	JZ    gnz_done
	SHLQ  $2, GN_LDA            // lda in bytes
	MOVQ  GN_N, AX              // AX = n
	ANDQ  $15, AX               // AX = n % 16
	JZ    gnz_nomask
	ZTAILMASK(AX, BX)           // K1 = first n%16 lanes

gnz_nomask:
	MOVQ GN_N, GN_N16           // GN_N16 = n − 32: last start of a 32-step
	SUBQ $32, GN_N16
	MOVQ GN_N, GN_N8            // GN_N8 = n − 16: last start of a 16-step
	SUBQ $16, GN_N8

gnz_rows4:
	CMPQ  GN_M, $4              // fewer than 4 rows left?
	JLT   gnz_rows1
	LEAQ  (GN_A0)(GN_LDA*1), GN_A1 // GN_A1 = &a[r+1, 0]
	LEAQ  (GN_A1)(GN_LDA*1), GN_A2 // GN_A2 = &a[r+2, 0]
	LEAQ  (GN_A2)(GN_LDA*1), GN_A3 // GN_A3 = &a[r+3, 0]
	VXORPS Z0, Z0, Z0           // acc0 (cols 0:16 of each 32) = 0
	VXORPS Z1, Z1, Z1           // acc0' (cols 16:32) = 0
	VXORPS Z2, Z2, Z2           // acc1 = 0
	VXORPS Z3, Z3, Z3           // acc1' = 0
	VXORPS Z4, Z4, Z4           // acc2 = 0
	VXORPS Z5, Z5, Z5           // acc2' = 0
	VXORPS Z6, Z6, Z6           // acc3 = 0
	VXORPS Z7, Z7, Z7           // acc3' = 0
	XORQ  GN_C, GN_C            // c = 0

gnz4_loop32:
	CMPQ GN_C, GN_N16           // c > n−32: no full 32-step left
	JGT  gnz4_step16
	VMOVUPS (GN_X)(GN_C*4), Z8  // x[c:c+16]
	VMOVUPS 64(GN_X)(GN_C*4), Z9 // x[c+16:c+32]
	VFMADD231PS (GN_A0)(GN_C*4), Z8, Z0   // acc0 += a[r0, c:c+16]·x
	VFMADD231PS 64(GN_A0)(GN_C*4), Z9, Z1 // acc0' += a[r0, c+16:c+32]·x
	VFMADD231PS (GN_A1)(GN_C*4), Z8, Z2   // acc1 += a[r1, c:c+16]·x
	VFMADD231PS 64(GN_A1)(GN_C*4), Z9, Z3 // acc1' += a[r1, c+16:c+32]·x
	VFMADD231PS (GN_A2)(GN_C*4), Z8, Z4   // acc2 += a[r2, c:c+16]·x
	VFMADD231PS 64(GN_A2)(GN_C*4), Z9, Z5 // acc2' += a[r2, c+16:c+32]·x
	VFMADD231PS (GN_A3)(GN_C*4), Z8, Z6   // acc3 += a[r3, c:c+16]·x
	VFMADD231PS 64(GN_A3)(GN_C*4), Z9, Z7 // acc3' += a[r3, c+16:c+32]·x
	ADDQ $32, GN_C              // c += 32
	JMP  gnz4_loop32

gnz4_step16:
	CMPQ GN_C, GN_N8            // c > n−16: no full 16-step left
	JGT  gnz4_tail
	GNZ4_16(ZLDU)               // 16 columns of 4 rows
	ADDQ $16, GN_C              // c += 16

gnz4_tail:
	CMPQ GN_C, GN_N             // c == n: no tail
	JGE  gnz4_sum
	GNZ4_16(ZLDM)               // last n%16 columns, masked

gnz4_sum:
	VADDPS  Z1, Z0, Z0          // acc0 += acc0'
	VADDPS  Z3, Z2, Z2          // acc1 += acc1'
	VADDPS  Z5, Z4, Z4          // acc2 += acc2'
	VADDPS  Z7, Z6, Z6          // acc3 += acc3'
	VEXTRACTF64X4 $1, Z0, Y1    // upper 8 lanes of acc0
	VADDPS  Y1, Y0, Y0          // acc0 folded to 8 lanes
	VEXTRACTF64X4 $1, Z2, Y3    // upper 8 lanes of acc1
	VADDPS  Y3, Y2, Y2          // acc1 folded
	VEXTRACTF64X4 $1, Z4, Y5    // upper 8 lanes of acc2
	VADDPS  Y5, Y4, Y4          // acc2 folded
	VEXTRACTF64X4 $1, Z6, Y7    // upper 8 lanes of acc3
	VADDPS  Y7, Y6, Y6          // acc3 folded
	VHADDPS Y2, Y0, Y0          // pairwise sums of rows 0, 1
	VHADDPS Y6, Y4, Y4          // pairwise sums of rows 2, 3
	VHADDPS Y4, Y0, Y0          // Y0 = [s0 s1 s2 s3 | s0' s1' s2' s3'] (half sums)
	VEXTRACTF128 $1, Y0, X1     // upper halves
	VADDPS  X1, X0, X0          // X0 = row sums of rows r..r+3
	VADDPS  (GN_Y), X0, X0      // += y[r:r+4]
	VMOVUPS X0, (GN_Y)          // y[r:r+4] = X0
	ADDQ    $16, GN_Y           // y += 4 rows
	LEAQ    (GN_A3)(GN_LDA*1), GN_A0 // GN_A0 = &a[r+4, 0]
	SUBQ    $4, GN_M            // 4 rows done
	JMP     gnz_rows4

gnz_rows1:
	TESTQ GN_M, GN_M            // rows left?
	JZ    gnz_done
	VXORPS Z0, Z0, Z0           // acc = 0
	VXORPS Z1, Z1, Z1           // acc' = 0
	XORQ  GN_C, GN_C            // c = 0

gnz1_loop32:
	CMPQ GN_C, GN_N16           // c > n−32: no full 32-step left
	JGT  gnz1_step16
	VMOVUPS (GN_X)(GN_C*4), Z8  // x[c:c+16]
	VMOVUPS 64(GN_X)(GN_C*4), Z9 // x[c+16:c+32]
	VFMADD231PS (GN_A0)(GN_C*4), Z8, Z0   // acc += a[r, c:c+16]·x
	VFMADD231PS 64(GN_A0)(GN_C*4), Z9, Z1 // acc' += a[r, c+16:c+32]·x
	ADDQ $32, GN_C              // c += 32
	JMP  gnz1_loop32

gnz1_step16:
	CMPQ GN_C, GN_N8            // c > n−16: no full 16-step left
	JGT  gnz1_tail
	GNZ1_16(ZLDU)               // 16 columns
	ADDQ $16, GN_C              // c += 16

gnz1_tail:
	CMPQ GN_C, GN_N             // c == n: no tail
	JGE  gnz1_sum
	GNZ1_16(ZLDM)               // last n%16 columns, masked

gnz1_sum:
	VADDPS  Z1, Z0, Z0          // acc += acc'
	VEXTRACTF64X4 $1, Z0, Y1    // upper 8 lanes
	VADDPS  Y1, Y0, Y0          // folded to 8 lanes
	VEXTRACTF128 $1, Y0, X1     // upper 4 lanes
	VADDPS  X1, X0, X0          // 4 partial sums
	VHADDPS X0, X0, X0          // 2 partial sums
	VHADDPS X0, X0, X0          // row sum
	VADDSS  (GN_Y), X0, X0      // += y[r]
	VMOVSS  X0, (GN_Y)          // y[r] = X0
	ADDQ    $4, GN_Y            // next y
	ADDQ    GN_LDA, GN_A0       // next row of a
	DECQ    GN_M                // one row done
	JMP     gnz_rows1

gnz_done:
	VZEROUPPER
	RET

// ---------------------------------------------------------------------------
// AVX-512F versions of the column-chunk and column-wise kernels: the same
// code as the AVX2 ones on 16-lane Z registers, K1-masked tails and
// broadcast constants.


// GT_16 does y[c:c+16] += Σ_r x[r]·a[r, c:c+16].
// Two accumulators (even and odd rows) halve the FMA latency chain, which
// bounds the small shapes (m = 8, n = 16).
#define GT_16(LD, ST, LOOP, DONE) \
	LD((CC_Y)(CC_C*4), Z0)      /* acc = y[c:c+16] */ \
	VXORPS Z1, Z1, Z1           /* acc' (odd rows) = 0 */ \
	LEAQ (CC_A)(CC_C*4), CC_PA  /* PA = &a[0, c] */ \
	MOVQ CC_X, CC_PX            /* PX = &x[0] */ \
	MOVQ CC_M, CC_R             /* R = m */ \
LOOP: \
	VBROADCASTSS (CC_PX), Z8    /* x[r] in every lane */ \
	LD((CC_PA), Z9)             /* a[r, c:c+16] */ \
	VFMADD231PS Z9, Z8, Z0      /* acc += x[r]·a */ \
	ADDQ CC_LDA, CC_PA          /* next row of a */ \
	ADDQ $4, CC_PX              /* next x */ \
	DECQ CC_R \
	JZ   DONE \
	VBROADCASTSS (CC_PX), Z8    /* x[r] in every lane */ \
	LD((CC_PA), Z9)             /* a[r, c:c+16] */ \
	VFMADD231PS Z9, Z8, Z1      /* acc' += x[r]·a */ \
	ADDQ CC_LDA, CC_PA          /* next row of a */ \
	ADDQ $4, CC_PX              /* next x */ \
	DECQ CC_R \
	JNZ  LOOP \
DONE: \
	VADDPS Z1, Z0, Z0           /* acc += acc' */ \
	ST(Z0, (CC_Y)(CC_C*4))      /* y[c:c+16] = acc */

// func GemvTAVX512(m, n int, a []float32, lda int, x, y []float32)
TEXT ·GemvTAVX512(SB), NOSPLIT, $0-96
	MOVQ m+0(FP), CC_M          // CC_M = m
	MOVQ n+8(FP), CC_N          // CC_N = n
	MOVQ a_base+16(FP), CC_A    // CC_A = &a[0]
	MOVQ lda+40(FP), CC_LDA     // CC_LDA = lda
	MOVQ x_base+48(FP), CC_X    // CC_X = &x[0]
	MOVQ y_base+72(FP), CC_Y    // CC_Y = &y[0]
	TESTQ CC_M, CC_M            // m == 0: y += 0
	JZ    zgt_done
	TESTQ CC_N, CC_N            // n == 0: nothing to do
	JZ    zgt_done
	SHLQ  $2, CC_LDA            // lda in bytes
	MOVQ  CC_N, AX              // AX = n
	ANDQ  $15, AX               // AX = n % 16
	JZ    zgt_nomask
	ZTAILMASK(AX, BX)            // MASK = first n%16 lanes

zgt_nomask:
	MOVQ CC_N, CC_NB            // CC_NB = n − 128
	SUBQ $128, CC_NB
	MOVQ CC_N, CC_N8            // CC_N8 = n − 16
	SUBQ $16, CC_N8
	XORQ CC_C, CC_C             // c = 0

zgt_loop128:
	CMPQ CC_C, CC_NB            // c > n−128: no full 128-column block left
	JGT  zgt_loop16
	VMOVUPS (CC_Y)(CC_C*4), Z0  // acc[0:16] = y[c:c+16]
	VMOVUPS 64(CC_Y)(CC_C*4), Z1 // acc[16:32]
	VMOVUPS 128(CC_Y)(CC_C*4), Z2 // acc[32:48]
	VMOVUPS 192(CC_Y)(CC_C*4), Z3 // acc[48:64]
	VMOVUPS 256(CC_Y)(CC_C*4), Z4 // acc[64:80]
	VMOVUPS 320(CC_Y)(CC_C*4), Z5 // acc[80:96]
	VMOVUPS 384(CC_Y)(CC_C*4), Z6 // acc[96:112]
	VMOVUPS 448(CC_Y)(CC_C*4), Z7 // acc[112:128]
	LEAQ (CC_A)(CC_C*4), CC_PA  // PA = &a[0, c]
	MOVQ CC_X, CC_PX            // PX = &x[0]
	MOVQ CC_M, CC_R             // R = m

zgt_rows128:
	VBROADCASTSS (CC_PX), Z8    // x[r] in every lane
	VFMADD231PS (CC_PA), Z8, Z0     // acc[0:16] += x[r]·a[r, c:c+16]
	VFMADD231PS 64(CC_PA), Z8, Z1   // acc[16:32] += …
	VFMADD231PS 128(CC_PA), Z8, Z2   // acc[32:48] += …
	VFMADD231PS 192(CC_PA), Z8, Z3   // acc[48:64] += …
	VFMADD231PS 256(CC_PA), Z8, Z4  // acc[64:80] += …
	VFMADD231PS 320(CC_PA), Z8, Z5  // acc[80:96] += …
	VFMADD231PS 384(CC_PA), Z8, Z6  // acc[96:112] += …
	VFMADD231PS 448(CC_PA), Z8, Z7  // acc[112:128] += …
	ADDQ CC_LDA, CC_PA          // next row of a
	ADDQ $4, CC_PX              // next x
	DECQ CC_R
	JNZ  zgt_rows128
	VMOVUPS Z0, (CC_Y)(CC_C*4)  // y[c:c+128] = acc
	VMOVUPS Z1, 64(CC_Y)(CC_C*4)
	VMOVUPS Z2, 128(CC_Y)(CC_C*4)
	VMOVUPS Z3, 192(CC_Y)(CC_C*4)
	VMOVUPS Z4, 256(CC_Y)(CC_C*4)
	VMOVUPS Z5, 320(CC_Y)(CC_C*4)
	VMOVUPS Z6, 384(CC_Y)(CC_C*4)
	VMOVUPS Z7, 448(CC_Y)(CC_C*4)
	ADDQ $128, CC_C              // c += 128
	JMP  zgt_loop128

zgt_loop16:
	CMPQ CC_C, CC_N8            // c > n−16: no full 16-column block left
	JGT  zgt_tail
	GT_16(ZLDU, ZSTU, zgt_rows16, zgt_sum16)    // 16 columns
	ADDQ $16, CC_C               // c += 16
	JMP  zgt_loop16

zgt_tail:
	CMPQ CC_C, CC_N             // c == n: no tail
	JGE  zgt_done
	GT_16(ZLDM, ZSTM, zgt_rowsm, zgt_summ)    // last n%16 columns, masked

zgt_done:
	VZEROUPPER
	RET

// GER_16 does a[r, c:c+16] += x[r]·y[c:c+16] for every row r.
#define GER_16(LD, ST, LOOP) \
	LD((CC_Y)(CC_C*4), Z0)      /* yv = y[c:c+16] */ \
	LEAQ (CC_A)(CC_C*4), CC_PA  /* PA = &a[0, c] */ \
	MOVQ CC_X, CC_PX            /* PX = &x[0] */ \
	MOVQ CC_M, CC_R             /* R = m */ \
LOOP: \
	VBROADCASTSS (CC_PX), Z8    /* x[r] in every lane */ \
	LD((CC_PA), Z4)             /* a[r, c:c+16] */ \
	VFMADD231PS Z0, Z8, Z4      /* a += x[r]·yv */ \
	ST(Z4, (CC_PA))             /* store a[r, c:c+16] */ \
	ADDQ CC_LDA, CC_PA          /* next row of a */ \
	ADDQ $4, CC_PX              /* next x */ \
	DECQ CC_R \
	JNZ  LOOP

// func GerAVX512(m, n int, x, y, a []float32, lda int)
TEXT ·GerAVX512(SB), NOSPLIT, $0-96
	MOVQ m+0(FP), CC_M          // CC_M = m
	MOVQ n+8(FP), CC_N          // CC_N = n
	MOVQ x_base+16(FP), CC_X    // CC_X = &x[0]
	MOVQ y_base+40(FP), CC_Y    // CC_Y = &y[0]
	MOVQ a_base+64(FP), CC_A    // CC_A = &a[0]
	MOVQ lda+88(FP), CC_LDA     // CC_LDA = lda
	TESTQ CC_M, CC_M            // m == 0: nothing to do
	JZ    zger_done
	TESTQ CC_N, CC_N            // n == 0: nothing to do
	JZ    zger_done
	SHLQ  $2, CC_LDA            // lda in bytes
	MOVQ  CC_N, AX              // AX = n
	ANDQ  $15, AX               // AX = n % 16
	JZ    zger_nomask
	ZTAILMASK(AX, BX)            // MASK = first n%16 lanes

zger_nomask:
	MOVQ CC_N, CC_NB            // CC_NB = n − 64
	SUBQ $64, CC_NB
	MOVQ CC_N, CC_N8            // CC_N8 = n − 16
	SUBQ $16, CC_N8
	XORQ CC_C, CC_C             // c = 0

zger_loop64:
	CMPQ CC_C, CC_NB            // c > n−64: no full 64-column block left
	JGT  zger_loop16
	VMOVUPS (CC_Y)(CC_C*4), Z0  // yv[0:16] = y[c:c+16]
	VMOVUPS 64(CC_Y)(CC_C*4), Z1 // yv[16:32]
	VMOVUPS 128(CC_Y)(CC_C*4), Z2 // yv[32:48]
	VMOVUPS 192(CC_Y)(CC_C*4), Z3 // yv[48:64]
	LEAQ (CC_A)(CC_C*4), CC_PA  // PA = &a[0, c]
	MOVQ CC_X, CC_PX            // PX = &x[0]
	MOVQ CC_M, CC_R             // R = m

zger_rows64:
	VBROADCASTSS (CC_PX), Z8    // x[r] in every lane
	VMOVUPS (CC_PA), Z4         // a[r, c:c+16]
	VMOVUPS 64(CC_PA), Z5       // a[r, c+16:c+32]
	VMOVUPS 128(CC_PA), Z6       // a[r, c+32:c+48]
	VMOVUPS 192(CC_PA), Z7       // a[r, c+48:c+64]
	VFMADD231PS Z0, Z8, Z4      // a += x[r]·yv
	VFMADD231PS Z1, Z8, Z5
	VFMADD231PS Z2, Z8, Z6
	VFMADD231PS Z3, Z8, Z7
	VMOVUPS Z4, (CC_PA)         // store a[r, c:c+64]
	VMOVUPS Z5, 64(CC_PA)
	VMOVUPS Z6, 128(CC_PA)
	VMOVUPS Z7, 192(CC_PA)
	ADDQ CC_LDA, CC_PA          // next row of a
	ADDQ $4, CC_PX              // next x
	DECQ CC_R
	JNZ  zger_rows64
	ADDQ $64, CC_C              // c += 64
	JMP  zger_loop64

zger_loop16:
	CMPQ CC_C, CC_N8            // c > n−16: no full 16-column block left
	JGT  zger_tail
	GER_16(ZLDU, ZSTU, zger_rows16)  // 16 columns
	ADDQ $16, CC_C               // c += 16
	JMP  zger_loop16

zger_tail:
	CMPQ CC_C, CC_N             // c == n: no tail
	JGE  zger_done
	GER_16(ZLDM, ZSTM, zger_rowsm)  // last n%16 columns, masked

zger_done:
	VZEROUPPER
	RET

// MA_16 does y[c:c+16] += Σ_l a[l, c:c+16]·x[l, c:c+16].
// Two accumulators (even and odd l), as in GT_16.
#define MA_16(LD, ST, LOOP, DONE) \
	LD((CC_Y)(CC_C*4), Z0)      /* acc = y[c:c+16] */ \
	VXORPS Z1, Z1, Z1           /* acc' (odd l) = 0 */ \
	LEAQ (CC_A)(CC_C*4), CC_PA  /* PA = &a[0, c] */ \
	LEAQ (CC_X)(CC_C*4), CC_PX  /* PX = &x[0, c] */ \
	MOVQ CC_M, CC_R             /* R = k */ \
LOOP: \
	LD((CC_PA), Z4)             /* a[l, c:c+16] */ \
	LD((CC_PX), Z5)             /* x[l, c:c+16] */ \
	VFMADD231PS Z5, Z4, Z0      /* acc += a·x */ \
	ADDQ CC_LDA, CC_PA          /* next row of a */ \
	ADDQ MA_LDX, CC_PX          /* next row of x */ \
	DECQ CC_R \
	JZ   DONE \
	LD((CC_PA), Z4)             /* a[l, c:c+16] */ \
	LD((CC_PX), Z5)             /* x[l, c:c+16] */ \
	VFMADD231PS Z5, Z4, Z1      /* acc' += a·x */ \
	ADDQ CC_LDA, CC_PA          /* next row of a */ \
	ADDQ MA_LDX, CC_PX          /* next row of x */ \
	DECQ CC_R \
	JNZ  LOOP \
DONE: \
	VADDPS Z1, Z0, Z0           /* acc += acc' */ \
	ST(Z0, (CC_Y)(CC_C*4))      /* y[c:c+16] = acc */

// func MulAddRowsAVX512(k, n int, a []float32, lda int, x []float32, ldx int, y []float32)
TEXT ·MulAddRowsAVX512(SB), NOSPLIT, $0-104
	MOVQ k+0(FP), CC_M          // CC_M = k
	MOVQ n+8(FP), CC_N          // CC_N = n
	MOVQ a_base+16(FP), CC_A    // CC_A = &a[0]
	MOVQ lda+40(FP), CC_LDA     // CC_LDA = lda
	MOVQ x_base+48(FP), CC_X    // CC_X = &x[0]
	MOVQ ldx+72(FP), MA_LDX     // MA_LDX = ldx
	MOVQ y_base+80(FP), CC_Y    // CC_Y = &y[0]
	TESTQ CC_M, CC_M            // k == 0: y += 0
	JZ    zma_done
	TESTQ CC_N, CC_N            // n == 0: nothing to do
	JZ    zma_done
	SHLQ  $2, CC_LDA            // lda in bytes
	SHLQ  $2, MA_LDX            // ldx in bytes
	MOVQ  CC_N, AX              // AX = n
	ANDQ  $15, AX               // AX = n % 16
	JZ    zma_nomask
	ZTAILMASK(AX, BX)            // MASK = first n%16 lanes

zma_nomask:
	MOVQ CC_N, CC_NB            // CC_NB = n − 64
	SUBQ $64, CC_NB
	MOVQ CC_N, CC_N8            // CC_N8 = n − 16
	SUBQ $16, CC_N8
	XORQ CC_C, CC_C             // c = 0

zma_loop64:
	CMPQ CC_C, CC_NB            // c > n−64: no full 64-column block left
	JGT  zma_loop16
	VMOVUPS (CC_Y)(CC_C*4), Z0  // acc[0:16] = y[c:c+16]
	VMOVUPS 64(CC_Y)(CC_C*4), Z1 // acc[16:32]
	VMOVUPS 128(CC_Y)(CC_C*4), Z2 // acc[32:48]
	VMOVUPS 192(CC_Y)(CC_C*4), Z3 // acc[48:64]
	LEAQ (CC_A)(CC_C*4), CC_PA  // PA = &a[0, c]
	LEAQ (CC_X)(CC_C*4), CC_PX  // PX = &x[0, c]
	MOVQ CC_M, CC_R             // R = k

zma_rows64:
	VMOVUPS (CC_PA), Z4         // a[l, c:c+16]
	VMOVUPS 64(CC_PA), Z5       // a[l, c+16:c+32]
	VMOVUPS 128(CC_PA), Z6       // a[l, c+32:c+48]
	VMOVUPS 192(CC_PA), Z7       // a[l, c+48:c+64]
	VFMADD231PS (CC_PX), Z4, Z0     // acc[0:16] += a·x[l, c:c+16]
	VFMADD231PS 64(CC_PX), Z5, Z1   // acc[16:32] += …
	VFMADD231PS 128(CC_PX), Z6, Z2   // acc[32:48] += …
	VFMADD231PS 192(CC_PX), Z7, Z3   // acc[48:64] += …
	ADDQ CC_LDA, CC_PA          // next row of a
	ADDQ MA_LDX, CC_PX          // next row of x
	DECQ CC_R
	JNZ  zma_rows64
	VMOVUPS Z0, (CC_Y)(CC_C*4)  // y[c:c+64] = acc
	VMOVUPS Z1, 64(CC_Y)(CC_C*4)
	VMOVUPS Z2, 128(CC_Y)(CC_C*4)
	VMOVUPS Z3, 192(CC_Y)(CC_C*4)
	ADDQ $64, CC_C              // c += 64
	JMP  zma_loop64

zma_loop16:
	CMPQ CC_C, CC_N8            // c > n−16: no full 16-column block left
	JGT  zma_tail
	MA_16(ZLDU, ZSTU, zma_rows16, zma_sum16)    // 16 columns
	ADDQ $16, CC_C               // c += 16
	JMP  zma_loop16

zma_tail:
	CMPQ CC_C, CC_N             // c == n: no tail
	JGE  zma_done
	MA_16(ZLDM, ZSTM, zma_rowsm, zma_summ)    // last n%16 columns, masked

zma_done:
	VZEROUPPER
	RET

// ---------------------------------------------------------------------------
// Column-wise kernels on rows×n matrices with row stride n (softmax over
// the rows of each column; squash of capsules stored component-major).
// SI, R9 walk the inputs' columns, DI the output's, 16 columns per chunk.


// SM_16: c[:, chunk] = softmax over rows of l[:, chunk].
#define SM_16(LD, ST, LMAX, LEXP, LSCALE) \
	MOVQ SI, AX                 /* AX = &l[0, c] */ \
	MOVQ CW_ROWS, R8            /* R8 = rows */ \
	LD((AX), Z0)                /* mx = l[0, c:c+16] */ \
LMAX: \
	LD((AX), Z1)                /* l[r, c:c+16] */ \
	VMAXPS Z1, Z0, Z0           /* mx = max(mx, l) */ \
	ADDQ CW_LD, AX              /* next row */ \
	DECQ R8 \
	JNZ  LMAX \
	VXORPS Z2, Z2, Z2           /* sum = 0 */ \
	MOVQ SI, AX                 /* AX = &l[0, c] */ \
	MOVQ DI, BX                 /* BX = &c[0, c] */ \
	MOVQ CW_ROWS, R8            /* R8 = rows */ \
LEXP: \
	LD((AX), Z3)                /* l[r, c:c+16] */ \
	VSUBPS Z0, Z3, Z3           /* x = l − mx */ \
	EXP16(Z3, Z4, Z5)            /* e = exp(x) */ \
	ST(Z3, (BX))                /* c[r, c:c+16] = e */ \
	VADDPS Z3, Z2, Z2           /* sum += e */ \
	ADDQ CW_LD, AX              /* next row of l */ \
	ADDQ CW_LD, BX              /* next row of c */ \
	DECQ R8 \
	JNZ  LEXP \
	VBROADCASTSS C_ONE, Z1           /* 1 */ \
	VDIVPS Z2, Z1, Z1           /* inv = 1/sum */ \
	MOVQ DI, BX                 /* BX = &c[0, c] */ \
	MOVQ CW_ROWS, R8            /* R8 = rows */ \
LSCALE: \
	LD((BX), Z3)                /* e */ \
	VMULPS Z3, Z1, Z3           /* e·inv */ \
	ST(Z3, (BX))                /* c[r, c:c+16] = e·inv */ \
	ADDQ CW_LD, BX              /* next row of c */ \
	DECQ R8 \
	JNZ  LSCALE

// func SoftmaxColsAVX512(rows, n int, l, c []float32)
TEXT ·SoftmaxColsAVX512(SB), NOSPLIT, $0-64
	MOVQ rows+0(FP), CW_ROWS    // CW_ROWS = rows
	MOVQ n+8(FP), CW_N          // CW_N = n
	MOVQ l_base+16(FP), SI      // SI = &l[0]
	MOVQ c_base+40(FP), DI      // DI = &c[0]
	TESTQ CW_ROWS, CW_ROWS      // rows == 0: nothing to do
	JZ    zsm_done
	TESTQ CW_N, CW_N            // n == 0: nothing to do
	JZ    zsm_done
	MOVQ  CW_N, CW_LD           // row stride = n
	SHLQ  $2, CW_LD             // in bytes
	VBROADCASTSS C_LO, ZLO           // exp clamps
	VBROADCASTSS C_HI, ZHI
	MOVQ  CW_N, AX              // AX = n
	ANDQ  $15, AX               // AX = n % 16
	JZ    zsm_nomask
	ZTAILMASK(AX, BX)            // MASK = first n%16 lanes

zsm_nomask:
	MOVQ CW_N, CW_N8            // CW_N8 = n − 16
	SUBQ $16, CW_N8
	XORQ CW_C, CW_C             // c = 0

zsm_loop:
	CMPQ CW_C, CW_N8            // c > n−16: no full chunk left
	JGT  zsm_tail
	SM_16(ZLDU, ZSTU, zsm_max, zsm_exp, zsm_scale)
	ADDQ $64, SI                // next 16 columns of l
	ADDQ $64, DI                // next 16 columns of c
	ADDQ $16, CW_C               // c += 16
	JMP  zsm_loop

zsm_tail:
	CMPQ CW_C, CW_N             // c == n: no tail
	JGE  zsm_done
	SM_16(ZLDM, ZSTM, zsmm_max, zsmm_exp, zsmm_scale)

zsm_done:
	VZEROUPPER
	RET

// SG_16: dl = c·(dc − Σ_r c·dc) on a chunk; SI = c, R9 = dc, DI = dl.
#define SG_16(LD, ST, LDOT, LOUT) \
	VXORPS Z0, Z0, Z0           /* dot = 0 */ \
	MOVQ SI, AX                 /* AX = &c[0, col] */ \
	MOVQ R9, BX                 /* BX = &dc[0, col] */ \
	MOVQ CW_ROWS, R8            /* R8 = rows */ \
LDOT: \
	LD((AX), Z1)                /* c[r] */ \
	LD((BX), Z2)                /* dc[r] */ \
	VFMADD231PS Z2, Z1, Z0      /* dot += c·dc */ \
	ADDQ CW_LD, AX              /* next row */ \
	ADDQ CW_LD, BX \
	DECQ R8 \
	JNZ  LDOT \
	MOVQ SI, AX                 /* AX = &c[0, col] */ \
	MOVQ R9, BX                 /* BX = &dc[0, col] */ \
	MOVQ DI, R10                /* R10 = &dl[0, col] */ \
	MOVQ CW_ROWS, R8            /* R8 = rows */ \
LOUT: \
	LD((AX), Z1)                /* c[r] */ \
	LD((BX), Z2)                /* dc[r] */ \
	VSUBPS Z0, Z2, Z2           /* dc − dot */ \
	VMULPS Z2, Z1, Z1           /* c·(dc − dot) */ \
	ST(Z1, (R10))               /* dl[r] = … */ \
	ADDQ CW_LD, AX              /* next row */ \
	ADDQ CW_LD, BX \
	ADDQ CW_LD, R10 \
	DECQ R8 \
	JNZ  LOUT

// func SoftmaxColsGradAVX512(rows, n int, c, dc, dl []float32)
TEXT ·SoftmaxColsGradAVX512(SB), NOSPLIT, $0-88
	MOVQ rows+0(FP), CW_ROWS    // CW_ROWS = rows
	MOVQ n+8(FP), CW_N          // CW_N = n
	MOVQ c_base+16(FP), SI      // SI = &c[0]
	MOVQ dc_base+40(FP), R9     // R9 = &dc[0]
	MOVQ dl_base+64(FP), DI     // DI = &dl[0]
	TESTQ CW_ROWS, CW_ROWS      // rows == 0: nothing to do
	JZ    zsg_done
	TESTQ CW_N, CW_N            // n == 0: nothing to do
	JZ    zsg_done
	MOVQ  CW_N, CW_LD           // row stride = n
	SHLQ  $2, CW_LD             // in bytes
	MOVQ  CW_N, AX              // AX = n
	ANDQ  $15, AX               // AX = n % 16
	JZ    zsg_nomask
	ZTAILMASK(AX, BX)            // MASK = first n%16 lanes

zsg_nomask:
	MOVQ CW_N, CW_N8            // CW_N8 = n − 16
	SUBQ $16, CW_N8
	XORQ CW_C, CW_C             // c = 0

zsg_loop:
	CMPQ CW_C, CW_N8            // c > n−16: no full chunk left
	JGT  zsg_tail
	SG_16(ZLDU, ZSTU, zsg_dot, zsg_out)
	ADDQ $64, SI                // next 16 columns
	ADDQ $64, R9
	ADDQ $64, DI
	ADDQ $16, CW_C               // c += 16
	JMP  zsg_loop

zsg_tail:
	CMPQ CW_C, CW_N             // c == n: no tail
	JGE  zsg_done
	SG_16(ZLDM, ZSTM, zsgm_dot, zsgm_out)

zsg_done:
	VZEROUPPER
	RET

// SQ_16: v = f(|s|)·s on a chunk of capsules; SI = s, DI = v.
#define SQ_16(LD, ST, LQ, LSAB, LAPPLY, LOUT) \
	VXORPS Z0, Z0, Z0           /* q = 0 */ \
	MOVQ SI, AX                 /* AX = &s[0, i] */ \
	MOVQ CW_ROWS, R8            /* R8 = d */ \
LQ: \
	LD((AX), Z1)                /* s[l] */ \
	VFMADD231PS Z1, Z1, Z0      /* q += s² */ \
	ADDQ CW_LD, AX              /* next component */ \
	DECQ R8 \
	JNZ  LQ \
	VADDPS.BCST C_EPS, Z0, Z1        /* q + ε */ \
	VSQRTPS Z1, Z1              /* nrm = sqrt(q + ε) */ \
	CMPQ CW_KIND, $0            /* Sabour? */ \
	JNE  LSAB \
	VXORPS Z2, Z2, Z2           /* 0 */ \
	VSUBPS Z1, Z2, Z2           /* −nrm */ \
	EXP16(Z2, Z3, Z4)            /* e = exp(−nrm) */ \
	VBROADCASTSS C_ONE, Z3           /* 1 */ \
	VSUBPS Z2, Z3, Z3           /* 1 − e */ \
	VDIVPS Z1, Z3, Z5           /* f = (1 − e)/nrm */ \
	JMP  LAPPLY \
LSAB: \
	VADDPS.BCST C_ONE, Z0, Z3        /* 1 + q */ \
	VDIVPS Z3, Z0, Z3           /* a = q/(1 + q) */ \
	VDIVPS Z1, Z3, Z5           /* f = a/nrm */ \
LAPPLY: \
	MOVQ SI, AX                 /* AX = &s[0, i] */ \
	MOVQ DI, BX                 /* BX = &v[0, i] */ \
	MOVQ CW_ROWS, R8            /* R8 = d */ \
LOUT: \
	LD((AX), Z1)                /* s[l] */ \
	VMULPS Z1, Z5, Z1           /* f·s */ \
	ST(Z1, (BX))                /* v[l] = f·s */ \
	ADDQ CW_LD, AX              /* next component */ \
	ADDQ CW_LD, BX \
	DECQ R8 \
	JNZ  LOUT

// func SquashAVX512(kind, d, n int, s, v []float32)
TEXT ·SquashAVX512(SB), NOSPLIT, $0-72
	MOVQ kind+0(FP), CW_KIND    // CW_KIND = 0 (Mazzia) or 1 (Sabour)
	MOVQ d+8(FP), CW_ROWS       // CW_ROWS = d
	MOVQ n+16(FP), CW_N         // CW_N = n
	MOVQ s_base+24(FP), SI      // SI = &s[0]
	MOVQ v_base+48(FP), DI      // DI = &v[0]
	TESTQ CW_ROWS, CW_ROWS      // d == 0: nothing to do
	JZ    zsq_done
	TESTQ CW_N, CW_N            // n == 0: nothing to do
	JZ    zsq_done
	MOVQ  CW_N, CW_LD           // row stride = n
	SHLQ  $2, CW_LD             // in bytes
	VBROADCASTSS C_LO, ZLO           // exp clamps
	VBROADCASTSS C_HI, ZHI
	MOVQ  CW_N, AX              // AX = n
	ANDQ  $15, AX               // AX = n % 16
	JZ    zsq_nomask
	ZTAILMASK(AX, BX)            // MASK = first n%16 lanes

zsq_nomask:
	MOVQ CW_N, CW_N8            // CW_N8 = n − 16
	SUBQ $16, CW_N8
	XORQ CW_C, CW_C             // i = 0

zsq_loop:
	CMPQ CW_C, CW_N8            // i > n−16: no full chunk left
	JGT  zsq_tail
	SQ_16(ZLDU, ZSTU, zsq_q, zsq_sab, zsq_apply, zsq_out)
	ADDQ $64, SI                // next 16 capsules
	ADDQ $64, DI
	ADDQ $16, CW_C               // i += 16
	JMP  zsq_loop

zsq_tail:
	CMPQ CW_C, CW_N             // i == n: no tail
	JGE  zsq_done
	SQ_16(ZLDM, ZSTM, zsqm_q, zsqm_sab, zsqm_apply, zsqm_out)

zsq_done:
	VZEROUPPER
	RET

// SQG_16: ds = f·dv + h·(s·dv)·s on a chunk; SI = s, R9 = dv, DI = ds.
#define SQG_16(LD, ST, LQ, LSAB, LAPPLY, LOUT) \
	VXORPS Z0, Z0, Z0           /* q = 0 */ \
	VXORPS Z1, Z1, Z1           /* dot = 0 */ \
	MOVQ SI, AX                 /* AX = &s[0, i] */ \
	MOVQ R9, BX                 /* BX = &dv[0, i] */ \
	MOVQ CW_ROWS, R8            /* R8 = d */ \
LQ: \
	LD((AX), Z2)                /* s[l] */ \
	LD((BX), Z3)                /* dv[l] */ \
	VFMADD231PS Z2, Z2, Z0      /* q += s² */ \
	VFMADD231PS Z3, Z2, Z1      /* dot += s·dv */ \
	ADDQ CW_LD, AX              /* next component */ \
	ADDQ CW_LD, BX \
	DECQ R8 \
	JNZ  LQ \
	VADDPS.BCST C_EPS, Z0, Z2        /* q + ε */ \
	VSQRTPS Z2, Z2              /* nrm = sqrt(q + ε) */ \
	CMPQ CW_KIND, $0            /* Sabour? */ \
	JNE  LSAB \
	VXORPS Z3, Z3, Z3           /* 0 */ \
	VSUBPS Z2, Z3, Z3           /* −nrm */ \
	EXP16(Z3, Z4, Z5)            /* e = exp(−nrm) */ \
	VBROADCASTSS C_ONE, Z4           /* 1 */ \
	VSUBPS Z3, Z4, Z4           /* 1 − e */ \
	VDIVPS Z2, Z4, Z10          /* f = (1 − e)/nrm */ \
	VSUBPS Z10, Z3, Z3          /* e − f */ \
	VMULPS Z2, Z2, Z4           /* nrm² */ \
	VDIVPS Z4, Z3, Z11          /* h = (e − f)/nrm² = f'(nrm)/nrm */ \
	JMP  LAPPLY \
LSAB: \
	VADDPS.BCST C_ONE, Z0, Z3        /* t = 1 + q */ \
	VDIVPS Z3, Z0, Z4           /* a = q/t */ \
	VDIVPS Z2, Z4, Z10          /* f = a/nrm */ \
	VMULPS Z3, Z3, Z3           /* t² */ \
	VMULPS Z2, Z3, Z3           /* t²·nrm */ \
	VBROADCASTSS C_TWO, Z5           /* 2 */ \
	VDIVPS Z3, Z5, Z5           /* 2/(t²·nrm) */ \
	VMULPS Z2, Z2, Z6           /* nrm² */ \
	VMULPS Z2, Z6, Z6           /* nrm³ */ \
	VDIVPS Z6, Z4, Z6           /* a/nrm³ */ \
	VSUBPS Z6, Z5, Z11          /* h = 2/(t²·nrm) − a/nrm³ */ \
LAPPLY: \
	VMULPS Z1, Z11, Z11         /* hd = h·dot */ \
	MOVQ SI, AX                 /* AX = &s[0, i] */ \
	MOVQ R9, BX                 /* BX = &dv[0, i] */ \
	MOVQ DI, R10                /* R10 = &ds[0, i] */ \
	MOVQ CW_ROWS, R8            /* R8 = d */ \
LOUT: \
	LD((BX), Z2)                /* dv[l] */ \
	VMULPS Z2, Z10, Z2          /* f·dv */ \
	LD((AX), Z3)                /* s[l] */ \
	VFMADD231PS Z3, Z11, Z2     /* f·dv + hd·s */ \
	ST(Z2, (R10))               /* ds[l] = … */ \
	ADDQ CW_LD, AX              /* next component */ \
	ADDQ CW_LD, BX \
	ADDQ CW_LD, R10 \
	DECQ R8 \
	JNZ  LOUT

// func SquashGradAVX512(kind, d, n int, s, dv, ds []float32)
TEXT ·SquashGradAVX512(SB), NOSPLIT, $0-96
	MOVQ kind+0(FP), CW_KIND    // CW_KIND = 0 (Mazzia) or 1 (Sabour)
	MOVQ d+8(FP), CW_ROWS       // CW_ROWS = d
	MOVQ n+16(FP), CW_N         // CW_N = n
	MOVQ s_base+24(FP), SI      // SI = &s[0]
	MOVQ dv_base+48(FP), R9     // R9 = &dv[0]
	MOVQ ds_base+72(FP), DI     // DI = &ds[0]
	TESTQ CW_ROWS, CW_ROWS      // d == 0: nothing to do
	JZ    zsqg_done
	TESTQ CW_N, CW_N            // n == 0: nothing to do
	JZ    zsqg_done
	MOVQ  CW_N, CW_LD           // row stride = n
	SHLQ  $2, CW_LD             // in bytes
	VBROADCASTSS C_LO, ZLO           // exp clamps
	VBROADCASTSS C_HI, ZHI
	MOVQ  CW_N, AX              // AX = n
	ANDQ  $15, AX               // AX = n % 16
	JZ    zsqg_nomask
	ZTAILMASK(AX, BX)            // MASK = first n%16 lanes

zsqg_nomask:
	MOVQ CW_N, CW_N8            // CW_N8 = n − 16
	SUBQ $16, CW_N8
	XORQ CW_C, CW_C             // i = 0

zsqg_loop:
	CMPQ CW_C, CW_N8            // i > n−16: no full chunk left
	JGT  zsqg_tail
	SQG_16(ZLDU, ZSTU, zsqg_q, zsqg_sab, zsqg_apply, zsqg_out)
	ADDQ $64, SI                // next 16 capsules
	ADDQ $64, R9
	ADDQ $64, DI
	ADDQ $16, CW_C               // i += 16
	JMP  zsqg_loop

zsqg_tail:
	CMPQ CW_C, CW_N             // i == n: no tail
	JGE  zsqg_done
	SQG_16(ZLDM, ZSTM, zsqgm_q, zsqgm_sab, zsqgm_apply, zsqgm_out)

zsqg_done:
	VZEROUPPER
	RET

// ---------------------------------------------------------------------------
// Grouped kernels (AVX2 and AVX-512F): g blocks of d rows of a, stacked
// (block j is rows j·d … j·d+d−1), each paired with its own row of the other
// operand, in one call. The routing kernels use them to treat all output
// capsules of a sample at once. The bodies are shared between the widths:
// they take the vector registers, the byte size OFF of one vector and the
// load/store macros (LDU/STU, LDM/STM under MASK for AVX2; ZLDU/ZSTU,
// ZLDM/ZSTM under K1 for AVX-512). Columns go in steps of two vectors, one
// vector, then a masked tail.

#define GG_G R12     // groups left
#define GG_N R13     // n
#define GG_NB BX     // n − 2 vectors: last start of a double step
#define GG_N1 DX     // n − 1 vector: last start of a single step
#define GG_X SI      // &x of the current group
#define GG_Y DI      // &y of the current group (not in gemvN)
#define GG_A R8      // &a[j·d, 0] of the current group (gemvN: current row)
#define GG_LDA R14   // lda in bytes
#define GG_K R10     // xk (ger, gemvT) or yk (gemvN) in bytes
#define GG_C CX      // column index
#define GG_PA AX     // walks a down the rows (gemvN: walks y)
#define GG_PX R9     // walks x down the rows (gemvN: scratch)
#define GG_R R11     // rows left in the walk

// GGSTART sets PA = &a[j·d, c], PX = &x[j·xs] and R = d (read from DD,
// the frame slot of d) for a walk down the d rows of the current group.
// Frame slots are macro arguments so that vet checks them in the caller.
#define GGSTART(DD) \
	LEAQ (GG_A)(GG_C*4), GG_PA  /* PA = &a[j·d, c] */ \
	MOVQ GG_X, GG_PX            /* PX = &x[j·xs] */ \
	MOVQ DD, GG_R               /* R = d */

// GGNEXT advances a by d rows and the pointers P1, P2 by their row strides
// (element counts in the frame slots S1, S2), then loops to LOOP while
// groups are left.
#define GGNEXT(DD, S1, P1, S2, P2, LOOP) \
	MOVQ DD, GG_R               /* R = d */ \
	IMULQ GG_LDA, GG_R          /* R = d·lda bytes */ \
	ADDQ GG_R, GG_A             /* a: next group */ \
	MOVQ S1, GG_R               /* R = first stride */ \
	LEAQ (P1)(GG_R*4), P1       /* P1: next group */ \
	MOVQ S2, GG_R               /* R = second stride */ \
	LEAQ (P2)(GG_R*4), P2       /* P2: next group */ \
	DECQ GG_G                   /* one group done */ \
	JNZ  LOOP

// GERG_2 does a[j·d+k, c:c+2v] += x[j·xs+k·xk]·y[j·ldy+c : c+2v] for k < d.
#define GERG_2(V0, V1, VX, VA, VB, OFF, DD, LOOP) \
	VMOVUPS (GG_Y)(GG_C*4), V0  /* yv = y[j, c:c+v] */ \
	VMOVUPS OFF(GG_Y)(GG_C*4), V1 /* yv' = y[j, c+v:c+2v] */ \
	GGSTART(DD) \
LOOP: \
	VBROADCASTSS (GG_PX), VX    /* x[j, k] in every lane */ \
	VMOVUPS (GG_PA), VA         /* a[r, c:c+v] */ \
	VMOVUPS OFF(GG_PA), VB      /* a[r, c+v:c+2v] */ \
	VFMADD231PS V0, VX, VA      /* a += x·yv */ \
	VFMADD231PS V1, VX, VB      /* a' += x·yv' */ \
	VMOVUPS VA, (GG_PA)         /* store a[r, c:c+v] */ \
	VMOVUPS VB, OFF(GG_PA)      /* store a[r, c+v:c+2v] */ \
	ADDQ GG_LDA, GG_PA          /* next row of a */ \
	ADDQ GG_K, GG_PX            /* next x */ \
	DECQ GG_R \
	JNZ  LOOP

// GERG_1 is GERG_2 for one vector, loaded and stored with LD and ST.
#define GERG_1(V0, VX, VA, LD, ST, DD, LOOP) \
	LD((GG_Y)(GG_C*4), V0)      /* yv = y[j, c:c+v] */ \
	GGSTART(DD) \
LOOP: \
	VBROADCASTSS (GG_PX), VX    /* x[j, k] in every lane */ \
	LD((GG_PA), VA)             /* a[r, c:c+v] */ \
	VFMADD231PS V0, VX, VA      /* a += x·yv */ \
	ST(VA, (GG_PA))             /* store a[r, c:c+v] */ \
	ADDQ GG_LDA, GG_PA          /* next row of a */ \
	ADDQ GG_K, GG_PX            /* next x */ \
	DECQ GG_R \
	JNZ  LOOP

// GTG_2 does y[j·ldy+c : c+2v] += Σ_k x[j·xs+k·xk]·a[j·d+k, c:c+2v].
// Even rows accumulate into V0, V1 and odd rows into V2, V3: four FMA
// chains, as the d-long chains bound long rows (Sabour: d = 16, n = 1152).
#define GTG_2(V0, V1, V2, V3, VX, OFF, DD, LOOP, DONE) \
	VMOVUPS (GG_Y)(GG_C*4), V0  /* acc = y[j, c:c+v] */ \
	VMOVUPS OFF(GG_Y)(GG_C*4), V1 /* acc' = y[j, c+v:c+2v] */ \
	VXORPS V2, V2, V2           /* odd-row acc = 0 */ \
	VXORPS V3, V3, V3           /* odd-row acc' = 0 */ \
	GGSTART(DD) \
LOOP: \
	VBROADCASTSS (GG_PX), VX    /* x[j, k] in every lane */ \
	VFMADD231PS (GG_PA), VX, V0 /* acc += x·a[r, c:c+v] */ \
	VFMADD231PS OFF(GG_PA), VX, V1 /* acc' += x·a[r, c+v:c+2v] */ \
	ADDQ GG_LDA, GG_PA          /* next row of a */ \
	ADDQ GG_K, GG_PX            /* next x */ \
	DECQ GG_R \
	JZ   DONE \
	VBROADCASTSS (GG_PX), VX    /* x[j, k] in every lane */ \
	VFMADD231PS (GG_PA), VX, V2 /* odd acc += x·a[r, c:c+v] */ \
	VFMADD231PS OFF(GG_PA), VX, V3 /* odd acc' += x·a[r, c+v:c+2v] */ \
	ADDQ GG_LDA, GG_PA          /* next row of a */ \
	ADDQ GG_K, GG_PX            /* next x */ \
	DECQ GG_R \
	JNZ  LOOP \
DONE: \
	VADDPS V2, V0, V0           /* acc += odd acc */ \
	VADDPS V3, V1, V1           /* acc' += odd acc' */ \
	VMOVUPS V0, (GG_Y)(GG_C*4)  /* y[j, c:c+v] = acc */ \
	VMOVUPS V1, OFF(GG_Y)(GG_C*4) /* y[j, c+v:c+2v] = acc' */

// GTG_1 is GTG_2 for one vector, loaded and stored with LD and ST.
#define GTG_1(V0, VX, VA, LD, ST, DD, LOOP) \
	LD((GG_Y)(GG_C*4), V0)      /* acc = y[j, c:c+v] */ \
	GGSTART(DD) \
LOOP: \
	VBROADCASTSS (GG_PX), VX    /* x[j, k] in every lane */ \
	LD((GG_PA), VA)             /* a[r, c:c+v] */ \
	VFMADD231PS VA, VX, V0      /* acc += x·a */ \
	ADDQ GG_LDA, GG_PA          /* next row of a */ \
	ADDQ GG_K, GG_PX            /* next x */ \
	DECQ GG_R \
	JNZ  LOOP \
	ST(V0, (GG_Y)(GG_C*4))      /* y[j, c:c+v] = acc */

// GGCOLS runs the column steps of one group: BODY2 while two vectors fit,
// then BODY1 once if one fits, then TAIL if columns are left; W is the
// number of lanes of one vector.
#define GGCOLS(W, BODY2, BODY1, TAIL, L2, L1, LT, LEND) \
	XORQ GG_C, GG_C             /* c = 0 */ \
L2: \
	CMPQ GG_C, GG_NB            /* c > n − 2v: no double step left */ \
	JGT  L1 \
	BODY2 \
	ADDQ $(2*W), GG_C           /* c += 2v */ \
	JMP  L2 \
L1: \
	CMPQ GG_C, GG_N1            /* c > n − v: no single step left */ \
	JGT  LT \
	BODY1 \
	ADDQ $W, GG_C               /* c += v */ \
LT: \
	CMPQ GG_C, GG_N             /* c == n: no tail */ \
	JGE  LEND \
	TAIL \
LEND:

// GGBOUNDS sets NB = n − 2W and N1 = n − W.
#define GGBOUNDS(W) \
	MOVQ GG_N, GG_NB            /* NB = n − 2v */ \
	SUBQ $(2*W), GG_NB \
	MOVQ GG_N, GG_N1            /* N1 = n − v */ \
	SUBQ $W, GG_N1

// func GerGroupsAVX2(ng, d, n int, x []float32, xs, xk int, y []float32, ldy int, a []float32, lda int)
TEXT ·GerGroupsAVX2(SB), NOSPLIT, $0-128
	MOVQ ng+0(FP), GG_G          // GG_G = ng
	MOVQ n+16(FP), GG_N         // GG_N = n
	MOVQ d+8(FP), GG_R          // GG_R = d
	TESTQ GG_G, GG_G            // ng == 0: nothing to do
	JZ    gerg_done
	TESTQ GG_N, GG_N            // n == 0: nothing to do
	JZ    gerg_done
	TESTQ GG_R, GG_R            // d == 0: nothing to do
	JZ    gerg_done
	MOVQ x_base+24(FP), GG_X    // GG_X = &x[0]
	MOVQ xk+56(FP), GG_K        // GG_K = xk
	SHLQ $2, GG_K               // xk in bytes
	MOVQ y_base+64(FP), GG_Y    // GG_Y = &y[0]
	MOVQ a_base+96(FP), GG_A    // GG_A = &a[0]
	MOVQ lda+120(FP), GG_LDA    // GG_LDA = lda
	SHLQ $2, GG_LDA             // lda in bytes
	MOVQ GG_N, AX               // AX = n
	ANDQ $7, AX                 // AX = n % 8
	JZ   gerg_nomask
	TAILMASK(AX, BX)            // MASK = first n%8 lanes

gerg_nomask:
	GGBOUNDS(8)

gerg_group:
	GGCOLS(8, GERG_2(Y0, Y1, Y8, Y4, Y5, 32, d+8(FP), gerg_rows2), GERG_1(Y0, Y8, Y4, LDU, STU, d+8(FP), gerg_rows1), GERG_1(Y0, Y8, Y4, LDM, STM, d+8(FP), gerg_rowsm), gerg_c2, gerg_c1, gerg_ct, gerg_cend)
	GGNEXT(d+8(FP), xs+48(FP), GG_X, ldy+88(FP), GG_Y, gerg_group)

gerg_done:
	VZEROUPPER
	RET

// func GemvTGroupsAVX2(ng, d, n int, a []float32, lda int, x []float32, xs, xk int, y []float32, ldy int)
TEXT ·GemvTGroupsAVX2(SB), NOSPLIT, $0-128
	MOVQ ng+0(FP), GG_G         // GG_G = ng
	MOVQ n+16(FP), GG_N         // GG_N = n
	MOVQ lda+48(FP), GG_LDA     // GG_LDA = lda
	MOVQ d+8(FP), GG_R          // GG_R = d
	TESTQ GG_G, GG_G            // ng == 0: nothing to do
	JZ    gtg_done
	TESTQ GG_N, GG_N            // n == 0: nothing to do
	JZ    gtg_done
	TESTQ GG_R, GG_R            // d == 0: nothing to do
	JZ    gtg_done
	MOVQ a_base+24(FP), GG_A    // GG_A = &a[0]
	SHLQ $2, GG_LDA             // lda in bytes
	MOVQ x_base+56(FP), GG_X    // GG_X = &x[0]
	MOVQ xk+88(FP), GG_K        // GG_K = xk
	SHLQ $2, GG_K               // xk in bytes
	MOVQ y_base+96(FP), GG_Y    // GG_Y = &y[0]
	MOVQ GG_N, AX               // AX = n
	ANDQ $7, AX                 // AX = n % 8
	JZ   gtg_nomask
	TAILMASK(AX, BX)            // MASK = first n%8 lanes

gtg_nomask:
	GGBOUNDS(8)

gtg_group:
	GGCOLS(8, GTG_2(Y0, Y1, Y2, Y3, Y8, 32, d+8(FP), gtg_rows2, gtg_sum2), GTG_1(Y0, Y8, Y4, LDU, STU, d+8(FP), gtg_rows1), GTG_1(Y0, Y8, Y4, LDM, STM, d+8(FP), gtg_rowsm), gtg_c2, gtg_c1, gtg_ct, gtg_cend)
	GGNEXT(d+8(FP), xs+80(FP), GG_X, ldy+120(FP), GG_Y, gtg_group)

gtg_done:
	VZEROUPPER
	RET

// GNG_ROW sums one row of a times x into y: V0 and V1 accumulate the
// double steps, one step and the tail, then REDUCE folds V0 to lane 0 of X0,
// which is added to the y element at PA. In gemvN, PA walks y (by yk) and
// A walks the rows of a.
#define GNG_ROW(V0, V1, VX, VA, OFF, W, LD, REDUCE, L2, L1, LT, LEND) \
	VXORPS V0, V0, V0           /* acc = 0 */ \
	VXORPS V1, V1, V1           /* acc' = 0 */ \
	XORQ GG_C, GG_C             /* c = 0 */ \
L2: \
	CMPQ GG_C, GG_NB            /* c > n − 2v: no double step left */ \
	JGT  L1 \
	VMOVUPS (GG_X)(GG_C*4), VX  /* x[j, c:c+v] */ \
	VFMADD231PS (GG_A)(GG_C*4), VX, V0 /* acc += a[r, c:c+v]·x */ \
	VMOVUPS OFF(GG_X)(GG_C*4), VA /* x[j, c+v:c+2v] */ \
	VFMADD231PS OFF(GG_A)(GG_C*4), VA, V1 /* acc' += a[r, c+v:c+2v]·x */ \
	ADDQ $(2*W), GG_C           /* c += 2v */ \
	JMP  L2 \
L1: \
	CMPQ GG_C, GG_N1            /* c > n − v: no single step left */ \
	JGT  LT \
	VMOVUPS (GG_X)(GG_C*4), VX  /* x[j, c:c+v] */ \
	VFMADD231PS (GG_A)(GG_C*4), VX, V0 /* acc += a[r, c:c+v]·x */ \
	ADDQ $W, GG_C               /* c += v */ \
LT: \
	CMPQ GG_C, GG_N             /* c == n: no tail */ \
	JGE  LEND \
	LD((GG_X)(GG_C*4), VX)      /* x[j, c:n], masked */ \
	LD((GG_A)(GG_C*4), VA)      /* a[r, c:n], masked */ \
	VFMADD231PS VA, VX, V1      /* acc' += a·x */ \
LEND: \
	VADDPS V1, V0, V0           /* acc += acc' */ \
	REDUCE \
	VADDSS (GG_PA), X0, X0      /* += y[j·ys + k·yk] */ \
	VMOVSS X0, (GG_PA)          /* store it */ \
	ADDQ GG_K, GG_PA            /* next y */ \
	ADDQ GG_LDA, GG_A           /* next row of a */

// GNG_ROW4 sums four rows of a (A and the next three, the row pointers
// held in A1..A3, which reuse registers the 4-row walk does not need) times
// x into four y elements at PA, PA+yk, PA+2·yk, PA+3·yk: one vector step
// at a time into V0..V3 (which must be Y0..Y3 or Z0..Z3), a masked tail,
// then FOLD (Z to Y for AVX-512) and one shared VHADDPS reduction.
#define GG_A1 DI
#define GG_A2 R9
#define GG_A3 BX
#define GNG_ROW4(V0, V1, V2, V3, VX, VA, W, LD, FOLD, L1, LT, LEND) \
	VXORPS V0, V0, V0           /* acc0 = 0 */ \
	VXORPS V1, V1, V1           /* acc1 = 0 */ \
	VXORPS V2, V2, V2           /* acc2 = 0 */ \
	VXORPS V3, V3, V3           /* acc3 = 0 */ \
	LEAQ (GG_A)(GG_LDA*1), GG_A1 /* A1 = &a[r+1, 0] */ \
	LEAQ (GG_A)(GG_LDA*2), GG_A2 /* A2 = &a[r+2, 0] */ \
	LEAQ (GG_A1)(GG_LDA*2), GG_A3 /* A3 = &a[r+3, 0] */ \
	XORQ GG_C, GG_C             /* c = 0 */ \
L1: \
	CMPQ GG_C, GG_N1            /* c > n − v: no full step left */ \
	JGT  LT \
	VMOVUPS (GG_X)(GG_C*4), VX  /* x[j, c:c+v] */ \
	VFMADD231PS (GG_A)(GG_C*4), VX, V0  /* acc0 += a[r, c:c+v]·x */ \
	VFMADD231PS (GG_A1)(GG_C*4), VX, V1 /* acc1 += a[r+1, c:c+v]·x */ \
	VFMADD231PS (GG_A2)(GG_C*4), VX, V2 /* acc2 += a[r+2, c:c+v]·x */ \
	VFMADD231PS (GG_A3)(GG_C*4), VX, V3 /* acc3 += a[r+3, c:c+v]·x */ \
	ADDQ $W, GG_C               /* c += v */ \
	JMP  L1 \
LT: \
	CMPQ GG_C, GG_N             /* c == n: no tail */ \
	JGE  LEND \
	LD((GG_X)(GG_C*4), VX)      /* x[j, c:n], masked */ \
	LD((GG_A)(GG_C*4), VA)      /* a[r, c:n], masked */ \
	VFMADD231PS VA, VX, V0      /* acc0 += a·x */ \
	LD((GG_A1)(GG_C*4), VA)     /* a[r+1, c:n], masked */ \
	VFMADD231PS VA, VX, V1      /* acc1 += a·x */ \
	LD((GG_A2)(GG_C*4), VA)     /* a[r+2, c:n], masked */ \
	VFMADD231PS VA, VX, V2      /* acc2 += a·x */ \
	LD((GG_A3)(GG_C*4), VA)     /* a[r+3, c:n], masked */ \
	VFMADD231PS VA, VX, V3      /* acc3 += a·x */ \
LEND: \
	FOLD \
	VHADDPS Y1, Y0, Y0          /* pairwise sums of rows 0, 1 */ \
	VHADDPS Y3, Y2, Y2          /* pairwise sums of rows 2, 3 */ \
	VHADDPS Y2, Y0, Y0          /* [s0 s1 s2 s3 | s0' s1' s2' s3'] */ \
	VEXTRACTF128 $1, Y0, X1     /* upper halves */ \
	VADDPS X1, X0, X0           /* X0 = the 4 row sums */ \
	VADDSS (GG_PA), X0, X1      /* y[k] + s0 */ \
	VMOVSS X1, (GG_PA)          /* store y[k] */ \
	ADDQ GG_K, GG_PA            /* next y */ \
	VMOVSHDUP X0, X1            /* lane 0 = s1 */ \
	VADDSS (GG_PA), X1, X1      /* y[k+1] + s1 */ \
	VMOVSS X1, (GG_PA)          /* store y[k+1] */ \
	ADDQ GG_K, GG_PA            /* next y */ \
	VMOVHLPS X0, X0, X1         /* lane 0 = s2 */ \
	VADDSS (GG_PA), X1, X1      /* y[k+2] + s2 */ \
	VMOVSS X1, (GG_PA)          /* store y[k+2] */ \
	ADDQ GG_K, GG_PA            /* next y */ \
	VPERMILPS $3, X0, X1        /* lane 0 = s3 */ \
	VADDSS (GG_PA), X1, X1      /* y[k+3] + s3 */ \
	VMOVSS X1, (GG_PA)          /* store y[k+3] */ \
	ADDQ GG_K, GG_PA            /* next y */ \
	LEAQ (GG_A3)(GG_LDA*1), GG_A /* a: 4 rows on */

// GNG_FOLD16 folds Z0..Z3 to 8 lanes in Y0..Y3.
#define GNG_FOLD16 \
	VEXTRACTF64X4 $1, Z0, Y4    /* upper half of acc0 */ \
	VADDPS Y4, Y0, Y0           /* acc0 in 8 lanes */ \
	VEXTRACTF64X4 $1, Z1, Y5    /* upper half of acc1 */ \
	VADDPS Y5, Y1, Y1           /* acc1 in 8 lanes */ \
	VEXTRACTF64X4 $1, Z2, Y6    /* upper half of acc2 */ \
	VADDPS Y6, Y2, Y2           /* acc2 in 8 lanes */ \
	VEXTRACTF64X4 $1, Z3, Y7    /* upper half of acc3 */ \
	VADDPS Y7, Y3, Y3           /* acc3 in 8 lanes */

// GNG_FOLD8 is the FOLD of the AVX2 GNG_ROW4: nothing to fold.
#define GNG_FOLD8

// GNG_REDUCE8 folds the 8 lanes of Y0 into lane 0 of X0.
#define GNG_REDUCE8 \
	VEXTRACTF128 $1, Y0, X1     /* upper half */ \
	VADDPS X1, X0, X0           /* 4 partial sums */ \
	VHADDPS X0, X0, X0          /* 2 partial sums */ \
	VHADDPS X0, X0, X0          /* row sum */

// GNG_REDUCE16 folds the 16 lanes of Z0 into lane 0 of X0.
#define GNG_REDUCE16 \
	VEXTRACTF64X4 $1, Z0, Y1    /* upper half */ \
	VADDPS Y1, Y0, Y0           /* 8 partial sums */ \
	GNG_REDUCE8

// func GemvNGroupsAVX2(ng, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int)
TEXT ·GemvNGroupsAVX2(SB), NOSPLIT, $0-128
	MOVQ ng+0(FP), GG_G         // GG_G = ng
	MOVQ n+16(FP), GG_N         // GG_N = n
	MOVQ lda+48(FP), GG_LDA     // GG_LDA = lda
	MOVQ d+8(FP), GG_R          // GG_R = d
	TESTQ GG_G, GG_G            // ng == 0: nothing to do
	JZ    gng_done
	TESTQ GG_N, GG_N            // n == 0: nothing to do
	JZ    gng_done
	TESTQ GG_R, GG_R            // d == 0: nothing to do
	JZ    gng_done
	MOVQ a_base+24(FP), GG_A    // GG_A = &a[0]: walks the rows
	SHLQ $2, GG_LDA             // lda in bytes
	MOVQ x_base+56(FP), GG_X    // GG_X = &x[0]
	MOVQ y_base+88(FP), GG_Y    // GG_Y = &y[0]
	MOVQ yk+120(FP), GG_K       // GG_K = yk
	SHLQ $2, GG_K               // yk in bytes
	MOVQ GG_N, AX               // AX = n
	ANDQ $7, AX                 // AX = n % 8
	JZ   gng_nomask
	TAILMASK(AX, BX)            // MASK = first n%8 lanes

gng_nomask:
	GGBOUNDS(8)
	MOVQ GG_Y, GG_PA            // PA = &y[0]: walks y

gng_group:
	MOVQ d+8(FP), GG_R          // R = d

gng_row4:
	CMPQ GG_R, $4               // fewer than 4 rows left in the group?
	JLT  gng_row1
	GNG_ROW4(Y0, Y1, Y2, Y3, Y8, Y9, 8, LDM, GNG_FOLD8, gng4_c1, gng4_ct, gng4_cend)
	SUBQ $4, GG_R               // 4 rows done
	JMP  gng_row4

gng_row1:
	TESTQ GG_R, GG_R            // rows left?
	JZ    gng_next
	MOVQ GG_N, GG_NB            // NB = n − 2v (GNG_ROW4 used its register)
	SUBQ $(2*8), GG_NB
	GNG_ROW(Y0, Y1, Y8, Y9, 32, 8, LDM, GNG_REDUCE8, gng_c2, gng_c1, gng_ct, gng_cend)
	DECQ GG_R                   // one row done
	JMP  gng_row1

gng_next:
	MOVQ d+8(FP), GG_PX         // PX = d
	IMULQ GG_K, GG_PX           // PX = d·yk bytes
	SUBQ GG_PX, GG_PA           // PA = &y[j·ys]
	MOVQ ys+112(FP), GG_PX      // PX = ys
	LEAQ (GG_PA)(GG_PX*4), GG_PA // PA = &y[(j+1)·ys]
	MOVQ ldx+80(FP), GG_PX      // PX = ldx
	LEAQ (GG_X)(GG_PX*4), GG_X  // x: next group
	DECQ GG_G                   // one group done
	JNZ  gng_group

gng_done:
	VZEROUPPER
	RET

// func GerGroupsAVX512(ng, d, n int, x []float32, xs, xk int, y []float32, ldy int, a []float32, lda int)
TEXT ·GerGroupsAVX512(SB), NOSPLIT, $0-128
	MOVQ ng+0(FP), GG_G          // GG_G = ng
	MOVQ n+16(FP), GG_N         // GG_N = n
	MOVQ d+8(FP), GG_R          // GG_R = d
	TESTQ GG_G, GG_G            // ng == 0: nothing to do
	JZ    zgerg_done
	TESTQ GG_N, GG_N            // n == 0: nothing to do
	JZ    zgerg_done
	TESTQ GG_R, GG_R            // d == 0: nothing to do
	JZ    zgerg_done
	MOVQ x_base+24(FP), GG_X    // GG_X = &x[0]
	MOVQ xk+56(FP), GG_K        // GG_K = xk
	SHLQ $2, GG_K               // xk in bytes
	MOVQ y_base+64(FP), GG_Y    // GG_Y = &y[0]
	MOVQ a_base+96(FP), GG_A    // GG_A = &a[0]
	MOVQ lda+120(FP), GG_LDA    // GG_LDA = lda
	SHLQ $2, GG_LDA             // lda in bytes
	MOVQ GG_N, AX               // AX = n
	ANDQ $15, AX                // AX = n % 16
	JZ   zgerg_nomask
	ZTAILMASK(AX, BX)           // K1 = first n%16 lanes

zgerg_nomask:
	GGBOUNDS(16)

zgerg_group:
	GGCOLS(16, GERG_2(Z0, Z1, Z8, Z4, Z5, 64, d+8(FP), zgerg_rows2), GERG_1(Z0, Z8, Z4, ZLDU, ZSTU, d+8(FP), zgerg_rows1), GERG_1(Z0, Z8, Z4, ZLDM, ZSTM, d+8(FP), zgerg_rowsm), zgerg_c2, zgerg_c1, zgerg_ct, zgerg_cend)
	GGNEXT(d+8(FP), xs+48(FP), GG_X, ldy+88(FP), GG_Y, zgerg_group)

zgerg_done:
	VZEROUPPER
	RET

// func GemvTGroupsAVX512(ng, d, n int, a []float32, lda int, x []float32, xs, xk int, y []float32, ldy int)
TEXT ·GemvTGroupsAVX512(SB), NOSPLIT, $0-128
	MOVQ ng+0(FP), GG_G         // GG_G = ng
	MOVQ n+16(FP), GG_N         // GG_N = n
	MOVQ lda+48(FP), GG_LDA     // GG_LDA = lda
	MOVQ d+8(FP), GG_R          // GG_R = d
	TESTQ GG_G, GG_G            // ng == 0: nothing to do
	JZ    zgtg_done
	TESTQ GG_N, GG_N            // n == 0: nothing to do
	JZ    zgtg_done
	TESTQ GG_R, GG_R            // d == 0: nothing to do
	JZ    zgtg_done
	MOVQ a_base+24(FP), GG_A    // GG_A = &a[0]
	SHLQ $2, GG_LDA             // lda in bytes
	MOVQ x_base+56(FP), GG_X    // GG_X = &x[0]
	MOVQ xk+88(FP), GG_K        // GG_K = xk
	SHLQ $2, GG_K               // xk in bytes
	MOVQ y_base+96(FP), GG_Y    // GG_Y = &y[0]
	MOVQ GG_N, AX               // AX = n
	ANDQ $15, AX                // AX = n % 16
	JZ   zgtg_nomask
	ZTAILMASK(AX, BX)           // K1 = first n%16 lanes

zgtg_nomask:
	GGBOUNDS(16)

zgtg_group:
	GGCOLS(16, GTG_2(Z0, Z1, Z2, Z3, Z8, 64, d+8(FP), zgtg_rows2, zgtg_sum2), GTG_1(Z0, Z8, Z4, ZLDU, ZSTU, d+8(FP), zgtg_rows1), GTG_1(Z0, Z8, Z4, ZLDM, ZSTM, d+8(FP), zgtg_rowsm), zgtg_c2, zgtg_c1, zgtg_ct, zgtg_cend)
	GGNEXT(d+8(FP), xs+80(FP), GG_X, ldy+120(FP), GG_Y, zgtg_group)

zgtg_done:
	VZEROUPPER
	RET

// func GemvNGroupsAVX512(ng, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int)
TEXT ·GemvNGroupsAVX512(SB), NOSPLIT, $0-128
	MOVQ ng+0(FP), GG_G         // GG_G = ng
	MOVQ n+16(FP), GG_N         // GG_N = n
	MOVQ lda+48(FP), GG_LDA     // GG_LDA = lda
	MOVQ d+8(FP), GG_R          // GG_R = d
	TESTQ GG_G, GG_G            // ng == 0: nothing to do
	JZ    zgng_done
	TESTQ GG_N, GG_N            // n == 0: nothing to do
	JZ    zgng_done
	TESTQ GG_R, GG_R            // d == 0: nothing to do
	JZ    zgng_done
	MOVQ a_base+24(FP), GG_A    // GG_A = &a[0]: walks the rows
	SHLQ $2, GG_LDA             // lda in bytes
	MOVQ x_base+56(FP), GG_X    // GG_X = &x[0]
	MOVQ y_base+88(FP), GG_Y    // GG_Y = &y[0]
	MOVQ yk+120(FP), GG_K       // GG_K = yk
	SHLQ $2, GG_K               // yk in bytes
	MOVQ GG_N, AX               // AX = n
	ANDQ $15, AX                // AX = n % 16
	JZ   zgng_nomask
	ZTAILMASK(AX, BX)           // K1 = first n%16 lanes

zgng_nomask:
	GGBOUNDS(16)
	MOVQ GG_Y, GG_PA            // PA = &y[0]: walks y

zgng_group:
	MOVQ d+8(FP), GG_R          // R = d

zgng_row4:
	CMPQ GG_R, $4               // fewer than 4 rows left in the group?
	JLT  zgng_row1
	GNG_ROW4(Z0, Z1, Z2, Z3, Z8, Z9, 16, ZLDM, GNG_FOLD16, zgng4_c1, zgng4_ct, zgng4_cend)
	SUBQ $4, GG_R               // 4 rows done
	JMP  zgng_row4

zgng_row1:
	TESTQ GG_R, GG_R            // rows left?
	JZ    zgng_next
	MOVQ GG_N, GG_NB            // NB = n − 2v (GNG_ROW4 used its register)
	SUBQ $(2*16), GG_NB
	GNG_ROW(Z0, Z1, Z8, Z9, 64, 16, ZLDM, GNG_REDUCE16, zgng_c2, zgng_c1, zgng_ct, zgng_cend)
	DECQ GG_R                   // one row done
	JMP  zgng_row1

zgng_next:
	MOVQ d+8(FP), GG_PX         // PX = d
	IMULQ GG_K, GG_PX           // PX = d·yk bytes
	SUBQ GG_PX, GG_PA           // PA = &y[j·ys]
	MOVQ ys+112(FP), GG_PX      // PX = ys
	LEAQ (GG_PA)(GG_PX*4), GG_PA // PA = &y[(j+1)·ys]
	MOVQ ldx+80(FP), GG_PX      // PX = ldx
	LEAQ (GG_X)(GG_PX*4), GG_X  // x: next group
	DECQ GG_G                   // one group done
	JNZ  zgng_group

zgng_done:
	VZEROUPPER
	RET

// ---------------------------------------------------------------------------
// Rank-2 grouped update: a[j·d+k, c] += x[j·xs+k·xk]·y[j·ldy+c] +
// x2[j·xs+k·xk]·y2[j·ldy+c]. x2 and y2 share the strides of x and y, so
// they are addressed as x and y plus a constant byte offset (GG_DX2,
// GG_DY2); the column bounds are computed in a scratch register instead of
// being kept. Columns go two vectors at a time, then one, then a masked
// tail.

#define GG_DX2 BX    // &x2[0] − &x[0] in bytes
#define GG_DY2 DX    // &y2[0] − &y[0] in bytes

// GER2_1 does one vector of columns of the d rows of the current group.
#define GER2_1(V0, V1, VX, VX2, VA, LD, ALD, ST, DD, LOOP) \
	LD((GG_Y)(GG_C*4), V0)      /* yv = y[j, c:c+v] */ \
	LEAQ (GG_Y)(GG_C*4), GG_PA  /* PA = &y[j, c] */ \
	LD((GG_PA)(GG_DY2*1), V1)   /* yv2 = y2[j, c:c+v] */ \
	GGSTART(DD) \
LOOP: \
	VBROADCASTSS (GG_PX), VX    /* x[j, k] in every lane */ \
	VBROADCASTSS (GG_PX)(GG_DX2*1), VX2 /* x2[j, k] in every lane */ \
	ALD((GG_PA), VA)            /* a[r, c:c+v] (or 0) */ \
	VFMADD231PS V0, VX, VA      /* a += x·yv */ \
	VFMADD231PS V1, VX2, VA     /* a += x2·yv2 */ \
	ST(VA, (GG_PA))             /* store a[r, c:c+v] */ \
	ADDQ GG_LDA, GG_PA          /* next row of a */ \
	ADDQ GG_K, GG_PX            /* next x */ \
	DECQ GG_R \
	JNZ  LOOP

// ZEROLD is the a "load" of the overwriting kernels: a is not read.
#define ZEROLD(src, dst) VXORPS dst, dst, dst

// GER2_2 does two vectors of columns (OFF bytes apart) of the d rows of
// the current group.
#define GER2_2(V0, V1, V2, V3, VX, VX2, VA, VB, OFF, ALD, DD, LOOP) \
	VMOVUPS (GG_Y)(GG_C*4), V0  /* yv = y[j, c:c+v] */ \
	VMOVUPS OFF(GG_Y)(GG_C*4), V1 /* yv' = y[j, c+v:c+2v] */ \
	LEAQ (GG_Y)(GG_C*4), GG_PA  /* PA = &y[j, c] */ \
	VMOVUPS (GG_PA)(GG_DY2*1), V2 /* yv2 = y2[j, c:c+v] */ \
	VMOVUPS OFF(GG_PA)(GG_DY2*1), V3 /* yv2' = y2[j, c+v:c+2v] */ \
	GGSTART(DD) \
LOOP: \
	VBROADCASTSS (GG_PX), VX    /* x[j, k] in every lane */ \
	VBROADCASTSS (GG_PX)(GG_DX2*1), VX2 /* x2[j, k] in every lane */ \
	ALD((GG_PA), VA)            /* a[r, c:c+v] (or 0) */ \
	ALD(OFF(GG_PA), VB)         /* a[r, c+v:c+2v] (or 0) */ \
	VFMADD231PS V0, VX, VA      /* a += x·yv */ \
	VFMADD231PS V1, VX, VB      /* a' += x·yv' */ \
	VFMADD231PS V2, VX2, VA     /* a += x2·yv2 */ \
	VFMADD231PS V3, VX2, VB     /* a' += x2·yv2' */ \
	VMOVUPS VA, (GG_PA)         /* store a[r, c:c+v] */ \
	VMOVUPS VB, OFF(GG_PA)      /* store a[r, c+v:c+2v] */ \
	ADDQ GG_LDA, GG_PA          /* next row of a */ \
	ADDQ GG_K, GG_PX            /* next x */ \
	DECQ GG_R \
	JNZ  LOOP

// GER2_COLS runs the column steps of one group: BODY2 while two vectors of
// W lanes fit, BODY once if one does, then TAIL if columns are left. The
// bounds are computed in PA, free between the steps.
#define GER2_COLS(W, BODY2, BODY, TAIL, L2, L1, LT, LEND) \
	XORQ GG_C, GG_C             /* c = 0 */ \
L2: \
	LEAQ (2*W)(GG_C), GG_PA     /* PA = c + 2v */ \
	CMPQ GG_PA, GG_N            /* c + 2v > n: no double step left */ \
	JGT  L1 \
	BODY2 \
	ADDQ $(2*W), GG_C           /* c += 2v */ \
	JMP  L2 \
L1: \
	LEAQ W(GG_C), GG_PA         /* PA = c + v */ \
	CMPQ GG_PA, GG_N            /* c + v > n: no full step left */ \
	JGT  LT \
	BODY \
	ADDQ $W, GG_C               /* c += v */ \
LT: \
	CMPQ GG_C, GG_N             /* c == n: no tail */ \
	JGE  LEND \
	TAIL \
LEND:

// func Ger2GroupsAVX2(ng, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int)
TEXT ·Ger2GroupsAVX2(SB), NOSPLIT, $0-176
	MOVQ ng+0(FP), GG_G         // GG_G = ng
	MOVQ n+16(FP), GG_N         // GG_N = n
	MOVQ d+8(FP), GG_R          // GG_R = d
	TESTQ GG_G, GG_G            // ng == 0: nothing to do
	JZ    ger2g_done
	TESTQ GG_N, GG_N            // n == 0: nothing to do
	JZ    ger2g_done
	TESTQ GG_R, GG_R            // d == 0: nothing to do
	JZ    ger2g_done
	MOVQ GG_N, AX               // AX = n
	ANDQ $7, AX                 // AX = n % 8
	JZ   ger2g_nomask
	TAILMASK(AX, BX)            // MASK = first n%8 lanes

ger2g_nomask:
	MOVQ x_base+24(FP), GG_X    // GG_X = &x[0]
	MOVQ x2_base+48(FP), GG_DX2 // GG_DX2 = &x2[0]
	SUBQ GG_X, GG_DX2           // GG_DX2 = &x2[0] − &x[0]
	MOVQ xk+80(FP), GG_K        // GG_K = xk
	SHLQ $2, GG_K               // xk in bytes
	MOVQ y_base+88(FP), GG_Y    // GG_Y = &y[0]
	MOVQ y2_base+112(FP), GG_DY2 // GG_DY2 = &y2[0]
	SUBQ GG_Y, GG_DY2           // GG_DY2 = &y2[0] − &y[0]
	MOVQ a_base+144(FP), GG_A   // GG_A = &a[0]
	MOVQ lda+168(FP), GG_LDA    // GG_LDA = lda
	SHLQ $2, GG_LDA             // lda in bytes

ger2g_group:
	GER2_COLS(8, GER2_2(Y0, Y1, Y2, Y3, Y8, Y9, Y4, Y5, 32, LDU, d+8(FP), ger2g_rows2), GER2_1(Y0, Y1, Y8, Y9, Y4, LDU, LDU, STU, d+8(FP), ger2g_rows1), GER2_1(Y0, Y1, Y8, Y9, Y4, LDM, LDM, STM, d+8(FP), ger2g_rowsm), ger2g_c2, ger2g_c1, ger2g_ct, ger2g_cend)
	GGNEXT(d+8(FP), xs+72(FP), GG_X, ldy+136(FP), GG_Y, ger2g_group)

ger2g_done:
	VZEROUPPER
	RET

// func Ger2GroupsAVX512(ng, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int)
TEXT ·Ger2GroupsAVX512(SB), NOSPLIT, $0-176
	MOVQ ng+0(FP), GG_G         // GG_G = ng
	MOVQ n+16(FP), GG_N         // GG_N = n
	MOVQ d+8(FP), GG_R          // GG_R = d
	TESTQ GG_G, GG_G            // ng == 0: nothing to do
	JZ    zger2g_done
	TESTQ GG_N, GG_N            // n == 0: nothing to do
	JZ    zger2g_done
	TESTQ GG_R, GG_R            // d == 0: nothing to do
	JZ    zger2g_done
	MOVQ GG_N, AX               // AX = n
	ANDQ $15, AX                // AX = n % 16
	JZ   zger2g_nomask
	ZTAILMASK(AX, BX)           // K1 = first n%16 lanes

zger2g_nomask:
	MOVQ x_base+24(FP), GG_X    // GG_X = &x[0]
	MOVQ x2_base+48(FP), GG_DX2 // GG_DX2 = &x2[0]
	SUBQ GG_X, GG_DX2           // GG_DX2 = &x2[0] − &x[0]
	MOVQ xk+80(FP), GG_K        // GG_K = xk
	SHLQ $2, GG_K               // xk in bytes
	MOVQ y_base+88(FP), GG_Y    // GG_Y = &y[0]
	MOVQ y2_base+112(FP), GG_DY2 // GG_DY2 = &y2[0]
	SUBQ GG_Y, GG_DY2           // GG_DY2 = &y2[0] − &y[0]
	MOVQ a_base+144(FP), GG_A   // GG_A = &a[0]
	MOVQ lda+168(FP), GG_LDA    // GG_LDA = lda
	SHLQ $2, GG_LDA             // lda in bytes

zger2g_group:
	GER2_COLS(16, GER2_2(Z0, Z1, Z2, Z3, Z8, Z9, Z4, Z5, 64, ZLDU, d+8(FP), zger2g_rows2), GER2_1(Z0, Z1, Z8, Z9, Z4, ZLDU, ZLDU, ZSTU, d+8(FP), zger2g_rows1), GER2_1(Z0, Z1, Z8, Z9, Z4, ZLDM, ZLDM, ZSTM, d+8(FP), zger2g_rowsm), zger2g_c2, zger2g_c1, zger2g_ct, zger2g_cend)
	GGNEXT(d+8(FP), xs+72(FP), GG_X, ldy+136(FP), GG_Y, zger2g_group)

zger2g_done:
	VZEROUPPER
	RET

// The overwriting rank-2 update: as above with a = 0 instead of its old
// value (a is only written).

// func Ger2GroupsSetAVX2(ng, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int)
TEXT ·Ger2GroupsSetAVX2(SB), NOSPLIT, $0-176
	MOVQ ng+0(FP), GG_G         // GG_G = ng
	MOVQ n+16(FP), GG_N         // GG_N = n
	MOVQ d+8(FP), GG_R          // GG_R = d
	TESTQ GG_G, GG_G            // ng == 0: nothing to do
	JZ    ger2s_done
	TESTQ GG_N, GG_N            // n == 0: nothing to do
	JZ    ger2s_done
	TESTQ GG_R, GG_R            // d == 0: nothing to do
	JZ    ger2s_done
	MOVQ GG_N, AX               // AX = n
	ANDQ $7, AX                 // AX = n % 8
	JZ   ger2s_nomask
	TAILMASK(AX, BX)            // MASK = first n%8 lanes

ger2s_nomask:
	MOVQ x_base+24(FP), GG_X    // GG_X = &x[0]
	MOVQ x2_base+48(FP), GG_DX2 // GG_DX2 = &x2[0]
	SUBQ GG_X, GG_DX2           // GG_DX2 = &x2[0] − &x[0]
	MOVQ xk+80(FP), GG_K        // GG_K = xk
	SHLQ $2, GG_K               // xk in bytes
	MOVQ y_base+88(FP), GG_Y    // GG_Y = &y[0]
	MOVQ y2_base+112(FP), GG_DY2 // GG_DY2 = &y2[0]
	SUBQ GG_Y, GG_DY2           // GG_DY2 = &y2[0] − &y[0]
	MOVQ a_base+144(FP), GG_A   // GG_A = &a[0]
	MOVQ lda+168(FP), GG_LDA    // GG_LDA = lda
	SHLQ $2, GG_LDA             // lda in bytes

ger2s_group:
	GER2_COLS(8, GER2_2(Y0, Y1, Y2, Y3, Y8, Y9, Y4, Y5, 32, ZEROLD, d+8(FP), ger2s_rows2), GER2_1(Y0, Y1, Y8, Y9, Y4, LDU, ZEROLD, STU, d+8(FP), ger2s_rows1), GER2_1(Y0, Y1, Y8, Y9, Y4, LDM, ZEROLD, STM, d+8(FP), ger2s_rowsm), ger2s_c2, ger2s_c1, ger2s_ct, ger2s_cend)
	GGNEXT(d+8(FP), xs+72(FP), GG_X, ldy+136(FP), GG_Y, ger2s_group)

ger2s_done:
	VZEROUPPER
	RET

// func Ger2GroupsSetAVX512(ng, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int)
TEXT ·Ger2GroupsSetAVX512(SB), NOSPLIT, $0-176
	MOVQ ng+0(FP), GG_G         // GG_G = ng
	MOVQ n+16(FP), GG_N         // GG_N = n
	MOVQ d+8(FP), GG_R          // GG_R = d
	TESTQ GG_G, GG_G            // ng == 0: nothing to do
	JZ    zger2s_done
	TESTQ GG_N, GG_N            // n == 0: nothing to do
	JZ    zger2s_done
	TESTQ GG_R, GG_R            // d == 0: nothing to do
	JZ    zger2s_done
	MOVQ GG_N, AX               // AX = n
	ANDQ $15, AX                // AX = n % 16
	JZ   zger2s_nomask
	ZTAILMASK(AX, BX)           // K1 = first n%16 lanes

zger2s_nomask:
	MOVQ x_base+24(FP), GG_X    // GG_X = &x[0]
	MOVQ x2_base+48(FP), GG_DX2 // GG_DX2 = &x2[0]
	SUBQ GG_X, GG_DX2           // GG_DX2 = &x2[0] − &x[0]
	MOVQ xk+80(FP), GG_K        // GG_K = xk
	SHLQ $2, GG_K               // xk in bytes
	MOVQ y_base+88(FP), GG_Y    // GG_Y = &y[0]
	MOVQ y2_base+112(FP), GG_DY2 // GG_DY2 = &y2[0]
	SUBQ GG_Y, GG_DY2           // GG_DY2 = &y2[0] − &y[0]
	MOVQ a_base+144(FP), GG_A   // GG_A = &a[0]
	MOVQ lda+168(FP), GG_LDA    // GG_LDA = lda
	SHLQ $2, GG_LDA             // lda in bytes

zger2s_group:
	GER2_COLS(16, GER2_2(Z0, Z1, Z2, Z3, Z8, Z9, Z4, Z5, 64, ZEROLD, d+8(FP), zger2s_rows2), GER2_1(Z0, Z1, Z8, Z9, Z4, ZLDU, ZEROLD, ZSTU, d+8(FP), zger2s_rows1), GER2_1(Z0, Z1, Z8, Z9, Z4, ZLDM, ZEROLD, ZSTM, d+8(FP), zger2s_rowsm), zger2s_c2, zger2s_c1, zger2s_ct, zger2s_cend)
	GGNEXT(d+8(FP), xs+72(FP), GG_X, ldy+136(FP), GG_Y, zger2s_group)

zger2s_done:
	VZEROUPPER
	RET

// ---------------------------------------------------------------------------
// MulAddRowsBatch: y[b, c] += Σ_{l<k} a[l, c]·x[b, l, c] for b < nb, with
// k ≤ 8 (MulAddRowsBatchSet: y[b, c] = Σ, y not read, 1 ≤ k ≤ 8). For
// every column block the k rows of a are loaded once into registers and
// reused for every b, so that a is read once per call however large nb is
// (the votes forward and du, where a is W).

#define MB_A R8      // &a[0, c] of the current column block
#define MB_X SI      // &x[0, 0, c]
#define MB_Y DI      // &y[0, c]
#define MB_K R12     // k
#define MB_LDA R14   // lda in bytes
#define MB_LDX R11   // ldx in bytes
#define MB_XS R10    // xstride in bytes
#define MB_YS BX     // ystride in bytes
#define MB_N DX      // columns left
#define MB_PX R9     // walks x over b
#define MB_PY AX     // walks y over b
#define MB_B CX      // samples left
#define MB_PR R13    // walks the rows of a or x

// Initial accumulators: y[b, chunk] (plain or masked) for the adding
// kernels, 0 for the overwriting (Set) ones.
#define MB_YU(dst) VMOVUPS (MB_PY), dst
#define MB_YM(dst) VMASKMOVPS (MB_PY), MASK, dst
#define MBZ_YU(dst) VMOVUPS (MB_PY), dst
#define MBZ_YM(dst) VMOVUPS.Z (MB_PY), K1, dst
#define MB_Y0(dst) VXORPS dst, dst, dst

// MBY_ROWS loads the k ≤ 8 rows of a at MB_A into Y7…Y14 (8 columns).
#define MBY_ROWS(LD, DONE) \
	MOVQ MB_A, MB_PR            /* PR = &a[0, c] */ \
	LD((MB_PR), Y7)             /* a0 = a[0, c:c+8] */ \
	CMPQ MB_K, $1 \
	JEQ  DONE \
	ADDQ MB_LDA, MB_PR          /* next row of a */ \
	LD((MB_PR), Y8)             /* a1 */ \
	CMPQ MB_K, $2 \
	JEQ  DONE \
	ADDQ MB_LDA, MB_PR \
	LD((MB_PR), Y9)             /* a2 */ \
	CMPQ MB_K, $3 \
	JEQ  DONE \
	ADDQ MB_LDA, MB_PR \
	LD((MB_PR), Y10)            /* a3 */ \
	CMPQ MB_K, $4 \
	JEQ  DONE \
	ADDQ MB_LDA, MB_PR \
	LD((MB_PR), Y11)            /* a4 */ \
	CMPQ MB_K, $5 \
	JEQ  DONE \
	ADDQ MB_LDA, MB_PR \
	LD((MB_PR), Y12)            /* a5 */ \
	CMPQ MB_K, $6 \
	JEQ  DONE \
	ADDQ MB_LDA, MB_PR \
	LD((MB_PR), Y13)            /* a6 */ \
	CMPQ MB_K, $7 \
	JEQ  DONE \
	ADDQ MB_LDA, MB_PR \
	LD((MB_PR), Y14)            /* a7 */ \
DONE:

// MBY_8 (with MB_B = nb) does, for every b < nb, y[b, c:c+8] += Σ_l a_l·x[b, l, c:c+8] with
// the rows a_l in Y7…Y14: unrolled for k = 8, a chain of tests otherwise.
#define MBY_8(LD, ST, INIT, LROWS, LFULL, LGEN, LGST, LEND) \
	MBY_ROWS(LD, LROWS) \
	MOVQ MB_X, MB_PX            /* PX = &x[0, 0, c] */ \
	MOVQ MB_Y, MB_PY            /* PY = &y[0, c] */ \
	CMPQ MB_K, $8 \
	JNE  LGEN \
LFULL: \
	INIT(Y0)                    /* acc = y[b, c:c+8] (or 0) */ \
	MOVQ MB_PX, MB_PR           /* PR = &x[b, 0, c] */ \
	LD((MB_PR), Y1)             /* x[b, 0] */ \
	ADDQ MB_LDX, MB_PR \
	LD((MB_PR), Y2)             /* x[b, 1] */ \
	ADDQ MB_LDX, MB_PR \
	VFMADD231PS Y1, Y7, Y0      /* acc += a0·x0 */ \
	VMULPS Y2, Y8, Y6           /* acc' = a1·x1 */ \
	LD((MB_PR), Y1)             /* x[b, 2] */ \
	ADDQ MB_LDX, MB_PR \
	LD((MB_PR), Y2)             /* x[b, 3] */ \
	ADDQ MB_LDX, MB_PR \
	VFMADD231PS Y1, Y9, Y0      /* acc += a2·x2 */ \
	VFMADD231PS Y2, Y10, Y6     /* acc' += a3·x3 */ \
	LD((MB_PR), Y1)             /* x[b, 4] */ \
	ADDQ MB_LDX, MB_PR \
	LD((MB_PR), Y2)             /* x[b, 5] */ \
	ADDQ MB_LDX, MB_PR \
	VFMADD231PS Y1, Y11, Y0     /* acc += a4·x4 */ \
	VFMADD231PS Y2, Y12, Y6     /* acc' += a5·x5 */ \
	LD((MB_PR), Y1)             /* x[b, 6] */ \
	ADDQ MB_LDX, MB_PR \
	LD((MB_PR), Y2)             /* x[b, 7] */ \
	VFMADD231PS Y1, Y13, Y0     /* acc += a6·x6 */ \
	VFMADD231PS Y2, Y14, Y6     /* acc' += a7·x7 */ \
	VADDPS Y6, Y0, Y0           /* acc += acc' */ \
	ST(Y0, (MB_PY))             /* y[b, c:c+8] = acc */ \
	ADDQ MB_XS, MB_PX           /* next sample of x */ \
	ADDQ MB_YS, MB_PY           /* next sample of y */ \
	DECQ MB_B \
	JNZ  LFULL \
	JMP  LEND \
LGEN: \
	INIT(Y0)                    /* acc = y[b, c:c+8] (or 0) */ \
	MOVQ MB_PX, MB_PR           /* PR = &x[b, 0, c] */ \
	LD((MB_PR), Y1)             /* x[b, 0] */ \
	VFMADD231PS Y1, Y7, Y0      /* acc += a0·x0 */ \
	CMPQ MB_K, $1 \
	JEQ  LGST \
	ADDQ MB_LDX, MB_PR \
	LD((MB_PR), Y1)             /* x[b, 1] */ \
	VFMADD231PS Y1, Y8, Y0      /* acc += a1·x1 */ \
	CMPQ MB_K, $2 \
	JEQ  LGST \
	ADDQ MB_LDX, MB_PR \
	LD((MB_PR), Y1)             /* x[b, 2] */ \
	VFMADD231PS Y1, Y9, Y0      /* acc += a2·x2 */ \
	CMPQ MB_K, $3 \
	JEQ  LGST \
	ADDQ MB_LDX, MB_PR \
	LD((MB_PR), Y1)             /* x[b, 3] */ \
	VFMADD231PS Y1, Y10, Y0     /* acc += a3·x3 */ \
	CMPQ MB_K, $4 \
	JEQ  LGST \
	ADDQ MB_LDX, MB_PR \
	LD((MB_PR), Y1)             /* x[b, 4] */ \
	VFMADD231PS Y1, Y11, Y0     /* acc += a4·x4 */ \
	CMPQ MB_K, $5 \
	JEQ  LGST \
	ADDQ MB_LDX, MB_PR \
	LD((MB_PR), Y1)             /* x[b, 5] */ \
	VFMADD231PS Y1, Y12, Y0     /* acc += a5·x5 */ \
	CMPQ MB_K, $6 \
	JEQ  LGST \
	ADDQ MB_LDX, MB_PR \
	LD((MB_PR), Y1)             /* x[b, 6] */ \
	VFMADD231PS Y1, Y13, Y0     /* acc += a6·x6 */ \
LGST: \
	ST(Y0, (MB_PY))             /* y[b, c:c+8] = acc */ \
	ADDQ MB_XS, MB_PX           /* next sample of x */ \
	ADDQ MB_YS, MB_PY           /* next sample of y */ \
	DECQ MB_B \
	JNZ  LGEN \
LEND:

// func MulAddRowsBatchAVX2(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int)
TEXT ·MulAddRowsBatchAVX2(SB), NOSPLIT, $0-128
	MOVQ k+8(FP), MB_K          // MB_K = k
	MOVQ n+16(FP), MB_N         // MB_N = n
	MOVQ a_base+24(FP), MB_A    // MB_A = &a[0]
	MOVQ lda+48(FP), MB_LDA     // MB_LDA = lda
	MOVQ x_base+56(FP), MB_X    // MB_X = &x[0]
	MOVQ ldx+80(FP), MB_LDX     // MB_LDX = ldx
	MOVQ xstride+88(FP), MB_XS  // MB_XS = xstride
	MOVQ y_base+96(FP), MB_Y    // MB_Y = &y[0]
	MOVQ ystride+120(FP), MB_YS // MB_YS = ystride
	MOVQ nb+0(FP), MB_B         // B = nb
	TESTQ MB_B, MB_B            // nb == 0: nothing to do
	JZ    mb_done
	TESTQ MB_K, MB_K            // k == 0: y += 0
	JZ    mb_done
	TESTQ MB_N, MB_N            // n == 0: nothing to do
	JZ    mb_done
	SHLQ  $2, MB_LDA            // lda in bytes
	SHLQ  $2, MB_LDX            // ldx in bytes
	SHLQ  $2, MB_XS             // xstride in bytes
	SHLQ  $2, MB_YS             // ystride in bytes

mb_loop8:
	CMPQ MB_N, $8               // fewer than 8 columns left
	JLT  mb_tail
	MOVQ nb+0(FP), MB_B         // B = nb (the macro walks the samples)
	MBY_8(LDU, STU, MB_YU, mb_rows8, mb_full8, mb_gen8, mb_gst8, mb_end8)
	ADDQ $32, MB_A              // next 8 columns of a
	ADDQ $32, MB_X              // of x
	ADDQ $32, MB_Y              // of y
	SUBQ $8, MB_N               // 8 columns done
	JMP  mb_loop8

mb_tail:
	TESTQ MB_N, MB_N            // no tail
	JZ    mb_done
	TAILMASK(MB_N, MB_PR)       // MASK = first n%8 lanes
	MOVQ nb+0(FP), MB_B         // B = nb (the macro walks the samples)
	MBY_8(LDM, STM, MB_YM, mb_rowsm, mb_fullm, mb_genm, mb_gstm, mb_endm)

mb_done:
	VZEROUPPER
	RET

// func MulAddRowsBatchSetAVX2(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int)
TEXT ·MulAddRowsBatchSetAVX2(SB), NOSPLIT, $0-128
	MOVQ k+8(FP), MB_K          // MB_K = k
	MOVQ n+16(FP), MB_N         // MB_N = n
	MOVQ a_base+24(FP), MB_A    // MB_A = &a[0]
	MOVQ lda+48(FP), MB_LDA     // MB_LDA = lda
	MOVQ x_base+56(FP), MB_X    // MB_X = &x[0]
	MOVQ ldx+80(FP), MB_LDX     // MB_LDX = ldx
	MOVQ xstride+88(FP), MB_XS  // MB_XS = xstride
	MOVQ y_base+96(FP), MB_Y    // MB_Y = &y[0]
	MOVQ ystride+120(FP), MB_YS // MB_YS = ystride
	MOVQ nb+0(FP), MB_B         // B = nb
	TESTQ MB_B, MB_B            // nb == 0: nothing to do
	JZ    mbs_done
	TESTQ MB_K, MB_K            // k == 0: not written (the caller clears y)
	JZ    mbs_done
	TESTQ MB_N, MB_N            // n == 0: nothing to do
	JZ    mbs_done
	SHLQ  $2, MB_LDA            // lda in bytes
	SHLQ  $2, MB_LDX            // ldx in bytes
	SHLQ  $2, MB_XS             // xstride in bytes
	SHLQ  $2, MB_YS             // ystride in bytes

mbs_loop8:
	CMPQ MB_N, $8               // fewer than 8 columns left
	JLT  mbs_tail
	MOVQ nb+0(FP), MB_B         // B = nb (the macro walks the samples)
	MBY_8(LDU, STU, MB_Y0, mbs_rows8, mbs_full8, mbs_gen8, mbs_gst8, mbs_end8)
	ADDQ $32, MB_A              // next 8 columns of a
	ADDQ $32, MB_X              // of x
	ADDQ $32, MB_Y              // of y
	SUBQ $8, MB_N               // 8 columns done
	JMP  mbs_loop8

mbs_tail:
	TESTQ MB_N, MB_N            // no tail
	JZ    mbs_done
	TAILMASK(MB_N, MB_PR)       // MASK = first n%8 lanes
	MOVQ nb+0(FP), MB_B         // B = nb (the macro walks the samples)
	MBY_8(LDM, STM, MB_Y0, mbs_rowsm, mbs_fullm, mbs_genm, mbs_gstm, mbs_endm)

mbs_done:
	VZEROUPPER
	RET

// MBZ_ROWS loads the k ≤ 8 rows of a at MB_A into Z16…Z23 (16 columns).
#define MBZ_ROWS(LD, DONE) \
	MOVQ MB_A, MB_PR            /* PR = &a[0, c] */ \
	LD((MB_PR), Z16)            /* a0 = a[0, c:c+16] */ \
	CMPQ MB_K, $1 \
	JEQ  DONE \
	ADDQ MB_LDA, MB_PR          /* next row of a */ \
	LD((MB_PR), Z17)            /* a1 */ \
	CMPQ MB_K, $2 \
	JEQ  DONE \
	ADDQ MB_LDA, MB_PR \
	LD((MB_PR), Z18)            /* a2 */ \
	CMPQ MB_K, $3 \
	JEQ  DONE \
	ADDQ MB_LDA, MB_PR \
	LD((MB_PR), Z19)            /* a3 */ \
	CMPQ MB_K, $4 \
	JEQ  DONE \
	ADDQ MB_LDA, MB_PR \
	LD((MB_PR), Z20)            /* a4 */ \
	CMPQ MB_K, $5 \
	JEQ  DONE \
	ADDQ MB_LDA, MB_PR \
	LD((MB_PR), Z21)            /* a5 */ \
	CMPQ MB_K, $6 \
	JEQ  DONE \
	ADDQ MB_LDA, MB_PR \
	LD((MB_PR), Z22)            /* a6 */ \
	CMPQ MB_K, $7 \
	JEQ  DONE \
	ADDQ MB_LDA, MB_PR \
	LD((MB_PR), Z23)            /* a7 */ \
DONE:

// MBZ_16 is MBY_8 on 16 columns with the rows of a in Z16…Z23.
#define MBZ_16(LD, ST, INIT, LROWS, LFULL, LGEN, LGST, LEND) \
	MBZ_ROWS(LD, LROWS) \
	MOVQ MB_X, MB_PX            /* PX = &x[0, 0, c] */ \
	MOVQ MB_Y, MB_PY            /* PY = &y[0, c] */ \
	CMPQ MB_K, $8 \
	JNE  LGEN \
LFULL: \
	INIT(Z0)                    /* acc = y[b, c:c+16] (or 0) */ \
	MOVQ MB_PX, MB_PR           /* PR = &x[b, 0, c] */ \
	LD((MB_PR), Z1)             /* x[b, 0] */ \
	ADDQ MB_LDX, MB_PR \
	LD((MB_PR), Z2)             /* x[b, 1] */ \
	ADDQ MB_LDX, MB_PR \
	VFMADD231PS Z1, Z16, Z0     /* acc += a0·x0 */ \
	VMULPS Z2, Z17, Z6          /* acc' = a1·x1 */ \
	LD((MB_PR), Z3)             /* x[b, 2] */ \
	ADDQ MB_LDX, MB_PR \
	LD((MB_PR), Z4)             /* x[b, 3] */ \
	ADDQ MB_LDX, MB_PR \
	VFMADD231PS Z3, Z18, Z0     /* acc += a2·x2 */ \
	VFMADD231PS Z4, Z19, Z6     /* acc' += a3·x3 */ \
	LD((MB_PR), Z1)             /* x[b, 4] */ \
	ADDQ MB_LDX, MB_PR \
	LD((MB_PR), Z2)             /* x[b, 5] */ \
	ADDQ MB_LDX, MB_PR \
	VFMADD231PS Z1, Z20, Z0     /* acc += a4·x4 */ \
	VFMADD231PS Z2, Z21, Z6     /* acc' += a5·x5 */ \
	LD((MB_PR), Z3)             /* x[b, 6] */ \
	ADDQ MB_LDX, MB_PR \
	LD((MB_PR), Z4)             /* x[b, 7] */ \
	VFMADD231PS Z3, Z22, Z0     /* acc += a6·x6 */ \
	VFMADD231PS Z4, Z23, Z6     /* acc' += a7·x7 */ \
	VADDPS Z6, Z0, Z0           /* acc += acc' */ \
	ST(Z0, (MB_PY))             /* y[b, c:c+16] = acc */ \
	ADDQ MB_XS, MB_PX           /* next sample of x */ \
	ADDQ MB_YS, MB_PY           /* next sample of y */ \
	DECQ MB_B \
	JNZ  LFULL \
	JMP  LEND \
LGEN: \
	INIT(Z0)                    /* acc = y[b, c:c+16] (or 0) */ \
	MOVQ MB_PX, MB_PR           /* PR = &x[b, 0, c] */ \
	LD((MB_PR), Z1)             /* x[b, 0] */ \
	VFMADD231PS Z1, Z16, Z0     /* acc += a0·x0 */ \
	CMPQ MB_K, $1 \
	JEQ  LGST \
	ADDQ MB_LDX, MB_PR \
	LD((MB_PR), Z1)             /* x[b, 1] */ \
	VFMADD231PS Z1, Z17, Z0     /* acc += a1·x1 */ \
	CMPQ MB_K, $2 \
	JEQ  LGST \
	ADDQ MB_LDX, MB_PR \
	LD((MB_PR), Z1)             /* x[b, 2] */ \
	VFMADD231PS Z1, Z18, Z0     /* acc += a2·x2 */ \
	CMPQ MB_K, $3 \
	JEQ  LGST \
	ADDQ MB_LDX, MB_PR \
	LD((MB_PR), Z1)             /* x[b, 3] */ \
	VFMADD231PS Z1, Z19, Z0     /* acc += a3·x3 */ \
	CMPQ MB_K, $4 \
	JEQ  LGST \
	ADDQ MB_LDX, MB_PR \
	LD((MB_PR), Z1)             /* x[b, 4] */ \
	VFMADD231PS Z1, Z20, Z0     /* acc += a4·x4 */ \
	CMPQ MB_K, $5 \
	JEQ  LGST \
	ADDQ MB_LDX, MB_PR \
	LD((MB_PR), Z1)             /* x[b, 5] */ \
	VFMADD231PS Z1, Z21, Z0     /* acc += a5·x5 */ \
	CMPQ MB_K, $6 \
	JEQ  LGST \
	ADDQ MB_LDX, MB_PR \
	LD((MB_PR), Z1)             /* x[b, 6] */ \
	VFMADD231PS Z1, Z22, Z0     /* acc += a6·x6 */ \
LGST: \
	ST(Z0, (MB_PY))             /* y[b, c:c+16] = acc */ \
	ADDQ MB_XS, MB_PX           /* next sample of x */ \
	ADDQ MB_YS, MB_PY           /* next sample of y */ \
	DECQ MB_B \
	JNZ  LGEN \
LEND:

// func MulAddRowsBatchAVX512(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int)
TEXT ·MulAddRowsBatchAVX512(SB), NOSPLIT, $0-128
	MOVQ k+8(FP), MB_K          // MB_K = k
	MOVQ n+16(FP), MB_N         // MB_N = n
	MOVQ a_base+24(FP), MB_A    // MB_A = &a[0]
	MOVQ lda+48(FP), MB_LDA     // MB_LDA = lda
	MOVQ x_base+56(FP), MB_X    // MB_X = &x[0]
	MOVQ ldx+80(FP), MB_LDX     // MB_LDX = ldx
	MOVQ xstride+88(FP), MB_XS  // MB_XS = xstride
	MOVQ y_base+96(FP), MB_Y    // MB_Y = &y[0]
	MOVQ ystride+120(FP), MB_YS // MB_YS = ystride
	MOVQ nb+0(FP), MB_B         // B = nb
	TESTQ MB_B, MB_B            // nb == 0: nothing to do
	JZ    zmb_done
	TESTQ MB_K, MB_K            // k == 0: y += 0
	JZ    zmb_done
	TESTQ MB_N, MB_N            // n == 0: nothing to do
	JZ    zmb_done
	SHLQ  $2, MB_LDA            // lda in bytes
	SHLQ  $2, MB_LDX            // ldx in bytes
	SHLQ  $2, MB_XS             // xstride in bytes
	SHLQ  $2, MB_YS             // ystride in bytes

zmb_loop16:
	CMPQ MB_N, $16              // fewer than 16 columns left
	JLT  zmb_tail
	MOVQ nb+0(FP), MB_B         // B = nb (the macro walks the samples)
	MBZ_16(ZLDU, ZSTU, MBZ_YU, zmb_rows16, zmb_full16, zmb_gen16, zmb_gst16, zmb_end16)
	ADDQ $64, MB_A              // next 16 columns of a
	ADDQ $64, MB_X              // of x
	ADDQ $64, MB_Y              // of y
	SUBQ $16, MB_N              // 16 columns done
	JMP  zmb_loop16

zmb_tail:
	TESTQ MB_N, MB_N            // no tail
	JZ    zmb_done
	ZTAILMASK(MB_N, MB_PR)      // K1 = first n%16 lanes (clobbers CX = B)
	MOVQ nb+0(FP), MB_B         // B = nb (the macro walks the samples)
	MBZ_16(ZLDM, ZSTM, MBZ_YM, zmb_rowsm, zmb_fullm, zmb_genm, zmb_gstm, zmb_endm)

zmb_done:
	VZEROUPPER
	RET

// func MulAddRowsBatchSetAVX512(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int)
TEXT ·MulAddRowsBatchSetAVX512(SB), NOSPLIT, $0-128
	MOVQ k+8(FP), MB_K          // MB_K = k
	MOVQ n+16(FP), MB_N         // MB_N = n
	MOVQ a_base+24(FP), MB_A    // MB_A = &a[0]
	MOVQ lda+48(FP), MB_LDA     // MB_LDA = lda
	MOVQ x_base+56(FP), MB_X    // MB_X = &x[0]
	MOVQ ldx+80(FP), MB_LDX     // MB_LDX = ldx
	MOVQ xstride+88(FP), MB_XS  // MB_XS = xstride
	MOVQ y_base+96(FP), MB_Y    // MB_Y = &y[0]
	MOVQ ystride+120(FP), MB_YS // MB_YS = ystride
	MOVQ nb+0(FP), MB_B         // B = nb
	TESTQ MB_B, MB_B            // nb == 0: nothing to do
	JZ    zmbs_done
	TESTQ MB_K, MB_K            // k == 0: not written (the caller clears y)
	JZ    zmbs_done
	TESTQ MB_N, MB_N            // n == 0: nothing to do
	JZ    zmbs_done
	SHLQ  $2, MB_LDA            // lda in bytes
	SHLQ  $2, MB_LDX            // ldx in bytes
	SHLQ  $2, MB_XS             // xstride in bytes
	SHLQ  $2, MB_YS             // ystride in bytes

zmbs_loop16:
	CMPQ MB_N, $16              // fewer than 16 columns left
	JLT  zmbs_tail
	MOVQ nb+0(FP), MB_B         // B = nb (the macro walks the samples)
	MBZ_16(ZLDU, ZSTU, MB_Y0, zmbs_rows16, zmbs_full16, zmbs_gen16, zmbs_gst16, zmbs_end16)
	ADDQ $64, MB_A              // next 16 columns of a
	ADDQ $64, MB_X              // of x
	ADDQ $64, MB_Y              // of y
	SUBQ $16, MB_N              // 16 columns done
	JMP  zmbs_loop16

zmbs_tail:
	TESTQ MB_N, MB_N            // no tail
	JZ    zmbs_done
	ZTAILMASK(MB_N, MB_PR)      // K1 = first n%16 lanes (clobbers CX = B)
	MOVQ nb+0(FP), MB_B         // B = nb (the macro walks the samples)
	MBZ_16(ZLDM, ZSTM, MB_Y0, zmbs_rowsm, zmbs_fullm, zmbs_genm, zmbs_gstm, zmbs_endm)

zmbs_done:
	VZEROUPPER
	RET
