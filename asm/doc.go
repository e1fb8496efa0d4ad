// Package asm holds the Plan 9 assembly kernels (amd64 AVX2 and AVX-512,
// arm64 NEON) behind exported Go functions. Use package kernels, which
// picks an implementation at run time.
//
// # Generated files
//
// The amd64 vector kernels are generated, not hand-kept: vec_amd64.s and
// its //go:noescape stubs vec_amd64.go are written by the avo program in
// _gen/amd64vec, which has one generator function per kernel family
// (gemvN, gemvT, ger, mulAddRows, mulAddRowsBatch(+Set), softmaxCols(+Grad),
// squash(+Grad), gerGroups, ger2Groups(+Set), gemvTGroups, gemvNGroups,
// exp, …, adamStep, the optimizer's update), each emitting both the AVX2 (8 lanes, VMASKMOVPS tails) and the
// AVX-512 (16 lanes, K-masked tails) version from the same source. The
// constants and algorithm of exp come from _gen/expconst, shared with the
// arm64 generator, so that exp has the same clamps (−105, 88.7228394),
// subnormal results and ≤ 2 ulp accuracy on every ISA. _gen is its own Go
// module (avo is not a dependency of capstan). Never edit a generated file;
// change the generator and regenerate with
//
//	go generate ./asm/
//
// which reproduces the committed files byte for byte (gen_*.go hold the
// //go:generate lines). The generated assembly functions are unexported
// (gemvNAVX2, …).
//
// The SGEMM micro-kernels are generated too: sgemm_amd64.s, its stubs and
// the checked wrappers with the tile table SgemmTilesAMD64
// (sgemm_tiles_amd64.go) by _gen/amd64sgemm from (mr, nr, isa); the NEON
// files (vec_arm64.s, sgemm_arm64.s and their stubs) by the text/template
// generator _gen/arm64, one template per kernel family, with the A64
// instructions the Go assembler lacks as WORD encodings commented with
// their mnemonics.
//
// The int8 GEMM micro-kernels are generated too: i8_amd64.s and its stubs
// by the avo program _gen/amd64i8 (AVX512-VNNI VPDPBUSD, mr = 1…8 × 32
// columns, and AVX2 VPMADDUBSW/VPMADDWD, mr = 1…4 × 16), i8_arm64.s by the
// _gen/arm64 templates i8sdot and i8smull (SDOT 4×16, SMULL/SADALP 4×8).
// All read the packed weight layout of i8.go; the exported, checked
// kernels are i8_amd64_checked.go and i8_arm64_checked.go.
//
// # Bounds layer
//
// Every exported kernel (GemvNAVX2, …, ExpAVX512, and the other ISAs'
// ones) first checks its operands with the check functions of bounds.go:
// a length or stride that would make the equivalent Go loop (given in each
// doc comment) go out of range panics with a BoundsError naming the kernel
// and the operand, before any assembly runs; an empty shape returns
// without calling the assembly. The wrappers are in vec_amd64_checked.go,
// sgemm_tiles_amd64.go (generated), vec_arm64_checked.go and
// sgemm_arm64_checked.go. The amd64 vector wrappers first try the inlinable
// fast paths of bounds_fast.go (conservative: they accept only what the
// checks accept, and leave every error and empty shape to the checks),
// which cut the cost of the layer from about 10 to 3 ns per call.
package asm
