package telemetry

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/capstan-ml/capstan/capsnet/atomicfile"
)

// GzipName is the compressed form of FileName that a run directory may
// hold instead of it, made with gzip (gzip -k telemetry.ndjson): the
// telemetry of a long run is about 1.4 MB of text per epoch of the deep
// model at batch 512 and compresses about 2.7×, which is what a committed
// run directory should carry. Find and Open read it as they read the
// plain file; Resume unpacks it into FileName before appending.
const GzipName = FileName + ".gz"

// MaxUnpackedBytes bounds the size Resume writes when it unpacks a
// GzipName file (a gzip stream can expand without limit); it is a bound
// on disk, not memory: unpacking streams. A package variable: raise it for
// longer runs.
var MaxUnpackedBytes int64 = 1 << 36

// gzipMagic starts every gzip stream (RFC 1952).
var gzipMagic = [2]byte{0x1f, 0x8b}

// Find returns the telemetry file of a run directory: FileName when it
// exists, else GzipName when it exists, else "" (the run has none). When
// both exist the plain file is the one a resumed run appends to, so it is
// the newer one.
func Find(dir string) (string, error) {
	for _, name := range []string{FileName, GzipName} {
		path := filepath.Join(dir, name)
		_, err := os.Stat(path)
		if err == nil {
			return path, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("telemetry: %w", err)
		}
	}
	return "", nil
}

// Open opens a telemetry file for reading, plain or gzip-compressed: a
// file that starts with gzip's magic bytes is decompressed, whatever its
// name. Closing the result closes the file.
func Open(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	br := bufio.NewReaderSize(f, 64<<10)
	head, err := br.Peek(2)
	if err != nil && err != io.EOF {
		f.Close()
		return nil, fmt.Errorf("telemetry %s: %w", path, err)
	}
	if len(head) < 2 || head[0] != gzipMagic[0] || head[1] != gzipMagic[1] {
		return readCloser{br, f}, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("telemetry %s: gzip: %w", path, err)
	}
	return readCloser{gzipErrors{zr, path}, f}, nil
}

// ReadFile parses the telemetry file at path, plain or gzip-compressed
// (Open), with Read; errors name the file.
func ReadFile(path string) (*Log, error) {
	rc, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return Read(rc, path)
}

// readCloser reads from r and closes c.
type readCloser struct {
	io.Reader
	c io.Closer
}

// Close closes the underlying file.
func (r readCloser) Close() error { return r.c.Close() }

// gzipErrors names the file and the format in a decompression error, so
// that a damaged GzipName is not reported as a JSON error.
type gzipErrors struct {
	r    io.Reader
	path string
}

// Read reads decompressed bytes; an error other than io.EOF is wrapped.
func (g gzipErrors) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("telemetry %s: gzip: %w", g.path, err)
	}
	return n, err
}

// unpack writes dir's GzipName, decompressed, to FileName (atomically: a
// temporary file, fsync, rename), for a resume to append to; it reports
// false when there is no GzipName. The compressed file is kept.
func unpack(dir string) (bool, error) {
	src := filepath.Join(dir, GzipName)
	if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	rc, err := Open(src)
	if err != nil {
		return false, err
	}
	defer rc.Close()
	dst := filepath.Join(dir, FileName)
	err = atomicfile.Write(dst, func(w io.Writer) error {
		n, err := io.Copy(w, io.LimitReader(rc, MaxUnpackedBytes+1))
		if err != nil {
			return err
		}
		if n > MaxUnpackedBytes {
			return fmt.Errorf("%s unpacks to more than MaxUnpackedBytes (%d bytes)", src, MaxUnpackedBytes)
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("telemetry: unpacking %s (remove it to start a fresh telemetry file): %w", src, err)
	}
	return true, nil
}
