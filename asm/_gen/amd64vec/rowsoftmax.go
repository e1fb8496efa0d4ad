package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// Row-wise softmax kernels on rows×n matrices with row stride n (the
// softmax over the inputs of self-attention routing, one row per output
// capsule): every row is walked in full vectors, then once masked over the
// tail, and its max, sum or dot product folded across the lanes. SI, R9
// point at the current row of the inputs, DI at the output's; CX is the
// column (AX scratch).
var rwRows, rwN, rwLD, rwC = R12, R13, R14, RCX

// rowChunks runs chunk over the full vectors of the current row (column
// index in CX, scaled by 4 in the memory operands), then masked over the
// tail; lbl prefixes its local labels. The full-vector loop is tested at
// its bottom (AX is scratch), so that a row of one vector takes one taken
// branch.
func (s isa) rowChunks(lbl string, chunk func(masked bool)) {
	XORQ(rwC, rwC)
	CMPQ(rwN, Imm(uint64(s.w)))
	JLT(LabelRef(lbl + "t"))
	Label(lbl + "f")
	chunk(false)
	ADDQ(Imm(uint64(s.w)), rwC)
	LEAQ(Mem{Base: rwC, Disp: s.w}, RAX)
	CMPQ(RAX, rwN)
	JLE(LabelRef(lbl + "f"))
	Label(lbl + "t")
	CMPQ(rwC, rwN)
	JGE(LabelRef(lbl + "e"))
	chunk(true)
	Label(lbl + "e")
}

// hfold folds the lanes of v(i) with op (VMAXPS or VADDPS) and broadcasts
// the result to all of v(i)'s lanes; v(t) is scratch. The fold is a tree:
// halves, then quarters, … (the AVX-512 one starts at 16 lanes).
func (s isa) hfold(op func(...Op), i, t int) {
	s.hreduce(op, i, t)
	VBROADCASTSS(xregs[i], s.v(i))
}

// hreduce is hfold leaving the result in lane 0 of v(i) only.
func (s isa) hreduce(op func(...Op), i, t int) {
	if s.zmm {
		VEXTRACTF64X4(Imm(1), zregs[i], yregs[t])
		op(yregs[t], yregs[i], yregs[i])
	}
	VEXTRACTF128(Imm(1), yregs[i], xregs[t])
	op(xregs[t], xregs[i], xregs[i])
	VPERMILPS(Imm(0x4e), xregs[i], xregs[t]) // swap the 64-bit halves
	op(xregs[t], xregs[i], xregs[i])
	VPERMILPS(Imm(0xb1), xregs[i], xregs[t]) // swap neighbouring lanes
	op(xregs[t], xregs[i], xregs[i])
}

// rowPrologue loads rows and n, returns early if either is 0, sets the
// row stride (bytes) and the tail mask.
func (s isa) rowPrologue() {
	arg("rows", rwRows)
	arg("n", rwN)
	TESTQ(rwRows, rwRows)
	JZ(LabelRef("done"))
	TESTQ(rwN, rwN)
	JZ(LabelRef("done"))
	MOVQ(rwN, rwLD)
	SHLQ(Imm(2), rwLD)
	s.maskFor(rwN, "nomask")
}

// smRow is one row slot of softmaxRows: its pointers into l and c, and its
// registers (max, sum, the value being exponentiated, 1/sum).
type smRow struct {
	l, c                GPPhysical
	mx, sum, x, inv, ld int
}

// softmaxRows: for every row r, c[r,:] = softmax of l[r,:]. Per row: the
// max (started at l[r,0]; tail lanes outside the row keep it), then
// e = exp(l − max) stored in c and summed (tail lanes outside the row
// zeroed before the sum), then c *= 1/sum. Rows go in pairs, the two rows'
// steps interleaved (two independent chains of folds and exps; the exp
// temporaries v4–v6 and the fold scratch v11 are shared, renamed by the
// CPU), then the last row alone when rows is odd.
func softmaxRows(s isa) {
	s.text("softmaxRows", "row softmax")
	s.rowPrologue()
	base("l", RSI)
	base("c", RDI)
	s.expSetup()
	a := smRow{l: RSI, c: RDI, mx: 0, sum: 2, x: 3, inv: 1, ld: 1}
	b := smRow{l: R9, c: R10, mx: 7, sum: 9, x: 10, inv: 8, ld: 8}
	MOVQ(rwRows, R8)
	SHRQ(Imm(1), R8)
	JZ(LabelRef("single"))
	LEAQ(Mem{Base: RSI, Index: rwLD, Scale: 1}, R9)
	LEAQ(Mem{Base: RDI, Index: rwLD, Scale: 1}, R10)
	loop("pair")
	s.softmaxRowsBody("2", a, b)
	for _, r := range []GPPhysical{RSI, RDI, R9, R10} {
		LEAQ(Mem{Base: r, Index: rwLD, Scale: 2}, r)
	}
	DECQ(R8)
	JNZ(LabelRef("pair"))
	Label("single")
	TESTQ(U32(1), rwRows)
	JZ(LabelRef("done"))
	s.softmaxRowsBody("1", a)
	done("done")
}

// softmaxRowsBody emits the softmax of the rows of rs (one or two), their
// passes interleaved; p suffixes the labels.
func (s isa) softmaxRowsBody(p string, rs ...smRow) {
	for _, r := range rs {
		VBROADCASTSS(m(r.l, nil, 0), s.v(r.mx))
	}
	s.rowChunks("max"+p, func(mk bool) {
		for _, r := range rs {
			s.ld(mk, m(r.l, rwC, 0), s.v(r.ld))
			if mk && !s.zmm {
				VBLENDVPS(mask, s.v(r.ld), s.v(r.mx), s.v(r.ld)) // lanes past the row: the max so far
			}
			if mk && s.zmm {
				VMAXPS(s.v(r.ld), s.v(r.mx), K1, s.v(r.mx))
			} else {
				VMAXPS(s.v(r.ld), s.v(r.mx), s.v(r.mx))
			}
		}
	})
	for _, r := range rs {
		s.hfold(VMAXPS, r.mx, 11)
		VXORPS(s.v(r.sum), s.v(r.sum), s.v(r.sum)) // sum = 0
	}
	s.rowChunks("exp"+p, func(mk bool) {
		for _, r := range rs {
			s.ld(mk, m(r.l, rwC, 0), s.v(r.x))
			VSUBPS(s.v(r.mx), s.v(r.x), s.v(r.x)) // l − mx
			s.exp(s.v(r.x), s.v(4), s.v(5), s.v(6))
			s.st(mk, s.v(r.x), m(r.c, rwC, 0))
			switch {
			case mk && s.zmm:
				VADDPS(s.v(r.x), s.v(r.sum), K1, s.v(r.sum))
			case mk:
				VANDPS(mask, s.v(r.x), s.v(r.x))
				VADDPS(s.v(r.x), s.v(r.sum), s.v(r.sum))
			default:
				VADDPS(s.v(r.x), s.v(r.sum), s.v(r.sum))
			}
		}
	})
	for _, r := range rs {
		s.hfold(VADDPS, r.sum, 11)
		s.loadC(cOne, s.v(r.inv))
		VDIVPS(s.v(r.sum), s.v(r.inv), s.v(r.inv)) // 1/sum
	}
	s.rowChunks("scale"+p, func(mk bool) {
		for _, r := range rs {
			s.ld(mk, m(r.c, rwC, 0), s.v(r.x))
			VMULPS(s.v(r.x), s.v(r.inv), s.v(r.x))
			s.st(mk, s.v(r.x), m(r.c, rwC, 0))
		}
	})
}

// softmaxRowsGrad: for every row r, dot = Σ_i c[r,i]·dc[r,i] (v0; the
// masked tail loads zeros) and dl[r,:] = c[r,:]·(dc[r,:] − dot).
func softmaxRowsGrad(s isa) {
	s.text("softmaxRowsGrad", "row softmax gradient")
	s.rowPrologue()
	base("c", RSI)
	base("dc", R9)
	base("dl", RDI)
	MOVQ(rwRows, R8)
	loop("row")
	VXORPS(s.v(0), s.v(0), s.v(0)) // dot = 0
	s.rowChunks("dot", func(mk bool) {
		s.ld(mk, m(RSI, rwC, 0), s.v(1))
		s.ld(mk, m(R9, rwC, 0), s.v(2))
		VFMADD231PS(s.v(2), s.v(1), s.v(0))
	})
	s.hfold(VADDPS, 0, 1)
	s.rowChunks("out", func(mk bool) {
		s.ld(mk, m(RSI, rwC, 0), s.v(1))
		s.ld(mk, m(R9, rwC, 0), s.v(2))
		VSUBPS(s.v(0), s.v(2), s.v(2)) // dc − dot
		VMULPS(s.v(2), s.v(1), s.v(1))
		s.st(mk, s.v(1), m(RDI, rwC, 0))
	})
	ADDQ(rwLD, RSI)
	ADDQ(rwLD, R9)
	ADDQ(rwLD, RDI)
	DECQ(R8)
	JNZ(LabelRef("row"))
	done("done")
}

// ger2GemvGroups: for every group j and row k (r = j·d+k) of the stacked
// a, out[r,:] = α·<a[r,:], y2[j,:]> + x[j,k]·y[j,:] + x2[j,k]·y2[j,:]
// (x[j,k] = x[j·xs+k·xk], x2 with the same strides, out with a's row stride
// lda): gemvNGroups of a against y2, scaled and broadcast along the row,
// fused with ger2GroupsSet starting from that row bias instead of zero,
// so that a row of a is read and a row of out written in one pass (the gradient of self-attention
// routing's votes). Two passes per group: first, per row, the dot product
// in v0 (full vectors, then the masked tail, which loads zeros), folded
// across the lanes, scaled by α (v7) and kept in out[r,0]; then, per row,
// the row of out from it and the broadcasts of x (v8) and x2 (v9), each
// row's stores no longer waiting for its fold. SI walks a's rows, DI out's, R9 x (BX = x2 − x), R10 and R11 are
// &y[j,0] and &y2[j,0]; DX steps R9 from a group's end to the next group's
// start; the groups are counted down in the ng argument.
func ger2GemvGroups(s isa) {
	s.text("ger2GemvGroups", "grouped rank-2 updates of a row bias α·a·y2")
	pa, po, col, n, px, dx2, y, y2, lda, xk, rows, step := RSI, RDI, rwC, rwN, R9, RBX, R10, R11, R14, R12, R8, RDX
	arg("ng", RAX)
	arg("n", n)
	arg("d", rows)
	TESTQ(RAX, RAX)
	JZ(LabelRef("done"))
	TESTQ(n, n)
	JZ(LabelRef("done"))
	TESTQ(rows, rows)
	JZ(LabelRef("done"))
	s.maskFor(n, "nomask")
	alpha, err := Param("alpha").Resolve()
	if err != nil {
		panic(err)
	}
	VBROADCASTSS(alpha.Addr, s.v(7))
	base("a", pa)
	base("out", po)
	arg("lda", lda)
	SHLQ(Imm(2), lda)
	base("x", px)
	base("x2", dx2)
	SUBQ(px, dx2)
	arg("xk", xk)
	SHLQ(Imm(2), xk)
	base("y", y)
	base("y2", y2)
	// step = (xs − d·xk)·4: from x[j,d] (where the row walk ends) to x[j+1,0].
	arg("xs", step)
	IMULQ(xk, rows) // d·xk·4
	SHLQ(Imm(2), step)
	SUBQ(rows, step)
	Label("group")
	// First pass: t = α·<a[r,:], y2[j,:]> of every row of the group, kept
	// in out[r,0] (the row is written in the second pass, after t is read).
	arg("d", rows)
	loop("row")
	VXORPS(s.v(0), s.v(0), s.v(0))
	s.rowChunks("dot", func(mk bool) {
		if mk {
			s.ld(true, m(pa, col, 0), s.v(1))
			s.ld(true, m(y2, col, 0), s.v(2))
			VFMADD231PS(s.v(2), s.v(1), s.v(0))
			return
		}
		VMOVUPS(m(pa, col, 0), s.v(1))
		VFMADD231PS(m(y2, col, 0), s.v(1), s.v(0))
	})
	s.hreduce(VADDPS, 0, 1)
	VMULSS(X7, X0, X0) // α·dot
	VMOVSS(X0, m(po, nil, 0))
	ADDQ(lda, pa)
	ADDQ(lda, po)
	DECQ(rows)
	JNZ(LabelRef("row"))
	// Second pass: out[r,:] = t + x[j,k]·y[j,:] + x2[j,k]·y2[j,:].
	arg("d", rows)
	MOVQ(rows, RAX)
	IMULQ(lda, RAX)
	SUBQ(RAX, po) // &out[j·d, 0]
	loop("orow")
	VBROADCASTSS(m(po, nil, 0), s.v(0)) // t, before the row is written
	VBROADCASTSS(m(px, nil, 0), s.v(8))
	VBROADCASTSS(Mem{Base: px, Index: dx2, Scale: 1}, s.v(9))
	s.rowChunks("out", func(mk bool) {
		s.ld(mk, m(y, col, 0), s.v(1))
		s.ld(mk, m(y2, col, 0), s.v(2))
		VMOVAPS(s.v(0), s.v(4))
		VFMADD231PS(s.v(1), s.v(8), s.v(4))
		VFMADD231PS(s.v(2), s.v(9), s.v(4))
		s.st(mk, s.v(4), m(po, col, 0))
	})
	ADDQ(lda, po)
	ADDQ(xk, px)
	DECQ(rows)
	JNZ(LabelRef("orow"))
	ADDQ(step, px)
	arg("ldy", RAX)
	SHLQ(Imm(2), RAX)
	ADDQ(RAX, y)
	ADDQ(RAX, y2)
	DECQ(NewParamAddr("ng", 0))
	JNZ(LabelRef("group"))
	done("done")
}

// gemvNTGroups: for every group j, y[j·ys+k·yk] = Σ_c a[r,c]·x[j·ldx+c]
// (r = j·d+k), then z[j·ldz+c] = Σ_k y[j·ys+k·yk]·a[r,c]: gemvNGroups and
// then gemvTGroups of its result, both overwriting their output, in one
// call that reads the group's rows of a twice from L1 (self-attention's
// scaled vote sums and logits). First pass, per row: the dot product in v0
// (full vectors, masked tail), folded across the lanes and stored. Second
// pass, per column vector: Σ_k y[j,k]·a[r,:] in v0 and v2 (even and odd
// rows), stored. R8 is &a[j·d,0], SI walks the rows, R9 is &x[j·ldx],
// DX &y[j·ys], R10 walks y, DI is &z[j·ldz].
func gemvNTGroups(s isa) {
	s.text("gemvNTGroups", "grouped y = A·x, then z = Aᵀ·y")
	g, n, lda, a, pa, x, py, yk, rows, z, y := R12, rwN, R14, R8, RSI, R9, R10, R11, RBX, RDI, RDX
	arg("ng", g)
	arg("n", n)
	arg("d", rows)
	TESTQ(g, g)
	JZ(LabelRef("done"))
	TESTQ(n, n)
	JZ(LabelRef("done"))
	TESTQ(rows, rows)
	JZ(LabelRef("done"))
	s.maskFor(n, "nomask")
	base("a", a)
	arg("lda", lda)
	SHLQ(Imm(2), lda)
	base("x", x)
	base("y", y)
	arg("yk", yk)
	SHLQ(Imm(2), yk)
	base("z", z)
	Label("group")
	MOVQ(a, pa)
	MOVQ(y, py)
	arg("d", rows)
	loop("row")
	VXORPS(s.v(0), s.v(0), s.v(0))
	s.rowChunks("dot", func(mk bool) {
		if mk {
			s.ld(true, m(pa, rwC, 0), s.v(1))
			s.ld(true, m(x, rwC, 0), s.v(2))
			VFMADD231PS(s.v(2), s.v(1), s.v(0))
			return
		}
		VMOVUPS(m(pa, rwC, 0), s.v(1))
		VFMADD231PS(m(x, rwC, 0), s.v(1), s.v(0))
	})
	s.hreduce(VADDPS, 0, 1)
	VMOVSS(X0, m(py, nil, 0))
	ADDQ(lda, pa)
	ADDQ(yk, py)
	DECQ(rows)
	JNZ(LabelRef("row"))
	// Second pass: z[j,:] = Σ_k y[j,k]·a[j·d+k,:], column vector by vector.
	s.rowChunks("t", func(mk bool) {
		p := "u"
		if mk {
			p = "m"
		}
		VXORPS(s.v(0), s.v(0), s.v(0))
		VXORPS(s.v(2), s.v(2), s.v(2))
		MOVQ(a, pa)
		MOVQ(y, py)
		arg("d", rows)
		loop("t" + p)
		for k := 0; k < 2; k++ {
			VBROADCASTSS(m(py, nil, 0), s.v(8))
			if mk {
				s.ld(true, m(pa, rwC, 0), s.v(1))
				VFMADD231PS(s.v(1), s.v(8), s.v(2*k))
			} else {
				VFMADD231PS(m(pa, rwC, 0), s.v(8), s.v(2*k))
			}
			ADDQ(lda, pa)
			ADDQ(yk, py)
			DECQ(rows)
			if k == 0 {
				JZ(LabelRef("tsum" + p))
			} else {
				JNZ(LabelRef("t" + p))
			}
		}
		Label("tsum" + p)
		VADDPS(s.v(2), s.v(0), s.v(0))
		s.st(mk, s.v(0), m(z, rwC, 0))
	})
	MOVQ(pa, a) // &a[(j+1)·d, 0]
	arg("ldx", RAX)
	LEAQ(m(x, RAX, 0), x)
	arg("ys", RAX)
	LEAQ(m(y, RAX, 0), y)
	arg("ldz", RAX)
	LEAQ(m(z, RAX, 0), z)
	DECQ(g)
	JNZ(LabelRef("group"))
	done("done")
}
