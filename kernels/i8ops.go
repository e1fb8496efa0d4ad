package kernels

import (
	"fmt"
	"math"
)

// The element-wise and layout steps of int8 inference around GemmI8Packed
// (the quant package composes them): quantizing float32 activations to
// int8, the int8 im2col of a convolution over NHWC images, the depthwise
// convolution, and turning the int32 sums back into float32 (Dequant) or
// into the next layer's int8 input (Requant). They are plain Go on every
// GOARCH, each its own reference (except Requant, which the avx2, avx512
// and neon implementations run in assembly, bit-identical to requantRef):
// the tests check them against loops written from the doc comments. Each returns an error (never panics) for a
// bad shape or a slice too short, and none allocates.
//
// Rounding is to the nearest integer, ties to even (math.RoundToEven),
// then clamped to [-127, 127] (−128 is never produced, so that the
// symmetric scheme's negation stays exact); a NaN becomes 0.

// roundI8 rounds v to the nearest integer (ties to even) clamped to
// [lo, 127]; NaN gives 0. The rounding adds and subtracts 1.5·2²³, whose
// float32 sum has a unit step: the addition rounds to even exactly as
// math.RoundToEven for |v| ≤ 2²², without leaving float32.
func roundI8(v, lo float32) int8 {
	if v != v {
		return 0
	}
	v = max(lo, min(127, v)) // branchless (compare-and-branch clamps mispredict on ReLU inputs: 3× slower)
	const magic = 0x1.8p23
	return int8(int32(float32(v+magic) - magic))
}

func i8Dims(fn string, dims ...int) error {
	for _, d := range dims {
		if d < 0 || d > maxI8Dim {
			// A copy, so that dims does not escape (no allocation when valid).
			return fmt.Errorf("kernels.%s: bad dimensions %v", fn, append([]int(nil), dims...))
		}
	}
	return nil
}

func i8Len(fn, name string, have, need int) error {
	if have < need {
		return fmt.Errorf("kernels.%s: %s has %d elements, need %d", fn, name, have, need)
	}
	return nil
}

// QuantizeI8 quantizes x into q with the reciprocal inv of the scale:
//
//	for i := range x {
//		q[i] = clamp(roundToEven(x[i]·inv), -127, 127)
//	}
//
// q must be at least as long as x.
func QuantizeI8(q []int8, x []float32, inv float32) error {
	if err := i8Len("QuantizeI8", "q", len(q), len(x)); err != nil {
		return err
	}
	q = q[:len(x)]
	for i, v := range x {
		q[i] = roundI8(v*inv, -127)
	}
	return nil
}

// QuantizeNHWC quantizes b images of c channels of hw pixels each from
// NCHW float32 x to NHWC int8 q:
//
//	q[(n·hw + p)·c + ch] = clamp(roundToEven(x[(n·c + ch)·hw + p]·inv), -127, 127)
func QuantizeNHWC(b, c, hw int, q []int8, x []float32, inv float32) error {
	const fn = "QuantizeNHWC"
	if err := i8Dims(fn, b, c, hw); err != nil {
		return err
	}
	n, ok := mulNonNeg(b, c, hw)
	if !ok {
		return fmt.Errorf("kernels.%s: bad dimensions %v", fn, []int{b, c, hw})
	}
	if err := i8Len(fn, "q", len(q), n); err != nil {
		return err
	}
	if err := i8Len(fn, "x", len(x), n); err != nil {
		return err
	}
	if c == 1 {
		return QuantizeI8(q, x[:n], inv)
	}
	for bi := range b {
		xb, qb := x[bi*c*hw:][:c*hw], q[bi*c*hw:][:c*hw]
		for ch := range c {
			for p, v := range xb[ch*hw : (ch+1)*hw] {
				qb[p*c+ch] = roundI8(v*inv, -127)
			}
		}
	}
	return nil
}

// QuantizeCaps quantizes b samples of n capsules of dimension d from the
// component-major float32 u (u[(s·d + l)·n + i], as SquashForward writes)
// to q grouped by capsule, the A operands of the votes' GEMMs (one b×d
// matrix per input capsule i):
//
//	q[(i·b + s)·d + l] = clamp(roundToEven(u[(s·d + l)·n + i]·inv), -127, 127)
func QuantizeCaps(b, d, n int, q []int8, u []float32, inv float32) error {
	const fn = "QuantizeCaps"
	if err := i8Dims(fn, b, d, n); err != nil {
		return err
	}
	sz, ok := mulNonNeg(b, d, n)
	if !ok {
		return fmt.Errorf("kernels.%s: bad dimensions %v", fn, []int{b, d, n})
	}
	if err := i8Len(fn, "q", len(q), sz); err != nil {
		return err
	}
	if err := i8Len(fn, "u", len(u), sz); err != nil {
		return err
	}
	for s := range b {
		for l := range d {
			row := u[(s*d+l)*n:][:n]
			for i, v := range row {
				q[(i*b+s)*d+l] = roundI8(v*inv, -127)
			}
		}
	}
	return nil
}

// I8ColsLen returns the length of the int8 im2col matrix of one image of
// the convolution sh (Groups 1): OutH·OutW rows of K = KH·KW·InC.
func (s ConvShape) I8ColsLen() int { return s.OutH() * s.OutW() * s.KH * s.KW * s.InC }

// I8AccLen returns the length of the int32 sums of one image: OutH·OutW
// rows of OutC.
func (s ConvShape) I8AccLen() int { return s.OutH() * s.OutW() * s.OutC }

func i8ConvCheck(fn string, s ConvShape) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("kernels.%s: %w", fn, err)
	}
	if float64(s.OutH()*s.OutW())*float64(s.KH*s.KW*s.InC) > maxI8Dim {
		return fmt.Errorf("kernels.%s: the im2col matrix of one image is larger than %d", fn, maxI8Dim)
	}
	return nil
}

// Im2colI8 writes the receptive fields of one NHWC int8 image x (InH·InW
// pixels of InC channels) of the convolution sh (Groups must be 1) as the
// rows of cols, one row of K = KH·KW·InC per output position (oh, ow),
// ordered (kh, kw, c), zero where the field leaves the image (padding):
//
//	cols[(oh·OutW + ow)·K + (kh·KW + kw)·InC + c] = x[(ih·InW + iw)·InC + c]
//	with ih = oh·StrideH − PadH + kh, iw = ow·StrideW − PadW + kw (0 outside)
//
// With the weights reordered to (OutC, KH, KW, InC) rows, GemmI8 of cols
// by the weights is the convolution of that image. sh.Batch is ignored.
func Im2colI8(sh ConvShape, cols []int8, x []int8) error {
	const fn = "Im2colI8"
	sh.Batch = 1
	if err := i8ConvCheck(fn, sh); err != nil {
		return err
	}
	if sh.Groups != 1 {
		return fmt.Errorf("kernels.%s: Groups=%d, want 1", fn, sh.Groups)
	}
	if err := i8Len(fn, "cols", len(cols), sh.I8ColsLen()); err != nil {
		return err
	}
	if err := i8Len(fn, "x", len(x), sh.XLen()); err != nil {
		return err
	}
	C, OH, OW := sh.InC, sh.OutH(), sh.OutW()
	K := sh.KH * sh.KW * C
	run := sh.KW * C // one kernel row of the field: KW pixels of C channels
	for oh := range OH {
		for ow := range OW {
			row := cols[(oh*OW+ow)*K:][:K]
			iw0 := ow*sh.StrideW - sh.PadW
			for kh := range sh.KH {
				dst := row[kh*run:][:run]
				ih := oh*sh.StrideH - sh.PadH + kh
				if ih < 0 || ih >= sh.InH {
					clear(dst)
					continue
				}
				src := x[ih*sh.InW*C:][:sh.InW*C]
				if iw0 >= 0 && iw0+sh.KW <= sh.InW {
					copy(dst, src[iw0*C:][:run])
					continue
				}
				for kw := range sh.KW {
					d := dst[kw*C:][:C]
					if iw := iw0 + kw; iw >= 0 && iw < sh.InW {
						copy(d, src[iw*C:][:C])
					} else {
						clear(d)
					}
				}
			}
		}
	}
	return nil
}

// DepthwiseI8 computes the int32 sums of a depthwise convolution (Groups =
// InC = OutC) of one NHWC int8 image x with the int8 weights w in (KH, KW,
// C) order, into acc in NHWC order:
//
//	acc[(oh·OutW + ow)·C + c] = Σ_{kh,kw} x[(ih·InW + iw)·C + c]·w[(kh·KW + kw)·C + c]
//
// (ih, iw as in Im2colI8, padding contributing 0). acc is overwritten;
// sh.Batch is ignored.
func DepthwiseI8(sh ConvShape, acc []int32, x, w []int8) error {
	const fn = "DepthwiseI8"
	sh.Batch = 1
	if err := i8ConvCheck(fn, sh); err != nil {
		return err
	}
	C := sh.InC
	if sh.Groups != C || sh.OutC != C {
		return fmt.Errorf("kernels.%s: Groups=%d, InC=%d, OutC=%d: want all equal", fn, sh.Groups, C, sh.OutC)
	}
	if err := i8Len(fn, "acc", len(acc), sh.I8AccLen()); err != nil {
		return err
	}
	if err := i8Len(fn, "x", len(x), sh.XLen()); err != nil {
		return err
	}
	if err := i8Len(fn, "w", len(w), sh.KH*sh.KW*C); err != nil {
		return err
	}
	OH, OW := sh.OutH(), sh.OutW()
	for oh := range OH {
		for ow := range OW {
			a := acc[(oh*OW+ow)*C:][:C]
			clear(a)
			for kh := range sh.KH {
				ih := oh*sh.StrideH - sh.PadH + kh
				if ih < 0 || ih >= sh.InH {
					continue
				}
				for kw := range sh.KW {
					iw := ow*sh.StrideW - sh.PadW + kw
					if iw < 0 || iw >= sh.InW {
						continue
					}
					xs := x[(ih*sh.InW+iw)*C:][:C]
					ws := w[(kh*sh.KW+kw)*C:][:C]
					for c, v := range xs {
						a[c] += int32(v) * int32(ws[c])
					}
				}
			}
		}
	}
	return nil
}

// Requant turns the int32 sums acc of rows×cols (row-major) into the int8
// input of the next layer, with one multiplier and one offset per column
// (the next layer's 1/scale folded in):
//
//	q[r·cols + c] = clamp(roundToEven(float32(acc[r·cols + c])·mul[c] + add[c]), lo, 127)
//
// with lo = 0 when relu is set (the ReLU of the float layer), −127 otherwise.
// The product is rounded to float32 before the addition (no fused
// multiply-add on any GOARCH), so that every implementation gives the same
// bytes; ±Inf clamp to 127 and lo. A NaN gives 0, but none arises from an
// integer acc unless mul or add holds a NaN or an infinity.
func Requant(rows, cols int, q []int8, acc []int32, mul, add []float32, relu bool) error {
	const fn = "Requant"
	if err := i8Dims(fn, rows, cols); err != nil {
		return err
	}
	n, ok := mulNonNeg(rows, cols)
	if !ok {
		return fmt.Errorf("kernels.%s: bad dimensions %v", fn, []int{rows, cols})
	}
	if err := joinErr(i8Len(fn, "q", len(q), n), i8Len(fn, "acc", len(acc), n), i8Len(fn, "mul", len(mul), cols), i8Len(fn, "add", len(add), cols)); err != nil {
		return err
	}
	var lo float32 = -127
	if relu {
		lo = 0
	}
	cur.requant(rows, cols, q[:n], acc[:n], mul[:cols], add[:cols], lo)
	return nil
}

// requantRef is the reference of ops.requant: Requant's loop over rows.
func requantRef(rows, cols int, q []int8, acc []int32, mul, add []float32, lo float32) {
	for r := range rows {
		requantRowRef(q[r*cols:][:cols], acc[r*cols:][:cols], mul, add, lo)
	}
}

// requantRowRef is one row of requantRef: q[c] for c < len(q).
// The explicit float32 conversion rounds the product (the Go spec forbids
// fusing it with the addition), as the SIMD rows' VMULPS then VADDPS do.
func requantRowRef(q []int8, acc []int32, mul, add []float32, lo float32) {
	acc, mul, add = acc[:len(q)], mul[:len(q)], add[:len(q)]
	for c, v := range acc {
		q[c] = roundI8(float32(float32(v)*mul[c])+add[c], lo)
	}
}

// Dequant turns the int32 sums acc of rows×cols (row-major) into float32
// with one multiplier and one offset (the bias) per column, optionally
// transposed (the NCHW output of a convolution whose sums are NHWC):
//
//	y[r·cols + c] = float32(acc[r·cols + c])·mul[c] + add[c]   (transpose false)
//	y[c·rows + r] = float32(acc[r·cols + c])·mul[c] + add[c]   (transpose true)
//
// add may be nil (no offset).
func Dequant(rows, cols int, y []float32, acc []int32, mul, add []float32, transpose bool) error {
	const fn = "Dequant"
	if err := i8Dims(fn, rows, cols); err != nil {
		return err
	}
	n, ok := mulNonNeg(rows, cols)
	if !ok {
		return fmt.Errorf("kernels.%s: bad dimensions %v", fn, []int{rows, cols})
	}
	if err := joinErr(i8Len(fn, "y", len(y), n), i8Len(fn, "acc", len(acc), n), i8Len(fn, "mul", len(mul), cols)); err != nil {
		return err
	}
	if add != nil {
		if err := i8Len(fn, "add", len(add), cols); err != nil {
			return err
		}
	}
	mul = mul[:cols]
	for r := range rows {
		a := acc[r*cols:][:cols]
		for c, v := range a {
			f := float32(v) * mul[c]
			if add != nil {
				f += add[c]
			}
			if transpose {
				y[c*rows+r] = f
			} else {
				y[r*cols+c] = f
			}
		}
	}
	return nil
}

// DequantVotes scatters the int32 votes of the ni input capsules i0 …
// i0+ni−1 into the float32 votes uhat (b, nOut, dOut, nIn) of
// VotesForward, with one multiplier per (input, output) capsule. acc holds
// one b×(nOut·dOut) matrix per capsule of the block, as GemmI8Packed writes
// them for one capsule's packed matrices, and mul is (nIn, nOut):
//
//	uhat[((s·nOut + j)·dOut + k)·nIn + i0 + ii] = float32(acc[(ii·b + s)·nOut·dOut + j·dOut + k])·mul[(i0 + ii)·nOut + j]
//
// A block of 16 capsules writes whole 64-byte lines of uhat: one capsule
// at a time would write one value per line of a tensor larger than the
// cache (Sabour's at batch 32: 24 MB).
func DequantVotes(b, nOut, dOut, nIn, i0, ni int, uhat []float32, acc []int32, mul []float32) error {
	const fn = "DequantVotes"
	if err := i8Dims(fn, b, nOut, dOut, nIn, ni); err != nil {
		return err
	}
	if i0 < 0 || ni < 1 || i0+ni > nIn {
		return fmt.Errorf("kernels.%s: capsules %d..%d of %d", fn, i0, i0+ni-1, nIn)
	}
	row, ok1 := mulNonNeg(nOut, dOut)
	n, ok2 := mulNonNeg(b, row, nIn)
	na, ok3 := mulNonNeg(ni, b, row)
	if !ok1 || !ok2 || !ok3 {
		return fmt.Errorf("kernels.%s: bad dimensions %v", fn, []int{b, nOut, dOut, nIn, ni})
	}
	if err := joinErr(i8Len(fn, "uhat", len(uhat), n), i8Len(fn, "acc", len(acc), na), i8Len(fn, "mul", len(mul), nIn*nOut)); err != nil {
		return err
	}
	for s := range b {
		for j := range nOut {
			for k := range dOut {
				jk := j*dOut + k
				out := uhat[(s*row+jk)*nIn+i0:][:ni]
				for ii := range out {
					out[ii] = float32(acc[(ii*b+s)*row+jk]) * mul[(i0+ii)*nOut+j]
				}
			}
		}
	}
	return nil
}

// maxI8Prod bounds the products of mulNonNeg: maxI8Dim², or on a 32-bit
// GOARCH math.MaxInt, the most an int holds.
const maxI8Prod = min(maxI8Dim*maxI8Dim, math.MaxInt)

// mulNonNeg multiplies non-negative sizes, reporting overflow past
// maxI8Prod.
func mulNonNeg(dims ...int) (int, bool) {
	p := 1
	for _, d := range dims {
		if d < 0 {
			return 0, false
		}
		if d != 0 && p > maxI8Prod/d {
			return 0, false
		}
		p *= d
	}
	return p, true
}

func joinErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
