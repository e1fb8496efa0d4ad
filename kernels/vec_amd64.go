//go:build amd64 && !noasm

package kernels

import "github.com/capstan-ml/capstan/asm"

// The vector primitives of the avx2 implementation (avx512 inherits them
// where it has no faster kernel of its own). The asm kernels handle every
// shape, tails included, so the glue only converts the squash kind.
var _ = register("avx2", func(o *ops) {
	o.gemvN = asm.GemvNAVX2
	o.gemvT = asm.GemvTAVX2
	o.ger = asm.GerAVX2
	o.axpy = func(alpha float32, x, y []float32) {
		a := [1]float32{alpha}
		asm.GerAVX2(1, len(x), a[:], x, y, len(x))
	}
	o.mulAddRows = asm.MulAddRowsAVX2
	o.mulAddRowsBatch = func(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int) {
		mulAddRowsBatchBy8(asm.MulAddRowsBatchAVX2, nb, k, n, a, lda, x, ldx, xstride, y, ystride)
	}
	o.mulAddRowsBatchSet = func(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int) {
		mulAddRowsBatchSetBy8(asm.MulAddRowsBatchSetAVX2, asm.MulAddRowsBatchAVX2, nb, k, n, a, lda, x, ldx, xstride, y, ystride)
	}
	o.softmaxCols = asm.SoftmaxColsAVX2
	o.softmaxColsGrad = asm.SoftmaxColsGradAVX2
	o.softmaxRows = asm.SoftmaxRowsAVX2
	o.softmaxRowsGrad = asm.SoftmaxRowsGradAVX2
	o.squash = func(kind Squash, d, n int, s, v []float32) { asm.SquashAVX2(int(kind), d, n, s, v) }
	o.squashGrad = func(kind Squash, d, n int, s, dv, ds []float32) { asm.SquashGradAVX2(int(kind), d, n, s, dv, ds) }
	o.gerGroups = asm.GerGroupsAVX2
	o.ger2Groups = asm.Ger2GroupsAVX2
	o.ger2GroupsSet = asm.Ger2GroupsSetAVX2
	o.ger2GemvGroups = asm.Ger2GemvGroupsAVX2
	o.gemvNTGroups = asm.GemvNTGroupsAVX2
	o.gemvTGroups = asm.GemvTGroupsAVX2
	o.gemvNGroups = asm.GemvNGroupsAVX2
	o.exp = asm.ExpAVX2
	o.fmaPeak = fmaLoop{fn: asm.FMAPeakAVX2, w: 8, a: asm.FMAPeakAccAVX2}
	o.biasAct = asm.BiasActAVX2
	o.reluMask = asm.ReluMaskAVX2
	o.compactAct = asm.CompactActAVX2
	o.adamStep = func(k adamConsts, w, g, h, m, v []float32) {
		asm.AdamStepAVX2(len(w), k.decoupledFlag(), w, g, h, m, v, k.b1, k.c1, k.b2, k.c2, k.wd, k.step, k.invSqrtBC2, k.eps)
	}
})

// AVX-512 kernels.
var _ = register("avx512", func(o *ops) {
	o.gemvN = asm.GemvNAVX512
	o.gemvT = asm.GemvTAVX512
	o.ger = asm.GerAVX512
	o.axpy = func(alpha float32, x, y []float32) {
		a := [1]float32{alpha}
		asm.GerAVX512(1, len(x), a[:], x, y, len(x))
	}
	o.mulAddRows = asm.MulAddRowsAVX512
	o.mulAddRowsBatch = func(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int) {
		mulAddRowsBatchBy8(asm.MulAddRowsBatchAVX512, nb, k, n, a, lda, x, ldx, xstride, y, ystride)
	}
	o.mulAddRowsBatchSet = func(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int) {
		mulAddRowsBatchSetBy8(asm.MulAddRowsBatchSetAVX512, asm.MulAddRowsBatchAVX512, nb, k, n, a, lda, x, ldx, xstride, y, ystride)
	}
	o.softmaxCols = asm.SoftmaxColsAVX512
	o.softmaxColsGrad = asm.SoftmaxColsGradAVX512
	o.softmaxRows = asm.SoftmaxRowsAVX512
	o.softmaxRowsGrad = asm.SoftmaxRowsGradAVX512
	o.squash = func(kind Squash, d, n int, s, v []float32) { asm.SquashAVX512(int(kind), d, n, s, v) }
	o.squashGrad = func(kind Squash, d, n int, s, dv, ds []float32) { asm.SquashGradAVX512(int(kind), d, n, s, dv, ds) }
	o.gerGroups = asm.GerGroupsAVX512
	o.ger2Groups = asm.Ger2GroupsAVX512
	o.ger2GroupsSet = asm.Ger2GroupsSetAVX512
	o.ger2GemvGroups = asm.Ger2GemvGroupsAVX512
	o.gemvNTGroups = asm.GemvNTGroupsAVX512
	o.gemvTGroups = asm.GemvTGroupsAVX512
	o.gemvNGroups = asm.GemvNGroupsAVX512
	o.exp = asm.ExpAVX512
	o.fmaPeak = fmaLoop{fn: asm.FMAPeakAVX512, w: 16, a: asm.FMAPeakAccAVX512}
	o.biasAct = asm.BiasActAVX512
	o.reluMask = asm.ReluMaskAVX512
	o.compactAct = asm.CompactActAVX512
	o.deinterleaveRows = asm.DeinterleaveRowsAVX512
	o.transpose16 = asm.Transpose16AVX512
	o.adamStep = func(k adamConsts, w, g, h, m, v []float32) {
		asm.AdamStepAVX512(len(w), k.decoupledFlag(), w, g, h, m, v, k.b1, k.c1, k.b2, k.c2, k.wd, k.step, k.invSqrtBC2, k.eps)
	}
})

// mulAddRowsBatchBy8 runs the MulAddRowsBatch kernel f, which takes at
// most 8 rows, over the k rows in groups of 8 (y is re-read per group).
func mulAddRowsBatchBy8(f func(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int),
	nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int) {
	if nb == 0 || n == 0 {
		return
	}
	for l0 := 0; l0 < k; l0 += 8 {
		f(nb, min(8, k-l0), n, a[l0*lda:], lda, x[l0*ldx:], ldx, xstride, y, ystride)
	}
}

// mulAddRowsBatchSetBy8 is mulAddRowsBatchBy8 overwriting y: the first
// group of (at most 8) rows by set, the others added by add; k = 0 clears y.
func mulAddRowsBatchSetBy8(set, add func(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int),
	nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int) {
	if nb == 0 || n == 0 {
		return
	}
	if k == 0 {
		for b := 0; b < nb; b++ {
			clear(y[b*ystride : b*ystride+n])
		}
		return
	}
	set(nb, min(8, k), n, a, lda, x, ldx, xstride, y, ystride)
	if k > 8 {
		mulAddRowsBatchBy8(add, nb, k-8, n, a[8*lda:], lda, x[8*ldx:], ldx, xstride, y, ystride)
	}
}

// transpose16Call is the avx512 table's transpose16 called directly: a
// call through the func value would make its slices escape, and some
// callers of the SGEMM packing then allocate. Called only where
// cur.transpose16 is set (avx512).
func transpose16Call(rows, n int, src []float32, lds, srow int, dst []float32, ldd, drow int) {
	asm.Transpose16AVX512(rows, n, src, lds, srow, dst, ldd, drow)
}
