//go:build amd64 && !noasm

package asm

import (
	"testing"

	"github.com/klauspost/cpuid/v2"
)

// TestCheckedWrappers checks that every exported amd64 vector kernel goes
// through the bounds layer: a one-element-short operand panics with a
// BoundsError naming the kernel (before the assembly runs), and an empty
// shape with nil operands returns without touching memory.
func TestCheckedWrappers(t *testing.T) {
	type kern struct {
		name        string
		short, zero func()
	}
	mk := func(n int) []float32 { return make([]float32, n) }
	set := func(sfx string, gemvN, gemvT func(m, n int, a []float32, lda int, x, y []float32),
		ger func(m, n int, x, y, a []float32, lda int),
		mar func(k, n int, a []float32, lda int, x []float32, ldx int, y []float32),
		mb func(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int),
		sm func(rows, n int, l, c []float32), sg func(rows, n int, c, dc, dl []float32),
		sq func(kind, d, n int, s, v []float32), sqg func(kind, d, n int, s, dv, ds []float32),
		gg func(ng, d, n int, x []float32, xs, xk int, y []float32, ldy int, a []float32, lda int),
		g2 func(ng, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int),
		gtg func(ng, d, n int, a []float32, lda int, x []float32, xs, xk int, y []float32, ldy int),
		gng func(ng, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int),
		exp func(x, y []float32)) []kern {
		return []kern{
			{"GemvN" + sfx, func() { gemvN(3, 5, mk(15), 5, mk(5), mk(2)) }, func() { gemvN(0, 5, nil, 5, nil, nil) }},
			{"GemvT" + sfx, func() { gemvT(3, 5, mk(14), 5, mk(3), mk(5)) }, func() { gemvT(3, 0, nil, 5, nil, nil) }},
			{"Ger" + sfx, func() { ger(3, 5, mk(3), mk(4), mk(15), 5) }, func() { ger(0, 0, nil, nil, nil, 5) }},
			{"MulAddRows" + sfx, func() { mar(2, 9, mk(18), 9, mk(17), 9, mk(9)) }, func() { mar(0, 9, nil, 9, nil, 9, nil) }},
			{"MulAddRowsBatch" + sfx, func() { mb(2, 3, 9, mk(27), 9, mk(54), 9, 27, mk(17), 9) }, func() { mb(0, 3, 9, nil, 9, nil, 9, 27, nil, 9) }},
			{"SoftmaxCols" + sfx, func() { sm(3, 9, mk(27), mk(26)) }, func() { sm(3, 0, nil, nil) }},
			{"SoftmaxColsGrad" + sfx, func() { sg(3, 9, mk(27), mk(26), mk(27)) }, func() { sg(0, 9, nil, nil, nil) }},
			{"Squash" + sfx, func() { sq(0, 3, 9, mk(26), mk(27)) }, func() { sq(1, 0, 9, nil, nil) }},
			{"SquashGrad" + sfx, func() { sqg(1, 3, 9, mk(27), mk(27), mk(26)) }, func() { sqg(0, 3, 0, nil, nil, nil) }},
			{"GerGroups" + sfx, func() { gg(2, 3, 9, mk(6), 3, 1, mk(18), 9, mk(53), 9) }, func() { gg(0, 3, 9, nil, 3, 1, nil, 9, nil, 9) }},
			{"Ger2Groups" + sfx, func() { g2(2, 3, 9, mk(6), mk(5), 3, 1, mk(18), mk(18), 9, mk(54), 9) }, func() { g2(2, 0, 9, nil, nil, 3, 1, nil, nil, 9, nil, 9) }},
			{"GemvTGroups" + sfx, func() { gtg(2, 3, 9, mk(54), 9, mk(6), 3, 1, mk(17), 9) }, func() { gtg(2, 3, 0, nil, 9, nil, 3, 1, nil, 9) }},
			{"GemvNGroups" + sfx, func() { gng(2, 3, 9, mk(54), 9, mk(17), 9, mk(6), 3, 1) }, func() { gng(0, 3, 9, nil, 9, nil, 9, nil, 3, 1) }},
			{"Exp" + sfx, func() { exp(mk(9), mk(8)) }, func() { exp(nil, nil) }},
		}
	}
	var ks []kern
	if cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2, cpuid.FMA3) {
		ks = append(ks, set("AVX2", GemvNAVX2, GemvTAVX2, GerAVX2, MulAddRowsAVX2, MulAddRowsBatchAVX2,
			SoftmaxColsAVX2, SoftmaxColsGradAVX2, SquashAVX2, SquashGradAVX2, GerGroupsAVX2, Ger2GroupsAVX2,
			GemvTGroupsAVX2, GemvNGroupsAVX2, ExpAVX2)...)
		ks = append(ks, kern{"MulAddRowsBatchSetAVX2", func() { MulAddRowsBatchSetAVX2(2, 3, 9, mk(26), 9, mk(54), 9, 27, mk(18), 9) }, func() {}},
			kern{"Ger2GroupsSetAVX2", func() { Ger2GroupsSetAVX2(2, 3, 9, mk(6), mk(6), 3, 1, mk(18), mk(17), 9, mk(54), 9) }, func() {}},
			kern{"SoftmaxRowsAVX2", func() { SoftmaxRowsAVX2(3, 9, mk(27), mk(26)) }, func() { SoftmaxRowsAVX2(3, 0, nil, nil) }},
			kern{"SoftmaxRowsGradAVX2", func() { SoftmaxRowsGradAVX2(3, 9, mk(27), mk(26), mk(27)) }, func() { SoftmaxRowsGradAVX2(0, 9, nil, nil, nil) }},
			kern{"Ger2GemvGroupsAVX2", func() { Ger2GemvGroupsAVX2(2, 3, 9, 1, mk(53), 9, mk(6), mk(6), 3, 1, mk(18), mk(18), 9, mk(54)) }, func() { Ger2GemvGroupsAVX2(2, 0, 9, 1, nil, 9, nil, nil, 3, 1, nil, nil, 9, nil) }},
			kern{"GemvNTGroupsAVX2", func() { GemvNTGroupsAVX2(2, 3, 9, mk(54), 9, mk(18), 9, mk(6), 3, 1, mk(17), 9) }, func() { GemvNTGroupsAVX2(2, 3, 0, nil, 9, nil, 9, nil, 3, 1, nil, 9) }})
	}
	if cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512DQ, cpuid.AVX512BW, cpuid.AVX512VL) {
		ks = append(ks, set("AVX512", GemvNAVX512, GemvTAVX512, GerAVX512, MulAddRowsAVX512, MulAddRowsBatchAVX512,
			SoftmaxColsAVX512, SoftmaxColsGradAVX512, SquashAVX512, SquashGradAVX512, GerGroupsAVX512, Ger2GroupsAVX512,
			GemvTGroupsAVX512, GemvNGroupsAVX512, ExpAVX512)...)
		ks = append(ks, kern{"MulAddRowsBatchSetAVX512", func() { MulAddRowsBatchSetAVX512(2, 3, 9, mk(27), 9, mk(53), 9, 27, mk(18), 9) }, func() {}},
			kern{"Ger2GroupsSetAVX512", func() { Ger2GroupsSetAVX512(2, 3, 9, mk(6), mk(6), 3, 1, mk(18), mk(18), 9, mk(53), 9) }, func() {}},
			kern{"SoftmaxRowsAVX512", func() { SoftmaxRowsAVX512(3, 9, mk(27), mk(26)) }, func() { SoftmaxRowsAVX512(3, 0, nil, nil) }},
			kern{"SoftmaxRowsGradAVX512", func() { SoftmaxRowsGradAVX512(3, 9, mk(27), mk(26), mk(27)) }, func() { SoftmaxRowsGradAVX512(0, 9, nil, nil, nil) }},
			kern{"Ger2GemvGroupsAVX512", func() { Ger2GemvGroupsAVX512(2, 3, 9, 1, mk(53), 9, mk(6), mk(6), 3, 1, mk(18), mk(18), 9, mk(54)) }, func() { Ger2GemvGroupsAVX512(2, 0, 9, 1, nil, 9, nil, nil, 3, 1, nil, nil, 9, nil) }},
			kern{"GemvNTGroupsAVX512", func() { GemvNTGroupsAVX512(2, 3, 9, mk(54), 9, mk(18), 9, mk(6), 3, 1, mk(17), 9) }, func() { GemvNTGroupsAVX512(2, 3, 0, nil, 9, nil, 9, nil, 3, 1, nil, 9) }})
	}
	if len(ks) == 0 {
		t.Skip("no AVX2 on this CPU")
	}
	for _, k := range ks {
		mustPanic(t, k.name, k.name, k.short)
		k.zero()
	}
}

// TestFMAPeakAMD64 checks the FMA throughput loops: a short out or in, or
// a negative iters, panics with a BoundsError naming it; iters = 0 writes
// zeros; and with x = in[l] = l+1, y = in[w+l] = w−l (small integers, so
// every sum is exact) every lane is exactly A·iters·x·y, which fails if an
// accumulator is dropped or added twice, a lane is lost or the operands are
// misplaced. Nothing past out[w] is written.
func TestFMAPeakAMD64(t *testing.T) {
	type loop struct {
		name string
		w, a int
		f    func(out, in []float32, iters int)
	}
	var ls []loop
	if cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2, cpuid.FMA3) {
		ls = append(ls, loop{"FMAPeakAVX2", 8, FMAPeakAccAVX2, FMAPeakAVX2})
	}
	if cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512DQ) {
		ls = append(ls, loop{"FMAPeakAVX512", 16, FMAPeakAccAVX512, FMAPeakAVX512})
	}
	if len(ls) == 0 {
		t.Skip("no AVX2 on this CPU")
	}
	for _, l := range ls {
		mustPanic(t, l.name, "out", func() { l.f(mk(l.w-1), mk(2*l.w), 1) })
		mustPanic(t, l.name, "in", func() { l.f(mk(l.w), mk(2*l.w-1), 1) })
		mustPanic(t, l.name, "dimension", func() { l.f(mk(l.w), mk(2*l.w), -1) })
		in := mk(2 * l.w)
		for i := range l.w {
			in[i], in[l.w+i] = float32(i+1), float32(l.w-i)
		}
		for _, iters := range []int{0, 1, 7, 1000} {
			out := mk(l.w + 1)
			for i := range out {
				out[i] = -1
			}
			l.f(out, in, iters)
			for i := range l.w {
				if want := float32(l.a * iters * (i + 1) * (l.w - i)); out[i] != want {
					t.Errorf("%s iters=%d: out[%d] = %g, want %g", l.name, iters, i, out[i], want)
				}
			}
			if out[l.w] != -1 {
				t.Errorf("%s iters=%d: out[%d] written", l.name, iters, l.w)
			}
		}
	}
}

// epilogueWrappers lists the BiasAct and ReluMask kernels of this CPU
// (epilogue_checked_test.go).
func epilogueWrappers() []epilogueKernels {
	var ks []epilogueKernels
	if cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2, cpuid.FMA3) {
		ks = append(ks, epilogueKernels{"AVX2", BiasActAVX2, ReluMaskAVX2})
	}
	if cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512DQ, cpuid.AVX512BW, cpuid.AVX512VL) {
		ks = append(ks, epilogueKernels{"AVX512", BiasActAVX512, ReluMaskAVX512})
	}
	return ks
}

// adamWrappers lists the AdamStep kernels of this CPU
// (adam_checked_test.go).
func adamWrappers() []adamKernel {
	var ks []adamKernel
	if cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2, cpuid.FMA3) {
		ks = append(ks, adamKernel{"AVX2", AdamStepAVX2})
	}
	if cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512DQ, cpuid.AVX512BW, cpuid.AVX512VL) {
		ks = append(ks, adamKernel{"AVX512", AdamStepAVX512})
	}
	return ks
}
