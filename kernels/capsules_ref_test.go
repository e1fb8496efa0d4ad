package kernels

import "math"

// Straight-loop references of the capsule kernels, written from spec §3 over
// the internal layouts without the primitive table, so that the tests do not
// depend on it. They are generic: float32 to compare with the kernels in the
// same precision, float64 as the accurate value the kernels are checked
// against and for finite differences. They allocate freely.

type capsFloat interface{ ~float32 | ~float64 }

// votesRef: uhat[b,j,k,i] = Σ_l W[j,k,l,i]·u[b,l,i].
func votesRef[T capsFloat](sh VotesShape, uhat, w, u []T) {
	B, nIn, nOut, dIn, dOut := sh.Batch, sh.NIn, sh.NOut, sh.DIn, sh.DOut
	for b := 0; b < B; b++ {
		for j := 0; j < nOut; j++ {
			for k := 0; k < dOut; k++ {
				for i := 0; i < nIn; i++ {
					var s T
					for l := 0; l < dIn; l++ {
						s += w[((j*dOut+k)*dIn+l)*nIn+i] * u[(b*dIn+l)*nIn+i]
					}
					uhat[((b*nOut+j)*dOut+k)*nIn+i] = s
				}
			}
		}
	}
}

// votesBackwardRef: du overwritten, dw accumulated.
func votesBackwardRef[T capsFloat](sh VotesShape, dw, du, w, u, duhat []T) {
	B, nIn, nOut, dIn, dOut := sh.Batch, sh.NIn, sh.NOut, sh.DIn, sh.DOut
	for b := 0; b < B; b++ {
		for l := 0; l < dIn; l++ {
			for i := 0; i < nIn; i++ {
				var s T
				for j := 0; j < nOut; j++ {
					for k := 0; k < dOut; k++ {
						s += w[((j*dOut+k)*dIn+l)*nIn+i] * duhat[((b*nOut+j)*dOut+k)*nIn+i]
					}
				}
				du[(b*dIn+l)*nIn+i] = s
			}
		}
	}
	for j := 0; j < nOut; j++ {
		for k := 0; k < dOut; k++ {
			for l := 0; l < dIn; l++ {
				for i := 0; i < nIn; i++ {
					var s T
					for b := 0; b < B; b++ {
						s += duhat[((b*nOut+j)*dOut+k)*nIn+i] * u[(b*dIn+l)*nIn+i]
					}
					dw[((j*dOut+k)*dIn+l)*nIn+i] += s
				}
			}
		}
	}
}

// squashRefFactor returns f and df/dq for v = f(q)·s, q = |s|², written
// from spec §3 directly (independently of squashScale): with
// n = sqrt(q + ε), dn/dq = 1/(2n).
func squashRefFactor[T capsFloat](kind Squash, q T) (f, dfdq T) {
	qq := float64(q)
	n := math.Sqrt(qq + SquashEps)
	var ff, df float64
	switch kind {
	case SquashSabour:
		// f = q/(1+q) · 1/n
		ff = qq / (1 + qq) / n
		df = 1/((1+qq)*(1+qq))/n + qq/(1+qq)*(-1/(n*n))/(2*n)
	default:
		// f = (1 − e^{−n})/n, df/dn = e^{−n}/n − (1 − e^{−n})/n²
		e := math.Exp(-n)
		ff = (1 - e) / n
		df = (e/n - (1-e)/(n*n)) / (2 * n)
	}
	return T(ff), T(df)
}

// routingTrace holds one sample's per-iteration couplings c[t][j][i], squash
// inputs s[t][j][k] and outputs v[t][j][k].
type routingTrace[T capsFloat] struct {
	c, s, v [][][]T
}

func capsMat[T capsFloat](r, c int) [][]T {
	m := make([][]T, r)
	for i := range m {
		m[i] = make([]T, c)
	}
	return m
}

// routingRefSample runs the loop of spec §3 for sample b and returns its
// trace.
func routingRefSample[T capsFloat](sh RoutingShape, b int, uhat, prior []T) routingTrace[T] {
	nIn, nOut, d := sh.NIn, sh.NOut, sh.D
	U := func(j, k, i int) T { return uhat[((b*nOut+j)*d+k)*nIn+i] }
	r := sh.Iters
	if sh.Uniform {
		r = 1
	}
	var tr routingTrace[T]
	logits := capsMat[T](nOut, nIn)
	if prior != nil && !sh.Uniform {
		for j := range nOut {
			for i := range nIn {
				logits[j][i] = prior[j*nIn+i]
			}
		}
	}
	for t := 0; t < r; t++ {
		c := capsMat[T](nOut, nIn)
		for i := 0; i < nIn; i++ {
			if sh.Uniform {
				for j := range nOut {
					c[j][i] = 1 / T(nOut)
				}
				continue
			}
			mx := logits[0][i]
			for j := 1; j < nOut; j++ {
				mx = max(mx, logits[j][i])
			}
			var sum T
			for j := range nOut {
				c[j][i] = T(math.Exp(float64(logits[j][i] - mx)))
				sum += c[j][i]
			}
			for j := range nOut {
				c[j][i] /= sum
			}
		}
		s := capsMat[T](nOut, d)
		v := capsMat[T](nOut, d)
		for j := 0; j < nOut; j++ {
			var q T
			for k := 0; k < d; k++ {
				var acc T
				for i := 0; i < nIn; i++ {
					acc += c[j][i] * U(j, k, i)
				}
				s[j][k] = acc
				q += acc * acc
			}
			f, _ := squashRefFactor(sh.Squash, q)
			for k := 0; k < d; k++ {
				v[j][k] = f * s[j][k]
			}
		}
		if t < r-1 {
			for j := 0; j < nOut; j++ {
				for i := 0; i < nIn; i++ {
					var a T
					for k := 0; k < d; k++ {
						a += U(j, k, i) * v[j][k]
					}
					logits[j][i] += a
				}
			}
		}
		tr.c = append(tr.c, c)
		tr.s = append(tr.s, s)
		tr.v = append(tr.v, v)
	}
	return tr
}

// routingRef: v (B, D, NOut), c (B, NOut, NIn) or nil.
func routingRef[T capsFloat](sh RoutingShape, v, c, uhat, prior []T) {
	nIn, nOut, d := sh.NIn, sh.NOut, sh.D
	for b := 0; b < sh.Batch; b++ {
		tr := routingRefSample(sh, b, uhat, prior)
		last := len(tr.v) - 1
		for j := 0; j < nOut; j++ {
			for k := 0; k < d; k++ {
				v[(b*d+k)*nOut+j] = tr.v[last][j][k]
			}
			if c != nil {
				for i := 0; i < nIn; i++ {
					c[(b*nOut+j)*nIn+i] = tr.c[last][j][i]
				}
			}
		}
	}
}

// routingBackwardRef: duhat overwritten, dprior (may be nil) accumulated.
// It re-runs the forward of every sample and differentiates it in reverse.
func routingBackwardRef[T capsFloat](sh RoutingShape, duhat, dprior, dv, uhat, prior []T) {
	nIn, nOut, d := sh.NIn, sh.NOut, sh.D
	for b := 0; b < sh.Batch; b++ {
		U := func(j, k, i int) T { return uhat[((b*nOut+j)*d+k)*nIn+i] }
		dU := func(j, k, i int) *T { return &duhat[((b*nOut+j)*d+k)*nIn+i] }
		for j := 0; j < nOut; j++ {
			for k := 0; k < d; k++ {
				for i := 0; i < nIn; i++ {
					*dU(j, k, i) = 0
				}
			}
		}
		tr := routingRefSample(sh, b, uhat, prior)
		r := len(tr.c)
		gL := capsMat[T](nOut, nIn) // ∂L/∂logits after iteration t
		for t := r - 1; t >= 0; t-- {
			gv := capsMat[T](nOut, d)
			if t == r-1 {
				for j := range nOut {
					for k := range d {
						gv[j][k] = dv[(b*d+k)*nOut+j]
					}
				}
			} else {
				// logits[j][i] += Σ_k U(j,k,i)·v_t[j][k]
				for j := range nOut {
					for k := range d {
						for i := range nIn {
							gv[j][k] += gL[j][i] * U(j, k, i)
							*dU(j, k, i) += gL[j][i] * tr.v[t][j][k]
						}
					}
				}
			}
			// v = f(q)·s: ds = f·dv + 2·f'(q)·(s·dv)·s
			gs := capsMat[T](nOut, d)
			for j := range nOut {
				var q, dot T
				for k := range d {
					q += tr.s[t][j][k] * tr.s[t][j][k]
					dot += tr.s[t][j][k] * gv[j][k]
				}
				f, df := squashRefFactor(sh.Squash, q)
				for k := range d {
					gs[j][k] = f*gv[j][k] + 2*df*dot*tr.s[t][j][k]
				}
			}
			// s[j][k] = Σ_i c[j][i]·U(j,k,i)
			dc := capsMat[T](nOut, nIn)
			for j := range nOut {
				for k := range d {
					for i := range nIn {
						*dU(j, k, i) += gs[j][k] * tr.c[t][j][i]
						dc[j][i] += gs[j][k] * U(j, k, i)
					}
				}
			}
			if sh.Uniform {
				continue
			}
			// c[:,i] = softmax(logits[:,i]): dlogits = c ⊙ (dc − <c, dc>)
			for i := range nIn {
				var dot T
				for j := range nOut {
					dot += tr.c[t][j][i] * dc[j][i]
				}
				for j := range nOut {
					gL[j][i] += tr.c[t][j][i] * (dc[j][i] - dot)
				}
			}
		}
		if dprior != nil && !sh.Uniform {
			for j := range nOut {
				for i := range nIn {
					dprior[j*nIn+i] += gL[j][i]
				}
			}
		}
	}
}
