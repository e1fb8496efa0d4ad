package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Column-wise kernels on rows×n matrices with row stride n (softmax over
// the rows of each column; squash of capsules stored component-major).
// SI, R9 walk the inputs' columns, DI the output's, one vector per chunk.
var cwRows, cwN, cwLD, cwC, cwN8, cwKind = R12, R13, R14, RCX, RDX, R11

// columns runs chunk over the full vectors of columns, advancing the
// pointers ptrs, then once masked over the tail.
func (s isa) columns(ptrs []GPPhysical, chunk func(masked bool, p string)) {
	MOVQ(cwN, cwLD)
	SHLQ(Imm(2), cwLD) // row stride in bytes
	s.maskFor(cwN, "nomask")
	MOVQ(cwN, cwN8)
	SUBQ(Imm(uint64(s.w)), cwN8)
	XORQ(cwC, cwC)
	Label("loop")
	CMPQ(cwC, cwN8)
	JGT(LabelRef("tail"))
	chunk(false, "u")
	for _, p := range ptrs {
		ADDQ(Imm(uint64(s.vb())), p)
	}
	ADDQ(Imm(uint64(s.w)), cwC)
	JMP(LabelRef("loop"))
	Label("tail")
	CMPQ(cwC, cwN)
	JGE(LabelRef("done"))
	chunk(true, "m")
	done("done")
}

// rowLoop emits label, body, then advances ptrs by the row stride and
// loops cwRows times (counter R8).
func rowLoop(label string, ptrs []GPPhysical, body func()) {
	MOVQ(cwRows, R8)
	Label(label)
	body()
	for _, p := range ptrs {
		ADDQ(cwLD, p)
	}
	DECQ(R8)
	JNZ(LabelRef(label))
}

func softmaxCols(s isa) {
	s.text("softmaxCols", "column softmax")
	arg("rows", cwRows)
	arg("n", cwN)
	base("l", RSI)
	base("c", RDI)
	TESTQ(cwRows, cwRows)
	JZ(LabelRef("done"))
	TESTQ(cwN, cwN)
	JZ(LabelRef("done"))
	s.expSetup()
	s.columns([]GPPhysical{RSI, RDI}, func(mk bool, p string) {
		MOVQ(RSI, RAX)
		s.ld(mk, m(RAX, nil, 0), s.v(0)) // mx = l[0]
		rowLoop("max"+p, []GPPhysical{RAX}, func() {
			s.ld(mk, m(RAX, nil, 0), s.v(1))
			VMAXPS(s.v(1), s.v(0), s.v(0))
		})
		VXORPS(s.v(2), s.v(2), s.v(2)) // sum = 0
		MOVQ(RSI, RAX)
		MOVQ(RDI, RBX)
		rowLoop("exp"+p, []GPPhysical{RAX, RBX}, func() {
			s.ld(mk, m(RAX, nil, 0), s.v(3))
			VSUBPS(s.v(0), s.v(3), s.v(3)) // l − mx
			s.exp(s.v(3), s.v(4), s.v(5), s.v(6))
			s.st(mk, s.v(3), m(RBX, nil, 0))
			VADDPS(s.v(3), s.v(2), s.v(2))
		})
		s.loadC(cOne, s.v(1))
		VDIVPS(s.v(2), s.v(1), s.v(1)) // 1/sum
		MOVQ(RDI, RBX)
		rowLoop("scale"+p, []GPPhysical{RBX}, func() {
			s.ld(mk, m(RBX, nil, 0), s.v(3))
			VMULPS(s.v(3), s.v(1), s.v(3))
			s.st(mk, s.v(3), m(RBX, nil, 0))
		})
	})
}

func softmaxColsGrad(s isa) {
	s.text("softmaxColsGrad", "column softmax gradient")
	arg("rows", cwRows)
	arg("n", cwN)
	base("c", RSI)
	base("dc", R9)
	base("dl", RDI)
	TESTQ(cwRows, cwRows)
	JZ(LabelRef("done"))
	TESTQ(cwN, cwN)
	JZ(LabelRef("done"))
	s.columns([]GPPhysical{RSI, R9, RDI}, func(mk bool, p string) {
		VXORPS(s.v(0), s.v(0), s.v(0)) // dot = 0
		MOVQ(RSI, RAX)
		MOVQ(R9, RBX)
		rowLoop("dot"+p, []GPPhysical{RAX, RBX}, func() {
			s.ld(mk, m(RAX, nil, 0), s.v(1))
			s.ld(mk, m(RBX, nil, 0), s.v(2))
			VFMADD231PS(s.v(2), s.v(1), s.v(0))
		})
		MOVQ(RSI, RAX)
		MOVQ(R9, RBX)
		MOVQ(RDI, R10)
		rowLoop("out"+p, []GPPhysical{RAX, RBX, R10}, func() {
			s.ld(mk, m(RAX, nil, 0), s.v(1))
			s.ld(mk, m(RBX, nil, 0), s.v(2))
			VSUBPS(s.v(0), s.v(2), s.v(2)) // dc − dot
			VMULPS(s.v(2), s.v(1), s.v(1))
			s.st(mk, s.v(1), m(R10, nil, 0))
		})
	})
}

func squash(s isa) {
	s.text("squash", "squash of component-major capsules")
	arg("kind", cwKind)
	arg("d", cwRows)
	arg("n", cwN)
	base("s", RSI)
	base("v", RDI)
	TESTQ(cwRows, cwRows)
	JZ(LabelRef("done"))
	TESTQ(cwN, cwN)
	JZ(LabelRef("done"))
	s.expSetup()
	s.columns([]GPPhysical{RSI, RDI}, func(mk bool, p string) {
		VXORPS(s.v(0), s.v(0), s.v(0)) // q = 0
		MOVQ(RSI, RAX)
		rowLoop("q"+p, []GPPhysical{RAX}, func() {
			s.ld(mk, m(RAX, nil, 0), s.v(1))
			VFMADD231PS(s.v(1), s.v(1), s.v(0))
		})
		s.addC(cEps, s.v(0), s.v(1))
		VSQRTPS(s.v(1), s.v(1)) // nrm
		CMPQ(cwKind, Imm(0))
		JNE(LabelRef("sab" + p))
		VXORPS(s.v(2), s.v(2), s.v(2))
		VSUBPS(s.v(1), s.v(2), s.v(2)) // −nrm
		s.exp(s.v(2), s.v(3), s.v(4), s.v(6))
		s.loadC(cOne, s.v(3))
		VSUBPS(s.v(2), s.v(3), s.v(3)) // 1 − e
		VDIVPS(s.v(1), s.v(3), s.v(5)) // f = (1 − e)/nrm
		JMP(LabelRef("apply" + p))
		Label("sab" + p)
		s.addC(cOne, s.v(0), s.v(3))   // 1 + q
		VDIVPS(s.v(3), s.v(0), s.v(3)) // q/(1 + q)
		VDIVPS(s.v(1), s.v(3), s.v(5)) // f
		Label("apply" + p)
		MOVQ(RSI, RAX)
		MOVQ(RDI, RBX)
		rowLoop("out"+p, []GPPhysical{RAX, RBX}, func() {
			s.ld(mk, m(RAX, nil, 0), s.v(1))
			VMULPS(s.v(1), s.v(5), s.v(1))
			s.st(mk, s.v(1), m(RBX, nil, 0))
		})
	})
}

func squashGrad(s isa) {
	s.text("squashGrad", "squash gradient")
	arg("kind", cwKind)
	arg("d", cwRows)
	arg("n", cwN)
	base("s", RSI)
	base("dv", R9)
	base("ds", RDI)
	TESTQ(cwRows, cwRows)
	JZ(LabelRef("done"))
	TESTQ(cwN, cwN)
	JZ(LabelRef("done"))
	s.expSetup()
	s.columns([]GPPhysical{RSI, R9, RDI}, func(mk bool, p string) {
		VXORPS(s.v(0), s.v(0), s.v(0)) // q = 0
		VXORPS(s.v(1), s.v(1), s.v(1)) // dot = 0
		MOVQ(RSI, RAX)
		MOVQ(R9, RBX)
		rowLoop("q"+p, []GPPhysical{RAX, RBX}, func() {
			s.ld(mk, m(RAX, nil, 0), s.v(2))
			s.ld(mk, m(RBX, nil, 0), s.v(3))
			VFMADD231PS(s.v(2), s.v(2), s.v(0))
			VFMADD231PS(s.v(3), s.v(2), s.v(1))
		})
		s.addC(cEps, s.v(0), s.v(2))
		VSQRTPS(s.v(2), s.v(2)) // nrm
		CMPQ(cwKind, Imm(0))
		JNE(LabelRef("sab" + p))
		VXORPS(s.v(3), s.v(3), s.v(3))
		VSUBPS(s.v(2), s.v(3), s.v(3)) // −nrm
		s.exp(s.v(3), s.v(4), s.v(5), s.v(6))
		s.loadC(cOne, s.v(4))
		VSUBPS(s.v(3), s.v(4), s.v(4))  // 1 − e
		VDIVPS(s.v(2), s.v(4), s.v(10)) // f = (1 − e)/nrm
		VSUBPS(s.v(10), s.v(3), s.v(3)) // e − f
		VMULPS(s.v(2), s.v(2), s.v(4))  // nrm²
		VDIVPS(s.v(4), s.v(3), s.v(11)) // h = (e − f)/nrm²
		JMP(LabelRef("apply" + p))
		Label("sab" + p)
		s.addC(cOne, s.v(0), s.v(3))    // t = 1 + q
		VDIVPS(s.v(3), s.v(0), s.v(4))  // a = q/t
		VDIVPS(s.v(2), s.v(4), s.v(10)) // f = a/nrm
		VMULPS(s.v(3), s.v(3), s.v(3))  // t²
		VMULPS(s.v(2), s.v(3), s.v(3))  // t²·nrm
		s.loadC(cTwo, s.v(5))
		VDIVPS(s.v(3), s.v(5), s.v(5))  // 2/(t²·nrm)
		VMULPS(s.v(2), s.v(2), s.v(6))  // nrm²
		VMULPS(s.v(2), s.v(6), s.v(6))  // nrm³
		VDIVPS(s.v(6), s.v(4), s.v(6))  // a/nrm³
		VSUBPS(s.v(6), s.v(5), s.v(11)) // h
		Label("apply" + p)
		VMULPS(s.v(1), s.v(11), s.v(11)) // h·dot
		MOVQ(RSI, RAX)
		MOVQ(R9, RBX)
		MOVQ(RDI, R10)
		rowLoop("out"+p, []GPPhysical{RAX, RBX, R10}, func() {
			s.ld(mk, m(RBX, nil, 0), s.v(2))
			VMULPS(s.v(2), s.v(10), s.v(2)) // f·dv
			s.ld(mk, m(RAX, nil, 0), s.v(3))
			VFMADD231PS(s.v(3), s.v(11), s.v(2))
			s.st(mk, s.v(2), m(R10, nil, 0))
		})
	})
}

// expKernel: y = exp(x), two vectors per step, then one, then masked.
func expKernel(s isa) {
	s.text("exp", "y = exp(x)")
	base("x", RSI)
	Load(Param("x").Len(), R13)
	base("y", RDI)
	TESTQ(R13, R13)
	JZ(LabelRef("done"))
	s.expSetup()
	s.maskFor(R13, "nomask")
	MOVQ(R13, RBX)
	SUBQ(Imm(uint64(2*s.w)), RBX)
	MOVQ(R13, RDX)
	SUBQ(Imm(uint64(s.w)), RDX)
	XORQ(RCX, RCX)
	vb := s.vb()
	Label("loop2")
	CMPQ(RCX, RBX)
	JGT(LabelRef("step1"))
	VMOVUPS(m(RSI, RCX, 0), s.v(0))
	VMOVUPS(m(RSI, RCX, vb), s.v(4))
	s.exp(s.v(0), s.v(1), s.v(2), s.v(3))
	s.exp(s.v(4), s.v(5), s.v(6), s.v(7))
	VMOVUPS(s.v(0), m(RDI, RCX, 0))
	VMOVUPS(s.v(4), m(RDI, RCX, vb))
	ADDQ(Imm(uint64(2*s.w)), RCX)
	JMP(LabelRef("loop2"))
	Label("step1")
	CMPQ(RCX, RDX)
	JGT(LabelRef("tail"))
	VMOVUPS(m(RSI, RCX, 0), s.v(0))
	s.exp(s.v(0), s.v(1), s.v(2), s.v(3))
	VMOVUPS(s.v(0), m(RDI, RCX, 0))
	ADDQ(Imm(uint64(s.w)), RCX)
	Label("tail")
	CMPQ(RCX, R13)
	JGE(LabelRef("done"))
	s.ld(true, m(RSI, RCX, 0), s.v(0))
	s.exp(s.v(0), s.v(1), s.v(2), s.v(3))
	s.st(true, s.v(0), m(RDI, RCX, 0))
	done("done")
}
