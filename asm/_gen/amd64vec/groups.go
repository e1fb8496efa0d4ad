package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Grouped kernels: g blocks of d rows of a, stacked (block j is rows
// j·d … j·d+d−1), each paired with its own row of the other operand, in one
// call. Columns go in steps of two vectors, one vector, then a masked tail.
var (
	ggG, ggN, ggNB, ggN1, ggX, ggY, ggA, ggLDA, ggK, ggC, ggPA, ggPX, ggR = R12, R13, RBX, RDX, RSI, RDI, R8, R14, R10, RCX, RAX, R9, R11
	ggA1, ggA2, ggA3                                                      = RDI, R9, RBX
	ggDX2, ggDY2                                                          = RBX, RDX
)

// ggStart sets PA = &a[j·d, c], PX = &x[j·xs] and R = d.
func ggStart() {
	LEAQ(m(ggA, ggC, 0), ggPA)
	MOVQ(ggX, ggPX)
	arg("d", ggR)
}

// ggNext advances a by d rows and p1, p2 by the strides in the arguments
// s1, s2, then loops to label while groups are left.
func ggNext(s1 string, p1 GPPhysical, s2 string, p2 GPPhysical, label string) {
	arg("d", ggR)
	IMULQ(ggLDA, ggR)
	ADDQ(ggR, ggA)
	arg(s1, ggR)
	LEAQ(m(p1, ggR, 0), p1)
	arg(s2, ggR)
	LEAQ(m(p2, ggR, 0), p2)
	DECQ(ggG)
	JNZ(LabelRef(label))
}

// ggCols runs body2 while two vectors fit, body1 once if one fits, then
// tail if columns are left (bounds in NB and N1).
func (s isa) ggCols(body2, body1, tail func()) {
	XORQ(ggC, ggC)
	Label("c2")
	CMPQ(ggC, ggNB)
	JGT(LabelRef("c1"))
	body2()
	ADDQ(Imm(uint64(2*s.w)), ggC)
	JMP(LabelRef("c2"))
	Label("c1")
	CMPQ(ggC, ggN1)
	JGT(LabelRef("ct"))
	body1()
	ADDQ(Imm(uint64(s.w)), ggC)
	Label("ct")
	CMPQ(ggC, ggN)
	JGE(LabelRef("cend"))
	tail()
	Label("cend")
}

// ggBounds sets NB = n − 2w and N1 = n − w.
func (s isa) ggBounds() {
	MOVQ(ggN, ggNB)
	SUBQ(Imm(uint64(2*s.w)), ggNB)
	MOVQ(ggN, ggN1)
	SUBQ(Imm(uint64(s.w)), ggN1)
}

// ggPrologue loads ng, n and d, returns early if any is 0.
func ggPrologue() {
	arg("ng", ggG)
	arg("n", ggN)
	arg("d", ggR)
	TESTQ(ggG, ggG)
	JZ(LabelRef("done"))
	TESTQ(ggN, ggN)
	JZ(LabelRef("done"))
	TESTQ(ggR, ggR)
	JZ(LabelRef("done"))
}

func gerGroups(s isa) {
	s.text("gerGroups", "grouped rank-1 updates")
	ggPrologue()
	base("x", ggX)
	arg("xk", ggK)
	SHLQ(Imm(2), ggK)
	base("y", ggY)
	base("a", ggA)
	arg("lda", ggLDA)
	SHLQ(Imm(2), ggLDA)
	s.maskFor(ggN, "nomask")
	s.ggBounds()
	vb := s.vb()
	Label("group")
	one := func(mk bool, p string) {
		s.ld(mk, m(ggY, ggC, 0), s.v(0))
		ggStart()
		loop("rows" + p)
		VBROADCASTSS(m(ggPX, nil, 0), s.v(8))
		s.ld(mk, m(ggPA, nil, 0), s.v(4))
		VFMADD231PS(s.v(0), s.v(8), s.v(4))
		s.st(mk, s.v(4), m(ggPA, nil, 0))
		ADDQ(ggLDA, ggPA)
		ADDQ(ggK, ggPX)
		DECQ(ggR)
		JNZ(LabelRef("rows" + p))
	}
	s.ggCols(func() {
		VMOVUPS(m(ggY, ggC, 0), s.v(0))
		VMOVUPS(m(ggY, ggC, vb), s.v(1))
		ggStart()
		loop("rows2")
		VBROADCASTSS(m(ggPX, nil, 0), s.v(8))
		VMOVUPS(m(ggPA, nil, 0), s.v(4))
		VMOVUPS(m(ggPA, nil, vb), s.v(5))
		VFMADD231PS(s.v(0), s.v(8), s.v(4))
		VFMADD231PS(s.v(1), s.v(8), s.v(5))
		VMOVUPS(s.v(4), m(ggPA, nil, 0))
		VMOVUPS(s.v(5), m(ggPA, nil, vb))
		ADDQ(ggLDA, ggPA)
		ADDQ(ggK, ggPX)
		DECQ(ggR)
		JNZ(LabelRef("rows2"))
	}, func() { one(false, "1") }, func() { one(true, "m") })
	ggNext("xs", ggX, "ldy", ggY, "group")
	done("done")
}

func gemvTGroups(s isa) {
	s.text("gemvTGroups", "grouped y += Aᵀ·x")
	ggPrologue()
	base("a", ggA)
	arg("lda", ggLDA)
	SHLQ(Imm(2), ggLDA)
	base("x", ggX)
	arg("xk", ggK)
	SHLQ(Imm(2), ggK)
	base("y", ggY)
	s.maskFor(ggN, "nomask")
	s.ggBounds()
	vb := s.vb()
	Label("group")
	one := func(mk bool, p string) {
		s.ld(mk, m(ggY, ggC, 0), s.v(0))
		ggStart()
		loop("rows" + p)
		VBROADCASTSS(m(ggPX, nil, 0), s.v(8))
		s.ld(mk, m(ggPA, nil, 0), s.v(4))
		VFMADD231PS(s.v(4), s.v(8), s.v(0))
		ADDQ(ggLDA, ggPA)
		ADDQ(ggK, ggPX)
		DECQ(ggR)
		JNZ(LabelRef("rows" + p))
		s.st(mk, s.v(0), m(ggY, ggC, 0))
	}
	s.ggCols(func() {
		// Even rows into v0, v1, odd rows into v2, v3: four FMA chains.
		VMOVUPS(m(ggY, ggC, 0), s.v(0))
		VMOVUPS(m(ggY, ggC, vb), s.v(1))
		VXORPS(s.v(2), s.v(2), s.v(2))
		VXORPS(s.v(3), s.v(3), s.v(3))
		ggStart()
		loop("rows2")
		for k := 0; k < 2; k++ {
			VBROADCASTSS(m(ggPX, nil, 0), s.v(8))
			VFMADD231PS(m(ggPA, nil, 0), s.v(8), s.v(2*k))
			VFMADD231PS(m(ggPA, nil, vb), s.v(8), s.v(2*k+1))
			ADDQ(ggLDA, ggPA)
			ADDQ(ggK, ggPX)
			DECQ(ggR)
			if k == 0 {
				JZ(LabelRef("sum2"))
			} else {
				JNZ(LabelRef("rows2"))
			}
		}
		Label("sum2")
		VADDPS(s.v(2), s.v(0), s.v(0))
		VADDPS(s.v(3), s.v(1), s.v(1))
		VMOVUPS(s.v(0), m(ggY, ggC, 0))
		VMOVUPS(s.v(1), m(ggY, ggC, vb))
	}, func() { one(false, "1") }, func() { one(true, "m") })
	ggNext("xs", ggX, "ldy", ggY, "group")
	done("done")
}

// reduce8 folds the 8 lanes of Y0 into lane 0 of X0.
func reduce8() {
	VEXTRACTF128(Imm(1), Y0, X1)
	VADDPS(X1, X0, X0)
	VHADDPS(X0, X0, X0)
	VHADDPS(X0, X0, X0)
}

func gemvNGroups(s isa) {
	s.text("gemvNGroups", "grouped y += A·x")
	ggPrologue()
	base("a", ggA)
	arg("lda", ggLDA)
	SHLQ(Imm(2), ggLDA)
	base("x", ggX)
	base("y", ggY)
	arg("yk", ggK)
	SHLQ(Imm(2), ggK)
	s.maskFor(ggN, "nomask")
	s.ggBounds()
	MOVQ(ggY, ggPA) // PA walks y
	vb := s.vb()

	Label("group")
	arg("d", ggR)
	loop("row4")
	CMPQ(ggR, Imm(4))
	JLT(LabelRef("row1"))
	// Four rows: one vector step at a time into v0..v3, a masked tail, then
	// one shared VHADDPS reduction.
	for i := 0; i < 4; i++ {
		VXORPS(s.v(i), s.v(i), s.v(i))
	}
	LEAQ(Mem{Base: ggA, Index: ggLDA, Scale: 1}, ggA1)
	LEAQ(Mem{Base: ggA, Index: ggLDA, Scale: 2}, ggA2)
	LEAQ(Mem{Base: ggA1, Index: ggLDA, Scale: 2}, ggA3)
	rows := []GPPhysical{ggA, ggA1, ggA2, ggA3}
	XORQ(ggC, ggC)
	loop("r4c1")
	CMPQ(ggC, ggN1)
	JGT(LabelRef("r4ct"))
	VMOVUPS(m(ggX, ggC, 0), s.v(8))
	for i, r := range rows {
		VFMADD231PS(m(r, ggC, 0), s.v(8), s.v(i))
	}
	ADDQ(Imm(uint64(s.w)), ggC)
	JMP(LabelRef("r4c1"))
	Label("r4ct")
	CMPQ(ggC, ggN)
	JGE(LabelRef("r4end"))
	s.ld(true, m(ggX, ggC, 0), s.v(8))
	for i, r := range rows {
		s.ld(true, m(r, ggC, 0), s.v(9))
		VFMADD231PS(s.v(9), s.v(8), s.v(i))
	}
	Label("r4end")
	if s.zmm {
		for i := 0; i < 4; i++ {
			VEXTRACTF64X4(Imm(1), zregs[i], yregs[4+i])
			VADDPS(yregs[4+i], yregs[i], yregs[i])
		}
	}
	VHADDPS(Y1, Y0, Y0)
	VHADDPS(Y3, Y2, Y2)
	VHADDPS(Y2, Y0, Y0)
	VEXTRACTF128(Imm(1), Y0, X1)
	VADDPS(X1, X0, X0) // the 4 row sums
	VADDSS(m(ggPA, nil, 0), X0, X1)
	VMOVSS(X1, m(ggPA, nil, 0))
	ADDQ(ggK, ggPA)
	VMOVSHDUP(X0, X1)
	VADDSS(m(ggPA, nil, 0), X1, X1)
	VMOVSS(X1, m(ggPA, nil, 0))
	ADDQ(ggK, ggPA)
	VMOVHLPS(X0, X0, X1)
	VADDSS(m(ggPA, nil, 0), X1, X1)
	VMOVSS(X1, m(ggPA, nil, 0))
	ADDQ(ggK, ggPA)
	VPERMILPS(Imm(3), X0, X1)
	VADDSS(m(ggPA, nil, 0), X1, X1)
	VMOVSS(X1, m(ggPA, nil, 0))
	ADDQ(ggK, ggPA)
	LEAQ(Mem{Base: ggA3, Index: ggLDA, Scale: 1}, ggA)
	SUBQ(Imm(4), ggR)
	JMP(LabelRef("row4"))

	loop("row1")
	TESTQ(ggR, ggR)
	JZ(LabelRef("next"))
	MOVQ(ggN, ggNB) // the 4-row walk used NB's register
	SUBQ(Imm(uint64(2*s.w)), ggNB)
	VXORPS(s.v(0), s.v(0), s.v(0))
	VXORPS(s.v(1), s.v(1), s.v(1))
	s.ggCols(func() {
		VMOVUPS(m(ggX, ggC, 0), s.v(8))
		VFMADD231PS(m(ggA, ggC, 0), s.v(8), s.v(0))
		VMOVUPS(m(ggX, ggC, vb), s.v(9))
		VFMADD231PS(m(ggA, ggC, vb), s.v(9), s.v(1))
	}, func() {
		VMOVUPS(m(ggX, ggC, 0), s.v(8))
		VFMADD231PS(m(ggA, ggC, 0), s.v(8), s.v(0))
	}, func() {
		s.ld(true, m(ggX, ggC, 0), s.v(8))
		s.ld(true, m(ggA, ggC, 0), s.v(9))
		VFMADD231PS(s.v(9), s.v(8), s.v(1))
	})
	VADDPS(s.v(1), s.v(0), s.v(0))
	if s.zmm {
		VEXTRACTF64X4(Imm(1), Z0, Y1)
		VADDPS(Y1, Y0, Y0)
	}
	reduce8()
	VADDSS(m(ggPA, nil, 0), X0, X0)
	VMOVSS(X0, m(ggPA, nil, 0))
	ADDQ(ggK, ggPA)
	ADDQ(ggLDA, ggA)
	DECQ(ggR)
	JMP(LabelRef("row1"))

	Label("next")
	arg("d", ggPX)
	IMULQ(ggK, ggPX)
	SUBQ(ggPX, ggPA) // &y[j·ys]
	arg("ys", ggPX)
	LEAQ(m(ggPA, ggPX, 0), ggPA)
	arg("ldx", ggPX)
	LEAQ(m(ggX, ggPX, 0), ggX)
	DECQ(ggG)
	JNZ(LabelRef("group"))
	done("done")
}

// ger2Groups: rank-2 grouped update. x2 and y2 share the strides of x and
// y, so they are addressed as x and y plus a constant byte offset; the
// column bounds are computed in a scratch register (PA). set: a is
// overwritten, not read.
func ger2Groups(s isa, set bool) {
	fam := "ger2Groups"
	if set {
		fam = "ger2GroupsSet"
	}
	s.text(fam, "grouped rank-2 updates")
	ggPrologue()
	s.maskFor(ggN, "nomask")
	base("x", ggX)
	base("x2", ggDX2)
	SUBQ(ggX, ggDX2)
	arg("xk", ggK)
	SHLQ(Imm(2), ggK)
	base("y", ggY)
	base("y2", ggDY2)
	SUBQ(ggY, ggDY2)
	base("a", ggA)
	arg("lda", ggLDA)
	SHLQ(Imm(2), ggLDA)
	vb := s.vb()
	ald := func(mk bool, src Mem, dst VecPhysical) {
		if set {
			VXORPS(dst, dst, dst)
		} else {
			s.ld(mk, src, dst)
		}
	}
	one := func(mk bool, p string) {
		s.ld(mk, m(ggY, ggC, 0), s.v(0))
		LEAQ(m(ggY, ggC, 0), ggPA)
		s.ld(mk, Mem{Base: ggPA, Index: ggDY2, Scale: 1}, s.v(1))
		ggStart()
		loop("rows" + p)
		VBROADCASTSS(m(ggPX, nil, 0), s.v(8))
		VBROADCASTSS(Mem{Base: ggPX, Index: ggDX2, Scale: 1}, s.v(9))
		ald(mk, m(ggPA, nil, 0), s.v(4))
		VFMADD231PS(s.v(0), s.v(8), s.v(4))
		VFMADD231PS(s.v(1), s.v(9), s.v(4))
		s.st(mk, s.v(4), m(ggPA, nil, 0))
		ADDQ(ggLDA, ggPA)
		ADDQ(ggK, ggPX)
		DECQ(ggR)
		JNZ(LabelRef("rows" + p))
	}
	Label("group")
	XORQ(ggC, ggC)
	Label("c2")
	LEAQ(Mem{Base: ggC, Disp: 2 * s.w}, ggPA)
	CMPQ(ggPA, ggN)
	JGT(LabelRef("c1"))
	VMOVUPS(m(ggY, ggC, 0), s.v(0))
	VMOVUPS(m(ggY, ggC, vb), s.v(1))
	LEAQ(m(ggY, ggC, 0), ggPA)
	VMOVUPS(Mem{Base: ggPA, Index: ggDY2, Scale: 1}, s.v(2))
	VMOVUPS(Mem{Base: ggPA, Index: ggDY2, Scale: 1, Disp: vb}, s.v(3))
	ggStart()
	loop("rows2")
	VBROADCASTSS(m(ggPX, nil, 0), s.v(8))
	VBROADCASTSS(Mem{Base: ggPX, Index: ggDX2, Scale: 1}, s.v(9))
	ald(false, m(ggPA, nil, 0), s.v(4))
	ald(false, m(ggPA, nil, vb), s.v(5))
	VFMADD231PS(s.v(0), s.v(8), s.v(4))
	VFMADD231PS(s.v(1), s.v(8), s.v(5))
	VFMADD231PS(s.v(2), s.v(9), s.v(4))
	VFMADD231PS(s.v(3), s.v(9), s.v(5))
	VMOVUPS(s.v(4), m(ggPA, nil, 0))
	VMOVUPS(s.v(5), m(ggPA, nil, vb))
	ADDQ(ggLDA, ggPA)
	ADDQ(ggK, ggPX)
	DECQ(ggR)
	JNZ(LabelRef("rows2"))
	ADDQ(Imm(uint64(2*s.w)), ggC)
	JMP(LabelRef("c2"))
	Label("c1")
	LEAQ(Mem{Base: ggC, Disp: s.w}, ggPA)
	CMPQ(ggPA, ggN)
	JGT(LabelRef("ct"))
	one(false, "1")
	ADDQ(Imm(uint64(s.w)), ggC)
	Label("ct")
	CMPQ(ggC, ggN)
	JGE(LabelRef("cend"))
	one(true, "m")
	Label("cend")
	ggNext("xs", ggX, "ldy", ggY, "group")
	done("done")
}

// MulAddRowsBatch: y[b, c] (+)= Σ_{l<k} a[l, c]·x[b, l, c] for b < nb, with
// k ≤ 8. For every column block the k rows of a are loaded once into
// registers (v(rows)…) and reused for every b, so that a is read once per
// call however large nb is.
var mbA, mbX, mbY, mbK, mbLDA, mbLDX, mbXS, mbYS, mbN, mbPX, mbPY, mbB, mbPR = R8, RSI, RDI, R12, R14, R11, R10, RBX, RDX, R9, RAX, RCX, R13

func mulAddRowsBatch(s isa, set bool) {
	fam := "mulAddRowsBatch"
	if set {
		fam = "mulAddRowsBatchSet"
	}
	s.text(fam, "batched mulAddRows, k ≤ 8")
	arow := 7 // first register of the rows of a
	if s.zmm {
		arow = 16
	}
	arg("k", mbK)
	arg("n", mbN)
	base("a", mbA)
	arg("lda", mbLDA)
	base("x", mbX)
	arg("ldx", mbLDX)
	arg("xstride", mbXS)
	base("y", mbY)
	arg("ystride", mbYS)
	arg("nb", mbB)
	TESTQ(mbB, mbB)
	JZ(LabelRef("done"))
	TESTQ(mbK, mbK)
	JZ(LabelRef("done"))
	TESTQ(mbN, mbN)
	JZ(LabelRef("done"))
	for _, r := range []GPPhysical{mbLDA, mbLDX, mbXS, mbYS} {
		SHLQ(Imm(2), r)
	}
	chunk := func(mk bool, p string) {
		init := func(dst VecPhysical) {
			if set {
				VXORPS(dst, dst, dst)
			} else {
				s.ld(mk, m(mbPY, nil, 0), dst)
			}
		}
		// The k rows of a.
		MOVQ(mbA, mbPR)
		for l := 0; l < 8; l++ {
			if l > 0 {
				ADDQ(mbLDA, mbPR)
			}
			s.ld(mk, m(mbPR, nil, 0), s.v(arow+l))
			if l < 7 {
				CMPQ(mbK, Imm(uint64(l+1)))
				JEQ(LabelRef("rows" + p))
			}
		}
		Label("rows" + p)
		MOVQ(mbX, mbPX)
		MOVQ(mbY, mbPY)
		CMPQ(mbK, Imm(8))
		JNE(LabelRef("gen" + p))
		// k = 8, unrolled with two accumulators.
		loop("full" + p)
		init(s.v(0))
		MOVQ(mbPX, mbPR)
		for l := 0; l < 8; l += 2 {
			x1, x2 := s.v(1+l%4), s.v(2+l%4)
			s.ld(mk, m(mbPR, nil, 0), x1)
			ADDQ(mbLDX, mbPR)
			s.ld(mk, m(mbPR, nil, 0), x2)
			if l < 6 {
				ADDQ(mbLDX, mbPR)
			}
			VFMADD231PS(x1, s.v(arow+l), s.v(0))
			if l == 0 {
				VMULPS(x2, s.v(arow+l+1), s.v(6))
			} else {
				VFMADD231PS(x2, s.v(arow+l+1), s.v(6))
			}
		}
		VADDPS(s.v(6), s.v(0), s.v(0))
		s.st(mk, s.v(0), m(mbPY, nil, 0))
		ADDQ(mbXS, mbPX)
		ADDQ(mbYS, mbPY)
		DECQ(mbB)
		JNZ(LabelRef("full" + p))
		JMP(LabelRef("end" + p))
		// k < 8: a chain of tests.
		loop("gen" + p)
		init(s.v(0))
		MOVQ(mbPX, mbPR)
		for l := 0; l < 7; l++ {
			if l > 0 {
				ADDQ(mbLDX, mbPR)
			}
			s.ld(mk, m(mbPR, nil, 0), s.v(1))
			VFMADD231PS(s.v(1), s.v(arow+l), s.v(0))
			if l < 6 {
				CMPQ(mbK, Imm(uint64(l+1)))
				JEQ(LabelRef("gst" + p))
			}
		}
		Label("gst" + p)
		s.st(mk, s.v(0), m(mbPY, nil, 0))
		ADDQ(mbXS, mbPX)
		ADDQ(mbYS, mbPY)
		DECQ(mbB)
		JNZ(LabelRef("gen" + p))
		Label("end" + p)
	}
	Label("loop")
	CMPQ(mbN, Imm(uint64(s.w)))
	JLT(LabelRef("tail"))
	arg("nb", mbB)
	chunk(false, "u")
	for _, r := range []GPPhysical{mbA, mbX, mbY} {
		ADDQ(Imm(uint64(s.vb())), r)
	}
	SUBQ(Imm(uint64(s.w)), mbN)
	JMP(LabelRef("loop"))
	Label("tail")
	TESTQ(mbN, mbN)
	JZ(LabelRef("done"))
	s.tailMask(mbN, mbPR)
	arg("nb", mbB)
	chunk(true, "m")
	done("done")
}
