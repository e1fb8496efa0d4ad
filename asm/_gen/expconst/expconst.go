// Package expconst is the one table of exp constants and clamps that every
// generated kernel (AVX2, AVX-512, NEON) uses, so that exp has the same
// semantics on every ISA:
//
//	x = min(max(x, Lo), Hi)                  // NaN stays NaN
//	k := int32(math.RoundToEven(x * Log2E))
//	t := float32(k)
//	r := x - t*Ln2Hi - t*Ln2Lo               // fused multiply-adds, |r| <= ln2/2
//	p := ((((P[0]*r+P[1])*r+P[2])*r+P[3])*r+P[4])*r + P[5]
//	e := (1 + r) + p*(r*r)                   // e^r, Cephes expf polynomial
//	k1 := k >> 1; k2 := k - k1               // 2^k as 2^k1·2^k2, both normal
//	exp = e * 2^k1 * 2^k2                    // exponent fields (k+Bias)<<23
//
// Splitting 2^k keeps both factors normal for k in [-151, 128], so results
// underflow gradually (subnormals kept) to 0 below about -103.9 and overflow
// to +Inf above Hi, like float32(math.Exp(x)), within 2 ulp.
package expconst

// Bits of the float32 constants, as the generators emit them.
const (
	One   uint32 = 0x3f800000 // 1.0
	Hi    uint32 = 0x42b17218 // 88.7228394 = ln(MaxFloat32): upper clamp, +Inf above
	Lo    uint32 = 0xc2d20000 // -105: lower clamp; exp(-105) rounds to 0
	Log2E uint32 = 0x3fb8aa3b // log2(e)
	Ln2Hi uint32 = 0x3f318000 // 0.693359375, ln 2 high part (Cody-Waite)
	Ln2Lo uint32 = 0xb95e8083 // -2.12194440e-4, ln 2 low part: ln 2 = Ln2Hi + Ln2Lo
	Bias  uint32 = 127        // float32 exponent bias (an int32 constant)
)

// P are the Cephes expf coefficients of e^r ≈ 1 + r + r²·P(r), highest
// degree first.
var P = [6]uint32{0x39506967, 0x3ab743ce, 0x3c088908, 0x3d2aa9c1, 0x3e2aaaaa, 0x3f000000}
