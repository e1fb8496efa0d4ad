//go:build (amd64 || arm64) && !noasm

package kernels

// requantTail requantizes columns n to cols of every row in Go.
func requantTail(rows, cols, n int, q []int8, acc []int32, mul, add []float32, lo float32) {
	if n == cols {
		return
	}
	for r := range rows {
		requantRowRef(q[r*cols+n:(r+1)*cols], acc[r*cols+n:], mul[n:], add[n:], lo)
	}
}
