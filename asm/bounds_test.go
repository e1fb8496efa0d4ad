package asm

import (
	"errors"
	"strconv"
	"strings"
	"testing"
)

// mustPanic runs f and checks that it panics with a BoundsError whose
// message names the operand.
func mustPanic(t *testing.T, name, operand string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Errorf("%s: no panic", name)
			return
		}
		err, ok := r.(error)
		var be BoundsError
		if !ok || !errors.As(err, &be) {
			t.Errorf("%s: panic %v is not a BoundsError", name, r)
			return
		}
		if !strings.Contains(err.Error(), operand) {
			t.Errorf("%s: %q does not name %q", name, err, operand)
		}
	}()
	f()
}

func mk(n int) []float32 { return make([]float32, n) }

// TestChecks: every check accepts the exact lengths the equivalent Go loop
// touches, panics naming the operand when one value is missing, returns
// false on empty shapes and panics on negative arguments.
func TestChecks(t *testing.T) {
	const m, n, lda = 3, 5, 7
	aLen := (m-1)*lda + n
	if !checkGemv("GemvN", false, m, n, mk(aLen), lda, mk(n), mk(m)) {
		t.Error("GemvN: valid shape refused")
	}
	if !checkGemv("GemvT", true, m, n, mk(aLen), lda, mk(m), mk(n)) {
		t.Error("GemvT: valid shape refused")
	}
	if checkGemv("GemvN", false, 0, n, nil, lda, nil, nil) {
		t.Error("GemvN: empty shape not reported")
	}
	mustPanic(t, "GemvN short a", "a", func() { checkGemv("GemvN", false, m, n, mk(aLen-1), lda, mk(n), mk(m)) })
	mustPanic(t, "GemvN short x", "x", func() { checkGemv("GemvN", false, m, n, mk(aLen), lda, mk(n-1), mk(m)) })
	mustPanic(t, "GemvT short y", "y", func() { checkGemv("GemvT", true, m, n, mk(aLen), lda, mk(m), mk(n-1)) })
	mustPanic(t, "GemvN negative m", "dimension", func() { checkGemv("GemvN", false, -1, n, nil, lda, nil, nil) })
	mustPanic(t, "GemvN negative lda", "stride", func() { checkGemv("GemvN", false, m, n, mk(aLen), -1, mk(n), mk(m)) })

	if !checkGer("Ger", m, n, mk(m), mk(n), mk(aLen), lda) {
		t.Error("Ger: valid shape refused")
	}
	mustPanic(t, "Ger short a", "a", func() { checkGer("Ger", m, n, mk(m), mk(n), mk(aLen-1), lda) })

	const k, ldx = 4, 6
	if !checkMulAddRows("MulAddRows", k, n, mk((k-1)*lda+n), lda, mk((k-1)*ldx+n), ldx, mk(n)) {
		t.Error("MulAddRows: valid shape refused")
	}
	mustPanic(t, "MulAddRows short x", "x", func() {
		checkMulAddRows("MulAddRows", k, n, mk((k-1)*lda+n), lda, mk((k-1)*ldx+n-1), ldx, mk(n))
	})

	const nb, xstride, ystride = 3, 40, 9
	xb := (nb-1)*xstride + (k-1)*ldx + n
	yb := (nb-1)*ystride + n
	if !checkMulAddRowsBatch("MulAddRowsBatch", 8, nb, k, n, mk((k-1)*lda+n), lda, mk(xb), ldx, xstride, mk(yb), ystride) {
		t.Error("MulAddRowsBatch: valid shape refused")
	}
	mustPanic(t, "MulAddRowsBatch short y", "y", func() {
		checkMulAddRowsBatch("MulAddRowsBatch", 8, nb, k, n, mk((k-1)*lda+n), lda, mk(xb), ldx, xstride, mk(yb-1), ystride)
	})
	mustPanic(t, "MulAddRowsBatch k > 8", "k", func() {
		checkMulAddRowsBatch("MulAddRowsBatch", 8, nb, 9, n, mk(1000), lda, mk(1000), ldx, xstride, mk(1000), ystride)
	})

	if !checkCols("SoftmaxCols", m, n, "lc", mk(m*n), mk(m*n)) {
		t.Error("SoftmaxCols: valid shape refused")
	}
	mustPanic(t, "SoftmaxCols short c", "c", func() { checkCols("SoftmaxCols", m, n, "lc", mk(m*n), mk(m*n-1)) })
	mustPanic(t, "Squash kind", "kind", func() { checkSquashKind("Squash", 2) })
	checkSquashKind("Squash", 1)

	const ng, d, xs, xk, ldy = 3, 4, 1, 3, 8
	xl := (ng-1)*xs + (d-1)*xk + 1
	al := (ng*d-1)*lda + n
	yl := (ng-1)*ldy + n
	if !checkGerGroups("Ger2Groups", ng, d, n, mk(xl), mk(xl), xs, xk, mk(yl), mk(yl), ldy, mk(al), lda, true) {
		t.Error("Ger2Groups: valid shape refused")
	}
	mustPanic(t, "Ger2Groups short x2", "x2", func() {
		checkGerGroups("Ger2Groups", ng, d, n, mk(xl), mk(xl-1), xs, xk, mk(yl), mk(yl), ldy, mk(al), lda, true)
	})
	if !checkGemvTGroups("GemvTGroups", ng, d, n, mk(al), lda, mk(xl), xs, xk, mk(yl), ldy) {
		t.Error("GemvTGroups: valid shape refused")
	}
	mustPanic(t, "GemvTGroups short a", "a", func() {
		checkGemvTGroups("GemvTGroups", ng, d, n, mk(al-1), lda, mk(xl), xs, xk, mk(yl), ldy)
	})
	if !checkGemvNGroups("GemvNGroups", ng, d, n, mk(al), lda, mk(yl), ldy, mk(xl), xs, xk) {
		t.Error("GemvNGroups: valid shape refused")
	}
	mustPanic(t, "GemvNGroups short y", "y", func() {
		checkGemvNGroups("GemvNGroups", ng, d, n, mk(al), lda, mk(yl), ldy, mk(xl-1), xs, xk)
	})

	// Groups × rows past maxDim: (ng·d−1)·lda would wrap int64 and
	// accept one-element operands (ng·d = 8,589,934,593 rows, lda 2^31).
	if strconv.IntSize == 64 {
		const bigNg, bigD, bigLda = 954437177, 9, maxDim // maxDim is 2^31 here
		for _, c := range []struct {
			name string
			f    func()
		}{
			{"Ger2Groups", func() {
				checkGerGroups("Ger2Groups", bigNg, bigD, 1, mk(1), mk(1), 0, 0, mk(1), mk(1), 0, mk(1), bigLda, true)
			}},
			{"GemvTGroups", func() { checkGemvTGroups("GemvTGroups", bigNg, bigD, 1, mk(1), bigLda, mk(1), 0, 0, mk(1), 0) }},
			{"GemvNGroups", func() { checkGemvNGroups("GemvNGroups", bigNg, bigD, 1, mk(1), bigLda, mk(1), 0, mk(1), 0, 0) }},
		} {
			mustPanic(t, c.name+" wrapping groups", "groups × rows", c.f)
		}
	}

	if !checkExp("Exp", mk(5), mk(5)) || checkExp("Exp", nil, nil) {
		t.Error("Exp: wrong result")
	}
	mustPanic(t, "Exp short y", "y", func() { checkExp("Exp", mk(5), mk(4)) })

	const mr, nr, kc, ldc = 6, 16, 10, 20
	if !checkSgemmKernel("SgemmKernel6x16", mr, nr, kc, mk(kc*mr), mk(kc*nr), mk((mr-1)*ldc+nr), ldc) {
		t.Error("SgemmKernel: valid shape refused")
	}
	mustPanic(t, "SgemmKernel short c", "c", func() {
		checkSgemmKernel("SgemmKernel6x16", mr, nr, kc, mk(kc*mr), mk(kc*nr), mk((mr-1)*ldc+nr-1), ldc)
	})
	mustPanic(t, "SgemmKernel short b", "b", func() {
		checkSgemmKernel("SgemmKernel6x16", mr, nr, kc, mk(kc*mr), mk(kc*nr-1), mk((mr-1)*ldc+nr), ldc)
	})
	mustPanic(t, "SgemmKernel ldc", "ldc", func() {
		checkSgemmKernel("SgemmKernel6x16", mr, nr, kc, mk(kc*mr), mk(kc*nr), mk(1000), nr-1)
	})
}
