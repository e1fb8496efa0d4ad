package data

import (
	"bytes"
	"compress/gzip"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// randomIDX returns n random images of rows×cols and n labels in 0..9.
func randomIDX(seed uint64, n, rows, cols int) (*IDXImages, []uint8) {
	rng := rand.New(rand.NewPCG(seed, 1))
	img := &IDXImages{N: n, Rows: rows, Cols: cols, Pix: make([]uint8, n*rows*cols)}
	for i := range img.Pix {
		img.Pix[i] = uint8(rng.IntN(256))
	}
	labels := make([]uint8, n)
	for i := range labels {
		labels[i] = uint8(rng.IntN(10))
	}
	return img, labels
}

func idxBytes(t *testing.T, img *IDXImages, labels []uint8) (imgRaw, lblRaw []byte) {
	t.Helper()
	var a, b bytes.Buffer
	if img != nil {
		if err := WriteIDXImages(&a, img); err != nil {
			t.Fatal(err)
		}
	}
	if labels != nil {
		if err := WriteIDXLabels(&b, labels); err != nil {
			t.Fatal(err)
		}
	}
	return a.Bytes(), b.Bytes()
}

func gzipBytes(t *testing.T, raw []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func writeFile(t *testing.T, path string, data []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestIDXRoundTrip(t *testing.T) {
	dir := t.TempDir()
	img, labels := randomIDX(1, 7, 5, 3)
	imgRaw, lblRaw := idxBytes(t, img, labels)
	if len(imgRaw) != 16+7*5*3 || len(lblRaw) != 8+7 {
		t.Fatalf("sizes %d, %d: want %d, %d", len(imgRaw), len(lblRaw), 16+7*5*3, 8+7)
	}
	// Content decides gzip, not the name: the .gz-named file below is raw
	// and the plain-named one gzipped.
	cases := []struct {
		name     string
		img, lbl []byte
	}{
		{"raw", imgRaw, lblRaw},
		{"gz.gz", gzipBytes(t, imgRaw), gzipBytes(t, lblRaw)},
		{"gz-named-raw.gz", imgRaw, lblRaw},
		{"raw-named-gz", gzipBytes(t, imgRaw), gzipBytes(t, lblRaw)},
	}
	for _, c := range cases {
		ip := writeFile(t, filepath.Join(dir, "img-"+c.name), c.img)
		lp := writeFile(t, filepath.Join(dir, "lbl-"+c.name), c.lbl)
		got, err := ReadIDXImagesFile(ip)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got.N != img.N || got.Rows != img.Rows || got.Cols != img.Cols || !bytes.Equal(got.Pix, img.Pix) {
			t.Errorf("%s: images differ after the round trip: got %d×%d×%d", c.name, got.N, got.Rows, got.Cols)
		}
		gl, err := ReadIDXLabelsFile(lp)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !bytes.Equal(gl, labels) {
			t.Errorf("%s: labels differ: %v, want %v", c.name, gl, labels)
		}
		// the same through an fs.FS
		fsys := os.DirFS(dir)
		got2, err := ReadIDXImagesFS(fsys, "img-"+c.name)
		if err != nil || !bytes.Equal(got2.Pix, img.Pix) {
			t.Errorf("%s: via fs.FS: err %v", c.name, err)
		}
		gl2, err := ReadIDXLabelsFS(fsys, "lbl-"+c.name)
		if err != nil || !bytes.Equal(gl2, labels) {
			t.Errorf("%s: labels via fs.FS: err %v", c.name, err)
		}
	}
	// Zero images is a valid file.
	empty, _ := idxBytes(t, &IDXImages{Rows: 28, Cols: 28}, nil)
	got, err := ReadIDXImages(bytes.NewReader(empty), "empty")
	if err != nil || got.N != 0 || got.Rows != 28 {
		t.Errorf("empty file: %+v, %v", got, err)
	}
}

// wantErr fails unless err is non-nil and contains every fragment.
func wantErr(t *testing.T, err error, fragments ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one containing %q", fragments)
	}
	for _, f := range fragments {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not contain %q", err, f)
		}
	}
}

func TestIDXErrors(t *testing.T) {
	dir := t.TempDir()
	img, labels := randomIDX(2, 6, 28, 28)
	imgRaw, lblRaw := idxBytes(t, img, labels)

	// truncated pixels, raw and gzipped
	short := imgRaw[:16+1234]
	p := writeFile(t, filepath.Join(dir, "short-images"), short)
	_, err := ReadIDXImagesFile(p)
	wantErr(t, err, p, "truncated", "header says 6 images of 28×28, only 1234 bytes of pixels")
	p = writeFile(t, filepath.Join(dir, "short-images.gz"), gzipBytes(t, short))
	_, err = ReadIDXImagesFile(p)
	wantErr(t, err, p, "truncated", "only 1234 bytes")

	// a gzip stream cut in the middle
	gz := gzipBytes(t, imgRaw)
	p = writeFile(t, filepath.Join(dir, "cut.gz"), gz[:len(gz)/2])
	_, err = ReadIDXImagesFile(p)
	wantErr(t, err, p, "truncated")

	// truncated header, empty file
	p = writeFile(t, filepath.Join(dir, "header"), imgRaw[:10])
	_, err = ReadIDXImagesFile(p)
	wantErr(t, err, p, "truncated")
	p = writeFile(t, filepath.Join(dir, "empty"), nil)
	_, err = ReadIDXLabelsFile(p)
	wantErr(t, err, p, "truncated")

	// truncated labels
	p = writeFile(t, filepath.Join(dir, "short-labels"), lblRaw[:8+2])
	_, err = ReadIDXLabelsFile(p)
	wantErr(t, err, p, "truncated", "header says 6 labels, only 2 bytes")

	// bad magic: labels read as images and the other way round, and junk
	p = writeFile(t, filepath.Join(dir, "labels-as-images"), lblRaw)
	_, err = ReadIDXImagesFile(p)
	wantErr(t, err, p, "bad magic 2049", "want 2051", "label file")
	p = writeFile(t, filepath.Join(dir, "images-as-labels.gz"), gzipBytes(t, imgRaw))
	_, err = ReadIDXLabelsFile(p)
	wantErr(t, err, p, "bad magic 2051", "want 2049")
	p = writeFile(t, filepath.Join(dir, "junk"), []byte("<html>not found</html>"))
	_, err = ReadIDXImagesFile(p)
	wantErr(t, err, p, "bad magic")

	// trailing bytes mean the header is wrong
	p = writeFile(t, filepath.Join(dir, "long"), append(append([]byte{}, imgRaw...), 1, 2, 3))
	_, err = ReadIDXImagesFile(p)
	wantErr(t, err, p, "3 bytes after")

	// an absurd header on a short file fails without allocating its size
	huge := append([]byte{}, imgRaw[:16]...)
	huge[4] = 0x01 // 16M images of 28×28 > 1 GiB
	_, err = ReadIDXImages(bytes.NewReader(huge), "huge")
	wantErr(t, err, "huge", "more than")

	// missing file
	_, err = ReadIDXImagesFile(filepath.Join(dir, "nope"))
	wantErr(t, err, "nope")
}
