package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// fmaAcc is the number of independent accumulators of the FMA throughput
// loop (fmaPeak). To run at the FMA issue rate a loop needs at least
// latency × pipes independent FMAs in flight: 4 × 2 = 8 on the current
// x86 cores (Skylake-X to Sapphire Rapids and Zen 2 to Zen 5, 256-bit;
// 512-bit FMAs on Zen 4 issue once per cycle). AVX2 has 16 ymm registers,
// two of which hold the operands: 12 accumulators, 1.5 times the need.
// AVX-512 has 32: 24 accumulators, 3 times the need of today's cores and
// headroom for wider ones. The values are asm.FMAPeakAccAVX2 and
// asm.FMAPeakAccAVX512 (vec_amd64_checked.go); the tests of package
// kernels check them through the exact result A·iters.
func (s isa) fmaAcc() int {
	if s.zmm {
		return 24
	}
	return 12
}

// fmaPeak generates fmaPeakAVX2 / fmaPeakAVX512, the FMA throughput loop
// behind asm.FMAPeakAVX2 / FMAPeakAVX512:
//
//	acc[k] = 0 for k < A (vector registers 0..A−1)
//	iters times: acc[k] += x·y for every k (VFMADD231PS, one rounding),
//	             x = in[0:w], y = in[w:2w] (registers A and A+1)
//	out[0:w] = ((acc[0] + acc[1]) + acc[2]) + … + acc[A−1]
//
// The loop body is the A independent FMAs, then DECQ and JNZ on the one
// counter: no loads or stores, so it runs at the FMA issue rate. Its head
// is 64-byte aligned (loop). iters = 0 skips the loop (out = 0).
func fmaPeak(s isa) {
	name := "fmaPeak" + s.suffix
	TEXT(name, NOSPLIT, "func(out, in []float32, iters int)")
	Pragma("noescape")
	ext := "AVX2+FMA"
	if s.zmm {
		ext = "AVX-512F"
	}
	Doc(fmt.Sprintf("%s is the %s body of FMAPeak%s (the FMA throughput loop, %d accumulators of %d lanes); arguments are checked by the caller.",
		name, ext, s.suffix, s.fmaAcc(), s.w))
	acc := s.fmaAcc()
	x, y := s.v(acc), s.v(acc+1)
	base("out", RDI)
	base("in", RSI)
	arg("iters", RCX)
	VMOVUPS(m(RSI, nil, 0), x)
	VMOVUPS(m(RSI, nil, s.vb()), y)
	for k := 0; k < acc; k++ {
		VXORPS(s.v(k), s.v(k), s.v(k))
	}
	TESTQ(RCX, RCX)
	JZ(LabelRef("reduce"))
	loop("loop")
	for k := 0; k < acc; k++ {
		VFMADD231PS(y, x, s.v(k)) // acc[k] += x·y
	}
	DECQ(RCX)
	JNZ(LabelRef("loop"))
	Label("reduce")
	for k := 1; k < acc; k++ {
		VADDPS(s.v(k), s.v(0), s.v(0)) // acc[0] += acc[k], in order
	}
	VMOVUPS(s.v(0), m(RDI, nil, 0))
	done("done")
}
