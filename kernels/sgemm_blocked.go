package kernels

import "sync"

// sgemmMicro is a GEMM micro-kernel: it computes one mr×nr tile of C from a
// packed mr-row panel of op(A) and a packed nr-column panel of op(B):
//
//	for i < mr, j < nr: s = Σ_{p<kc} a[p*mr+i]·b[p*nr+j]
//	c[i*ldc+j] = alpha·s            if beta == 0 (c not read)
//	c[i*ldc+j] = alpha·s + beta·c   otherwise
//
// a holds kc·mr values, b kc·nr values and c at least (mr−1)·ldc+nr values.
// Assembly micro-kernels do not check lengths: the driver guarantees them.
type sgemmMicro func(kc int, a, b, c []float32, ldc int, alpha, beta float32)

// sgemmBlocked is a Goto/BLIS-style blocked GEMM around one micro-kernel.
//
// Loop nest (outermost first), with the cache level each packed block is
// meant to live in:
//
//	jc: columns of C by nc          (B block kc×nc: L2/L3)
//	  pc: the reduction by kc        pack op(B)[pc:pc+kc, jc:jc+nc] into nr-column panels
//	    ic: rows of C by mc          pack op(A)[ic:ic+mc, pc:pc+kc] into mr-row panels (L2)
//	      jr: nr-column panel of B  (kc×nr micro-panel: L1)
//	        ir: mr-row panel of A → micro-kernel on the mr×nr tile of C
//
// Packing reads op(A) and op(B) through their transposes, so the
// micro-kernel only ever sees packed, zero-padded panels. Tiles that overhang
// the edges of C (m or n not a multiple of mr or nr) are computed into a
// scratch tile and merged with alpha and beta in Go. beta is applied on the
// first kc block only; later blocks accumulate (beta = 1).
type sgemmBlocked struct {
	micro   sgemmMicro
	direct  sgemmDirectFn  // the tile's direct twin (conv_direct.go), or nil
	directA sgemmDirectAFn // the tile's direct-A twin, or nil
	// filterA is the direct-A kernel of another tile of the same ISA, with
	// its tile filterMR×filterNR, that the filter gradient falls back to
	// where this tile's nr would throw away too many of C's columns (a
	// 48-wide tile on 32, 64 or 128 output channels); nil when the tile's
	// nr is a power of two (newSgemmFromChoice).
	filterA            sgemmDirectAFn
	filterMR, filterNR int
	mr, nr             int
	kc, mc, nc         int

	// free holds the fixed-size packing buffers not in use. Each call takes
	// one and gives it back, so concurrent callers (data-parallel replicas
	// on several goroutines) each get their own, and a call allocates only
	// while fewer buffers exist than calls have ever run at once. Unlike a
	// sync.Pool, the list is not emptied by the garbage collector, so the
	// ~0.7 MiB buffers are not reallocated after every GC cycle.
	mu   sync.Mutex
	free []*sgemmWork
}

// sgemmBlockedByImpl records the blocked driver each implementation
// registered for sgemm, so tests can rerun its micro-kernel with tiny
// blocking sizes.
var sgemmBlockedByImpl = map[string]*sgemmBlocked{}

// registerSgemm makes g the sgemm of implementation impl. It is called from
// package-level var declarations of build-tagged files, like register.
func registerSgemm(impl string, g *sgemmBlocked) bool {
	sgemmBlockedByImpl[impl] = g
	return register(impl, func(o *ops) {
		o.sgemm, o.sgemmWork, o.sgemmWorkSize, o.sgemmDriver = g.sgemm, g.sgemmWork, g.workSize, g
	})
}

// sgemmWork is the per-call scratch space of sgemmBlocked.
type sgemmWork struct {
	a    []float32 // mc×kc, mr-row panels
	b    []float32 // kc×nc, nr-column panels
	tile []float32 // mr×nr edge tile
}

// sgemmSmallFlops is the m·n·k at or below which the blocked driver hands
// the product to the plain loops of sgemmRef: packing would cost more than
// it saves.
const sgemmSmallFlops = 512

// newSgemmBlocked returns a driver for the mr×nr micro-kernel micro with
// blocking sizes kc, mc and nc (mc and nc are rounded up to multiples of mr
// and nr).
func newSgemmBlocked(micro sgemmMicro, mr, nr, kc, mc, nc int) *sgemmBlocked {
	mc = (mc + mr - 1) / mr * mr
	nc = (nc + nr - 1) / nr * nr
	return &sgemmBlocked{micro: micro, mr: mr, nr: nr, kc: kc, mc: mc, nc: nc}
}

// getWork takes a packing buffer from the free list, or makes one.
func (g *sgemmBlocked) getWork() *sgemmWork {
	g.mu.Lock()
	if n := len(g.free); n > 0 {
		w := g.free[n-1]
		g.free = g.free[:n-1]
		g.mu.Unlock()
		return w
	}
	g.mu.Unlock()
	kc, nc := g.maxBlocks()
	return &sgemmWork{
		a:    make([]float32, 4*g.mc*kc), // mcFor·kc ≤ 4·mc·kc
		b:    make([]float32, kc*nc),
		tile: make([]float32, g.mr*g.nr),
	}
}

// putWork returns w to the free list.
func (g *sgemmBlocked) putWork(w *sgemmWork) {
	g.mu.Lock()
	g.free = append(g.free, w)
	g.mu.Unlock()
}

// workSize is the work space sgemmWork carves its packing buffers from for
// an m×n×k product: the mr-row panels of one mc×kc block of A, the
// nr-column panels of one kc×nc block of B and one mr×nr edge tile, each
// clipped to the product (0 when the product goes to the plain loops).
func (g *sgemmBlocked) workSize(m, n, k int) int {
	if m*n*k <= sgemmSmallFlops {
		return 0
	}
	return g.packSize(m, n, k)
}

// packSize is workSize without the plain loops' threshold: the packing
// space gemm uses for an m×n×k product of any size (0 when a dimension is
// not positive).
func (g *sgemmBlocked) packSize(m, n, k int) int {
	if m <= 0 || n <= 0 || k <= 0 {
		return 0
	}
	nc, kc := g.blocks(n, k)
	mc := (min(g.mcFor(true, kc), m) + g.mr - 1) / g.mr * g.mr // the larger of the two
	return mc*kc + kc*nc + g.mr*g.nr
}

// blocks returns the column block nc (a multiple of nr) and the reduction
// block kc the loop nest uses for a product with n columns of C and a
// reduction of length k: the driver's nc and kc, except that a dimension
// at most a quarter longer than its block is taken whole. Sabour's primary
// capsules multiply the 256×20736 weights by chunks of 576 columns (16
// images of 36 positions): with nc = 512 the whole weight matrix was packed
// twice per chunk, the second time for a 64-column remainder, and their
// filter gradient reduced over 576 positions in a 512 and a 64 block.
// A block longer than its cache budget by a quarter costs less than that.
func (g *sgemmBlocked) blocks(n, k int) (nc, kc int) {
	nc, kc = g.nc, g.kc
	if n <= g.nc+g.nc/4 {
		nc = (n + g.nr - 1) / g.nr * g.nr
	}
	if k <= g.kc+g.kc/4 {
		kc = k
	}
	return nc, kc
}

// mcFor returns the row block of a product whose reduction block is kc:
// the driver's mc, except for a transposed A (transA) with 128 ≤ kc < the
// driver's kc, whose mc is stretched so that the packed mc×kc block of A
// keeps its size (at most 4·mc). Packing Aᵀ reads runs of mc floats from
// each of kc rows, and the primary capsules' data gradient (Wᵀ, kc = 256
// output channels, rows 83 KB apart) ran 7% faster with runs twice as
// long. Plain A is not stretched: with a short kc its block fits the
// level-1 cache (Sabour's first convolution, kc = 81, lost 10% when its
// 256 rows went in one block).
func (g *sgemmBlocked) mcFor(transA bool, kc int) int {
	if !transA || kc >= g.kc || kc < 128 {
		return g.mc
	}
	mc := min(4*g.mc, g.mc*g.kc/max(kc, 1))
	return max(g.mr, mc/g.mr*g.mr)
}

// maxBlocks returns the largest kc and nc that blocks returns.
func (g *sgemmBlocked) maxBlocks() (kc, nc int) {
	return g.kc + g.kc/4, (g.nc + g.nc/4 + g.nr - 1) / g.nr * g.nr
}

// sgemm has the semantics of Sgemm (arguments already checked).
func (g *sgemmBlocked) sgemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	g.sgemmWork(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, nil)
}

// sgemmWork is sgemm with its packing buffers carved from work when work
// holds workSize(m, n, k) floats, else taken from the free list.
func (g *sgemmBlocked) sgemmWork(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, work []float32) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		sgemmScaleC(m, n, beta, c, ldc)
		return
	}
	if m*n*k <= sgemmSmallFlops {
		sgemmRef(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
		return
	}
	src := gemmB{trans: transB, b: b, ldb: ldb}
	g.gemm(transA, false, m, n, k, alpha, a, lda, &src, beta, c, ldc, nil, work)
}

// gemmB is the op(B) operand of the blocked driver: the matrix b with row
// stride ldb, transposed when trans (a plain GEMM), or, when conv is set,
// a matrix that is never materialised, packed straight from a convolution's
// input (implicit GEMM, conv_implicit.go).
type gemmB struct {
	trans bool
	b     []float32
	ldb   int
	conv  *convIndex
}

// gemm is the blocked loop nest (see sgemmBlocked) with op(A) the matrix a
// (row stride lda, transposed when transA) or, when packedA, already packed
// (ConvPacked): mr-row panels over the whole reduction, panel q at
// a[q·mr·lda:], element (i, p) at p·mr + i%mr (lda is then the reduction
// length of the panels, and a may start at a column offset p0·mr), which
// the micro-kernel reads in place, a kc block of a panel being the kc·mr
// values from (ic+ir)·lda + pc·mr on, instead of packing the block: the
// same values, so the same bits. op(B) is described by src, and the
// destination C is the matrix c with row stride ldc or, when sink is not
// nil, tiles added into a convolution's input gradient
// (conv_implicit.go): every C(i, j) is computed once and added to the
// element of dx it belongs to (beta and c are then unused). m, n, k > 0.
// The packing buffers are carved from work when work holds
// packSize(m, n, k) floats, else taken from the free list. src and sink
// do not escape (sink is a parameter of its own, not a field of a struct
// holding c: escape analysis would let it leak with c).
func (g *sgemmBlocked) gemm(transA, packedA bool, m, n, k int, alpha float32, a []float32, lda int, src *gemmB, beta float32, c []float32, ldc int, sink *convIndex, work []float32) {
	// own holds the buffers by value (carved from work, or copied from a
	// free-list entry, which pooled returns), so w does not escape.
	var own sgemmWork
	var pooled *sgemmWork
	w := &own
	ncb, kcb := g.blocks(n, k)
	mcb := g.mcFor(transA, kcb)
	if ws := g.packSize(m, n, k); len(work) >= ws {
		na := (min(mcb, m) + g.mr - 1) / g.mr * g.mr * kcb
		nb := kcb * ncb
		own = sgemmWork{a: work[:na:na], b: work[na : na+nb : na+nb], tile: work[na+nb : ws : ws]}
	} else {
		pooled = g.getWork()
		own = *pooled
	}
	mr, nr := g.mr, g.nr
	for jc := 0; jc < n; jc += ncb {
		nc := min(ncb, n-jc)
		for pc := 0; pc < k; pc += kcb {
			kc := min(kcb, k-pc)
			if src.conv != nil {
				src.conv.packB(pc, jc, kc, nc, nr, w.b)
			} else {
				sgemmPackB(src.trans, src.b, src.ldb, pc, jc, kc, nc, nr, w.b)
			}
			bet := beta
			if pc > 0 {
				bet = 1
			}
			for ic := 0; ic < m; ic += mcb {
				mc := min(mcb, m-ic)
				if !packedA {
					sgemmPackA(transA, a, lda, ic, pc, mc, kc, mr, w.a)
				}
				for jr := 0; jr < nc; jr += nr {
					nrr := min(nr, nc-jr)
					bp := w.b[jr*kc : jr*kc+kc*nr]
					for ir := 0; ir < mc; ir += mr {
						mrr := min(mr, mc-ir)
						var ap []float32
						if packedA {
							o := (ic+ir)*lda + pc*mr
							ap = a[o : o+kc*mr]
						} else {
							ap = w.a[ir*kc : ir*kc+kc*mr]
						}
						if sink != nil {
							g.micro(kc, ap, bp, w.tile, nr, alpha, 0)
							sink.addTile(ic+ir, jc+jr, mrr, nrr, w.tile, nr)
							continue
						}
						ci := (ic+ir)*ldc + jc + jr
						if mrr == mr && nrr == nr {
							g.micro(kc, ap, bp, c[ci:], ldc, alpha, bet)
							continue
						}
						g.micro(kc, ap, bp, w.tile, nr, 1, 0)
						sgemmMergeTile(mrr, nrr, alpha, w.tile, nr, bet, c[ci:], ldc)
					}
				}
			}
		}
	}
	if pooled != nil {
		g.putWork(pooled)
	}
}

// sgemmScaleC sets C = beta·C; beta == 0 writes zeros without reading C.
func sgemmScaleC(m, n int, beta float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

// sgemmMergeTile stores the top-left mr×nr corner of the scratch tile t
// (row stride ldt) into C: c = alpha·t (beta == 0, c not read) or
// c = alpha·t + beta·c.
func sgemmMergeTile(mr, nr int, alpha float32, t []float32, ldt int, beta float32, c []float32, ldc int) {
	for i := 0; i < mr; i++ {
		tr := t[i*ldt : i*ldt+nr]
		cr := c[i*ldc : i*ldc+nr]
		if beta == 0 {
			for j, v := range tr {
				cr[j] = alpha * v
			}
			continue
		}
		for j, v := range tr {
			cr[j] = alpha*v + beta*cr[j]
		}
	}
}

// sgemmPackA packs op(A)[ic:ic+mc, pc:pc+kc] into dst as mr-row panels:
// panel q holds rows q·mr… of the block at dst[q·mr·kc:], element (i, p) at
// p·mr+i. Rows past mc in the last panel are zero.
func sgemmPackA(trans bool, a []float32, lda, ic, pc, mc, kc, mr int, dst []float32) {
	if trans {
		sgemmPackAT(a, lda, ic, pc, mc, kc, mr, dst)
		return
	}
	for ir := 0; ir < mc; ir += mr {
		d := dst[ir*kc : ir*kc+kc*mr]
		rows := min(mr, mc-ir)
		// op(A)(i, p) = a[i*lda+p]: row i is contiguous along p; interleave
		// rows eight at a time in SIMD (sgemm_tiles.go), else four (then one)
		// at a time.
		if mr == 8 && rows == 8 && sgemmPackA8 != nil {
			off := (ic+ir)*lda + pc
			sgemmPackA8(kc, a[off:], lda, d)
			continue
		}
		i := 0
		for ; i+4 <= rows; i += 4 {
			off := (ic+ir+i)*lda + pc
			s0 := a[off : off+kc]
			s1 := a[off+lda : off+lda+kc]
			s2 := a[off+2*lda : off+2*lda+kc]
			s3 := a[off+3*lda : off+3*lda+kc]
			dd := d[i:]
			for p, v := range s0 {
				q := dd[p*mr : p*mr+4 : p*mr+4]
				q[0], q[1], q[2], q[3] = v, s1[p], s2[p], s3[p]
			}
		}
		for ; i < rows; i++ {
			off := (ic+ir+i)*lda + pc
			for p, v := range a[off : off+kc] {
				d[p*mr+i] = v
			}
		}
		for ; i < mr; i++ {
			for p := 0; p < kc; p++ {
				d[p*mr+i] = 0
			}
		}
	}
}

// sgemmPackAT is sgemmPackA for op(A) = Aᵀ: op(A)(i, p) = a[p*lda+i], so
// each p is a contiguous run of the block's mc rows, which packRowPanels
// reads one at a time, front to back, and deals out to the panels: walking
// panel by panel instead read kc runs of mr values lda apart for every
// panel, a new cache line and often a new page per 32 bytes (the primary
// capsules' data gradient, Wᵀ with lda = 20736, spent 17% of its time
// there).
func sgemmPackAT(a []float32, lda, ic, pc, mc, kc, mr int, dst []float32) {
	packRowPanels(a, lda, pc, ic, kc, mc, mr, dst)
}

// packRowPanels packs the kc×n block of the row-major matrix src (row
// stride ld) at rows r0…, columns c0… into w-wide panels: panel q holds
// columns q·w… at dst[q·w·kc:], element (p, j) at p·w+j, columns past n
// zero. Each row of the block is read once, sequentially; full panels of 8
// or 16 columns move as arrays. It is the non-transposed B of sgemmPackB and
// the transposed A of sgemmPackAT.
func packRowPanels(src []float32, ld, r0, c0, kc, n, w int, dst []float32) {
	full := n / w * w // columns in full panels
	for p := 0; p < kc; p++ {
		off := (r0+p)*ld + c0
		row := src[off : off+n]
		switch w {
		case 8:
			for j := 0; j < full; j += 8 {
				*(*[8]float32)(dst[j*kc+p*8:]) = *(*[8]float32)(row[j:])
			}
		case 16:
			for j := 0; j < full; j += 16 {
				*(*[16]float32)(dst[j*kc+p*16:]) = *(*[16]float32)(row[j:])
			}
		default:
			for j := 0; j < full; j += w {
				copy(dst[j*kc+p*w:j*kc+p*w+w], row[j:j+w])
			}
		}
		if full < n {
			dp := dst[full*kc+p*w : full*kc+p*w+w]
			copy(dp, row[full:])
			clear(dp[n-full:])
		}
	}
}

// sgemmPackB packs op(B)[pc:pc+kc, jc:jc+nc] into dst as nr-column panels:
// panel q holds columns q·nr… at dst[q·nr·kc:], element (p, j) at p·nr+j.
// Columns past nc in the last panel are zero.
func sgemmPackB(trans bool, b []float32, ldb, pc, jc, kc, nc, nr int, dst []float32) {
	if !trans {
		// op(B)(p, j) = b[p*ldb+j]: read each row of the block once,
		// sequentially, and deal it out to the panels.
		packRowPanels(b, ldb, pc, jc, kc, nc, nr, dst)
		return
	}
	// op(B)(p, j) = b[j*ldb+p]: column j of op(B) is contiguous along p;
	// interleave columns sixteen at a time by the transpose16 kernel where
	// the implementation has one (AVX-512: one cache line of each column at
	// a time, where the loops below read eight columns ldb apart, which
	// thrash one level-1 set when ldb is a multiple of 1024), then eight,
	// four and one at a time.
	t16 := cur.transpose16 != nil
	for jr := 0; jr < nc; jr += nr {
		d := dst[jr*kc : jr*kc+kc*nr]
		cols := min(nr, nc-jr)
		j := 0
		for ; t16 && j+16 <= cols; j += 16 {
			transpose16Call(1, kc, b[(jc+jr+j)*ldb+pc:], ldb, 0, d[j:], nr, 0)
		}
		for ; j+8 <= cols; j += 8 {
			off := (jc+jr+j)*ldb + pc
			s0 := b[off : off+kc]
			s1 := b[off+ldb : off+ldb+kc]
			s2 := b[off+2*ldb : off+2*ldb+kc]
			s3 := b[off+3*ldb : off+3*ldb+kc]
			s4 := b[off+4*ldb : off+4*ldb+kc]
			s5 := b[off+5*ldb : off+5*ldb+kc]
			s6 := b[off+6*ldb : off+6*ldb+kc]
			s7 := b[off+7*ldb : off+7*ldb+kc]
			dd := d[j:]
			for p, v := range s0 {
				q := dd[p*nr : p*nr+8 : p*nr+8]
				q[0], q[1], q[2], q[3] = v, s1[p], s2[p], s3[p]
				q[4], q[5], q[6], q[7] = s4[p], s5[p], s6[p], s7[p]
			}
		}
		for ; j+4 <= cols; j += 4 {
			off := (jc+jr+j)*ldb + pc
			s0 := b[off : off+kc]
			s1 := b[off+ldb : off+ldb+kc]
			s2 := b[off+2*ldb : off+2*ldb+kc]
			s3 := b[off+3*ldb : off+3*ldb+kc]
			dd := d[j:]
			for p, v := range s0 {
				q := dd[p*nr : p*nr+4 : p*nr+4]
				q[0], q[1], q[2], q[3] = v, s1[p], s2[p], s3[p]
			}
		}
		for ; j < cols; j++ {
			off := (jc+jr+j)*ldb + pc
			for p, v := range b[off : off+kc] {
				d[p*nr+j] = v
			}
		}
		for ; j < nr; j++ {
			for p := 0; p < kc; p++ {
				d[p*nr+j] = 0
			}
		}
	}
}

// sgemmMicroGo is a portable 4×4 micro-kernel in Go, used to test the
// blocked driver on every architecture (and with -tags noasm).
func sgemmMicroGo(kc int, a, b, c []float32, ldc int, alpha, beta float32) {
	const mr, nr = 4, 4
	var acc [mr][nr]float32
	a = a[:kc*mr]
	b = b[:kc*nr]
	for p := 0; p < kc; p++ {
		ap := a[p*mr : p*mr+mr]
		bp := b[p*nr : p*nr+nr]
		for i := range acc {
			for j := range acc[i] {
				acc[i][j] += ap[i] * bp[j]
			}
		}
	}
	for i := range acc {
		cr := c[i*ldc : i*ldc+nr]
		for j := range cr {
			if beta == 0 {
				cr[j] = alpha * acc[i][j]
			} else {
				cr[j] = alpha*acc[i][j] + beta*cr[j]
			}
		}
	}
}
