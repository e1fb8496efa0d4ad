package telemetry

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/minio/simdjson-go"
)

// SIMDSupported reports whether this CPU can run the simdjson parser
// (ReadSIMD): amd64 with AVX2 and CLMUL.
func SIMDSupported() bool { return simdjson.SupportedCPU() }

// ReadSIMD parses a telemetry file with simdjson-go: blocks of whole lines
// (ChunkBytes) go through simdjson.ParseND, reusing one ParsedJson, and
// the records are read off its tape. It accepts exactly what ReadJSON
// accepts and gives the same Log: a block in which anything is not plain
// (a parse error, a value out of range, a key other than the four of a
// record or a repeated one, a number whose rounding to float32 is a tie)
// is parsed again by the encoding/json path, which then gives the result
// or the error with its line. It is an error on a CPU without support
// (SIMDSupported).
func ReadSIMD(r io.Reader, name string) (*Log, error) {
	if !SIMDSupported() {
		return nil, fmt.Errorf("telemetry %s: simdjson needs an amd64 CPU with AVX2 and CLMUL (use ReadJSON)", name)
	}
	p := &parser{name: name}
	return p.read(r, p.simdChunk)
}

// simdState is the SIMD path's reusable state.
type simdState struct {
	pj               *simdjson.ParsedJson
	it, root, el, ri simdjson.Iter
	obj              simdjson.Object
	arr, row         simdjson.Array
	fallbacks        int // blocks handed to the encoding/json path
}

// errPlain makes simdChunk hand the block to the encoding/json path.
var errPlain = errors.New("not plain")

// simdChunk parses a block of record lines with simdjson, or with
// encoding/json when the block is not plain (see ReadSIMD).
func (p *parser) simdChunk(b []byte) error {
	start, line := len(p.log.Records), p.line
	if err := p.simdBlock(b); err != nil {
		clear(p.log.Records[start:])
		p.log.Records, p.line = p.log.Records[:start], line
		p.simd.fallbacks++
		return p.jsonChunk(b)
	}
	return nil
}

// Record keys, as the Writer writes them.
const (
	keyEpoch = 1 << iota
	keyStep
	keyMaxNorm
	keyGradW
	keyAll = keyEpoch | keyStep | keyMaxNorm | keyGradW
)

func (p *parser) simdBlock(b []byte) error {
	s := &p.simd
	lines := 0
	n := p.line
	for rest := b; len(rest) > 0; lines++ {
		nl := bytes.IndexByte(rest, '\n')
		if p.preCheck(n+1+lines, rest[:nl]) != nil || len(p.log.Records)+lines >= MaxRecords {
			return errPlain
		}
		rest = rest[nl+1:]
	}
	pj, err := simdjson.ParseND(b, s.pj)
	if err != nil {
		return errPlain
	}
	s.pj = pj
	s.it = pj.Iter()
	for k := 0; k < lines; k++ {
		// One document per line: every line is framed '{' … '}', and
		// ParseND needs a newline between documents, so as many
		// documents as lines means none spans two.
		if s.it.Advance() != simdjson.TypeRoot {
			return errPlain
		}
		if t, _, err := s.it.Root(&s.root); err != nil || t != simdjson.TypeObject {
			return errPlain
		}
		if err := p.simdRecord(n + 1 + k); err != nil {
			return err
		}
	}
	if s.it.Advance() != simdjson.TypeNone {
		return errPlain
	}
	return nil
}

// simdRecord reads one record object (s.root) off the tape.
func (p *parser) simdRecord(n int) error {
	s := &p.simd
	obj, err := s.root.Object(&s.obj)
	if err != nil {
		return errPlain
	}
	rec, vals := p.newRecord()
	nl := len(p.log.Header.Layers)
	var epoch, step int64
	seen := 0
	for {
		name, t, err := obj.NextElementBytes(&s.el)
		if err != nil {
			return errPlain
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
		}
		if key == 0 || seen&key != 0 {
			return errPlain // another key (encoding/json matches keys case-insensitively) or a repeated one
		}
		seen |= key
		switch key {
		case keyEpoch, keyStep:
			if t != simdjson.TypeInt {
				return errPlain
			}
			v, err := s.el.Int()
			if err != nil {
				return errPlain
			}
			if key == keyEpoch {
				epoch = v
			} else {
				step = v
			}
		case keyMaxNorm:
			if err := p.simdRows(0, nl, t, vals); err != nil {
				return err
			}
		case keyGradW:
			if err := p.simdRows(nl, len(p.lens), t, vals[p.prefix(nl):]); err != nil {
				return err
			}
		}
	}
	if seen != keyAll {
		return errPlain
	}
	return p.add(n, rec, epoch, step)
}

// prefix is the number of values in rows 0..k-1.
func (p *parser) prefix(k int) int {
	t := 0
	for _, n := range p.lens[:k] {
		t += n
	}
	return t
}

// simdRows reads rows lo..hi-1 (an array of arrays of numbers, s.el) into
// vals.
func (p *parser) simdRows(lo, hi int, t simdjson.Type, vals []float32) error {
	s := &p.simd
	if t != simdjson.TypeArray {
		return errPlain
	}
	arr, err := s.el.Array(&s.arr)
	if err != nil {
		return errPlain
	}
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
		row, err := rows.Array(&s.row)
		if err != nil {
			return errPlain
		}
		s.ri = row.Iter()
		i := 0
		for ; ; i++ {
			et := s.ri.Advance()
			if et == simdjson.TypeNone {
				break
			}
			if i >= p.lens[k] {
				return errPlain
			}
			var v float32
			switch et {
			case simdjson.TypeFloat:
				d, err := s.ri.Float()
				if err != nil || isMidpoint(d) {
					return errPlain
				}
				v = float32(d)
			case simdjson.TypeInt:
				d, err := s.ri.Int()
				if err != nil {
					return errPlain
				}
				v = float32(d)
			case simdjson.TypeUint:
				d, err := s.ri.Uint()
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
		if i != p.lens[k] {
			return errPlain
		}
		vals = vals[i:]
	}
}

const maxFloat32 = 0x1.fffffep127
