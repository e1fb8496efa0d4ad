package asm

import (
	"errors"
	"strings"
	"testing"
)

// i8KernelUnderTest is one int8 micro-kernel for testI8KernelBounds: its
// exported name, tile width, bytes of b read per group, whether it takes
// corrections, whether this CPU runs it, and a call with every operand.
type i8KernelUnderTest struct {
	name     string
	nr, used int
	corr, ok bool
	run      func(mr, kg int, a []int8, lda int, tail []uint32, b []int8, corr, c []int32, ldc int)
}

// testI8KernelBounds checks that an int8 kernel goes through the bounds
// layer: each operand one element short, or a bad mr or ldc, panics with
// a BoundsError naming the kernel and the operand before the assembly
// runs; the exact sizes run (when the CPU can) and add the right sums.
func testI8KernelBounds(t *testing.T, k i8KernelUnderTest) {
	const mr, kg, lda = 3, 3, 13
	mk8 := func(n int) []int8 { return make([]int8, n) }
	mk32 := func(n int) []int32 { return make([]int32, n) }
	ldc := k.nr + 1
	na, nb, nc := (mr-1)*lda+4*kg, kg*I8GroupBytes+k.used, (mr-1)*ldc+k.nr
	tail := make([]uint32, mr)
	cases := []struct {
		what string
		f    func()
	}{
		{"a", func() { k.run(mr, kg, mk8(na-1), lda, tail, mk8(nb), mk32(32), mk32(nc), ldc) }},
		{"b", func() { k.run(mr, kg, mk8(na), lda, tail, mk8(nb-1), mk32(32), mk32(nc), ldc) }},
		{"c", func() { k.run(mr, kg, mk8(na), lda, tail, mk8(nb), mk32(32), mk32(nc-1), ldc) }},
		{"tail", func() { k.run(mr, kg, mk8(na), lda, tail[:mr-1], mk8(nb), mk32(32), mk32(nc), ldc) }},
		{"mr", func() { k.run(9, kg, mk8(na), lda, tail, mk8(nb), mk32(32), mk32(nc), ldc) }},
		{"mr", func() { k.run(0, kg, mk8(na), lda, tail, mk8(nb), mk32(32), mk32(nc), ldc) }},
		{"ldc", func() { k.run(mr, kg, mk8(na), lda, tail, mk8(nb), mk32(32), mk32(nc), k.nr-1) }},
	}
	if k.corr {
		cases = append(cases, struct {
			what string
			f    func()
		}{"corr", func() { k.run(mr, kg, mk8(na), lda, tail, mk8(nb), mk32(31), mk32(nc), ldc) }})
	}
	for _, tc := range cases {
		func() {
			defer func() {
				var be BoundsError
				err, _ := recover().(error)
				if !errors.As(err, &be) || be.Kernel != k.name || !strings.HasPrefix(be.What, tc.what) {
					t.Errorf("%s with a bad %s: recovered %v, want a BoundsError on %s", k.name, tc.what, err, tc.what)
				}
			}()
			tc.f()
		}()
	}
	if !k.ok {
		return
	}
	// a = 1 everywhere, b = 2 in every byte read, tail = 1 in its first
	// byte: every sum is 2·(4·kg + 1); corr = −128·Σb for the VNNI offset.
	a, b, c := mk8(na), mk8(nb), mk32(nc)
	for i := range a {
		a[i] = 1
	}
	for g := range kg + 1 {
		for q := range k.used {
			b[g*I8GroupBytes+q] = 2
		}
	}
	corr := mk32(32)
	for j := range corr {
		corr[j] = -128 * 2 * 4 * (kg + 1)
	}
	for i := range tail {
		tail[i] = 1
	}
	k.run(mr, kg, a, lda, tail, b, corr, c, ldc)
	for i := range mr {
		for j := range k.nr {
			if got, want := c[i*ldc+j], int32(2*(4*kg+1)); got != want {
				t.Fatalf("%s: c[%d][%d] = %d, want %d", k.name, i, j, got, want)
			}
		}
	}
}
