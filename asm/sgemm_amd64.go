//go:build amd64 && !noasm

package asm

// SgemmKernel6x16AVX2 computes one 6×16 tile of C from packed panels with
// AVX2+FMA: a holds kc·6 values (a[p*6+i] is row i of step p), b holds kc·16
// values (b[p*16+j]), and c at least 5·ldc+16 values. Lengths are not
// checked. It is equivalent to
//
//	for i := 0; i < 6; i++ {
//		for j := 0; j < 16; j++ {
//			var s float32
//			for p := 0; p < kc; p++ {
//				s += a[p*6+i] * b[p*16+j]
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
func SgemmKernel6x16AVX2(kc int, a, b, c []float32, ldc int, alpha, beta float32)

// SgemmKernel8x32AVX512 computes one 8×32 tile of C from packed panels
// with AVX-512F: a holds kc·8 values (a[p*8+i]), b holds kc·32 values
// (b[p*32+j]), and c at least 7·ldc+32 values. Lengths are not checked. It
// is equivalent to
//
//	for i := 0; i < 8; i++ {
//		for j := 0; j < 32; j++ {
//			var s float32
//			for p := 0; p < kc; p++ {
//				s += a[p*8+i] * b[p*32+j]
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
func SgemmKernel8x32AVX512(kc int, a, b, c []float32, ldc int, alpha, beta float32)
