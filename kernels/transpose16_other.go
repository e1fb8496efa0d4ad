//go:build !amd64 || noasm

package kernels

// transpose16Call is transpose16Ref where no implementation has a
// transpose16 kernel (cur.transpose16 is nil, so it is not called).
func transpose16Call(rows, n int, src []float32, lds, srow int, dst []float32, ldd, drow int) {
	transpose16Ref(rows, n, src, lds, srow, dst, ldd, drow)
}
