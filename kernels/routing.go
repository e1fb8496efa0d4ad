package kernels

import "fmt"

// RoutingKind selects the routing algorithm of RoutingForward and
// RoutingBackward. The zero value is routing by agreement.
type RoutingKind int

const (
	// RoutingRBA is routing by agreement (docs/semantics.md §3): Iters iterations of
	// softmax couplings from the prior and the agreement updates.
	RoutingRBA RoutingKind = iota
	// RoutingUniform is the paper's uniform-routing baseline: couplings
	// 1/NOut, one pass, no logits and no prior.
	RoutingUniform
	// RoutingSelfAttention is Efficient-CapsNet's self-attention routing
	// (docs/semantics.md §3): one pass, a[j,i] = <û[i,j], Σ_k û[k,j]>/√D,
	// c = softmax over the outputs j of a, plus the bias (the prior slot)
	// added after the softmax.
	RoutingSelfAttention
	// RoutingSelfAttentionIn is RoutingSelfAttention with the softmax over
	// the inputs i: every output capsule's couplings (before the bias) sum
	// to 1.
	RoutingSelfAttentionIn
	// NumRoutingKinds is the number of routing kinds: every kind k has
	// 0 <= k < NumRoutingKinds.
	NumRoutingKinds
)

// String names the routing kind ("rba", "uniform", "self-attention",
// "self-attention-in").
func (k RoutingKind) String() string {
	switch k {
	case RoutingRBA:
		return "rba"
	case RoutingUniform:
		return "uniform"
	case RoutingSelfAttention:
		return "self-attention"
	case RoutingSelfAttentionIn:
		return "self-attention-in"
	}
	return fmt.Sprintf("RoutingKind(%d)", int(k))
}

// Iterative reports whether the kind runs Iters iterations (and so uses
// its logits and prior); a non-iterative kind makes one pass.
func (k RoutingKind) Iterative() bool { return k == RoutingRBA }

// Attention reports whether the kind is one of the self-attention kinds
// (one pass; the prior slot holds the bias added after the softmax).
func (k RoutingKind) Attention() bool {
	return k == RoutingSelfAttention || k == RoutingSelfAttentionIn
}

// RoutingShape describes routing by agreement (docs/semantics.md §3) between NIn input
// capsules and NOut output capsules of dimension D, for Batch samples.
// Kind selects the algorithm (RoutingRBA, or the baseline RoutingUniform); Iters is the number of iterations r (>= 1;
// ignored by a kind that is not Iterative). Squash selects the
// non-linearity.
//
// Internal layouts (see docs/kernels.md, "Tensor layouts"), all row-major:
//
//	uhat   (Batch, NOut, D, NIn)   votes, as VotesForward writes them
//	c      (Batch, NOut, NIn)      couplings c[b,j,i] of input i to output j
//	prior  (NOut, NIn)             initial logits, shared by the batch
//	v      (Batch, D, NOut)        output capsules, component-major, which is
//	                               directly the next layer's u (Batch, DIn, NIn)
type RoutingShape struct {
	Batch, NIn, NOut, D, Iters int
	Squash                     Squash
	Kind                       RoutingKind
}

func (sh RoutingShape) check() error {
	if sh.Batch < 0 || sh.NIn < 1 || sh.NOut < 1 || sh.D < 1 {
		return fmt.Errorf("bad shape %+v: Batch must be >= 0 and NIn, NOut, D >= 1", sh)
	}
	if sh.Kind < 0 || sh.Kind >= NumRoutingKinds {
		return fmt.Errorf("bad shape %+v: unknown routing kind %v", sh, sh.Kind)
	}
	if sh.Kind.Iterative() && sh.Iters < 1 {
		return fmt.Errorf("bad shape %+v: Iters must be >= 1", sh)
	}
	if sh.Squash != SquashMazzia && sh.Squash != SquashSabour {
		return fmt.Errorf("bad shape %+v: unknown squash kind %v", sh, sh.Squash)
	}
	// The work buffer is the largest: Batch·r·(NOut·NIn + 3·D·NOut) + ….
	if !capsSizeOK(max(sh.Batch, 1), sh.iters(), sh.NOut, sh.D+5, sh.NIn+5) {
		return fmt.Errorf("bad shape %+v: tensor sizes overflow", sh)
	}
	return nil
}

// iters is the number of passes the forward makes: 1 for a kind that is
// not Iterative.
func (sh RoutingShape) iters() int {
	if !sh.Kind.Iterative() {
		return 1
	}
	return sh.Iters
}

// iterSize is the number of floats one iteration of one sample stores in the
// work buffer: its couplings (NOut·NIn), its squash input s and its output v
// (D·NOut each, component-major). An attention kind stores the softmax
// output instead of the couplings, and also the scaled vote sums S/√D
// (D·NOut, component-major).
func (sh RoutingShape) iterSize() int {
	if sh.Kind.Attention() {
		return sh.NOut*sh.NIn + 3*sh.D*sh.NOut
	}
	return sh.NOut*sh.NIn + 2*sh.D*sh.NOut
}

// scratchSize is the shared scratch at the end of the work buffer: three
// NOut·NIn planes (logits in the forward; logit gradient, coupling gradient
// and softmax-gradient output in the backward), three D·NOut capsule vectors
// (the backward's gradients of v_t, v_{t-1} and s_t) and one float holding
// the constant 1; an attention kind's is attnScratchSize.
func (sh RoutingShape) scratchSize() int {
	if sh.Kind.Attention() {
		return attnScratchSize(sh)
	}
	return 3*sh.NOut*sh.NIn + 3*sh.D*sh.NOut + 1
}

// WorkSize returns the number of float32 of the work buffer RoutingForward
// fills and RoutingBackward reads: per sample and per iteration, the
// couplings c_t and the squash input s_t and output v_t, followed by scratch
// space both passes use. It is Batch·r·(NOut·NIn + 2·D·NOut) +
// 3·NOut·NIn + 3·D·NOut + 1 with r = Iters (1 for a kind that is not
// Iterative); for an attention kind Batch·(NOut·NIn + 3·D·NOut) +
// 5·NOut·NIn + 2·D·NOut + NIn. It is 0 for an invalid shape.
func (sh RoutingShape) WorkSize() int {
	if sh.check() != nil {
		return 0
	}
	return sh.Batch*sh.iters()*sh.iterSize() + sh.scratchSize()
}

// routingChunk is the number of input capsules per block of the routing
// passes. Each iteration makes one pass over Û (and dÛ in the backward) that
// does all of that iteration's work on a block of input capsules: the
// agreement with the previous v, the softmax, and the block's share of s
// (backward: the gradient of s, the softmax gradient and the agreement
// gradient). The logits, couplings and their gradients are stored block by
// block (NOut rows of chunk columns each), so that the column-wise softmax
// runs on one block.
//
// When one sample's Û is at most routingWholeBytes it stays in L2 across the
// iterations and the block is the whole of NIn (fewest, longest primitive
// calls: measured on Zen 4, Sabour's 737 KB Û runs at the same speed whole
// or in 256 KiB blocks, and slower in smaller ones). Larger Û is cut into
// blocks of about routingBlockBytes, a multiple of 16 input capsules (whole
// AVX-512 vectors).
func routingChunk(sh RoutingShape) int {
	per := sh.NOut * sh.D
	if 4*per*sh.NIn <= routingWholeBytes {
		return sh.NIn
	}
	nb := max(16, (routingBlockBytes/4)/per&^15)
	if sh.NIn <= nb+nb/2 {
		return sh.NIn
	}
	return nb
}

// routingWholeBytes and routingBlockBytes are variables so that the tests
// can force small blocks.
var routingWholeBytes, routingBlockBytes = 1 << 20, 256 << 10

func (sh RoutingShape) checkArgs(fn, vName string, v, c, uhat, prior, work []float32) error {
	if err := sh.check(); err != nil {
		return fmt.Errorf("kernels.%s: %w", fn, err)
	}
	bs, nIn, nOut, d := sh.Batch, sh.NIn, sh.NOut, sh.D
	if err := capsCheckLen(fn, vName, v, bs*d*nOut, false); err != nil {
		return err
	}
	if err := capsCheckLen(fn, "c", c, bs*nOut*nIn, true); err != nil {
		return err
	}
	if err := capsCheckLen(fn, "uhat", uhat, bs*nOut*d*nIn, false); err != nil {
		return err
	}
	if err := capsCheckLen(fn, "prior", prior, nOut*nIn, true); err != nil {
		return err
	}
	if ws := sh.WorkSize(); len(work) < ws {
		return fmt.Errorf("kernels.%s: work has %d elements, RoutingShape.WorkSize is %d", fn, len(work), ws)
	}
	return nil
}

// RoutingForward runs routing by agreement exactly as docs/semantics.md §3, per sample b:
//
//	logits = prior (zeros when prior is nil)
//	for t = 1..r:
//	    c[j,i]  = softmax over j of logits[j,i]
//	    s[:,j]  = Σ_i c[j,i]·uhat[j,:,i]
//	    v[:,j]  = squash(s[:,j])
//	    if t < r: logits[j,i] += <uhat[j,:,i], v[:,j]>
//
// v (Batch, D, NOut) receives the output capsules and c (Batch, NOut, NIn)
// the couplings of the last iteration, the layer's parse-tree edges (c may
// be nil). With RoutingUniform, c = 1/NOut and there is one pass; prior is then
// ignored. work (at least sh.WorkSize() floats) receives what
// RoutingBackward needs and must be kept unchanged until it runs.
//
// In the layouts of RoutingShape, every step is a long vector operation over
// the input capsules i: s[:,j] = Û_j·c[j,:] (a gemvN, Û_j the D×NIn block
// of uhat for output j) and logits[j,:] += Û_jᵀ·v[:,j] (a gemvT), each done
// for every j in one grouped call; the softmax over j runs across rows for
// every column i. The agreement update of
// iteration t is made in the pass of iteration t+1, block of input capsules
// by block (see routingChunk), so that each iteration reads Û once.
//
// A NaN in uhat propagates to v: to the output capsule j it votes for in the
// first iteration, and through the agreement update to every output of that
// sample when r > 1. Samples do not interact.
//
// It runs on one goroutine, does not allocate, and returns an error (never
// panics) on a bad shape, a tensor slice whose length is not exactly its
// size, or a short work buffer. Batch = 0 is a no-op.
func RoutingForward(sh RoutingShape, v, c, uhat, prior, work []float32) error {
	if err := sh.checkArgs("RoutingForward", "v", v, c, uhat, prior, work); err != nil {
		return err
	}
	bs, nIn, nOut, d := sh.Batch, sh.NIn, sh.NOut, sh.D
	if bs == 0 {
		return nil
	}
	if sh.Kind.Attention() {
		attnForward(sh, cur, v, c, uhat, prior, work)
		return nil
	}
	o := cur
	r := sh.iters()
	nc, ns := nOut*nIn, d*nOut
	rec := r * sh.iterSize()
	scr := work[bs*rec:]
	logits := scr[:nc] // blocked like the couplings
	block := d * nIn   // floats of one Û_j
	nb := routingChunk(sh)
	for b := 0; b < bs; b++ {
		ub := uhat[b*nOut*block:][:nOut*block]
		w := work[b*rec:][:rec]
		var ct, vt []float32
		for t := 0; t < r; t++ {
			it := w[t*sh.iterSize():]
			ct = it[:nc]
			st := it[nc:][:ns]
			vp := vt // v of the previous iteration, component-major
			vt = it[nc+ns:][:ns]
			clear(st)
			// One pass over Û per iteration: for each block of input
			// capsules, finish its logits (prior, or the agreement with the
			// previous iteration's v), take its softmax, and add its share
			// of s. The grouped primitives treat all output capsules j in
			// one call (Û is the (NOut·D)×NIn matrix whose rows j·D+k form
			// Û_j) and read or write s and v component-major in place.
			for i0 := 0; i0 < nIn; i0 += nb {
				n := min(nb, nIn-i0)
				lb := logits[nOut*i0:][:nOut*n]
				cb := ct[nOut*i0:][:nOut*n]
				ui := ub[i0:]
				switch sh.Kind {
				case RoutingUniform:
					fill := 1 / float32(nOut)
					for x := range cb {
						cb[x] = fill
					}
				case RoutingRBA:
					if t == 0 {
						switch {
						case prior == nil:
							clear(lb)
						case n == nIn:
							copy(lb, prior)
						default:
							for j := 0; j < nOut; j++ {
								copy(lb[j*n:][:n], prior[j*nIn+i0:])
							}
						}
					} else {
						// logits[j,:] += Û_jᵀ·v[:,j]
						o.gemvTGroups(nOut, d, n, ui, nIn, vp, 1, nOut, lb, n)
					}
					o.softmaxCols(nOut, n, lb, cb)
				}
				// s[:,j] += Û_j·c[j,:]
				o.gemvNGroups(nOut, d, n, ui, nIn, cb, n, st, 1, nOut)
			}
			o.squash(sh.Squash, d, nOut, st, vt)
		}
		copy(v[b*ns:][:ns], vt)
		if c != nil {
			cs := c[b*nc:][:nc]
			for i0 := 0; i0 < nIn; i0 += nb {
				n := min(nb, nIn-i0)
				for j := 0; j < nOut; j++ {
					copy(cs[j*nIn+i0:][:n], ct[nOut*i0+j*n:][:n])
				}
			}
		}
	}
	return nil
}

// RoutingBackward is the exact gradient of RoutingForward (reverse-mode
// differentiation through every iteration, as PyTorch's autograd does on
// the loop of docs/semantics.md §3): given dv = ∂L/∂v (Batch, D, NOut), it writes
// duhat = ∂L/∂uhat (Batch, NOut, D, NIn), overwritten, including the paths
// through the agreement updates, and accumulates dprior += ∂L/∂prior
// (NOut, NIn) summed over the batch. dprior may be nil when the prior is not
// learned; with RoutingUniform it is left unchanged (the prior does not enter).
// The gradient through a nil prior is that of a zero prior.
//
// sh, uhat and prior must be those of the RoutingForward call that filled
// work, and work must be unchanged since (prior is only checked: the stored
// couplings already encode it).
//
// Per iteration t, from the last to the first, with gL the gradient of the
// logits after iteration t:
//
//	gv       = dv (t = r), else gv[:,j] = Û_j·gL[j,:]   and dÛ_j += v_t[:,j] ⊗ gL[j,:]
//	gs       = squashGrad(s_t, gv)
//	dÛ_j    += gs[:,j] ⊗ c_t[j,:];  dc[j,:] = Û_jᵀ·gs[:,j]
//	gL      += softmaxGrad(c_t, dc)
//
// and finally dprior += gL. As in the forward, each iteration makes one
// pass over Û and dÛ: the gradient of s_t, the softmax gradient and the
// agreement gradient of iteration t−1 are done block of input capsules by
// block. It runs on one goroutine, does not allocate, and
// returns an error (never panics) on a bad shape, a tensor slice whose
// length is not exactly its size, or a short work buffer. Batch = 0 is a
// no-op.
func RoutingBackward(sh RoutingShape, duhat, dprior, dv, uhat, prior, work []float32) error {
	const fn = "RoutingBackward"
	if err := sh.checkArgs(fn, "dv", dv, nil, uhat, prior, work); err != nil {
		return err
	}
	bs, nIn, nOut, d := sh.Batch, sh.NIn, sh.NOut, sh.D
	if err := capsCheckLen(fn, "duhat", duhat, bs*nOut*d*nIn, false); err != nil {
		return err
	}
	if err := capsCheckLen(fn, "dprior", dprior, nOut*nIn, true); err != nil {
		return err
	}
	if bs == 0 {
		return nil
	}
	if sh.Kind.Attention() {
		attnBackward(sh, cur, duhat, dprior, dv, uhat, prior, work)
		return nil
	}
	rec := sh.iters() * sh.iterSize()
	bw := routingBwd{sh: sh, o: cur, nb: routingChunk(sh), dprior: dprior}
	bw.scratch(work[bs*rec:])
	block := nOut * d * nIn
	for b := 0; b < bs; b++ {
		bw.sample(duhat[b*block:][:block], uhat[b*block:][:block], work[b*rec:][:rec], dv[b*d*nOut:][:d*nOut])
	}
	return nil
}

// routingBwd is the state of one RoutingBackward call: the shape, the
// kernels, the block size and the scratch views shared by its samples.
type routingBwd struct {
	sh     RoutingShape
	o      *ops
	nb     int
	dprior []float32
	// gL is ∂L/∂logits and dc ∂L/∂c_t, blocked like the couplings; dl the
	// softmax gradient of one iteration, blocked; gv ∂L/∂v_t, gvp
	// ∂L/∂v_{t-1} and gs ∂L/∂s_t, component-major (D, NOut); one the
	// constant 1, for ger as an axpy.
	gL, dc, dl, gv, gvp, gs, one []float32
}

// scratch lays out the scratch views in scr (the work buffer's tail).
func (bw *routingBwd) scratch(scr []float32) {
	nc, ns := bw.sh.NOut*bw.sh.NIn, bw.sh.D*bw.sh.NOut
	bw.gL = scr[:nc]
	bw.dc = scr[nc:][:nc]
	bw.dl = scr[2*nc:][:nc]
	bw.gv = scr[3*nc:][:ns]
	bw.gvp = bw.gv[ns:][:ns]
	bw.gs = bw.gvp[ns:][:ns]
	bw.one = scr[3*nc+3*ns:][:1]
	bw.one[0] = 1
}

// sample runs the backward of one sample: db (its dÛ), ub (its Û), w (its
// stored iterations) and dv (its ∂L/∂v).
func (bw *routingBwd) sample(db, ub, w, dv []float32) {
	sh, o := bw.sh, bw.o
	nIn, nOut, d := sh.NIn, sh.NOut, sh.D
	r := sh.iters()
	nc, ns := nOut*nIn, d*nOut
	// The first pass (t = r−1) overwrites dÛ when it has the rank-2
	// update (ger2GroupsSet covers every element); otherwise clear it.
	setFirst := sh.Kind.Iterative() && r > 1
	if !setFirst {
		clear(db)
	}
	copy(bw.gv, dv)
	for t := r - 1; t >= 0; t-- {
		// gv holds ∂L/∂v_t.
		it := w[t*sh.iterSize():]
		ct := it[:nc]
		st := it[nc:][:ns]
		o.squashGrad(sh.Squash, d, nOut, st, bw.gv, bw.gs)
		var vp []float32 // v_{t-1} component-major
		if t > 0 {
			vp = w[(t-1)*sh.iterSize()+nc+ns:][:ns]
			clear(bw.gvp)
		}
		// One pass over Û and dÛ per iteration: for each block of input
		// capsules, the gradient of s_t = Σ_i c_t·û (into û and c_t),
		// the softmax gradient into the logits, and the agreement update
		// that produced those logits from the previous iteration's v
		// (into û and v_{t-1}), or the prior for t = 0. Each step is one
		// grouped call over all output capsules j, reading and writing
		// the component-major capsules in place.
		for i0 := 0; i0 < nIn; i0 += bw.nb {
			n := min(bw.nb, nIn-i0)
			cb := ct[nOut*i0:][:nOut*n]
			ui, di := ub[i0:], db[i0:]
			switch sh.Kind {
			case RoutingUniform:
				// dÛ_j += gs[:,j] ⊗ c_t[j,:]
				o.gerGroups(nOut, d, n, bw.gs, 1, nOut, cb, n, di, nIn)
			case RoutingRBA:
				bw.rbaBlock(t, i0, n, cb, ui, di, vp, setFirst && t == r-1)
			}
		}
		bw.gv, bw.gvp = bw.gvp, bw.gv
	}
}

// rbaBlock is one block of input capsules i0 … i0+n−1 of iteration t of
// routing by agreement's backward: cb its couplings, ui and di its Û and
// dÛ, vp v_{t-1} (t > 0); set makes the rank-2 update overwrite dÛ.
func (bw *routingBwd) rbaBlock(t, i0, n int, cb, ui, di, vp []float32, set bool) {
	sh, o := bw.sh, bw.o
	nIn, nOut, d := sh.NIn, sh.NOut, sh.D
	nc := nOut * nIn
	dcb := bw.dc[nOut*i0:][:nOut*n]
	gLb := bw.gL[nOut*i0:][:nOut*n]
	clear(dcb)
	// dc[j,:] = Û_jᵀ·gs[:,j]
	o.gemvTGroups(nOut, d, n, ui, nIn, bw.gs, 1, nOut, dcb, n)
	if t == sh.iters()-1 {
		o.softmaxColsGrad(nOut, n, cb, dcb, gLb)
	} else {
		dlb := bw.dl[nOut*i0:][:nOut*n]
		o.softmaxColsGrad(nOut, n, cb, dcb, dlb)
		o.ger(1, nOut*n, bw.one, dlb, gLb, nOut*n) // gL += dl
	}
	if t > 0 {
		// gv_{t-1}[:,j] += Û_j·gL[j,:], and in one pass over dÛ
		// dÛ_j += gs[:,j] ⊗ c_t[j,:] + v_{t-1}[:,j] ⊗ gL[j,:]
		o.gemvNGroups(nOut, d, n, ui, nIn, gLb, n, bw.gvp, 1, nOut)
		if set {
			o.ger2GroupsSet(nOut, d, n, bw.gs, vp, 1, nOut, cb, gLb, n, di, nIn)
		} else {
			o.ger2Groups(nOut, d, n, bw.gs, vp, 1, nOut, cb, gLb, n, di, nIn)
		}
		return
	}
	// dÛ_j += gs[:,j] ⊗ c_t[j,:]
	o.gerGroups(nOut, d, n, bw.gs, 1, nOut, cb, n, di, nIn)
	if bw.dprior == nil {
		return
	}
	if n == nIn {
		o.ger(1, nc, bw.one, gLb, bw.dprior, nc) // dprior += gL
		return
	}
	for j := 0; j < nOut; j++ {
		o.ger(1, n, bw.one, gLb[j*n:][:n], bw.dprior[j*nIn+i0:][:n], n) // dprior += gL
	}
}
