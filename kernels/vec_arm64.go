//go:build arm64 && !noasm

package kernels

import "github.com/capstan-ml/capstan/asm"

// The NEON versions of the non-GEMM primitives. Each wrapper returns early
// on empty shapes and touches the last element every kernel loop reads or
// writes, so that a caller bug panics with an index error in Go instead of
// letting the assembly read or write out of bounds.
var _ = register("neon", func(o *ops) {
	o.gemvN = gemvNNEON
	o.gemvT = gemvTNEON
	o.ger = gerNEON
	o.mulAddRows = mulAddRowsNEON
	o.softmaxCols = softmaxColsNEON
	o.softmaxColsGrad = softmaxColsGradNEON
	o.squash = squashNEON
	o.squashGrad = squashGradNEON
	o.gerGroups = gerGroupsNEON
	o.ger2Groups = ger2GroupsNEON
	o.ger2GroupsSet = ger2GroupsSetNEON
	o.gemvTGroups = gemvTGroupsNEON
	o.gemvNGroups = gemvNGroupsNEON
})

func gemvNNEON(m, n int, a []float32, lda int, x, y []float32) {
	if m <= 0 || n <= 0 {
		return
	}
	_ = a[(m-1)*lda+n-1]
	_ = x[n-1]
	_ = y[m-1]
	asm.GemvNNEON(m, n, a, lda, x, y)
}

func gemvTNEON(m, n int, a []float32, lda int, x, y []float32) {
	if m <= 0 || n <= 0 {
		return
	}
	_ = a[(m-1)*lda+n-1]
	_ = x[m-1]
	_ = y[n-1]
	asm.GemvTNEON(m, n, a, lda, x, y)
}

func gerNEON(m, n int, x, y, a []float32, lda int) {
	if m <= 0 || n <= 0 {
		return
	}
	_ = a[(m-1)*lda+n-1]
	_ = x[m-1]
	_ = y[n-1]
	asm.GerNEON(m, n, x, y, a, lda)
}

// stridedLast is the last index of the strided operand of the grouped
// primitives, element (j, k) at j·s + k·sk (non-negative strides).
func stridedLast(ng, d, s, sk int) int { return (ng-1)*s + (d-1)*sk }

func gerGroupsNEON(ng, d, n int, x []float32, xs, xk int, y []float32, ldy int, a []float32, lda int) {
	if ng <= 0 || d <= 0 || n <= 0 {
		return
	}
	_ = a[(ng*d-1)*lda+n-1]
	_ = x[stridedLast(ng, d, xs, xk)]
	_ = y[(ng-1)*ldy+n-1]
	asm.GerGroupsNEON(ng, d, n, x, xs, xk, y, ldy, a, lda)
}

func ger2GroupsNEON(ng, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int) {
	if ng <= 0 || d <= 0 || n <= 0 {
		return
	}
	_ = a[(ng*d-1)*lda+n-1]
	_ = x[stridedLast(ng, d, xs, xk)]
	_ = x2[stridedLast(ng, d, xs, xk)]
	_ = y[(ng-1)*ldy+n-1]
	_ = y2[(ng-1)*ldy+n-1]
	asm.Ger2GroupsNEON(ng, d, n, x, x2, xs, xk, y, y2, ldy, a, lda)
}

func ger2GroupsSetNEON(ng, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int) {
	if ng <= 0 || d <= 0 || n <= 0 {
		return
	}
	_ = a[(ng*d-1)*lda+n-1]
	_ = x[stridedLast(ng, d, xs, xk)]
	_ = x2[stridedLast(ng, d, xs, xk)]
	_ = y[(ng-1)*ldy+n-1]
	_ = y2[(ng-1)*ldy+n-1]
	asm.Ger2GroupsSetNEON(ng, d, n, x, x2, xs, xk, y, y2, ldy, a, lda)
}

func gemvTGroupsNEON(ng, d, n int, a []float32, lda int, x []float32, xs, xk int, y []float32, ldy int) {
	if ng <= 0 || d <= 0 || n <= 0 {
		return
	}
	_ = a[(ng*d-1)*lda+n-1]
	_ = x[stridedLast(ng, d, xs, xk)]
	_ = y[(ng-1)*ldy+n-1]
	asm.GemvTGroupsNEON(ng, d, n, a, lda, x, xs, xk, y, ldy)
}

func gemvNGroupsNEON(ng, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int) {
	if ng <= 0 || d <= 0 || n <= 0 {
		return
	}
	_ = a[(ng*d-1)*lda+n-1]
	_ = x[(ng-1)*ldx+n-1]
	_ = y[stridedLast(ng, d, ys, yk)]
	asm.GemvNGroupsNEON(ng, d, n, a, lda, x, ldx, y, ys, yk)
}

func mulAddRowsNEON(k, n int, a []float32, lda int, x []float32, ldx int, y []float32) {
	if k <= 0 || n <= 0 {
		return
	}
	_ = a[(k-1)*lda+n-1]
	_ = x[(k-1)*ldx+n-1]
	_ = y[n-1]
	asm.MulAddRowsNEON(k, n, a, lda, x, ldx, y)
}

func softmaxColsNEON(rows, n int, l, c []float32) {
	if rows <= 0 || n <= 0 {
		return
	}
	_ = l[rows*n-1]
	_ = c[rows*n-1]
	asm.SoftmaxColsNEON(rows, n, l, c)
}

func softmaxColsGradNEON(rows, n int, c, dc, dl []float32) {
	if rows <= 0 || n <= 0 {
		return
	}
	_ = c[rows*n-1]
	_ = dc[rows*n-1]
	_ = dl[rows*n-1]
	asm.SoftmaxColsGradNEON(rows, n, c, dc, dl)
}

// squashKindNEON maps a Squash to the kind argument of the NEON kernels
// (0 Mazzia, 1 Sabour).
func squashKindNEON(kind Squash) int {
	if kind == SquashSabour {
		return 1
	}
	return 0
}

func squashNEON(kind Squash, d, n int, s, v []float32) {
	if d <= 0 || n <= 0 {
		return
	}
	_ = s[d*n-1]
	_ = v[d*n-1]
	asm.SquashNEON(squashKindNEON(kind), d, n, s, v)
}

func squashGradNEON(kind Squash, d, n int, s, dv, ds []float32) {
	if d <= 0 || n <= 0 {
		return
	}
	_ = s[d*n-1]
	_ = dv[d*n-1]
	_ = ds[d*n-1]
	asm.SquashGradNEON(squashKindNEON(kind), d, n, s, dv, ds)
}
