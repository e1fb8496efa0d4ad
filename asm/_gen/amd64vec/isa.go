package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"

	"github.com/capstan-ml/capstan/asm/_gen/expconst"
)

// isa describes one vector instruction set: its lane count and how it loads
// and stores a partial (tail) vector.
type isa struct {
	suffix string // function-name suffix: "AVX2" or "AVX512"
	w      int    // float32 lanes per vector: 8 or 16
	zmm    bool   // AVX-512: Z registers, K1-masked tails, broadcast constants
}

var (
	avx2   = isa{suffix: "AVX2", w: 8}
	avx512 = isa{suffix: "AVX512", w: 16, zmm: true}
)

var (
	xregs = []VecPhysical{X0, X1, X2, X3, X4, X5, X6, X7, X8, X9, X10, X11, X12, X13, X14, X15}
	yregs = []VecPhysical{Y0, Y1, Y2, Y3, Y4, Y5, Y6, Y7, Y8, Y9, Y10, Y11, Y12, Y13, Y14, Y15}
	zregs = []VecPhysical{Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
		Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23}
)

// vb is the size of one vector in bytes.
func (s isa) vb() int { return 4 * s.w }

// v is vector register i of the ISA's width.
func (s isa) v(i int) VecPhysical {
	if s.zmm {
		return zregs[i]
	}
	return yregs[i]
}

// mask is the AVX2 VMASKMOVPS mask register (AVX-512 uses K1).
var mask = Y15

// ld loads one vector, the first tail lanes only when masked (masked lanes
// are not accessed; AVX-512 zeroes them in dst).
func (s isa) ld(masked bool, src Mem, dst VecPhysical) {
	switch {
	case !masked:
		VMOVUPS(src, dst)
	case s.zmm:
		VMOVUPS_Z(src, K1, dst)
	default:
		VMASKMOVPS(src, mask, dst)
	}
}

// st stores one vector, the first tail lanes only when masked.
func (s isa) st(masked bool, src VecPhysical, dst Mem) {
	switch {
	case !masked:
		VMOVUPS(src, dst)
	case s.zmm:
		VMOVUPS(src, K1, dst)
	default:
		VMASKMOVPS(src, mask, dst)
	}
}

// tailMask sets the tail mask to the first r lanes (0 < r < w); it clobbers
// r and t (and CX for AVX-512).
func (s isa) tailMask(r, t GPPhysical) {
	if s.zmm {
		MOVQ(r, RCX)
		MOVL(U32(1), t.As32())
		SHLL(CL, t.As32())
		DECL(t.As32())
		KMOVW(t.As32(), K1)
		return
	}
	MOVQ(U32(8), t)
	SUBQ(r, t)
	LEAQ(tailTable, r)
	VMOVDQU(Mem{Base: r, Index: t, Scale: 4}, mask)
}

// maskFor sets the tail mask from n when n%w != 0, with AX and BX as
// scratch; label is the local label that follows.
func (s isa) maskFor(n GPPhysical, label string) {
	MOVQ(n, RAX)
	ANDQ(U32(s.w-1), RAX)
	JZ(LabelRef(label))
	s.tailMask(RAX, RBX)
	Label(label)
}

// Constants: each replicated over 8 lanes so that AVX2 code can use them as
// memory operands; AVX-512 code broadcasts their first lane.
var (
	consts                                                     Mem
	tailTable                                                  Mem
	cLo, cHi, cLog2E, cLn2Hi, cLn2Lo, cOne, cBias2, cEps, cTwo Mem
	cP                                                         [6]Mem
)

// squashEps is kernels.SquashEps (1e-7) as float32 bits.
const squashEps uint32 = 0x33d6bf95

// two is 2.0 as float32 bits.
const two uint32 = 0x40000000

func declareConsts() {
	consts = GLOBL("vecC", RODATA|NOPTR)
	off := 0
	add := func(v uint32) Mem {
		m := consts.Offset(off)
		for i := 0; i < 8; i++ {
			DATA(off+4*i, U32(v))
		}
		off += 32
		return m
	}
	cLo = add(expconst.Lo)
	cHi = add(expconst.Hi)
	cLog2E = add(expconst.Log2E)
	cLn2Hi = add(expconst.Ln2Hi)
	cLn2Lo = add(expconst.Ln2Lo)
	for i, p := range expconst.P {
		cP[i] = add(p)
	}
	cOne = add(expconst.One)
	cBias2 = add(2 * expconst.Bias)
	cEps = add(squashEps)
	cTwo = add(two)

	tailTable = GLOBL("vecTailMask", RODATA|NOPTR)
	for i := 0; i < 16; i++ {
		v := uint32(0)
		if i < 8 {
			v = 0xffffffff
		}
		DATA(4*i, U32(v))
	}
}

// loadC sets dst to the constant c in every lane.
func (s isa) loadC(c Mem, dst VecPhysical) {
	if s.zmm {
		VBROADCASTSS(c, dst)
	} else {
		VMOVUPS(c, dst)
	}
}

// The constant-operand forms: memory operand (AVX2) or broadcast (AVX-512).
func (s isa) mulC(c Mem, x, dst VecPhysical) {
	if s.zmm {
		VMULPS_BCST(c, x, dst)
	} else {
		VMULPS(c, x, dst)
	}
}

func (s isa) addC(c Mem, x, dst VecPhysical) {
	if s.zmm {
		VADDPS_BCST(c, x, dst)
	} else {
		VADDPS(c, x, dst)
	}
}

func (s isa) paddC(c Mem, x, dst VecPhysical) {
	if s.zmm {
		VPADDD_BCST(c, x, dst)
	} else {
		VPADDD(c, x, dst)
	}
}

func (s isa) fnmadd231C(c Mem, x, dst VecPhysical) {
	if s.zmm {
		VFNMADD231PS_BCST(c, x, dst)
	} else {
		VFNMADD231PS(c, x, dst)
	}
}

func (s isa) fmadd213C(c Mem, x, dst VecPhysical) {
	if s.zmm {
		VFMADD213PS_BCST(c, x, dst)
	} else {
		VFMADD213PS(c, x, dst)
	}
}

// expRegs are the registers exp needs loaded with the clamps (expSetup).
func (s isa) expLo() VecPhysical { return s.v(13) }
func (s isa) expHi() VecPhysical { return s.v(14) }

// expSetup loads the clamps Lo and Hi into expLo and expHi.
func (s isa) expSetup() {
	s.loadC(cLo, s.expLo())
	s.loadC(cHi, s.expHi())
}

// exp sets x = exp(x) lane-wise by the algorithm of package expconst; it
// clobbers t, n and u and needs expSetup.
//
// The product e·2^k is the single rounding of the exact e·2^k in both
// forms: AVX-512 computes it with VSCALEFPS (one instruction, subnormal
// results and overflow to +Inf handled by the hardware); AVX2 multiplies
// by 2^k1 (exact: the product is normal) and then by 2^k2, k1 = k>>1,
// k2 = k − k1, as expconst describes. Both exponent fields come from one
// biased integer K = k + 2·Bias: K>>1 = k1 + Bias and K − (K>>1) = k2 + Bias
// (K ≥ 0 for k ≥ −151), which saves an addition. The results are
// bit-identical between the two ISAs.
func (s isa) exp(x, t, n, u VecPhysical) {
	VMAXPS(x, s.expLo(), x) // x = max(x, Lo); NaN kept (second source)
	VMINPS(x, s.expHi(), x) // x = min(x, Hi); NaN kept
	s.mulC(cLog2E, x, n)    // x·log2 e
	if s.zmm {
		VRNDSCALEPS(U8(0), n, n) // k = round to even
	} else {
		VROUNDPS(U8(0), n, n)
	}
	s.fnmadd231C(cLn2Hi, n, x) // x −= k·ln2hi
	s.fnmadd231C(cLn2Lo, n, x) // r = x − k·ln2lo
	if !s.zmm {
		VCVTPS2DQ(n, n) // k as int32 (exact)
	}
	VMULPS(x, x, u)   // r²
	s.loadC(cP[0], t) // p = P0
	for _, c := range cP[1:] {
		s.fmadd213C(c, x, t) // p = p·r + P[i]
	}
	s.addC(cOne, x, x)   // 1 + r
	VFMADD231PS(u, t, x) // e = (1 + r) + p·r²
	if s.zmm {
		VSCALEFPS(n, x, x) // e·2^k, rounded once
		return
	}
	s.paddC(cBias2, n, n) // K = k + 2·Bias
	VPSRAD(U8(1), n, u)   // K>>1 = k1 + Bias
	VPSUBD(u, n, n)       // K − (K>>1) = k2 + Bias
	VPSLLD(U8(23), u, u)  // 2^k1
	VPSLLD(U8(23), n, n)  // 2^k2
	VMULPS(u, x, x)       // e·2^k1 (exact)
	VMULPS(n, x, x)       // ·2^k2 (rounds once)
}

// sig is the Go signature of each kernel family.
var sig = map[string]string{
	"gemvN":              "func(m, n int, a []float32, lda int, x, y []float32)",
	"gemvT":              "func(m, n int, a []float32, lda int, x, y []float32)",
	"ger":                "func(m, n int, x, y, a []float32, lda int)",
	"mulAddRows":         "func(k, n int, a []float32, lda int, x []float32, ldx int, y []float32)",
	"mulAddRowsBatch":    "func(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int)",
	"mulAddRowsBatchSet": "func(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int)",
	"softmaxCols":        "func(rows, n int, l, c []float32)",
	"softmaxColsGrad":    "func(rows, n int, c, dc, dl []float32)",
	"squash":             "func(kind, d, n int, s, v []float32)",
	"squashGrad":         "func(kind, d, n int, s, dv, ds []float32)",
	"gerGroups":          "func(ng, d, n int, x []float32, xs, xk int, y []float32, ldy int, a []float32, lda int)",
	"ger2Groups":         "func(ng, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int)",
	"ger2GroupsSet":      "func(ng, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int)",
	"gemvTGroups":        "func(ng, d, n int, a []float32, lda int, x []float32, xs, xk int, y []float32, ldy int)",
	"gemvNGroups":        "func(ng, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int)",
	"exp":                "func(x, y []float32)",
}

// text starts the unexported assembly function family+suffix.
func (s isa) text(family, doc string) {
	name := family + s.suffix
	TEXT(name, NOSPLIT, sig[family])
	Pragma("noescape")
	ext := "AVX2+FMA"
	if s.zmm {
		ext = "AVX-512F"
	}
	Doc(fmt.Sprintf("%s is the %s body of %s%s (%s); arguments are checked by the caller.",
		name, ext, upper(family), s.suffix, doc))
}

func upper(s string) string { return string(s[0]-'a'+'A') + s[1:] }

// ld8 loads a general-purpose argument.
func arg(name string, r GPPhysical) { Load(Param(name), r) }

// base loads the data pointer of a slice argument.
func base(name string, r GPPhysical) { Load(Param(name).Base(), r) }

// m is the memory operand disp(b)(i*4) (i may be nil).
func m(b Register, i Register, disp int) Mem {
	if i == nil {
		return Mem{Base: b, Disp: disp}
	}
	return Mem{Base: b, Index: i, Scale: 4, Disp: disp}
}

// done emits the common epilogue at label.
func done(label string) {
	Label(label)
	VZEROUPPER()
	RET()
}
