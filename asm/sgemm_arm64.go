//go:build arm64 && !noasm

package asm

// SgemmKernel8x12NEON computes one 8×12 tile of C from packed panels with
// NEON: a holds kc·8 values (a[p*8+i] is row i of step p), b holds kc·12
// values (b[p*12+j]), and c at least 7·ldc+12 values. Lengths are not
// checked. It is equivalent to
//
//	for i := 0; i < 8; i++ {
//		for j := 0; j < 12; j++ {
//			var s float32
//			for p := 0; p < kc; p++ {
//				s += a[p*8+i] * b[p*12+j]
//			}
//			if beta == 0 {
//				c[i*ldc+j] = alpha * s // c not read
//			} else {
//				c[i*ldc+j] = alpha*s + beta*c[i*ldc+j]
//			}
//		}
//	}
//
//go:noescape
func SgemmKernel8x12NEON(kc int, a, b, c []float32, ldc int, alpha, beta float32)
