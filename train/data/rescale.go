package data

// Rescale writes src resampled to dst's size by area averaging: output
// pixel (y, x) of a dh×dw dst covers the rectangle [y·sh/dh, (y+1)·sh/dh)
// × [x·sw/dw, (x+1)·sw/dw) of the sh×sw src, and is the mean of src over
// it, each source pixel weighted by the area it shares with the rectangle
// (a box filter with exact fractional coverage, OpenCV's INTER_AREA when
// shrinking). Each axis is scaled on its own; channels are kept.
//
// It is how the paper feeds 40×40 AffNIST to Sabour's 28×28 model
// ("rescaled down to 28×28"; the paper does not say how). Area averaging
// rather than bilinear sampling: shrinking by 40/28 ≈ 1.43, bilinear
// sampling reads each output pixel from the 2×2 source pixels around one
// point and skips the rest, so a stroke one or two pixels wide keeps more
// or less of its ink depending on where it falls (aliasing), while area
// averaging uses every source pixel with its coverage: a digit's ink is
// kept whatever its position (the sum of dst is the sum of src times
// dh·dw/(sh·sw)), a constant image stays exactly constant, an integer
// factor gives plain block means and equal sizes a copy.
//
// The weights are integers (in units of 1/dh rows and 1/dw columns) summed
// in float64, so a constant image stays exactly constant and outputs stay
// in the range of the inputs. It does not allocate. dst and src must not
// overlap.
func Rescale(dst, src Image) error {
	if err := checkImages(dst, src); err != nil {
		return err
	}
	rescale(dst, src)
	return nil
}

// rescale is Rescale without the checks.
func rescale(dst, src Image) {
	sh, sw, dh, dw := src.H, src.W, dst.H, dst.W
	area := float64(sh) * float64(sw)
	for c := 0; c < src.C; c++ {
		sp := src.Pix[c*sh*sw : (c+1)*sh*sw]
		dp := dst.Pix[c*dh*dw : (c+1)*dh*dw]
		for y := 0; y < dh; y++ {
			// Output row y spans [y0, y1) and source row r [r·dh, (r+1)·dh),
			// both in units of 1/dh source rows; columns likewise.
			y0, y1 := y*sh, (y+1)*sh
			for x := 0; x < dw; x++ {
				x0, x1 := x*sw, (x+1)*sw
				s := 0.0
				for r := y0 / dh; r*dh < y1; r++ {
					wy := min(y1, (r+1)*dh) - max(y0, r*dh)
					row := sp[r*sw : (r+1)*sw]
					for q := x0 / dw; q*dw < x1; q++ {
						wx := min(x1, (q+1)*dw) - max(x0, q*dw)
						s += float64(wy*wx) * float64(row[q])
					}
				}
				dp[y*dw+x] = float32(s / area)
			}
		}
	}
}

// PlacementFor returns the placement that fits h×w data set images to a
// model's mh×mw input: PlacementNone when the sizes are equal,
// PlacementCenter when the images fit (they are padded, as MNIST digits on
// a 40×40 model), and PlacementRescale when they are larger on either axis
// (as 40×40 AffNIST for Sabour's 28×28 model).
func PlacementFor(h, w, mh, mw int) Placement {
	switch {
	case h == mh && w == mw:
		return PlacementNone
	case h <= mh && w <= mw:
		return PlacementCenter
	}
	return PlacementRescale
}
