package capsnet

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
)

// Tensor is one named float32 tensor of a safetensors file, in row-major
// order with its PyTorch shape.
type Tensor struct {
	Shape []int
	Data  []float32
}

// numElements returns the product of the shape.
func numElements(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// SafeTensors is the content of a safetensors file: tensors by name and the
// string metadata of the header's __metadata__ entry.
type SafeTensors struct {
	Tensors  map[string]Tensor
	Metadata map[string]string
}

// maxHeader bounds the JSON header a reader accepts (safetensors itself caps
// it at 100 MB); a larger value means a corrupt or foreign file.
const maxHeader = 100 << 20

type stEntry struct {
	DType   string  `json:"dtype"`
	Shape   []int   `json:"shape"`
	Offsets []int64 `json:"data_offsets"`
}

// ReadSafeTensors reads a safetensors file. Only F32 tensors are decoded (I8
// and F16 are reported as unsupported here). Every error names the file and
// the tensor at fault.
func ReadSafeTensors(path string) (*SafeTensors, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := decodeSafeTensors(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

func decodeSafeTensors(r io.Reader) (*SafeTensors, error) {
	var lenBuf [8]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, fmt.Errorf("not a safetensors file: truncated before the 8-byte header length")
	}
	hlen := binary.LittleEndian.Uint64(lenBuf[:])
	if hlen < 2 || hlen > maxHeader {
		return nil, fmt.Errorf("not a safetensors file: header length %d out of range", hlen)
	}
	hdr := make([]byte, hlen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, fmt.Errorf("truncated: header of %d bytes incomplete", hlen)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &raw); err != nil {
		return nil, fmt.Errorf("corrupt JSON header: %v", err)
	}
	st := &SafeTensors{Tensors: map[string]Tensor{}, Metadata: map[string]string{}}
	type span struct {
		name  string
		e     stEntry
		count int
	}
	var spans []span
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &st.Metadata); err != nil {
				return nil, fmt.Errorf("corrupt __metadata__ (must map strings to strings): %v", err)
			}
			continue
		}
		var e stEntry
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("tensor %q: corrupt header entry: %v", name, err)
		}
		if e.DType != "F32" {
			return nil, fmt.Errorf("tensor %q: dtype %s not supported (F32 only)", name, e.DType)
		}
		if len(e.Offsets) != 2 || e.Offsets[0] < 0 || e.Offsets[1] < e.Offsets[0] {
			return nil, fmt.Errorf("tensor %q: bad data_offsets %v", name, e.Offsets)
		}
		n := 1
		for _, s := range e.Shape {
			if s < 0 || (s > 0 && n > math.MaxInt32/s) {
				return nil, fmt.Errorf("tensor %q: bad shape %v", name, e.Shape)
			}
			n *= s
		}
		if int64(n)*4 != e.Offsets[1]-e.Offsets[0] {
			return nil, fmt.Errorf("tensor %q: shape %v needs %d bytes, data_offsets give %d", name, e.Shape, n*4, e.Offsets[1]-e.Offsets[0])
		}
		spans = append(spans, span{name, e, n})
	}
	sort.Slice(spans, func(a, b int) bool { return spans[a].e.Offsets[0] < spans[b].e.Offsets[0] })
	var pos int64
	buf := make([]byte, 0)
	for _, s := range spans {
		if s.e.Offsets[0] < pos {
			return nil, fmt.Errorf("tensor %q: data overlaps the previous tensor", s.name)
		}
		if skip := s.e.Offsets[0] - pos; skip > 0 {
			if _, err := io.CopyN(io.Discard, r, skip); err != nil {
				return nil, fmt.Errorf("tensor %q: truncated data", s.name)
			}
		}
		nb := s.count * 4
		if cap(buf) < nb {
			buf = make([]byte, nb)
		}
		buf = buf[:nb]
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, fmt.Errorf("tensor %q: truncated data (file ends inside it)", s.name)
		}
		data := make([]float32, s.count)
		for i := range data {
			data[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
		}
		st.Tensors[s.name] = Tensor{Shape: append([]int{}, s.e.Shape...), Data: data}
		pos = s.e.Offsets[1]
	}
	return st, nil
}

// WriteSafeTensors writes tensors (sorted by name) and metadata to path
// atomically: it writes a temporary file in the same directory, fsyncs it,
// renames it over path and fsyncs the directory, so path is never left
// half-written (a full disk leaves the old file intact and returns an error).
func WriteSafeTensors(path string, tensors map[string]Tensor, metadata map[string]string) error {
	return writeAtomic(path, func(w io.Writer) error { return encodeSafeTensors(w, tensors, metadata) })
}

func encodeSafeTensors(w io.Writer, tensors map[string]Tensor, metadata map[string]string) error {
	names := make([]string, 0, len(tensors))
	for n := range tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	hdr := map[string]any{}
	if len(metadata) > 0 {
		hdr["__metadata__"] = metadata
	}
	var off int64
	for _, n := range names {
		t := tensors[n]
		if numElements(t.Shape) != len(t.Data) {
			return fmt.Errorf("tensor %q: shape %v does not match %d values", n, t.Shape, len(t.Data))
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		end := off + int64(len(t.Data))*4
		hdr[n] = stEntry{DType: "F32", Shape: shape, Offsets: []int64{off, end}}
		off = end
	}
	hb, err := json.Marshal(hdr)
	if err != nil {
		return err
	}
	for len(hb)%8 != 0 {
		hb = append(hb, ' ')
	}
	var lb [8]byte
	binary.LittleEndian.PutUint64(lb[:], uint64(len(hb)))
	if _, err := w.Write(lb[:]); err != nil {
		return err
	}
	if _, err := w.Write(hb); err != nil {
		return err
	}
	buf := make([]byte, 0, 1<<16)
	for _, n := range names {
		for _, v := range tensors[n].Data {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
			if len(buf) == cap(buf) {
				if _, err := w.Write(buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
		}
	}
	_, err = w.Write(buf)
	return err
}

// writeAtomic writes path via a temporary file in the same directory: write,
// fsync, close, rename, fsync the directory. On any error the temporary file
// is removed and path is untouched.
func writeAtomic(path string, fill func(io.Writer) error) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("writing %s: %w", path, err)
		}
	}()
	if err = fill(tmp); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, derr := os.Open(dir); derr == nil {
		serr := d.Sync()
		d.Close()
		if serr != nil && !errors.Is(serr, os.ErrInvalid) {
			return serr
		}
	}
	return nil
}
