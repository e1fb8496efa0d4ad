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
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/capstan-ml/capstan/capsnet/atomicfile"
	"github.com/capstan-ml/capstan/train/runfile"
)

// Form is the form of the telemetry file a run writes.
type Form int

const (
	// Gzip is GzipName, written as a sequence of gzip members (RFC 1952
	// allows concatenated members; they decode as one stream): the header
	// line is the first member, then every MemberRecords records, and
	// every Sync (each checkpoint commit), close a member. The default.
	Gzip Form = iota
	// Plain is FileName, plain NDJSON: one write per record.
	Plain
)

// ParseForm returns the Form named s: "gz" (Gzip) or "ndjson" (Plain),
// the values of train's -telemetry-format flag.
func ParseForm(s string) (Form, error) {
	switch s {
	case "gz":
		return Gzip, nil
	case "ndjson":
		return Plain, nil
	}
	return 0, fmt.Errorf("telemetry format %q: want gz or ndjson", s)
}

// String is the form's name for ParseForm.
func (f Form) String() string {
	if f == Plain {
		return "ndjson"
	}
	return "gz"
}

// Name is the file name of the form in a run directory.
func (f Form) Name() string {
	if f == Plain {
		return FileName
	}
	return GzipName
}

// MemberRecords is the most records a gzip member of a Gzip file holds:
// a run killed between two Syncs loses at most the records of the open
// member (they were not flushed), and a reader of a killed run's file
// reads every record before it. 16 deep-model records (about 210 KB of
// text) compress 0.5% worse than one member for the whole file (deflate's
// window is 32 KiB). A package variable.
var MemberRecords = 16

// Writer appends one Record per line to a run directory's telemetry file
// after its Header line, plain (FileName) or gzip-compressed (GzipName,
// in members: Form). The file follows the run's checkpoints (see
// train.Run): records are appended as steps complete, Sync makes them
// durable (closing the open gzip member first) and is called before
// every checkpoint commit, and a resume (Resume) cuts the file back to
// the checkpoint's step, so after a kill at any instant the file holds
// every recorded step up to the checkpoint exactly once. Write does not
// allocate once its line buffer has grown to a record's size. A file
// holds w_norm (Record.WNorm) in every record or in none: the first
// record decides, and a file resumed whose records have none (written
// before w_norm existed) goes on without it (Write drops it).
type Writer struct {
	f    *os.File
	path string
	h    Header
	buf  []byte
	last int // step of the last record in the file (0: none)
	// wnorm is whether the file's records hold w_norm: 0 not decided
	// (no record yet), 1 they do, -1 they do not.
	wnorm int8
	// Gzip form: records are compressed by zw, a member of n records
	// (0: none open), into bw, which is flushed when the member closes.
	zw *gzip.Writer
	bw *bufio.Writer
	n  int
	// Gzip form: base is the log's GzipName, part the number of the part
	// (PartName) that f is (0: base itself), sw counts f's bytes.
	base string
	part int
	sw   *sizeWriter
}

// Create starts a fresh telemetry file of form form in dir (replacing
// any): the header line is written atomically (temporary file, fsync,
// rename; in Gzip form as a gzip member of its own), records are
// appended after it. The other form's file of an earlier run in dir, a
// regular file, is removed, so that it is not found (Find) or continued
// in place of this one, and so are the parts (PartName) of an earlier
// GzipName.
func Create(dir string, h Header, form Form) (*Writer, error) {
	path := filepath.Join(dir, form.Name())
	if err := h.check(); err != nil {
		return nil, fmt.Errorf("telemetry %s: %w", path, err)
	}
	line, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("telemetry %s: %w", path, err)
	}
	line = append(line, '\n')
	err = atomicfile.Write(path, func(w io.Writer) error {
		if form == Gzip {
			return writeMember(w, bytes.NewReader(line))
		}
		_, err := w.Write(line)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	// The parts of an earlier run's compressed log, after this run's
	// GzipName replaced it or before its GzipName goes: neither may be
	// read after the new file.
	if err := removeParts(filepath.Join(dir, GzipName)); err != nil {
		return nil, err
	}
	other := filepath.Join(dir, (1 - form).Name())
	if err := runfile.Check(other); err == nil {
		if err := os.Remove(other); err != nil {
			return nil, fmt.Errorf("telemetry: removing the earlier run's %s: %w", other, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	return open(path, h, 0, 0, form)
}

// writeMember writes the bytes of r to w as one gzip member.
func writeMember(w io.Writer, r io.Reader) error {
	zw := gzip.NewWriter(w)
	if _, err := io.Copy(zw, r); err != nil {
		return err
	}
	return zw.Close()
}

// open opens the telemetry file at path for appending, never through a
// link and never a FIFO or device (runfile.OpenFile).
// last is the step of its last record, wnorm whether its records hold
// w_norm (Writer.wnorm).
func open(path string, h Header, last int, wnorm int8, form Form) (*Writer, error) {
	return openPart(path, path, 0, h, last, wnorm, form)
}

// openPart opens the telemetry file at path, the part-th part (0: the
// file itself) of the log base, for appending (see open).
func openPart(base, path string, part int, h Header, last int, wnorm int8, form Form) (*Writer, error) {
	f, err := runfile.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	w := &Writer{f: f, path: path, h: h, last: last, wnorm: wnorm}
	if form == Gzip {
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("telemetry: %w", err)
		}
		w.base, w.part, w.sw = base, part, &sizeWriter{f: f, n: st.Size()}
		w.bw = bufio.NewWriterSize(w.sw, 64<<10)
		w.zw = gzip.NewWriter(w.bw)
	}
	return w, nil
}

// Resume continues the telemetry file in dir of a run resumed from a
// checkpoint taken after optimizer step step. Records of later steps
// (written after that checkpoint by a run that was then killed) and a
// torn last line are cut off, so the resumed run appends its steps after
// the checkpoint's exactly once. The file is continued in the form it
// has: FileName when it is there (the runs before the Gzip default, and
// -telemetry-format ndjson), else GzipName, in place (resumeGzip: a
// truncated last member is cut off, new members are appended), its
// decompressed bytes read at most UnpackLimit(h). A missing file, or one
// whose header is not h (another model, another run (Header.Run), or not
// a telemetry file), is replaced by a fresh one of form form (Create):
// the records of steps before the checkpoint are then not in it. A
// FileName or GzipName that is a link, FIFO, directory or device is
// refused (runfile.ErrNotRegular), never followed, cut or waited on.
func Resume(dir string, h Header, step int, form Form) (*Writer, error) {
	path := filepath.Join(dir, FileName)
	if err := h.check(); err != nil {
		return nil, fmt.Errorf("telemetry %s: %w", path, err)
	}
	f, err := runfile.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		// The compressed form, written so or committed so.
		w, ok, gerr := resumeGzip(dir, h, step)
		if gerr != nil || ok {
			return w, gerr
		}
		return Create(dir, h, form)
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	keep, last, wnorm, ok, err := resumePoint(f, h, step)
	if err == nil && ok {
		if err = f.Truncate(keep); err == nil {
			err = f.Sync()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("telemetry %s: resume at step %d: %w", path, step, err)
	}
	if !ok {
		return Create(dir, h, form)
	}
	return open(path, h, last, wnorm, Plain)
}

// resumePoint scans a telemetry file: keep is the length of its header
// and of the complete lines after it whose steps increase and are ≤ step
// (last is the last one's step); ok is false when the file's header is not
// h. wnorm tells whether the kept records hold w_norm (Writer.wnorm: 0
// when none is kept). Only the start of each line is read (the writer
// puts epoch and step first), and whether it holds the w_norm key.
func resumePoint(f *os.File, h Header, step int) (keep int64, last int, wnorm int8, ok bool, err error) {
	want, err := json.Marshal(h)
	if err != nil {
		return 0, 0, 0, false, err
	}
	br := bufio.NewReaderSize(f, 64<<10)
	head, err := br.ReadSlice('\n')
	if err != nil || string(head[:len(head)-1]) != string(want) {
		if pooled(head) {
			return 0, 0, 0, false, errPooled
		}
		return 0, 0, 0, false, nil // not this run's header: start afresh
	}
	keep = int64(len(head))
	for {
		n, prefix, w, err := readLine(br)
		if err == io.EOF {
			return keep, last, wnorm, true, nil // end of file, or a torn last line
		}
		if err != nil {
			return 0, 0, 0, false, err
		}
		s, okStep := lineStep(prefix)
		if !okStep || s <= last || s > step {
			return keep, last, wnorm, true, nil
		}
		keep += n
		last = s
		wnorm = wnormOf(w)
	}
}

// wnormOf is Writer.wnorm of a file whose last record has w_norm (w) or not.
func wnormOf(w bool) int8 {
	if w {
		return 1
	}
	return -1
}

// errPooled is Resume's error for a pooled log (Log.Pool), which holds
// windows of steps and cannot be continued step by step.
var errPooled = errors.New("the telemetry is max-pooled (its header has \"pool\"): a pooled log cannot be continued; move it aside to start a new one")

// pooled reports whether a header line is a pooled log's.
func pooled(line []byte) bool {
	var h struct {
		Pool *Pooling `json:"pool"`
	}
	return json.Unmarshal(line, &h) == nil && h.Pool != nil
}

// lineStep returns the step of a record line as the Writer writes it:
// {"epoch":E,"step":S,...
func lineStep(b []byte) (int, bool) {
	const e, s = `{"epoch":`, `,"step":`
	if len(b) < len(e) || string(b[:len(e)]) != e {
		return 0, false
	}
	b = b[len(e):]
	i := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == 0 || len(b[i:]) < len(s) || string(b[i:i+len(s)]) != s {
		return 0, false
	}
	b = b[i+len(s):]
	// uint64: v stops growing once it passes maxCount, so v·10 + 9 stays
	// below 2^44 and cannot wrap, even where int has 32 bits.
	var v uint64
	for i = 0; i < len(b) && b[i] >= '0' && b[i] <= '9' && v <= maxCount; i++ {
		v = v*10 + uint64(b[i]-'0')
	}
	if i == 0 || i == len(b) || b[i] != ',' || v > maxCount {
		return 0, false
	}
	return int(v), true
}

// Write appends r (its step after the last one written, its shapes the
// header's, its values finite and ≥ 0) as one line. It does not allocate
// once its buffer has grown to a record's size. A record without w_norm
// in a file whose records have it is an error; in a file whose records
// have none, the record is written without it.
func (w *Writer) Write(r *Record) error {
	if err := w.h.checkRecord(r); err != nil {
		return fmt.Errorf("telemetry %s: step %d: %w", w.path, r.Step, err)
	}
	if r.Step <= w.last {
		return fmt.Errorf("telemetry %s: step %d after step %d", w.path, r.Step, w.last)
	}
	if w.wnorm > 0 && r.WNorm == nil {
		return fmt.Errorf("telemetry %s: step %d has no w_norm, the file's records have it", w.path, r.Step)
	}
	rec := *r
	if w.wnorm < 0 {
		rec.WNorm = nil // a file of records without w_norm (a resumed older log)
	}
	w.buf = AppendRecord(w.buf[:0], &rec)
	if w.wnorm == 0 {
		w.wnorm = wnormOf(rec.WNorm != nil)
	}
	if w.zw == nil {
		if _, err := w.f.Write(w.buf); err != nil {
			return fmt.Errorf("telemetry: %w", err)
		}
		w.last = r.Step
		return nil
	}
	if w.n == 0 {
		if w.sw.n >= PartBytes {
			if err := w.nextPart(); err != nil {
				return err
			}
		}
		w.zw.Reset(w.bw)
	}
	if _, err := w.zw.Write(w.buf); err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	w.n++
	w.last = r.Step
	if w.n >= MemberRecords {
		return w.endMember()
	}
	return nil
}

// endMember closes the open gzip member, if any, and writes it out.
func (w *Writer) endMember() error {
	if w.zw == nil || w.n == 0 {
		return nil
	}
	w.n = 0
	if err := w.zw.Close(); err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	if err := w.bw.Flush(); err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	return nil
}

// Sync makes the records written so far durable (fsync), the open gzip
// member closed and written first: the run calls it before it commits a
// checkpoint.
func (w *Writer) Sync() error {
	if err := w.endMember(); err != nil {
		return err
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	return nil
}

// Close syncs and closes the file.
func (w *Writer) Close() error {
	err := w.Sync()
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("telemetry: %w", cerr)
	}
	return err
}

// AppendRecord appends r's line (JSON, newline-terminated, fields in the
// order epoch, step, max_norm, grad_w, then w_norm when r has it; floats
// in the shortest form that reads back as the same float32) to dst.
func AppendRecord(dst []byte, r *Record) []byte {
	dst = append(dst, `{"epoch":`...)
	dst = strconv.AppendInt(dst, int64(r.Epoch), 10)
	dst = append(dst, `,"step":`...)
	dst = strconv.AppendInt(dst, int64(r.Step), 10)
	dst = append(dst, `,"max_norm":`...)
	dst = appendRows(dst, r.MaxNorm)
	dst = append(dst, `,"grad_w":`...)
	dst = appendRows(dst, r.GradW)
	if r.WNorm != nil {
		dst = append(dst, `,"w_norm":`...)
		dst = appendRows(dst, r.WNorm)
	}
	return append(dst, "}\n"...)
}

func appendRows(dst []byte, rows [][]float32) []byte {
	dst = append(dst, '[')
	for i, row := range rows {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '[')
		for k, v := range row {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst = strconv.AppendFloat(dst, float64(v), 'g', -1, 32)
		}
		dst = append(dst, ']')
	}
	return append(dst, ']')
}

// checkRecord checks a record against the header: counts, shapes, finite
// values ≥ 0; WNorm nil or of GradW's shapes.
func (h *Header) checkRecord(r *Record) error {
	if r.Epoch < 1 || r.Epoch > maxCount || r.Step < 1 || r.Step > maxCount {
		return fmt.Errorf("epoch %d and step %d must be in 1..%s", r.Epoch, r.Step, maxCountText)
	}
	if len(r.MaxNorm) != len(h.Layers) || len(r.GradW) != len(h.Layers)-1 {
		return fmt.Errorf("%d max_norm and %d grad_w rows, the header's %d layers want %d and %d", len(r.MaxNorm), len(r.GradW), len(h.Layers), len(h.Layers), len(h.Layers)-1)
	}
	if r.WNorm != nil && len(r.WNorm) != len(h.Layers)-1 {
		return fmt.Errorf("%d w_norm rows, the header's %d layers want %d", len(r.WNorm), len(h.Layers), len(h.Layers)-1)
	}
	for l, L := range h.Layers {
		if err := checkRow("max_norm", l, r.MaxNorm[l], L.N); err != nil {
			return err
		}
		if l > 0 {
			if err := checkRow("grad_w", l-1, r.GradW[l-1], L.N*h.Layers[l-1].N); err != nil {
				return err
			}
			if r.WNorm != nil {
				if err := checkRow("w_norm", l-1, r.WNorm[l-1], L.N*h.Layers[l-1].N); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func checkRow(field string, l int, row []float32, n int) error {
	if len(row) != n {
		return fmt.Errorf("%s[%d] has %d values, want %d", field, l, len(row), n)
	}
	for i, v := range row {
		if !(v >= 0) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("%s[%d][%d] is %v, want a finite number ≥ 0", field, l, i, v)
		}
	}
	return nil
}

// readLine reads one line of any length from br (through its newline, or to
// the end of the stream or an error) without keeping it: its length n, its
// first 64 bytes, enough for the step field a resume looks for, and
// whether it holds the key w_norm as the Writer writes it.
func readLine(br *bufio.Reader) (n int64, prefix []byte, wnorm bool, err error) {
	var edge [2*len(wnormKey) - 2]byte // the end of a part and the start of the next
	for {
		var part []byte
		part, err = br.ReadSlice('\n')
		if prefix == nil {
			prefix = append([]byte(nil), part[:min(len(part), 64)]...)
		} else if !wnorm {
			// The key across the boundary of two parts.
			m := len(wnormKey) - 1
			k := copy(edge[m:], part)
			wnorm = bytes.Contains(edge[:m+k], []byte(wnormKey))
		}
		wnorm = wnorm || bytes.Contains(part, []byte(wnormKey))
		if len(part) >= len(wnormKey)-1 {
			copy(edge[:], part[len(part)-(len(wnormKey)-1):])
		}
		n += int64(len(part))
		if err != bufio.ErrBufferFull {
			return n, prefix, wnorm, err
		}
	}
}

// wnormKey is the w_norm key as AppendRecord writes it.
const wnormKey = `,"w_norm":`
