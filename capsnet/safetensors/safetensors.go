package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"

	"github.com/capstan-ml/capstan/capsnet/atomicfile"
)

// Tensor is one named tensor of a safetensors file, in row-major order
// with its PyTorch shape: an F32 tensor (Data, I8 nil) or an I8 tensor (I8
// non-nil, Data nil). Read and Decode fill exactly one of the two (an
// empty tensor gets an empty, non-nil slice); Encode writes I8 when I8 is
// non-nil and F32 otherwise, and refuses a tensor with both.
type Tensor struct {
	Shape []int
	Data  []float32
	// I8 holds the values of an I8 tensor (int8 quantized weights, see
	// package quant); nil for an F32 tensor.
	I8 []int8
}

// DType returns the tensor's safetensors dtype: "I8" when I8 is non-nil,
// else "F32".
func (t Tensor) DType() string {
	if t.I8 != nil {
		return "I8"
	}
	return "F32"
}

// Len returns the number of values the tensor holds (of its dtype).
func (t Tensor) Len() int {
	if t.I8 != nil {
		return len(t.I8)
	}
	return len(t.Data)
}

// NumElements returns the product of the shape (1 for a scalar).
func NumElements(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// File is the content of a safetensors file: tensors by name and the string
// metadata of the header's __metadata__ entry (never nil after Read).
type File struct {
	Tensors  map[string]Tensor
	Metadata map[string]string
}

// MaxHeader bounds the JSON header a reader accepts (safetensors itself caps
// it at 100 MB); a larger value means a corrupt or foreign file.
const MaxHeader = 100 << 20

// Limits of the reader, checked from the header (and the file's size)
// before any tensor data is allocated, so that a hostile or corrupt header
// is an error naming the file, the tensor and the limit, not an
// out-of-memory death. They are variables: a program that reads larger
// files raises them before calling Read or Decode (not concurrently with
// a read).
var (
	// MaxTensorBytes bounds the data of one tensor (1 GiB by default).
	MaxTensorBytes int64 = 1 << 30
	// MaxFileBytes bounds a whole file: header and data (4 GiB by default).
	MaxFileBytes int64 = 4 << 30
	// MaxTensors bounds the number of tensors of a file (100000 by default).
	MaxTensors = 100000
	// MaxDims bounds the number of dimensions of a tensor's shape (8 by
	// default).
	MaxDims = 8
)

// readChunk is the size of the reads of tensor data: data is decoded chunk
// by chunk, and a tensor's slice grows with the bytes that actually
// arrive, so a stream shorter than its declared size never makes Decode
// allocate the declared size.
const readChunk = 64 << 10

// gib formats a byte count for the limit errors.
func gib(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", b)
}

// dtypeSize is the element size of every dtype of the format; Read decodes
// F32 and I8 only and names the others as unsupported.
var dtypeSize = map[string]int{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"I64": 8, "U64": 8, "F64": 8,
}

// entry is one tensor's header entry. Its sizes are int64 so that a file's
// shape is decoded, then checked against the limits, alike on every GOARCH
// (an int has 32 bits on 386 and arm); checkEntry turns it into ints.
type entry struct {
	DType   string  `json:"dtype"`
	Shape   []int64 `json:"shape"`
	Offsets []int64 `json:"data_offsets"`
}

// Read reads and validates a safetensors file: the header length and JSON,
// every entry's dtype (F32 and I8 are decoded), shape and data_offsets, checked
// against the file's size and the limits (MaxFileBytes, MaxTensorBytes,
// MaxTensors, MaxDims) before any data is read; the data section must be
// covered exactly, without holes, overlaps or trailing bytes, as the format
// requires. Every error names the file and, where one is at fault, the
// tensor.
func Read(path string) (*File, error) {
	f, st, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The size comes from Stat: a tensor's memory can be allocated whole
	// once the header has been checked against it and the limits.
	out, err := decode(f, st.Size(), true)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// openFile opens path for reading when it is a regular file (a link to
// one included). A directory would read as a truncated file, and opening
// a FIFO or a device could block or never end: both are refused with one
// line before anything is opened.
func openFile(path string) (*os.File, os.FileInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	if err := regular(path, st); err != nil {
		return nil, nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	if st, err = f.Stat(); err == nil {
		err = regular(path, st) // swapped since the first look
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// regular returns an error naming path when st is not a regular file's.
func regular(path string, st os.FileInfo) error {
	switch m := st.Mode(); {
	case m.IsRegular():
		return nil
	case m.IsDir():
		return fmt.Errorf("%s is a directory, not a safetensors file", path)
	case m&os.ModeNamedPipe != 0:
		return fmt.Errorf("%s is a FIFO, not a safetensors file", path)
	default:
		return fmt.Errorf("%s is not a regular file (mode %v), not a safetensors file", path, m.Type())
	}
}

// Decode reads a safetensors stream of size bytes from r, with the checks
// of Read. size need not be exact: a stream that ends early is a
// "truncated" error, and Decode allocates in proportion to the bytes it
// actually reads (tensor data arrives in chunks), never the declared size
// up front.
func Decode(r io.Reader, size int64) (*File, error) { return decode(r, size, false) }

// span is one tensor of a header, checked, with its element count.
type span struct {
	name  string
	e     entry
	shape []int // e.Shape, checked; fresh for each span, handed out as is
	count int
}

// decodeHeader reads the header of a stream of size bytes and checks it
// and the layout of the data section against size and the limits; it
// returns the metadata and the tensors' spans in the order of their data.
func decodeHeader(r io.Reader, size int64, exact bool) (map[string]string, []span, error) {
	if size < 0 {
		return nil, nil, fmt.Errorf("negative size %d", size)
	}
	if size > MaxFileBytes {
		return nil, nil, fmt.Errorf("file of %s, more than the limit of %s (safetensors.MaxFileBytes; raise it to read larger files)", gib(size), gib(MaxFileBytes))
	}
	var lenBuf [8]byte
	if _, err := io.ReadFull(r, lenBuf[:]); err != nil {
		return nil, nil, fmt.Errorf("not a safetensors file: truncated before the 8-byte header length")
	}
	hlen := binary.LittleEndian.Uint64(lenBuf[:])
	if hlen < 2 || hlen > MaxHeader {
		return nil, nil, fmt.Errorf("not a safetensors file: header length %d out of range", hlen)
	}
	if int64(hlen) > size-8 {
		return nil, nil, fmt.Errorf("truncated: header of %d bytes, file of %d", hlen, size)
	}
	var hdr []byte
	if exact {
		hdr = make([]byte, hlen)
		if _, err := io.ReadFull(r, hdr); err != nil {
			return nil, nil, fmt.Errorf("truncated: header of %d bytes incomplete", hlen)
		}
	} else {
		// Grows with what arrives: hlen may be up to MaxHeader in a short
		// stream.
		b, err := io.ReadAll(io.LimitReader(r, int64(hlen)))
		if err != nil || uint64(len(b)) != hlen {
			return nil, nil, fmt.Errorf("truncated: header of %d bytes incomplete", hlen)
		}
		hdr = b
	}
	out := &File{Metadata: map[string]string{}}
	spans, err := parseHeader(hdr, out)
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(spans, func(a, b int) bool {
		if spans[a].e.Offsets[0] != spans[b].e.Offsets[0] {
			return spans[a].e.Offsets[0] < spans[b].e.Offsets[0]
		}
		return spans[a].e.Offsets[1] < spans[b].e.Offsets[1]
	})
	// Validate the layout against the file before reading any data.
	dataSize := size - 8 - int64(hlen)
	var pos int64
	for _, s := range spans {
		switch {
		case s.e.Offsets[0] < pos:
			return nil, nil, fmt.Errorf("tensor %q: data_offsets %v overlap the previous tensor (which ends at %d)", s.name, s.e.Offsets, pos)
		case s.e.Offsets[0] > pos:
			return nil, nil, fmt.Errorf("tensor %q: hole in the data before offset %d (previous tensor ends at %d)", s.name, s.e.Offsets[0], pos)
		case s.e.Offsets[1] > dataSize:
			return nil, nil, fmt.Errorf("tensor %q: truncated: data_offsets %v beyond the %d data bytes of the file", s.name, s.e.Offsets, dataSize)
		}
		pos = s.e.Offsets[1]
	}
	if pos != dataSize {
		return nil, nil, fmt.Errorf("%d bytes after the last tensor's data (tensors end at %d of %d data bytes)", dataSize-pos, pos, dataSize)
	}
	return out.Metadata, spans, nil
}

// Info is one tensor's header entry, checked: its dtype ("F32" or "I8")
// and shape.
type Info struct {
	DType string
	Shape []int
}

// Header is the header of a safetensors file, checked as Read checks it,
// without the tensors' data: each tensor's dtype and shape by name, and the
// metadata (never nil).
type Header struct {
	Tensors  map[string]Info
	Metadata map[string]string
}

// ReadHeader reads and validates the header of a safetensors file with
// every check of Read that needs no tensor data (limits, dtypes, shapes,
// data_offsets against the file's size, exact coverage of the data
// section), and reads no data: a caller checks the tensors it expects
// before Read allocates them.
func ReadHeader(path string) (*Header, error) {
	f, st, err := openFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	meta, spans, err := decodeHeader(f, st.Size(), true)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	h := &Header{Tensors: make(map[string]Info, len(spans)), Metadata: meta}
	for _, s := range spans {
		h.Tensors[s.name] = Info{DType: s.e.DType, Shape: s.shape}
	}
	return h, nil
}

// decode is Read and Decode; exact says size is the stream's true size
// (from Stat), so each tensor's slice can be allocated at once.
func decode(r io.Reader, size int64, exact bool) (*File, error) {
	meta, spans, err := decodeHeader(r, size, exact)
	if err != nil {
		return nil, err
	}
	out := &File{Tensors: make(map[string]Tensor, len(spans)), Metadata: meta}
	var chunk []byte
	for _, s := range spans {
		if chunk == nil && s.count > 0 {
			chunk = make([]byte, readChunk)
		}
		var t Tensor
		var err error
		if s.e.DType == "I8" {
			t.I8, err = readI8(r, s.count, exact, chunk)
		} else {
			t.Data, err = readF32(r, s.count, exact, chunk)
		}
		if err != nil {
			return nil, fmt.Errorf("tensor %q: %w", s.name, err)
		}
		t.Shape = s.shape
		out.Tensors[s.name] = t
	}
	return out, nil
}

// errTruncatedData is the error of a stream that ends inside a tensor.
var errTruncatedData = errors.New("truncated data (file ends inside it)")

// readF32 reads count little-endian float32 values from r through chunk
// (readChunk bytes). With exact the slice is allocated whole; otherwise it
// grows geometrically, capped at count, with the bytes that actually
// arrive, so memory follows the bytes read.
func readF32(r io.Reader, count int, exact bool, chunk []byte) ([]float32, error) {
	data := []float32{}
	if exact {
		data = make([]float32, 0, count)
	}
	for len(data) < count {
		k := min(count-len(data), readChunk/4)
		if _, err := io.ReadFull(r, chunk[:4*k]); err != nil {
			return nil, errTruncatedData
		}
		data = grow(data, count, k)
		for i := range k {
			data = append(data, math.Float32frombits(binary.LittleEndian.Uint32(chunk[4*i:])))
		}
	}
	return data, nil
}

// readI8 is readF32 for int8 values.
func readI8(r io.Reader, count int, exact bool, chunk []byte) ([]int8, error) {
	data := []int8{}
	if exact {
		data = make([]int8, 0, count)
	}
	for len(data) < count {
		k := min(count-len(data), readChunk)
		if _, err := io.ReadFull(r, chunk[:k]); err != nil {
			return nil, errTruncatedData
		}
		data = grow(data, count, k)
		for _, b := range chunk[:k] {
			data = append(data, int8(b))
		}
	}
	return data, nil
}

// grow returns data with room for k more values: geometric growth, capped
// at count.
func grow[T any](data []T, count, k int) []T {
	if cap(data)-len(data) >= k {
		return data
	}
	grown := make([]T, len(data), min(count, max(2*cap(data), len(data)+k)))
	copy(grown, data)
	return grown
}

// parseHeader decodes the JSON header entry by entry (so that the limits
// apply before a huge header is held as a map), fills out.Metadata and
// returns the tensors' entries, each checked alone: dtype, shape, offsets
// and the limits. Duplicate names are errors.
func parseHeader(hdr []byte, out *File) ([]span, error) {
	dec := json.NewDecoder(bytes.NewReader(hdr))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		if err == nil {
			err = fmt.Errorf("not a JSON object")
		}
		return nil, fmt.Errorf("corrupt JSON header: %v", err)
	}
	var spans []span
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("corrupt JSON header: %v", err)
		}
		name, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("corrupt JSON header: key %v is not a string", tok)
		}
		if seen[name] {
			return nil, fmt.Errorf("tensor %q: named twice in the header", name)
		}
		seen[name] = true
		if name == "__metadata__" {
			if err := dec.Decode(&out.Metadata); err != nil {
				return nil, fmt.Errorf("corrupt __metadata__ (must map strings to strings): %v", err)
			}
			if out.Metadata == nil { // "__metadata__": null
				out.Metadata = map[string]string{}
			}
			continue
		}
		if len(spans) >= MaxTensors {
			return nil, fmt.Errorf("more than %d tensors, the limit (safetensors.MaxTensors; raise it to read such files)", MaxTensors)
		}
		var e entry
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("tensor %q: corrupt header entry: %v", name, err)
		}
		s, err := checkEntry(name, e)
		if err != nil {
			return nil, err
		}
		spans = append(spans, s)
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, fmt.Errorf("corrupt JSON header: unterminated object")
	}
	if tok, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("corrupt JSON header: %v after the object", tok)
	}
	return spans, nil
}

// checkEntry validates one tensor's header entry against the format and
// the limits.
func checkEntry(name string, e entry) (span, error) {
	esize, known := dtypeSize[e.DType]
	if !known {
		return span{}, fmt.Errorf("tensor %q: unknown dtype %q", name, e.DType)
	}
	if len(e.Offsets) != 2 || e.Offsets[0] < 0 || e.Offsets[1] < e.Offsets[0] {
		return span{}, fmt.Errorf("tensor %q: bad data_offsets %v", name, e.Offsets)
	}
	if len(e.Shape) > MaxDims {
		return span{}, fmt.Errorf("tensor %q: shape of %d dimensions, more than the limit of %d (safetensors.MaxDims)", name, len(e.Shape), MaxDims)
	}
	n := int64(1)
	for _, s := range e.Shape {
		if s < 0 || (s > 0 && n > math.MaxInt64/int64(esize)/int64(s)) {
			return span{}, fmt.Errorf("tensor %q: bad shape %v", name, e.Shape)
		}
		n *= int64(s)
	}
	nb := n * int64(esize)
	if nb > MaxTensorBytes || e.Offsets[1]-e.Offsets[0] > MaxTensorBytes {
		return span{}, fmt.Errorf("tensor %q: shape %v of %s takes %s, more than the limit of %s per tensor (safetensors.MaxTensorBytes; raise it to read larger tensors)",
			name, e.Shape, e.DType, gib(max(nb, e.Offsets[1]-e.Offsets[0])), gib(MaxTensorBytes))
	}
	if nb != e.Offsets[1]-e.Offsets[0] {
		return span{}, fmt.Errorf("tensor %q: shape %v of %s needs %d bytes, data_offsets give %d", name, e.Shape, e.DType, nb, e.Offsets[1]-e.Offsets[0])
	}
	if e.DType != "F32" && e.DType != "I8" {
		return span{}, fmt.Errorf("tensor %q: dtype %s not supported (F32 and I8 only)", name, e.DType)
	}
	if n > math.MaxInt {
		return span{}, fmt.Errorf("tensor %q: shape %v too large for this platform", name, e.Shape)
	}
	shape := make([]int, len(e.Shape))
	for i, s := range e.Shape {
		if s > math.MaxInt { // only where int has 32 bits, beside a dimension of 0
			return span{}, fmt.Errorf("tensor %q: shape %v too large for this platform", name, e.Shape)
		}
		shape[i] = int(s)
	}
	return span{name, e, shape, int(n)}, nil
}

// Write writes tensors (sorted by name, F32 or I8) and metadata to path
// atomically (package atomicfile): path is never left half-written, and a
// full disk leaves the old file intact and returns an error.
func Write(path string, tensors map[string]Tensor, metadata map[string]string) error {
	return atomicfile.Write(path, func(w io.Writer) error { return Encode(w, tensors, metadata) })
}

// Encode writes tensors (sorted by name) and metadata to w in the
// safetensors format: a tensor is I8 when its I8 field is non-nil, F32
// otherwise; the header is padded with spaces to a multiple of 8 bytes. A
// tensor whose shape does not match its data, or with both Data and I8, is
// an error.
func Encode(w io.Writer, tensors map[string]Tensor, metadata map[string]string) error {
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
		if n == "__metadata__" {
			return fmt.Errorf("tensor name %q is reserved", n)
		}
		t := tensors[n]
		if t.I8 != nil && t.Data != nil {
			return fmt.Errorf("tensor %q: holds both F32 and I8 values", n)
		}
		if NumElements(t.Shape) != t.Len() {
			return fmt.Errorf("tensor %q: shape %v does not match %d values", n, t.Shape, t.Len())
		}
		shape := make([]int64, len(t.Shape)) // [] for a scalar, never null
		for i, d := range t.Shape {
			shape[i] = int64(d)
		}
		dt := t.DType()
		end := off + int64(t.Len())*int64(dtypeSize[dt])
		hdr[n] = entry{DType: dt, Shape: shape, Offsets: []int64{off, end}}
		off = end
	}
	hb, err := json.Marshal(hdr)
	if err != nil {
		return fmt.Errorf("safetensors header: %w", err)
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
	flush := func() error {
		if len(buf) < cap(buf)-4 {
			return nil
		}
		_, err := w.Write(buf)
		buf = buf[:0]
		return err
	}
	for _, n := range names {
		for _, v := range tensors[n].Data {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
			if err := flush(); err != nil {
				return err
			}
		}
		for _, v := range tensors[n].I8 {
			buf = append(buf, byte(v))
			if err := flush(); err != nil {
				return err
			}
		}
	}
	_, err = w.Write(buf)
	return err
}
