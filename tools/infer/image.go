package main

import (
	"fmt"
	"image"
	_ "image/png" // -image reads PNG
	"io"
	"os"
)

// maxImageSide bounds each side of an -image, whatever the model takes:
// the decoded image costs up to 8 bytes a pixel (16-bit RGBA), 128 MiB at
// 4096×4096.
const maxImageSide = 4096

// readImage decodes the image file at path for a model whose input is
// maxW×maxH pixels: larger images are refused from the size in their
// header, before the pixels are allocated. Errors name the file.
func readImage(path string, maxW, maxH int) (image.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("-image: %w", err)
	}
	defer f.Close()
	return decodeImage(f, "-image "+path, maxW, maxH)
}

// decodeImage reads the image size with image.DecodeConfig, refuses an
// image wider than maxW or taller than maxH (or than maxImageSide), then
// rewinds r and decodes it. name starts every error message.
func decodeImage(r io.ReadSeeker, name string, maxW, maxH int) (image.Image, error) {
	maxW, maxH = min(maxW, maxImageSide), min(maxH, maxImageSide)
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
