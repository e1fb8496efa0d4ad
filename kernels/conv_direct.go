package kernels

import "unsafe"

// Direct convolutions: the micro-kernel reads the input in place.
//
// A convolution of stride 1 without padding reads, for output position
// (y, x) and tap (c, ky, kx), the input at c·H·W + (y+ky)·W + (x+kx). On the
// "wide" output grid whose rows have the input's width W (positions
// q = y·W + x, the last W − OutW of each row computed and thrown away), that
// address is off(c, ky, kx) + q: row p = (c, ky, kx) of the GEMM's B is the
// input itself from offset off(p) on, nr consecutive positions at a time.
// The direct micro-kernels (asm.SgemmTile.Direct) take these offsets instead
// of a packed panel, so nothing copies or packs the activations: the
// im2col/implicit-GEMM packing, which held these layers to a third to a
// half of the FMA peak, is gone (docs/performance.md). The weights, a few
// thousand values, are packed into mr-row panels once per call.
//
// A convolution of stride 2 is one of stride 1 on the input's four phases
// P[a,b][c, i, j] = x[c, 2i+a, 2j+b] (each H/2 × W/2, rounded up): tap
// (ky, kx) reads phase (ky mod 2, kx mod 2) at (y + ky/2, x + kx/2). One
// pass splits each image into its phases (a quarter of the copies that
// packing the 3×3 taps made), and the GEMM reads them in place as above,
// on the wide grid of the phases' width.
//
//	forward:        wide[o, q] = Σ_{c,ky,kx} W[o,c,ky,kx] · P[c,ky,kx][off(c,ky,kx) + q]
//	                y[o, y, x] = wide[o, y·Wp + x] (+ bias, ReLU), x < OutW
//	data gradient:  per phase (a, b) of dx, the stride-1 forward
//	                convolution of dY placed on a zeroed wide grid of the
//	                phases' width with a margin in front, by the taps of that
//	                phase turned (the offsets step back instead of forward)
//	                and their channels transposed; then the phases are put
//	                back in place.
//
// The forward's sums run over (c, ky, kx) in that order, the data
// gradient's over (o, ky, kx) within a phase: each output is one chain of
// fused multiply-adds.

// sgemmDirectFn is a direct GEMM on a tile of mr×nr (asm.SgemmTile.Direct):
// c[i·ldc+j] = alpha·Σ_p a[(i/mr)·lda + p·mr + i%mr]·b[offs[p]+j] (+ beta·c)
// for i < m, j < n, m a multiple of mr and n of nr.
type sgemmDirectFn func(m, n, kc int, a []float32, lda int, b []float32, offs []int32, c []float32, ldc int, alpha, beta float32)

// sgemmDirectAFn is a direct-A GEMM on a tile of mr×nr
// (asm.SgemmTile.DirectA): c[i·ldc+j] = alpha·Σ_p a[aoffs[i]+p]·
// b[(j/nr)·ldb + p·nr + j%nr] (+ beta·c) for i < m, j < n, m a multiple of
// mr and n of nr.
type sgemmDirectAFn func(m, n, kc int, a []float32, aoffs []int32, b []float32, ldb int, c []float32, ldc int, alpha, beta float32)

// convDirectKC is the reduction block of the direct GEMMs: the B rows of
// one tile of nr positions for convDirectKC taps (16 KiB at nr = 32) stay
// in the level-1 cache while every tile of rows uses them. (A variable
// for the tests.)
var convDirectKC = 128

// directGemm computes the m×p block c (ldc p) = A·B of k steps with
// directFn f, A packed whole (mr-row panels of k steps, k·mr apart), B
// read at src through offs, in blocks of convDirectKC steps (beta 1 after
// the first).
func directGemm(f sgemmDirectFn, mr, m, p, k int, ap, src []float32, offs []int32, c []float32) {
	for k0 := 0; k0 < k; k0 += convDirectKC {
		kb := min(convDirectKC, k-k0)
		beta := float32(1)
		if k0 == 0 {
			beta = 0
		}
		f(m, p, kb, ap[k0*mr:], k*mr, src, offs[k0:k0+kb], c, p, 1, beta)
	}
}

// convDirectMaxWaste bounds the share of the wide grid's positions, and of
// the tiles' rows, that are computed and thrown away: beyond it the
// implicit GEMM is used. (A variable for the tests.) At 0.25 the deep
// model's last 3×3 layer (15×15 → 7×7, stride 2: 15 of 64 wide positions
// thrown away) takes the direct path, Sabour's primary capsules (20×20 →
// 6×6: 28 of 64) do not.
var convDirectMaxWaste = 0.25

// convDirectOn turns the direct path off for tests and benchmarks (the
// implicit GEMM then runs where it would).
var convDirectOn = true

// convDirectKernel returns the direct GEMM of the driver the convolutions
// run on, with its tile, or nil.
func convDirectKernel() (f sgemmDirectFn, mr, nr int) {
	g := convDriver()
	if !convDirectOn || g == nil || g.direct == nil {
		return nil, 0, 0
	}
	return g.direct, g.mr, g.nr
}

// filterDirect returns the direct-A kernel, its tile's nr and the geometry
// of the shape's filter gradient on driver d: d's own tile where its
// geometry holds, else d's fallback tile (sgemmBlocked.filterA); ok false
// where neither takes the shape (or d has no direct-A kernel).
func (s ConvShape) filterDirect(d *sgemmBlocked) (f sgemmDirectAFn, nr int, g directGeom, n int, ok bool) {
	if d == nil || d.directA == nil {
		return nil, 0, g, 0, false
	}
	if g, n, ok = s.directFilterGeom(d.mr, d.nr); ok {
		return d.directA, d.nr, g, n, true
	}
	if d.filterA != nil {
		if g, n, ok = s.directFilterGeom(d.filterMR, d.filterNR); ok {
			return d.filterA, d.filterNR, g, n, true
		}
	}
	return nil, 0, g, 0, false
}

// convFilterDirect is filterDirect on the driver the convolutions run on
// (none when the direct paths are off).
func (s ConvShape) convFilterDirect() (f sgemmDirectAFn, nr int, g directGeom, n int, ok bool) {
	if !convDirectOn {
		return nil, 0, directGeom{}, 0, false
	}
	return s.filterDirect(convDriver())
}

// directGeom is the geometry of the direct forward (or data gradient) of a
// shape on a tile of mr×nr.
type directGeom struct {
	st     int // the stride (1 or 2): st² phases
	hp, wp int // the phases' height and width (the input's for stride 1)
	k      int // taps: the reduction length (all phases' for the data gradient)
	m      int // rows of C (output channels; input channels for the data gradient) rounded up to mr
	p      int // wide positions computed, a multiple of nr
	margin int // data gradient: the zeros in front of each dY plane
	plane  int // data gradient: the length of each wide dY plane
}

// directPhases reports the stride and phase size of a shape the direct
// path can take: stride 1 or 2 (the same both ways), no padding, one
// group, not depthwise.
func (s ConvShape) directPhases() (st, hp, wp int, ok bool) {
	st = s.StrideH
	if s.Groups != 1 || s.StrideW != st || (st != 1 && st != 2) || s.PadH != 0 || s.PadW != 0 || s.convDirect() {
		return 0, 0, 0, false
	}
	if s.OutH() <= 0 || s.OutW() <= 0 {
		return 0, 0, 0, false
	}
	// The offsets are int32: keep every plane set of an image (input,
	// phases, wide dY) far below 2³¹ values.
	if hw := s.InH * s.InW; max(s.InC, s.OutC) > convDirectMaxPlanes/hw {
		return 0, 0, 0, false
	}
	return st, (s.InH + st - 1) / st, (s.InW + st - 1) / st, true
}

// convDirectMaxPlanes bounds InC·InH·InW and OutC·InH·InW of a shape on
// the direct path (its int32 offsets then stay below 2³⁰).
const convDirectMaxPlanes = 1 << 27

// directForwardGeom is the forward's geometry, ok false where the direct
// path does not apply (directPhases), would throw away more than
// convDirectMaxWaste of the wide positions or of the tiles' rows, or has
// more than convDirectMaxA weights.
func (s ConvShape) directForwardGeom(mr, nr int) (g directGeom, ok bool) {
	st, hp, wp, ok := s.directPhases()
	if !ok || mr <= 0 || nr <= 0 {
		return g, false
	}
	oh, ow := s.OutH(), s.OutW()
	wide := (oh-1)*wp + ow
	g = directGeom{st: st, hp: hp, wp: wp, k: s.InC * s.KH * s.KW, m: roundUp(s.OutC, mr), p: roundUp(wide, nr)}
	return g, wasteOK(g.p-oh*ow, g.p) && wasteOK(g.m-s.OutC, g.m) && g.m*g.k <= convDirectMaxA
}

// directDataGeom is the data gradient's geometry: the conditions of
// directPhases, at most convDirectMaxWaste of the tiles' rows (input
// channels) thrown away, and at most convDirectMaxA weights. (On the deep
// model's first layer, one input channel in a tile of 8 rows ran at 17
// GFLOP/s against im2col's 43.)
func (s ConvShape) directDataGeom(mr, nr int) (g directGeom, ok bool) {
	st, hp, wp, ok := s.directPhases()
	if !ok || mr <= 0 || nr <= 0 {
		return g, false
	}
	g = directGeom{st: st, hp: hp, wp: wp, k: s.OutC * s.KH * s.KW, m: roundUp(s.InC, mr), p: roundUp(hp*wp, nr)}
	g.margin = (s.KH-1)/st*wp + (s.KW-1)/st
	g.plane = g.margin + g.p
	return g, wasteOK(g.m-s.InC, g.m) && g.m*g.k <= convDirectMaxA
}

// convDirectMaxA bounds the packed weights of a direct GEMM (floats): the
// direct path runs image by image, so its weights are read once per image
// and must stay in the level-2 cache. Sabour's primary capsules (5.3 M
// weights per data-gradient GEMM for 128 positions of an image) ran at 46
// GFLOP/s on it against 117 on the implicit GEMM, which batches images.
const convDirectMaxA = 1 << 17

// directFilterGeom is the filter gradient's geometry: the forward's wide
// grid (g.p positions, the reduction; g.k taps), with g.m the taps rounded
// up to mr (the rows of its C) and n the output channels rounded up to nr
// (its columns), ok false where the forward's conditions fail, more than
// convDirectMaxWaste of the taps' rows or of the channels' columns would
// be thrown away, or an image has fewer than convDirectMinFilterP wide
// positions.
func (s ConvShape) directFilterGeom(mr, nr int) (g directGeom, n int, ok bool) {
	g, ok = s.directForwardGeom(mr, nr)
	if !ok {
		return g, 0, false
	}
	g.m, n = roundUp(g.k, mr), roundUp(s.OutC, nr)
	return g, n, wasteOK(g.m-g.k, g.m) && wasteOK(n-s.OutC, n) && g.p >= convDirectMinFilterP
}

// convDirectMinFilterP is the fewest wide positions of an image for which
// the filter gradient takes the direct path: each kernel call reduces over
// one image's positions, and with fewer the tiles of C are loaded and
// stored more than they are computed. The deep model's last 3×3 layer (64
// positions) ran at 104 GFLOP/s on it against 130 on the implicit GEMM
// (Zen 5, avx512); its 32×32 → 15×15 layer (256 positions, 240 on the
// 16 columns of avx2's tile) at 95 against 89.
// (A variable for the tests.)
var convDirectMinFilterP = 200

// directFilter reports whether ConvBackwardFilter takes the direct path.
func (s ConvShape) directFilter() bool {
	_, _, _, _, ok := s.convFilterDirect()
	return ok
}

// directFilterWork is the scratch of the direct filter gradient: the A row
// offsets (m), dY's wide grid transposed into nr-column panels (p·n), the
// gradient's transpose (m·n) and the source buffer of the forward.
func (s ConvShape) directFilterWork(g directGeom, n int) int {
	return g.m + g.p*n + g.m*n + s.directSource(g)
}

// wasteOK reports whether thrown away of all is within convDirectMaxWaste.
func wasteOK(thrown, all int) bool { return float64(thrown) <= convDirectMaxWaste*float64(all) }

// roundUp returns n rounded up to a multiple of m.
func roundUp(n, m int) int { return (n + m - 1) / m * m }

// directForwardWork is the scratch of the direct forward: the packed
// weights (m·k), the offsets (k, as int32 in float32 slots), the wide
// output of one image (m·p) and one image's phases (stride 2), or a copy
// of the last image's input (stride 1), with room for the last tile's
// overhang.
func (s ConvShape) directForwardWork(g directGeom) int {
	return g.m*g.k + g.k + g.m*g.p + s.directSource(g)
}

// directOffset is the forward's offset of tap (c, ky, kx) in the phases
// (the input itself for stride 1).
func (s ConvShape) directOffset(g directGeom, c, ky, kx int) int {
	ph := ky%g.st*g.st + kx%g.st
	return (ph*s.InC+c)*g.hp*g.wp + ky/g.st*g.wp + kx/g.st
}

// directReach is the number of values the forward GEMM reads from the
// start of an image's input (or phases): the largest offset plus the wide
// positions.
func (s ConvShape) directReach(g directGeom) int {
	hi := 0
	for ky := 0; ky < s.KH; ky++ {
		for kx := 0; kx < s.KW; kx++ {
			hi = max(hi, s.directOffset(g, s.InC-1, ky, kx))
		}
	}
	return hi + g.p
}

// directSource is the length of the forward's buffer for one image's
// phases (stride 2) or its copy with a zero tail (stride 1, the last
// image when its last tile reaches past x).
func (s ConvShape) directSource(g directGeom) int {
	return max(s.directReach(g), g.st*g.st*s.InC*g.hp*g.wp)
}

// directDataWork is the scratch of the direct data gradient: the packed
// turned weights and the offsets of every phase, one image's wide dY and
// the wide dx of every phase (st², so that each row of dx is written once,
// its phases interleaved).
func (s ConvShape) directDataWork(g directGeom) int {
	return g.m*g.k + g.k + s.OutC*g.plane + g.st*g.st*g.m*g.p
}

// directWorkSize is the scratch the direct paths need on the largest tile
// of any implementation of this binary, or of the tests' driver (0 where
// none applies).
func (s ConvShape) directWorkSize() int {
	ws := s.directWork(convTestDriver)
	for _, o := range tables {
		ws = max(ws, s.directWork(o.sgemmDriver))
	}
	return ws
}

// directWork is the scratch the direct paths need on driver d (0 for nil
// or a driver without a direct kernel).
func (s ConvShape) directWork(d *sgemmBlocked) int {
	ws := 0
	if d == nil || d.direct == nil {
		return 0
	}
	if g, ok := s.directForwardGeom(d.mr, d.nr); ok {
		ws = max(ws, s.directForwardWork(g))
	}
	if g, ok := s.directDataGeom(d.mr, d.nr); ok {
		ws = max(ws, s.directDataWork(g))
	}
	if _, _, g, n, ok := s.filterDirect(d); ok {
		ws = max(ws, s.directFilterWork(g, n))
	}
	return ws
}

// int32s views n float32 slots of f as int32 (same size and alignment; the
// memory holds no pointers).
func int32s(f []float32, n int) []int32 {
	f = f[:n]
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*int32)(unsafe.Pointer(&f[0])), n)
}

// convDirectForward is the direct forward pass (see the top of the file):
// image by image, the phases (stride 2), the wide output in scratch, then
// its rows copied to y with the bias and the ReLU while in cache. packed,
// when not nil, holds the weights already in the panels below (ConvPacked),
// read in place of the packing into work.
func convDirectForward(f sgemmDirectFn, mr int, g directGeom, s ConvShape, y, x, w, packed, bias, work []float32, relu bool) {
	ap, work := work[:g.m*g.k], work[g.m*g.k:]
	offs, work := int32s(work, g.k), work[g.k:]
	wide, work := work[:g.m*g.p], work[g.m*g.p:]
	if packed != nil {
		ap = packed[:g.m*g.k]
	}
	// A = W (OutC × k, row-major) in mr-row panels, rows past OutC zero.
	for i0 := 0; packed == nil && i0 < g.m; i0 += mr {
		panel := ap[i0*g.k : (i0+mr)*g.k]
		for i := 0; i < mr; i++ {
			if i0+i >= s.OutC {
				for p := 0; p < g.k; p++ {
					panel[p*mr+i] = 0
				}
				continue
			}
			row := w[(i0+i)*g.k : (i0+i+1)*g.k]
			for p, v := range row {
				panel[p*mr+i] = v
			}
		}
	}
	khw := s.KH * s.KW
	for c := 0; c < s.InC; c++ {
		for ky := 0; ky < s.KH; ky++ {
			for kx := 0; kx < s.KW; kx++ {
				offs[c*khw+ky*s.KW+kx] = int32(s.directOffset(g, c, ky, kx))
			}
		}
	}
	buf := work[:s.directSource(g)]
	oh, ow := s.OutH(), s.OutW()
	op := oh * ow
	for n := 0; n < s.Batch; n++ {
		src := s.directImage(g, x, n, buf)
		directGemm(f, mr, g.m, g.p, g.k, ap, src, offs, wide)
		directEpilogue(s.OutC, oh, ow, y[n*s.OutC*op:(n+1)*s.OutC*op], wide, g.wp, g.p, bias, relu)
	}
}

// directEpilogue writes the ch channels of rows×n output values y from
// the wide grid src (row stride lds, channel stride ldc), with the bias
// and the ReLU: the compactAct kernel (the copy and biasAct in one pass),
// with zeroBias for a layer without bias; a plain copy when there is
// neither (adding +0 would turn −0 into +0).
func directEpilogue(ch, rows, n int, y, src []float32, lds, ldc int, bias []float32, relu bool) {
	if bias == nil && !relu {
		for o := 0; o < ch; o++ {
			yo, so := y[o*rows*n:(o+1)*rows*n], src[o*ldc:]
			for r := 0; r < rows; r++ {
				copy(yo[r*n:(r+1)*n], so[r*lds:])
			}
		}
		return
	}
	act := 0
	if relu {
		act = 1
	}
	for o0 := 0; o0 < ch; {
		nc, b := ch-o0, bias
		if b == nil {
			nc, b = min(nc, len(zeroBias)), zeroBias[:]
		} else {
			b = b[o0:]
		}
		cur.compactAct(nc, rows, n, y[o0*rows*n:], src[o0*ldc:], lds, ldc, b[:nc], act)
		o0 += nc
	}
}

// directImage returns what the direct GEMMs read of image n of x: x itself
// from the image on, or, in buf (directSource values), the image's phases
// (stride 2) or a copy of it with a zero tail when its last tile would
// read past the end of x.
func (s ConvShape) directImage(g directGeom, x []float32, n int, buf []float32) []float32 {
	img := s.InC * s.InH * s.InW
	xi := x[n*img : (n+1)*img]
	switch {
	case g.st == 2:
		splitPhases(s, g, xi, buf)
		return buf
	case len(x)-n*img < s.directReach(g):
		copy(buf, xi)
		clear(buf[img:])
		return buf
	}
	return x[n*img:]
}

// convDirectFilter is the direct filter gradient: per image, dY's wide
// grid (zero at the thrown-away positions) transposed into panels of nr
// channels, and dWᵀ[tap, o] += Σ_q x[off(tap) + q]·dY[o, q] with the taps'
// rows read in place (the direct-A kernel), in blocks of convDirectFKC
// positions; then dw += the transpose. Each gradient value is one chain
// of fused multiply-adds over the images and their positions in order.
func convDirectFilter(f sgemmDirectAFn, nr int, g directGeom, n int, s ConvShape, dw, x, dy, work []float32) {
	aoffs, work := int32s(work, g.m), work[g.m:]
	bp, work := work[:g.p*n], work[g.p*n:]
	ct, work := work[:g.m*n], work[g.m*n:]
	buf := work[:s.directSource(g)]
	khw := s.KH * s.KW
	for c := 0; c < s.InC; c++ {
		for ky := 0; ky < s.KH; ky++ {
			for kx := 0; kx < s.KW; kx++ {
				aoffs[c*khw+ky*s.KW+kx] = int32(s.directOffset(g, c, ky, kx))
			}
		}
	}
	for i := g.k; i < g.m; i++ {
		aoffs[i] = 0 // rows past the taps: read anything valid, thrown away
	}
	clear(bp) // the thrown-away positions and the channels past OutC stay 0
	oh, ow := s.OutH(), s.OutW()
	op := oh * ow
	for im := 0; im < s.Batch; im++ {
		src := s.directImage(g, x, im, buf)
		transposePanels(bp, dy[im*s.OutC*op:(im+1)*s.OutC*op], s.OutC, oh, ow, g.wp, g.p, nr)
		for q0 := 0; q0 < g.p; q0 += convDirectFKC {
			kb := min(convDirectFKC, g.p-q0)
			beta := float32(1)
			if im == 0 && q0 == 0 {
				beta = 0
			}
			f(g.m, n, kb, src[q0:], aoffs, bp[q0*nr:], g.p*nr, ct, n, 1, beta)
		}
	}
	for o := 0; o < s.OutC; o++ {
		row := dw[o*g.k : (o+1)*g.k]
		for t := range row {
			row[t] += ct[t*n+o]
		}
	}
}

// convDirectFKC is the reduction block (positions) of the direct filter
// gradient: a block of a B panel (32 KiB at nr = 32) stays in the level-1
// cache while every tile of taps uses it. (A variable for the tests.)
var convDirectFKC = 256

// splitPhases writes the four stride-2 phases of one image xi into dst:
// phase (a, b) of channel c at dst[((a·2+b)·InC + c)·hp·wp], row i holding
// x[c, 2i+a, b], x[c, 2i+a, b+2], …; the slots past the input's edge (odd
// sizes) and the tail after the last phase are zeroed (only thrown-away
// positions read them).
func splitPhases(s ConvShape, g directGeom, xi, dst []float32) {
	pp := g.hp * g.wp
	for c := 0; c < s.InC; c++ {
		xc := xi[c*s.InH*s.InW : (c+1)*s.InH*s.InW]
		// The rows of parity a into phases (a, 0) and (a, 1): g.wp is
		// ⌈InW/2⌉, so deinterleaveRows fills each phase row, the slot
		// past an odd row's end with 0.
		for a := 0; a < 2 && a < s.InH; a++ {
			cur.deinterleaveRows((s.InH-a+1)/2, s.InW, xc[a*s.InW:], 2*s.InW,
				dst[((a*2)*s.InC+c)*pp:], dst[((a*2+1)*s.InC+c)*pp:], g.wp)
		}
		if s.InH < 2*g.hp { // odd height: the last row of phases a = 1
			for b := 0; b < 2; b++ {
				clear(dst[((2+b)*s.InC+c)*pp+(g.hp-1)*g.wp:][:g.wp])
			}
		}
	}
	clear(dst[4*s.InC*pp:])
}

// deinterleave sets d0[j] = src[2j] and d1[j] = src[2j+1] (len(d0) =
// ⌈len(src)/2⌉, len(d1) = ⌊len(src)/2⌋).
func deinterleave(src, d0, d1 []float32) {
	j := 0
	for ; j+4 <= len(d1); j += 4 {
		s8 := src[2*j : 2*j+8]
		a, b := d0[j:j+4], d1[j:j+4]
		a[0], b[0], a[1], b[1] = s8[0], s8[1], s8[2], s8[3]
		a[2], b[2], a[3], b[3] = s8[4], s8[5], s8[6], s8[7]
	}
	for ; j < len(d1); j++ {
		d0[j], d1[j] = src[2*j], src[2*j+1]
	}
	if len(d0) > len(d1) {
		d0[len(d1)] = src[2*len(d1)]
	}
}

// convDirectData is the direct data gradient (see the top of the file):
// image by image, dY placed on its zeroed wide grid, then per phase the
// turned kernel run over it and the result put in dx.
func convDirectData(f sgemmDirectFn, mr int, g directGeom, s ConvShape, dx, dy, w, work []float32) {
	ap, work := work[:g.m*g.k], work[g.m*g.k:]
	offs, work := int32s(work, g.k), work[g.k:]
	e, work := work[:s.OutC*g.plane], work[s.OutC*g.plane:]
	st := g.st
	var outs [4][]float32 // the wide dx of each phase
	for ph := 0; ph < st*st; ph++ {
		outs[ph] = work[ph*g.m*g.p : (ph+1)*g.m*g.p]
	}
	// The taps of phase (a, b), o-major: A[c, t] = w[o, c, ky, kx] for the
	// t-th (o, ky, kx) with ky ≡ a, kx ≡ b (mod st), rows past InC zero,
	// in mr-row panels; offsets step back by (ky/st)·wp + kx/st.
	var kOf [4]int // taps of each phase
	k0 := 0
	for ph := 0; ph < st*st; ph++ {
		a, b := ph/st, ph%st
		pa := ap[k0*g.m:]
		t := 0
		for o := 0; o < s.OutC; o++ {
			for ky := a; ky < s.KH; ky += st {
				for kx := b; kx < s.KW; kx += st {
					offs[k0+t] = int32(o*g.plane + g.margin - ky/st*g.wp - kx/st)
					t++
				}
			}
		}
		kOf[ph] = t
		for i0 := 0; i0 < g.m; i0 += mr {
			panel := pa[i0*t : (i0+mr)*t]
			for i := 0; i < mr; i++ {
				c := i0 + i
				j := 0
				for o := 0; o < s.OutC; o++ {
					for ky := a; ky < s.KH; ky += st {
						for kx := b; kx < s.KW; kx += st {
							v := float32(0)
							if c < s.InC {
								v = w[((o*s.InC+c)*s.KH+ky)*s.KW+kx]
							}
							panel[j*mr+i] = v
							j++
						}
					}
				}
			}
		}
		k0 += t
	}
	clear(e)
	oh, ow := s.OutH(), s.OutW()
	op, hw := oh*ow, s.InH*s.InW
	for n := 0; n < s.Batch; n++ {
		dyn := dy[n*s.OutC*op:]
		for o := 0; o < s.OutC; o++ {
			eo, do := e[o*g.plane+g.margin:], dyn[o*op:]
			for r := 0; r < oh; r++ {
				copy(eo[r*g.wp:r*g.wp+ow], do[r*ow:(r+1)*ow])
			}
		}
		dxn := dx[n*s.InC*hw : (n+1)*s.InC*hw]
		k0 := 0
		for ph := 0; ph < st*st; ph++ {
			t := kOf[ph]
			if t == 0 { // a kernel narrower than the stride: no tap reads this phase's dx
				clear(outs[ph])
				continue
			}
			directGemm(f, mr, g.m, g.p, t, ap[k0*g.m:], e, offs[k0:k0+t], outs[ph])
			k0 += t
		}
		if st == 1 {
			for c := 0; c < s.InC; c++ {
				copy(dxn[c*hw:(c+1)*hw], outs[0][c*g.p:])
			}
			continue
		}
		// Row r of dx is row r/2 of phases (r mod 2, 0) and (r mod 2, 1),
		// interleaved: written once, front to back.
		n0, n1 := (s.InW+1)/2, s.InW/2
		for c := 0; c < s.InC; c++ {
			dc := dxn[c*hw : (c+1)*hw]
			for r := 0; r < s.InH; r++ {
				at := c*g.p + r/2*g.wp
				p0, p1 := outs[r%2*2][at:at+n0], outs[r%2*2+1][at:at+n1]
				interleave(dc[r*s.InW:(r+1)*s.InW], p0, p1)
			}
		}
	}
}

// interleave is the inverse of deinterleave: dst[2j] = d0[j] and
// dst[2j+1] = d1[j], len(d0) = (len(dst)+1)/2 and len(d1) = len(dst)/2.
func interleave(dst, d0, d1 []float32) {
	j := 0
	for ; j+4 <= len(d1); j += 4 {
		s8 := dst[2*j : 2*j+8]
		a, b := d0[j:j+4], d1[j:j+4]
		s8[0], s8[1], s8[2], s8[3] = a[0], b[0], a[1], b[1]
		s8[4], s8[5], s8[6], s8[7] = a[2], b[2], a[3], b[3]
	}
	for ; j < len(d1); j++ {
		dst[2*j], dst[2*j+1] = d0[j], d1[j]
	}
	if len(d0) > len(d1) {
		dst[2*len(d1)] = d0[len(d1)]
	}
}

// transposePanelBlock is the positions of a row that transposePanels moves
// at once: a cache line of every channel's row is read, and the block's
// nr-float rows of the panel (2 KiB at nr = 32) stay in the level-1 cache
// while the channels are written into them.
const transposePanelBlock = 16

// transposePanels writes one image's dY (c channels of oh×ow, NCHW) into
// the direct filter gradient's B panels bp: channel o at position
// q = y·wp + x of panel o/nr, bp[(o/nr)·p·nr + q·nr + o%nr]. The slots of
// the thrown-away positions (x ≥ ow) and of the channels past c are not
// written. It is, per image,
//
//	for o := 0; o < c; o++ {
//		for y := 0; y < oh; y++ {
//			for x := 0; x < ow; x++ {
//				bp[o/nr*p*nr+(y*wp+x)*nr+o%nr] = dy[o*oh*ow+y*ow+x]
//			}
//		}
//	}
//
// in blocks of transposePanelBlock positions: that loop writes each
// panel row, nr·4 bytes apart, once per channel, and ran at a third of
// the speed of the GEMM it feeds on the deep model's first layer.
func transposePanels(bp, dy []float32, c, oh, ow, wp, p, nr int) {
	op := oh * ow
	for ob := 0; ob < c; ob += nr {
		panel := bp[ob/nr*p*nr : (ob/nr+1)*p*nr]
		cn := min(nr, c-ob)
		// Groups of 16 channels by the transpose16 kernel where there is
		// one (AVX-512), the rest by the loops below.
		c16 := 0
		if cur.transpose16 != nil && nr%16 == 0 {
			for ; c16+16 <= cn; c16 += 16 {
				transpose16Call(oh, ow, dy[(ob+c16)*op:], op, ow, panel[c16:], nr, wp*nr)
			}
		}
		for y := 0; y < oh; y++ {
			for x0 := 0; x0 < ow; x0 += transposePanelBlock {
				xb := min(transposePanelBlock, ow-x0)
				dst := panel[(y*wp+x0)*nr : (y*wp+x0+xb)*nr]
				at := ob*op + y*ow + x0 // channel ob's block
				j := c16
				for ; j+8 <= cn; j += 8 { // eight channels: 32 contiguous bytes per position
					s0 := dy[at+j*op : at+j*op+xb]
					s1 := dy[at+(j+1)*op : at+(j+1)*op+xb][:len(s0)]
					s2 := dy[at+(j+2)*op : at+(j+2)*op+xb][:len(s0)]
					s3 := dy[at+(j+3)*op : at+(j+3)*op+xb][:len(s0)]
					s4 := dy[at+(j+4)*op : at+(j+4)*op+xb][:len(s0)]
					s5 := dy[at+(j+5)*op : at+(j+5)*op+xb][:len(s0)]
					s6 := dy[at+(j+6)*op : at+(j+6)*op+xb][:len(s0)]
					s7 := dy[at+(j+7)*op : at+(j+7)*op+xb][:len(s0)]
					for t := range s0 {
						d := dst[t*nr+j : t*nr+j+8 : t*nr+j+8]
						d[0], d[1], d[2], d[3] = s0[t], s1[t], s2[t], s3[t]
						d[4], d[5], d[6], d[7] = s4[t], s5[t], s6[t], s7[t]
					}
				}
				for ; j+4 <= cn; j += 4 {
					s0 := dy[at+j*op : at+j*op+xb]
					s1 := dy[at+(j+1)*op : at+(j+1)*op+xb][:len(s0)]
					s2 := dy[at+(j+2)*op : at+(j+2)*op+xb][:len(s0)]
					s3 := dy[at+(j+3)*op : at+(j+3)*op+xb][:len(s0)]
					for t := range s0 {
						d := dst[t*nr+j : t*nr+j+4 : t*nr+j+4]
						d[0], d[1], d[2], d[3] = s0[t], s1[t], s2[t], s3[t]
					}
				}
				for ; j < cn; j++ {
					for t, v := range dy[at+j*op : at+j*op+xb] {
						dst[t*nr+j] = v
					}
				}
			}
		}
	}
}
