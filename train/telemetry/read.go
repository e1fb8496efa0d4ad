package telemetry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unsafe"
)

// Limits of what Read accepts from a file, checked before anything of
// that size is allocated; a file beyond them is an error naming the limit.
// Package variables: raise them for larger models or runs.
var (
	// MaxLayers bounds the header's capsule layers (primary included).
	MaxLayers = 64
	// MaxCapsules bounds one layer's capsule count N (and MaxDim its D).
	MaxCapsules = 1 << 14
	// MaxDim bounds one layer's capsule dimension D.
	MaxDim = 1 << 10
	// MaxLineBytes bounds one line (a record of the deep model is about
	// 13 KB, 22 KB with w_norm); a header whose records could not fit in
	// it is refused.
	MaxLineBytes = 16 << 20
	// MaxRecords bounds the number of records (30 epochs of the deep model
	// at batch 128 are 12,870).
	MaxRecords = 1 << 24
	// MaxLogBytes bounds the memory a parsed Log may hold in total: its
	// records times the bytes of one (RecordBytes: its values and row
	// headers, with w_norm when the log's records have it). It is checked
	// as blocks of lines arrive, before their records are allocated (for
	// the first block, whose records may or may not hold w_norm, at the
	// size of a record without it, then again as each record is added),
	// so a small file of many short records (a gzip of zero records
	// expands a thousandfold) is refused, not parsed out of memory. 30
	// epochs of the deep model at batch 128 are about 55 MB (105 MB with
	// w_norm); 2 GiB holds the 25,800 records, with w_norm, of 30 epochs
	// of the default sabour-small model at batch 64 on full MNIST
	// (1.25 GB).
	MaxLogBytes int64 = 2 << 30
	// ChunkBytes is the size of the blocks of whole lines the parsers
	// work on (and, with MaxLineBytes, their buffer): memory is the Log
	// plus about one block, not a multiple of the file.
	ChunkBytes = 4 << 20
)

// maxCount bounds epoch and step numbers (as train's checkpoints do):
// 2^40, or on a 32-bit GOARCH math.MaxInt (2^31 − 1), the most an int
// holds.
const maxCount = min(1<<40, math.MaxInt)

// maxCountText is maxCount as the errors print it: "2^40" on a 64-bit
// GOARCH, the number on a 32-bit one.
var maxCountText = func() string {
	if maxCount == 1<<40 {
		return "2^40"
	}
	return strconv.Itoa(maxCount)
}()

// Read parses a telemetry file (name is used in errors) with simdjson
// (ReadSIMD) when the CPU supports it, else with encoding/json (ReadJSON).
// Both give the same Log, or an error for the same files: one line naming
// the file and line.
func Read(r io.Reader, name string) (*Log, error) {
	if SIMDSupported() {
		return ReadSIMD(r, name)
	}
	return ReadJSON(r, name)
}

// ReadJSON parses a telemetry file with encoding/json, one line at a time.
func ReadJSON(r io.Reader, name string) (*Log, error) {
	p := &parser{name: name}
	return p.read(r, p.jsonChunk)
}

// parser holds the state shared by both parsing paths.
type parser struct {
	name   string
	log    Log
	lens   []int // row lengths: max_norm rows, grad_w rows, then w_norm rows
	nrows  int   // rows of a record without w_norm (max_norm and grad_w)
	total  int   // values per record without w_norm
	wtotal int   // values of w_norm
	min    int   // shortest possible record line
	// wnorm is whether the log's records hold w_norm: 0 not known yet (no
	// record), 1 they do, -1 they do not.
	wnorm int8
	line  int // number of the last line parsed (1: header)
	cut   int // number of the last line read handed over (line ≤ cut)
	// fallbacks counts the blocks the SIMD path handed to encoding/json.
	fallbacks int
}

// errf is an error at line n of the file.
func (p *parser) errf(n int, format string, args ...any) error {
	return fmt.Errorf("telemetry %s: line %d: %s", p.name, n, fmt.Sprintf(format, args...))
}

// read splits r into blocks of whole lines (at most about
// max(ChunkBytes, MaxLineBytes) bytes), parses the header, and hands each
// block of record lines to chunk.
func (p *parser) read(r io.Reader, chunk func(b []byte) error) (*Log, error) {
	limit := max(ChunkBytes, MaxLineBytes+1)
	buf := make([]byte, 0, min(64<<10, limit))
	grow := func() {
		g := make([]byte, len(buf), min(2*cap(buf), limit))
		copy(g, buf)
		buf = g
	}
	eof := false
	for {
		for !eof && len(buf) < cap(buf) {
			n, err := r.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			if err == io.EOF {
				eof = true
			} else if err != nil {
				return nil, fmt.Errorf("telemetry %s: %w", p.name, err)
			}
		}
		end := bytes.LastIndexByte(buf, '\n') + 1
		if end == 0 { // no whole line in the buffer
			switch {
			case len(buf) == 0 && p.cut == 0:
				return nil, fmt.Errorf("telemetry %s: empty file (no header line)", p.name)
			case len(buf) == 0:
				return &p.log, nil
			case len(buf) > MaxLineBytes:
				return nil, p.errf(p.cut+1, "longer than %d bytes (telemetry.MaxLineBytes)", MaxLineBytes)
			case eof:
				return nil, p.errf(p.cut+1, "truncated: the last line has no newline")
			}
			grow()
			continue
		}
		block := buf[:end]
		if p.cut == 0 {
			nl := bytes.IndexByte(block, '\n')
			if err := p.header(block[:nl]); err != nil {
				return nil, err
			}
			block = block[nl+1:]
			p.cut = 1
		}
		if len(block) > 0 {
			if err := p.bound(bytes.Count(block, []byte{'\n'})); err != nil {
				return nil, err
			}
			if err := chunk(block); err != nil {
				return nil, err
			}
			p.cut += bytes.Count(block, []byte{'\n'})
		}
		buf = buf[:copy(buf, buf[end:])]
		if !eof && cap(buf) < ChunkBytes {
			grow() // blocks of ChunkBytes for long files, small buffers for short ones
		}
	}
}

// header parses and checks the first line.
func (p *parser) header(b []byte) error {
	p.line = 1
	if len(b) > MaxLineBytes {
		return p.errf(1, "longer than %d bytes (telemetry.MaxLineBytes)", MaxLineBytes)
	}
	if err := framed(b); err != nil {
		return p.errf(1, "header: %v", err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	h := &p.log.Header
	if err := d.Decode(h); err != nil {
		return p.errf(1, "header: %v", err)
	}
	if err := h.check(); err != nil {
		return p.errf(1, "header: %v", err)
	}
	for _, L := range h.Layers {
		p.lens = append(p.lens, L.N)
	}
	for l := 1; l < len(h.Layers); l++ {
		p.lens = append(p.lens, h.Layers[l].N*h.Layers[l-1].N)
	}
	p.nrows = len(p.lens)
	p.lens = append(p.lens, p.lens[len(h.Layers):]...) // w_norm: grad_w's shapes
	for k, n := range p.lens {
		if k < p.nrows {
			p.total += n
		} else {
			p.wtotal += n
		}
	}
	// Each value takes at least two bytes ("0," or a row's "0]"), each row
	// its "[" and a comma but the last of max_norm and of grad_w.
	p.min = 2*p.total + 2*p.nrows - 2 + len(`{"epoch":1,"step":1,"max_norm":[],"grad_w":[]}`)
	if p.min > MaxLineBytes {
		return p.errf(1, "header: a record of %d values would exceed %d bytes (telemetry.MaxLineBytes)", p.total, MaxLineBytes)
	}
	return nil
}

// RecordBytes is the memory one parsed record of the header's sizes
// takes, with w_norm (wnorm) or without: its values (4 bytes each), its
// rows' slice headers and the Record itself. MaxLogBytes / RecordBytes
// records fit in a Log.
func (h *Header) RecordBytes(wnorm bool) int64 {
	vals, rows := h.recordSize(wnorm)
	return 4*vals + 24*rows + int64(unsafe.Sizeof(Record{}))
}

// recordSize is the number of values and of rows of a record of the
// header's sizes, with w_norm (wnorm) or without.
func (h *Header) recordSize(wnorm bool) (vals, rows int64) {
	for l, L := range h.Layers {
		vals += int64(L.N)
		rows++
		if l > 0 {
			n := int64(L.N) * int64(h.Layers[l-1].N)
			vals += n
			rows++
			if wnorm {
				vals += n
				rows++
			}
		}
	}
	return vals, rows
}

// maxLogRecords is the number of records of the header's sizes, with
// w_norm (wnorm) or without, that MaxLogBytes and MaxRecords allow.
func (h *Header) maxLogRecords(wnorm bool) int64 {
	return min(MaxLogBytes/h.RecordBytes(wnorm), int64(MaxRecords))
}

// bound checks, before a block of n more record lines is parsed, that the
// Log would stay within MaxLogBytes, at the size of the log's records
// (without w_norm while no record is parsed: add checks each record
// again); the error names the first line beyond it.
func (p *parser) bound(n int) error {
	limit := p.log.Header.maxLogRecords(p.wnorm > 0)
	if int64(p.cut-1)+int64(n) <= limit || limit >= int64(MaxRecords) {
		return nil // MaxRecords is checked line by line
	}
	return p.logErr(p.wnorm > 0)
}

// logErr is the error of a log beyond MaxLogBytes, its records with w_norm
// (wnorm) or without: it names the first line beyond it.
func (p *parser) logErr(wnorm bool) error {
	h := &p.log.Header
	limit := h.maxLogRecords(wnorm)
	return p.errf(int(limit)+2, "more than %d records of %d bytes: the log would exceed %d bytes (telemetry.MaxLogBytes)", limit, h.RecordBytes(wnorm), MaxLogBytes)
}

// check checks a header's format and sizes (against the package limits).
func (h *Header) check() error {
	if h.Format != Format {
		return fmt.Errorf("format %q, want %q", h.Format, Format)
	}
	if h.Batch < 1 || h.Batch > maxCount {
		return fmt.Errorf("batch %d must be in 1..%s", h.Batch, maxCountText)
	}
	if len(h.Run) > MaxRunBytes {
		return fmt.Errorf("run of %d bytes, want at most %d", len(h.Run), MaxRunBytes)
	}
	if h.Pool != nil {
		if err := h.Pool.check(); err != nil {
			return err
		}
	}
	if len(h.Layers) < 2 || len(h.Layers) > MaxLayers {
		return fmt.Errorf("%d layers, want 2 to %d (telemetry.MaxLayers)", len(h.Layers), MaxLayers)
	}
	for l, L := range h.Layers {
		if L.N < 1 || L.N > MaxCapsules || L.D < 1 || L.D > MaxDim {
			return fmt.Errorf("layer %d (%q): %d capsules of dimension %d, want 1 to %d of 1 to %d (telemetry.MaxCapsules, MaxDim)", l, L.Name, L.N, L.D, MaxCapsules, MaxDim)
		}
	}
	return nil
}

// framed checks that a line is one JSON object alone on it: '{' first,
// '}' last (both parsers require it; it keeps one document per line).
func framed(b []byte) error {
	if len(b) == 0 || b[0] != '{' || b[len(b)-1] != '}' {
		return errors.New("not a JSON object on one line ('{' … '}')")
	}
	return nil
}

// recordJSON is what encoding/json decodes a record line into.
type recordJSON struct {
	Epoch   *int64      `json:"epoch"`
	Step    *int64      `json:"step"`
	MaxNorm [][]float32 `json:"max_norm"`
	GradW   [][]float32 `json:"grad_w"`
	WNorm   [][]float32 `json:"w_norm"`
}

// jsonChunk parses a block of record lines with encoding/json.
func (p *parser) jsonChunk(b []byte) error {
	for len(b) > 0 {
		nl := bytes.IndexByte(b, '\n')
		if err := p.jsonLine(b[:nl]); err != nil {
			return err
		}
		b = b[nl+1:]
	}
	return nil
}

// jsonLine parses one record line with encoding/json (the SIMD path's
// fallback too).
func (p *parser) jsonLine(b []byte) error {
	n := p.line + 1
	if err := p.preCheck(n, b); err != nil {
		return err
	}
	if bytes.Contains(b, []byte("null")) {
		// encoding/json decodes null as "no value" (0, an empty row):
		// refuse it, as the SIMD path does.
		return p.errf(n, "null in a record")
	}
	var rj recordJSON
	if err := json.Unmarshal(b, &rj); err != nil {
		return p.errf(n, "%v", err)
	}
	if rj.Epoch == nil || rj.Step == nil || rj.MaxNorm == nil || rj.GradW == nil {
		return p.errf(n, "a record needs epoch, step, max_norm and grad_w")
	}
	nl := len(p.log.Header.Layers)
	if len(rj.MaxNorm) != nl || len(rj.GradW) != nl-1 {
		return p.errf(n, "%d max_norm and %d grad_w rows, the header's %d layers want %d and %d", len(rj.MaxNorm), len(rj.GradW), nl, nl, nl-1)
	}
	wnorm := rj.WNorm != nil
	if wnorm && len(rj.WNorm) != nl-1 {
		return p.errf(n, "%d w_norm rows, the header's %d layers want %d", len(rj.WNorm), nl, nl-1)
	}
	if err := p.wnormCheck(n, wnorm); err != nil {
		return err
	}
	rec, vals := p.newRecord(wnorm)
	rows := append(append(rj.MaxNorm, rj.GradW...), rj.WNorm...)
	for k, row := range rows {
		if len(row) != p.lens[k] {
			return p.rowErr(n, k, len(row))
		}
		for i, v := range row {
			if v == 0 {
				v = 0 // -0 reads as 0
			}
			if !(v >= 0) {
				return p.valueErr(n, k, i, float64(v))
			}
			vals[i] = v
		}
		vals = vals[len(row):]
	}
	return p.add(n, rec, *rj.Epoch, *rj.Step)
}

// preCheck checks what both paths check before parsing a record line:
// the record count, the line's length and framing.
func (p *parser) preCheck(n int, b []byte) error {
	if len(p.log.Records) >= MaxRecords {
		return p.errf(n, "more than %d records (telemetry.MaxRecords)", MaxRecords)
	}
	if err := p.lineCheck(b); err != nil {
		return p.errf(n, "%v", err)
	}
	return nil
}

// lineCheck checks a record line's length and framing.
func (p *parser) lineCheck(b []byte) error {
	if len(b) > MaxLineBytes {
		return fmt.Errorf("longer than %d bytes (telemetry.MaxLineBytes)", MaxLineBytes)
	}
	if err := framed(b); err != nil {
		return err
	}
	if len(b) < p.min {
		return fmt.Errorf("%d bytes, too short for a record of %d values", len(b), p.total)
	}
	return nil
}

// wnormCheck checks, before line n's record is added, that it holds
// w_norm (wnorm) as the log's records before it do, and that the log of
// such records stays within MaxLogBytes.
func (p *parser) wnormCheck(n int, wnorm bool) error {
	k := len(p.log.Records)
	if k > 0 && wnorm != (p.wnorm > 0) {
		others := "have it"
		if wnorm {
			others = "have none"
		}
		return p.errf(n, "this record %s w_norm, the %d before it %s: a log has w_norm in every record or in none", hasNot(wnorm), k, others)
	}
	if limit := p.log.Header.maxLogRecords(wnorm); int64(k) >= limit && limit < int64(MaxRecords) {
		return p.logErr(wnorm)
	}
	return nil
}

// newRecord allocates a record's rows, with w_norm (wnorm) or without,
// in one block of values.
func (p *parser) newRecord(wnorm bool) (Record, []float32) {
	lens := p.lens[:p.nrows]
	total := p.total
	if wnorm {
		lens, total = p.lens, p.total+p.wtotal
	}
	vals := make([]float32, total)
	nl := len(p.log.Header.Layers)
	rows := make([][]float32, len(lens))
	v := vals
	for k, n := range lens {
		rows[k], v = v[:n:n], v[n:]
	}
	rec := Record{MaxNorm: rows[:nl:nl], GradW: rows[nl:p.nrows:p.nrows]}
	if wnorm {
		rec.WNorm = rows[p.nrows:]
	}
	return rec, vals
}

func (p *parser) rowErr(n, k, got int) error {
	field, l := p.rowName(k)
	return p.errf(n, "%s[%d] has %d values, the header wants %d", field, l, got, p.lens[k])
}

func (p *parser) valueErr(n, k, i int, v float64) error {
	field, l := p.rowName(k)
	return p.errf(n, "%s[%d][%d] is %v, want a finite number ≥ 0", field, l, i, v)
}

func (p *parser) rowName(k int) (string, int) {
	nl := len(p.log.Header.Layers)
	switch {
	case k >= p.nrows:
		return "w_norm", k - p.nrows
	case k >= nl:
		return "grad_w", k - nl
	}
	return "max_norm", k
}

// add checks a record's epoch and step and appends it.
func (p *parser) add(n int, rec Record, epoch, step int64) error {
	if epoch < 1 || epoch > maxCount || step < 1 || step > maxCount {
		return p.errf(n, "epoch %d and step %d must be in 1..%s", epoch, step, maxCountText)
	}
	if k := len(p.log.Records); k > 0 {
		prev := &p.log.Records[k-1]
		if step <= int64(prev.Step) || epoch < int64(prev.Epoch) {
			return p.errf(n, "epoch %d step %d after epoch %d step %d: steps must increase", epoch, step, prev.Epoch, prev.Step)
		}
	}
	rec.Epoch, rec.Step = int(epoch), int(step)
	p.log.Records = append(p.log.Records, rec)
	p.wnorm = wnormOf(rec.WNorm != nil)
	p.line = n
	return nil
}

// isMidpoint reports whether a float64 lies exactly halfway between two
// adjacent float32 values (or at the overflow threshold), where rounding
// it to float32 could differ from rounding the decimal it came from.
func isMidpoint(d float64) bool {
	b := math.Float64bits(d)
	if e := b >> 52 & 0x7ff; e >= 0x381 && e < 0x47f {
		// Normal float32 range (2^-126 ≤ |d| < 2^128): rounding drops
		// the 29 low bits of d's mantissa, a tie is exactly 1 0…0.
		return b&(1<<29-1) == 1<<28
	}
	f := float32(d)
	if float64(f) == d {
		return false
	}
	if math.IsInf(float64(f), 0) {
		return math.Abs(d) == 0x1.ffffffp127 // MaxFloat32 + half an ulp
	}
	g := math.Nextafter32(f, float32(math.Copysign(math.Inf(1), d-float64(f))))
	return (float64(f)+float64(g))/2 == d
}
