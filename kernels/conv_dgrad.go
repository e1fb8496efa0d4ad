package kernels

// The data gradient of a stride-1 convolution as a convolution.
//
// With stride 1, dx is the full correlation of dY with the weights turned
// by 180° and their input and output channels swapped:
//
//	dx[n, g·Cg+c, h, w] = Σ_{o, kh, kw} W'[g·Cg+c, o, kh, kw] · dY[n, g·Og+o, h − (KH−1−PH) + kh, w − (KW−1−PW) + kw]
//	W'[g·Cg+c, o, kh, kw] = W[g·Og+o, c, KH−1−kh, KW−1−kw]
//
// (0 outside dY): the forward pass of the shape dgradShape, padding
// KH−1−PH and KW−1−PW, on dY. Run as an implicit GEMM it reduces over
// Og·KH·KW (576 on the deep model's second layer) and writes every element
// of dx once, where the GEMM dcol = W_gᵀ·dY_g reduces over Og (64) and
// adds its tiles into dx: measured on Zen 4 (docs/performance.md), the
// same speed as the forward rather than about 20% below it.

// dgradAsConv reports whether the data gradient runs as the convolution
// dgradShape: stride 1, padding at most the kernel size − 1 (so that the
// turned kernel's padding is not negative), not depthwise, at least
// dgradMinRows input channels per group.
func (s ConvShape) dgradAsConv() bool {
	return s.StrideH == 1 && s.StrideW == 1 && s.PadH <= s.KH-1 && s.PadW <= s.KW-1 && !s.convDirect() &&
		s.InC/s.Groups >= dgradMinRows
}

// dgradMinRows is the fewest input channels per group (the rows of the
// data gradient's GEMM as a convolution) for which it runs that way: with
// fewer, the SGEMM tiles' rows are mostly padding (the deep model's first
// layer, one input channel, would compute 1 row of 8), and dcol's
// reduction over the output channels is the longer one anyway.
const dgradMinRows = 16

// dgradShape is the convolution that computes the data gradient of s
// (dgradAsConv): input dY, output dx.
func (s ConvShape) dgradShape() ConvShape {
	return ConvShape{Batch: s.Batch, InC: s.OutC, InH: s.OutH(), InW: s.OutW(), OutC: s.InC, KH: s.KH, KW: s.KW,
		StrideH: 1, StrideW: 1, PadH: s.KH - 1 - s.PadH, PadW: s.KW - 1 - s.PadW, Groups: s.Groups}
}

// dgradBase is the work of the data gradient as a convolution before the
// products' packing space: the turned weights, then the chunk output of
// dgradShape when its chunks hold several images.
func (s ConvShape) dgradBase() int {
	t := s.dgradShape()
	_, og, _, nb := t.implicitDims()
	n := s.WLen()
	if nb > 1 {
		n += og * nb * t.OutH() * t.OutW()
	}
	return n
}

// convDgradAsConv writes dx, the data gradient of s, as the forward pass
// of dgradShape on dy with the turned weights (built in work).
func convDgradAsConv(drv *sgemmBlocked, s ConvShape, dx, dy, w, work []float32) {
	t := s.dgradShape()
	cg, og, khw := s.InC/s.Groups, s.OutC/s.Groups, s.KH*s.KW
	wt := work[:s.WLen()]
	for g := 0; g < s.Groups; g++ {
		for o := 0; o < og; o++ {
			for c := 0; c < cg; c++ {
				src := w[((g*og+o)*cg+c)*khw : ((g*og+o)*cg+c+1)*khw]
				dst := wt[((g*cg+c)*og+o)*khw : ((g*cg+c)*og+o+1)*khw]
				for i, v := range src {
					dst[khw-1-i] = v // (kh, kw) → (KH−1−kh, KW−1−kw)
				}
			}
		}
	}
	_, tog, _, tnb := t.implicitDims()
	outLen := 0
	if tnb > 1 {
		outLen = tog * tnb * t.OutH() * t.OutW()
	}
	base := s.WLen()
	convImplicitForward(drv, t, dx, dy, wt, nil, work[base:base+outLen], work[base+outLen:], false)
}
