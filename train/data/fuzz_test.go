package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"io/fs"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/capstan-ml/capstan"
)

// allocated returns the bytes f allocates, from runtime.MemStats.TotalAlloc
// (everything allocated, whether freed or not, by any goroutine: an upper
// bound on what f allocated).
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// content returns the bytes a reader finds in b: b itself, or what it
// decompresses to if it starts with the gzip magic bytes (every member, as
// far as it decompresses without error, at most limit bytes).
func content(b []byte, limit int64) []byte {
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		return b
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil
	}
	var out bytes.Buffer
	io.Copy(&out, io.LimitReader(zr, limit))
	return out.Bytes()
}

// contentSize is len(content(b)) without holding the content.
func contentSize(b []byte) int64 {
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		return int64(len(b))
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return 0
	}
	n, _ := io.Copy(io.Discard, io.LimitReader(zr, MaxFileBytes+1<<20))
	return n
}

// allocBound is the memory a reader may allocate for the file in: 64 MiB
// of slack (buffers, gzip state, the runtime), 64 bytes a byte of input,
// and perFree bytes a byte of the file's decompressed content. A reader
// must hold what the file really contains (a gzip file legitimately
// expands up to 1032 times, its payload is read into a buffer that grows
// by doubling, and a loader adds 4 bytes a pixel as float32), but never
// what the header merely declares: a lying header on a small file must
// cost no more than the file's real content.
func allocBound(in []byte, perByte uint64) uint64 {
	return 64<<20 + 64*uint64(len(in)) + perByte*uint64(contentSize(in))
}

// checkErr fails unless err is nil or one line naming the file.
func checkErr(t *testing.T, err error, name string) {
	t.Helper()
	if err == nil {
		return
	}
	if msg := err.Error(); !strings.Contains(msg, name) || strings.Contains(msg, "\n") {
		t.Fatalf("error %q: want one line naming %s", msg, name)
	}
}

// unsized hides a reader's size (Len), so the readers take their
// streaming path.
func unsized(b []byte) io.Reader { return struct{ io.Reader }{bytes.NewReader(b)} }

// readBoth reads in with read (ReadIDXImages or ReadIDXLabels) twice, its
// size known (*bytes.Reader) then hidden (unsized), as the file
// "fuzz.idx". It fails the test if a read allocates more than
// allocBound(in, 4) (a payload grown by doubling, twice the content at
// most), if an error is not one line naming the file, or if the two
// reads disagree; ok reports that both succeeded.
func readBoth[T any](t *testing.T, in []byte, read func(io.Reader, string) (T, error)) (got [2]T, ok bool) {
	t.Helper()
	var errs [2]error
	for i, r := range []io.Reader{bytes.NewReader(in), unsized(in)} {
		bound := allocBound(in, 4)
		alloc := allocated(func() { got[i], errs[i] = read(r, "fuzz.idx") })
		if alloc > bound {
			t.Fatalf("path %d: allocated %d bytes for %d bytes of input, bound %d", i, alloc, len(in), bound)
		}
		checkErr(t, errs[i], "fuzz.idx")
	}
	if (errs[0] == nil) != (errs[1] == nil) {
		t.Fatalf("sized and unsized readers disagree: %v / %v", errs[0], errs[1])
	}
	return got, errs[0] == nil
}

// realIDX returns the first n digits of the embedded MNIST training set
// and their labels, as raw IDX files.
func realIDX(t testing.TB, n int) (img, lbl []byte) {
	t.Helper()
	fsys := mnistFS(t, n, 1)
	return fsys[mnistTrainImages].Data, fsys[mnistTrainLabels].Data
}

func gz(t testing.TB, raw []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(raw)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// embeddedFile returns a file of capstan.EmbeddedMNIST.
func embeddedFile(t testing.TB, name string) []byte {
	t.Helper()
	b, err := fs.ReadFile(capstan.EmbeddedMNIST, name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// idxSeeds adds valid files (raw and gzipped, two gzip members), and
// corrupt ones, built from raw (a valid IDX file whose header is hdr bytes).
func idxSeeds(f *testing.F, raw []byte, hdr int) {
	f.Add(raw)
	f.Add(gz(f, raw))
	f.Add(append(gz(f, raw[:hdr]), gz(f, raw[hdr:])...)) // two gzip members
	f.Add(raw[:len(raw)-1])                              // truncated payload
	f.Add(raw[:hdr-2])                                   // truncated header
	f.Add(append(append([]byte{}, raw...), 0))           // trailing byte
	z := gz(f, raw)
	f.Add(z[:len(z)-4]) // gzip trailer cut
	huge := append([]byte{}, raw...)
	binary.BigEndian.PutUint32(huge[4:], 1_000_000) // within the limits, far beyond the data
	f.Add(huge)
	f.Add(gz(f, huge))
	f.Add([]byte{})
	f.Add([]byte{0x1f, 0x8b})
}

// FuzzReadIDXImages reads any input as an IDX image file, raw or gzipped,
// with its size known (*bytes.Reader) and hidden (a plain io.Reader): no
// panic; both paths agree; an error is one line naming the file; a success
// re-encodes to the content; the memory stays within allocBound.
func FuzzReadIDXImages(f *testing.F) {
	raw, lbl := realIDX(f, 3)
	idxSeeds(f, raw, 16)
	small, _ := randomIDX(5, 4, 3, 2)
	var b bytes.Buffer
	WriteIDXImages(&b, small)
	idxSeeds(f, b.Bytes(), 16)
	f.Add(lbl)                                                             // a label file: bad magic
	f.Add(embeddedFile(f, "t10k-labels-idx1-ubyte.gz"))                    // real gzipped label file
	f.Add(idxHeader(1, 5000, 5000, false))                                 // over MaxImagePixels
	f.Add(idxHeader(0, 0, 7, false))                                       // zero rows
	f.Add(gz(f, append(idxHeader(2, 2, 2, false), make([]byte, 4096)...))) // expands past its header
	f.Fuzz(func(t *testing.T, in []byte) {
		got, ok := readBoth(t, in, ReadIDXImages)
		if !ok {
			return
		}
		for _, g := range got {
			if g.N > MaxImages || g.Rows*g.Cols > MaxImagePixels || g.Rows < 1 || g.Cols < 1 || len(g.Pix) != g.N*g.Rows*g.Cols {
				t.Fatalf("accepted %d images of %d×%d with %d pixels", g.N, g.Rows, g.Cols, len(g.Pix))
			}
		}
		var enc bytes.Buffer
		if err := WriteIDXImages(&enc, got[0]); err != nil {
			t.Fatal(err)
		}
		if want := content(in, int64(enc.Len())+1); !bytes.Equal(enc.Bytes(), want) || !bytes.Equal(got[0].Pix, got[1].Pix) {
			t.Fatalf("the images read do not re-encode to the file's %d bytes", len(want))
		}
	})
}

// FuzzReadIDXLabels is FuzzReadIDXImages for IDX label files.
func FuzzReadIDXLabels(f *testing.F) {
	_, lbl := realIDX(f, 20)
	idxSeeds(f, lbl, 8)
	f.Add(embeddedFile(f, "t10k-labels-idx1-ubyte.gz"))
	f.Add(embeddedFile(f, "train-labels-idx1-ubyte.gz"))
	f.Add(idxHeader(20_000_000, 0, 0, true))
	f.Add(idxHeader(3, 1, 1, false)) // an image header
	f.Fuzz(func(t *testing.T, in []byte) {
		got, ok := readBoth(t, in, ReadIDXLabels)
		if !ok {
			return
		}
		var enc bytes.Buffer
		if err := WriteIDXLabels(&enc, got[0]); err != nil {
			t.Fatal(err)
		}
		if want := content(in, int64(enc.Len())+1); len(got[0]) > MaxImages || !bytes.Equal(enc.Bytes(), want) || !bytes.Equal(got[0], got[1]) {
			t.Fatalf("the %d labels read do not re-encode to the file's %d bytes", len(got[0]), len(want))
		}
	})
}

// FuzzLoadMNISTFS loads a small MNIST-format data set (real digits) from an
// fstest.MapFS in which one file, chosen by which (the four standard files,
// with a .gz name when which&4), is the fuzz input: no panic, an error is
// one line naming that file, a success is a valid data set, and the memory
// stays within allocBound (pixels, float32 copies and doubling: 8 bytes a
// byte of content).
func FuzzLoadMNISTFS(f *testing.F) {
	good := mnistFS(f, 3, 2)
	files := MNISTFiles()
	for i, name := range files {
		f.Add(uint8(i), good[name].Data)
		f.Add(uint8(i|4), gz(f, good[name].Data))
		f.Add(uint8(i), good[name].Data[:len(good[name].Data)-1])
		f.Add(uint8(i), good[files[i^1]].Data) // images for labels and back
	}
	f.Add(uint8(1), append(idxHeader(3, 0, 0, true), 1, 2, 10))                   // label 10
	f.Add(uint8(3), append(idxHeader(4, 0, 0, true), 1, 2, 3, 4))                 // 4 labels, 2 images
	f.Add(uint8(5), embeddedFile(f, "train-labels-idx1-ubyte.gz"))                // 6000 labels, 3 images
	f.Add(uint8(6), gz(f, append(idxHeader(2, 2, 2, false), make([]byte, 8)...))) // other image size
	f.Fuzz(func(t *testing.T, which uint8, in []byte) {
		fsys := fstest.MapFS{}
		for k, v := range good {
			fsys[k] = v
		}
		name := files[which%4]
		delete(fsys, name)
		if which&4 != 0 {
			name += ".gz"
		}
		fsys[name] = &fstest.MapFile{Data: in}
		bound := allocBound(in, 8)
		var tr, te *Dataset
		var err error
		alloc := allocated(func() { tr, te, err = LoadMNISTFS(fsys, ".", "fuzz") })
		if alloc > bound {
			t.Fatalf("allocated %d bytes for %d bytes of input, bound %d", alloc, len(in), bound)
		}
		if err != nil {
			checkErr(t, err, name)
			return
		}
		for _, d := range []*Dataset{tr, te} {
			if err := d.Validate(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// FuzzCIFAR10 loads CIFAR-10 from an fstest.MapFS in which one of the six
// files, chosen by which, is the fuzz input, with the file sizes known
// and hidden (noSizeFS): no panic, both agree, an error is one line naming
// the file, a success is a valid data set of whole records, and the
// memory stays within allocBound.
func FuzzCIFAR10(f *testing.F) {
	good := cifarFS(f, []int{1, 1, 1, 1, 1, 2})
	names := cifarNames()
	total := 0
	for _, name := range names {
		total += len(good[name].Data) / cifarRecord
	}
	for i, name := range names {
		d := good[name].Data
		f.Add(uint8(i), d)
		f.Add(uint8(i), d[:len(d)-1])
		f.Add(uint8(i), append(append([]byte{}, d...), d...))
	}
	f.Add(uint8(0), []byte{})
	f.Add(uint8(5), append([]byte{10}, make([]byte, cifarRecord-1)...)) // label 10
	f.Add(uint8(2), gz(f, good[names[2]].Data))                         // gzipped: not a CIFAR file
	f.Fuzz(func(t *testing.T, which uint8, in []byte) {
		fsys := fstest.MapFS{}
		for k, v := range good {
			fsys[k] = v
		}
		name := names[int(which)%len(names)]
		fsys[name] = &fstest.MapFile{Data: in}
		var n [2]int
		var errs [2]error
		for i, fs := range []fs.FS{fsys, noSizeFS{fsys}} {
			// the records, then 4 bytes a pixel as float32: 5 bytes a byte
			bound := allocBound(in, 8)
			var tr, te *Dataset
			alloc := allocated(func() { tr, te, errs[i] = LoadCIFAR10FS(fs) })
			if alloc > bound {
				t.Fatalf("path %d: allocated %d bytes for %d bytes of input, bound %d", i, alloc, len(in), bound)
			}
			if errs[i] != nil {
				checkErr(t, errs[i], name)
				continue
			}
			for _, d := range []*Dataset{tr, te} {
				if err := d.Validate(); err != nil {
					t.Fatal(err)
				}
			}
			n[i] = tr.N + te.N
			if want := total + len(in)/cifarRecord - len(good[name].Data)/cifarRecord; n[i] != want {
				t.Fatalf("%d images, want %d", n[i], want)
			}
		}
		if (errs[0] == nil) != (errs[1] == nil) || n[0] != n[1] {
			t.Fatalf("sized and unsized file systems disagree: %v (%d images) / %v (%d images)", errs[0], n[0], errs[1], n[1])
		}
	})
}
