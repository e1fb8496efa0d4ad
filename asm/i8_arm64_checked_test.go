//go:build arm64 && !noasm

package asm

import (
	"testing"

	"github.com/klauspost/cpuid/v2"
)

func TestGemmI8KernelBoundsARM64(t *testing.T) {
	testI8KernelBounds(t, i8KernelUnderTest{"GemmI8KernelSDOT", 16, I8GroupBytes / 2, false,
		cpuid.CPU.Supports(cpuid.ASIMDDP),
		func(mr, kg int, a []int8, lda int, tail []uint32, b []int8, _, c []int32, ldc int) {
			GemmI8KernelSDOT(mr, kg, a, lda, tail, b, c, ldc)
		}})
	testI8KernelBounds(t, i8KernelUnderTest{"GemmI8KernelSMULL", 8, I8GroupBytes / 4, false, true,
		func(mr, kg int, a []int8, lda int, tail []uint32, b []int8, _, c []int32, ldc int) {
			GemmI8KernelSMULL(mr, kg, a, lda, tail, b, c, ldc)
		}})
}

// TestRequantRowsARM64 checks RequantRowsNEON with testRequantRows.
func TestRequantRowsARM64(t *testing.T) {
	testRequantRows(t, requantUnderTest{"RequantRowsNEON", 8, true, RequantRowsNEON})
}
