package asm

// SgemmTile describes one SGEMM micro-kernel: it computes an MR×NR tile of
// C from packed panels, with the semantics of SgemmKernel6x16AVX2 for its
// own MR and NR (a holds kc·MR values, a[p*MR+i]; b holds kc·NR, b[p*NR+j];
// c at least (MR−1)·ldc+NR). Kernel checks its arguments and panics with a
// BoundsError on a short slice or bad stride.
type SgemmTile struct {
	Name   string // e.g. "avx512-8x32": ISA, then MR×NR
	ISA    string // the package kernels implementation it needs: "avx2", "avx512"
	MR, NR int
	Kernel func(kc int, a, b, c []float32, ldc int, alpha, beta float32)
}

// checkSgemmPackA checks the packing of rows rows of kc values each, row
// stride lda, into dst (rows·kc values). It returns false when kc = 0.
func checkSgemmPackA(kernel string, rows, kc int, a []float32, lda int, dst []float32) bool {
	strides(kernel, lda)
	if !dims(kernel, kc) {
		return false
	}
	need(kernel, "a", a, (rows-1)*lda+kc-1)
	need(kernel, "dst", dst, rows*kc-1)
	return true
}
