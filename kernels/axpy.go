package kernels

import "fmt"

// Axpy computes y += alpha·x over the first len(x) elements of y:
//
//	for i, v := range x {
//		y[i] += alpha * v
//	}
//
// on the current implementation's GER kernel (a 1×n rank-1 update, one
// fused multiply-add per element on the SIMD implementations, so the sum
// is rounded once; the loop above rounds alpha·v first, and the two agree
// bit for bit when alpha is a power of two; an element's result does not
// depend on the length of x). It is what the trainer sums its replicas'
// gradients with. y shorter than x is an error; it does not
// allocate.
func Axpy(alpha float32, x, y []float32) error {
	if len(y) < len(x) {
		return fmt.Errorf("kernels.Axpy: y has %d elements, x %d", len(y), len(x))
	}
	if len(x) == 0 {
		return nil
	}
	// Every length on the implementation's kernel, short ones too: an
	// element's result then does not depend on the length of the slice it
	// is in (the trainer's replicas reduce ranges of uneven lengths).
	cur.axpy(alpha, x, y[:len(x)])
	return nil
}
