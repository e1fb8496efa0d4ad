package data

import (
	"bufio"
	"bytes"
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

// maxIDXBytes bounds the payload an IDX header may announce (1 GiB), so a
// corrupt header cannot make the reader allocate without limit.
const maxIDXBytes = 1 << 30

// IDXImages is the content of an IDX image file: N images of Rows×Cols
// uint8 pixels, row-major, image after image.
type IDXImages struct {
	N, Rows, Cols int
	Pix           []uint8 // len N·Rows·Cols
}

// ReadIDXImages reads an IDX image file (magic 2051) from r, raw or
// gzip-compressed (detected by the gzip magic bytes, not by the name).
// name is used in error messages only.
func ReadIDXImages(r io.Reader, name string) (*IDXImages, error) {
	br, closer, err := maybeGunzip(r, name)
	if err != nil {
		return nil, err
	}
	if closer != nil {
		defer closer.Close()
	}
	var hdr [16]byte
	if n, err := io.ReadFull(br, hdr[:4]); err != nil {
		return nil, fmt.Errorf("file %s: truncated: %d bytes, too short for an IDX magic number: %w", name, n, unexpected(err))
	}
	if m := binary.BigEndian.Uint32(hdr[:4]); m != IDXImagesMagic {
		return nil, badMagic(name, m, IDXImagesMagic, "image")
	}
	if n, err := io.ReadFull(br, hdr[4:]); err != nil {
		return nil, fmt.Errorf("file %s: truncated: %d bytes, an IDX image header has 16: %w", name, 4+n, unexpected(err))
	}
	n := binary.BigEndian.Uint32(hdr[4:8])
	rows := binary.BigEndian.Uint32(hdr[8:12])
	cols := binary.BigEndian.Uint32(hdr[12:16])
	total := uint64(n) * uint64(rows) * uint64(cols)
	if total > maxIDXBytes {
		return nil, fmt.Errorf("file %s: header says %d images of %d×%d (%d bytes), more than the %d bytes this reader accepts", name, n, rows, cols, total, maxIDXBytes)
	}
	pix, err := readPayload(br, int(total))
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("file %s: truncated: header says %d images of %d×%d, only %d bytes of pixels (want %d)", name, n, rows, cols, len(pix), total)
		}
		return nil, fmt.Errorf("file %s: reading pixels: %w", name, err)
	}
	if err := expectEOF(br, name); err != nil {
		return nil, err
	}
	return &IDXImages{N: int(n), Rows: int(rows), Cols: int(cols), Pix: pix}, nil
}

// ReadIDXLabels reads an IDX label file (magic 2049) from r, raw or
// gzip-compressed (detected by content). It does not check the label
// values: the dataset loaders do, since only they know the class count.
// name is used in error messages only.
func ReadIDXLabels(r io.Reader, name string) ([]uint8, error) {
	br, closer, err := maybeGunzip(r, name)
	if err != nil {
		return nil, err
	}
	if closer != nil {
		defer closer.Close()
	}
	var hdr [8]byte
	if n, err := io.ReadFull(br, hdr[:4]); err != nil {
		return nil, fmt.Errorf("file %s: truncated: %d bytes, too short for an IDX magic number: %w", name, n, unexpected(err))
	}
	if m := binary.BigEndian.Uint32(hdr[:4]); m != IDXLabelsMagic {
		return nil, badMagic(name, m, IDXLabelsMagic, "label")
	}
	if n, err := io.ReadFull(br, hdr[4:]); err != nil {
		return nil, fmt.Errorf("file %s: truncated: %d bytes, an IDX label header has 8: %w", name, 4+n, unexpected(err))
	}
	n := binary.BigEndian.Uint32(hdr[4:8])
	if uint64(n) > maxIDXBytes {
		return nil, fmt.Errorf("file %s: header says %d labels, more than the %d this reader accepts", name, n, maxIDXBytes)
	}
	labels, err := readPayload(br, int(n))
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("file %s: truncated: header says %d labels, only %d bytes of labels", name, n, len(labels))
		}
		return nil, fmt.Errorf("file %s: reading labels: %w", name, err)
	}
	if err := expectEOF(br, name); err != nil {
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

// maybeGunzip returns a reader of the decompressed content of r if r starts
// with the gzip magic bytes 1f 8b, else of r itself. The closer, when not
// nil, is the gzip reader to close.
func maybeGunzip(r io.Reader, name string) (io.Reader, io.Closer, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	head, err := br.Peek(2)
	if err != nil && err != io.EOF {
		return nil, nil, fmt.Errorf("file %s: %w", name, err)
	}
	if len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("file %s: gzip header: %w", name, unexpected(err))
		}
		return bufio.NewReaderSize(zr, 1<<16), zr, nil
	}
	return br, nil, nil
}

// readPayload reads exactly n bytes. The buffer grows with the data
// actually read, so a header that lies about a huge size on a short file
// does not allocate the announced size up front. On a short read it
// returns what it got and io.ErrUnexpectedEOF.
func readPayload(r io.Reader, n int) ([]byte, error) {
	const chunk = 64 << 20
	if n <= chunk {
		buf := make([]byte, n)
		got, err := io.ReadFull(r, buf)
		if err != nil {
			return buf[:got], unexpected(err)
		}
		return buf, nil
	}
	var b bytes.Buffer
	b.Grow(chunk)
	got, err := io.CopyN(&b, r, int64(n))
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return b.Bytes()[:got], err
	}
	return b.Bytes(), nil
}

// expectEOF reports trailing bytes after the announced payload: they mean
// the header does not describe the file.
func expectEOF(r io.Reader, name string) error {
	n, err := io.Copy(io.Discard, r)
	if err != nil {
		return fmt.Errorf("file %s: after the payload: %w", name, unexpected(err))
	}
	if n > 0 {
		return fmt.Errorf("file %s: %d bytes after the data the header announces (wrong header or concatenated files)", name, n)
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
