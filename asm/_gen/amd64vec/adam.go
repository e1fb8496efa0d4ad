package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// adamStep: one Adam (or AdamW) update of n weights, element-wise in
// float32 with the scalars (b1, c1, b2, c2, wd, step, rbc2, eps) computed
// by the caller, of the gradient g or, when h is not empty, of the sum
// g + h (rounded once, as the trainer's replica reduction kernels.Axpy(1,
// h, g) would leave it in g, which is not written here), in the order and with the operands of the Go loop of
// kernels.adamStepRef on amd64, where Go does not fuse a multiply and an
// add (GOAMD64 < v3): every product is rounded before its sum, VSQRTPS is
// the correctly rounded sqrt (as float32(math.Sqrt(float64(x)))), VDIVPS a
// true division. So the result is the reference's bit for bit. Per lane:
//
//	g  = g + h   (when len(h) > 0)
//	L2 (decoupled = 0):          decoupled ≠ 0 (wd is 1 − lr·wd):
//	gi = g + wd·w                gi = g
//	m  = b1·m + c1·gi
//	v  = b2·v + (c2·gi)·gi
//	den = sqrt(v)·rbc2 + eps
//	w  = w − (step·m)/den        w = w·wd − (step·m)/den
//
// Blocks of adamNV(s) vectors (one after the other in the same four
// registers on AVX2, whose other registers hold the eight scalars and the
// tail mask; four register sets on AVX-512), single vectors, a masked
// tail; the decoupled flag and whether h is empty select one of four
// copies of the loops.
//
// Registers: v0..v7 the scalars b1, c1, b2, c2, wd, step, rbc2, eps in
// every lane; per vector four: W (w), G (g, then gi, then den), M (m, then
// the step), V (h, then a product, then v).
func adamStep(s isa) {
	s.text("adamStep", "one Adam or AdamW step, element-wise")
	n, w, g, h, pm, pv, dec, hn := epN, RDI, RSI, R8, R10, R11, R12, R14
	arg("n", n)
	arg("decoupled", dec)
	Load(Param("h").Len(), hn)
	base("w", w)
	base("g", g)
	base("h", h)
	base("m", pm)
	base("v", pv)
	TESTQ(n, n)
	JZ(LabelRef("done"))
	nv := adamNV(s)
	s.epLimits(nv)
	for i, name := range []string{"b1", "c1", "b2", "c2", "wd", "step", "rbc2", "eps"} {
		c, err := Param(name).Resolve()
		if err != nil {
			panic(err)
		}
		VBROADCASTSS(c.Addr, s.v(i))
	}
	b1, c1, b2, c2, wd, step, rbc2, eps := s.v(0), s.v(1), s.v(2), s.v(3), s.v(4), s.v(5), s.v(6), s.v(7)
	vb := s.vb()
	// one updates the vector at byte offset disp from element epC, with
	// register set r.
	one := func(masked, decoupled, sum bool, r, disp int) {
		W, G, M, V := s.v(8+4*r), s.v(9+4*r), s.v(10+4*r), s.v(11+4*r)
		s.ld(masked, m(w, epC, disp), W)
		s.ld(masked, m(g, epC, disp), G)
		if sum {
			s.ld(masked, m(h, epC, disp), V)
			VADDPS(V, G, G) // g + h
		}
		if !decoupled {
			VMULPS(W, wd, M) // wd·w
			VADDPS(M, G, G)  // gi = g + wd·w
		}
		s.ld(masked, m(pm, epC, disp), M)
		VMULPS(M, b1, M) // b1·m
		VMULPS(G, c1, V) // c1·gi
		VADDPS(V, M, M)  // m = b1·m + c1·gi
		s.st(masked, M, m(pm, epC, disp))
		VMULPS(G, c2, V)                  // c2·gi
		VMULPS(G, V, V)                   // (c2·gi)·gi
		s.ld(masked, m(pv, epC, disp), G) // G = v
		VMULPS(G, b2, G)                  // b2·v
		VADDPS(V, G, V)                   // v = b2·v + c2·gi²
		s.st(masked, V, m(pv, epC, disp))
		VSQRTPS(V, G)      // sqrt(v), correctly rounded
		VMULPS(rbc2, G, G) // sqrt(v)·rbc2
		VADDPS(eps, G, G)  // den = sqrt(v)·rbc2 + eps
		VMULPS(M, step, M) // step·m
		VDIVPS(G, M, M)    // (step·m)/den
		if decoupled {
			VMULPS(wd, W, W) // w·(1 − lr·wd)
		}
		VSUBPS(M, W, W) // w − (step·m)/den
		s.st(masked, W, m(w, epC, disp))
	}
	loops := func(p string, decoupled, sum bool) {
		s.epColumns(nv, p, "done", func() {
			for i := 0; i < nv; i++ {
				r := i
				if !s.zmm {
					r = 0
				}
				one(false, decoupled, sum, r, i*vb)
			}
		}, func(masked bool) {
			one(masked, decoupled, sum, 0, 0)
		})
	}
	TESTQ(hn, hn)
	JNZ(LabelRef("sum"))
	TESTQ(dec, dec)
	JNZ(LabelRef("dw"))
	loops("l2", false, false)
	JMP(LabelRef("done"))
	Label("dw")
	loops("dw", true, false)
	JMP(LabelRef("done"))
	Label("sum")
	TESTQ(dec, dec)
	JNZ(LabelRef("sdw"))
	loops("sl2", false, true)
	JMP(LabelRef("done"))
	Label("sdw")
	loops("sdw", true, true)
	done("done")
}

// adamNV is the number of vectors per block of adamStep: four register
// sets on AVX-512 (v8..v23), two vectors through one set on AVX2.
func adamNV(s isa) int {
	if s.zmm {
		return 4
	}
	return 2
}
