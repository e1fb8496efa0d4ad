package eval

import (
	"fmt"
	"time"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/analysis"
	"github.com/capstan-ml/capstan/train/data"
)

// ParseTree computes the parse-tree statistics of docs/semantics.md §7 (see
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
// one transformation family at one magnitude (docs/semantics.md §7).
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
	pts, err := invariancePoints(net, batch.Cap(), families, mags)
	if err != nil {
		return nil, err
	}
	r := newInvarianceRun(net, batch, in, c, h, w, rescale, pts)
	err = firstImages(b, batch, k, "invariance", r.addBatch)
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

// invariancePt is one (family, magnitude) point of Invariance with the
// accumulator of its figures.
type invariancePt struct {
	f   data.Family
	m   float64
	acc *analysis.Invariance
}

// invariancePoints returns the points of Invariance in order: for each
// family, each of its magnitudes (mags[f], DefaultMagnitudes when absent),
// each with an empty accumulator for the capsule layers of net and batches
// of size images. An unknown family or magnitude, or no point at all, is an
// error.
func invariancePoints(net *capsnet.Net, size int, families []data.Family, mags map[data.Family][]float64) ([]invariancePt, error) {
	var pts []invariancePt
	for _, f := range families {
		ms, ok := mags[f]
		if !ok {
			ms = DefaultMagnitudes(f)
		}
		for _, m := range ms {
			if _, err := data.FamilyAffine(f, m); err != nil {
				return nil, err
			}
			acc, err := analysis.NewInvariance(net.Layers(), size)
			if err != nil {
				return nil, err
			}
			pts = append(pts, invariancePt{f, m, acc})
		}
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("invariance: no transformation to measure")
	}
	return pts, nil
}

// invarianceRun holds the buffers of one Invariance pass: the model's input
// of the originals (x, batch.X unless rescaled) and of the transformed
// images (xt), and the originals' capsules of the current batch (orig).
type invarianceRun struct {
	net     *capsnet.Net
	batch   *data.Batch
	pts     []invariancePt
	in      [3]int
	sz      int
	rescale bool
	x, xt   []float32
	tmp     data.Image // a transformed image at the data's size, before rescaling
	layers  []capsnet.LayerInfo
	orig    [][]float32
}

// newInvarianceRun allocates the buffers of an Invariance pass of net over
// batches of batch, for images of c×h×w (rescaled to the model's input in
// when rescale) and the points pts.
func newInvarianceRun(net *capsnet.Net, batch *data.Batch, in [3]int, c, h, w int, rescale bool, pts []invariancePt) *invarianceRun {
	r := &invarianceRun{net: net, batch: batch, pts: pts, in: in, rescale: rescale}
	r.sz = in[0] * in[1] * in[2]
	r.x, r.xt = batch.X, make([]float32, batch.Cap()*r.sz)
	if rescale {
		r.x = make([]float32, batch.Cap()*r.sz)
		r.tmp = data.Image{C: c, H: h, W: w, Pix: make([]float32, c*h*w)}
	}
	// The originals' capsules are computed once per batch and kept (orig);
	// each transformation then costs one forward pass, and magnitude 0 (the
	// identity) none: its pairs are the originals themselves.
	r.layers = net.Layers()
	r.orig = make([][]float32, len(r.layers))
	for l, li := range r.layers {
		r.orig[l] = make([]float32, batch.Cap()*li.N*li.D)
	}
	return r
}

// model returns image i of buf, a batch at the model's input shape.
func (r *invarianceRun) model(buf []float32, i int) data.Image {
	return data.Image{C: r.in[0], H: r.in[1], W: r.in[2], Pix: buf[i*r.sz : (i+1)*r.sz]}
}

// addPairs adds to pt, for every capsule layer l, the pairs of the
// originals' capsules and trans(l) over n images, then counts the n images.
func (r *invarianceRun) addPairs(pt invariancePt, trans func(l int) ([]float32, error), n int) error {
	for l, li := range r.layers {
		t, err := trans(l)
		if err != nil {
			return err
		}
		if err := pt.acc.AddPair(l, r.orig[l], t, capsnet.CapsShape{B: n, N: li.N, D: li.D}, n); err != nil {
			return err
		}
	}
	pt.acc.AddImages(n)
	return nil
}

// addBatch measures the first n images of the current batch at every point:
// the callback of firstImages.
func (r *invarianceRun) addBatch(n int) error {
	if r.rescale {
		for i := 0; i < n; i++ {
			if err := data.Rescale(r.model(r.x, i), r.batch.Image(i)); err != nil {
				return fmt.Errorf("invariance: %w", err)
			}
		}
	}
	if err := r.net.Forward(r.x, nil); err != nil {
		return fmt.Errorf("invariance: %w", err)
	}
	for l := range r.layers {
		c, _, err := r.net.Capsules(l)
		if err != nil {
			return err
		}
		copy(r.orig[l], c)
	}
	for _, pt := range r.pts {
		if pt.m == 0 { // the identity of every family
			if err := r.addPairs(pt, func(l int) ([]float32, error) { return r.orig[l], nil }, n); err != nil {
				return err
			}
			continue
		}
		if err := r.addTransformed(pt, n); err != nil {
			return err
		}
	}
	return nil
}

// addTransformed transforms the first n images of the current batch by
// pt's family and magnitude (rescaling them after when r.rescale), runs
// them through the Net and adds their pairs with the originals to pt.
func (r *invarianceRun) addTransformed(pt invariancePt, n int) error {
	for i := 0; i < n; i++ {
		dst := r.model(r.xt, i)
		if r.rescale {
			dst = r.tmp
		}
		if err := data.Transform(dst, r.batch.Image(i), pt.f, pt.m); err != nil {
			return fmt.Errorf("invariance: %s %g: %w", pt.f, pt.m, err)
		}
		if r.rescale {
			if err := data.Rescale(r.model(r.xt, i), r.tmp); err != nil {
				return fmt.Errorf("invariance: %w", err)
			}
		}
	}
	if err := r.net.Forward(r.xt, nil); err != nil {
		return fmt.Errorf("invariance: %w", err)
	}
	return r.addPairs(pt, func(l int) ([]float32, error) {
		c, _, err := r.net.Capsules(l)
		return c, err
	}, n)
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
