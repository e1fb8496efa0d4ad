//go:build amd64 && !noasm

package asm

// MXCSR bits that make SSE and AVX arithmetic treat subnormal numbers as
// zero: MXCSRDenormalsAreZero (DAZ, bit 6) reads subnormal operands as
// zero, MXCSRFlushToZero (FTZ, bit 15) writes zero for results that would
// be subnormal. Intel cores run an instruction that meets a subnormal
// operand or result through a microcode assist of about a hundred cycles;
// AMD's Zen cores do not.
const (
	MXCSRDenormalsAreZero uint32 = 1 << 6
	MXCSRFlushToZero      uint32 = 1 << 15
)

// MXCSR returns the calling OS thread's MXCSR register (STMXCSR). The
// register belongs to the thread, not to the goroutine: read it from a
// goroutine locked to its thread (runtime.LockOSThread).
func MXCSR() uint32 { return getMXCSR() }

// SetMXCSR loads v into the calling OS thread's MXCSR register (LDMXCSR).
// Only a goroutine locked to its thread (runtime.LockOSThread) may change
// it, and it must restore the previous value before it unlocks: other
// goroutines that later run on the thread expect the default (0x1F80, all
// exceptions masked, round to nearest, subnormals kept). Reserved bits set
// in v fault (#GP): change only the bits above.
func SetMXCSR(v uint32) { setMXCSR(v) }
