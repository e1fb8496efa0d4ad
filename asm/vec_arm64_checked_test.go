//go:build arm64 && !noasm

package asm

import "testing"

// neonCase is one exported NEON kernel: ok runs it on operands of exactly
// the lengths its Go loop touches, short on one operand (named operand)
// one value short, and empty on an empty shape with nil operands. For
// GemvN, GemvT, Ger and MulAddRows the assembly body would dereference nil
// on that shape (checked by hand: it faults), so the test fails if the
// wrapper calls it; the other bodies do nothing on empty shapes anyway.
type neonCase struct {
	name, operand    string
	ok, short, empty func()
}

func neonCases() []neonCase {
	const m, n, lda = 5, 19, 21
	al := (m-1)*lda + n
	const k, ldx = 3, 23
	const ng, d, xs, xk, ldy = 3, 4, 1, 3, 20
	xl := (ng-1)*xs + (d-1)*xk + 1
	gl := (ng*d-1)*lda + n
	yl := (ng-1)*ldy + n
	return []neonCase{
		{"ExpNEON", "y",
			func() { ExpNEON(mk(n), mk(n)) },
			func() { ExpNEON(mk(n), mk(n-1)) },
			func() { ExpNEON(nil, nil) }},
		{"GemvNNEON", "y",
			func() { GemvNNEON(m, n, mk(al), lda, mk(n), mk(m)) },
			func() { GemvNNEON(m, n, mk(al), lda, mk(n), mk(m-1)) },
			func() { GemvNNEON(m, 0, nil, lda, nil, nil) }},
		{"GemvTNEON", "a",
			func() { GemvTNEON(m, n, mk(al), lda, mk(m), mk(n)) },
			func() { GemvTNEON(m, n, mk(al-1), lda, mk(m), mk(n)) },
			func() { GemvTNEON(0, n, nil, lda, nil, nil) }},
		{"GerNEON", "x",
			func() { GerNEON(m, n, mk(m), mk(n), mk(al), lda) },
			func() { GerNEON(m, n, mk(m-1), mk(n), mk(al), lda) },
			func() { GerNEON(m, 0, nil, nil, nil, lda) }},
		{"MulAddRowsNEON", "x",
			func() { MulAddRowsNEON(k, n, mk((k-1)*lda+n), lda, mk((k-1)*ldx+n), ldx, mk(n)) },
			func() { MulAddRowsNEON(k, n, mk((k-1)*lda+n), lda, mk((k-1)*ldx+n-1), ldx, mk(n)) },
			func() { MulAddRowsNEON(0, n, nil, lda, nil, ldx, nil) }},
		{"SoftmaxColsNEON", "c",
			func() { SoftmaxColsNEON(m, n, mk(m*n), mk(m*n)) },
			func() { SoftmaxColsNEON(m, n, mk(m*n), mk(m*n-1)) },
			func() { SoftmaxColsNEON(0, n, nil, nil) }},
		{"SoftmaxColsGradNEON", "dc",
			func() { SoftmaxColsGradNEON(m, n, mk(m*n), mk(m*n), mk(m*n)) },
			func() { SoftmaxColsGradNEON(m, n, mk(m*n), mk(m*n-1), mk(m*n)) },
			func() { SoftmaxColsGradNEON(0, n, nil, nil, nil) }},
		{"SoftmaxRowsGradNEON", "dc",
			func() { SoftmaxRowsGradNEON(m, n, mk(m*n), mk(m*n), mk(m*n)) },
			func() { SoftmaxRowsGradNEON(m, n, mk(m*n), mk(m*n-1), mk(m*n)) },
			func() { SoftmaxRowsGradNEON(0, n, nil, nil, nil) }},
		{"SoftmaxRowsNEON", "c",
			func() { SoftmaxRowsNEON(m, n, mk(m*n), mk(m*n)) },
			func() { SoftmaxRowsNEON(m, n, mk(m*n), mk(m*n-1)) },
			func() { SoftmaxRowsNEON(0, n, nil, nil) }},
		{"SquashNEON", "v",
			func() { SquashNEON(1, m, n, mk(m*n), mk(m*n)) },
			func() { SquashNEON(0, m, n, mk(m*n), mk(m*n-1)) },
			func() { SquashNEON(0, 0, n, nil, nil) }},
		{"SquashNEON kind", "kind",
			func() { SquashNEON(0, m, n, mk(m*n), mk(m*n)) },
			func() { SquashNEON(2, m, n, mk(m*n), mk(m*n)) },
			func() { SquashNEON(1, m, 0, nil, nil) }},
		{"SquashGradNEON", "ds",
			func() { SquashGradNEON(0, m, n, mk(m*n), mk(m*n), mk(m*n)) },
			func() { SquashGradNEON(1, m, n, mk(m*n), mk(m*n), mk(m*n-1)) },
			func() { SquashGradNEON(1, 0, n, nil, nil, nil) }},
		{"GerGroupsNEON", "a",
			func() { GerGroupsNEON(ng, d, n, mk(xl), xs, xk, mk(yl), ldy, mk(gl), lda) },
			func() { GerGroupsNEON(ng, d, n, mk(xl), xs, xk, mk(yl), ldy, mk(gl-1), lda) },
			func() { GerGroupsNEON(ng, 0, n, nil, xs, xk, nil, ldy, nil, lda) }},
		{"GemvTGroupsNEON", "x",
			func() { GemvTGroupsNEON(ng, d, n, mk(gl), lda, mk(xl), xs, xk, mk(yl), ldy) },
			func() { GemvTGroupsNEON(ng, d, n, mk(gl), lda, mk(xl-1), xs, xk, mk(yl), ldy) },
			func() { GemvTGroupsNEON(0, d, n, nil, lda, nil, xs, xk, nil, ldy) }},
		{"GemvNGroupsNEON", "y",
			func() { GemvNGroupsNEON(ng, d, n, mk(gl), lda, mk(yl), ldy, mk(xl), xs, xk) },
			func() { GemvNGroupsNEON(ng, d, n, mk(gl), lda, mk(yl), ldy, mk(xl-1), xs, xk) },
			func() { GemvNGroupsNEON(ng, d, 0, nil, lda, nil, ldy, nil, xs, xk) }},
		{"Ger2GroupsNEON", "y2",
			func() { Ger2GroupsNEON(ng, d, n, mk(xl), mk(xl), xs, xk, mk(yl), mk(yl), ldy, mk(gl), lda) },
			func() { Ger2GroupsNEON(ng, d, n, mk(xl), mk(xl), xs, xk, mk(yl), mk(yl-1), ldy, mk(gl), lda) },
			func() { Ger2GroupsNEON(ng, 0, n, nil, nil, xs, xk, nil, nil, ldy, nil, lda) }},
		{"Ger2GroupsSetNEON", "x2",
			func() { Ger2GroupsSetNEON(ng, d, n, mk(xl), mk(xl), xs, xk, mk(yl), mk(yl), ldy, mk(gl), lda) },
			func() { Ger2GroupsSetNEON(ng, d, n, mk(xl), mk(xl-1), xs, xk, mk(yl), mk(yl), ldy, mk(gl), lda) },
			func() { Ger2GroupsSetNEON(0, d, n, nil, nil, xs, xk, nil, nil, ldy, nil, lda) }},
		{"GemvNTGroupsNEON", "z",
			func() { GemvNTGroupsNEON(ng, d, n, mk(gl), lda, mk(yl), ldy, mk(xl), xs, xk, mk(yl), ldy) },
			func() { GemvNTGroupsNEON(ng, d, n, mk(gl), lda, mk(yl), ldy, mk(xl), xs, xk, mk(yl-1), ldy) },
			func() { GemvNTGroupsNEON(ng, 0, n, nil, lda, nil, ldy, nil, xs, xk, nil, ldy) }},
		{"Ger2GemvGroupsNEON", "a",
			func() {
				Ger2GemvGroupsNEON(ng, d, n, 1, mk(gl), lda, mk(xl), mk(xl), xs, xk, mk(yl), mk(yl), ldy, mk(gl))
			},
			func() {
				Ger2GemvGroupsNEON(ng, d, n, 1, mk(gl-1), lda, mk(xl), mk(xl), xs, xk, mk(yl), mk(yl), ldy, mk(gl))
			},
			func() { Ger2GemvGroupsNEON(ng, d, 0, 1, nil, lda, nil, nil, xs, xk, nil, nil, ldy, nil) }},
		{"FMAPeakNEON", "in",
			func() { FMAPeakNEON(mk(4), mk(8), 3) },
			func() { FMAPeakNEON(mk(4), mk(7), 3) },
			nil},
		{"FMAPeakNEON", "out",
			func() { FMAPeakNEON(mk(4), mk(8), 0) },
			func() { FMAPeakNEON(mk(3), mk(8), 0) },
			nil},
		{"SgemmKernel8x12NEON", "c",
			func() { SgemmKernel8x12NEON(3, mk(24), mk(36), mk(7*13+12), 13, 1, 1) },
			func() { SgemmKernel8x12NEON(3, mk(24), mk(36), mk(7*13+11), 13, 1, 1) },
			nil},
		{"SgemmKernel8x8NEON", "b",
			func() { SgemmKernel8x8NEON(3, mk(24), mk(24), mk(7*8+8), 8, 1, 0) },
			func() { SgemmKernel8x8NEON(3, mk(24), mk(23), mk(7*8+8), 8, 1, 0) },
			nil},
		{"SgemmKernel12x8NEON", "a",
			func() { SgemmKernel12x8NEON(2, mk(24), mk(16), mk(11*9+8), 9, 1, 0) },
			func() { SgemmKernel12x8NEON(2, mk(23), mk(16), mk(11*9+8), 9, 1, 0) },
			nil},
	}
}

// TestNEONWrappersCheck: every exported NEON kernel runs on exact lengths,
// panics with a BoundsError naming the operand when one value is missing,
// and returns quietly on an empty shape without calling the assembly
// bodies that would fault there.
func TestNEONWrappersCheck(t *testing.T) {
	for _, c := range neonCases() {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: exact lengths: panic %v", c.name, r)
				}
			}()
			c.ok()
		}()
		mustPanic(t, c.name, c.operand, c.short)
		if c.empty != nil {
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Errorf("%s: empty shape: panic %v", c.name, r)
					}
				}()
				c.empty()
			}()
		}
	}
	mustPanic(t, "GemvNNEON negative lda", "stride", func() { GemvNNEON(2, 2, mk(4), -1, mk(2), mk(2)) })
	mustPanic(t, "SgemmKernel8x12NEON ldc < 12", "ldc", func() { SgemmKernel8x12NEON(1, mk(8), mk(12), mk(200), 11, 1, 0) })
}

// TestFMAPeakNEON: with x = in[l] = l+1 and y = in[4+l] = 4−l (small
// integers, so every sum is exact) every lane of FMAPeakNEON is exactly
// FMAPeakAccNEON·iters·x·y, which fails if an accumulator is dropped or
// added twice, a lane is lost or the operands are misplaced; iters = 0
// writes zeros; nothing past out[4] is written; a negative iters panics.
func TestFMAPeakNEON(t *testing.T) {
	in := []float32{1, 2, 3, 4, 4, 3, 2, 1}
	for _, iters := range []int{0, 1, 7, 1000} {
		out := []float32{-1, -1, -1, -1, -1}
		FMAPeakNEON(out, in, iters)
		for i := range 4 {
			if want := float32(FMAPeakAccNEON * iters * (i + 1) * (4 - i)); out[i] != want {
				t.Errorf("iters=%d: out[%d] = %g, want %g", iters, i, out[i], want)
			}
		}
		if out[4] != -1 {
			t.Errorf("iters=%d: out[4] written", iters)
		}
	}
	mustPanic(t, "FMAPeakNEON negative iters", "dimension", func() { FMAPeakNEON(mk(4), mk(8), -1) })
}

// epilogueWrappers lists the BiasAct and ReluMask kernels
// (epilogue_checked_test.go).
func epilogueWrappers() []epilogueKernels {
	return []epilogueKernels{{"NEON", BiasActNEON, ReluMaskNEON}}
}

// adamWrappers lists the AdamStep kernel (adam_checked_test.go).
func adamWrappers() []adamKernel {
	return []adamKernel{{"NEON", AdamStepNEON}}
}
