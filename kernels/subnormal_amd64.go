//go:build amd64 && !noasm

package kernels

import "github.com/capstan-ml/capstan/asm"

func flushSubnormals() func() {
	prev := asm.MXCSR()
	asm.SetMXCSR(prev | asm.MXCSRFlushToZero | asm.MXCSRDenormalsAreZero)
	return func() { asm.SetMXCSR(prev) }
}

// subnormalsFlushed reports whether the calling thread flushes subnormals.
func subnormalsFlushed() bool {
	const both = asm.MXCSRFlushToZero | asm.MXCSRDenormalsAreZero
	return asm.MXCSR()&both == both
}
