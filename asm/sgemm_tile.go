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
	// Direct computes an m×n block of C (m a multiple of MR, n of NR)
	// from MR-row panels of A, lda apart, and a B read in place: row p of
	// B is the n values at b[offs[p]:] (see SgemmDirect8x32AVX512). The
	// sums are the same chains as Kernel's on the same values.
	Direct func(m, n, kc int, a []float32, lda int, b []float32, offs []int32, c []float32, ldc int, alpha, beta float32)
	// DirectA computes an m×n block of C (m a multiple of MR, n of NR)
	// from an A read in place, row i the kc values at a[aoffs[i]:], and
	// NR-column panels of B, ldb apart (see SgemmDirectA8x32AVX512). It is
	// nil for tiles of more than 8 rows (one general register per row).
	DirectA func(m, n, kc int, a []float32, aoffs []int32, b []float32, ldb int, c []float32, ldc int, alpha, beta float32)
}

// checkSgemmDirect checks a direct SGEMM of an m×n block of C by tiles of
// mr×nr: m and n multiples of the tile, a holding m/mr panels of kc·mr
// values lda ≥ kc·mr apart, offs kc offsets none negative, b every row it
// names (max(offs)+n values), c (m−1)·ldc+n values with ldc ≥ n. It
// returns false when there is nothing to compute (m or n is 0; kc = 0
// still scales C by beta).
func checkSgemmDirect(kernel string, mr, nr, m, n, kc int, a []float32, lda int, b []float32, offs []int32, c []float32, ldc int) bool {
	strides(kernel, ldc, lda)
	if !dims(kernel, m, n) {
		dims(kernel, kc)
		return false
	}
	dims(kernel, kc)
	checkTiles(kernel, mr, nr, m, n, ldc)
	if lda < kc*mr {
		panic(BoundsError{Kernel: kernel, What: "lda (less than kc·mr)", Need: lda, Have: -1})
	}
	if kc > 0 {
		need(kernel, "a", a, (m/mr-1)*lda+kc*mr-1)
		need(kernel, "offs", offs, kc-1)
		need(kernel, "b", b, maxOffset(kernel, "offs", offs[:kc])+n-1)
	}
	need(kernel, "c", c, (m-1)*ldc+n-1)
	return true
}

// checkSgemmDirectA checks a direct-A SGEMM of an m×n block of C by tiles
// of mr×nr: m and n multiples of the tile, aoffs m offsets none negative, a
// every row they name (max(aoffs)+kc values), b n/nr panels of kc·nr values
// ldb ≥ kc·nr apart, c (m−1)·ldc+n values with ldc ≥ n. It returns false
// when there is nothing to compute (m or n is 0; kc = 0 still scales C by
// beta).
func checkSgemmDirectA(kernel string, mr, nr, m, n, kc int, a []float32, aoffs []int32, b []float32, ldb int, c []float32, ldc int) bool {
	strides(kernel, ldc, ldb)
	if !dims(kernel, m, n) {
		dims(kernel, kc)
		return false
	}
	dims(kernel, kc)
	checkTiles(kernel, mr, nr, m, n, ldc)
	if ldb < kc*nr {
		panic(BoundsError{Kernel: kernel, What: "ldb (less than kc·nr)", Need: ldb, Have: -1})
	}
	need(kernel, "aoffs", aoffs, m-1)
	hi := maxOffset(kernel, "aoffs", aoffs[:m])
	if kc > 0 {
		need(kernel, "a", a, hi+kc-1)
		need(kernel, "b", b, (n/nr-1)*ldb+kc*nr-1)
	}
	need(kernel, "c", c, (m-1)*ldc+n-1)
	return true
}

// checkTiles panics unless m and n are multiples of the tile mr×nr and
// ldc ≥ n.
func checkTiles(kernel string, mr, nr, m, n, ldc int) {
	if m%mr != 0 {
		panic(BoundsError{Kernel: kernel, What: "m (not a multiple of the tile's rows)", Need: m, Have: -1})
	}
	if n%nr != 0 {
		panic(BoundsError{Kernel: kernel, What: "n (not a multiple of the tile's columns)", Need: n, Have: -1})
	}
	if ldc < n {
		panic(BoundsError{Kernel: kernel, What: "ldc (less than n)", Need: ldc, Have: -1})
	}
}

// maxOffset returns the largest of offs, panicking on a negative one.
func maxOffset(kernel, what string, offs []int32) int {
	hi := int32(0)
	for _, o := range offs {
		if o < 0 {
			panic(BoundsError{Kernel: kernel, What: what + " (a negative offset)", Need: int(o), Have: -1})
		}
		hi = max(hi, o)
	}
	return int(hi)
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
