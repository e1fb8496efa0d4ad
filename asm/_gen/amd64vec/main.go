// Command amd64vec generates asm/vec_amd64.s and its stubs asm/vec_amd64.go:
// the AVX2+FMA and AVX-512F vector kernels of package asm, both ISAs from
// one generator function per kernel family, parameterised by an isa (8 or
// 16 lanes; AVX2 VMASKMOVPS tails under a Y15 mask or AVX-512 K1-masked
// tails; constants as 32-byte memory operands or broadcasts).
//
// Run it through go generate in asm/ (see asm/gen_amd64vec.go):
//
//	cd asm/_gen && go run ./amd64vec -out ../vec_amd64.s -stubs ../vec_amd64.go -pkg asm
//
// The output is deterministic. The generated functions are unexported
// (gemvNAVX2, …); the exported wrappers in asm/vec_amd64_checked.go check
// every operand through asm/bounds.go before calling them.
//
// exp follows package expconst (shared with the arm64 generator): clamps to
// [expconst.Lo, expconst.Hi], Cody–Waite reduction, the Cephes polynomial
// e = (1 + r) + p(r)·r², and the single rounding of e·2^k, subnormal
// results kept. Vectors with a lane that may underflow take an out-of-line
// block (emitted after the function's RET) that builds those results with
// integer conversions, because a floating-point instruction that underflows
// costs a microcode assist on Intel CPUs (see isa.exp).
//
// Everything is expressed in avo with physical registers (the kernels
// keep the register assignment and blocking of the hand-written assembly
// they replace); no text/template fragment is needed. Two details: avo
// has no local-label scoping, so the generator gives every repeated body
// (full and masked chunk) its own label suffix; and the per-instruction
// comments of the old file are not reproduced (avo emits instruction
// lines only), the generator's Go source carries them instead.
package main

import (
	. "github.com/mmcloughlin/avo/build"
)

func main() {
	ConstraintExpr("amd64,!noasm")
	declareConsts()
	declareDeintIdx()
	for _, s := range []isa{avx2, avx512} {
		gemvN(s)
		gemvT(s)
		ger(s)
		mulAddRows(s)
		softmaxCols(s)
		softmaxColsGrad(s)
		squash(s)
		squashGrad(s)
		gerGroups(s)
		gemvTGroups(s)
		gemvNGroups(s)
		ger2Groups(s, false)
		ger2Groups(s, true)
		mulAddRowsBatch(s, false)
		mulAddRowsBatch(s, true)
		expKernel(s)
		fmaPeak(s)
		softmaxRows(s)
		softmaxRowsGrad(s)
		ger2GemvGroups(s)
		gemvNTGroups(s)
		biasAct(s)
		reluMask(s)
		compactAct(s)
		if s.zmm {
			deinterleaveRows(s)
			transpose16(s)
		}
		adamStep(s)
	}
	mxcsr()
	Generate()
}
