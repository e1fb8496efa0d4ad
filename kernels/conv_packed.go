package kernels

import (
	"errors"
	"fmt"
)

// Packed weights.
//
// A forward convolution on the blocked driver packs its weights (op(A) of
// its products, the OIHW rows of each group) into the driver's mr-row
// panels on every call. An inference graph's weights do not change between
// calls, so PackConv packs them once, and ConvForwardPacked reads the
// panels in place: at batch 1, packing the 21 MB of Sabour's primary
// capsules took 17% of the forward.
//
// The layout, for the implementation in use (its driver's tile of mr
// rows): per group g, the group's og = OutC/Groups rows rounded up to a
// multiple of mr (the rows past og zero) in mr-row panels over the whole
// reduction of k = (InC/Groups)·KH·KW taps,
//
//	element (o, t) of group g at g·⌈og/mr⌉·mr·k + (o/mr)·mr·k + t·mr + o%mr
//
// so that a kc block of a panel from tap pc on, what the driver's
// micro-kernel reads, is the kc·mr contiguous values from (o/mr)·mr·k +
// pc·mr on, for any kc; it is also the packing of the direct path
// (conv_direct.go), which then reads the panels as they are. Where the
// forward takes the im2col path (no blocked driver: the reference
// implementation), the packed form is the weights as stored. Depthwise
// shapes read their weights in place: there is nothing to pack.
//
// The micro-kernels see the same values in the same order as when the
// forward packs them itself, so ConvForwardPacked computes ConvForward's
// bits on every path.

// ConvPacked is a convolution's weights packed for the forward pass of the
// implementation in use (PackConv). It refers to the caller's memory that
// PackConv filled; it is a small value, passed by value, and the zero
// ConvPacked is valid for no shape.
type ConvPacked struct {
	sh   ConvShape // the shape packed for, Batch 0
	data []float32
	mr   int // the panels' rows; 0: the weights as stored
}

// convPackKey is the shape with Batch 0: the packing does not depend on
// the batch.
func convPackKey(s ConvShape) ConvShape {
	s.Batch = 0
	return s
}

// convPackMR is the panel height of the packed weights the forward takes
// on the implementation in use: its driver's mr, or 0 (the weights as
// stored) on the im2col path.
func convPackMR() int {
	if d := convDriver(); d != nil {
		return d.mr
	}
	return 0
}

// convPackedLen is the length of the packed weights of s in panels of mr
// rows (mr 0: the weights as stored).
func convPackedLen(s ConvShape, mr int) int {
	if mr <= 0 {
		return s.WLen()
	}
	og, k := s.OutC/s.Groups, s.InC/s.Groups*s.KH*s.KW
	return s.Groups * roundUp(og, mr) * k
}

// PackedSize returns the number of float32 PackConv needs for this shape
// on any implementation this binary can Use (so that memory sized once
// stays enough after kernels.Use), whatever the batch; 0 for a depthwise
// shape (InC = OutC = Groups), whose forward reads the weights in place
// (there is nothing to pack: use ConvForward), and for a shape that fails
// Validate.
func (s ConvShape) PackedSize() int {
	if s.Validate() != nil || s.convDirect() {
		return 0
	}
	n := s.WLen()
	if convTestDriver != nil {
		n = max(n, convPackedLen(s, convTestDriver.mr))
	}
	for _, o := range tables {
		if o.sgemmDriver != nil {
			n = max(n, convPackedLen(s, o.sgemmDriver.mr))
		}
	}
	return n
}

// PackConv packs the OIHW weights w of the shape sh into dst (at least
// sh.PackedSize() floats; only the first part of it may be used) in the
// layout the forward of the implementation in use reads, and returns the
// packed weights, which refer to dst. Pack again after the weights change
// and after kernels.Use (see ConvPacked.Current). The batch of sh does not
// matter. It returns an error for an invalid or depthwise shape or a slice
// that is too short.
func PackConv(sh ConvShape, dst, w []float32) (ConvPacked, error) {
	const fn = "PackConv"
	if err := sh.Validate(); err != nil {
		return ConvPacked{}, fmt.Errorf("kernels.%s: %w", fn, err)
	}
	if sh.convDirect() {
		return ConvPacked{}, fmt.Errorf("kernels.%s: shape %+v is depthwise: its forward reads the weights in place, there is nothing to pack (use ConvForward)", fn, sh)
	}
	mr := convPackMR()
	need := convPackedLen(sh, mr)
	if err := errors.Join(convCheckLen(fn, "w", len(w), sh.WLen()), convCheckLen(fn, "dst", len(dst), need)); err != nil {
		return ConvPacked{}, err
	}
	dst = dst[:need:need]
	if mr == 0 {
		copy(dst, w[:sh.WLen()])
	} else {
		og, k := sh.OutC/sh.Groups, sh.InC/sh.Groups*sh.KH*sh.KW
		mg := roundUp(og, mr)
		for g := 0; g < sh.Groups; g++ {
			// The driver's own packing of the whole group as one block:
			// panel q at q·mr·k, element (i, p) at p·mr + i, rows past og
			// zero.
			sgemmPackA(false, w[g*og*k:], k, 0, 0, og, k, mr, dst[g*mg*k:(g+1)*mg*k])
		}
	}
	return ConvPacked{sh: convPackKey(sh), data: dst, mr: mr}, nil
}

// Current reports whether p is still in the layout the forward of the
// implementation in use reads (false for the zero ConvPacked, and after
// kernels.Use switched to an implementation whose SGEMM tile has another
// number of rows): ConvForwardPacked refuses packed weights that are not.
func (p ConvPacked) Current() bool { return p.sh.Groups > 0 && p.mr == convPackMR() }

// ConvForwardPacked is ConvForward with the weights packed by PackConv for
// the same shape (any batch): y = conv(x, w) + bias, the same bits as
// ConvForward on the weights p was packed from, on every path. work is as
// for ConvForward (sh.WorkSize(), or ArenaWorkSize to use no memory
// outside the arguments). It does not allocate and returns an error for an
// invalid shape, a slice that is too short, or packed weights of another
// shape or not Current.
func ConvForwardPacked(sh ConvShape, y, x []float32, p ConvPacked, bias, work []float32) error {
	return convForwardPacked("ConvForwardPacked", sh, y, x, p, bias, work, false)
}

// ConvForwardPackedReLU is ConvForwardPacked followed by y = max(y, 0), as
// ConvForwardReLU: the same bits as ConvForwardReLU.
func ConvForwardPackedReLU(sh ConvShape, y, x []float32, p ConvPacked, bias, work []float32) error {
	return convForwardPacked("ConvForwardPackedReLU", sh, y, x, p, bias, work, true)
}

func convForwardPacked(fn string, sh ConvShape, y, x []float32, p ConvPacked, bias, work []float32, relu bool) error {
	if err := convCheck(fn, sh, work); err != nil {
		return err
	}
	if p.sh != convPackKey(sh) {
		return fmt.Errorf("kernels.%s: weights packed for shape %+v, not %+v", fn, p.sh, convPackKey(sh))
	}
	if !p.Current() {
		return fmt.Errorf("kernels.%s: weights packed in panels of %d rows, the implementation in use (%s) reads %d: PackConv again", fn, p.mr, Impl(), convPackMR())
	}
	if err := errors.Join(convCheckLen(fn, "y", len(y), sh.YLen()), convCheckLen(fn, "x", len(x), sh.XLen()),
		convCheckLen(fn, "packed weights", len(p.data), convPackedLen(sh, p.mr))); err != nil {
		return err
	}
	if bias != nil && len(bias) < sh.OutC {
		return fmt.Errorf("kernels.%s: bias has %d elements, OutC=%d", fn, len(bias), sh.OutC)
	}
	if sh.Batch == 0 {
		return nil
	}
	// The dispatch of convForward (depthwise shapes are never packed).
	if p.mr == 0 {
		convGemmForward(sh, y, x, p.data, bias, work)
		if relu {
			reluRows(y[:sh.YLen()], y)
		}
		return nil
	}
	if f, mr, nr := convDirectKernel(); f != nil {
		if g, ok := sh.directForwardGeom(mr, nr); ok {
			convDirectForward(f, mr, g, sh, y, x, nil, p.data, bias, work, relu)
			return nil
		}
	}
	convImplicitForward(convDriver(), sh, y, x, p.data, true, bias, work, relu)
	return nil
}
