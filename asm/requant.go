//go:build (amd64 || arm64) && !noasm

package asm

// requantFits returns cols when the operands of a requantization of
// rows×cols fit their slices and rows > 0, 0 otherwise.
func requantFits(rows, cols int, q []int8, acc []int32, mul, add []float32) int {
	if rows <= 0 || cols <= 0 || rows > maxDim || cols > maxDim ||
		len(q) < rows*cols || len(acc) < rows*cols || len(mul) < cols || len(add) < cols {
		return 0
	}
	return cols
}
