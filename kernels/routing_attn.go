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
// generated AVX2, AVX-512 and NEON kernels of routing by agreement: gemvN,
// gemvT, ger and ger2 in groups, the softmax over columns, the squash and
// its gradient, exp). The softmax over rows, which only
// RoutingSelfAttentionIn uses, costs O(NOut·NIn) against the O(NOut·D·NIn)
// of the products: it runs as the softmaxCols primitive (and its gradient) on the
// transpose. The couplings are not blocked (routingChunk): S' needs every
// vote before any logit, so a block pass would read Û twice anyway.
//
// The work record of a sample is p (NOut, NIn), s and v (D, NOut) and S'
// (D, NOut); the scratch (attnScratch) holds a, c, the gradients, the
// transposes and NIn ones.

// attnScratch is the scratch of one attention call: the logits a (forward)
// or the coupling gradient (backward), the couplings c, the logit gradient
// da, two planes for the transposes of the softmax over rows, two D·NOut
// capsule vectors and the ones.
type attnScratch struct {
	a, c, da, t, t2, gs, g, ones []float32
}

// attnScratchSize is the scratch floats of an attention kind:
// 5·NOut·NIn + 2·D·NOut + NIn.
func attnScratchSize(sh RoutingShape) int {
	return 5*sh.NOut*sh.NIn + 2*sh.D*sh.NOut + sh.NIn
}

func newAttnScratch(sh RoutingShape, scr []float32) attnScratch {
	nc, ns := sh.NOut*sh.NIn, sh.D*sh.NOut
	var s attnScratch
	planes := [...]*[]float32{&s.a, &s.c, &s.da, &s.t, &s.t2}
	for k, p := range planes {
		*p = scr[k*nc:][:nc]
	}
	scr = scr[len(planes)*nc:]
	s.gs, s.g = scr[:ns], scr[ns:][:ns]
	s.ones = scr[2*ns:][:sh.NIn]
	for i := range s.ones {
		s.ones[i] = 1
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

// attnCouplings writes c = p + prior (c = p for a nil prior).
func attnCouplings(c, p, prior []float32) {
	if prior == nil {
		copy(c, p)
		return
	}
	prior = prior[:len(p)]
	c = c[:len(p)]
	for x, v := range p {
		c[x] = v + prior[x]
	}
}

// scale multiplies x by k in place.
func scale(x []float32, k float32) {
	for i := range x {
		x[i] *= k
	}
}

// attnForward is RoutingForward for an attention kind (arguments checked,
// Batch > 0).
func attnForward(sh RoutingShape, o *ops, v, c, uhat, prior, work []float32) {
	nIn, nOut, d := sh.NIn, sh.NOut, sh.D
	nc, ns := nOut*nIn, d*nOut
	kappa := float32(1 / math.Sqrt(float64(d)))
	sc := newAttnScratch(sh, work[sh.Batch*sh.iterSize():])
	for b := 0; b < sh.Batch; b++ {
		ub := uhat[b*nOut*d*nIn:][:nOut*d*nIn]
		p, st, vt, sum := attnRecord(sh, work, b)
		// S'[:,j] = κ·Û_j·1
		clear(sum)
		o.gemvNGroups(nOut, d, nIn, ub, nIn, sc.ones, 0, sum, 1, nOut)
		scale(sum, kappa)
		// a[j,:] = Û_jᵀ·S'[:,j]
		clear(sc.a)
		o.gemvTGroups(nOut, d, nIn, ub, nIn, sum, 1, nOut, sc.a, nIn)
		if sh.Kind == RoutingSelfAttention {
			o.softmaxCols(nOut, nIn, sc.a, p)
		} else {
			softmaxRows(o, nOut, nIn, sc.a, p, sc.c)
		}
		attnCouplings(sc.c, p, prior)
		// s[:,j] = Û_j·c[j,:]
		clear(st)
		o.gemvNGroups(nOut, d, nIn, ub, nIn, sc.c, nIn, st, 1, nOut)
		o.squash(sh.Squash, d, nOut, st, vt)
		copy(v[b*ns:][:ns], vt)
		if c != nil {
			copy(c[b*nc:][:nc], sc.c)
		}
	}
}

// attnBackward is RoutingBackward for an attention kind (arguments
// checked, Batch > 0). Per sample, with gs = ∂L/∂s and dc = ∂L/∂c:
//
//	dc[j,:]   = Û_jᵀ·gs[:,j];           dprior += dc
//	da        = softmaxGrad(p, dc)      (over j, or over i)
//	dÛ_j      = gs[:,j] ⊗ c[j,:] + S'[:,j] ⊗ da[j,:] + κ·(Û_j·da[j,:]) ⊗ 1
//
// the last two terms being the gradient of a[j,i] = <û[i,j], S'_j> through
// the vote itself and through the sum S'_j = κ·Σ_k û[k,j].
func attnBackward(sh RoutingShape, o *ops, duhat, dprior, dv, uhat, prior, work []float32) {
	nIn, nOut, d := sh.NIn, sh.NOut, sh.D
	nc, ns := nOut*nIn, d*nOut
	kappa := float32(1 / math.Sqrt(float64(d)))
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
			softmaxRowsGrad(o, nOut, nIn, p, dc, sc.da, sc.c, sc.t, sc.t2)
		}
		attnCouplings(sc.c, p, prior)
		// dÛ_j = gs[:,j] ⊗ c[j,:] + S'[:,j] ⊗ da[j,:]
		o.ger2GroupsSet(nOut, d, nIn, sc.gs, sum, 1, nOut, sc.c, sc.da, nIn, db, nIn)
		// dÛ_j += κ·(Û_j·da[j,:]) ⊗ 1
		clear(sc.g)
		o.gemvNGroups(nOut, d, nIn, ub, nIn, sc.da, nIn, sc.g, 1, nOut)
		scale(sc.g, kappa)
		o.gerGroups(nOut, d, nIn, sc.g, 1, nOut, sc.ones, 0, db, nIn)
	}
}

// softmaxRows writes c[r,:] = softmax of l[r,:] for every row r < rows
// of the rows×n row-major matrix l, as the softmaxCols primitive of the
// transpose: l is transposed into t (n×rows), its columns' softmax written
// back into l, and transposed into c. The transposes are O(rows·n) copies;
// the softmax runs vectorised across rows, as that of routing by
// agreement does across columns.
func softmaxRows(o *ops, rows, n int, l, c, t []float32) {
	transpose(rows, n, l, t)
	o.softmaxCols(n, rows, t, l)
	transpose(n, rows, l, c)
}

// softmaxRowsGrad writes dl[r,i] = c[r,i]·(dc[r,i] − Σ_i' c[r,i']·dc[r,i'])
// for every row r < rows of the rows×n matrices, as the softmaxColsGrad
// primitive of the transposes (ct, dct and dlt: scratch of rows·n floats
// each).
func softmaxRowsGrad(o *ops, rows, n int, c, dc, dl, ct, dct, dlt []float32) {
	transpose(rows, n, c, ct)
	transpose(rows, n, dc, dct)
	o.softmaxColsGrad(n, rows, ct, dct, dlt)
	transpose(n, rows, dlt, dl)
}

// transpose writes the transpose of the rows×n row-major matrix a into t
// (n×rows).
func transpose(rows, n int, a, t []float32) {
	a, t = a[:rows*n], t[:rows*n]
	for r := 0; r < rows; r++ {
		ar := a[r*n:][:n]
		for i, v := range ar {
			t[i*rows+r] = v
		}
	}
}
