package kernels

// Implicit-GEMM convolutions.
//
// The im2col path (conv.go) writes the K×N column matrix of a chunk to
// scratch, and the GEMM then reads it again to pack its nr-column panels:
// two passes over K·N floats (K = (InC/Groups)·KH·KW taps, N = images·P
// output positions) that cost about as much as the products on the deep
// model's layers. Here the blocked driver (sgemm_blocked.go) packs its
// panels straight from the activations instead, through a convIndex that
// maps a (tap, position) pair of the never-materialised matrix to memory:
//
//	tap t      = (c, kh, kw):  c = t / (KH·KW), kh = t % (KH·KW) / KW, kw = t % KW
//	position j = (i, oh, ow):  i = j / P, oh = j % P / OutW, ow = j % OutW
//	element    = x[n0+i, g·Cg + c, oh·SH − PH + kh, ow·SW − PW + kw]   (0 in the padding)
//
// Columns are image-major (j = i·P + q), so a chunk's GEMM output and dY
// are copies of whole P-runs away from NCHW.
//
//   - Forward: y_g = W_g · col, op(B) = col with taps as rows (tapsRows),
//     packed from x.
//   - Filter gradient: dW_g += dY_g · colᵀ, op(B) = colᵀ with positions as
//     rows, packed from x.
//   - Data gradient: dcol = W_gᵀ · dY_g is never stored either: the driver
//     hands every finished mr×nr tile of it to convIndex.addTile, which adds
//     it into dx (col2im on a tile still in L1).
//
// A panel row whose elements lie in one contiguous run of memory (stride 1
// within one output row, no padding in reach) is one copy; otherwise it is
// a gather, element by element, with a bounds test only when the panel
// reaches the padding. The results differ from the im2col path's in the
// order of the data-gradient sums only; both are tested against the same
// float64 reference.

// convMaxNR bounds the nr of a driver the implicit path runs on (the
// per-panel index arrays live on the stack). Every tile of the tables has
// nr ≤ 48.
const convMaxNR = 64

// convImplicit turns the implicit path off for tests (the im2col path then
// runs on every implementation); convTestDriver, when set, replaces the
// current implementation's driver (tests run tiny blockings on it).
var (
	convImplicit   = true
	convTestDriver *sgemmBlocked
)

// convDriver returns the blocked driver the implicit path runs on, or nil
// for the im2col path (the reference implementation has no driver).
func convDriver() *sgemmBlocked {
	if !convImplicit {
		return nil
	}
	g := cur.sgemmDriver
	if convTestDriver != nil {
		g = convTestDriver
	}
	if g == nil || g.nr > convMaxNR {
		return nil
	}
	if kc, _ := g.maxBlocks(); kc > convMaxKC {
		return nil
	}
	return g
}

// convIndex maps the implicit matrices of one chunk (images n0 …, group g)
// of the shape s to the memory of x (the input, or the input gradient for
// addTile).
type convIndex struct {
	s        ConvShape
	x        []float32
	n0, g    int
	tapsRows bool // op(B)'s rows are taps (forward); else positions (filter gradient)
	// chwn, when not 0, is the image count of a chunk whose channels slab
	// x holds in CHWN order (x[((c·InH + h)·InW + w)·chwn + i], channel c
	// counted from the slab's first, see convTransposeIn), with
	// image-minor columns j = q·chwn + i (convIndexCHWN).
	chwn int

	// The column indices of the last addTile (its j0 and width), cached
	// across the mr-row tiles of one column panel.
	sinkJ0, sinkN     int
	sinkCols          convCols
	khw, hw, inHW, cg int
	outHW, outW       int

	// rows caches the row indices of the block being packed (offset, row
	// and column per row of op(B)), computed once per block instead of
	// once per panel.
	rowOff, rowH, rowW [convMaxKC]int
}

// convMaxKC bounds the kc of a driver the implicit path runs on (the
// row cache of convIndex). Every blocking of the tables has kc ≤ 512,
// which the driver stretches to at most 640 (sgemmBlocked.blocks).
const convMaxKC = 640

// convCols holds the memory offset, input row and input column (before the
// tap's kh, kw) of up to convMaxNR matrix columns, and whether they are one
// contiguous run and the range of their rows and columns.
type convCols struct {
	off, h, w              [convMaxNR]int
	contig                 bool
	hmin, hmax, wmin, wmax int
	// runs is the number of runs (columns in one input row, h constant,
	// whose offsets and w step by a constant step[r]: 1 in a stride-1
	// output row, the stride in a strided one), run[r] the first column of
	// run r; run[runs] is the column count.
	runs int
	run  [convMaxNR + 1]int
	step [convMaxNR]int
}

// convMinRun is the mean run length from which a panel row is packed (or a
// tile added) run by run with copy and vector loops rather than element
// by element (a stride-1 convolution whose output rows are narrower than
// the panel: Sabour's conv1, 20 wide, the deep model's first, 34).
const convMinRun = 6

func newConvIndex(s ConvShape, x []float32, n0, g int, tapsRows bool) convIndex {
	return convIndex{s: s, x: x, n0: n0, g: g, tapsRows: tapsRows, sinkJ0: -1,
		khw: s.KH * s.KW, hw: s.InH * s.InW, inHW: s.InC * s.InH * s.InW, cg: s.InC / s.Groups,
		outHW: s.OutH() * s.OutW(), outW: s.OutW()}
}

// convIndexCHWN returns the convIndex of the forward product (taps as
// rows) or the data gradient's sink over xT, the CHWN slab of a chunk of
// nc > 1 images (convTransposeIn): tap t is tap t of the slab's channels,
// and the columns are image-minor, so the nc images of one output position
// are nc adjacent floats (a stride-1 output row: OutW·nc of them). Packing
// a panel row of B is then a few copies of nc or more floats instead of
// one gather per output row of the images (6 floats, 2 apart, for the
// primary capsules), and the sink's tiles are added the same way.
func convIndexCHWN(s ConvShape, xT []float32, nc int) convIndex {
	ci := newConvIndex(s, xT, 0, 0, true)
	ci.chwn = nc
	return ci
}

// tap returns the offset, row and column (kh, kw) of tap t of group g.
func (ci *convIndex) tap(t int) (off, h, w int) {
	c, r := t/ci.khw, t%ci.khw
	h, w = r/ci.s.KW, r%ci.s.KW
	if ci.chwn > 0 {
		return (c*ci.hw + h*ci.s.InW + w) * ci.chwn, h, w
	}
	return (ci.g*ci.cg+c)*ci.hw + h*ci.s.InW + w, h, w
}

// pos returns the offset, input row and input column of the top-left tap
// of position j of the chunk (negative in the padding).
func (ci *convIndex) pos(j int) (off, h, w int) {
	if ci.chwn > 0 {
		i, q := j%ci.chwn, j/ci.chwn
		h = q/ci.outW*ci.s.StrideH - ci.s.PadH
		w = q%ci.outW*ci.s.StrideW - ci.s.PadW
		return (h*ci.s.InW+w)*ci.chwn + i, h, w
	}
	i, q := j/ci.outHW, j%ci.outHW
	h = q/ci.outW*ci.s.StrideH - ci.s.PadH
	w = q%ci.outW*ci.s.StrideW - ci.s.PadW
	return (ci.n0+i)*ci.inHW + h*ci.s.InW + w, h, w
}

// row and col index op(B): rows are taps and columns positions when
// tapsRows, the other way round otherwise.
func (ci *convIndex) row(p int) (off, h, w int) {
	if ci.tapsRows {
		return ci.tap(p)
	}
	return ci.pos(p)
}

func (ci *convIndex) col(j int) (off, h, w int) {
	if ci.tapsRows {
		return ci.pos(j)
	}
	return ci.tap(j)
}

// cols fills c with columns j0 … j0+n−1 of op(B).
func (ci *convIndex) cols(c *convCols, j0, n int) {
	c.hmin, c.wmin = int(^uint(0)>>1), int(^uint(0)>>1)
	c.hmax, c.wmax = -c.hmin-1, -c.wmin-1
	c.runs = 0
	for jj := 0; jj < n; jj++ {
		o, h, w := ci.col(j0 + jj)
		c.off[jj], c.h[jj], c.w[jj] = o, h, w
		switch r := c.runs - 1; {
		case jj == 0 || (jj-c.run[r] > 1 && o-c.off[jj-1] != c.step[r]) || o <= c.off[jj-1] || h != c.h[jj-1]:
			c.run[c.runs], c.step[c.runs] = jj, 1
			c.runs++
		case jj-c.run[r] == 1: // the run's second column sets its step
			c.step[r] = o - c.off[jj-1]
		}
		c.hmin, c.hmax = min(c.hmin, h), max(c.hmax, h)
		c.wmin, c.wmax = min(c.wmin, w), max(c.wmax, w)
	}
	c.run[c.runs] = n
	c.contig = c.runs == 1 && c.step[0] == 1
}

// byRuns reports whether rows of n columns are best moved run by run.
func (c *convCols) byRuns(n int) bool { return n >= convMinRun*c.runs }

// inside reports whether every column of c plus the row's (h, w) lies in
// the input (no padding in reach).
func (ci *convIndex) inside(c *convCols, h, w int) bool {
	return h+c.hmin >= 0 && h+c.hmax < ci.s.InH && w+c.wmin >= 0 && w+c.wmax < ci.s.InW
}

// validRun returns the columns [a+lo, a+hi) of the run [a, b) (step st in
// w, one input row) that lie in the input once the row's (rh, rw) is
// added; lo = hi when none does.
func (ci *convIndex) validRun(c *convCols, a, b, rh, rw, st int) (lo, hi int) {
	n := b - a
	if h := c.h[a] + rh; h < 0 || h >= ci.s.InH {
		return 0, 0
	}
	w0 := c.w[a] + rw
	if w0 < 0 {
		lo = (-w0 + st - 1) / st // the first j with w0 + j·st ≥ 0
	}
	if ci.s.InW-w0 <= 0 {
		return 0, 0
	}
	hi = min(n, (ci.s.InW-w0+st-1)/st) // the first j with w0 + j·st ≥ InW
	if lo >= hi {
		return 0, 0
	}
	return lo, hi
}

// packB packs op(B)[pc:pc+kc, jc:jc+nc] into nr-column panels, as
// sgemmPackB does for a stored matrix: panel q holds columns q·nr… at
// dst[q·nr·kc:], element (p, j) at p·nr+j, columns past nc zero.
func (ci *convIndex) packB(pc, jc, kc, nc, nr int, dst []float32) {
	var c convCols
	x := ci.x
	for p := 0; p < kc; p++ {
		ci.rowOff[p], ci.rowH[p], ci.rowW[p] = ci.row(pc + p)
	}
	for jr := 0; jr < nc; jr += nr {
		cols := min(nr, nc-jr)
		ci.cols(&c, jc+jr, cols)
		d := dst[jr*kc : jr*kc+kc*nr]
		off := c.off[:cols]
		for p := 0; p < kc; p++ {
			ro, rh, rw := ci.rowOff[p], ci.rowH[p], ci.rowW[p]
			row := d[p*nr : p*nr+nr]
			if cols < nr {
				clear(row[cols:])
				row = row[:cols]
			}
			switch {
			case !ci.inside(&c, rh, rw) && c.byRuns(cols) && ci.chwn == 0:
				// In reach of the padding: each run's valid part is a
				// contiguous range of its columns (NCHW: a run's columns
				// step along w; in a CHWN run they do not).
				for r := 0; r < c.runs; r++ {
					a, b := c.run[r], c.run[r+1]
					lo, hi := ci.validRun(&c, a, b, rh, rw, c.step[r])
					clear(row[a : a+lo])
					if lo < hi {
						gatherStrided(row[a+lo:a+hi], x[ro+off[a+lo]:], c.step[r])
					}
					clear(row[a+hi : b])
				}
			case !ci.inside(&c, rh, rw):
				for jj := range row {
					h, w := rh+c.h[jj], rw+c.w[jj]
					if uint(h) < uint(ci.s.InH) && uint(w) < uint(ci.s.InW) {
						row[jj] = x[ro+off[jj]]
					} else {
						row[jj] = 0
					}
				}
			case c.contig:
				copy(row, x[ro+off[0]:])
			case c.byRuns(cols):
				for r := 0; r < c.runs; r++ {
					a, b := c.run[r], c.run[r+1]
					gatherStrided(row[a:b], x[ro+off[a]:], c.step[r])
				}
			default:
				for jj, o := range off {
					row[jj] = x[ro+o]
				}
			}
		}
	}
}

// addTile adds the mr×nr tile t (row stride ldt) of dcol = W_gᵀ·dY_g,
// rows i0 … (taps), columns j0 … (positions), into dx (ci.x): every
// element to the input element it was read from, padding dropped.
func (ci *convIndex) addTile(i0, j0, mr, nr int, t []float32, ldt int) {
	c := &ci.sinkCols
	if j0 != ci.sinkJ0 || nr != ci.sinkN {
		ci.cols(c, j0, nr)
		ci.sinkJ0, ci.sinkN = j0, nr
	}
	dx := ci.x
	off := c.off[:nr]
	for i := 0; i < mr; i++ {
		ro, rh, rw := ci.tap(i0 + i)
		tr := t[i*ldt : i*ldt+nr]
		switch {
		case !ci.inside(c, rh, rw):
			for jj, v := range tr {
				h, w := rh+c.h[jj], rw+c.w[jj]
				if uint(h) < uint(ci.s.InH) && uint(w) < uint(ci.s.InW) {
					dx[ro+off[jj]] += v
				}
			}
		case c.contig:
			addTo(dx[ro+off[0]:ro+off[0]+nr], tr)
		case c.byRuns(nr):
			for r := 0; r < c.runs; r++ {
				a, b := c.run[r], c.run[r+1]
				addStrided(dx[ro+off[a]:], tr[a:b], c.step[r])
			}
		default:
			for jj, v := range tr {
				dx[ro+off[jj]] += v
			}
		}
	}
}

// implicitDims returns the output positions per image P, the output
// channels per group, the reduction length (taps per group) and the images
// per chunk of the implicit GEMMs.
func (s ConvShape) implicitDims() (p, og, k, nb int) {
	nb, _ = s.convPlan()
	return s.OutH() * s.OutW(), s.OutC / s.Groups, s.InC / s.Groups * s.KH * s.KW, nb
}

// convEpilogueFloats is the size of the blocks of output rows that
// convImplicitForward copies from its scratch and then runs the bias and
// ReLU kernel on (8 KB: they stay in the level-1 cache between the two).
const convEpilogueFloats = 2048

// convImplicitForward is the forward pass on the driver drv: per chunk and
// group, y_g = W_g·col with col packed from x, then the bias and the ReLU
// when relu. A chunk of one image packs from x and writes y directly. A
// chunk of several images goes through CHWN slabs of channels
// (convImplicitSlabs; one product per slab, accumulating) into the
// image-minor scratch C, which the epilogue scatters to NCHW with the bias
// and the ReLU. work is the shape's scratch (WorkSize and the products'
// packing space). When packed, w holds the weights packed for drv
// (ConvPacked: each group's rows in mr-row panels over the whole
// reduction), which the products read in place.
func convImplicitForward(drv *sgemmBlocked, s ConvShape, y, x, w []float32, packed bool, bias, work []float32, relu bool) {
	p, og, k, nb := s.implicitDims()
	cg, khw, hw := s.InC/s.Groups, s.KH*s.KW, s.InH*s.InW
	// The A operand of group g from input channel c0 on is w[g·ga + c0·ca:]
	// with row stride (or panel reduction) k.
	ga, ca := og*k, khw
	if packed {
		ga, ca = roundUp(og, drv.mr)*k, khw*drv.mr
	}
	_, outBuf, _ := convWork(s, work)
	slabBuf, ct := convImplicitSlabs(s, work)
	gw := convGemmWork(s, work)
	for n0 := 0; n0 < s.Batch; n0 += nb {
		nc := min(nb, s.Batch-n0)
		ld := nc * p
		for g := 0; g < s.Groups; g++ {
			var bg []float32
			if bias != nil {
				bg = bias[g*og : (g+1)*og]
			}
			if nc == 1 {
				ci := newConvIndex(s, x, n0, g, true)
				src := gemmB{conv: &ci}
				out := y[(n0*s.OutC+g*og)*p : (n0*s.OutC+(g+1)*og)*p]
				drv.gemm(false, packed, og, p, k, 1, w[g*ga:], k, &src, 0, out, p, nil, gw)
				biasActRows(og, p, out, p, bg, relu)
				continue
			}
			out := outBuf[:og*ld]
			if !s.implicitCHWN(nc) {
				ci := newConvIndex(s, x, n0, g, true)
				src := gemmB{conv: &ci}
				drv.gemm(false, packed, og, ld, k, 1, w[g*ga:], k, &src, 0, out, ld, nil, gw)
				convScatterMajor(s, y, out, bg, n0, nc, g, relu)
				continue
			}
			for c0 := 0; c0 < cg; c0 += ct {
				ns := min(ct, cg-c0)
				xT := slabBuf[:ns*hw*nc]
				convTransposeIn(s, x, n0, nc, g*cg+c0, ns, xT)
				ci := convIndexCHWN(s, xT, nc)
				src := gemmB{conv: &ci}
				var beta float32
				if c0 > 0 {
					beta = 1
				}
				drv.gemm(false, packed, og, ld, ns*khw, 1, w[g*ga+c0*ca:], k, &src, beta, out, ld, nil, gw)
			}
			convScatterMinor(s, y, out, bg, n0, nc, g, relu)
		}
	}
}

// implicitCHWN reports whether the implicit GEMM runs a chunk of nc
// images on CHWN slabs (image-minor columns: runs of nc adjacent floats per
// output position) rather than on x itself (image-major: runs of one
// output row, OutW floats StrideW apart): when nc ≥ 2·OutW. Measured on
// avx512 (Intel family 6 model 167), batch 32: the primary capsules (nc 16,
// OutW 6) forward 133 → 149 GFLOP/s and data gradient 108 → 116 on CHWN
// slabs; the deep model's 32×32 → 15×15 layer (nc 4, OutW 15) forward 83 →
// 64 and data gradient 65 → 56, so it stays on x.
func (s ConvShape) implicitCHWN(nc int) bool { return nc > 1 && nc >= 2*s.OutW() }

// convImplicitSlabs returns the buffer the batched chunks' CHWN slabs (of
// the input, or of the input gradient) are built in, and the channels per
// slab: the larger of the im2col path's column slab, which the implicit
// path does not use, and its CHWN slab, as many channels as it holds
// (balanced over the group's channels; the primary capsules' 256 channels
// of 16 images go in two slabs of 128).
func convImplicitSlabs(s ConvShape, work []float32) (buf []float32, ct int) {
	col, _, xT := convWork(s, work)
	buf = col
	if len(xT) > len(buf) {
		buf = xT
	}
	nb, cs := s.convPlan()
	cg := s.InC / s.Groups
	ct = min(cg, max(cs, len(buf)/(s.InH*s.InW*nb)))
	slabs := (cg + ct - 1) / ct
	return buf, (cg + slabs - 1) / slabs
}

// convScatterMajor writes the image-major product C (og×(nc·P), columns
// i·P + q) of group g of images n0 … n0+nc−1 into NCHW y, in blocks of
// rows copied and then given their bias bg (nil: none) and ReLU (relu)
// while in cache.
func convScatterMajor(s ConvShape, y, c, bg []float32, n0, nc, g int, relu bool) {
	p := s.OutH() * s.OutW()
	og := s.OutC / s.Groups
	ld := nc * p
	rb := max(1, convEpilogueFloats/p)
	for i := 0; i < nc; i++ {
		yi := y[((n0+i)*s.OutC+g*og)*p : ((n0+i)*s.OutC+(g+1)*og)*p]
		for o0 := 0; o0 < og; o0 += rb {
			o1 := min(og, o0+rb)
			for o := o0; o < o1; o++ {
				copy(yi[o*p:(o+1)*p], c[o*ld+i*p:])
			}
			var bb []float32
			if bg != nil {
				bb = bg[o0:o1]
			}
			biasActRows(o1-o0, p, yi[o0*p:], p, bb, relu)
		}
	}
}

// convScatterMinor writes the image-minor product C (og×(nc·P), columns
// q·nc + i) of group g of images n0 … n0+nc−1 into NCHW y, adding the bias
// bg (nil: none) and applying the ReLU when relu.
func convScatterMinor(s ConvShape, y, c, bg []float32, n0, nc, g int, relu bool) {
	p := s.OutH() * s.OutW()
	og := s.OutC / s.Groups
	ld := nc * p
	for o := 0; o < og; o++ {
		var b float32
		if bg != nil {
			b = bg[o]
		}
		src := c[o*ld : (o+1)*ld]
		for i := 0; i < nc; i++ {
			dst := y[((n0+i)*s.OutC+g*og+o)*p : ((n0+i)*s.OutC+g*og+o+1)*p]
			if relu {
				for q := range dst {
					dst[q] = max(src[q*nc+i]+b, 0) // biasActRef's ReLU: NaN propagates
				}
				continue
			}
			for q := range dst {
				dst[q] = src[q*nc+i] + b
			}
		}
	}
}

// convImplicitBackward is ConvBackward on the driver drv: per chunk, the
// ReLU mask of its dy (when y is given), its bias gradient (dbias not
// nil), and per group the filter gradient (dw not nil; dW_g += dY_g·colᵀ
// with colᵀ packed from x) and the data gradient (dx not nil; the tiles of
// dcol = W_gᵀ·dY_g added into dx as the driver finishes them).
// ConvBackwardFilter and ConvBackwardData are its two halves.
func convImplicitBackward(drv *sgemmBlocked, s ConvShape, dw, dbias, dx, x, dy, w, y, work []float32) {
	p, og, k, nb := s.implicitDims()
	cg, khw, hw := s.InC/s.Groups, s.KH*s.KW, s.InH*s.InW
	_, tBuf, _ := convWork(s, work)
	slabBuf, ct := convImplicitSlabs(s, work)
	gw := convGemmWork(s, work)
	if dx != nil {
		clear(dx[:s.XLen()])
	}
	for n0 := 0; n0 < s.Batch; n0 += nb {
		nc := min(nb, s.Batch-n0)
		ld := nc * p
		chunk := dy[n0*s.OutC*p : (n0+nc)*s.OutC*p]
		if y != nil {
			reluMask(y[n0*s.OutC*p:(n0+nc)*s.OutC*p], chunk, chunk)
		}
		if dbias != nil {
			convBiasGrad(s, dbias, dy, n0, n0+nc)
		}
		for g := 0; g < s.Groups; g++ {
			t := convDyMatrix(s, dy, n0, nc, g, tBuf, true)
			if dw != nil {
				ci := newConvIndex(s, x, n0, g, false)
				src := gemmB{conv: &ci}
				drv.gemm(false, false, og, k, ld, 1, t, ld, &src, 1, dw[g*og*k:], k, nil, gw)
			}
			if dx == nil {
				continue
			}
			if !s.implicitCHWN(nc) {
				di := newConvIndex(s, dx, n0, g, true)
				srcD := gemmB{b: t, ldb: ld}
				drv.gemm(true, false, k, ld, og, 1, w[g*og*k:], k, &srcD, 0, nil, 0, &di, gw)
				continue
			}
			// Several images: dY in image-minor order, and per CHWN slab
			// the tiles of dcol added into dxT, then written to dx.
			t = convDyMatrix(s, dy, n0, nc, g, tBuf, false)
			srcD := gemmB{b: t, ldb: ld}
			for c0 := 0; c0 < cg; c0 += ct {
				ns := min(ct, cg-c0)
				dxT := slabBuf[:ns*hw*nc]
				clear(dxT)
				di := convIndexCHWN(s, dxT, nc)
				drv.gemm(true, false, ns*khw, ld, og, 1, w[g*og*k+c0*khw:], k, &srcD, 0, nil, 0, &di, gw)
				convTransposeOut(s, dxT, n0, nc, g*cg+c0, ns, dx)
			}
		}
	}
}

// gatherStrided sets dst[j] = src[j·st] for j < len(dst) (st ≥ 1).
func gatherStrided(dst, src []float32, st int) {
	n := len(dst)
	if n == 0 {
		return
	}
	switch st {
	case 1:
		copy(dst, src[:n])
	case 2:
		// Unrolled by 4 with constant indices into re-sliced windows: two
		// bounds checks per four values.
		src = src[:2*n-1]
		j := 0
		for ; j+4 <= n; j += 4 {
			s4 := src[2*j : 2*j+7]
			d4 := dst[j : j+4]
			d4[0], d4[1], d4[2], d4[3] = s4[0], s4[2], s4[4], s4[6]
		}
		for ; j < n; j++ {
			dst[j] = src[2*j]
		}
	default:
		src = src[:st*(n-1)+1]
		for j := range dst {
			dst[j] = src[st*j]
		}
	}
}

// addStrided adds src[j] to dst[j·st] for j < len(src) (st ≥ 1).
func addStrided(dst, src []float32, st int) {
	n := len(src)
	if n == 0 {
		return
	}
	if st == 1 {
		addTo(dst[:n], src)
		return
	}
	dst = dst[:st*(n-1)+1]
	for j, v := range src {
		dst[st*j] += v
	}
}
