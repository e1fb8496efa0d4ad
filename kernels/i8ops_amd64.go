//go:build amd64 && !noasm

package kernels

import "github.com/capstan-ml/capstan/asm"

// Requant in assembly: avx2 8 values per step, avx512 16 (both
// bit-identical to requantRef), over all the rows in one call; the columns
// past the last multiple of the width stay in Go. The ref table and builds
// without assembly (noasm, other GOARCHes) keep requantRef.
var (
	_ = register("avx2", func(o *ops) { o.requant = requantAVX2 })
	_ = register("avx512", func(o *ops) { o.requant = requantAVX512 })
)

// requantAVX2 is ops.requant with asm.RequantRowsAVX2.
func requantAVX2(rows, cols int, q []int8, acc []int32, mul, add []float32, lo float32) {
	requantTail(rows, cols, asm.RequantRowsAVX2(rows, cols, q, acc, mul, add, lo), q, acc, mul, add, lo)
}

// requantAVX512 is ops.requant with asm.RequantRowsAVX512.
func requantAVX512(rows, cols int, q []int8, acc []int32, mul, add []float32, lo float32) {
	requantTail(rows, cols, asm.RequantRowsAVX512(rows, cols, q, acc, mul, add, lo), q, acc, mul, add, lo)
}
