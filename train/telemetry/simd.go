package telemetry

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/minio/simdjson-go"
)

// SIMDSupported reports whether this CPU can run the simdjson parser
// (ReadSIMD): amd64 with AVX2 and CLMUL.
func SIMDSupported() bool { return simdjson.SupportedCPU() }

// simdWorkers is the number of blocks ReadSIMD parses at once (0: one per
// CPU, at most 4). Benchmarks set 1 to compare single-threaded speeds.
var simdWorkers = 0

// ReadSIMD parses a telemetry file with simdjson-go: blocks of whole lines
// (ChunkBytes) go through simdjson.ParseND, each worker reusing its
// ParsedJson, up to one block per CPU at once, and the records are read
// off the tapes. It accepts exactly what ReadJSON accepts and gives the
// same Log: a block in which anything is not plain (a parse error, a
// value out of range, a key other than the four of a record and the
// optional w_norm or a repeated one, a number whose rounding to float32
// is a tie, records with and without w_norm) is parsed again, in
// file order, by the encoding/json path, which then gives the result or
// the error with its line. It is an error on a CPU without support
// (SIMDSupported).
func ReadSIMD(r io.Reader, name string) (*Log, error) {
	if !SIMDSupported() {
		return nil, fmt.Errorf("telemetry %s: simdjson needs an amd64 CPU with AVX2 and CLMUL (use ReadJSON)", name)
	}
	p := &parser{name: name}
	workers := simdWorkers
	if workers <= 0 {
		workers = min(runtime.GOMAXPROCS(0), 4)
	}
	pl := &pipeline{p: p, work: make(chan *block), max: workers + 1}
	for range workers {
		go pl.worker()
	}
	l, err := p.read(r, pl.chunk)
	if ferr := pl.finish(); ferr != nil {
		return nil, ferr // an error on an earlier line than err's
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

// pipeline hands blocks to the workers and merges their records in file
// order.
type pipeline struct {
	p       *parser
	work    chan *block
	pending []*block // dispatched, in file order
	max     int      // blocks in flight
	free    [][]byte // buffers of merged blocks
	err     error    // the first error merging
}

// block is a block of record lines and what a worker made of it: its
// records, or errPlain.
type block struct {
	buf  []byte
	recs []Record
	err  error
	done chan struct{}
}

func (pl *pipeline) worker() {
	w := &simdWorker{p: pl.p}
	for b := range pl.work {
		b.recs, b.err = w.decode(b.buf)
		close(b.done)
	}
}

// chunk dispatches a copy of a block (read reuses its buffer).
func (pl *pipeline) chunk(b []byte) error {
	for len(pl.pending) >= pl.max {
		if err := pl.mergeOldest(); err != nil {
			return err
		}
	}
	var buf []byte
	if n := len(pl.free); n > 0 {
		buf, pl.free = pl.free[n-1][:0], pl.free[:n-1]
	}
	blk := &block{buf: append(buf, b...), done: make(chan struct{})}
	pl.pending = append(pl.pending, blk)
	pl.work <- blk
	return nil
}

func (pl *pipeline) mergeOldest() error {
	b := pl.pending[0]
	pl.pending = pl.pending[1:]
	<-b.done
	if pl.err == nil {
		pl.err = pl.p.merge(b.buf, b.recs, b.err)
	}
	pl.free = append(pl.free, b.buf)
	return pl.err
}

// finish merges the blocks still in flight and stops the workers.
func (pl *pipeline) finish() error {
	for len(pl.pending) > 0 {
		pl.mergeOldest()
	}
	close(pl.work)
	return pl.err
}

// errPlain makes a block go to the encoding/json path.
var errPlain = errors.New("not plain")

// merge appends a block's records to the log, or parses the block with
// encoding/json when the worker could not, or when its records do not
// follow the log's (steps, MaxRecords, MaxLogBytes, w_norm in all records
// or none).
func (p *parser) merge(b []byte, recs []Record, err error) error {
	if err == nil && len(p.log.Records)+len(recs) <= MaxRecords {
		wnorm := recs[0].WNorm != nil
		k := len(p.log.Records)
		follows := k == 0 || recs[0].Step > p.log.Records[k-1].Step && recs[0].Epoch >= p.log.Records[k-1].Epoch && wnorm == (p.wnorm > 0)
		if follows && int64(k+len(recs)) <= p.log.Header.maxLogRecords(wnorm) {
			p.log.Records = append(p.log.Records, recs...)
			p.wnorm = wnormOf(wnorm)
			p.line += len(recs)
			return nil
		}
	}
	p.fallbacks++
	return p.jsonChunk(b)
}

// Record keys, as the Writer writes them.
const (
	keyEpoch = 1 << iota
	keyStep
	keyMaxNorm
	keyGradW
	keyWNorm                                              // optional
	keyAll   = keyEpoch | keyStep | keyMaxNorm | keyGradW // required
)

// simdWorker parses blocks with simdjson; p is only read (the header's
// shapes), so workers run concurrently.
type simdWorker struct {
	p              *parser
	msg            []byte // the block as one JSON array
	pj             *simdjson.ParsedJson
	it, root, rec  simdjson.Iter
	el, ri         simdjson.Iter
	obj            simdjson.Object
	recs, arr, row simdjson.Array
	// scratch holds a record's values (with w_norm) until the record
	// is known to hold w_norm or not.
	scratch []float32
}

// decode returns the records of a block of lines, or errPlain.
//
// The block goes to simdjson as one array, its newlines turned into
// commas: simdjson.Parse reuses the ParsedJson's tape and buffers from
// one block to the next, which ParseND (v0.4.5) does not. Every line is
// framed '{' … '}' and a record holds no '{' but its own, so if every
// element is a record and there are as many as lines, each line is one
// record, as for ReadJSON.
func (w *simdWorker) decode(b []byte) ([]Record, error) {
	w.msg = append(append(w.msg[:0], '['), b...)
	lines := 0
	for off := 0; off < len(b); lines++ {
		nl := bytes.IndexByte(b[off:], '\n')
		if w.p.lineCheck(b[off:off+nl]) != nil || lines >= MaxRecords {
			return nil, errPlain
		}
		off += nl + 1
		w.msg[off] = ','
	}
	w.msg[len(w.msg)-1] = ']'
	pj, err := simdjson.Parse(w.msg, w.pj)
	if err != nil {
		return nil, errPlain
	}
	w.pj = pj
	w.it = pj.Iter()
	if w.it.Advance() != simdjson.TypeRoot {
		return nil, errPlain
	}
	if t, _, err := w.it.Root(&w.root); err != nil || t != simdjson.TypeArray {
		return nil, errPlain
	}
	arr, err := w.root.Array(&w.recs)
	if err != nil {
		return nil, errPlain
	}
	w.rec = arr.Iter()
	recs := make([]Record, 0, lines)
	for k := 0; k < lines; k++ {
		if w.rec.Advance() != simdjson.TypeObject {
			return nil, errPlain
		}
		rec, err := w.record()
		if err != nil {
			return nil, err
		}
		if k > 0 && (rec.Step <= recs[k-1].Step || rec.Epoch < recs[k-1].Epoch || (rec.WNorm != nil) != (recs[0].WNorm != nil)) {
			return nil, errPlain
		}
		recs = append(recs, rec)
	}
	if w.rec.Advance() != simdjson.TypeNone || w.it.Advance() != simdjson.TypeNone {
		return nil, errPlain
	}
	return recs, nil
}

// record reads one record object (w.rec) off the tape.
func (w *simdWorker) record() (Record, error) {
	obj, err := w.rec.Object(&w.obj)
	if err != nil {
		return Record{}, errPlain
	}
	p := w.p
	if len(w.scratch) != p.total+p.wtotal {
		w.scratch = make([]float32, p.total+p.wtotal)
	}
	vals := w.scratch
	nl := len(p.log.Header.Layers)
	var epoch, step int64
	seen := 0
	for {
		name, t, err := obj.NextElementBytes(&w.el)
		if err != nil {
			return Record{}, errPlain
		}
		if t == simdjson.TypeNone {
			break
		}
		var key int
		switch string(name) {
		case "epoch":
			key = keyEpoch
		case "step":
			key = keyStep
		case "max_norm":
			key = keyMaxNorm
		case "grad_w":
			key = keyGradW
		case "w_norm":
			key = keyWNorm
		}
		if key == 0 || seen&key != 0 {
			return Record{}, errPlain // another key (encoding/json matches keys case-insensitively) or a repeated one
		}
		seen |= key
		switch key {
		case keyEpoch, keyStep:
			if t != simdjson.TypeInt {
				return Record{}, errPlain
			}
			v, err := w.el.Int()
			if err != nil || v < 1 || v > maxCount {
				return Record{}, errPlain
			}
			if key == keyEpoch {
				epoch = v
			} else {
				step = v
			}
		case keyMaxNorm:
			if err := w.rows(0, nl, t, vals); err != nil {
				return Record{}, err
			}
		case keyGradW:
			if err := w.rows(nl, p.nrows, t, vals[p.prefix(nl):]); err != nil {
				return Record{}, err
			}
		case keyWNorm:
			if err := w.rows(p.nrows, len(p.lens), t, vals[p.total:]); err != nil {
				return Record{}, err
			}
		}
	}
	if seen&keyAll != keyAll {
		return Record{}, errPlain
	}
	rec, out := p.newRecord(seen&keyWNorm != 0)
	copy(out, vals)
	rec.Epoch, rec.Step = int(epoch), int(step)
	return rec, nil
}

// prefix is the number of values in rows 0..k-1.
func (p *parser) prefix(k int) int {
	t := 0
	for _, n := range p.lens[:k] {
		t += n
	}
	return t
}

// rows reads rows lo..hi-1 (an array of arrays of numbers, w.el) into
// vals.
func (w *simdWorker) rows(lo, hi int, t simdjson.Type, vals []float32) error {
	if t != simdjson.TypeArray {
		return errPlain
	}
	arr, err := w.el.Array(&w.arr)
	if err != nil {
		return errPlain
	}
	lens := w.p.lens
	rows := arr.Iter()
	for k := lo; ; k++ {
		rt := rows.Advance()
		if rt == simdjson.TypeNone {
			if k != hi {
				return errPlain
			}
			return nil
		}
		if k >= hi || rt != simdjson.TypeArray {
			return errPlain
		}
		row, err := rows.Array(&w.row)
		if err != nil {
			return errPlain
		}
		w.ri = row.Iter()
		i := 0
		for ; ; i++ {
			et := w.ri.Advance()
			if et == simdjson.TypeNone {
				break
			}
			if i >= lens[k] {
				return errPlain
			}
			var v float32
			switch et {
			case simdjson.TypeFloat:
				d, err := w.ri.Float()
				if err != nil || isMidpoint(d) {
					return errPlain
				}
				v = float32(d)
			case simdjson.TypeInt:
				d, err := w.ri.Int()
				if err != nil {
					return errPlain
				}
				v = float32(d)
			case simdjson.TypeUint:
				d, err := w.ri.Uint()
				if err != nil {
					return errPlain
				}
				v = float32(d)
			default:
				return errPlain
			}
			if v == 0 {
				v = 0 // -0 reads as 0
			}
			if !(v >= 0) || v > maxFloat32 {
				return errPlain
			}
			vals[i] = v
		}
		if i != lens[k] {
			return errPlain
		}
		vals = vals[i:]
	}
}

const maxFloat32 = 0x1.fffffep127
