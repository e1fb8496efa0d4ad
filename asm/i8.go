package asm

// Geometry of the packed int8 weights read by the int8 micro-kernels
// (GemmI8KernelVNNI, GemmI8KernelAVX2; see asm/_gen/amd64i8): columns come
// in blocks of I8BlockCols, and a block stores, for every group g of 4
// consecutive k, the 4 bytes of each of its columns one after the other:
// byte q of column j of the block is at g·I8GroupBytes + 4·j + q.
const (
	// I8BlockCols is the number of columns in one packed block.
	I8BlockCols = 32
	// I8GroupBytes is the size in bytes of one group of 4 k of a block.
	I8GroupBytes = 4 * I8BlockCols
	// I8RowsVNNI is the largest mr of GemmI8KernelVNNI.
	I8RowsVNNI = 8
	// I8RowsAVX2 is the largest mr of GemmI8KernelAVX2.
	I8RowsAVX2 = 4
)
