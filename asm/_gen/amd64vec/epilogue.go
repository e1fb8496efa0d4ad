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
	zero, abs, b := s.reluConsts()
	rowsLoop := func(p string, relu bool) {
		Label(p + "row")
		VBROADCASTSS(m(epB, nil, 0), b)
		s.biasActRow(p, relu, epY, epY, b, zero, abs)
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

// reluConsts sets v1 = +0 and v2 = 0x7fffffff in every lane (reluV's
// constants) and returns them with v0, the bias register.
func (s isa) reluConsts() (zero, abs, b VecPhysical) {
	zero, abs, b = s.v(1), s.v(2), s.v(0)
	VXORPS(zero, zero, zero)
	if s.zmm {
		VPTERNLOGD(U8(0xff), abs, abs, abs) // all ones
	} else {
		VPCMPEQD(abs, abs, abs)
	}
	VPSRLD(U8(1), abs, abs) // 0x7fffffff
	return zero, abs, b
}

// biasActRow emits one row of biasAct and compactAct: dst[c] = src[c] + b,
// then the ReLU when relu, for c < epN (blocks of epNV vectors, single
// vectors, the masked tail), ending at label p+"next"; v4..v7 hold the
// data, v8..v11 (AVX2) or K2..K5 (AVX-512) the compare masks.
func (s isa) biasActRow(p string, relu bool, src, dst Register, b, zero, abs VecPhysical) {
	vb := s.vb()
	vec := func(i int) {
		VADDPS(b, s.v(4+i), s.v(4+i)) // src + bias (src the first source, as Go's y += b)
		if relu {
			s.reluV(s.v(4+i), zero, abs, s.v(8+i), kmasks[i])
		}
	}
	s.epColumns(epNV, p, p+"next", func() {
		for i := 0; i < epNV; i++ {
			VMOVUPS(m(src, epC, i*vb), s.v(4+i))
		}
		for i := 0; i < epNV; i++ {
			vec(i)
		}
		for i := 0; i < epNV; i++ {
			VMOVUPS(s.v(4+i), m(dst, epC, i*vb))
		}
	}, func(masked bool) {
		s.ld(masked, m(src, epC, 0), s.v(4))
		vec(0)
		s.st(masked, s.v(4), m(dst, epC, 0))
	})
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

// compactAct: for every channel o < ch, row r < rows and column c < n,
// y[(o·rows + r)·n + c] = src[o·ldc + r·lds + c] + bias[o], then the ReLU
// when relu ≠ 0: biasAct fused with the copy of a direct convolution's
// wide grid (rows of lds values, the last lds − n thrown away) into the
// dense output rows. The bias is broadcast per channel; each row runs
// blocks of 4 vectors, single vectors and a masked tail (the tail mask is
// set once, from n); the relu flag selects one of two copies of the loops.
//
// Registers: R12 the channels left, R10 rows, R15 the rows left, R13 n,
// RDI y (dense: it steps by n values a row), R8 the channel's first source
// row, RBX the source row, R14 lds and AX ldc in bytes, RSI bias, R11
// relu; v0 the bias, v1 +0, v2 0x7fffffff, v4..v7 the data, v8..v11 the
// AVX2 compare masks, K2..K5 the AVX-512 ones.
func compactAct(s isa) {
	s.text("compactAct", "y[o,r,:] = src[o·ldc + r·lds:][:n] + bias[o], then the ReLU if relu ≠ 0")
	ch, rows, left, src, row, ldc := R12, R10, R15, R8, RBX, RAX
	arg("ch", ch)
	arg("rows", rows)
	arg("n", epN)
	base("y", epY)
	base("src", src)
	arg("lds", epLD)
	base("bias", epB)
	arg("relu", epRelu)
	TESTQ(ch, ch)
	JZ(LabelRef("done"))
	TESTQ(rows, rows)
	JZ(LabelRef("done"))
	TESTQ(epN, epN)
	JZ(LabelRef("done"))
	s.epLimits(epNV)   // clobbers AX, BX and CX
	arg("ldc", ldc)    // so ldc (AX) after it
	SHLQ(Imm(2), epLD) // strides in bytes
	SHLQ(Imm(2), ldc)
	zero, abs, b := s.reluConsts()
	chanLoop := func(p string, relu bool) {
		Label(p + "chan")
		VBROADCASTSS(m(epB, nil, 0), b)
		MOVQ(src, row)
		MOVQ(rows, left)
		Label(p + "row")
		s.biasActRow(p, relu, row, epY, b, zero, abs)
		Label(p + "next")
		ADDQ(epLD, row)
		LEAQ(Mem{Base: epY, Index: epN, Scale: 4}, epY)
		DECQ(left)
		JNZ(LabelRef(p + "row"))
		ADDQ(ldc, src)
		ADDQ(Imm(4), epB)
		DECQ(ch)
		JNZ(LabelRef(p + "chan"))
	}
	TESTQ(epRelu, epRelu)
	JZ(LabelRef("plainchan"))
	chanLoop("relu", true)
	JMP(LabelRef("done"))
	chanLoop("plain", false)
	done("done")
}

// deintIdx is the VPERMI2PS index table of deinterleaveRows: the even
// lanes 0, 2, …, 30 of a pair of vectors, then the odd ones 1, 3, …, 31.
var deintIdx Mem

// declareDeintIdx emits deintIdx.
func declareDeintIdx() {
	deintIdx = GLOBL("vecDeintIdx", RODATA|NOPTR)
	for i := 0; i < 32; i++ { // in address order, as the assembler wants
		DATA(4*i, U32(uint32(2*(i%16)+i/16)))
	}
}

// deinterleaveRows (AVX-512 only): for every row r < rows and j < ⌈n/2⌉,
// d0[r·ldd + j] = src[r·lds + 2j] and d1[r·ldd + j] = src[r·lds + 2j + 1],
// 0 where 2j + 1 = n: the column phases of a stride-2 convolution's input
// rows (splitPhases). Each chunk of 32 source values is two loads, two
// VPERMI2PS (the even and the odd lanes) and two stores of 16; the tail
// chunk of a row (n mod 32 values) loads under K1 and K2, zeroing the
// lanes past n, and stores ⌈(n mod 32)/2⌉ values under K3. The masks are
// set once, from n.
//
// Registers: R12 the rows left, R13 n, RSI the source row, R14 lds and
// R9 ldd in bytes, RDI and R8 the d0 and d1 rows, DX the full chunks of a
// row, R15 n mod 32, R10 the chunks left, R11, AX and BX the chunk
// pointers; Z0 and Z1 the even and odd indices, Z2 and Z3 the source
// values, Z4 and Z5 the results.
func deinterleaveRows(s isa) {
	s.text("deinterleaveRows", "d0[r,j] = src[r,2j], d1[r,j] = src[r,2j+1] or 0 past n")
	rows, n, src, lds, d0, d1, ldd := R12, R13, RSI, R14, RDI, R8, R9
	full, tail, left, sp, p0, p1 := RDX, R15, R10, R11, RAX, RBX
	arg("rows", rows)
	arg("n", n)
	base("src", src)
	arg("lds", lds)
	base("d0", d0)
	base("d1", d1)
	arg("ldd", ldd)
	TESTQ(rows, rows)
	JZ(LabelRef("done"))
	TESTQ(n, n)
	JZ(LabelRef("done"))
	SHLQ(Imm(2), lds) // strides in bytes
	SHLQ(Imm(2), ldd)
	// kmask sets k to the first CX lanes (0 ≤ CX ≤ 16).
	kmask := func(k OpmaskPhysical) {
		MOVL(U32(1), EBX)
		SHLL(CL, EBX)
		DECL(EBX)
		KMOVW(EBX, k)
	}
	MOVQ(n, tail)
	ANDQ(U32(31), tail)
	MOVQ(tail, RCX) // K1: min(t, 16) lanes
	CMPQ(RCX, U32(16))
	JLE(LabelRef("lo"))
	MOVQ(U32(16), RCX)
	Label("lo")
	kmask(K1)
	MOVQ(tail, RCX) // K2: max(t − 16, 0) lanes
	SUBQ(U32(16), RCX)
	JGE(LabelRef("hi"))
	XORQ(RCX, RCX)
	Label("hi")
	kmask(K2)
	LEAQ(Mem{Base: tail, Disp: 1}, RCX) // K3: ⌈t/2⌉ lanes
	SHRQ(U8(1), RCX)
	kmask(K3)
	MOVQ(n, full)
	SHRQ(U8(5), full)
	VMOVUPS(deintIdx, Z0)
	VMOVUPS(deintIdx.Offset(64), Z1)
	perm := func() {
		VMOVAPS(Z0, Z4)
		VPERMI2PS(Z3, Z2, Z4) // the even lanes of (Z2, Z3)
		VMOVAPS(Z1, Z5)
		VPERMI2PS(Z3, Z2, Z5) // the odd lanes
	}
	Label("row")
	MOVQ(src, sp)
	MOVQ(d0, p0)
	MOVQ(d1, p1)
	MOVQ(full, left)
	TESTQ(left, left)
	JZ(LabelRef("tail"))
	Label("full")
	VMOVUPS(Mem{Base: sp}, Z2)
	VMOVUPS(Mem{Base: sp, Disp: 64}, Z3)
	perm()
	VMOVUPS(Z4, Mem{Base: p0})
	VMOVUPS(Z5, Mem{Base: p1})
	ADDQ(U32(128), sp)
	ADDQ(U32(64), p0)
	ADDQ(U32(64), p1)
	DECQ(left)
	JNZ(LabelRef("full"))
	Label("tail")
	TESTQ(tail, tail)
	JZ(LabelRef("next"))
	VMOVUPS_Z(Mem{Base: sp}, K1, Z2)
	VMOVUPS_Z(Mem{Base: sp, Disp: 64}, K2, Z3)
	perm()
	VMOVUPS(Z4, K3, Mem{Base: p0})
	VMOVUPS(Z5, K3, Mem{Base: p1})
	Label("next")
	ADDQ(lds, src)
	ADDQ(ldd, d0)
	ADDQ(ldd, d1)
	DECQ(rows)
	JNZ(LabelRef("row"))
	done("done")
}

// transpose16 (AVX-512 only): for every row r < rows, channel j < 16 and
// position t < n, dst[r·drow + t·ldd + j] = src[j·lds + r·srow + t]: the
// transpose of 16 channels' rows of dY into the nr-channel panels of the
// direct filter gradient (transposePanels). Per chunk of 16 positions:
// 16 loads (one cache line of each channel, used whole, so that channels
// 4 KiB apart thrashing the same level-1 set cost nothing), the 16×16
// transpose in registers (VUNPCKLPS/HPS, VUNPCKLPD/HPD, two rounds of
// VSHUFF32X4: 64 shuffles) and 16 stores of one position's 16 channels.
// The last chunk of a row (n mod 16 positions) loads under K1, zeroing
// the other lanes, and stores only its positions.
//
// Registers: R12 the rows left, R13 n, RSI the source row, R14 lds, R15
// srow, R9 ldd, R10 drow (in bytes), RDI the destination row; R11 the
// chunk's source, AX its destination, DX the positions left, CX and BX
// scratch; Z0..Z15 the channels and then the positions, Z16..Z31 the
// intermediate stages.
func transpose16(s isa) {
	s.text("transpose16", "dst[r·drow + t·ldd + j] = src[j·lds + r·srow + t] for 16 channels j")
	rows, n, src, lds, srow, ldd, drow, dst := R12, R13, RSI, R14, R15, R9, R10, RDI
	sp, dp, left := R11, RAX, RDX
	arg("rows", rows)
	arg("n", n)
	base("src", src)
	arg("lds", lds)
	arg("srow", srow)
	base("dst", dst)
	arg("ldd", ldd)
	arg("drow", drow)
	TESTQ(rows, rows)
	JZ(LabelRef("done"))
	TESTQ(n, n)
	JZ(LabelRef("done"))
	SHLQ(Imm(2), lds) // strides in bytes
	SHLQ(Imm(2), srow)
	SHLQ(Imm(2), ldd)
	SHLQ(Imm(2), drow)
	// K1: the n mod 16 lanes of a row's last chunk (unused when 0).
	MOVQ(n, RCX)
	ANDQ(U32(15), RCX)
	MOVL(U32(1), EBX)
	SHLL(CL, EBX)
	DECL(EBX)
	KMOVW(EBX, K1)
	z := func(i int) VecPhysical { return zregs[i] }
	chunk := func(p string, masked bool) {
		MOVQ(sp, RCX)
		for j := 0; j < 16; j++ {
			if masked {
				VMOVUPS_Z(Mem{Base: RCX}, K1, z(j))
			} else {
				VMOVUPS(Mem{Base: RCX}, z(j))
			}
			if j < 15 {
				ADDQ(lds, RCX)
			}
		}
		for i := 0; i < 8; i++ { // B[2i], B[2i+1] = unpck{l,h}ps(A[2i], A[2i+1])
			VUNPCKLPS(z(2*i+1), z(2*i), z(16+2*i))
			VUNPCKHPS(z(2*i+1), z(2*i), z(16+2*i+1))
		}
		for i := 0; i < 4; i++ { // C[4i+m]: rows 4i..4i+3 of column 4L+m in lane L
			VUNPCKLPD(z(16+4*i+2), z(16+4*i), z(4*i))
			VUNPCKHPD(z(16+4*i+2), z(16+4*i), z(4*i+1))
			VUNPCKLPD(z(16+4*i+3), z(16+4*i+1), z(4*i+2))
			VUNPCKHPD(z(16+4*i+3), z(16+4*i+1), z(4*i+3))
		}
		for m := 0; m < 4; m++ { // D[m][q] in Z(16+4m+q)
			VSHUFF32X4(U8(0x44), z(4+m), z(m), z(16+4*m))
			VSHUFF32X4(U8(0xee), z(4+m), z(m), z(16+4*m+1))
			VSHUFF32X4(U8(0x44), z(12+m), z(8+m), z(16+4*m+2))
			VSHUFF32X4(U8(0xee), z(12+m), z(8+m), z(16+4*m+3))
		}
		for m := 0; m < 4; m++ { // O[4L+m]: column 4L+m, rows 0..15
			VSHUFF32X4(U8(0x88), z(16+4*m+2), z(16+4*m), z(m))
			VSHUFF32X4(U8(0xdd), z(16+4*m+2), z(16+4*m), z(4+m))
			VSHUFF32X4(U8(0x88), z(16+4*m+3), z(16+4*m+1), z(8+m))
			VSHUFF32X4(U8(0xdd), z(16+4*m+3), z(16+4*m+1), z(12+m))
		}
		MOVQ(dp, RCX)
		for t := 0; t < 16; t++ {
			if masked && t > 0 {
				CMPQ(left, U32(t))
				JLE(LabelRef(p + "end"))
			}
			VMOVUPS(z(t), Mem{Base: RCX})
			if t < 15 {
				ADDQ(ldd, RCX)
			}
		}
		if masked {
			Label(p + "end")
		}
	}
	Label("row")
	MOVQ(src, sp)
	MOVQ(dst, dp)
	MOVQ(n, left)
	Label("chunk")
	CMPQ(left, U32(16))
	JL(LabelRef("tail"))
	chunk("full", false)
	ADDQ(U32(64), sp)
	MOVQ(ldd, RCX)
	SHLQ(U8(4), RCX)
	ADDQ(RCX, dp)
	SUBQ(U32(16), left)
	JMP(LabelRef("chunk"))
	Label("tail")
	TESTQ(left, left)
	JZ(LabelRef("next"))
	chunk("tail", true)
	Label("next")
	ADDQ(srow, src)
	ADDQ(drow, dst)
	DECQ(rows)
	JNZ(LabelRef("row"))
	done("done")
}
