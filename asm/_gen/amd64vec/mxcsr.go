package main

import (
	. "github.com/mmcloughlin/avo/build"
)

// mxcsr generates getMXCSR and setMXCSR, behind asm.MXCSR and
// asm.SetMXCSR: a read (STMXCSR) and a write (LDMXCSR) of the calling
// thread's SSE/AVX control and status register, through the argument's
// stack slot. They are one function each, not one per ISA: every amd64
// CPU has MXCSR.
func mxcsr() {
	TEXT("getMXCSR", NOSPLIT, "func() uint32")
	Doc("getMXCSR returns the calling thread's MXCSR (STMXCSR).")
	ret, err := ReturnIndex(0).Resolve()
	if err != nil {
		panic(err)
	}
	STMXCSR(ret.Addr)
	RET()

	TEXT("setMXCSR", NOSPLIT, "func(v uint32)")
	Doc("setMXCSR loads v into the calling thread's MXCSR (LDMXCSR).")
	v, err := Param("v").Resolve()
	if err != nil {
		panic(err)
	}
	LDMXCSR(v.Addr)
	RET()
}
