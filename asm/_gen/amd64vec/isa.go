package main

import (
	"fmt"
	"math"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
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
		Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31}
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
	consts                                                                                                 Mem
	tailTable                                                                                              Mem
	cLo, cHi, cLog2E, cLn2Hi, cLn2Lo, cOne, cBiasM1, cBiasInt, cSubK, cSub149, cSub23, cSubMin, cEps, cTwo Mem
	cP                                                                                                     [6]Mem
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
	// Derived from expconst.Bias: the float32 subnormals are the multiples
	// of 2^−149 = 2^−(Bias−1+23) below 2^−126 = 2^−(Bias−1).
	bias := float32(expconst.Bias)
	cBiasM1 = add(expconst.Bias - 1)                 // int32
	cBiasInt = add(expconst.Bias)                    // int32
	cSubK = add(math.Float32bits(-(bias - 1) + 0.5)) // −125.5
	cSub149 = add(math.Float32bits(bias - 1 + 23))   // 149
	cSub23 = add(math.Float32bits(23))               // 23
	cSubMin = add(math.Float32bits(-(bias - 2)))     // −125
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
// The result is the single rounding of the exact e·2^k, as expconst
// specifies, but never computed by a floating-point operation whose result
// underflows: on Intel CPUs every such instruction (subnormal or zero
// result) takes a microcode assist of about a hundred cycles, which made an
// exp of underflowing arguments some 15 times slower. The fast path, taken
// when no lane has k ≤ −126, scales by 2^k in one rounding: AVX-512 with
// VSCALEFPS, AVX2 as (2e)·2^(k−1) (2e is exact and 2^(k−1) is a normal
// float for k in [−125, 128]). Otherwise an out-of-line block (expSlow)
// computes the flagged lanes as the integer bits round(e·2^(k+149)) (the
// float e·2^(k+149) is normal and exact, VCVTPS2DQ rounds it once to
// nearest even: those are the bits of the subnormal, or of the smallest
// normals, e·2^k) and blends them in. NaN lanes are never flagged.
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
	VMULPS(x, x, u)            // r²
	s.loadC(cP[0], t)          // p = P0
	for _, c := range cP[1:] {
		s.fmadd213C(c, x, t) // p = p·r + P[i]
	}
	s.addC(cOne, x, x)   // 1 + r
	VFMADD231PS(u, t, x) // e = (1 + r) + p·r²
	slow, back := s.newLabel("expslow"), s.newLabel("expback")
	if s.zmm {
		VCMPPS_BCST(U8(1), cSubK, n, K2) // lanes with k < −125.5
		KORTESTW(K2, K2)
		JNZ(LabelRef(slow))
		VSCALEFPS(n, x, x) // e·2^k, rounded once
	} else {
		VCMPPS(U8(1), cSubK, n, t) // lanes with k < −125.5
		VTESTPS(t, t)
		JNZ(LabelRef(slow))
		s.expScale2(x, n)
	}
	Label(back)
	deferred = append(deferred, func() { s.expSlow(slow, back, x, t, n, u) })
}

// expScale2 sets x = round(e·2^k) for k in [−125, 128] (float in n) on
// AVX2 as (2e)·2^(k−1); it clobbers n.
func (s isa) expScale2(x, n VecPhysical) {
	VCVTPS2DQ(n, n)        // k as int32 (exact)
	s.paddC(cBiasM1, n, n) // k − 1 + Bias
	VPSLLD(U8(23), n, n)   // 2^(k−1)
	VADDPS(x, x, x)        // 2e (exact)
	VMULPS(n, x, x)        // e·2^k, rounded once
}

// expSlow is the out-of-line block of exp for vectors with a lane whose
// result may be below the normal range (see exp): x = e, n = k (float).
func (s isa) expSlow(slow, back string, x, t, n, u VecPhysical) {
	Label(slow)
	s.addC(cSub149, n, u) // k + 149
	s.minC(cSub23, u, u)  // ≤ 23 (the other lanes are discarded)
	if s.zmm {
		VSCALEFPS(u, x, u)    // e·2^(k+149): normal, exact
		VCVTPS2DQ(u, u)       // its bits as a float32 of exponent field 0 (or 1)
		s.maxC(cSubMin, n, n) // k ≥ −125 in the lanes not flagged (as they are)
		VSCALEFPS(n, x, x)
		VMOVAPS(u, K2, x) // the flagged lanes from the integer path
	} else {
		VCVTPS2DQ(u, u)
		s.paddC(cBiasInt, u, u)
		VPSLLD(U8(23), u, u)       // 2^(k+149)
		VMULPS(x, u, u)            // e·2^(k+149): normal, exact
		VCVTPS2DQ(u, u)            // the bits of the result
		VCMPPS(U8(1), cSubK, n, t) // the flagged lanes again
		s.maxC(cSubMin, n, n)      // k ≥ −125 in every lane
		s.expScale2(x, n)
		VBLENDVPS(t, u, x, x) // flagged lanes from the integer path
	}
	JMP(LabelRef(back))
}

// deferred holds the out-of-line blocks of the current function, emitted
// after its RET by done.
var deferred []func()

// labelSeq numbers the generated local labels of the current function.
var labelSeq int

// newLabel returns a fresh local label name.
func (s isa) newLabel(prefix string) string {
	labelSeq++
	return fmt.Sprintf("%s%d", prefix, labelSeq)
}

func (s isa) minC(c Mem, x, dst VecPhysical) {
	if s.zmm {
		VMINPS_BCST(c, x, dst)
	} else {
		VMINPS(c, x, dst)
	}
}

func (s isa) maxC(c Mem, x, dst VecPhysical) {
	if s.zmm {
		VMAXPS_BCST(c, x, dst)
	} else {
		VMAXPS(c, x, dst)
	}
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
	"softmaxRows":        "func(rows, n int, l, c []float32)",
	"softmaxRowsGrad":    "func(rows, n int, c, dc, dl []float32)",
	"squash":             "func(kind, d, n int, s, v []float32)",
	"squashGrad":         "func(kind, d, n int, s, dv, ds []float32)",
	"gerGroups":          "func(ng, d, n int, x []float32, xs, xk int, y []float32, ldy int, a []float32, lda int)",
	"ger2Groups":         "func(ng, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int)",
	"ger2GroupsSet":      "func(ng, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int)",
	"ger2GemvGroups":     "func(ng, d, n int, alpha float32, a []float32, lda int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, out []float32)",
	"gemvNTGroups":       "func(ng, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int, z []float32, ldz int)",
	"gemvTGroups":        "func(ng, d, n int, a []float32, lda int, x []float32, xs, xk int, y []float32, ldy int)",
	"gemvNGroups":        "func(ng, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int)",
	"exp":                "func(x, y []float32)",
	"biasAct":            "func(rows, n int, y []float32, ldy int, bias []float32, relu int)",
	"reluMask":           "func(n int, y, dy, dx []float32)",
	"deinterleaveRows":   "func(rows, n int, src []float32, lds int, d0, d1 []float32, ldd int)",
	"transpose16":        "func(rows, n int, src []float32, lds, srow int, dst []float32, ldd, drow int)",
	"compactAct":         "func(ch, rows, n int, y, src []float32, lds, ldc int, bias []float32, relu int)",
	"adamStep":           "func(n, decoupled int, w, g, h, m, v []float32, b1, c1, b2, c2, wd, step, rbc2, eps float32)",
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

// loopAlign is the alignment, in bytes, of the head of every hot loop.
const loopAlign = 64

// loop places label at the head of a hot loop, aligned to loopAlign bytes
// with PCALIGN (avo has no builder for it, so the directive is emitted as
// a bare instruction; the padding is NOPs, run on each entry to the loop). Without it
// a loop's offset in its cache line depends on the code before it and on
// the link order: the small-shape loops (one vector per row, d ≤ 16 rows)
// ran 15–25% slower when a 45-byte loop straddled a 64-byte line.
func loop(label string) {
	Instruction(&ir.Instruction{Opcode: "PCALIGN", Operands: []Op{Imm(loopAlign)}})
	Label(label)
}

// done emits the common epilogue at label.
func done(label string) {
	Label(label)
	VZEROUPPER()
	RET()
	for _, f := range deferred {
		f()
	}
	deferred = nil
	labelSeq = 0
}
