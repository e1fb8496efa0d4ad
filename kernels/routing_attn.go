package kernels

import "math"

// Self-attention routing (docs/semantics.md §3), RoutingSelfAttention and
// RoutingSelfAttentionIn, in the layouts of RoutingShape. Per sample, with
// Û_j the D×NIn block of the votes for output j and κ = 1/√D:
//
//	S'[:,j] = κ·Û_j·1                   the scaled sum of the votes for j
//	a[j,:]  = Û_jᵀ·S'[:,j]              each vote against all votes for j
//	p       = softmax of a over j (per column i) or over i (per row j)
//	c       = p + prior                 the bias, added after the softmax
//	s[:,j]  = Û_j·c[j,:];  v = squash(s)
//
// Every product is one grouped primitive over all output capsules j (the
// generated AVX2, AVX-512 and NEON kernels). The forward's first two
// products are one call (gemvNTGroups: S' = Û_j·(κ·1), then a = Û_jᵀ·S',
// both overwritten, so neither needs a clearing pass; κ enters as the
// vector κ·1, no scaling pass); the softmax over rows, which only
// RoutingSelfAttentionIn uses, is its own primitive (softmaxRows and its
// gradient: each row walked in vectors, its max and sum folded across the
// lanes); the bias is a ger of one row; s, the squash and their gradients
// are routing by agreement's primitives. The backward's last step,
// dÛ_j = κ·(Û_j·da[j,:]) ⊗ 1 + gs ⊗ c + S' ⊗ da, is one primitive
// (ger2GemvGroups) that reads Û once and writes dÛ once. The couplings are
// not blocked (routingChunk): S' needs every vote before any logit, so a
// block pass would read Û twice anyway.
//
// The work record of a sample is p (NOut, NIn), s and v (D, NOut) and S'
// (D, NOut); the scratch (attnScratch) holds a, c, the gradients, NIn ones
// and κ·1.

// attnScratch is the scratch of one attention call: the logits a (forward)
// or the coupling gradient (backward), the couplings c, the logit gradient
// da, the gradient gs of s (D·NOut; the scratch's second capsule vector
// is unused), NIn ones and NIn copies of κ = 1/√D.
type attnScratch struct {
	a, c, da, gs, ones, kappa []float32
}

// attnScratchSize is the scratch floats of an attention kind:
// 5·NOut·NIn + 2·D·NOut + NIn (κ·1 sits in the fourth plane; the rest of
// the fourth and fifth planes, which held the transposes of the softmax
// over rows before it had its own primitive, is unused: it keeps
// RoutingShape.WorkSize as documented).
func attnScratchSize(sh RoutingShape) int {
	return 5*sh.NOut*sh.NIn + 2*sh.D*sh.NOut + sh.NIn
}

func newAttnScratch(sh RoutingShape, scr []float32) attnScratch {
	nc, ns := sh.NOut*sh.NIn, sh.D*sh.NOut
	var s attnScratch
	s.a, s.c, s.da = scr[:nc], scr[nc:][:nc], scr[2*nc:][:nc]
	s.kappa = scr[3*nc:][:sh.NIn]
	scr = scr[5*nc:]
	s.gs = scr[:ns]
	s.ones = scr[2*ns:][:sh.NIn]
	kappa := float32(1 / math.Sqrt(float64(sh.D)))
	for i := range s.ones {
		s.ones[i] = 1
		s.kappa[i] = kappa
	}
	return s
}

// attnRecord returns the views of sample b's record in work: the softmax
// output p, the squash input s and output v, and the scaled vote sums S'.
func attnRecord(sh RoutingShape, work []float32, b int) (p, s, v, sum []float32) {
	nc, ns := sh.NOut*sh.NIn, sh.D*sh.NOut
	w := work[b*sh.iterSize():][:sh.iterSize()]
	return w[:nc], w[nc:][:ns], w[nc+ns:][:ns], w[nc+2*ns:][:ns]
}

// attnCouplings writes c = p + prior (c = p for a nil prior), the
// prior added by the ger primitive (one row of nc values, x = one).
func attnCouplings(o *ops, c, p, prior, one []float32) {
	copy(c, p)
	if prior != nil {
		o.ger(1, len(p), one[:1], prior, c, len(p))
	}
}

// attnForward is RoutingForward for an attention kind (arguments checked,
// Batch > 0).
func attnForward(sh RoutingShape, o *ops, v, c, uhat, prior, work []float32) {
	nIn, nOut, d := sh.NIn, sh.NOut, sh.D
	nc, ns := nOut*nIn, d*nOut
	sc := newAttnScratch(sh, work[sh.Batch*sh.iterSize():])
	for b := 0; b < sh.Batch; b++ {
		ub := uhat[b*nOut*d*nIn:][:nOut*d*nIn]
		p, st, vt, sum := attnRecord(sh, work, b)
		// S'[:,j] = Û_j·(κ·1), then a[j,:] = Û_jᵀ·S'[:,j], in one call
		o.gemvNTGroups(nOut, d, nIn, ub, nIn, sc.kappa, 0, sum, 1, nOut, sc.a, nIn)
		if sh.Kind == RoutingSelfAttention {
			o.softmaxCols(nOut, nIn, sc.a, p)
		} else {
			o.softmaxRows(nOut, nIn, sc.a, p)
		}
		cb := sc.c // the couplings, in the output c when there is one
		if c != nil {
			cb = c[b*nc:][:nc]
		}
		attnCouplings(o, cb, p, prior, sc.ones)
		// s[:,j] = Û_j·c[j,:]
		clear(st)
		o.gemvNGroups(nOut, d, nIn, ub, nIn, cb, nIn, st, 1, nOut)
		o.squash(sh.Squash, d, nOut, st, vt)
		copy(v[b*ns:][:ns], vt)
	}
}

// attnBackward is RoutingBackward for an attention kind (arguments
// checked, Batch > 0). Per sample, with gs = ∂L/∂s and dc = ∂L/∂c:
//
//	dc[j,:]   = Û_jᵀ·gs[:,j];           dprior += dc
//	da        = softmaxGrad(p, dc)      (over j, or over i)
//	dÛ_j      = κ·(Û_j·da[j,:]) ⊗ 1 + gs[:,j] ⊗ c[j,:] + S'[:,j] ⊗ da[j,:]
//
// the last two terms being the gradient of a[j,i] = <û[i,j], S'_j> through
// the vote itself and through the sum S'_j = κ·Σ_k û[k,j].
func attnBackward(sh RoutingShape, o *ops, duhat, dprior, dv, uhat, prior, work []float32) {
	nIn, nOut, d := sh.NIn, sh.NOut, sh.D
	nc, ns := nOut*nIn, d*nOut
	sc := newAttnScratch(sh, work[sh.Batch*sh.iterSize():])
	dc := sc.a
	for b := 0; b < sh.Batch; b++ {
		blk := nOut * d * nIn
		ub, db := uhat[b*blk:][:blk], duhat[b*blk:][:blk]
		p, st, _, sum := attnRecord(sh, work, b)
		o.squashGrad(sh.Squash, d, nOut, st, dv[b*ns:][:ns], sc.gs)
		// dc[j,:] = Û_jᵀ·gs[:,j]
		clear(dc)
		o.gemvTGroups(nOut, d, nIn, ub, nIn, sc.gs, 1, nOut, dc, nIn)
		if dprior != nil {
			o.ger(1, nc, sc.ones[:1], dc, dprior, nc) // dprior += dc
		}
		if sh.Kind == RoutingSelfAttention {
			o.softmaxColsGrad(nOut, nIn, p, dc, sc.da)
		} else {
			o.softmaxRowsGrad(nOut, nIn, p, dc, sc.da)
		}
		attnCouplings(o, sc.c, p, prior, sc.ones)
		// dÛ_j = κ·(Û_j·da[j,:]) ⊗ 1 + gs[:,j] ⊗ c[j,:] + S'[:,j] ⊗ da[j,:],
		// row by row in one pass over Û and dÛ
		o.ger2GemvGroups(nOut, d, nIn, sc.kappa[0], ub, nIn, sc.gs, sum, 1, nOut, sc.c, sc.da, nIn, db)
	}
}
