package data

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// IDX magic numbers: 0x0000 then the element type (0x08 = unsigned byte)
// then the number of dimensions.
const (
	// IDXImagesMagic is the magic number of an IDX file of uint8 images
	// (3 dimensions: count, rows, columns).
	IDXImagesMagic = 2051
	// IDXLabelsMagic is the magic number of an IDX file of uint8 labels
	// (1 dimension: count).
	IDXLabelsMagic = 2049
)

// Limits on what a data file may declare or hold. A header's count and
// dimensions are untrusted: the readers check them against these limits,
// with overflow-free arithmetic, before allocating anything, and never
// allocate more than the data that actually arrives. They are variables so
// that a program on a larger machine can raise them before loading; the
// error that a limit causes names it.
var (
	// MaxImages is the most images (or labels) one IDX file, and the most
	// records the files of one CIFAR-10 split together, may hold: 10
	// million, far above the 60,000 of the largest split used here.
	MaxImages = 10_000_000
	// MaxImagePixels is the most pixels (rows × columns) of one IDX image:
	// 4096×4096.
	MaxImagePixels = 4096 * 4096
	// MaxFileBytes is the most bytes of payload (pixels or labels, after
	// decompression; whole records for CIFAR-10) one data file, and the
	// files of one CIFAR-10 split together, may hold: 192 MiB (MNIST's
	// training images are 45 MiB, CIFAR-10's training split 147 MiB). A
	// loaded split holds 4 bytes a pixel as float32, so a training and a
	// validation split stay within 1.5 GiB, on a 4 GB board too.
	MaxFileBytes int64 = 192 << 20
)

// maxDeflateRatio is the most a deflate stream (hence a gzip file) can
// expand: a length-258 match of distance 1 coded in 2 bits, 1032:1. A
// gzip file of S bytes therefore holds at most maxDeflateRatio·S bytes, which
// refuses a small file that declares a huge payload before reading it.
const maxDeflateRatio = 1032

// IDXImages is the content of an IDX image file: N images of Rows×Cols
// uint8 pixels, row-major, image after image.
type IDXImages struct {
	N, Rows, Cols int
	Pix           []uint8 // len N·Rows·Cols
}

// ReadIDXImages reads an IDX image file (magic 2051) from r, raw or
// gzip-compressed (detected by the gzip magic bytes, not by the name).
// name is used in error messages only. The header's count and size are
// checked against MaxImages, MaxImagePixels and MaxFileBytes and, when r
// tells its size (a file with Stat and Seek, or a reader with Len such as
// *bytes.Reader), against that size before the pixels are allocated; a
// gzipped payload is read as it arrives, never allocated at its declared
// size, and decompression stops one byte after the declared payload.
func ReadIDXImages(r io.Reader, name string) (*IDXImages, error) {
	src, err := openIDX(r, name)
	if err != nil {
		return nil, err
	}
	defer src.close()
	var hdr [16]byte
	if err := src.header(hdr[:], "image", IDXImagesMagic); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[4:8])
	rows := binary.BigEndian.Uint32(hdr[8:12])
	cols := binary.BigEndian.Uint32(hdr[12:16])
	if rows == 0 || cols == 0 {
		return nil, fmt.Errorf("file %s: declares images of %d×%d pixels: rows and columns must be at least 1", name, rows, cols)
	}
	// rows, cols, n < 2^32, so each product below fits in a uint64 once its
	// factors have passed the limit before it.
	if px := uint64(rows) * uint64(cols); px > uint64(MaxImagePixels) {
		return nil, fmt.Errorf("file %s: declares images of %d×%d pixels, more than the limit of %d pixels an image (data.MaxImagePixels)", name, rows, cols, MaxImagePixels)
	}
	if uint64(n) > uint64(MaxImages) {
		return nil, fmt.Errorf("file %s: declares %d images, more than the limit of %d images (data.MaxImages)", name, n, MaxImages)
	}
	size := uint64(rows) * uint64(cols)
	total := uint64(n) * size
	what := func() string { return fmt.Sprintf("%d images of %d×%d", n, rows, cols) }
	if total > uint64(MaxFileBytes) {
		return nil, fmt.Errorf("file %s: declares %s (%d bytes), more than the limit of %d bytes (data.MaxFileBytes)", name, what(), total, MaxFileBytes)
	}
	if err := src.checkSize(int64(total), int64(size), what); err != nil {
		return nil, err
	}
	pix, err := src.payload(int(total))
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("file %s: truncated: declares %s but holds %d (%d of %d bytes of pixels)", name, what(), uint64(len(pix))/size, len(pix), total)
		}
		return nil, fmt.Errorf("file %s: reading pixels: %w", name, err)
	}
	if err := src.expectEOF(what); err != nil {
		return nil, err
	}
	return &IDXImages{N: int(n), Rows: int(rows), Cols: int(cols), Pix: pix}, nil
}

// ReadIDXLabels reads an IDX label file (magic 2049) from r, raw or
// gzip-compressed (detected by content). It does not check the label
// values: the dataset loaders do, since only they know the class count.
// name is used in error messages only. The declared count is checked like
// ReadIDXImages checks its header (MaxImages, MaxFileBytes, the size of r
// when known) before anything is allocated.
func ReadIDXLabels(r io.Reader, name string) ([]uint8, error) {
	src, err := openIDX(r, name)
	if err != nil {
		return nil, err
	}
	defer src.close()
	var hdr [8]byte
	if err := src.header(hdr[:], "label", IDXLabelsMagic); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[4:8])
	if uint64(n) > uint64(MaxImages) {
		return nil, fmt.Errorf("file %s: declares %d labels, more than the limit of %d (data.MaxImages)", name, n, MaxImages)
	}
	if int64(n) > MaxFileBytes {
		return nil, fmt.Errorf("file %s: declares %d labels, more than the limit of %d bytes (data.MaxFileBytes)", name, n, MaxFileBytes)
	}
	what := func() string { return fmt.Sprintf("%d labels", n) }
	if err := src.checkSize(int64(n), 1, what); err != nil {
		return nil, err
	}
	labels, err := src.payload(int(n))
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("file %s: truncated: declares %d labels but holds %d", name, n, len(labels))
		}
		return nil, fmt.Errorf("file %s: reading labels: %w", name, err)
	}
	if err := src.expectEOF(what); err != nil {
		return nil, err
	}
	return labels, nil
}

// ReadIDXImagesFile reads the IDX image file at path (raw or gzipped).
func ReadIDXImagesFile(path string) (*IDXImages, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err // *PathError already names the file
	}
	defer f.Close()
	return ReadIDXImages(f, path)
}

// ReadIDXLabelsFile reads the IDX label file at path (raw or gzipped).
func ReadIDXLabelsFile(path string) ([]uint8, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadIDXLabels(f, path)
}

// ReadIDXImagesFS reads the IDX image file name from fsys (raw or gzipped).
func ReadIDXImagesFS(fsys fs.FS, name string) (*IDXImages, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadIDXImages(f, name)
}

// ReadIDXLabelsFS reads the IDX label file name from fsys (raw or gzipped).
func ReadIDXLabelsFS(fsys fs.FS, name string) ([]uint8, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadIDXLabels(f, name)
}

// WriteIDXImages writes img as a raw (uncompressed) IDX image file to w.
// Wrap w in a gzip.Writer for a .gz file.
func WriteIDXImages(w io.Writer, img *IDXImages) error {
	if img.N < 0 || img.Rows < 0 || img.Cols < 0 || len(img.Pix) != img.N*img.Rows*img.Cols {
		return fmt.Errorf("data: WriteIDXImages: %d pixels for %d images of %d×%d", len(img.Pix), img.N, img.Rows, img.Cols)
	}
	var hdr [16]byte
	binary.BigEndian.PutUint32(hdr[0:], IDXImagesMagic)
	binary.BigEndian.PutUint32(hdr[4:], uint32(img.N))
	binary.BigEndian.PutUint32(hdr[8:], uint32(img.Rows))
	binary.BigEndian.PutUint32(hdr[12:], uint32(img.Cols))
	if _, err := w.Write(hdr[:]); err != nil {
		return fmt.Errorf("data: writing IDX header: %w", err)
	}
	if _, err := w.Write(img.Pix); err != nil {
		return fmt.Errorf("data: writing IDX pixels: %w", err)
	}
	return nil
}

// WriteIDXLabels writes labels as a raw (uncompressed) IDX label file to w.
func WriteIDXLabels(w io.Writer, labels []uint8) error {
	var hdr [8]byte
	binary.BigEndian.PutUint32(hdr[0:], IDXLabelsMagic)
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(labels)))
	if _, err := w.Write(hdr[:]); err != nil {
		return fmt.Errorf("data: writing IDX header: %w", err)
	}
	if _, err := w.Write(labels); err != nil {
		return fmt.Errorf("data: writing IDX labels: %w", err)
	}
	return nil
}

// idxSource is an IDX file being read: its decompressed content, whether
// it is gzipped, and its size (compressed size for gzip) when known.
type idxSource struct {
	name   string
	r      io.Reader // the content, decompressed
	zr     *gzip.Reader
	size   int64 // bytes of the file from where reading began; -1 if unknown
	hdrLen int64 // bytes of header, set by header
}

// openIDX starts reading r: it learns r's size when r tells it (before
// wrapping it in a buffer) and, if r starts with the gzip magic bytes
// 1f 8b, decompresses it.
func openIDX(r io.Reader, name string) (*idxSource, error) {
	s := &idxSource{name: name, size: knownSize(r)}
	br := bufio.NewReaderSize(r, 1<<16)
	head, err := br.Peek(2)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("file %s: %w", name, err)
	}
	if len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("file %s: gzip header: %w", name, unexpected(err))
		}
		// No buffer on top: decompression then runs only as far as the
		// reads below ask, at most one byte past the declared payload.
		s.r, s.zr = zr, zr
		return s, nil
	}
	s.r = br
	return s, nil
}

func (s *idxSource) close() {
	if s.zr != nil {
		s.zr.Close()
	}
}

// knownSize returns the number of bytes left in r when r tells it: a
// regular file with Stat and Seek (*os.File, the files of embed.FS and
// fstest.MapFS), or a reader with Len (*bytes.Reader, *strings.Reader).
// It returns -1 otherwise.
func knownSize(r io.Reader) int64 {
	switch f := r.(type) {
	case interface {
		Stat() (fs.FileInfo, error)
		io.Seeker
	}:
		fi, err := f.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return -1
		}
		off, err := f.Seek(0, io.SeekCurrent)
		if err != nil || off < 0 || off > fi.Size() {
			return -1
		}
		return fi.Size() - off
	case interface{ Len() int }:
		return int64(f.Len())
	}
	return -1
}

// header reads len(hdr) header bytes into hdr and checks the magic number.
// kind ("image" or "label") is for messages.
func (s *idxSource) header(hdr []byte, kind string, magic uint32) error {
	if n, err := io.ReadFull(s.r, hdr[:4]); err != nil {
		return fmt.Errorf("file %s: truncated: %d bytes, too short for an IDX magic number: %w", s.name, n, unexpected(err))
	}
	if m := binary.BigEndian.Uint32(hdr[:4]); m != magic {
		return badMagic(s.name, m, magic, kind)
	}
	if n, err := io.ReadFull(s.r, hdr[4:]); err != nil {
		return fmt.Errorf("file %s: truncated: %d bytes, an IDX %s header has %d: %w", s.name, 4+n, kind, len(hdr), unexpected(err))
	}
	s.hdrLen = int64(len(hdr))
	return nil
}

// checkSize compares the declared payload of n bytes with the file size,
// when known, before anything is allocated: a raw file must be exactly
// header + payload; a gzip file cannot expand more than maxDeflateRatio
// times. unit is the bytes of one image (or label), what describes the
// declared content for messages.
func (s *idxSource) checkSize(n, unit int64, what func() string) error {
	if s.size < 0 {
		return nil
	}
	want := s.hdrLen + n
	if s.zr != nil {
		if limit := maxDeflateRatio*s.size + 1024; want > limit {
			return fmt.Errorf("file %s: truncated: declares %s (%d bytes), more than a gzip file of %d bytes can hold (deflate expands at most %d times)", s.name, what(), n, s.size, maxDeflateRatio)
		}
		return nil
	}
	switch {
	case s.size < want:
		held := max(s.size-s.hdrLen, 0) / unit
		return fmt.Errorf("file %s: truncated: declares %s but holds %d (a file of %d bytes, want %d)", s.name, what(), held, s.size, want)
	case s.size > want:
		return fmt.Errorf("file %s: %d bytes after the %s the header declares (wrong header or concatenated files)", s.name, s.size-want, what())
	}
	return nil
}

// payload reads exactly n bytes. Only a raw file whose size checkSize
// confirmed gets its n bytes allocated at once; otherwise the buffer
// starts at 1 MiB and doubles (capped at n) as data actually arrives, so
// a header that lies about a huge size costs at most twice the data the
// file really holds. On a short read it returns what it got and
// io.ErrUnexpectedEOF.
func (s *idxSource) payload(n int) ([]byte, error) {
	first := 1 << 20
	if s.zr == nil && s.size >= 0 {
		first = n
	}
	buf := make([]byte, 0, min(n, first))
	for len(buf) < n {
		if len(buf) == cap(buf) {
			nb := make([]byte, len(buf), min(n, 2*cap(buf)))
			copy(nb, buf)
			buf = nb
		}
		got, err := io.ReadFull(s.r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+got]
		if err != nil {
			return buf, unexpected(err)
		}
	}
	return buf, nil
}

// expectEOF reports data after the declared payload: it means the header
// does not describe the file. It reads at most one byte, so a gzip file
// that expands far beyond its header is not decompressed further.
func (s *idxSource) expectEOF(what func() string) error {
	var b [1]byte
	n, err := io.ReadFull(s.r, b[:])
	if n > 0 {
		return fmt.Errorf("file %s: data after the %s the header declares (wrong header or concatenated files)", s.name, what())
	}
	if err == io.ErrUnexpectedEOF {
		return fmt.Errorf("file %s: truncated after the %s the header declares (the gzip stream is cut): %w", s.name, what(), err)
	}
	if err != io.EOF {
		return fmt.Errorf("file %s: after the %s the header declares: %w", s.name, what(), err)
	}
	return nil
}

// unexpected maps io.EOF (nothing read at all) to io.ErrUnexpectedEOF:
// in the middle of a file both mean it is truncated.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func badMagic(name string, got, want uint32, kind string) error {
	hint := ""
	switch got {
	case IDXImagesMagic:
		hint = " (this is an IDX image file)"
	case IDXLabelsMagic:
		hint = " (this is an IDX label file)"
	}
	return fmt.Errorf("file %s: bad magic %d (0x%08x), want %d for an IDX %s file%s", name, got, got, want, kind, hint)
}
