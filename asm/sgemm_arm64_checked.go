//go:build arm64 && !noasm

package asm

// The SGEMM micro-kernels. Each computes one mr×nr tile of C from packed
// panels: a holds kc·mr values (a[p*mr+i] is row i of step p), b holds
// kc·nr values (b[p*nr+j]), and c at least (mr−1)·ldc+nr values, ldc ≥ nr.
// It checks those lengths (bounds.go) and panics with a BoundsError if one
// is short, then calls its assembly body, generated in sgemm_arm64.s by
// asm/_gen/arm64 from one template for every tile. kc = 0 only scales the
// tile of C by beta. Each is equivalent to
//
//	for i := 0; i < mr; i++ {
//		for j := 0; j < nr; j++ {
//			var s float32
//			for p := 0; p < kc; p++ {
//				s += a[p*mr+i] * b[p*nr+j]
//			}
//			if beta == 0 {
//				c[i*ldc+j] = alpha * s // c not read
//			} else {
//				c[i*ldc+j] = alpha*s + beta*c[i*ldc+j]
//			}
//		}
//	}

// SgemmKernel8x12NEON computes one 8×12 tile of C (mr = 8, nr = 12) with
// NEON, as described above; package kernels uses it.
func SgemmKernel8x12NEON(kc int, a, b, c []float32, ldc int, alpha, beta float32) {
	if checkSgemmKernel("SgemmKernel8x12NEON", 8, 12, kc, a, b, c, ldc) {
		sgemmKernel8x12NEON(kc, a, b, c, ldc, alpha, beta)
	}
}

// SgemmKernel8x8NEON computes one 8×8 tile of C (mr = 8, nr = 8) with
// NEON, as described above, for tile sweeps.
func SgemmKernel8x8NEON(kc int, a, b, c []float32, ldc int, alpha, beta float32) {
	if checkSgemmKernel("SgemmKernel8x8NEON", 8, 8, kc, a, b, c, ldc) {
		sgemmKernel8x8NEON(kc, a, b, c, ldc, alpha, beta)
	}
}

// SgemmKernel12x8NEON computes one 12×8 tile of C (mr = 12, nr = 8) with
// NEON, as described above, for tile sweeps.
func SgemmKernel12x8NEON(kc int, a, b, c []float32, ldc int, alpha, beta float32) {
	if checkSgemmKernel("SgemmKernel12x8NEON", 12, 8, kc, a, b, c, ldc) {
		sgemmKernel12x8NEON(kc, a, b, c, ldc, alpha, beta)
	}
}
