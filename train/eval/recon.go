package eval

import (
	"bytes"
	"cmp"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"slices"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

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

// FigureLabelWidth is the width, in image pixels, of the label column on
// the left of the perturbation grid: each row's dimension index and effect.
const FigureLabelWidth = 24

// DimEffect is the effect of one dimension of a capsule on the decoder's
// reconstruction (see DimensionEffects).
type DimEffect struct {
	// Dim is the dimension's index in the capsule (0 to D−1).
	Dim int
	// Effect is the mean, over the non-zero shifts, of the root mean
	// square pixel change (pixel values in [0, 1]) between the
	// reconstruction of the capsule with dimension Dim shifted and the
	// unshifted one.
	Effect float64
}

// DimensionEffects measures, for every dimension k of caps (the masked
// output capsule of sample b of the last Forward of net, D values), how
// much the reconstruction changes when caps[k] is shifted by each of offs:
// out[k].Effect is the mean over the non-zero offsets of
// sqrt(mean over the pixels of (r_k,off − r)²), r the reconstruction of
// caps unshifted and r_k,off that of caps with off added to dimension k.
// It then sorts out by effect, largest first (ties: the lower dimension
// first), so out[0].Dim is the dimension that changes the reconstruction
// most. base (Pixels values) receives r. caps is shifted in place and
// restored exactly (the same float32 values) before it returns. It runs
// the decoder D·len(offs)+1 times through net.Reconstruct and does not
// allocate.
func DimensionEffects(net *capsnet.Net, b int, caps, offs, base []float32, out []DimEffect) error {
	if len(out) != len(caps) {
		return fmt.Errorf("dimension effects: %d results for a capsule of %d dimensions", len(out), len(caps))
	}
	r, err := net.Reconstruct(b, caps)
	if err != nil {
		return fmt.Errorf("dimension effects: %w", err)
	}
	if len(base) != len(r) {
		return fmt.Errorf("dimension effects: a base of %d values for reconstructions of %d", len(base), len(r))
	}
	copy(base, r)
	shifts := 0
	for _, off := range offs {
		if off != 0 {
			shifts++
		}
	}
	for k := range caps {
		v := caps[k]
		var sum float64
		for _, off := range offs {
			if off == 0 {
				continue
			}
			caps[k] = v + off
			r, err := net.Reconstruct(b, caps)
			caps[k] = v
			if err != nil {
				return fmt.Errorf("dimension effects: %w", err)
			}
			var ss float64
			for i, q := range r {
				d := float64(q) - float64(base[i])
				ss += d * d
			}
			sum += math.Sqrt(ss / float64(len(r)))
		}
		out[k] = DimEffect{Dim: k}
		if shifts > 0 {
			out[k].Effect = sum / float64(shifts)
		}
	}
	slices.SortStableFunc(out, func(a, b DimEffect) int {
		if c := cmp.Compare(b.Effect, a.Effect); c != 0 {
			return c
		}
		return cmp.Compare(a.Dim, b.Dim)
	})
	return nil
}

// Perturbation is a capsule perturbation grid (PerturbationGrid).
type Perturbation struct {
	// PNG is the figure.
	PNG []byte
	// Class is the predicted class, whose output capsule is shifted.
	Class int
	// Effects holds every dimension of the capsule, largest effect first
	// (DimensionEffects); the figure's rows are the first Rows of them,
	// in order.
	Effects []DimEffect
	Rows    int
}

// PerturbationGrid runs one image x (the model's input shape) through an
// inference Net of p and draws the capsule perturbation figure of Sabour
// et al. with the dimensions ranked by their effect: the dimensions of the
// predicted class's output capsule are sorted by DimensionEffects (on this
// image, the shifts of PerturbOffsets), largest first, and the first top
// of them (all when top ≤ 0 or top ≥ D) are drawn one a row: on the left
// a label, the dimension's index ("d3") above its effect (4 decimals),
// then the reconstructions of the capsule with that dimension shifted by
// each of PerturbOffsets (the middle column is the unperturbed
// reconstruction).
func PerturbationGrid(p *capsnet.Params, x []float32, top int) (Perturbation, error) {
	in := p.Config.Input
	if err := checkFigureInput(in); err != nil {
		return Perturbation{}, err
	}
	sz := in[0] * in[1] * in[2]
	if len(x) != sz {
		return Perturbation{}, fmt.Errorf("perturbations: %d values for one image of %d×%d×%d", len(x), in[0], in[1], in[2])
	}
	net, err := capsnet.NewInferenceNet(p, 1)
	if err != nil {
		return Perturbation{}, fmt.Errorf("perturbations: %w", err)
	}
	if err := net.Forward(x, nil); err != nil {
		return Perturbation{}, fmt.Errorf("perturbations: %w", err)
	}
	v, sh, err := net.Capsules(len(net.Layers()) - 1)
	if err != nil {
		return Perturbation{}, fmt.Errorf("perturbations: %w", err)
	}
	g := Perturbation{Class: net.Pred()[0], Effects: make([]DimEffect, sh.D)}
	caps := sh.Capsule(v, 0, g.Class, make([]float32, sh.D))
	offs := PerturbOffsets()
	if err := DimensionEffects(net, 0, caps, offs, make([]float32, sz), g.Effects); err != nil {
		return Perturbation{}, fmt.Errorf("perturbations: %w", err)
	}
	g.Rows = sh.D
	if top > 0 && top < sh.D {
		g.Rows = top
	}
	h, w := in[1], in[2]
	left := FigureMargin + FigureLabelWidth
	f := newFigure(in[0], left+len(offs)*(w+FigureGap)-FigureGap+FigureMargin, FigureMargin+g.Rows*(h+FigureGap)-FigureGap+FigureMargin)
	for row, e := range g.Effects[:g.Rows] {
		y0 := FigureMargin + row*(h+FigureGap)
		f.label(FigureMargin, y0, h, fmt.Sprintf("d%d", e.Dim), fmt.Sprintf("%.4f", e.Effect))
		for j, off := range offs {
			v := caps[e.Dim]
			caps[e.Dim] = v + off
			r, err := net.Reconstruct(0, caps)
			caps[e.Dim] = v
			if err != nil {
				return Perturbation{}, fmt.Errorf("perturbations: %w", err)
			}
			f.put(left+j*(w+FigureGap), y0, h, w, r)
		}
	}
	if g.PNG, err = f.png(); err != nil {
		return Perturbation{}, err
	}
	return g, nil
}

// PerturbationFigure is PerturbationGrid of x with every dimension, the
// figure and the predicted class.
func PerturbationFigure(p *capsnet.Params, x []float32) ([]byte, int, error) {
	g, err := PerturbationGrid(p, x, 0)
	if err != nil {
		return nil, 0, err
	}
	return g.PNG, g.Class, nil
}

// PerturbationGridAt is PerturbationGrid of image i of ds, fitted to p's
// input as data.PlacementFor says (centred when smaller, rescaled when
// larger); it also returns the image's label.
func PerturbationGridAt(p *capsnet.Params, ds *data.Dataset, i, top int) (Perturbation, int, error) {
	if i < 0 || i >= ds.N {
		return Perturbation{}, 0, fmt.Errorf("perturbations: image %d of a data set of %d", i, ds.N)
	}
	one, err := ds.Slice(i, i+1)
	if err != nil {
		return Perturbation{}, 0, fmt.Errorf("perturbations: %w", err)
	}
	in := p.Config.Input
	b, err := data.NewBatcher(one, data.BatchConfig{Size: 1, Placement: data.PlacementFor(ds.H, ds.W, in[1], in[2]), CanvasH: in[1], CanvasW: in[2]})
	if err != nil {
		return Perturbation{}, 0, fmt.Errorf("perturbations: %w", err)
	}
	x, labels, err := Images(b, 1)
	if err != nil {
		return Perturbation{}, 0, fmt.Errorf("perturbations: %w", err)
	}
	g, err := PerturbationGrid(p, x, top)
	if err != nil {
		return Perturbation{}, 0, err
	}
	return g, labels[0], nil
}

// PerturbationFigureAt is PerturbationGridAt with every dimension: the
// figure, the image's label and the predicted class.
func PerturbationFigureAt(p *capsnet.Params, ds *data.Dataset, i int) (fig []byte, label, class int, err error) {
	g, label, err := PerturbationGridAt(p, ds, i, 0)
	if err != nil {
		return nil, 0, 0, err
	}
	return g.PNG, label, g.Class, nil
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

// label writes up to two lines of text (black, basicfont's 7×13 face,
// unscaled) at the left of the row of image height h whose top-left image
// pixel is (x0, y0), centred vertically in it.
func (f *figure) label(x0, y0, h int, lines ...string) {
	var dst draw.Image = f.gray
	if f.c != 1 {
		dst = f.rgb
	}
	face := basicfont.Face7x13
	lineH := face.Metrics().Height.Ceil()
	top := y0*FigureScale + max(0, (h*FigureScale-len(lines)*lineH)/2)
	d := font.Drawer{Dst: dst, Src: image.NewUniform(color.Black), Face: face}
	for k, s := range lines {
		d.Dot = fixed.P(x0*FigureScale+2, top+k*lineH+face.Metrics().Ascent.Ceil())
		d.DrawString(s)
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
