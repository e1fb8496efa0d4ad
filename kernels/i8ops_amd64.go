//go:build amd64 && !noasm

package kernels

import "github.com/capstan-ml/capstan/asm"

// Requant's rows in assembly: avx2 8 values per step, avx512 16 (both
// bit-identical to requantRowRef); the tail of a row that is not a
// multiple of the width stays in Go. The ref table and builds without
// assembly (noasm, other GOARCHes) keep requantRowRef.
var (
	_ = register("avx2", func(o *ops) { o.requantRow = requantRowAVX2 })
	_ = register("avx512", func(o *ops) { o.requantRow = requantRowAVX512 })
)

// requantRowAVX2 is ops.requantRow with asm.RequantRowAVX2 for the
// multiple-of-8 prefix of the row.
func requantRowAVX2(q []int8, acc []int32, mul, add []float32, lo float32) {
	n := asm.RequantRowAVX2(q, acc, mul, add, lo)
	requantRowRef(q[n:], acc[n:], mul[n:], add[n:], lo)
}

// requantRowAVX512 is ops.requantRow with asm.RequantRowAVX512 for the
// multiple-of-16 prefix of the row.
func requantRowAVX512(q []int8, acc []int32, mul, add []float32, lo float32) {
	n := asm.RequantRowAVX512(q, acc, mul, add, lo)
	requantRowRef(q[n:], acc[n:], mul[n:], add[n:], lo)
}
