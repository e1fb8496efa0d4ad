package data

import (
	"errors"
	"fmt"
	"image"
	_ "image/png" // DecodePNG reads PNG
	"io"
	"io/fs"
	"os"
)

// MaxPNGSide bounds each side of a PNG image DecodePNG accepts, whatever
// the model takes: the decoded image costs up to 8 bytes a pixel (16-bit
// RGBA), 128 MiB at 4096×4096.
const MaxPNGSide = 4096

// ReadPNG reads the PNG file at path for a model whose input is maxW×maxH
// pixels (see DecodePNG). Every error is one line starting with path.
func ReadPNG(path string, maxW, maxH int) (image.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	return DecodePNG(f, path, maxW, maxH)
}

// DecodePNG reads the image size from the header (image.DecodeConfig),
// refuses an image wider than maxW or taller than maxH (or than
// MaxPNGSide) before its pixels are allocated, then rewinds r and decodes
// it. name (the file) starts every error message, one line each.
func DecodePNG(r io.ReadSeeker, name string, maxW, maxH int) (image.Image, error) {
	maxW, maxH = min(maxW, MaxPNGSide), min(maxH, MaxPNGSide)
	cfg, format, err := image.DecodeConfig(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > maxW || cfg.Height > maxH {
		return nil, fmt.Errorf("%s: %d×%d %s image; the model takes at most %d×%d (smaller grey images are centred)", name, cfg.Width, cfg.Height, format, maxW, maxH)
	}
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	im, _, err := image.Decode(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if b := im.Bounds(); b.Dx() != cfg.Width || b.Dy() != cfg.Height {
		return nil, fmt.Errorf("%s: decoded %d×%d, the header said %d×%d", name, b.Dx(), b.Dy(), cfg.Width, cfg.Height)
	}
	return im, nil
}

// GreyInput returns image im as the input of a model taking c×h×w images:
// grey (the mean of the red, green and blue values, in [0,1]), centred on
// the h×w canvas. The model must take one channel and the image must fit;
// name (the file) starts the error.
func GreyInput(im image.Image, name string, c, h, w int) ([]float32, error) {
	r := im.Bounds()
	if r.Dx() > w || r.Dy() > h || c != 1 {
		return nil, fmt.Errorf("%s: %d×%d image; the model takes %d×%d×%d (smaller grey images are centred)", name, r.Dx(), r.Dy(), c, h, w)
	}
	x := make([]float32, c*h*w)
	oy, ox := (h-r.Dy())/2, (w-r.Dx())/2
	for y := 0; y < r.Dy(); y++ {
		for xx := 0; xx < r.Dx(); xx++ {
			cr, cg, cb, _ := im.At(r.Min.X+xx, r.Min.Y+y).RGBA()
			x[(oy+y)*w+ox+xx] = float32(cr+cg+cb) / (3 * 65535)
		}
	}
	return x, nil
}

// ReadPNGInput reads the PNG file at path as the input of a model taking
// c×h×w images (ReadPNG, then GreyInput).
func ReadPNGInput(path string, c, h, w int) ([]float32, error) {
	im, err := ReadPNG(path, w, h)
	if err != nil {
		return nil, err
	}
	return GreyInput(im, path, c, h, w)
}
