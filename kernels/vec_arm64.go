//go:build arm64 && !noasm

package kernels

import "github.com/capstan-ml/capstan/asm"

// The NEON versions of the non-GEMM primitives. The asm kernels check their
// operands themselves (an out-of-range shape panics with asm.BoundsError
// before any assembly runs, an empty one does nothing), so they are
// registered as they are; only squash maps its kind.
var _ = register("neon", func(o *ops) {
	o.exp = asm.ExpNEON
	o.gemvN = asm.GemvNNEON
	o.gemvT = asm.GemvTNEON
	o.ger = asm.GerNEON
	o.axpy = func(alpha float32, x, y []float32) {
		a := [1]float32{alpha}
		asm.GerNEON(1, len(x), a[:], x, y, len(x))
	}
	o.mulAddRows = asm.MulAddRowsNEON
	o.softmaxCols = asm.SoftmaxColsNEON
	o.softmaxColsGrad = asm.SoftmaxColsGradNEON
	o.softmaxRows = asm.SoftmaxRowsNEON
	o.softmaxRowsGrad = asm.SoftmaxRowsGradNEON
	o.squash = squashNEON
	o.squashGrad = squashGradNEON
	o.gerGroups = asm.GerGroupsNEON
	o.ger2Groups = asm.Ger2GroupsNEON
	o.ger2GroupsSet = asm.Ger2GroupsSetNEON
	o.ger2GemvGroups = asm.Ger2GemvGroupsNEON
	o.gemvNTGroups = asm.GemvNTGroupsNEON
	o.gemvTGroups = asm.GemvTGroupsNEON
	o.gemvNGroups = asm.GemvNGroupsNEON
	o.fmaPeak = fmaLoop{fn: asm.FMAPeakNEON, w: 4, a: asm.FMAPeakAccNEON}
	o.biasAct = asm.BiasActNEON
	o.reluMask = asm.ReluMaskNEON
	o.compactAct = compactActVia(asm.BiasActNEON)
	o.adamStep = func(k adamConsts, w, g, h, m, v []float32) {
		asm.AdamStepNEON(len(w), k.decoupledFlag(), w, g, h, m, v, k.b1, k.c1, k.b2, k.c2, k.wd, k.step, k.invSqrtBC2, k.eps)
	}
})

// squashKindNEON maps a Squash to the kind argument of the NEON kernels
// (0 Mazzia, 1 Sabour).
func squashKindNEON(kind Squash) int {
	if kind == SquashSabour {
		return 1
	}
	return 0
}

func squashNEON(kind Squash, d, n int, s, v []float32) {
	asm.SquashNEON(squashKindNEON(kind), d, n, s, v)
}

func squashGradNEON(kind Squash, d, n int, s, dv, ds []float32) {
	asm.SquashGradNEON(squashKindNEON(kind), d, n, s, dv, ds)
}
