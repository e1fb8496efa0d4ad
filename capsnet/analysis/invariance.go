package analysis

import (
	"fmt"
	"math"

	"github.com/capstan-ml/capstan/capsnet"
)

// Invariance accumulates the viewpoint invariance of docs/semantics.md §7 for one
// transformation at one magnitude: for every capsule, the correlation
// corr = v1·v2 / (|v1|·|v2|) of its norms v1 on the original images and
// v2 on the transformed ones, over every image pair added. It keeps three
// float64 sums per capsule, so k images cost no more memory than one
// batch. Make one per (family, magnitude) point of a curve.
type Invariance struct {
	layers []capsnet.LayerInfo
	batch  int
	k      int
	// dot, s1, s2: per layer, per capsule, Σ v1·v2, Σ v1², Σ v2².
	dot, s1, s2 [][]float64
	// orig holds the original images' capsules of one batch for AddNet.
	orig [][]float32
}

// NewInvariance returns an empty accumulator for capsule layers of these
// shapes (as capsnet.Net.Layers gives them); AddNet takes batches of at
// most batch images.
func NewInvariance(layers []capsnet.LayerInfo, batch int) (*Invariance, error) {
	if len(layers) == 0 || batch <= 0 {
		return nil, fmt.Errorf("analysis: invariance of %d layers at batch %d", len(layers), batch)
	}
	v := &Invariance{layers: layers, batch: batch}
	for l, li := range layers {
		if li.N <= 0 || li.D <= 0 {
			return nil, fmt.Errorf("analysis: layer %d (%s) of %d capsules of dimension %d", l, li.Name, li.N, li.D)
		}
		v.dot = append(v.dot, make([]float64, li.N))
		v.s1 = append(v.s1, make([]float64, li.N))
		v.s2 = append(v.s2, make([]float64, li.N))
		v.orig = append(v.orig, make([]float32, batch*li.N*li.D))
	}
	return v, nil
}

// AddNet runs net forward on the original images x and on their
// transformed versions xt (both n images in the net's input layout, n ≤
// the batch of NewInvariance and of net) and adds every capsule's norm
// pairs. It does not allocate.
func (v *Invariance) AddNet(net *capsnet.Net, x, xt []float32, n int) error {
	if n < 0 || n > v.batch || n > net.Batch {
		return fmt.Errorf("analysis: %d images for a batch of %d (net %d)", n, v.batch, net.Batch)
	}
	if err := net.Forward(x, nil); err != nil {
		return err
	}
	for l := range v.layers {
		c, sh, err := net.Capsules(l)
		if err != nil {
			return err
		}
		if sh.N != v.layers[l].N || sh.D != v.layers[l].D {
			return fmt.Errorf("analysis: layer %d of the net is %d×%d, the accumulator's %d×%d", l, sh.N, sh.D, v.layers[l].N, v.layers[l].D)
		}
		copy(v.orig[l], c[:n*sh.N*sh.D])
	}
	if err := net.Forward(xt, nil); err != nil {
		return err
	}
	for l := range v.layers {
		c, sh, err := net.Capsules(l)
		if err != nil {
			return err
		}
		if err := v.AddPair(l, v.orig[l], c, capsnet.CapsShape{B: n, N: sh.N, D: sh.D}, n); err != nil {
			return err
		}
	}
	v.k += n
	return nil
}

// AddPair adds the first n samples of layer l's capsules on original
// (orig) and transformed (trans) images, both in the layout of shape. It
// is what AddNet calls per layer; a caller that adds pairs itself counts
// images with AddImages.
func (v *Invariance) AddPair(l int, orig, trans []float32, shape capsnet.CapsShape, n int) error {
	if l < 0 || l >= len(v.layers) {
		return fmt.Errorf("analysis: layer %d of %d", l, len(v.layers))
	}
	if shape.N != v.layers[l].N || shape.D != v.layers[l].D || n < 0 || n > shape.B || len(orig) < n*shape.N*shape.D || len(trans) < n*shape.N*shape.D {
		return fmt.Errorf("analysis: layer %d (%s): capsule pairs of %d×%d×%d, %d used, want %d×%d", l, v.layers[l].Name, shape.B, shape.N, shape.D, n, v.layers[l].N, v.layers[l].D)
	}
	dot, s1, s2 := v.dot[l], v.s1[l], v.s2[l]
	for b := 0; b < n; b++ {
		for i := 0; i < shape.N; i++ {
			var q1, q2 float64
			for d := 0; d < shape.D; d++ {
				at := (b*shape.D+d)*shape.N + i
				a, c := float64(orig[at]), float64(trans[at])
				q1 += a * a
				q2 += c * c
			}
			n1, n2 := math.Sqrt(q1), math.Sqrt(q2)
			dot[i] += n1 * n2
			s1[i] += n1 * n1
			s2[i] += n2 * n2
		}
	}
	return nil
}

// AddImages counts n image pairs added with AddPair.
func (v *Invariance) AddImages(n int) { v.k += n }

// InvarianceLayer is one layer's viewpoint invariance: the mean over its
// capsules of corr, and the capsules left out because their norms are 0 on
// every original or every transformed image (corr undefined: dead
// capsules).
type InvarianceLayer struct {
	Name    string
	Corr    float64 // NaN when every capsule is left out
	Skipped int
	// PerCapsule is each capsule's corr (NaN when left out).
	PerCapsule []float64
}

// Report returns every layer's invariance over the K image pairs added.
func (v *Invariance) Report() (k int, layers []InvarianceLayer) {
	for l, li := range v.layers {
		r := InvarianceLayer{Name: li.Name, PerCapsule: make([]float64, li.N)}
		var sum float64
		used := 0
		for i := range r.PerCapsule {
			den := math.Sqrt(v.s1[l][i]) * math.Sqrt(v.s2[l][i])
			if den == 0 {
				r.PerCapsule[i] = math.NaN()
				r.Skipped++
				continue
			}
			r.PerCapsule[i] = v.dot[l][i] / den
			sum += r.PerCapsule[i]
			used++
		}
		r.Corr = math.NaN()
		if used > 0 {
			r.Corr = sum / float64(used)
		}
		layers = append(layers, r)
	}
	return v.k, layers
}
