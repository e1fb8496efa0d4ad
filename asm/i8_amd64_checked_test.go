//go:build amd64 && !noasm

package asm

import (
	"errors"
	"testing"

	"github.com/klauspost/cpuid/v2"
)

// TestGemmI8KernelBounds checks that the int8 kernels go through the
// bounds layer: each operand one element short, or a bad mr or ldc, panics
// with a BoundsError naming the kernel and the operand before the assembly
// runs; the exact sizes run.
func TestGemmI8KernelBounds(t *testing.T) {
	const kg = 3
	mk8 := func(n int) []int8 { return make([]int8, n) }
	mk32 := func(n int) []int32 { return make([]int32, n) }
	type kern struct {
		name string
		ok   bool
		run  func(mr, lda int, a []int8, tail []uint32, b []int8, corr, c []int32, ldc int)
		nr   int
		used int // bytes of b read in the last group
	}
	kerns := []kern{
		{"GemmI8KernelVNNI", cpuid.CPU.Supports(cpuid.AVX512F, cpuid.AVX512VNNI), func(mr, lda int, a []int8, tail []uint32, b []int8, corr, c []int32, ldc int) {
			GemmI8KernelVNNI(mr, kg, a, lda, tail, b, corr, c, ldc)
		}, 32, I8GroupBytes},
		{"GemmI8KernelAVX2", cpuid.CPU.Supports(cpuid.AVX2), func(mr, lda int, a []int8, tail []uint32, b []int8, corr, c []int32, ldc int) {
			GemmI8KernelAVX2(mr, kg, a, lda, tail, b, c, ldc)
		}, 16, I8GroupBytes / 2},
	}
	for _, k := range kerns {
		const mr, lda = 3, 13
		ldc := k.nr + 1
		na, nb, nc := (mr-1)*lda+4*kg, kg*I8GroupBytes+k.used, (mr-1)*ldc+k.nr
		tail := make([]uint32, mr)
		cases := []struct {
			what string
			f    func()
		}{
			{"a", func() { k.run(mr, lda, mk8(na-1), tail, mk8(nb), mk32(32), mk32(nc), ldc) }},
			{"b", func() { k.run(mr, lda, mk8(na), tail, mk8(nb-1), mk32(32), mk32(nc), ldc) }},
			{"c", func() { k.run(mr, lda, mk8(na), tail, mk8(nb), mk32(32), mk32(nc-1), ldc) }},
			{"tail", func() { k.run(mr, lda, mk8(na), tail[:mr-1], mk8(nb), mk32(32), mk32(nc), ldc) }},
			{"mr", func() { k.run(9, lda, mk8(na), tail, mk8(nb), mk32(32), mk32(nc), ldc) }},
			{"ldc", func() { k.run(mr, lda, mk8(na), tail, mk8(nb), mk32(32), mk32(nc), k.nr-1) }},
		}
		if k.nr == 32 {
			cases = append(cases, struct {
				what string
				f    func()
			}{"corr", func() { k.run(mr, lda, mk8(na), tail, mk8(nb), mk32(31), mk32(nc), ldc) }})
		}
		for _, tc := range cases {
			func() {
				defer func() {
					var be BoundsError
					err, _ := recover().(error)
					if !errors.As(err, &be) || be.Kernel != k.name || be.What[:len(tc.what)] != tc.what {
						t.Errorf("%s with a bad %s: recovered %v, want a BoundsError on %s", k.name, tc.what, err, tc.what)
					}
				}()
				tc.f()
			}()
		}
		if k.ok {
			k.run(mr, lda, mk8(na), tail, mk8(nb), mk32(32), mk32(nc), ldc)
		}
	}
}
