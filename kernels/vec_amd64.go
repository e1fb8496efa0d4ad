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
	o.mulAddRows = asm.MulAddRowsAVX2
	o.softmaxCols = asm.SoftmaxColsAVX2
	o.softmaxColsGrad = asm.SoftmaxColsGradAVX2
	o.squash = func(kind Squash, d, n int, s, v []float32) { asm.SquashAVX2(int(kind), d, n, s, v) }
	o.squashGrad = func(kind Squash, d, n int, s, dv, ds []float32) { asm.SquashGradAVX2(int(kind), d, n, s, dv, ds) }
	o.gerGroups = asm.GerGroupsAVX2
	o.ger2Groups = asm.Ger2GroupsAVX2
	o.ger2GroupsSet = asm.Ger2GroupsSetAVX2
	o.gemvTGroups = asm.GemvTGroupsAVX2
	o.gemvNGroups = asm.GemvNGroupsAVX2
})

// AVX-512 kernels.
var _ = register("avx512", func(o *ops) {
	o.gemvN = asm.GemvNAVX512
	o.gemvT = asm.GemvTAVX512
	o.ger = asm.GerAVX512
	o.mulAddRows = asm.MulAddRowsAVX512
	o.softmaxCols = asm.SoftmaxColsAVX512
	o.softmaxColsGrad = asm.SoftmaxColsGradAVX512
	o.squash = func(kind Squash, d, n int, s, v []float32) { asm.SquashAVX512(int(kind), d, n, s, v) }
	o.squashGrad = func(kind Squash, d, n int, s, dv, ds []float32) { asm.SquashGradAVX512(int(kind), d, n, s, dv, ds) }
	o.gerGroups = asm.GerGroupsAVX512
	o.ger2Groups = asm.Ger2GroupsAVX512
	o.ger2GroupsSet = asm.Ger2GroupsSetAVX512
	o.gemvTGroups = asm.GemvTGroupsAVX512
	o.gemvNGroups = asm.GemvNGroupsAVX512
})
