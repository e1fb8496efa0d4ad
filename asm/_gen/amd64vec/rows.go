package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// gemvN: four rows at a time, 8 accumulators (2 per row) over two-vector
// column steps, then one vector step, then a masked tail; the 4 row sums
// are reduced together with VHADDPS (AVX-512 first folds each row's 16
// lanes to 8) and added to y[r:r+4]. Single rows the same way.
func gemvN(s isa) {
	s.text("gemvN", "y += A·x")
	a0, a1, a2, a3 := R8, R9, R10, R11
	x, y, mm, n, lda, c, n2, n1 := RSI, RDI, R12, R13, R14, RCX, RBX, RDX
	arg("m", mm)
	arg("n", n)
	base("a", a0)
	arg("lda", lda)
	base("x", x)
	base("y", y)
	TESTQ(mm, mm)
	JZ(LabelRef("done"))
	TESTQ(n, n)
	JZ(LabelRef("done"))
	SHLQ(Imm(2), lda)
	s.maskFor(n, "nomask")
	MOVQ(n, n2)
	SUBQ(Imm(uint64(2*s.w)), n2)
	MOVQ(n, n1)
	SUBQ(Imm(uint64(s.w)), n1)
	rows := []GPPhysical{a0, a1, a2, a3}
	vb := s.vb()

	step := func(nr int, masked bool) { // one vector step of nr rows
		s.ld(masked, m(x, c, 0), s.v(8))
		for r := 0; r < nr; r++ {
			s.ld(masked, m(rows[r], c, 0), s.v(9+r))
			VFMADD231PS(s.v(9+r), s.v(8), s.v(2*r))
		}
	}
	block := func(nr int, p string, sum func()) {
		for i := 0; i < 2*nr; i++ {
			VXORPS(s.v(i), s.v(i), s.v(i))
		}
		XORQ(c, c)
		// Not loop(): the padding would sit in the rows4 body and run every
		// 4 rows even when n < 2w and loop2 never iterates (GemvN 8×16
		// AVX-512: 10.7 → 11.3 ns); long rows are at parity either way.
		Label(p + "loop2")
		CMPQ(c, n2)
		JGT(LabelRef(p + "step1"))
		VMOVUPS(m(x, c, 0), s.v(8))
		VMOVUPS(m(x, c, vb), s.v(9))
		for r := 0; r < nr; r++ {
			VFMADD231PS(m(rows[r], c, 0), s.v(8), s.v(2*r))
			VFMADD231PS(m(rows[r], c, vb), s.v(9), s.v(2*r+1))
		}
		ADDQ(Imm(uint64(2*s.w)), c)
		JMP(LabelRef(p + "loop2"))
		Label(p + "step1")
		CMPQ(c, n1)
		JGT(LabelRef(p + "tail"))
		step(nr, false)
		ADDQ(Imm(uint64(s.w)), c)
		Label(p + "tail")
		CMPQ(c, n)
		JGE(LabelRef(p + "sum"))
		step(nr, true)
		Label(p + "sum")
		for r := 0; r < nr; r++ {
			VADDPS(s.v(2*r+1), s.v(2*r), s.v(2*r))
			if s.zmm { // fold 16 lanes to 8
				VEXTRACTF64X4(Imm(1), zregs[2*r], yregs[2*r+1])
				VADDPS(yregs[2*r+1], yregs[2*r], yregs[2*r])
			}
		}
		sum()
	}

	loop("rows4")
	CMPQ(mm, Imm(4))
	JLT(LabelRef("rows1"))
	LEAQ(Mem{Base: a0, Index: lda, Scale: 1}, a1)
	LEAQ(Mem{Base: a1, Index: lda, Scale: 1}, a2)
	LEAQ(Mem{Base: a2, Index: lda, Scale: 1}, a3)
	block(4, "r4", func() {
		VHADDPS(Y2, Y0, Y0) // pairwise sums of rows 0, 1
		VHADDPS(Y6, Y4, Y4) // rows 2, 3
		VHADDPS(Y4, Y0, Y0) // [s0 s1 s2 s3 | s0' s1' s2' s3']
		VEXTRACTF128(Imm(1), Y0, X1)
		VADDPS(X1, X0, X0) // the 4 row sums
		VADDPS(m(y, nil, 0), X0, X0)
		VMOVUPS(X0, m(y, nil, 0))
		ADDQ(Imm(16), y)
		LEAQ(Mem{Base: a3, Index: lda, Scale: 1}, a0)
		SUBQ(Imm(4), mm)
		JMP(LabelRef("rows4"))
	})

	loop("rows1")
	TESTQ(mm, mm)
	JZ(LabelRef("done"))
	block(1, "r1", func() {
		VEXTRACTF128(Imm(1), Y0, X1)
		VADDPS(X1, X0, X0)
		VHADDPS(X0, X0, X0)
		VHADDPS(X0, X0, X0) // row sum
		VADDSS(m(y, nil, 0), X0, X0)
		VMOVSS(X0, m(y, nil, 0))
		ADDQ(Imm(4), y)
		ADDQ(lda, a0)
		DECQ(mm)
		JMP(LabelRef("rows1"))
	})
	done("done")
}

// Column-chunk kernels: the y (or a) chunk of a column block stays in
// registers while the loop runs down the rows.
var (
	ccA, ccX, ccY, ccM, ccN, ccLDA, ccC, ccNB, ccN8, ccPA, ccPX, ccR, ccLDX = R8, RSI, RDI, R12, R13, R14, RCX, RBX, RDX, RAX, R9, R10, R11
)

// columnBlocks runs block (nv vectors wide, full) while it fits, then one
// vector at a time, then the masked tail.
func (s isa) columnBlocks(nv int, blockFn func(), one func(masked bool, p string)) {
	s.maskFor(ccN, "nomask")
	MOVQ(ccN, ccNB)
	SUBQ(Imm(uint64(nv*s.w)), ccNB)
	MOVQ(ccN, ccN8)
	SUBQ(Imm(uint64(s.w)), ccN8)
	XORQ(ccC, ccC)
	Label("loopb")
	CMPQ(ccC, ccNB)
	JGT(LabelRef("loop1"))
	blockFn()
	ADDQ(Imm(uint64(nv*s.w)), ccC)
	JMP(LabelRef("loopb"))
	Label("loop1")
	CMPQ(ccC, ccN8)
	JGT(LabelRef("tail"))
	one(false, "u")
	ADDQ(Imm(uint64(s.w)), ccC)
	JMP(LabelRef("loop1"))
	Label("tail")
	CMPQ(ccC, ccN)
	JGE(LabelRef("done"))
	one(true, "m")
	done("done")
}

// gemvT: blocks of 8 vectors of y in registers while the rows of a stream
// by; single vectors with two accumulators (even and odd rows).
func gemvT(s isa) {
	s.text("gemvT", "y += Aᵀ·x")
	arg("m", ccM)
	arg("n", ccN)
	base("a", ccA)
	arg("lda", ccLDA)
	base("x", ccX)
	base("y", ccY)
	TESTQ(ccM, ccM)
	JZ(LabelRef("done"))
	TESTQ(ccN, ccN)
	JZ(LabelRef("done"))
	SHLQ(Imm(2), ccLDA)
	vb := s.vb()
	s.columnBlocks(8, func() {
		for i := 0; i < 8; i++ {
			VMOVUPS(m(ccY, ccC, i*vb), s.v(i))
		}
		LEAQ(m(ccA, ccC, 0), ccPA)
		MOVQ(ccX, ccPX)
		MOVQ(ccM, ccR)
		loop("rowsb")
		VBROADCASTSS(m(ccPX, nil, 0), s.v(8))
		for i := 0; i < 8; i++ {
			VFMADD231PS(m(ccPA, nil, i*vb), s.v(8), s.v(i))
		}
		ADDQ(ccLDA, ccPA)
		ADDQ(Imm(4), ccPX)
		DECQ(ccR)
		JNZ(LabelRef("rowsb"))
		for i := 0; i < 8; i++ {
			VMOVUPS(s.v(i), m(ccY, ccC, i*vb))
		}
	}, func(masked bool, p string) {
		s.ld(masked, m(ccY, ccC, 0), s.v(0))
		VXORPS(s.v(1), s.v(1), s.v(1))
		LEAQ(m(ccA, ccC, 0), ccPA)
		MOVQ(ccX, ccPX)
		MOVQ(ccM, ccR)
		loop("rows" + p)
		for k := 0; k < 2; k++ {
			VBROADCASTSS(m(ccPX, nil, 0), s.v(8))
			s.ld(masked, m(ccPA, nil, 0), s.v(9))
			VFMADD231PS(s.v(9), s.v(8), s.v(k))
			ADDQ(ccLDA, ccPA)
			ADDQ(Imm(4), ccPX)
			DECQ(ccR)
			if k == 0 {
				JZ(LabelRef("sum" + p))
			} else {
				JNZ(LabelRef("rows" + p))
			}
		}
		Label("sum" + p)
		VADDPS(s.v(1), s.v(0), s.v(0))
		s.st(masked, s.v(0), m(ccY, ccC, 0))
	})
}

// ger: blocks of 4 vectors of y in registers, a updated row by row.
func ger(s isa) {
	s.text("ger", "A += x·yᵀ")
	arg("m", ccM)
	arg("n", ccN)
	base("x", ccX)
	base("y", ccY)
	base("a", ccA)
	arg("lda", ccLDA)
	TESTQ(ccM, ccM)
	JZ(LabelRef("done"))
	TESTQ(ccN, ccN)
	JZ(LabelRef("done"))
	SHLQ(Imm(2), ccLDA)
	vb := s.vb()
	s.columnBlocks(4, func() {
		for i := 0; i < 4; i++ {
			VMOVUPS(m(ccY, ccC, i*vb), s.v(i))
		}
		LEAQ(m(ccA, ccC, 0), ccPA)
		MOVQ(ccX, ccPX)
		MOVQ(ccM, ccR)
		loop("rowsb")
		VBROADCASTSS(m(ccPX, nil, 0), s.v(8))
		for i := 0; i < 4; i++ {
			VMOVUPS(m(ccPA, nil, i*vb), s.v(4+i))
		}
		for i := 0; i < 4; i++ {
			VFMADD231PS(s.v(i), s.v(8), s.v(4+i))
		}
		for i := 0; i < 4; i++ {
			VMOVUPS(s.v(4+i), m(ccPA, nil, i*vb))
		}
		ADDQ(ccLDA, ccPA)
		ADDQ(Imm(4), ccPX)
		DECQ(ccR)
		JNZ(LabelRef("rowsb"))
	}, func(masked bool, p string) {
		s.ld(masked, m(ccY, ccC, 0), s.v(0))
		LEAQ(m(ccA, ccC, 0), ccPA)
		MOVQ(ccX, ccPX)
		MOVQ(ccM, ccR)
		loop("rows" + p)
		VBROADCASTSS(m(ccPX, nil, 0), s.v(8))
		s.ld(masked, m(ccPA, nil, 0), s.v(4))
		VFMADD231PS(s.v(0), s.v(8), s.v(4))
		s.st(masked, s.v(4), m(ccPA, nil, 0))
		ADDQ(ccLDA, ccPA)
		ADDQ(Imm(4), ccPX)
		DECQ(ccR)
		JNZ(LabelRef("rows" + p))
	})
}

// mulAddRows: blocks of 4 vectors of y in registers; single vectors with
// two accumulators (even and odd l).
func mulAddRows(s isa) {
	s.text("mulAddRows", "y += Σ_l a_l∘x_l")
	arg("k", ccM)
	arg("n", ccN)
	base("a", ccA)
	arg("lda", ccLDA)
	base("x", ccX)
	arg("ldx", ccLDX)
	base("y", ccY)
	TESTQ(ccM, ccM)
	JZ(LabelRef("done"))
	TESTQ(ccN, ccN)
	JZ(LabelRef("done"))
	SHLQ(Imm(2), ccLDA)
	SHLQ(Imm(2), ccLDX)
	vb := s.vb()
	s.columnBlocks(4, func() {
		for i := 0; i < 4; i++ {
			VMOVUPS(m(ccY, ccC, i*vb), s.v(i))
		}
		LEAQ(m(ccA, ccC, 0), ccPA)
		LEAQ(m(ccX, ccC, 0), ccPX)
		MOVQ(ccM, ccR)
		loop("rowsb")
		for i := 0; i < 4; i++ {
			VMOVUPS(m(ccPA, nil, i*vb), s.v(4+i))
		}
		for i := 0; i < 4; i++ {
			VFMADD231PS(m(ccPX, nil, i*vb), s.v(4+i), s.v(i))
		}
		ADDQ(ccLDA, ccPA)
		ADDQ(ccLDX, ccPX)
		DECQ(ccR)
		JNZ(LabelRef("rowsb"))
		for i := 0; i < 4; i++ {
			VMOVUPS(s.v(i), m(ccY, ccC, i*vb))
		}
	}, func(masked bool, p string) {
		s.ld(masked, m(ccY, ccC, 0), s.v(0))
		VXORPS(s.v(1), s.v(1), s.v(1))
		LEAQ(m(ccA, ccC, 0), ccPA)
		LEAQ(m(ccX, ccC, 0), ccPX)
		MOVQ(ccM, ccR)
		loop("rows" + p)
		for k := 0; k < 2; k++ {
			s.ld(masked, m(ccPA, nil, 0), s.v(4))
			s.ld(masked, m(ccPX, nil, 0), s.v(5))
			VFMADD231PS(s.v(5), s.v(4), s.v(k))
			ADDQ(ccLDA, ccPA)
			ADDQ(ccLDX, ccPX)
			DECQ(ccR)
			if k == 0 {
				JZ(LabelRef("sum" + p))
			} else {
				JNZ(LabelRef("rows" + p))
			}
		}
		Label("sum" + p)
		VADDPS(s.v(1), s.v(0), s.v(0))
		s.st(masked, s.v(0), m(ccY, ccC, 0))
	})
}
