package data

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pngHeader returns a PNG file that holds only a valid signature, IHDR
// chunk (w×h, 8-bit, colour type ct) and IEND: enough for DecodeConfig,
// whatever size it claims.
func pngHeader(w, h uint32, ct byte) []byte { return pngFile(w, h, ct, false) }

// pngFile is pngHeader with, if idat, an IDAT chunk of a few pixel bytes:
// png.Decode then allocates the whole w×h image before it finds them
// missing.
func pngFile(w, h uint32, ct byte, idat bool) []byte {
	chunk := func(out []byte, typ string, data []byte) []byte {
		out = binary.BigEndian.AppendUint32(out, uint32(len(data)))
		td := append([]byte(typ), data...)
		out = append(out, td...)
		return binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(td))
	}
	ihdr := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, w), h)
	ihdr = append(ihdr, 8, ct, 0, 0, 0)
	out := []byte("\x89PNG\r\n\x1a\n")
	out = chunk(out, "IHDR", ihdr)
	if idat {
		var z bytes.Buffer
		zw := zlib.NewWriter(&z)
		zw.Write(make([]byte, 100))
		zw.Close()
		out = chunk(out, "IDAT", z.Bytes())
	}
	return chunk(out, "IEND", nil)
}

func encodePNG(t testing.TB, im image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, im); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// digitPNG is a 20×20 grey PNG with a horizontal stroke.
func digitPNG(t testing.TB) []byte {
	im := image.NewGray(image.Rect(0, 0, 20, 20))
	for i := 5; i < 15; i++ {
		im.SetGray(i, 10, color.Gray{Y: 255})
	}
	return encodePNG(t, im)
}

// TestDecodePNGLimits: an image larger than the model input is refused
// from its header, before png.Decode allocates its pixels, with an error
// naming the file.
func TestDecodePNGLimits(t *testing.T) {
	im, err := DecodePNG(bytes.NewReader(digitPNG(t)), "digit.png", 28, 28)
	if err != nil || im.Bounds().Dx() != 20 || im.Bounds().Dy() != 20 {
		t.Fatalf("20×20 PNG for a 28×28 model: %v", err)
	}
	// On a 32-bit GOARCH image/png's DecodeConfig refuses a header whose
	// pixel bytes overflow an int itself, before DecodePNG compares the
	// size with the model's.
	overflow32 := func(want string) string {
		if strconv.IntSize == 32 {
			return "png: unsupported feature: dimension overflow"
		}
		return want
	}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"huge.png", pngHeader(100000, 100000, 0), "huge.png: " + overflow32("100000×100000 png image; the model takes at most 28×28")},
		{"idat.png", pngFile(5000, 5000, 0, true), "idat.png: 5000×5000 png image; the model takes at most 28×28"},
		{"rgba.png", pngHeader(65536, 65536, 6), "rgba.png: " + overflow32("65536×65536 png image")},
		{"overflow.png", pngHeader(1<<31-1, 1<<31-1, 6), "overflow.png: png: unsupported feature: dimension overflow"},
		{"wide.png", encodePNG(t, image.NewGray(image.Rect(0, 0, 29, 10))), "wide.png: 29×10 png image; the model takes at most 28×28"},
		{"cut.png", digitPNG(t)[:60], "cut.png: png: invalid format: not enough pixel data"},
		{"text.png", []byte("not a png"), "text.png: image: unknown format"},
	} {
		var err error
		alloc := allocated(func() { _, err = DecodePNG(bytes.NewReader(c.data), c.name, 28, 28) })
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line containing %q", c.name, err, c.want)
		}
		if alloc > 1<<20 {
			t.Errorf("%s: allocated %d bytes", c.name, alloc)
		}
	}

	// a file: errors name it
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.png")
	if err := os.WriteFile(huge, pngHeader(100000, 100000, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPNG(huge, 28, 28); err == nil || err.Error() != huge+": "+overflow32("100000×100000 png image; the model takes at most 28×28 (smaller grey images are centred)") {
		t.Errorf("ReadPNG of a 100000×100000 PNG: %v", err)
	}
	_, err = ReadPNG(filepath.Join(dir, "absent.png"), 28, 28)
	if err == nil || err.Error() != filepath.Join(dir, "absent.png")+": no such file or directory" || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadPNG of a missing file: %v", err)
	}
}

// TestReadPNGInput: a 20×20 grey PNG is centred on a 28×28 canvas; a colour
// model is refused, naming the file.
func TestReadPNGInput(t *testing.T) {
	p := filepath.Join(t.TempDir(), "digit.png")
	if err := os.WriteFile(p, digitPNG(t), 0o644); err != nil {
		t.Fatal(err)
	}
	x, err := ReadPNGInput(p, 1, 28, 28)
	if err != nil || len(x) != 28*28 {
		t.Fatalf("ReadPNGInput: %d values, %v", len(x), err)
	}
	var sum float32
	for _, v := range x {
		sum += v
	}
	// the stroke: pixels 5..14 of row 10 of the 20×20 image, offset by 4
	if sum != 10 || x[14*28+9] != 1 || x[14*28+18] != 1 || x[14*28+19] != 0 {
		t.Errorf("stroke not centred: sum %v", sum)
	}
	if _, err := ReadPNGInput(p, 3, 32, 32); err == nil || !strings.HasPrefix(err.Error(), p+": 20×20 image; the model takes 3×32×32") {
		t.Errorf("colour model: %v", err)
	}
}

// FuzzDecodePNG decodes any input as the image of a 64×64 model: no
// panic, an error is one line naming the file, a success fits the model,
// and the memory stays within 64 MiB (decoder state and the image: at most
// 64×64 pixels of 8 bytes) plus 64 bytes a byte of input (the decoder
// reads chunks of the input).
func FuzzDecodePNG(f *testing.F) {
	f.Add(digitPNG(f))
	rgba := image.NewRGBA(image.Rect(0, 0, 8, 8))
	for i := range rgba.Pix {
		rgba.Pix[i] = uint8(i * 7)
	}
	f.Add(encodePNG(f, rgba))
	pal := image.NewPaletted(image.Rect(0, 0, 5, 5), color.Palette{color.Black, color.White, color.Gray{Y: 100}})
	for i := range pal.Pix {
		pal.Pix[i] = uint8(i % 3)
	}
	f.Add(encodePNG(f, pal))
	g16 := image.NewGray16(image.Rect(0, 0, 3, 3))
	g16.SetGray16(1, 1, color.Gray16{Y: 40000})
	f.Add(encodePNG(f, g16))
	f.Add(encodePNG(f, image.NewNRGBA64(image.Rect(0, 0, 2, 7))))
	f.Add(encodePNG(f, image.NewGray(image.Rect(0, 0, 65, 1)))) // too wide
	f.Add(pngHeader(100000, 100000, 0))
	f.Add(pngHeader(16, 16, 2)) // no pixel data
	f.Add(pngFile(16, 16, 0, true))
	f.Add(digitPNG(f)[:50])
	f.Add([]byte("not a png"))
	f.Fuzz(func(t *testing.T, in []byte) {
		const side = 64
		bound := uint64(64<<20 + 64*len(in))
		var im image.Image
		var err error
		alloc := allocated(func() { im, err = DecodePNG(bytes.NewReader(in), "fuzz.png", side, side) })
		if alloc > bound {
			t.Fatalf("allocated %d bytes for %d bytes of input, bound %d", alloc, len(in), bound)
		}
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "fuzz.png: ") || strings.Contains(msg, "\n") {
				t.Fatalf("error %q: want one line naming fuzz.png", msg)
			}
			return
		}
		if b := im.Bounds(); b.Dx() < 1 || b.Dy() < 1 || b.Dx() > side || b.Dy() > side {
			t.Fatalf("accepted a %v image for a %d×%d model", b, side, side)
		}
	})
}
