package telemetry

import (
	"bufio"
	"bytes"
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

// GzipName is the compressed form of FileName, the one a run writes by
// default (Gzip): the telemetry of a long run is about 1.4 MB of text per
// epoch of the deep model at batch 512 and compresses about 2.7×. A run
// writes it in gzip members (Writer); a committed run directory may hold
// it as one member (gzip -9 -k telemetry.ndjson, bench/repro/pack.sh).
// Find and Open read it as they read the plain file; Resume continues it
// in place.
const GzipName = FileName + ".gz"

// MaxUnpackedBytes bounds the decompressed bytes Resume reads from a
// GzipName file to find its resume point (a gzip stream can expand
// without limit). A package variable: raise it for longer runs.
var MaxUnpackedBytes int64 = 1 << 36

// gzipMagic starts every gzip stream (RFC 1952).
var gzipMagic = [2]byte{0x1f, 0x8b}

// Find returns the telemetry file of a run directory: FileName when it
// exists, else GzipName when it exists, else "" (the run has none). When
// both exist the plain file is the one a resumed run appends to, so it is
// the newer one. Parts of a GzipName without it are an error (Parts).
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
	gz := filepath.Join(dir, GzipName)
	if parts, err := Parts(gz); err != nil {
		return "", err
	} else if len(parts) > 0 {
		return "", fmt.Errorf("telemetry %s: missing, but its part %s is there (a log's parts are read after it): restore it", gz, parts[0])
	}
	return "", nil
}

// Open opens a telemetry file for reading, plain or gzip-compressed: a
// file that starts with gzip's magic bytes is decompressed, whatever its
// name, its members (Writer) as one stream. A compressed file that ends
// truncated (a killed run's last member, not flushed whole) reads up to
// its last complete line: the torn line is dropped, as Resume drops it;
// a damaged one (bad checksum, bad member header) is an error. A FIFO,
// directory or device is refused without blocking (runfile.Open); a link
// the caller names is followed. Closing the result closes the file.
func Open(path string) (io.ReadCloser, error) {
	r, c, err := openParts(path)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(r, 64<<10)
	head, err := br.Peek(2)
	if err != nil && err != io.EOF {
		c.Close()
		return nil, fmt.Errorf("telemetry %s: %w", path, err)
	}
	if len(head) < 2 || head[0] != gzipMagic[0] || head[1] != gzipMagic[1] {
		if _, single := r.(*os.File); !single {
			c.Close()
			return nil, fmt.Errorf("telemetry %s: not gzip-compressed, yet it has parts (%s): only a compressed log goes on in parts", path, PartName(filepath.Base(path), 1))
		}
		return readCloser{br, c}, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("telemetry %s: gzip: %w", path, err)
	}
	return readCloser{gzipErrors{&cutTorn{r: zr, buf: make([]byte, 256<<10)}, path}, c}, nil
}

// cutTorn passes on the bytes of r up to its last newline and holds back
// the rest of the line until its newline comes: when r ends truncated
// (io.ErrUnexpectedEOF, gzip's error for a stream cut anywhere in a
// member) the held part, a torn line, is dropped and the stream ends
// (io.EOF). A line longer than MaxLineBytes is passed on undecided (the
// reader refuses it).
type cutTorn struct {
	r           io.Reader
	buf         []byte
	lo, nl, end int // buf[lo:nl] is ready, buf[nl:end] held
	err         error
}

// Read reads the ready bytes.
func (c *cutTorn) Read(p []byte) (int, error) {
	for c.lo == c.nl {
		if c.err != nil {
			if c.err == io.EOF && c.nl < c.end {
				c.nl = c.end // a last line without newline: the reader says so
				break
			}
			return 0, c.err
		}
		c.end = copy(c.buf, c.buf[c.nl:c.end])
		c.lo, c.nl = 0, 0
		if c.end == len(c.buf) {
			if len(c.buf) > MaxLineBytes {
				c.nl = c.end
				break
			}
			c.buf = append(c.buf, make([]byte, len(c.buf))...)
		}
		n, err := c.r.Read(c.buf[c.end:])
		if i := bytes.LastIndexByte(c.buf[c.end:c.end+n], '\n'); i >= 0 {
			c.nl = c.end + i + 1
		}
		c.end += n
		if errors.Is(err, io.ErrUnexpectedEOF) {
			c.end, err = c.nl, io.EOF
		}
		c.err = err
	}
	n := copy(p, c.buf[c.lo:c.nl])
	c.lo += n
	return n, nil
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

// resumeGzip continues dir's GzipName (see Resume) when its header line
// is h's: it keeps the file's bytes up to the end of the last gzip member
// whose records all have increasing steps ≤ step, and cuts the rest (a
// kill leaves at most a truncated last member, after the last Sync); a
// member holding records on both sides of the cut (a file compressed
// whole, bench/repro/pack.sh), or truncated after complete lines, is
// rewritten (atomically: temporary file, fsync, rename) with the members
// before it copied and its kept lines as a new member. ok is false when
// there is no GzipName or its header is not h. A damaged member (not a
// truncated one) is an error, and the file is left as it was.
func resumeGzip(dir string, h Header, step int) (w *Writer, ok bool, err error) {
	path := filepath.Join(dir, GzipName)
	if err := runfile.Check(path); errors.Is(err, fs.ErrNotExist) {
		if parts, perr := Parts(path); perr != nil || len(parts) > 0 {
			if perr == nil {
				perr = fmt.Errorf("telemetry %s: missing, but its part %s is there: restore it, or remove the parts to start a fresh log", path, parts[0])
			}
			return nil, false, perr
		}
		return nil, false, nil
	} else if err != nil { // a link is not followed out of the run directory
		return nil, false, fmt.Errorf("telemetry: %w", err)
	}
	if ok, err := gzipHeaderIs(path, h); !ok || err != nil {
		return nil, false, err
	}
	s, err := openSegments(path)
	if err != nil {
		return nil, false, err
	}
	defer s.close()
	p, err := gzipResumePoint(s.reader(), h, step)
	var i int
	if err == nil {
		// The segment the kept bytes end in; the later ones hold only
		// records after the checkpoint and go, the last first.
		var off int64
		i, off = s.locate(p.keep, p.rewrite > 0)
		if err = s.cutAfter(i); err == nil && p.rewrite > 0 {
			f := s.files[i]
			err = atomicfile.Write(s.path[i], func(w io.Writer) error {
				if _, err := io.Copy(w, io.NewSectionReader(f, 0, off)); err != nil {
					return err
				}
				// A member lies in one segment (the Writer starts a part
				// at a member boundary).
				zr, err := gzip.NewReader(bufio.NewReader(io.NewSectionReader(f, off, s.size[i]-off)))
				if err != nil {
					return err
				}
				zr.Multistream(false)
				return writeMember(w, io.LimitReader(zr, p.rewrite))
			})
		} else if err == nil {
			if err = s.files[i].Truncate(off); err == nil {
				err = s.files[i].Sync()
			}
		}
	}
	if err != nil {
		return nil, false, fmt.Errorf("telemetry %s: resume at step %d (remove it to start a fresh telemetry file): %w", path, step, err)
	}
	w, err = openPart(path, s.path[i], i, h, p.last, p.wnorm, Gzip)
	return w, err == nil, err
}

// gzipPoint is where a resume cuts a GzipName file: the first keep bytes
// are kept as they are, then the first rewrite decompressed bytes of the
// member at keep (0: none) as a member of their own; last is the step of
// the last record kept, wnorm whether the kept records hold w_norm
// (Writer.wnorm).
type gzipPoint struct {
	keep, rewrite int64
	last          int
	wnorm         int8
}

// countingReader counts the bytes gzip reads from r; it is an
// io.ByteReader, so gzip reads no further than the end of a member.
type countingReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

// gzipResumePoint scans the members of the compressed telemetry file f,
// whose header line is h's (gzipHeaderIs), for a resume at step: lines are
// kept while their steps increase and are ≤ step (only each line's start
// is looked at, as resumePoint does); the members that hold only kept
// lines are kept whole, and the first member that does not (a later
// step, a torn or truncated line) is kept up to its last kept line.
// Decompressing more than UnpackLimit(h) bytes, or a damaged member, is
// an error.
func gzipResumePoint(f io.Reader, h Header, step int) (gzipPoint, error) {
	limit := UnpackLimit(h)
	cr := &countingReader{r: bufio.NewReaderSize(f, 64<<10)}
	zr, err := gzip.NewReader(cr)
	if err != nil {
		return gzipPoint{}, err
	}
	var p gzipPoint
	var total int64 // decompressed bytes read
	lr := bufio.NewReaderSize(zr, 64<<10)
	header := true
	var start int64 // the member's offset in the file
	for {
		zr.Multistream(false)
		var kept int64 // bytes of the member's kept lines
		for {
			n, prefix, w, err := readLine(lr)
			if total += n; total > limit {
				return gzipPoint{}, errLimit(h, limit)
			}
			if errors.Is(err, io.ErrUnexpectedEOF) || (err == io.EOF && n > 0) {
				// A truncated member, or a member that ends inside a line.
				p.keep, p.rewrite = start, kept
				return p, nil
			}
			if err == io.EOF {
				break // the member's end: all its lines are kept
			}
			if err != nil {
				return gzipPoint{}, err
			}
			if header {
				header = false // gzipHeaderIs has checked it
			} else if s, ok := lineStep(prefix); !ok || s <= p.last || s > step {
				// The rest of the member is cut; its checksum is checked.
				m, err := io.Copy(io.Discard, io.LimitReader(lr, limit-total+1))
				if total += m; total > limit {
					return gzipPoint{}, errLimit(h, limit)
				}
				if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
					return gzipPoint{}, err
				}
				p.keep, p.rewrite = start, kept
				return p, nil
			} else {
				p.last, p.wnorm = s, wnormOf(w)
			}
			kept += n
		}
		p.keep, start = cr.n, cr.n
		err := zr.Reset(cr)
		if err == io.EOF {
			return p, nil // the end of the file
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return p, nil // a truncated member header
		}
		if err != nil {
			return gzipPoint{}, err
		}
		lr.Reset(zr)
	}
}

// errLimit is gzipResumePoint's error beyond UnpackLimit(h).
func errLimit(h Header, limit int64) error {
	return fmt.Errorf("more than %d bytes decompressed (telemetry.MaxUnpackedBytes %d, or MaxLogBytes %d: %d records of at most %d bytes, or %d with w_norm of at most %d)", limit, MaxUnpackedBytes, MaxLogBytes, h.maxLogRecords(false), maxRecordLine(h, false), h.maxLogRecords(true), maxRecordLine(h, true))
}

// UnpackLimit is the most decompressed bytes a resume reads from a
// GzipName of header h: the header line and as many records as MaxLogBytes allows a
// Log of h's sizes to hold (Read would refuse more), each of at most the
// length the Writer gives a record of h's sizes, with w_norm or without
// (whichever allows more bytes); at most MaxUnpackedBytes.
func UnpackLimit(h Header) int64 {
	line, err := json.Marshal(h)
	if err != nil {
		return 0
	}
	recs := max(h.maxLogRecords(false)*maxRecordLine(h, false), h.maxLogRecords(true)*maxRecordLine(h, true))
	return min(int64(len(line)+1)+recs, MaxUnpackedBytes)
}

// maxRecordLine is the longest line AppendRecord writes for a record of
// h's sizes, with w_norm (wnorm) or without: epoch and step of up to 13
// digits, each value at most 15 bytes with its comma (float32 in the
// shortest form, "1.1754942e-38"), brackets; at most MaxLineBytes+1.
func maxRecordLine(h Header, wnorm bool) int64 {
	vals, rows := h.recordSize(wnorm)
	fixed := int64(len(`{"epoch":,"step":,"max_norm":[],"grad_w":[]}` + "\n"))
	if wnorm {
		fixed += int64(len(wnormKey + "[]"))
	}
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
