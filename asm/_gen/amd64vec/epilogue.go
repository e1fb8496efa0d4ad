package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// The convolution epilogue and prologue kernels: biasAct (the bias and
// the ReLU of the GEMM output rows) and reluMask (the ReLU mask of the
// backward's dy). Both are element-wise, so they match the Go loops of
// package kernels bit for bit.
//
// The ReLU follows Go's max(v, 0) on amd64 exactly. The compiler expands
// it as −min(−v, −0) with two MINSS whose results are ORed (so that the
// signed zeros and NaN come out right): v when v > 0, +0 for every other
// number (−0 included), and a NaN v with its sign bit cleared (payload
// kept, a signalling NaN not quieted). That is
//
//	relu(v) = NLE_UQ(v, 0) ? v AND 0x7fffffff : +0
//
// (NLE_UQ: not v ≤ 0, true for NaN; v > 0 has a clear sign bit anyway):
// a compare and two ANDs, with 0x7fffffff and with the compare mask (AVX2),
// or a compare into K2 and a zero-masked VPANDD with 0x7fffffff (AVX-512).
// A VMAXPS with v as the operand returned on NaN and an add of +0.0 would
// keep a negative NaN's sign bit, which Go clears.

// Epilogue registers: rows, columns, y, row stride, bias, relu flag,
// column index, the column limits of the block and single-vector loops.
var epRows, epN, epY, epLD, epB, epRelu, epC, epNB, epN1 = R12, R13, RDI, R14, RSI, R11, RCX, RDX, R9

// epColumns runs, with epC from 0, block over full blocks of nv vectors,
// then one over full vectors, then one masked over the tail (if any);
// labels are prefixed with p; it ends at label end.
func (s isa) epColumns(nv int, p, end string, block func(), one func(masked bool)) {
	XORQ(epC, epC)
	Label(p + "loopb")
	CMPQ(epC, epNB)
	JGT(LabelRef(p + "loop1"))
	block()
	ADDQ(Imm(uint64(nv*s.w)), epC)
	JMP(LabelRef(p + "loopb"))
	Label(p + "loop1")
	CMPQ(epC, epN1)
	JGT(LabelRef(p + "tail"))
	one(false)
	ADDQ(Imm(uint64(s.w)), epC)
	JMP(LabelRef(p + "loop1"))
	Label(p + "tail")
	CMPQ(epC, epN)
	JGE(LabelRef(end))
	one(true)
}

// epLimits sets the tail mask and epNB = n − nv·w, epN1 = n − w.
func (s isa) epLimits(nv int) {
	s.maskFor(epN, "nomask")
	MOVQ(epN, epNB)
	SUBQ(Imm(uint64(nv*s.w)), epNB)
	MOVQ(epN, epN1)
	SUBQ(Imm(uint64(s.w)), epN1)
}

// epNV is the number of vectors per block of the epilogue loops.
const epNV = 4

// reluV sets v = relu(v) (see above) with zero = +0 and abs = 0x7fffffff
// in every lane, and t a scratch vector (AVX2) or k a mask register
// (AVX-512).
func (s isa) reluV(v, zero, abs, t VecPhysical, k OpmaskPhysical) {
	if s.zmm {
		VCMPPS(U8(0x16), zero, v, k) // k = NLE_UQ(v, 0): v > 0 or NaN
		VPANDD_Z(abs, v, k, v)       // v = k ? v & 0x7fffffff : +0
		return
	}
	VCMPPS(U8(0x16), zero, v, t) // t = NLE_UQ(v, 0): all ones where v > 0 or NaN
	VANDPS(abs, t, t)            // 0x7fffffff there, 0 elsewhere
	VANDPS(t, v, v)              // v = v & t
}

// kmasks are the AVX-512 mask registers of the ReLU compares of one block.
var kmasks = []OpmaskPhysical{K2, K3, K4, K5}

// biasAct: for every row r < rows, y[r*ldy+c] = y[r*ldy+c] + bias[r], then
// the ReLU when relu ≠ 0, for c < n: the bias broadcast per row, blocks of
// 4 vectors, single vectors, a masked tail; the relu flag selects one of
// two copies of the row loop.
//
// Registers: v0 the bias, v1 +0, v2 0x7fffffff, v4..v7 the
// data, v8..v11 the AVX2 compare masks; K2..K5 the AVX-512 ones.
func biasAct(s isa) {
	s.text("biasAct", "y[r,:] += bias[r], then the ReLU if relu ≠ 0")
	arg("rows", epRows)
	arg("n", epN)
	base("y", epY)
	arg("ldy", epLD)
	base("bias", epB)
	arg("relu", epRelu)
	TESTQ(epRows, epRows)
	JZ(LabelRef("done"))
	TESTQ(epN, epN)
	JZ(LabelRef("done"))
	SHLQ(Imm(2), epLD) // row stride in bytes
	s.epLimits(epNV)
	zero, abs, b := s.v(1), s.v(2), s.v(0)
	VXORPS(zero, zero, zero)
	if s.zmm {
		VPTERNLOGD(U8(0xff), abs, abs, abs) // all ones
	} else {
		VPCMPEQD(abs, abs, abs)
	}
	VPSRLD(U8(1), abs, abs) // 0x7fffffff
	vb := s.vb()
	rowsLoop := func(p string, relu bool) {
		Label(p + "row")
		VBROADCASTSS(m(epB, nil, 0), b)
		vec := func(i int) {
			VADDPS(b, s.v(4+i), s.v(4+i)) // y + bias (y the first source, as Go's y += b)
			if relu {
				s.reluV(s.v(4+i), zero, abs, s.v(8+i), kmasks[i])
			}
		}
		s.epColumns(epNV, p, p+"next", func() {
			for i := 0; i < epNV; i++ {
				VMOVUPS(m(epY, epC, i*vb), s.v(4+i))
			}
			for i := 0; i < epNV; i++ {
				vec(i)
			}
			for i := 0; i < epNV; i++ {
				VMOVUPS(s.v(4+i), m(epY, epC, i*vb))
			}
		}, func(masked bool) {
			s.ld(masked, m(epY, epC, 0), s.v(4))
			vec(0)
			s.st(masked, s.v(4), m(epY, epC, 0))
		})
		Label(p + "next")
		ADDQ(epLD, epY)
		ADDQ(Imm(4), epB)
		DECQ(epRows)
		JNZ(LabelRef(p + "row"))
	}
	TESTQ(epRelu, epRelu)
	JZ(LabelRef("plainrow"))
	rowsLoop("relu", true)
	JMP(LabelRef("done"))
	rowsLoop("plain", false)
	done("done")
}

// reluMask: dx[i] = y[i] > 0 ? dy[i] : +0 for i < n, as a compare mask
// (VCMPPS GT_OQ: false for NaN y) ANDed with dy (AVX2), or a compare into
// K2 and a load of dy zero-masked by it (AVX-512); dy's bits pass through
// unchanged, NaN included. dx may be dy (each vector of dy is read before
// the same vector of dx is written). Blocks of 4 vectors, single vectors,
// a masked tail.
//
// Registers: v1 +0, v4..v7 y and then the result; K2..K5 the AVX-512
// compare masks.
func reluMask(s isa) {
	s.text("reluMask", "dx = dy where y > 0, else +0")
	y, dy, dx := RSI, R8, RDI
	arg("n", epN)
	base("y", y)
	base("dy", dy)
	base("dx", dx)
	TESTQ(epN, epN)
	JZ(LabelRef("done"))
	s.epLimits(epNV)
	zero := s.v(1)
	VXORPS(zero, zero, zero)
	vb := s.vb()
	// mask sets v = dy where v > 0, else +0, at byte offset disp.
	maskV := func(masked bool, i, disp int) {
		v := s.v(4 + i)
		if s.zmm {
			VCMPPS(U8(0x1e), zero, v, kmasks[i]) // k = GT_OQ(v, 0): v > 0 (tail lanes are 0)
			VMOVUPS_Z(m(dy, epC, disp), kmasks[i], v)
			return
		}
		VCMPPS(U8(0x1e), zero, v, v) // GT_OQ(v, 0): all ones where v > 0
		if masked {
			s.ld(true, m(dy, epC, disp), s.v(8))
			VANDPS(s.v(8), v, v)
		} else {
			VANDPS(m(dy, epC, disp), v, v)
		}
	}
	s.epColumns(epNV, "m", "done", func() {
		for i := 0; i < epNV; i++ {
			VMOVUPS(m(y, epC, i*vb), s.v(4+i))
		}
		for i := 0; i < epNV; i++ {
			maskV(false, i, i*vb)
		}
		for i := 0; i < epNV; i++ {
			VMOVUPS(s.v(4+i), m(dx, epC, i*vb))
		}
	}, func(masked bool) {
		s.ld(masked, m(y, epC, 0), s.v(4))
		maskV(masked, 0, 0)
		s.st(masked, s.v(4), m(dx, epC, 0))
	})
	done("done")
}
