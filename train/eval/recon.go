package eval

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/atomicfile"
	"github.com/capstan-ml/capstan/train/data"
)

// The figures' layout, in image pixels: every pixel is drawn FigureScale ×
// FigureScale (nearest neighbour), on a mid-grey background so that black
// image borders show.
const (
	// FigureScale is how many figure pixels a side of one image pixel takes.
	FigureScale = 2
	// FigureGap separates an input from its reconstruction and the cells
	// of the perturbation grid; FigureMargin separates the input /
	// reconstruction pairs and surrounds the figure.
	FigureGap, FigureMargin = 1, 3
	// MaxFigureImages bounds the images of one reconstruction figure (the
	// inference Net is compiled for them all at once).
	MaxFigureImages = 256
)

// figureBackground is the grey of the gaps and margins.
const figureBackground = 128

// PerturbOffsets returns the shifts Perturbations applies to each capsule
// dimension: −0.25 to 0.25 in steps of 0.05 (Sabour et al., figure 4),
// 0 in the middle.
func PerturbOffsets() []float32 {
	out := make([]float32, 11)
	for k := range out {
		out[k] = float32(float64(k-5) * 0.05)
	}
	return out
}

// Images copies the first n images of epoch 0 of b (fewer when the data
// set is smaller) and their labels: the input of the figures.
func Images(b *data.Batcher, n int) ([]float32, []int, error) {
	if n <= 0 || n > MaxFigureImages {
		return nil, nil, fmt.Errorf("images: %d images, want 1 to %d", n, MaxFigureImages)
	}
	var x []float32
	var labels []int
	batch := b.NewBatch()
	err := firstImages(b, batch, n, "images", func(k int) error {
		x = append(x, batch.X[:k*batch.C*batch.H*batch.W]...)
		for _, y := range batch.Labels()[:k] {
			labels = append(labels, int(y))
		}
		return nil
	})
	return x, labels, err
}

// ReconstructionFigureOf is ReconstructionFigure of the first n images of
// epoch 0 of b (fewer when the data set is smaller), cols pairs a row.
func ReconstructionFigureOf(p *capsnet.Params, b *data.Batcher, n, cols int) ([]byte, error) {
	x, labels, err := Images(b, n)
	if err != nil {
		return nil, err
	}
	return ReconstructionFigure(p, x, len(labels), cols)
}

// WriteFigure writes a figure's PNG bytes to path atomically (a temporary
// file, synced, then renamed).
func WriteFigure(path string, fig []byte) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		_, err := w.Write(fig)
		return err
	})
}

// ReconstructionFigure runs the n images x (NCHW, the model's input shape:
// n·C·H·W values, pixel values in [0, 1]) forward through an inference
// Net of p, the decoder masked by the predicted class, and returns a PNG of
// each input beside its reconstruction: cols pairs a row, in order, drawn
// as described at FigureScale (grey for one channel, RGB for three).
func ReconstructionFigure(p *capsnet.Params, x []float32, n, cols int) ([]byte, error) {
	in := p.Config.Input
	if err := checkFigureInput(in); err != nil {
		return nil, err
	}
	if n <= 0 || n > MaxFigureImages || cols <= 0 {
		return nil, fmt.Errorf("reconstructions: %d images in %d columns, want 1 to %d images and a positive column count", n, cols, MaxFigureImages)
	}
	sz := in[0] * in[1] * in[2]
	if len(x) != n*sz {
		return nil, fmt.Errorf("reconstructions: %d values for %d images of %d×%d×%d", len(x), n, in[0], in[1], in[2])
	}
	net, err := capsnet.NewInferenceNet(p, n)
	if err != nil {
		return nil, fmt.Errorf("reconstructions: %w", err)
	}
	if err := net.Forward(x, nil); err != nil {
		return nil, fmt.Errorf("reconstructions: %w", err)
	}
	cols = min(cols, n)
	rows := (n + cols - 1) / cols
	h, w := in[1], in[2]
	pairW := 2*w + FigureGap
	f := newFigure(in[0], FigureMargin+cols*(pairW+FigureMargin), FigureMargin+rows*(h+FigureMargin))
	recon := net.Recon()
	for i := 0; i < n; i++ {
		x0 := FigureMargin + (i%cols)*(pairW+FigureMargin)
		y0 := FigureMargin + (i/cols)*(h+FigureMargin)
		f.put(x0, y0, h, w, x[i*sz:(i+1)*sz])
		f.put(x0+w+FigureGap, y0, h, w, recon[i*sz:(i+1)*sz])
	}
	return f.png()
}

// PerturbationFigure runs one image x (the model's input shape) through
// an inference Net of p and returns a PNG of the capsule perturbation
// figure of Sabour et al.: row k holds the decoder's reconstructions of
// the predicted class's output capsule with dimension k shifted by each of
// PerturbOffsets (the middle column is the unperturbed reconstruction),
// one row per dimension; and the predicted class.
func PerturbationFigure(p *capsnet.Params, x []float32) ([]byte, int, error) {
	in := p.Config.Input
	if err := checkFigureInput(in); err != nil {
		return nil, 0, err
	}
	sz := in[0] * in[1] * in[2]
	if len(x) != sz {
		return nil, 0, fmt.Errorf("perturbations: %d values for one image of %d×%d×%d", len(x), in[0], in[1], in[2])
	}
	net, err := capsnet.NewInferenceNet(p, 1)
	if err != nil {
		return nil, 0, fmt.Errorf("perturbations: %w", err)
	}
	if err := net.Forward(x, nil); err != nil {
		return nil, 0, fmt.Errorf("perturbations: %w", err)
	}
	top := len(net.Layers()) - 1
	v, sh, err := net.Capsules(top)
	if err != nil {
		return nil, 0, fmt.Errorf("perturbations: %w", err)
	}
	class := net.Pred()[0]
	orig := sh.Capsule(v, 0, class, make([]float32, sh.D))
	caps := make([]float32, sh.D)
	offs := PerturbOffsets()
	h, w := in[1], in[2]
	f := newFigure(in[0], FigureMargin+len(offs)*(w+FigureGap)-FigureGap+FigureMargin, FigureMargin+sh.D*(h+FigureGap)-FigureGap+FigureMargin)
	for k := 0; k < sh.D; k++ {
		for j, off := range offs {
			copy(caps, orig)
			caps[k] += off
			r, err := net.Reconstruct(0, caps)
			if err != nil {
				return nil, 0, fmt.Errorf("perturbations: %w", err)
			}
			f.put(FigureMargin+j*(w+FigureGap), FigureMargin+k*(h+FigureGap), h, w, r)
		}
	}
	b, err := f.png()
	return b, class, err
}

// PerturbationFigureAt is PerturbationFigure of image i of ds, fitted to
// p's input as data.PlacementFor says (centred when smaller, rescaled when
// larger); it also returns the image's label.
func PerturbationFigureAt(p *capsnet.Params, ds *data.Dataset, i int) (fig []byte, label, class int, err error) {
	if i < 0 || i >= ds.N {
		return nil, 0, 0, fmt.Errorf("perturbations: image %d of a data set of %d", i, ds.N)
	}
	one, err := ds.Slice(i, i+1)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("perturbations: %w", err)
	}
	in := p.Config.Input
	b, err := data.NewBatcher(one, data.BatchConfig{Size: 1, Placement: data.PlacementFor(ds.H, ds.W, in[1], in[2]), CanvasH: in[1], CanvasW: in[2]})
	if err != nil {
		return nil, 0, 0, fmt.Errorf("perturbations: %w", err)
	}
	x, labels, err := Images(b, 1)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("perturbations: %w", err)
	}
	fig, class, err = PerturbationFigure(p, x)
	return fig, labels[0], class, err
}

func checkFigureInput(in [3]int) error {
	if in[0] != 1 && in[0] != 3 {
		return fmt.Errorf("figures: images of %d channels; want 1 (grey) or 3 (RGB)", in[0])
	}
	return nil
}

// figure is an image of w×h image pixels, each drawn FigureScale ×
// FigureScale, grey (one channel) or RGB (three).
type figure struct {
	c    int
	gray *image.Gray
	rgb  *image.NRGBA
}

func newFigure(c, w, h int) *figure {
	r := image.Rect(0, 0, w*FigureScale, h*FigureScale)
	f := &figure{c: c}
	if c == 1 {
		f.gray = image.NewGray(r)
		for i := range f.gray.Pix {
			f.gray.Pix[i] = figureBackground
		}
	} else {
		f.rgb = image.NewNRGBA(r)
		for i := range f.rgb.Pix {
			f.rgb.Pix[i] = figureBackground
			if i%4 == 3 {
				f.rgb.Pix[i] = 255
			}
		}
	}
	return f
}

// put draws the CHW image pix (h×w, values in [0, 1]) with its top-left
// image pixel at (x0, y0).
func (f *figure) put(x0, y0, h, w int, pix []float32) {
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			for dy := 0; dy < FigureScale; dy++ {
				for dx := 0; dx < FigureScale; dx++ {
					px, py := (x0+x)*FigureScale+dx, (y0+y)*FigureScale+dy
					if f.c == 1 {
						f.gray.SetGray(px, py, color.Gray{Y: byteOf(pix[y*w+x])})
						continue
					}
					f.rgb.SetNRGBA(px, py, color.NRGBA{R: byteOf(pix[y*w+x]), G: byteOf(pix[(h+y)*w+x]), B: byteOf(pix[(2*h+y)*w+x]), A: 255})
				}
			}
		}
	}
}

func (f *figure) png() ([]byte, error) {
	var buf bytes.Buffer
	var img image.Image = f.gray
	if f.c != 1 {
		img = f.rgb
	}
	if err := png.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("figure: %w", err)
	}
	return buf.Bytes(), nil
}

// byteOf maps a value in [0, 1] to 0..255 (rounded; clamped; NaN is 0).
func byteOf(v float32) uint8 {
	if !(v > 0) {
		return 0
	}
	return uint8(math.Round(float64(min(v, 1)) * 255))
}
