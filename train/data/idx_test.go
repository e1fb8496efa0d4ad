package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"math"
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
	wantErr(t, err, p, "truncated", "declares 6 images of 28×28 but holds 1 (a file of 1250 bytes, want 4720)")
	p = writeFile(t, filepath.Join(dir, "short-images.gz"), gzipBytes(t, short))
	_, err = ReadIDXImagesFile(p)
	wantErr(t, err, p, "truncated", "declares 6 images of 28×28 but holds 1 (1234 of 4704 bytes of pixels)")

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
	wantErr(t, err, p, "truncated", "declares 6 labels but holds 2")

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
	wantErr(t, err, p, "3 bytes after the 6 images of 28×28 the header declares")

	// an absurd header on a short file fails without allocating its size
	huge := append([]byte{}, imgRaw[:16]...)
	huge[4] = 0x01 // 16M images of 28×28
	_, err = ReadIDXImages(bytes.NewReader(huge), "huge")
	wantErr(t, err, "huge", "declares 16777222 images, more than the limit of 10000000 images (data.MaxImages)")

	// missing file
	_, err = ReadIDXImagesFile(filepath.Join(dir, "nope"))
	wantErr(t, err, "nope")
}

// idxHeader returns an IDX image header (n images of rows×cols) or, with
// rows < 0, an IDX label header of n labels.
func idxHeader(n, rows, cols uint32, labels bool) []byte {
	if labels {
		return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, IDXLabelsMagic), n)
	}
	h := binary.BigEndian.AppendUint32(nil, IDXImagesMagic)
	for _, v := range []uint32{n, rows, cols} {
		h = binary.BigEndian.AppendUint32(h, v)
	}
	return h
}

// readIDX reads raw as an image (or label) file through ReadIDXImages (or
// ReadIDXLabels) and returns the error and the bytes the call allocated.
// sized passes a *bytes.Reader, whose size the reader learns; otherwise
// the size is hidden behind a plain io.Reader.
func readIDX(raw []byte, name string, labels, sized bool) (error, uint64) {
	var r io.Reader = bytes.NewReader(raw)
	if !sized {
		r = struct{ io.Reader }{r}
	}
	var err error
	alloc := allocated(func() {
		if labels {
			_, err = ReadIDXLabels(r, name)
		} else {
			_, err = ReadIDXImages(r, name)
		}
	})
	return err, alloc
}

// oneLine fails if err's message spans several lines.
func oneLine(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), "\n") {
		t.Errorf("error on several lines: %q", err)
	}
}

// TestIDXDeclaredLimits: a header that declares too much is refused from
// the header alone, raw or gzipped, whether the size of the file is known
// or not, with an error naming the file and the limit, and allocating
// next to nothing.
func TestIDXDeclaredLimits(t *testing.T) {
	useMaxFileBytes(t, 1<<30) // the cases were sized for a 1 GiB limit; they test the checks, not the value
	for _, c := range []struct {
		name   string
		hdr    []byte
		labels bool
		want   string
	}{
		{"many-images", idxHeader(20_000_000, 28, 28, false), false, "declares 20000000 images, more than the limit of 10000000 images (data.MaxImages)"},
		{"max-count", idxHeader(math.MaxUint32, 1, 1, false), false, "declares 4294967295 images, more than the limit of 10000000 images (data.MaxImages)"},
		{"big-images", idxHeader(1, 5000, 5000, false), false, "declares images of 5000×5000 pixels, more than the limit of 16777216 pixels an image (data.MaxImagePixels)"},
		{"max-dims", idxHeader(math.MaxUint32, math.MaxUint32, math.MaxUint32, false), false, "declares images of 4294967295×4294967295 pixels, more than the limit"},
		{"many-bytes", idxHeader(9_000_000, 28, 28, false), false, "declares 9000000 images of 28×28 (7056000000 bytes), more than the limit of 1073741824 bytes (data.MaxFileBytes)"},
		{"zero-rows", idxHeader(5, 0, 28, false), false, "declares images of 0×28 pixels: rows and columns must be at least 1"},
		{"many-labels", idxHeader(20_000_000, 0, 0, true), true, "declares 20000000 labels, more than the limit of 10000000 (data.MaxImages)"},
	} {
		raw := append(append([]byte{}, c.hdr...), make([]byte, 100)...)
		for _, v := range []struct {
			kind  string
			data  []byte
			sized bool
		}{{"raw", raw, true}, {"raw-unsized", raw, false}, {"gzip", gzipBytes(t, raw), true}, {"gzip-unsized", gzipBytes(t, raw), false}} {
			name := c.name + "-" + v.kind
			err, alloc := readIDX(v.data, name, c.labels, v.sized)
			wantErr(t, err, "file "+name+": ", c.want)
			oneLine(t, err)
			// bufio's 64 KiB and gzip's state, nothing of the declared size
			if alloc > 1<<20 {
				t.Errorf("%s: allocated %d bytes before refusing the header", name, alloc)
			}
		}
	}
}

// TestIDXDeclaredVersusSize: a header that declares more data than the
// file holds is refused before the payload is allocated when the file's
// size is known (raw: exactly; gzip: at most maxDeflateRatio times), and
// with the buffer grown only as far as the data that arrived otherwise.
func TestIDXDeclaredVersusSize(t *testing.T) {
	useMaxFileBytes(t, 1<<30) // the cases were sized for a 1 GiB limit; they test the checks, not the value
	dir := t.TempDir()
	img, _ := randomIDX(3, 10, 28, 28)
	raw, _ := idxBytes(t, img, nil)
	binary.BigEndian.PutUint32(raw[4:], 1_000_000) // 784 MB declared, 7840 bytes held

	p := writeFile(t, filepath.Join(dir, "liar"), raw)
	var err error
	alloc := allocated(func() { _, err = ReadIDXImagesFile(p) })
	wantErr(t, err, "file "+p+": truncated: declares 1000000 images of 28×28 but holds 10 (a file of 7856 bytes, want 784000016)")
	if alloc > 1<<20 {
		t.Errorf("raw file with its size known: allocated %d bytes", alloc)
	}
	err, alloc = readIDX(raw, "liar-stream", false, false)
	wantErr(t, err, "file liar-stream: truncated: declares 1000000 images of 28×28 but holds 10 (7840 of 784000000 bytes of pixels)")
	if alloc > 2<<20 { // the first 1 MiB buffer
		t.Errorf("raw stream: allocated %d bytes", alloc)
	}

	gz := gzipBytes(t, raw)
	p = writeFile(t, filepath.Join(dir, "liar.gz"), gz)
	alloc = allocated(func() { _, err = ReadIDXImagesFile(p) })
	wantErr(t, err, "file "+p+": truncated: declares 1000000 images of 28×28 (784000000 bytes), more than a gzip file of", "can hold (deflate expands at most 1032 times)")
	if alloc > 1<<20 {
		t.Errorf("gzip file with its size known: allocated %d bytes", alloc)
	}
	err, alloc = readIDX(gz, "liar-gz-stream", false, false)
	wantErr(t, err, "file liar-gz-stream: truncated: declares 1000000 images of 28×28 but holds 10")
	if alloc > 2<<20 {
		t.Errorf("gzip stream: allocated %d bytes", alloc)
	}

	// labels the same way
	lbl := append(idxHeader(5_000_000, 0, 0, true), 1, 2, 3)
	p = writeFile(t, filepath.Join(dir, "liar-labels"), lbl)
	alloc = allocated(func() { _, err = ReadIDXLabelsFile(p) })
	wantErr(t, err, "file "+p+": truncated: declares 5000000 labels but holds 3 (a file of 11 bytes, want 5000008)")
	if alloc > 1<<20 {
		t.Errorf("label file: allocated %d bytes", alloc)
	}
	err, _ = readIDX(gzipBytes(t, lbl), "liar-labels-gz", true, false)
	wantErr(t, err, "file liar-labels-gz: truncated: declares 5000000 labels but holds 3")

	// a lower limit is obeyed and named
	defer func(m int64) { MaxFileBytes = m }(MaxFileBytes)
	MaxFileBytes = 1000
	raw, _ = idxBytes(t, img, nil)
	err, _ = readIDX(raw, "over-limit", false, true)
	wantErr(t, err, "file over-limit: declares 10 images of 28×28 (7840 bytes), more than the limit of 1000 bytes (data.MaxFileBytes)")
}

// zeroBomb returns hdr followed by n zero bytes, gzipped as tightly as
// deflate goes (about 1000:1).
func zeroBomb(t *testing.T, hdr []byte, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	zw.Write(hdr)
	zero := make([]byte, 1<<20)
	for n > 0 {
		k := min(n, len(zero))
		if _, err := zw.Write(zero[:k]); err != nil {
			t.Fatal(err)
		}
		n -= k
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestIDXGzipBomb: a gzip file of about 100 KB that expands to 100 MB is
// refused, with its name, without decompressing or holding the 100 MB,
// whatever its header declares.
func TestIDXGzipBomb(t *testing.T) {
	useMaxFileBytes(t, 1<<30) // the cases were sized for a 1 GiB limit; they test the checks, not the value
	if testing.Short() {
		t.Skip("compresses 300 MB")
	}
	const expands = 100 << 20
	dir := t.TempDir()
	for _, c := range []struct {
		name     string
		hdr      []byte
		labels   bool
		want     string
		maxAlloc uint64 // bytes the reader may allocate, sized and unsized
	}{
		// declares 10 images: decompression stops one byte after them
		{"small-header.gz", idxHeader(10, 28, 28, false), false, "data after the 10 images of 28×28 the header declares", 2 << 20},
		{"small-labels.gz", idxHeader(10, 0, 0, true), true, "data after the 10 labels the header declares", 2 << 20},
		// declares millions: refused from the header
		{"millions.gz", idxHeader(20_000_000, 28, 28, false), false, "more than the limit of 10000000 images (data.MaxImages)", 1 << 20},
	} {
		gz := zeroBomb(t, c.hdr, expands)
		if len(gz) > 110<<10 {
			t.Fatalf("%s: the bomb is %d bytes, want about 100 KB", c.name, len(gz))
		}
		p := writeFile(t, filepath.Join(dir, c.name), gz)
		var err error
		alloc := allocated(func() {
			if c.labels {
				_, err = ReadIDXLabelsFile(p)
			} else {
				_, err = ReadIDXImagesFile(p)
			}
		})
		wantErr(t, err, "file "+p+": ", c.want)
		oneLine(t, err)
		if alloc > c.maxAlloc {
			t.Errorf("%s: allocated %d bytes, want at most %d", c.name, alloc, c.maxAlloc)
		}
		t.Logf("%s (%d bytes): %d bytes allocated", c.name, len(gz), alloc)
		err, alloc = readIDX(gz, c.name, c.labels, false)
		wantErr(t, err, "file "+c.name+": ", c.want)
		if alloc > c.maxAlloc {
			t.Errorf("%s as a stream: allocated %d bytes, want at most %d", c.name, alloc, c.maxAlloc)
		}
	}

	// A header that declares 1,000,000 images (784 MB, under every limit)
	// on the 100 KB bomb: with the file's size known it is refused from
	// the header (deflate cannot expand 100 KB to 784 MB); as a stream the
	// reader holds what arrives (100 MB), not the 784 MB declared.
	gz := zeroBomb(t, idxHeader(1_000_000, 28, 28, false), expands)
	p := writeFile(t, filepath.Join(dir, "declares-million.gz"), gz)
	var err error
	alloc := allocated(func() { _, err = ReadIDXImagesFile(p) })
	wantErr(t, err, "file "+p+": truncated: declares 1000000 images of 28×28 (784000000 bytes), more than a gzip file of")
	if alloc > 1<<20 {
		t.Errorf("declares-million.gz: allocated %d bytes", alloc)
	}
	err, alloc = readIDX(gz, "declares-million-stream", false, false)
	wantErr(t, err, "file declares-million-stream: truncated: declares 1000000 images of 28×28 but holds 133746 (104857600 of 784000000 bytes of pixels)")
	t.Logf("a stream declaring 784 MB and holding 100 MB: %d bytes allocated", alloc)
	if alloc > 3*expands {
		t.Errorf("declares-million as a stream: allocated %d bytes for %d bytes of data", alloc, expands)
	}
}

// useMaxFileBytes sets MaxFileBytes for the test.
func useMaxFileBytes(t *testing.T, v int64) {
	prev := MaxFileBytes
	MaxFileBytes = v
	t.Cleanup(func() { MaxFileBytes = prev })
}

// TestDefaultLimitsHoldRealData: the default limits admit the largest
// real files and splits (MNIST training images, CIFAR-10's training
// split) and keep a loaded split's float32 pixels under 1 GiB.
func TestDefaultLimitsHoldRealData(t *testing.T) {
	if MaxFileBytes < 60000*784 || MaxFileBytes < 50000*3073 || MaxImages < 60000 {
		t.Errorf("MaxFileBytes %d, MaxImages %d: too small for MNIST or CIFAR-10", MaxFileBytes, MaxImages)
	}
	if 4*MaxFileBytes > 1<<30 {
		t.Errorf("MaxFileBytes %d: a loaded split could hold %d bytes of float32 pixels, more than 1 GiB", MaxFileBytes, 4*MaxFileBytes)
	}
}
