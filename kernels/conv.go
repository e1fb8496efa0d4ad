package kernels

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// ConvShape describes a 2-D convolution (cross-correlation, as in PyTorch's
// nn.Conv2d) over a batch of images.
//
// Layouts are PyTorch's own, so checkpoints need no conversion:
//   - x (input):  NCHW, Batch×InC×InH×InW, x[((n·InC+c)·InH+h)·InW+w]
//   - y (output): NCHW, Batch×OutC×OutH×OutW
//   - w (weight): OIHW, OutC×(InC/Groups)×KH×KW
//   - bias:       OutC
//
// Output channel o belongs to group g = o/(OutC/Groups) and sees input
// channels g·(InC/Groups) … (g+1)·(InC/Groups)−1. Padding is zero padding
// of PadH rows above and below and PadW columns left and right.
type ConvShape struct {
	Batch, InC, InH, InW int
	OutC, KH, KW         int
	StrideH, StrideW     int
	PadH, PadW           int
	Groups               int
}

// OutH returns the output height ⌊(InH + 2·PadH − KH)/StrideH⌋ + 1 (0 for a
// non-positive stride).
func (s ConvShape) OutH() int {
	if s.StrideH <= 0 {
		return 0
	}
	return (s.InH+2*s.PadH-s.KH)/s.StrideH + 1
}

// OutW returns the output width ⌊(InW + 2·PadW − KW)/StrideW⌋ + 1 (0 for a
// non-positive stride).
func (s ConvShape) OutW() int {
	if s.StrideW <= 0 {
		return 0
	}
	return (s.InW+2*s.PadW-s.KW)/s.StrideW + 1
}

// XLen returns the number of input elements Batch·InC·InH·InW.
func (s ConvShape) XLen() int { return s.Batch * s.InC * s.InH * s.InW }

// YLen returns the number of output elements Batch·OutC·OutH·OutW.
func (s ConvShape) YLen() int { return s.Batch * s.OutC * s.OutH() * s.OutW() }

// WLen returns the number of weight elements OutC·(InC/Groups)·KH·KW.
func (s ConvShape) WLen() int {
	if s.Groups <= 0 {
		return 0
	}
	return s.OutC * (s.InC / s.Groups) * s.KH * s.KW
}

// FLOPs returns 2·Batch·OutC·OutH·OutW·(InC/Groups)·KH·KW, the multiply-add
// count of the forward pass (also that of each backward pass), bias excluded.
func (s ConvShape) FLOPs() float64 {
	return 2 * float64(s.Batch) * float64(s.OutC) * float64(s.OutH()*s.OutW()) * float64(s.InC/max(s.Groups, 1)*s.KH*s.KW)
}

// Validate reports the first impossible field of the shape: negative batch,
// non-positive channel counts, image or kernel sizes, strides or groups,
// negative padding, channels not divisible by Groups, or a kernel larger
// than the padded input. Batch 0 is valid (every call is then a no-op).
func (s ConvShape) Validate() error {
	pos := []struct {
		name string
		v    int
	}{
		{"InC", s.InC}, {"InH", s.InH}, {"InW", s.InW}, {"OutC", s.OutC},
		{"KH", s.KH}, {"KW", s.KW}, {"StrideH", s.StrideH}, {"StrideW", s.StrideW}, {"Groups", s.Groups},
	}
	if s.Batch < 0 {
		return fmt.Errorf("kernels: conv shape: Batch=%d is negative", s.Batch)
	}
	for _, f := range pos {
		if f.v <= 0 {
			return fmt.Errorf("kernels: conv shape: %s=%d must be positive", f.name, f.v)
		}
	}
	if s.PadH < 0 {
		return fmt.Errorf("kernels: conv shape: PadH=%d is negative", s.PadH)
	}
	if s.PadW < 0 {
		return fmt.Errorf("kernels: conv shape: PadW=%d is negative", s.PadW)
	}
	if s.InC%s.Groups != 0 {
		return fmt.Errorf("kernels: conv shape: InC=%d is not divisible by Groups=%d", s.InC, s.Groups)
	}
	if s.OutC%s.Groups != 0 {
		return fmt.Errorf("kernels: conv shape: OutC=%d is not divisible by Groups=%d", s.OutC, s.Groups)
	}
	if s.KH > s.InH+2*s.PadH {
		return fmt.Errorf("kernels: conv shape: KH=%d is larger than the padded input height InH+2·PadH=%d", s.KH, s.InH+2*s.PadH)
	}
	if s.KW > s.InW+2*s.PadW {
		return fmt.Errorf("kernels: conv shape: KW=%d is larger than the padded input width InW+2·PadW=%d", s.KW, s.InW+2*s.PadW)
	}
	// Guard against int overflow in the size products: 2^40, or on a
	// 32-bit GOARCH math.MaxInt, the most an int holds.
	const limit = min(1<<40, math.MaxInt)
	if float64(s.Batch)*float64(s.InC)*float64(s.InH)*float64(s.InW) > limit ||
		float64(s.OutC)*float64(s.InC)*float64(s.KH)*float64(s.KW) > limit ||
		float64(s.Batch)*float64(s.OutC)*float64(s.InH+2*s.PadH)*float64(s.InW+2*s.PadW) > limit {
		what := "2^40"
		if limit != 1<<40 {
			what = strconv.Itoa(limit)
		}
		return fmt.Errorf("kernels: conv shape %+v: tensors larger than %s elements", s, what)
	}
	return nil
}

// Algorithm selection and scratch planning.
//
// The general path lowers the convolution to GEMMs: im2col writes the
// receptive fields of a chunk of nb images as a K×(nb·P) matrix (K =
// (InC/Groups)·KH·KW rows, P = OutH·OutW output positions per image), and
// Y_g = W_g·col with W_g the OIHW weights of group g read in place as an
// (OutC/Groups)×K row-major matrix.
//
// Chunks of several images: a per-image GEMM is skinny when P is small.
// Sabour's primary capsules have P = 36, so a per-image GEMM is
// 256×36×20736: the blocked GEMM packs op(A), the 21 MB weight matrix,
// once per call (M·K memory traffic for M·N·K multiply-adds: at N = 36
// about as much time as the arithmetic) and its micro-kernel runs on
// 36-column edges. When P < convMinCols, nb is the largest image count with
// nb·P ≤ convTargetCols, balanced over the batch (32 images of 36
// columns: 2 chunks of 16 = 576 columns rather than 28 + 4), so the
// weights are packed once per chunk and the micro-kernel sees full column
// panels. Measured on the primary capsules (avx512, batch 32): 29 GFLOP/s
// per image, 64-80 GFLOP/s in chunks of 16. For wide outputs (P ≥
// convMinCols) images stay one per GEMM; see convMinCols.
//
// Channel slabs: the full K×(nb·P) buffer of that chunk would be 20736×576
// floats (48 MB). The reduction is instead split into slabs of cs input
// channels (cs·KH·KW rows, at most convMaxColFloats floats of col), and
// each slab is one GEMM accumulating into the output (beta = 1 after the
// first slab). The col slab is then consumed by the GEMM's packing while
// it is still in cache, the scratch stays a few MB, and the weights are
// still packed once per chunk in total.
//
// The GEMM result of a chunk lands in a scratch (OutC/Groups)×(nb·P)
// matrix that is scattered into NCHW y with the bias (when nb = 1 the GEMM
// writes y directly). Backward data is dcol = W_gᵀ·dY per slab followed by
// col2im; backward filter is dW_g[:, slab] += dY·colᵀ per slab.
//
// The depthwise case (InC/Groups = OutC/Groups = 1) would be a GEMM with one
// row; it runs as a direct loop instead and needs no scratch.
//
// The planning knobs below are variables only so that tests can force tiny
// chunks and slabs; they are tuning constants, not configuration.
var (
	// convTargetCols bounds the GEMM width nb·P when choosing nb. 1024
	// measured at least as fast as 512 on every benchmark shape (deep-c3:
	// 40 against 25-32 GFLOP/s) although the GEMM drivers' nc is 512.
	convTargetCols = 1024
	// convMinCols is the per-image GEMM width P from which images are not
	// batched: the per-image path gathers straight from NCHW and lets the
	// GEMM write y, while a batched chunk pays a transpose of x and a
	// scatter of OutC/Groups·nb·P outputs, which costs more than it saves
	// once P is this wide (Sabour's conv1, P = 400, K = 81: 69 GFLOP/s per
	// image against 54 in pairs).
	convMinCols = 256
	// convMaxColFloats caps the im2col slab (cs·KH·KW·nb·P floats, 4 MiB);
	// a slab of one channel is always allowed.
	convMaxColFloats = 1 << 20
)

// convDirect reports whether the shape runs the direct (depthwise) loops.
func (s ConvShape) convDirect() bool {
	return s.InC == s.Groups && s.OutC == s.Groups
}

// convPlan returns nb, the number of images lowered into one GEMM, and cs,
// the number of input channels per im2col slab (see above).
func (s ConvShape) convPlan() (nb, cs int) {
	p := s.OutH() * s.OutW()
	cg := s.InC / s.Groups
	nb = min(max(convTargetCols/p, 1), s.Batch)
	if p >= convMinCols {
		nb = 1
	}
	chunks := (s.Batch + nb - 1) / nb
	nb = (s.Batch + chunks - 1) / chunks
	rowFloats := s.KH * s.KW * nb * p // col floats per channel
	cs = min(max(convMaxColFloats/rowFloats, 1), cg)
	slabs := (cg + cs - 1) / cs
	cs = (cg + slabs - 1) / slabs
	return nb, cs
}

// WorkSize returns the number of float32 of scratch that ConvForward,
// ConvBackwardData and ConvBackwardFilter need for this shape (the same for
// all three, a function of the shape only, so a static graph can plan its
// memory once). It is 0 for the depthwise direct path and for Batch 0, and
// meaningless for a shape that fails Validate.
func (s ConvShape) WorkSize() int {
	if s.Batch <= 0 || s.Groups <= 0 || s.convDirect() {
		return 0
	}
	nb, cs := s.convPlan()
	p := s.OutH() * s.OutW()
	n := nb * p * (cs*s.KH*s.KW + s.OutC/s.Groups)
	if nb > 1 {
		n += cs * s.InH * s.InW * nb // CHWN input slab
	}
	return max(n, s.directWorkSize())
}

// ArenaWorkSize is WorkSize plus the packing space of the SGEMM products
// the convolution makes (SgemmWorkSize of the largest of them: the
// forward's og × nb·p × cs·kh·kw, the backward-data's and the filter
// gradient's transposes; SgemmWorkSize grows with each dimension, so these
// bounds cover every chunk): with work of at least this many floats, ConvForward,
// ConvBackwardData and ConvBackwardFilter use no memory outside their
// arguments (with WorkSize only, the products take their packing buffers
// from the driver's own free list). The results are the same bit for bit.
func (s ConvShape) ArenaWorkSize() int {
	ws := s.WorkSize()
	if ws == 0 {
		return 0
	}
	nb, cs := s.convPlan()
	og, ld, ck := s.OutC/s.Groups, nb*s.OutH()*s.OutW(), cs*s.KH*s.KW
	k := s.InC / s.Groups * s.KH * s.KW // the implicit GEMMs' whole reduction
	return ws + max(SgemmWorkSize(og, ld, ck), SgemmWorkSize(ck, ld, og), SgemmWorkSize(og, ck, ld),
		convPackSize(og, ld, k), convPackSize(k, ld, og), convPackSize(og, k, ld))
}

// convPackSize is the packing space of an implicit-GEMM product of m×n×k
// (conv_implicit.go) on the largest driver of every implementation this
// binary can Use (the driver packs even the products that plain Sgemm
// would hand to its loops).
func convPackSize(m, n, k int) int {
	ws := 0
	for _, o := range tables {
		if o.sgemmDriver != nil {
			ws = max(ws, o.sgemmDriver.packSize(m, n, k))
		}
	}
	return ws
}

// convGemmWork is the part of work past WorkSize, for the products.
func convGemmWork(s ConvShape, work []float32) []float32 { return work[s.WorkSize():] }

// convCheck validates the shape and the length of the scratch.
func convCheck(fn string, s ConvShape, work []float32) error {
	if err := s.Validate(); err != nil {
		return fmt.Errorf("kernels.%s: %w", fn, err)
	}
	if ws := s.WorkSize(); len(work) < ws {
		return fmt.Errorf("kernels.%s: work has %d elements, shape %+v needs WorkSize()=%d", fn, len(work), s, ws)
	}
	return nil
}

// convCheckLen reports a slice shorter than need.
func convCheckLen(fn, name string, have, need int) error {
	if have < need {
		return fmt.Errorf("kernels.%s: %s has %d elements, need %d", fn, name, have, need)
	}
	return nil
}

// ConvForward computes y = conv(x, w) + bias for the shape sh (layouts in
// ConvShape). y is overwritten; bias may be nil (no bias). work is caller
// scratch of at least sh.WorkSize() floats whose contents are ignored and
// clobbered. It does not allocate and returns an error for an invalid
// shape or a slice that is too short. NaN and Inf propagate.
func ConvForward(sh ConvShape, y, x, w, bias, work []float32) error {
	return convForward("ConvForward", sh, y, x, w, bias, work, false)
}

// ConvForwardReLU is ConvForward followed by y = max(y, 0), the ReLU
// applied to each chunk of images while its output is still in cache
// rather than in a second pass over y.
func ConvForwardReLU(sh ConvShape, y, x, w, bias, work []float32) error {
	return convForward("ConvForwardReLU", sh, y, x, w, bias, work, true)
}

func convForward(fn string, sh ConvShape, y, x, w, bias, work []float32, relu bool) error {
	if err := convCheck(fn, sh, work); err != nil {
		return err
	}
	if err := errors.Join(convCheckLen(fn, "y", len(y), sh.YLen()), convCheckLen(fn, "x", len(x), sh.XLen()),
		convCheckLen(fn, "w", len(w), sh.WLen())); err != nil {
		return err
	}
	if bias != nil && len(bias) < sh.OutC {
		return fmt.Errorf("kernels.%s: bias has %d elements, OutC=%d", fn, len(bias), sh.OutC)
	}
	if sh.Batch == 0 {
		return nil
	}
	if f, mr, nr := convDirectKernel(); f != nil {
		if g, ok := sh.directForwardGeom(mr, nr); ok {
			convDirectForward(f, mr, g, sh, y, x, w, nil, bias, work, relu)
			return nil
		}
	}
	switch drv := convDriver(); {
	case sh.convDirect():
		convDepthwiseForward(sh, y, x, w, bias)
		if relu {
			reluRows(y[:sh.YLen()], y)
		}
	case drv != nil:
		convImplicitForward(drv, sh, y, x, w, false, bias, work, relu)
	default:
		convGemmForward(sh, y, x, w, bias, work)
		if relu {
			reluRows(y[:sh.YLen()], y)
		}
	}
	return nil
}

// ConvBackward is the backward pass of ConvForward (y nil) or of
// ConvForwardReLU (y its output): it masks dy in place by y > 0 when y is
// given (dy becomes the gradient before the ReLU), accumulates dw and
// dbias as ConvBackwardFilter does and, when dx is not nil, overwrites dx
// as ConvBackwardData does. On the implicit-GEMM path it goes through the
// batch once, chunk by chunk, so each chunk of dy is masked, summed and
// used by both products while it is in cache. The results are those of
// ReLUBackward, ConvBackwardFilter and ConvBackwardData in sequence, up to
// the rounding of the sums. It does not allocate and returns an error for
// an invalid shape or a short slice.
func ConvBackward(sh ConvShape, dw, dbias, dx, x, dy, w, y, work []float32) error {
	const fn = "ConvBackward"
	if err := convCheck(fn, sh, work); err != nil {
		return err
	}
	if err := errors.Join(convCheckLen(fn, "dw", len(dw), sh.WLen()), convCheckLen(fn, "x", len(x), sh.XLen()),
		convCheckLen(fn, "dy", len(dy), sh.YLen()), convCheckLen(fn, "w", len(w), sh.WLen())); err != nil {
		return err
	}
	if dbias != nil && len(dbias) < sh.OutC {
		return fmt.Errorf("kernels.ConvBackward: dbias has %d elements, OutC=%d", len(dbias), sh.OutC)
	}
	if dx != nil {
		if err := convCheckLen(fn, "dx", len(dx), sh.XLen()); err != nil {
			return err
		}
	}
	if y != nil {
		if err := convCheckLen(fn, "y", len(y), sh.YLen()); err != nil {
			return err
		}
	}
	if sh.Batch == 0 {
		return nil
	}
	if drv := convDriver(); drv != nil && !sh.convDirect() && sh.implicitBackward() && !sh.directFilter() {
		// The direct data gradient, where it runs, follows the fused
		// mask, bias and filter gradient (the same bits as
		// ConvBackwardFilter then ConvBackwardData).
		ddx := dx
		f, mr, nr := convDirectKernel()
		g, direct := sh.directDataGeom(mr, nr)
		if f != nil && direct {
			ddx = nil
		}
		convImplicitBackward(drv, sh, dw, dbias, ddx, x, dy, w, y, work)
		if dx != nil && ddx == nil {
			convDirectData(f, mr, g, sh, dx, dy, w, work)
		}
		return nil
	}
	// The whole batch pass by pass: the ReLU mask, the filter gradient
	// and the data gradient (direct where they can, conv_direct.go; else
	// im2col for stride 1, see implicitBackward).
	if y != nil {
		reluMask(y[:sh.YLen()], dy, dy)
	}
	if err := ConvBackwardFilter(sh, dw, dbias, x, dy, work); err != nil {
		return err
	}
	if dx == nil {
		return nil
	}
	return ConvBackwardData(sh, dx, dy, w, work)
}

// implicitBackward reports whether the backward passes run as implicit
// GEMMs (when a driver is there): only for strided shapes. With stride 1,
// im2col writes the column matrix with whole-row copies and the driver's
// packing moves it in long runs, while the implicit filter gradient gathers
// the taps of every position one by one (runs of KW) and the implicit data
// gradient adds small tiles (its reduction is over the output channels
// only). Measured on Zen 4 (AMD EPYC family 25 model 17, avx512, batch 32,
// BenchmarkConvBackwardFilter and BenchmarkConvBackwardData, path=default
// against path=im2col): on the deep model's 3×3 stride-1 layer im2col was
// 7% faster on the filter gradient and 5% on the data gradient (and a data
// gradient run as the forward convolution of dY with the turned kernel,
// tried too, 30% slower: its GEMM has only the 32 input channels as rows
// and every panel reaches the padding); on its 3×3 stride-2 layers the
// implicit GEMM was 46% faster on the filter gradient and 5-9% on the data
// gradient.
func (s ConvShape) implicitBackward() bool { return s.StrideH > 1 || s.StrideW > 1 }

// ConvBackwardData computes dx = ∂L/∂x from dy = ∂L/∂y for the shape sh:
// the transposed convolution of dy with w. dx is overwritten. work is
// caller scratch of at least sh.WorkSize() floats. It does not allocate and
// returns an error for an invalid shape or a slice that is too short.
func ConvBackwardData(sh ConvShape, dx, dy, w, work []float32) error {
	const fn = "ConvBackwardData"
	if err := convCheck(fn, sh, work); err != nil {
		return err
	}
	if err := errors.Join(convCheckLen(fn, "dx", len(dx), sh.XLen()), convCheckLen(fn, "dy", len(dy), sh.YLen()),
		convCheckLen(fn, "w", len(w), sh.WLen())); err != nil {
		return err
	}
	if sh.Batch == 0 {
		return nil
	}
	if sh.convDirect() {
		convDepthwiseBackwardData(sh, dx, dy, w)
		return nil
	}
	if f, mr, nr := convDirectKernel(); f != nil {
		if g, ok := sh.directDataGeom(mr, nr); ok {
			convDirectData(f, mr, g, sh, dx, dy, w, work)
			return nil
		}
	}
	if drv := convDriver(); drv != nil && sh.implicitBackward() {
		convImplicitBackward(drv, sh, nil, nil, dx, nil, dy, w, nil, work)
		return nil
	}
	convGemmBackwardData(sh, dx, dy, w, work)
	return nil
}

// ConvBackwardFilter accumulates the weight and bias gradients for the
// shape sh: dw += ∂L/∂w and dbias += ∂L/∂bias (the sum of dy over batch and
// positions), from the forward input x and dy = ∂L/∂y. dbias may be nil.
// Accumulation lets several uses of one weight (or several micro-batches)
// add into the same gradient; zero dw and dbias first for a fresh gradient.
// work is caller scratch of at least sh.WorkSize() floats. It does not
// allocate and returns an error for an invalid shape or a short slice.
func ConvBackwardFilter(sh ConvShape, dw, dbias, x, dy, work []float32) error {
	const fn = "ConvBackwardFilter"
	if err := convCheck(fn, sh, work); err != nil {
		return err
	}
	if err := errors.Join(convCheckLen(fn, "dw", len(dw), sh.WLen()), convCheckLen(fn, "x", len(x), sh.XLen()),
		convCheckLen(fn, "dy", len(dy), sh.YLen())); err != nil {
		return err
	}
	if dbias != nil && len(dbias) < sh.OutC {
		return fmt.Errorf("kernels.ConvBackwardFilter: dbias has %d elements, OutC=%d", len(dbias), sh.OutC)
	}
	if sh.Batch == 0 {
		return nil
	}
	if dbias != nil {
		convBiasGrad(sh, dbias, dy, 0, sh.Batch)
	}
	if sh.convDirect() {
		convDepthwiseBackwardFilter(sh, dw, x, dy)
		return nil
	}
	if f, nr, g, n, ok := sh.convFilterDirect(); ok {
		convDirectFilter(f, nr, g, n, sh, dw, x, dy, work)
		return nil
	}
	if drv := convDriver(); drv != nil && sh.implicitBackward() {
		convImplicitBackward(drv, sh, dw, nil, nil, x, dy, nil, nil, work)
		return nil
	}
	convGemmBackwardFilter(sh, dw, x, dy, work)
	return nil
}

// convBiasGrad adds Σ_positions dy of images n0 … n1−1 to dbias, image by
// image in order.
func convBiasGrad(sh ConvShape, dbias, dy []float32, n0, n1 int) {
	p := sh.OutH() * sh.OutW()
	for n := n0; n < n1; n++ {
		// dbias += dY_n·1, the row sums of the image's OutC×P matrix, on
		// the gemvN primitive, len(convOnes) columns at a time.
		img := dy[n*sh.OutC*p : (n+1)*sh.OutC*p]
		for c0 := 0; c0 < p; c0 += len(convOnes) {
			c1 := min(p, c0+len(convOnes))
			cur.gemvN(sh.OutC, c1-c0, img[c0:], p, convOnes[:c1-c0], dbias[:sh.OutC])
		}
	}
}

// convOnes is a row of ones: the x of convBiasGrad's matrix-vector
// products and of addTo's rank-1 update.
var convOnes = func() *[1024]float32 {
	var o [1024]float32
	for i := range o {
		o[i] = 1
	}
	return &o
}()

// addTo adds src to dst element by element (dst[j] += src[j], len(src)
// values) as the rank-1 update dst += 1·srcᵀ on the ger primitive, a SIMD
// loop with the same bits as the scalar sum (1·src[j] is exact, so the
// fused multiply-add rounds once, as the addition does).
func addTo(dst, src []float32) {
	n := len(src)
	if n < 16 {
		dst = dst[:n]
		for j, v := range src {
			dst[j] += v
		}
		return
	}
	cur.ger(1, n, convOnes[:1], src, dst[:n], n)
}

// convRange returns the output indices [lo, hi) whose input index
// o·stride − pad + k lies in [0, in).
func convRange(out, in, stride, pad, k int) (lo, hi int) {
	// o·stride ≥ pad − k  ⇔  o ≥ ⌈(pad−k)/stride⌉
	if d := pad - k; d > 0 {
		lo = (d + stride - 1) / stride
	}
	// o·stride ≤ in − 1 + pad − k  ⇔  o ≤ ⌊(in−1+pad−k)/stride⌋
	d := in - 1 + pad - k
	if d < 0 {
		return 0, 0
	}
	hi = min(d/stride+1, out)
	if hi < lo {
		return 0, 0
	}
	return lo, hi
}

// Column order of the im2col matrix. With one image per chunk (nc = 1),
// column p = oh·OutW + ow and im2col gathers straight from the NCHW planes
// of x. With nc > 1 images the columns are image-minor, p·nc + i: the
// slab's channels of the chunk are first transposed into a CHWN buffer xT
// (xT[((c·InH + h)·InW + w)·nc + i] = x[n0+i, ci, h, w], one pass over the
// input), after which every tap of every output position is a contiguous
// run of nc values in xT, copied with copy() (and, for StrideW = 1, a whole
// output row of taps is one run of OutW·nc values). This replaces scalar
// stride-2 gathers of 6 values (the primary capsules' output rows) by
// 64-byte block copies: in Go, without SIMD, the scalar gather cost about
// a fifth of the GEMM time. The GEMM output and dY then use the same
// image-minor order; scattering them to NCHW touches OutC/Groups values per
// column, K times fewer than im2col.

// convIm2col (nc = 1) writes the receptive fields of image n, input
// channels c0 … c0+cs−1 of group g, into col as a (cs·KH·KW)×P row-major
// matrix: row (c·KH+kh)·KW+kw, column oh·OutW + ow holds
// x[n, g·Cg+c0+c, oh·SH−PH+kh, ow·SW−PW+kw] (0 in the padding).
func convIm2col(s ConvShape, x []float32, n, g, c0, cs int, col []float32) {
	oh, ow := s.OutH(), s.OutW()
	p := oh * ow
	cg := s.InC / s.Groups
	hw := s.InH * s.InW
	sw, rowStep := s.StrideW, s.StrideH*s.InW
	for c := 0; c < cs; c++ {
		ci := g*cg + c0 + c
		xc := x[(n*s.InC+ci)*hw : (n*s.InC+ci+1)*hw]
		for kh := 0; kh < s.KH; kh++ {
			yLo, yHi := convRange(oh, s.InH, s.StrideH, s.PadH, kh)
			for kw := 0; kw < s.KW; kw++ {
				xLo, xHi := convRange(ow, s.InW, s.StrideW, s.PadW, kw)
				nx := xHi - xLo
				dst := col[((c*s.KH+kh)*s.KW+kw)*p : ((c*s.KH+kh)*s.KW+kw+1)*p]
				clear(dst[:yLo*ow])
				clear(dst[yHi*ow:])
				if nx <= 0 {
					clear(dst[yLo*ow : yHi*ow])
					continue
				}
				padX := xLo > 0 || xHi < ow
				ix := (yLo*s.StrideH-s.PadH+kh)*s.InW + xLo*sw - s.PadW + kw
				for y := yLo; y < yHi; y++ {
					d := dst[y*ow : (y+1)*ow]
					if padX {
						clear(d[:xLo])
						clear(d[xHi:])
					}
					d = d[xLo:xHi]
					switch sw {
					case 1:
						copy(d, xc[ix:ix+nx])
					case 2:
						// Unrolled by 4 with constant indices into
						// re-sliced windows: two bounds checks per four
						// values.
						src := xc[ix : ix+2*nx-1]
						j := 0
						for ; j+4 <= nx; j += 4 {
							s4 := src[2*j : 2*j+7]
							d4 := d[j : j+4]
							d4[0], d4[1], d4[2], d4[3] = s4[0], s4[2], s4[4], s4[6]
						}
						for ; j < nx; j++ {
							d[j] = src[2*j]
						}
					default:
						src := xc[ix : ix+sw*(nx-1)+1]
						for j := range d {
							d[j] = src[sw*j]
						}
					}
					ix += rowStep
				}
			}
		}
	}
}

// convCol2im (nc = 1) adds the (cs·KH·KW)×P column matrix col back into
// image n of dx (the adjoint of convIm2col): every entry is added to the
// input element it was read from; padding entries are dropped.
func convCol2im(s ConvShape, col []float32, n, g, c0, cs int, dx []float32) {
	oh, ow := s.OutH(), s.OutW()
	p := oh * ow
	cg := s.InC / s.Groups
	hw := s.InH * s.InW
	sw, rowStep := s.StrideW, s.StrideH*s.InW
	for c := 0; c < cs; c++ {
		ci := g*cg + c0 + c
		xc := dx[(n*s.InC+ci)*hw : (n*s.InC+ci+1)*hw]
		for kh := 0; kh < s.KH; kh++ {
			yLo, yHi := convRange(oh, s.InH, s.StrideH, s.PadH, kh)
			for kw := 0; kw < s.KW; kw++ {
				xLo, xHi := convRange(ow, s.InW, s.StrideW, s.PadW, kw)
				nx := xHi - xLo
				if nx <= 0 {
					continue
				}
				src := col[((c*s.KH+kh)*s.KW+kw)*p : ((c*s.KH+kh)*s.KW+kw+1)*p]
				ix := (yLo*s.StrideH-s.PadH+kh)*s.InW + xLo*sw - s.PadW + kw
				for y := yLo; y < yHi; y++ {
					d := src[y*ow+xLo : y*ow+xHi]
					dst := xc[ix : ix+sw*(nx-1)+1]
					if sw == 1 {
						addTo(dst, d)
					} else {
						for j, v := range d {
							dst[sw*j] += v
						}
					}
					ix += rowStep
				}
			}
		}
	}
}

// convTransposeIn copies channels ci0 … ci0+cs−1 of images n0 … n0+nc−1
// into the CHWN buffer xT: xT[(c·InH·InW + q)·nc + i] = x[n0+i, ci0+c, q].
func convTransposeIn(s ConvShape, x []float32, n0, nc, ci0, cs int, xT []float32) {
	hw := s.InH * s.InW
	for c := 0; c < cs; c++ {
		t := xT[c*hw*nc : (c+1)*hw*nc]
		for i := 0; i < nc; i++ {
			src := x[((n0+i)*s.InC+ci0+c)*hw : ((n0+i)*s.InC+ci0+c+1)*hw]
			for q, v := range src {
				t[q*nc+i] = v
			}
		}
	}
}

// convTransposeOut is the inverse of convTransposeIn: it writes the CHWN
// buffer dxT into channels ci0 … ci0+cs−1 of images n0 … n0+nc−1 of dx
// (overwriting them).
func convTransposeOut(s ConvShape, dxT []float32, n0, nc, ci0, cs int, dx []float32) {
	hw := s.InH * s.InW
	for c := 0; c < cs; c++ {
		t := dxT[c*hw*nc : (c+1)*hw*nc]
		for i := 0; i < nc; i++ {
			dst := dx[((n0+i)*s.InC+ci0+c)*hw : ((n0+i)*s.InC+ci0+c+1)*hw]
			for q := range dst {
				dst[q] = t[q*nc+i]
			}
		}
	}
}

// convIm2colT (nc > 1) writes the (cs·KH·KW)×(P·nc) column matrix with
// image-minor columns p·nc + i from the CHWN buffer xT of the slab.
func convIm2colT(s ConvShape, xT []float32, nc, cs int, col []float32) {
	oh, ow := s.OutH(), s.OutW()
	ld := oh * ow * nc
	hwn := s.InH * s.InW * nc
	sw := s.StrideW
	for c := 0; c < cs; c++ {
		xc := xT[c*hwn : (c+1)*hwn]
		for kh := 0; kh < s.KH; kh++ {
			yLo, yHi := convRange(oh, s.InH, s.StrideH, s.PadH, kh)
			for kw := 0; kw < s.KW; kw++ {
				xLo, xHi := convRange(ow, s.InW, s.StrideW, s.PadW, kw)
				dst := col[((c*s.KH+kh)*s.KW+kw)*ld : ((c*s.KH+kh)*s.KW+kw+1)*ld]
				clear(dst[:yLo*ow*nc])
				clear(dst[yHi*ow*nc:])
				if xHi <= xLo {
					clear(dst[yLo*ow*nc : yHi*ow*nc])
					continue
				}
				for y := yLo; y < yHi; y++ {
					d := dst[y*ow*nc : (y+1)*ow*nc]
					clear(d[:xLo*nc])
					clear(d[xHi*nc:])
					ix := ((y*s.StrideH-s.PadH+kh)*s.InW + xLo*sw - s.PadW + kw) * nc
					if sw == 1 {
						copy(d[xLo*nc:xHi*nc], xc[ix:])
						continue
					}
					for x := xLo; x < xHi; x++ {
						copy(d[x*nc:(x+1)*nc], xc[ix:ix+nc])
						ix += sw * nc
					}
				}
			}
		}
	}
}

// convCol2imT (nc > 1) adds the image-minor column matrix col into the
// CHWN buffer dxT (the adjoint of convIm2colT).
func convCol2imT(s ConvShape, col []float32, nc, cs int, dxT []float32) {
	oh, ow := s.OutH(), s.OutW()
	ld := oh * ow * nc
	hwn := s.InH * s.InW * nc
	sw := s.StrideW
	for c := 0; c < cs; c++ {
		xc := dxT[c*hwn : (c+1)*hwn]
		for kh := 0; kh < s.KH; kh++ {
			yLo, yHi := convRange(oh, s.InH, s.StrideH, s.PadH, kh)
			for kw := 0; kw < s.KW; kw++ {
				xLo, xHi := convRange(ow, s.InW, s.StrideW, s.PadW, kw)
				if xHi <= xLo {
					continue
				}
				src := col[((c*s.KH+kh)*s.KW+kw)*ld : ((c*s.KH+kh)*s.KW+kw+1)*ld]
				for y := yLo; y < yHi; y++ {
					ix := ((y*s.StrideH-s.PadH+kh)*s.InW + xLo*sw - s.PadW + kw) * nc
					if sw == 1 {
						d := src[(y*ow+xLo)*nc : (y*ow+xHi)*nc]
						addTo(xc[ix:ix+len(d)], d)
						continue
					}
					for x := xLo; x < xHi; x++ {
						addTo(xc[ix:ix+nc], src[(y*ow+x)*nc:(y*ow+x+1)*nc])
						ix += sw * nc
					}
				}
			}
		}
	}
}

// convWork splits the scratch into the column slab, the GEMM output / dY
// matrix and the CHWN input slab.
func convWork(s ConvShape, work []float32) (col, out, xT []float32) {
	nb, cs := s.convPlan()
	p := s.OutH() * s.OutW()
	colLen := cs * s.KH * s.KW * nb * p
	outLen := s.OutC / s.Groups * nb * p
	col, out = work[:colLen], work[colLen:colLen+outLen]
	if nb > 1 {
		xT = work[colLen+outLen : colLen+outLen+cs*s.InH*s.InW*nb]
	}
	return col, out, xT
}

// convGemmForward is the im2col + GEMM forward pass (see convPlan).
func convGemmForward(s ConvShape, y, x, w, bias, work []float32) {
	p := s.OutH() * s.OutW()
	cg, og := s.InC/s.Groups, s.OutC/s.Groups
	khw := s.KH * s.KW
	k := cg * khw
	nb, cs := s.convPlan()
	colBuf, outBuf, xT := convWork(s, work)
	gw := convGemmWork(s, work)
	for n0 := 0; n0 < s.Batch; n0 += nb {
		nc := min(nb, s.Batch-n0)
		ld := nc * p
		for g := 0; g < s.Groups; g++ {
			// C: y itself for a chunk of one image, else scratch.
			out, ldc := outBuf[:og*ld], ld
			if nc == 1 {
				out, ldc = y[(n0*s.OutC+g*og)*p:(n0*s.OutC+(g+1)*og)*p], p
			}
			for c0 := 0; c0 < cg; c0 += cs {
				ns := min(cs, cg-c0)
				col := colBuf[:ns*khw*ld]
				if nc == 1 {
					convIm2col(s, x, n0, g, c0, ns, col)
				} else {
					convTransposeIn(s, x, n0, nc, g*cg+c0, ns, xT)
					convIm2colT(s, xT, nc, ns, col)
				}
				var beta float32
				if c0 > 0 {
					beta = 1
				}
				cur.sgemmWork(false, false, og, ld, ns*khw, 1, w[g*og*k+c0*khw:], k, col, ld, beta, out, ldc, gw)
			}
			for o := 0; o < og; o++ {
				var b float32
				if bias != nil {
					b = bias[g*og+o]
				}
				if nc == 1 {
					if bias != nil {
						row := out[o*p : (o+1)*p]
						for j := range row {
							row[j] += b
						}
					}
					continue
				}
				src := out[o*ld : (o+1)*ld]
				for i := 0; i < nc; i++ {
					dst := y[((n0+i)*s.OutC+g*og+o)*p : ((n0+i)*s.OutC+g*og+o+1)*p]
					for q := range dst {
						dst[q] = src[q*nc+i] + b
					}
				}
			}
		}
	}
}

// convDyMatrix returns dY of images n0 … n0+nc−1, group g, as an
// og×(nc·P) matrix in the column order of the chunk: dy itself for one
// image, else copied into t with image-major columns i·P + q (imageMajor,
// the implicit GEMM's order: whole P-runs) or image-minor ones q·nc + i
// (the im2col path's).
func convDyMatrix(s ConvShape, dy []float32, n0, nc, g int, t []float32, imageMajor bool) []float32 {
	p := s.OutH() * s.OutW()
	og := s.OutC / s.Groups
	if nc == 1 {
		return dy[(n0*s.OutC+g*og)*p : (n0*s.OutC+(g+1)*og)*p]
	}
	ld := nc * p
	for o := 0; o < og; o++ {
		dst := t[o*ld : (o+1)*ld]
		for i := 0; i < nc; i++ {
			src := dy[((n0+i)*s.OutC+g*og+o)*p : ((n0+i)*s.OutC+g*og+o+1)*p]
			if imageMajor {
				copy(dst[i*p:(i+1)*p], src)
				continue
			}
			for q, v := range src {
				dst[q*nc+i] = v
			}
		}
	}
	return t[:og*ld]
}

// convGemmBackwardData: per chunk, group and slab, dcol = W_g[:, slab]ᵀ·dY_g
// ((cs·KH·KW)×(nc·P)), then col2im into dx.
func convGemmBackwardData(s ConvShape, dx, dy, w, work []float32) {
	p := s.OutH() * s.OutW()
	cg, og := s.InC/s.Groups, s.OutC/s.Groups
	khw := s.KH * s.KW
	k := cg * khw
	nb, cs := s.convPlan()
	colBuf, tBuf, xT := convWork(s, work)
	gw := convGemmWork(s, work)
	if nb == 1 {
		clear(dx[:s.XLen()]) // col2im accumulates
	}
	for n0 := 0; n0 < s.Batch; n0 += nb {
		nc := min(nb, s.Batch-n0)
		ld := nc * p
		for g := 0; g < s.Groups; g++ {
			t := convDyMatrix(s, dy, n0, nc, g, tBuf, false)
			for c0 := 0; c0 < cg; c0 += cs {
				ns := min(cs, cg-c0)
				col := colBuf[:ns*khw*ld]
				cur.sgemmWork(true, false, ns*khw, ld, og, 1, w[g*og*k+c0*khw:], k, t, ld, 0, col, ld, gw)
				if nc == 1 {
					if nb > 1 {
						// Last chunk of a single image in a batched plan:
						// dx was not cleared.
						for c := 0; c < ns; c++ {
							ci := g*cg + c0 + c
							clear(dx[(n0*s.InC+ci)*s.InH*s.InW : (n0*s.InC+ci+1)*s.InH*s.InW])
						}
					}
					convCol2im(s, col, n0, g, c0, ns, dx)
					continue
				}
				dxT := xT[:ns*s.InH*s.InW*nc]
				clear(dxT)
				convCol2imT(s, col, nc, ns, dxT)
				convTransposeOut(s, dxT, n0, nc, g*cg+c0, ns, dx)
			}
		}
	}
}

// convGemmBackwardFilter: per chunk, group and slab,
// dW_g[:, slab] += dY_g·colᵀ.
func convGemmBackwardFilter(s ConvShape, dw, x, dy, work []float32) {
	p := s.OutH() * s.OutW()
	cg, og := s.InC/s.Groups, s.OutC/s.Groups
	khw := s.KH * s.KW
	k := cg * khw
	nb, cs := s.convPlan()
	colBuf, tBuf, xT := convWork(s, work)
	gw := convGemmWork(s, work)
	for n0 := 0; n0 < s.Batch; n0 += nb {
		nc := min(nb, s.Batch-n0)
		ld := nc * p
		for g := 0; g < s.Groups; g++ {
			t := convDyMatrix(s, dy, n0, nc, g, tBuf, false)
			for c0 := 0; c0 < cg; c0 += cs {
				ns := min(cs, cg-c0)
				col := colBuf[:ns*khw*ld]
				if nc == 1 {
					convIm2col(s, x, n0, g, c0, ns, col)
				} else {
					convTransposeIn(s, x, n0, nc, g*cg+c0, ns, xT)
					convIm2colT(s, xT, nc, ns, col)
				}
				cur.sgemmWork(false, true, og, ns*khw, ld, 1, t, ld, col, ld, 1, dw[g*og*k+c0*khw:], k, gw)
			}
		}
	}
}

// Depthwise direct loops (InC = OutC = Groups): channel c of every image
// is convolved with its own KH×KW filter. The inner loop runs along an
// output row over the valid range computed by convRange, so it has no
// bounds tests on the padding.

func convDepthwiseForward(s ConvShape, y, x, w, bias []float32) {
	oh, ow := s.OutH(), s.OutW()
	hw := s.InH * s.InW
	for n := 0; n < s.Batch; n++ {
		for c := 0; c < s.InC; c++ {
			xc := x[(n*s.InC+c)*hw : (n*s.InC+c+1)*hw]
			yc := y[(n*s.InC+c)*oh*ow : (n*s.InC+c+1)*oh*ow]
			wc := w[c*s.KH*s.KW : (c+1)*s.KH*s.KW]
			var b float32
			if bias != nil {
				b = bias[c]
			}
			if s.convWholeImage() {
				// y[n,c] = bias[c] + x[n,c,:]·w[c,:]
				// Four partial sums break the add latency chain.
				var a0, a1, a2, a3 float32
				wc = wc[:hw]
				j := 0
				for ; j+4 <= hw; j += 4 {
					a0 += xc[j] * wc[j]
					a1 += xc[j+1] * wc[j+1]
					a2 += xc[j+2] * wc[j+2]
					a3 += xc[j+3] * wc[j+3]
				}
				for ; j < hw; j++ {
					a0 += xc[j] * wc[j]
				}
				yc[0] = b + (a0 + a1) + (a2 + a3)
				continue
			}
			for i := range yc {
				yc[i] = b
			}
			for kh := 0; kh < s.KH; kh++ {
				yLo, yHi := convRange(oh, s.InH, s.StrideH, s.PadH, kh)
				for kw := 0; kw < s.KW; kw++ {
					xLo, xHi := convRange(ow, s.InW, s.StrideW, s.PadW, kw)
					wv := wc[kh*s.KW+kw]
					for yo := yLo; yo < yHi; yo++ {
						src := xc[(yo*s.StrideH-s.PadH+kh)*s.InW:]
						dst := yc[yo*ow+xLo : yo*ow+xHi]
						ix := xLo*s.StrideW - s.PadW + kw
						if s.StrideW == 1 {
							src = src[ix : ix+len(dst)]
							for j, v := range src {
								dst[j] += wv * v
							}
							continue
						}
						for j := range dst {
							dst[j] += wv * src[ix]
							ix += s.StrideW
						}
					}
				}
			}
		}
	}
}

// convWholeImage reports a kernel covering the whole unpadded image
// (output 1×1, every tap valid), the deep model's last layer.
func (s ConvShape) convWholeImage() bool {
	return s.KH == s.InH && s.KW == s.InW && s.PadH == 0 && s.PadW == 0
}

func convDepthwiseBackwardData(s ConvShape, dx, dy, w []float32) {
	oh, ow := s.OutH(), s.OutW()
	hw := s.InH * s.InW
	if s.convWholeImage() {
		// dx[n,c,:] = dy[n,c]·w[c,:]
		for n := 0; n < s.Batch; n++ {
			for c := 0; c < s.InC; c++ {
				d := dy[n*s.InC+c]
				dst := dx[(n*s.InC+c)*hw : (n*s.InC+c+1)*hw]
				for j, v := range w[c*hw : (c+1)*hw] {
					dst[j] = d * v
				}
			}
		}
		return
	}
	clear(dx[:s.XLen()])
	for n := 0; n < s.Batch; n++ {
		for c := 0; c < s.InC; c++ {
			xc := dx[(n*s.InC+c)*hw : (n*s.InC+c+1)*hw]
			yc := dy[(n*s.InC+c)*oh*ow : (n*s.InC+c+1)*oh*ow]
			wc := w[c*s.KH*s.KW : (c+1)*s.KH*s.KW]
			for kh := 0; kh < s.KH; kh++ {
				yLo, yHi := convRange(oh, s.InH, s.StrideH, s.PadH, kh)
				for kw := 0; kw < s.KW; kw++ {
					xLo, xHi := convRange(ow, s.InW, s.StrideW, s.PadW, kw)
					wv := wc[kh*s.KW+kw]
					for yo := yLo; yo < yHi; yo++ {
						dst := xc[(yo*s.StrideH-s.PadH+kh)*s.InW:]
						src := yc[yo*ow+xLo : yo*ow+xHi]
						ix := xLo*s.StrideW - s.PadW + kw
						if s.StrideW == 1 {
							dst = dst[ix : ix+len(src)]
							for j, v := range src {
								dst[j] += wv * v
							}
							continue
						}
						for _, v := range src {
							dst[ix] += wv * v
							ix += s.StrideW
						}
					}
				}
			}
		}
	}
}

func convDepthwiseBackwardFilter(s ConvShape, dw, x, dy []float32) {
	oh, ow := s.OutH(), s.OutW()
	hw := s.InH * s.InW
	if s.convWholeImage() {
		// dw[c,:] += Σ_n dy[n,c]·x[n,c,:]
		for c := 0; c < s.InC; c++ {
			dst := dw[c*hw : (c+1)*hw]
			for n := 0; n < s.Batch; n++ {
				d := dy[n*s.InC+c]
				for j, v := range x[(n*s.InC+c)*hw : (n*s.InC+c+1)*hw] {
					dst[j] += d * v
				}
			}
		}
		return
	}
	for c := 0; c < s.InC; c++ {
		wc := dw[c*s.KH*s.KW : (c+1)*s.KH*s.KW]
		for kh := 0; kh < s.KH; kh++ {
			yLo, yHi := convRange(oh, s.InH, s.StrideH, s.PadH, kh)
			for kw := 0; kw < s.KW; kw++ {
				xLo, xHi := convRange(ow, s.InW, s.StrideW, s.PadW, kw)
				var acc float32
				for n := 0; n < s.Batch; n++ {
					xc := x[(n*s.InC+c)*hw : (n*s.InC+c+1)*hw]
					yc := dy[(n*s.InC+c)*oh*ow : (n*s.InC+c+1)*oh*ow]
					for yo := yLo; yo < yHi; yo++ {
						src := xc[(yo*s.StrideH-s.PadH+kh)*s.InW:]
						g := yc[yo*ow+xLo : yo*ow+xHi]
						ix := xLo*s.StrideW - s.PadW + kw
						if s.StrideW == 1 {
							src = src[ix : ix+len(g)]
							for j, v := range src {
								acc += g[j] * v
							}
							continue
						}
						for _, v := range g {
							acc += v * src[ix]
							ix += s.StrideW
						}
					}
				}
				wc[kh*s.KW+kw] += acc
			}
		}
	}
}
