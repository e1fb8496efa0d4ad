package kernels

// Direct 7-loop reference convolution. It shares no code with conv.go's
// fast paths (no im2col, no GEMM, no range computation): every tap tests its
// own bounds. Sums are accumulated in float64 so that the reference is an
// accurate oracle for the float32 fast paths. Shapes are assumed valid and
// slices long enough (callers are tests).

// convRef computes y = conv(x, w) + bias (bias may be nil), overwriting y.
func convRef(s ConvShape, y, x, w, bias []float32) {
	oh, ow := s.OutH(), s.OutW()
	cg, og := s.InC/s.Groups, s.OutC/s.Groups
	for n := 0; n < s.Batch; n++ {
		for o := 0; o < s.OutC; o++ {
			g := o / og
			for i := 0; i < oh; i++ {
				for j := 0; j < ow; j++ {
					var acc float64
					if bias != nil {
						acc = float64(bias[o])
					}
					for c := 0; c < cg; c++ {
						ci := g*cg + c
						for kh := 0; kh < s.KH; kh++ {
							ih := i*s.StrideH - s.PadH + kh
							if ih < 0 || ih >= s.InH {
								continue
							}
							for kw := 0; kw < s.KW; kw++ {
								iw := j*s.StrideW - s.PadW + kw
								if iw < 0 || iw >= s.InW {
									continue
								}
								xv := x[((n*s.InC+ci)*s.InH+ih)*s.InW+iw]
								wv := w[((o*cg+c)*s.KH+kh)*s.KW+kw]
								acc += float64(xv) * float64(wv)
							}
						}
					}
					y[((n*s.OutC+o)*oh+i)*ow+j] = float32(acc)
				}
			}
		}
	}
}

// convBackwardDataRef computes dx = ∂<dy, y>/∂x, overwriting dx.
func convBackwardDataRef(s ConvShape, dx, dy, w []float32) {
	oh, ow := s.OutH(), s.OutW()
	cg, og := s.InC/s.Groups, s.OutC/s.Groups
	acc := make([]float64, s.Batch*s.InC*s.InH*s.InW)
	for n := 0; n < s.Batch; n++ {
		for o := 0; o < s.OutC; o++ {
			g := o / og
			for i := 0; i < oh; i++ {
				for j := 0; j < ow; j++ {
					d := float64(dy[((n*s.OutC+o)*oh+i)*ow+j])
					for c := 0; c < cg; c++ {
						ci := g*cg + c
						for kh := 0; kh < s.KH; kh++ {
							ih := i*s.StrideH - s.PadH + kh
							if ih < 0 || ih >= s.InH {
								continue
							}
							for kw := 0; kw < s.KW; kw++ {
								iw := j*s.StrideW - s.PadW + kw
								if iw < 0 || iw >= s.InW {
									continue
								}
								wv := w[((o*cg+c)*s.KH+kh)*s.KW+kw]
								acc[((n*s.InC+ci)*s.InH+ih)*s.InW+iw] += d * float64(wv)
							}
						}
					}
				}
			}
		}
	}
	for i, v := range acc {
		dx[i] = float32(v)
	}
}

// convBackwardFilterRef accumulates dw += ∂<dy, y>/∂w and, when dbias is not
// nil, dbias += ∂<dy, y>/∂bias.
func convBackwardFilterRef(s ConvShape, dw, dbias, x, dy []float32) {
	oh, ow := s.OutH(), s.OutW()
	cg, og := s.InC/s.Groups, s.OutC/s.Groups
	for o := 0; o < s.OutC; o++ {
		g := o / og
		if dbias != nil {
			var acc float64
			for n := 0; n < s.Batch; n++ {
				for i := 0; i < oh*ow; i++ {
					acc += float64(dy[(n*s.OutC+o)*oh*ow+i])
				}
			}
			dbias[o] = float32(float64(dbias[o]) + acc)
		}
		for c := 0; c < cg; c++ {
			ci := g*cg + c
			for kh := 0; kh < s.KH; kh++ {
				for kw := 0; kw < s.KW; kw++ {
					var acc float64
					for n := 0; n < s.Batch; n++ {
						for i := 0; i < oh; i++ {
							ih := i*s.StrideH - s.PadH + kh
							if ih < 0 || ih >= s.InH {
								continue
							}
							for j := 0; j < ow; j++ {
								iw := j*s.StrideW - s.PadW + kw
								if iw < 0 || iw >= s.InW {
									continue
								}
								acc += float64(dy[((n*s.OutC+o)*oh+i)*ow+j]) * float64(x[((n*s.InC+ci)*s.InH+ih)*s.InW+iw])
							}
						}
					}
					k := ((o*cg+c)*s.KH+kh)*s.KW + kw
					dw[k] = float32(float64(dw[k]) + acc)
				}
			}
		}
	}
}
