//go:build amd64 && !noasm

package asm

import (
	"testing"

	"github.com/klauspost/cpuid/v2"
)

func TestGemmI8KernelBoundsAMD64(t *testing.T) {
	testI8KernelBounds(t, i8KernelUnderTest{"GemmI8KernelVNNI", 32, I8GroupBytes, true,
		cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512VNNI), GemmI8KernelVNNI})
	testI8KernelBounds(t, i8KernelUnderTest{"GemmI8KernelAVX2", 16, I8GroupBytes / 2, false,
		cpuid.CPU.Supports(cpuid.AVX2),
		func(mr, kg int, a []int8, lda int, tail []uint32, b []int8, _, c []int32, ldc int) {
			GemmI8KernelAVX2(mr, kg, a, lda, tail, b, c, ldc)
		}})
}

// TestRequantRowsAMD64 checks both requantization kernels with
// testRequantRows.
func TestRequantRowsAMD64(t *testing.T) {
	testRequantRows(t, requantUnderTest{"RequantRowsAVX512", 16, cpuid.CPU.Supports(cpuid.AVX512F), RequantRowsAVX512})
	testRequantRows(t, requantUnderTest{"RequantRowsAVX2", 8, cpuid.CPU.Supports(cpuid.AVX2), RequantRowsAVX2})
}
