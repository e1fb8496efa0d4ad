package eval

import (
	"fmt"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/analysis"
	"github.com/capstan-ml/capstan/train/data"
)

// MaxSamples bounds the parse trees ParseTreeSamples computes at once (a
// report shows a few).
const MaxSamples = 256

// ParseTreeSamples returns the parse trees (analysis.Sample, the paper's
// Fig. 2) of the first n images of images (the model's input layout:
// n·C·H·W values at least) under model p: through one inference Net, its
// Forward and its accessors. labels, when not nil, holds at least n true
// classes; captions, when not nil, names each sample.
func ParseTreeSamples(p *capsnet.Params, images []float32, labels []int, captions []string, n int) ([]analysis.Sample, error) {
	in := p.Config.Input
	sz := in[0] * in[1] * in[2]
	if n <= 0 || n > MaxSamples || len(images) < n*sz || (labels != nil && len(labels) < n) || (captions != nil && len(captions) < n) {
		return nil, fmt.Errorf("samples: %d samples (1..%d) of %d values, %d labels, %d captions for model %s taking %d×%d×%d images",
			n, MaxSamples, len(images), len(labels), len(captions), p.Config.Name, in[0], in[1], in[2])
	}
	net, err := capsnet.NewInferenceNet(p, n)
	if err != nil {
		return nil, fmt.Errorf("samples: %w", err)
	}
	if err := net.Forward(images[:n*sz], nil); err != nil {
		return nil, fmt.Errorf("samples: %w", err)
	}
	out := make([]analysis.Sample, n)
	for b := range out {
		label := -1
		if labels != nil {
			label = labels[b]
		}
		if out[b], err = analysis.NetSample(net, b, images[b*sz:(b+1)*sz], label); err != nil {
			return nil, fmt.Errorf("samples: %w", err)
		}
		if captions != nil {
			out[b].Caption = captions[b]
		}
	}
	return out, nil
}

// View is one transformation of an image for TransformedSamples.
type View struct {
	Family    data.Family
	Magnitude float64
}

// DefaultViews are the two transformations of the paper's Fig. 5 here:
// rotation by 30° and shear by 30°.
var DefaultViews = []View{{data.FamilyRotation, 30}, {data.FamilyShear, 30}}

// TransformedSamples returns the parse trees of one image img (of
// dataset-like shape; placed centered on the model's canvas when smaller)
// as it is and under each of views, transformed with the AffNIST
// transform code (data.Transform): the paper's Fig. 5, the same digit with
// different parse trees.
func TransformedSamples(p *capsnet.Params, img data.Image, label int, views []View) ([]analysis.Sample, error) {
	in := p.Config.Input
	if img.C != in[0] || img.H > in[1] || img.W > in[2] || len(img.Pix) != img.C*img.H*img.W {
		return nil, fmt.Errorf("samples: a %d×%d×%d image (%d values) for model %s taking %d×%d×%d", img.C, img.H, img.W, len(img.Pix), p.Config.Name, in[0], in[1], in[2])
	}
	if len(views)+1 > MaxSamples {
		return nil, fmt.Errorf("samples: %d views, at most %d", len(views), MaxSamples-1)
	}
	sz := in[0] * in[1] * in[2]
	x := make([]float32, (len(views)+1)*sz)
	canvas := func(k int) data.Image { return data.Image{C: in[0], H: in[1], W: in[2], Pix: x[k*sz : (k+1)*sz]} }
	if err := data.PlaceCenter(canvas(0), img); err != nil {
		return nil, fmt.Errorf("samples: %w", err)
	}
	captions := []string{"original"}
	for k, v := range views {
		if err := data.Transform(canvas(k+1), img, v.Family, v.Magnitude); err != nil {
			return nil, fmt.Errorf("samples: %s %g: %w", v.Family, v.Magnitude, err)
		}
		captions = append(captions, viewCaption(v))
	}
	labels := make([]int, len(views)+1)
	for k := range labels {
		labels[k] = label
	}
	return ParseTreeSamples(p, x, labels, captions, len(views)+1)
}

// viewCaption names a view as "rotation 30°", "scale ×1.2" or
// "translate-x 4 px".
func viewCaption(v View) string {
	switch v.Family {
	case data.FamilyRotation, data.FamilyShear:
		return fmt.Sprintf("%s %g°", v.Family, v.Magnitude)
	case data.FamilyScale:
		return fmt.Sprintf("scale ×%g", 1+v.Magnitude)
	}
	return fmt.Sprintf("%s %g px", v.Family, v.Magnitude)
}

// BatcherSamples returns the parse trees of the first n images of epoch 0
// of b (at most its data set's size), with their labels and captions
// naming their index in the data set. The images must have the model's
// input shape (place them on the batcher).
func BatcherSamples(p *capsnet.Params, b *data.Batcher, n int) ([]analysis.Sample, error) {
	if c, h, w := b.Shape(); [3]int{c, h, w} != p.Config.Input {
		in := p.Config.Input
		return nil, fmt.Errorf("samples: the data gives %d×%d×%d images, model %s takes %d×%d×%d", c, h, w, p.Config.Name, in[0], in[1], in[2])
	}
	if n <= 0 || n > MaxSamples {
		return nil, fmt.Errorf("samples: %d samples, want 1..%d", n, MaxSamples)
	}
	batch := b.NewBatch()
	var out []analysis.Sample
	err := firstImages(b, batch, n, "samples", func(k int) error {
		labels, captions := make([]int, k), make([]string, k)
		for i := range k {
			labels[i] = int(batch.Y[i])
			captions[i] = fmt.Sprintf("image %d", batch.Index[i])
		}
		s, err := ParseTreeSamples(p, batch.X, labels, captions, k)
		out = append(out, s...)
		return err
	})
	return out, err
}
