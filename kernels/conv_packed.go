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
//
// Transposed packing, for small products at batch 1. When PackConv is
// given a shape of batch 1 whose output positions P = OutH·OutW leave
// most of the tile's nr columns empty (Sabour's primary capsules: 36
// positions in two 32-column panels of the avx512 8×32 tile, 56% of them
// used), it packs the weights as op(B) of the transposed product instead,
// Yᵀ = colᵀ·Wᵀ (positions as rows in mr-row panels, packed from the input
// on each call; output channels as columns): per group, the og rows
// rounded up to a multiple of the driver's nr, in nr-column panels over
// the whole reduction,
//
//	element (o, t) of group g at g·⌈og/nr⌉·nr·k + (o/nr)·nr·k + t·nr + o%nr
//
// so that a kc block of a panel is the kc·nr contiguous values from
// (o/nr)·nr·k + pc·nr on. The forward then computes the product image by
// image into its scratch and writes its transpose into y. Each element is
// still one chain of fused multiply-adds over the taps in order, split
// where the forward of the same batch splits it (convImplicitForwardT), so
// the bits are ConvForward's. It is chosen where its padded product,
// ⌈P/mr⌉·mr × ⌈og/nr⌉·nr, is at most convPackTRatio of the untransposed
// one and the forward would not take the direct path.

// ConvPacked is a convolution's weights packed for the forward pass of the
// implementation in use (PackConv). It refers to the caller's memory that
// PackConv filled; it is a small value, passed by value, and the zero
// ConvPacked is valid for no shape.
type ConvPacked struct {
	sh   ConvShape // the shape packed for, Batch 0
	data []float32
	mr   int // the panels' rows; 0: the weights as stored
	// nr is the columns of the panels of transposed packed weights (op(B)
	// of Yᵀ = colᵀ·Wᵀ, see above), 0 for the usual mr-row panels.
	nr int
}

// convPackTRatio is the largest ratio of the transposed product's padded
// size to the untransposed one's for which PackConv packs transposed
// (a variable for the tests, which force the transposed layout on every
// shape it can take). Sabour's primary capsules at batch 1 on an 8×32
// tile: 40×256 against 256×64, 0.625.
var convPackTRatio = 0.8

// packTransposed reports whether PackConv packs the weights of s (its
// Batch included) transposed for the driver drv: batch 1, the forward not
// on the direct path, and the transposed product's padded size at most
// convPackTRatio of the untransposed one's.
func (s ConvShape) packTransposed(drv *sgemmBlocked) bool {
	if drv == nil || s.Batch != 1 {
		return false
	}
	if f, mr, nr := convDirectKernel(); f != nil {
		if _, ok := s.directForwardGeom(mr, nr); ok {
			return false
		}
	}
	p, og := s.OutH()*s.OutW(), s.OutC/s.Groups
	plain := roundUp(og, drv.mr) * roundUp(p, drv.nr)
	tr := roundUp(p, drv.mr) * roundUp(og, drv.nr)
	return float64(tr) <= convPackTRatio*float64(plain)
}

// convPackedLenT is the length of the transposed packed weights of s in
// panels of nr columns.
func convPackedLenT(s ConvShape, nr int) int {
	og, k := s.OutC/s.Groups, s.InC/s.Groups*s.KH*s.KW
	return s.Groups * roundUp(og, nr) * k
}

// dataLen is the length of p's packed weights for the shape s.
func (p ConvPacked) dataLen(s ConvShape) int {
	if p.nr > 0 {
		return convPackedLenT(s, p.nr)
	}
	return convPackedLen(s, p.mr)
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
// stays enough after kernels.Use) and for the layout of the shape's batch
// (at batch 1 the larger of the usual and the transposed layout; see
// "Transposed packing" above); 0 for a depthwise
// shape (InC = OutC = Groups), whose forward reads the weights in place
// (there is nothing to pack: use ConvForward), and for a shape that fails
// Validate.
func (s ConvShape) PackedSize() int {
	if s.Validate() != nil || s.convDirect() {
		return 0
	}
	n := s.WLen()
	size := func(g *sgemmBlocked) {
		n = max(n, convPackedLen(s, g.mr))
		if s.Batch == 1 {
			n = max(n, convPackedLenT(s, g.nr))
		}
	}
	if convTestDriver != nil {
		size(convTestDriver)
	}
	for _, o := range tables {
		if o.sgemmDriver != nil {
			size(o.sgemmDriver)
		}
	}
	return n
}

// PackConv packs the OIHW weights w of the shape sh into dst (at least
// sh.PackedSize() floats; only the first part of it may be used) in the
// layout the forward of the implementation in use reads, and returns the
// packed weights, which refer to dst. Pack again after the weights change
// and after kernels.Use (see ConvPacked.Current). The packed weights serve
// the forward of any batch; the batch of sh only chooses the layout (at
// batch 1 it may be transposed, see above, for which PackedSize of the
// batch-1 shape makes room). It returns an error for an invalid or depthwise shape or a slice
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
	drv := convDriver()
	trans := mr > 0 && sh.packTransposed(drv)
	if trans {
		need = convPackedLenT(sh, drv.nr)
	}
	if err := errors.Join(convCheckLen(fn, "w", len(w), sh.WLen()), convCheckLen(fn, "dst", len(dst), need)); err != nil {
		return ConvPacked{}, err
	}
	dst = dst[:need:need]
	if trans {
		og, k := sh.OutC/sh.Groups, sh.InC/sh.Groups*sh.KH*sh.KW
		ng := roundUp(og, drv.nr)
		for g := 0; g < sh.Groups; g++ {
			// op(B)(t, o) = w[o·k + t] of the group, packed as the
			// driver packs a transposed B: one block over the whole
			// reduction, panel q at q·nr·k, columns past og zero.
			sgemmPackB(true, w[g*og*k:], k, 0, 0, k, og, drv.nr, dst[g*ng*k:(g+1)*ng*k])
		}
		return ConvPacked{sh: convPackKey(sh), data: dst, mr: mr, nr: drv.nr}, nil
	}
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
// number of rows, or, for transposed packed weights, of columns):
// ConvForwardPacked refuses packed weights that are not.
func (p ConvPacked) Current() bool {
	if p.sh.Groups <= 0 || p.mr != convPackMR() {
		return false
	}
	return p.nr == 0 || p.nr == convDriver().nr
}

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
		if p.nr > 0 && p.mr == convPackMR() {
			return fmt.Errorf("kernels.%s: weights packed transposed in panels of %d columns, the implementation in use (%s) reads %d: PackConv again", fn, p.nr, Impl(), convDriver().nr)
		}
		return fmt.Errorf("kernels.%s: weights packed in panels of %d rows, the implementation in use (%s) reads %d: PackConv again", fn, p.mr, Impl(), convPackMR())
	}
	if err := errors.Join(convCheckLen(fn, "y", len(y), sh.YLen()), convCheckLen(fn, "x", len(x), sh.XLen()),
		convCheckLen(fn, "packed weights", len(p.data), p.dataLen(sh))); err != nil {
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
	if p.nr > 0 {
		convImplicitForwardT(convDriver(), sh, y, x, p.data, bias, work, relu)
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

// convImplicitForwardT is the forward on transposed packed weights w (see
// above) on the driver drv: image by image and group by group, Yᵀ =
// colᵀ·Wᵀ into the scratch of the untransposed path's chunk output
// (og·P floats at least), then its transpose into y with the bias and the
// ReLU. The reduction is split where convImplicitForward splits it for
// the chunk of the batch the image belongs to (kc blocks of the whole
// reduction, or of each CHWN slab of channels), so every element is the
// same chain of fused multiply-adds and the same sum of blocks: the same
// bits.
func convImplicitForwardT(drv *sgemmBlocked, s ConvShape, y, x, w, bias, work []float32, relu bool) {
	p, og, k, nb := s.implicitDims()
	cg, khw := s.InC/s.Groups, s.KH*s.KW
	ga := roundUp(og, drv.nr) * k
	_, outBuf, _ := convWork(s, work)
	_, ct := convImplicitSlabs(s, work)
	gw := convGemmWork(s, work)
	yt := outBuf[:p*og]
	for n := 0; n < s.Batch; n++ {
		n0 := n / nb * nb
		nc := min(nb, s.Batch-n0)
		ld := nc * p
		for g := 0; g < s.Groups; g++ {
			ci := newConvIndex(s, x, n, g, true)
			wg := w[g*ga : (g+1)*ga]
			if nc > 1 && s.implicitCHWN(nc) {
				for c0 := 0; c0 < cg; c0 += ct {
					ns := min(ct, cg-c0)
					_, kcb := drv.blocks(ld, ns*khw)
					drv.gemmPackedB(p, og, k, c0*khw, (c0+ns)*khw, kcb, c0 > 0, &ci, wg, yt, og, gw)
				}
			} else {
				_, kcb := drv.blocks(ld, k)
				drv.gemmPackedB(p, og, k, 0, k, kcb, false, &ci, wg, yt, og, gw)
			}
			out := y[(n*s.OutC+g*og)*p : (n*s.OutC+(g+1)*og)*p]
			transposeInto(p, og, yt, og, out, p)
			var bg []float32
			if bias != nil {
				bg = bias[g*og : (g+1)*og]
			}
			biasActRows(og, p, out, p, bg, relu)
		}
	}
}

// transposeInto writes the transpose of the m×n matrix a (row stride lda)
// into b (n×m, row stride ldb), in blocks of 8×8 that stay in cache.
func transposeInto(m, n int, a []float32, lda int, b []float32, ldb int) {
	const t = 8
	for i0 := 0; i0 < m; i0 += t {
		i1 := min(i0+t, m)
		for j0 := 0; j0 < n; j0 += t {
			j1 := min(j0+t, n)
			for i := i0; i < i1; i++ {
				row := a[i*lda+j0 : i*lda+j1]
				for j, v := range row {
					b[(j0+j)*ldb+i] = v
				}
			}
		}
	}
}

// gemmPackedB adds to the loop nest of gemm the case of the transposed
// forward (convImplicitForwardT): C (m×n, row stride ldc) = op(A)·op(B)
// over the reduction range [k0, k1) in blocks of kcb, where op(A) is
// packed from a convolution's input by ci (its columns, the output
// positions of one image, as the rows of C: ci.packB with nr = mr is the
// driver's mr-row panel layout) and op(B) is already packed in nr-column
// panels over the whole reduction of length k (panel q at b[q·nr·k:],
// element (t, j) at t·nr + j), read in place. The first block overwrites C
// unless acc, later blocks add to it, as gemm does with beta 0. The
// packing buffer of A and the edge tile are carved from work when it is
// large enough, else taken from the free list.
func (g *sgemmBlocked) gemmPackedB(m, n, k, k0, k1, kcb int, acc bool, ci *convIndex, b, c []float32, ldc int, work []float32) {
	var own sgemmWork
	var pooled *sgemmWork
	w := &own
	mr, nr := g.mr, g.nr
	mcb := g.mcFor(false, kcb)
	na := roundUp(min(mcb, m), mr) * kcb
	if len(work) >= na+mr*nr {
		own = sgemmWork{a: work[:na:na], tile: work[na : na+mr*nr : na+mr*nr]}
	} else {
		pooled = g.getWork()
		own = *pooled
	}
	for pc := k0; pc < k1; pc += kcb {
		kc := min(kcb, k1-pc)
		var bet float32
		if pc > k0 || acc {
			bet = 1
		}
		for ic := 0; ic < m; ic += mcb {
			mc := min(mcb, m-ic)
			ci.packB(pc, ic, kc, mc, mr, w.a)
			for jr := 0; jr < n; jr += nr {
				nrr := min(nr, n-jr)
				o := jr*k + pc*nr
				bp := b[o : o+kc*nr]
				for ir := 0; ir < mc; ir += mr {
					mrr := min(mr, mc-ir)
					ap := w.a[ir*kc : ir*kc+kc*mr]
					cj := (ic+ir)*ldc + jr
					if mrr == mr && nrr == nr {
						g.micro(kc, ap, bp, c[cj:], ldc, 1, bet)
						continue
					}
					g.micro(kc, ap, bp, w.tile, nr, 1, 0)
					sgemmMergeTile(mrr, nrr, 1, w.tile, nr, bet, c[cj:], ldc)
				}
			}
		}
	}
	if pooled != nil {
		g.putWork(pooled)
	}
}
