package eval

import (
	"fmt"
	"time"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/analysis"
	"github.com/capstan-ml/capstan/train/data"
)

// ParseTree computes the parse-tree statistics of spec §7 (see
// capsnet/analysis) of model p over the first k images of epoch 0 of b (k
// ≤ 0: every image), in batches of b's size through one inference Net:
// memory does not grow with k. The images must have the model's input
// shape (use a placement on the batcher).
func ParseTree(p *capsnet.Params, b *data.Batcher, k int, th analysis.Thresholds) (analysis.Report, error) {
	rep, _, err := ParseTreeScored(p, b, k, th)
	return rep, err
}

// ParseTreeScored is ParseTree that also classifies the same images in the
// same pass: the returned Report holds the confusion matrix and the
// accuracy of model p over them (the class of the longest output capsule,
// as Evaluator.Confusion), and Seconds is the wall time of the pass.
func ParseTreeScored(p *capsnet.Params, b *data.Batcher, k int, th analysis.Thresholds) (analysis.Report, *Report, error) {
	if c, h, w := b.Shape(); [3]int{c, h, w} != p.Config.Input {
		in := p.Config.Input
		return analysis.Report{}, nil, fmt.Errorf("analysis: the data gives %d×%d×%d images, model %s takes %d×%d×%d", c, h, w, p.Config.Name, in[0], in[1], in[2])
	}
	batch := b.NewBatch()
	net, err := capsnet.NewInferenceNet(p, batch.Cap())
	if err != nil {
		return analysis.Report{}, nil, err
	}
	st, err := analysis.New(net.Layers(), th)
	if err != nil {
		return analysis.Report{}, nil, err
	}
	classes := p.Config.Classes
	score := &Report{Confusion: make([][]int, classes)}
	for i := range score.Confusion {
		score.Confusion[i] = make([]int, classes)
	}
	start := time.Now()
	err = firstImages(b, batch, k, "analysis", func(n int) error {
		// A last, partial batch leaves the earlier images behind it in
		// the buffer: the Net runs a full batch and only n samples count.
		if err := net.Forward(batch.X, nil); err != nil {
			return fmt.Errorf("analysis: %w", err)
		}
		pred := net.Pred()
		for i, y := range batch.Y[:n] {
			if y < 0 || int(y) >= classes {
				return fmt.Errorf("analysis: image %d has label %d, model %s has %d classes", batch.Index[i], y, p.Config.Name, classes)
			}
			score.Confusion[y][pred[i]]++
			if pred[i] == int(y) {
				score.Correct++
			}
		}
		score.Total += n
		return st.AddNet(net, n)
	})
	if err != nil {
		return analysis.Report{}, nil, err
	}
	score.Seconds = time.Since(start).Seconds()
	return st.Report(), score, nil
}

// InvariancePoint is the viewpoint invariance of every capsule layer for
// one transformation family at one magnitude (spec §7).
type InvariancePoint struct {
	Family    data.Family
	Magnitude float64
	K         int
	Layers    []analysis.InvarianceLayer
}

// DefaultMagnitudes returns the sweep of each family: rotation and shear
// 0–45° in steps of 15°, scale factors 1 to 1.3 in steps of 0.1 (magnitude
// 0 to 0.3), translations 0–8 px in steps of 2.
func DefaultMagnitudes(f data.Family) []float64 {
	switch f {
	case data.FamilyRotation, data.FamilyShear:
		return []float64{0, 15, 30, 45}
	case data.FamilyScale:
		return []float64{0, 0.1, 0.2, 0.3}
	}
	return []float64{0, 2, 4, 6, 8}
}

// Invariance measures the viewpoint invariance of model p over the first k
// images of epoch 0 of b (k ≤ 0: all): for each family and each of its
// magnitudes (mags[f], DefaultMagnitudes when absent), every batch is
// transformed about its canvas center with the AffNIST transform code
// (data.Transform) and both versions run through one inference Net. The
// images must have the model's input shape (place them on the batcher), or
// be larger (data.PlacementFor gives data.PlacementRescale): then both
// versions are rescaled to the model's input (data.Rescale) after the
// transformation, so that the magnitudes are in the data's pixels, as for
// a model that takes the data's size (the paper's Sabour model on
// AffNIST).
func Invariance(p *capsnet.Params, b *data.Batcher, k int, families []data.Family, mags map[data.Family][]float64) ([]InvariancePoint, error) {
	c, h, w := b.Shape()
	in := p.Config.Input
	rescale := c == in[0] && data.PlacementFor(h, w, in[1], in[2]) == data.PlacementRescale
	if [3]int{c, h, w} != in && !rescale {
		return nil, fmt.Errorf("invariance: the data gives %d×%d×%d images, model %s takes %d×%d×%d (or smaller images, rescaled)", c, h, w, p.Config.Name, in[0], in[1], in[2])
	}
	batch := b.NewBatch()
	net, err := capsnet.NewInferenceNet(p, batch.Cap())
	if err != nil {
		return nil, err
	}
	type point struct {
		f   data.Family
		m   float64
		acc *analysis.Invariance
	}
	var pts []point
	for _, f := range families {
		ms, ok := mags[f]
		if !ok {
			ms = DefaultMagnitudes(f)
		}
		for _, m := range ms {
			if _, err := data.FamilyAffine(f, m); err != nil {
				return nil, err
			}
			acc, err := analysis.NewInvariance(net.Layers(), batch.Cap())
			if err != nil {
				return nil, err
			}
			pts = append(pts, point{f, m, acc})
		}
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("invariance: no transformation to measure")
	}
	sz := in[0] * in[1] * in[2]
	x, xt := batch.X, make([]float32, batch.Cap()*sz)
	var tmp data.Image // a transformed image at the data's size, before rescaling
	if rescale {
		x = make([]float32, batch.Cap()*sz)
		tmp = data.Image{C: c, H: h, W: w, Pix: make([]float32, c*h*w)}
	}
	model := func(buf []float32, i int) data.Image {
		return data.Image{C: in[0], H: in[1], W: in[2], Pix: buf[i*sz : (i+1)*sz]}
	}
	// The originals' capsules are computed once per batch and kept (orig);
	// each transformation then costs one forward pass, and magnitude 0 (the
	// identity) none: its pairs are the originals themselves.
	layers := net.Layers()
	orig := make([][]float32, len(layers))
	for l, li := range layers {
		orig[l] = make([]float32, batch.Cap()*li.N*li.D)
	}
	addPairs := func(pt point, trans func(l int) ([]float32, error), n int) error {
		for l, li := range layers {
			t, err := trans(l)
			if err != nil {
				return err
			}
			if err := pt.acc.AddPair(l, orig[l], t, capsnet.CapsShape{B: n, N: li.N, D: li.D}, n); err != nil {
				return err
			}
		}
		pt.acc.AddImages(n)
		return nil
	}
	err = firstImages(b, batch, k, "invariance", func(n int) error {
		if rescale {
			for i := 0; i < n; i++ {
				if err := data.Rescale(model(x, i), batch.Image(i)); err != nil {
					return fmt.Errorf("invariance: %w", err)
				}
			}
		}
		if err := net.Forward(x, nil); err != nil {
			return fmt.Errorf("invariance: %w", err)
		}
		for l := range layers {
			c, _, err := net.Capsules(l)
			if err != nil {
				return err
			}
			copy(orig[l], c)
		}
		for _, pt := range pts {
			if pt.m == 0 { // the identity of every family
				if err := addPairs(pt, func(l int) ([]float32, error) { return orig[l], nil }, n); err != nil {
					return err
				}
				continue
			}
			for i := 0; i < n; i++ {
				dst := model(xt, i)
				if rescale {
					dst = tmp
				}
				if err := data.Transform(dst, batch.Image(i), pt.f, pt.m); err != nil {
					return fmt.Errorf("invariance: %s %g: %w", pt.f, pt.m, err)
				}
				if rescale {
					if err := data.Rescale(model(xt, i), tmp); err != nil {
						return fmt.Errorf("invariance: %w", err)
					}
				}
			}
			if err := net.Forward(xt, nil); err != nil {
				return fmt.Errorf("invariance: %w", err)
			}
			err := addPairs(pt, func(l int) ([]float32, error) {
				c, _, err := net.Capsules(l)
				return c, err
			}, n)
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]InvariancePoint, len(pts))
	for i, pt := range pts {
		kk, layers := pt.acc.Report()
		out[i] = InvariancePoint{Family: pt.f, Magnitude: pt.m, K: kk, Layers: layers}
	}
	return out, nil
}

// firstImages runs fn on the batches of epoch 0 of b (filled into batch)
// up to k images in all (k ≤ 0: every image); n is the count of the batch
// to use. No image at all is an error naming what.
func firstImages(b *data.Batcher, batch *data.Batch, k int, what string, fn func(n int) error) error {
	b.StartEpoch(0)
	seen := 0
	for (k <= 0 || seen < k) && b.Next(batch) {
		n := batch.N
		if k > 0 {
			n = min(n, k-seen)
		}
		if err := fn(n); err != nil {
			return err
		}
		seen += n
	}
	if err := b.Err(); err != nil {
		return err
	}
	if seen == 0 {
		return fmt.Errorf("%s: no image to analyse", what)
	}
	return nil
}
