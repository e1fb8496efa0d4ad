package telemetry

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/capstan-ml/capstan/capsnet/atomicfile"
	"github.com/capstan-ml/capstan/train/runfile"
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
// name. A FIFO, directory or device is refused without blocking
// (runfile.Open); a link the caller names is followed. Closing the result
// closes the file.
func Open(path string) (io.ReadCloser, error) {
	f, err := runfile.Open(path)
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
// false when there is no GzipName, or when its header line is not h (the
// resume then starts a fresh file without unpacking it). The compressed
// file is kept. What it writes is bounded by UnpackLimit(h).
func unpack(dir string, h Header) (bool, error) {
	src := filepath.Join(dir, GzipName)
	if err := runfile.Check(src); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	} else if err != nil { // a link is not followed out of the run directory
		return false, fmt.Errorf("telemetry: %w", err)
	}
	if ok, err := gzipHeaderIs(src, h); !ok || err != nil {
		return false, err
	}
	limit := UnpackLimit(h)
	rc, err := Open(src)
	if err != nil {
		return false, err
	}
	defer rc.Close()
	dst := filepath.Join(dir, FileName)
	err = atomicfile.Write(dst, func(w io.Writer) error {
		n, err := io.Copy(w, io.LimitReader(rc, limit+1))
		if err != nil {
			return err
		}
		if n > limit {
			return fmt.Errorf("%s unpacks to more than %d bytes (telemetry.MaxUnpackedBytes %d, or MaxLogBytes %d: %d records of at most %d bytes)", src, limit, MaxUnpackedBytes, MaxLogBytes, h.maxLogRecords(), maxRecordLine(h))
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("telemetry: unpacking %s (remove it to start a fresh telemetry file): %w", src, err)
	}
	return true, nil
}

// UnpackLimit is the most bytes a resume unpacks from a GzipName of
// header h: the header line and as many records as MaxLogBytes allows a
// Log of h's sizes to hold (Read would refuse more), each of at most the
// length the Writer gives a record of h's sizes; at most MaxUnpackedBytes.
func UnpackLimit(h Header) int64 {
	line, err := json.Marshal(h)
	if err != nil {
		return 0
	}
	return min(int64(len(line)+1)+h.maxLogRecords()*maxRecordLine(h), MaxUnpackedBytes)
}

// maxRecordLine is the longest line AppendRecord writes for a record of
// h's sizes: epoch and step of up to 13 digits, each value at most 15
// bytes with its comma (float32 in the shortest form, "1.1754942e-38"),
// brackets; at most MaxLineBytes+1.
func maxRecordLine(h Header) int64 {
	vals, rows := int64(0), int64(0)
	for l, L := range h.Layers {
		vals += int64(L.N)
		rows++
		if l > 0 {
			vals += int64(L.N) * int64(h.Layers[l-1].N)
			rows++
		}
	}
	fixed := int64(len(`{"epoch":,"step":,"max_norm":[],"grad_w":[]}` + "\n"))
	return min(fixed+2*13+16*vals+3*rows, int64(MaxLineBytes)+1)
}

// gzipHeaderIs reports whether the header line of the compressed
// telemetry file src is h's, as the Writer writes it, decompressing no
// more than that line (at most MaxLineBytes). A pooled log's header is
// errPooled; a line that is not h's is false, so the resume starts afresh.
func gzipHeaderIs(src string, h Header) (bool, error) {
	want, err := json.Marshal(h)
	if err != nil {
		return false, fmt.Errorf("telemetry %s: %w", src, err)
	}
	rc, err := Open(src)
	if err != nil {
		return false, err
	}
	defer rc.Close()
	br := bufio.NewReaderSize(io.LimitReader(rc, int64(MaxLineBytes)+1), 64<<10)
	var head []byte
	for {
		part, err := br.ReadSlice('\n')
		head = append(head, part...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF || (err == nil && len(head) > MaxLineBytes) {
			return false, nil // no whole header line within MaxLineBytes: not h's
		}
		if err != nil {
			return false, err
		}
		break
	}
	head = head[:len(head)-1]
	if string(head) == string(want) {
		return true, nil
	}
	if pooled(head) {
		return false, fmt.Errorf("telemetry %s: resume: %w", src, errPooled)
	}
	return false, nil
}
