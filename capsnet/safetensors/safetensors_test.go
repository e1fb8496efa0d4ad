package safetensors

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.safetensors")
	ts := map[string]Tensor{
		"b":      {Shape: []int{2, 3}, Data: []float32{1, -2, 3.5, 0, 1e-30, -7}},
		"a":      {Shape: []int{1}, Data: []float32{42}},
		"scalar": {Shape: nil, Data: []float32{3}},
		"empty":  {Shape: []int{0, 4}, Data: []float32{}},
	}
	meta := map[string]string{"format": "test/1", "epoch": "3"}
	if err := Write(path, ts, meta); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if hl := binary.LittleEndian.Uint64(raw); hl%8 != 0 {
		t.Errorf("header length %d is not a multiple of 8", hl)
	}
	f, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != len(ts) || f.Metadata["format"] != "test/1" || f.Metadata["epoch"] != "3" {
		t.Fatalf("read back %d tensors, metadata %v", len(f.Tensors), f.Metadata)
	}
	for name, want := range ts {
		got := f.Tensors[name]
		if !slices.Equal(got.Data, want.Data) || len(got.Shape) != len(want.Shape) || (len(want.Shape) > 0 && !slices.Equal(got.Shape, want.Shape)) {
			t.Errorf("%s: read %+v, wrote %+v", name, got, want)
		}
	}
	// Decode on the same bytes agrees with Read.
	g, err := Decode(bytes.NewReader(raw), int64(len(raw)))
	if err != nil || !slices.Equal(g.Tensors["b"].Data, ts["b"].Data) {
		t.Errorf("Decode: %v", err)
	}
}

func TestAtomicWriteKeepsOldFileOnError(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.safetensors")
	ts := map[string]Tensor{"a": {Shape: []int{2}, Data: []float32{1, 2}}}
	if err := Write(path, ts, nil); err != nil {
		t.Fatal(err)
	}
	bad := map[string]Tensor{"a": {Shape: []int{3}, Data: []float32{1, 2}}}
	if err := Write(path, bad, nil); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("inconsistent tensor: error %v, want one naming %s", err, path)
	}
	st, err := Read(path)
	if err != nil || st.Tensors["a"].Data[1] != 2 {
		t.Fatalf("old file damaged: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	if err := Write(filepath.Join(dir, "no", "such", "dir.safetensors"), ts, nil); err == nil {
		t.Error("write into a missing directory: no error")
	}
}

// file builds a safetensors file from a header (JSON, padded by the caller
// or not) and a data section.
func file(header string, data []byte) []byte {
	var lb [8]byte
	binary.LittleEndian.PutUint64(lb[:], uint64(len(header)))
	return append(append(lb[:], header...), data...)
}

func TestReadRejectsBadFiles(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.safetensors")
	if err := Write(good, map[string]Tensor{"w": {Shape: []int{4, 8}, Data: make([]float32, 32)}, "b": {Shape: []int{4}, Data: make([]float32, 4)}}, map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(good)
	d8 := make([]byte, 8)
	for _, tc := range []struct {
		name string
		raw  []byte
		want string
	}{
		{"trunc", raw[:len(raw)-100], "truncated"},
		{"trunc-one-byte", raw[:len(raw)-1], "truncated"},
		{"short", raw[:5], "truncated"},
		{"header-cut", raw[:40], "truncated"},
		{"trailing", append(slices.Clone(raw), 0, 0, 0, 0), "after the last tensor"},
		{"junk", []byte("\x10\x00\x00\x00\x00\x00\x00\x00{not json at all"), "corrupt JSON"},
		{"huge", []byte("\xff\xff\xff\xff\xff\xff\xff\xff"), "header length"},
		{"zero", []byte("\x00\x00\x00\x00\x00\x00\x00\x00"), "header length"},
		{"dtype", file(`{"a":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}}`, d8), "F16 not supported"},
		{"dtype-i16", file(`{"a":{"dtype":"I16","shape":[4],"data_offsets":[0,8]}}`, d8), "I16 not supported"},
		{"i8-size", file(`{"a":{"dtype":"I8","shape":[2,3],"data_offsets":[0,8]}}`, d8), "needs 6 bytes"},
		{"i8-trunc", file(`{"a":{"dtype":"I8","shape":[16],"data_offsets":[0,16]}}`, d8), "beyond the 8 data bytes"},
		{"i8-huge", file(`{"a":{"dtype":"I8","shape":[65536,65536,65536],"data_offsets":[0,8]}}`, d8), "safetensors.MaxTensorBytes"},
		{"unknown-dtype", file(`{"a":{"dtype":"Q3","shape":[2],"data_offsets":[0,8]}}`, d8), "unknown dtype"},
		{"shape-size", file(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, d8), "needs 12 bytes"},
		{"negative-shape", file(`{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, d8), "bad shape"},
		{"huge-shape", file(`{"a":{"dtype":"F32","shape":[65536,65536,65536],"data_offsets":[0,8]}}`, d8), "safetensors.MaxTensorBytes"},
		{"overflow-shape", file(`{"a":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]}}`, d8), "bad shape"},
		{"huge-offsets", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4294967296000]}}`, d8), "safetensors.MaxTensorBytes"},
		{"many-dims", file(`{"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,2],"data_offsets":[0,8]}}`, d8), "safetensors.MaxDims"},
		{"twice", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, d8), "named twice"},
		{"not-object", file(`[1, 2]`, nil), "corrupt JSON"},
		{"after-object", file(`{} {}`, nil), "corrupt JSON"},
		{"unterminated", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}`, d8), "corrupt JSON"},
		{"offsets", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}`, d8), "bad data_offsets"},
		{"one-offset", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[8]}}`, d8), "bad data_offsets"},
		{"beyond", file(`{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}`, d8), "beyond the 8 data bytes"},
		{"overlap", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, d8), "overlap"},
		{"hole", file(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, d8), "hole"},
		{"metadata", file(`{"__metadata__":{"a":1}}`, nil), "__metadata__"},
		{"entry", file(`{"a":[1,2]}`, nil), "corrupt header entry"},
	} {
		path := filepath.Join(dir, tc.name+".safetensors")
		if err := os.WriteFile(path, tc.raw, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Read(path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %v, want one naming the file and containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := Read(filepath.Join(dir, "missing.safetensors")); err == nil || !strings.Contains(err.Error(), "missing.safetensors") {
		t.Errorf("missing file: %v", err)
	}
}

// TestLimits: the per-file, per-tensor and tensor-count limits refuse a
// file from its header and size, with an error naming the file, the tensor
// and the variable to raise; raised, the same file reads.
func TestLimits(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.safetensors")
	ts := map[string]Tensor{"a": {Shape: []int{64}, Data: make([]float32, 64)}, "b": {Shape: []int{2, 4}, Data: make([]float32, 8)}}
	if err := Write(path, ts, nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		set  func()
		want []string
	}{
		{"tensor", func() { MaxTensorBytes = 100 }, []string{path, `tensor "a"`, "256 bytes", "100 bytes", "safetensors.MaxTensorBytes"}},
		{"file", func() { MaxFileBytes = 200 }, []string{path, "200 bytes", "safetensors.MaxFileBytes"}},
		{"count", func() { MaxTensors = 1 }, []string{path, "more than 1 tensors", "safetensors.MaxTensors"}},
		{"dims", func() { MaxDims = 1 }, []string{path, `tensor "b"`, "safetensors.MaxDims"}},
	} {
		prevT, prevF, prevN, prevD := MaxTensorBytes, MaxFileBytes, MaxTensors, MaxDims
		tc.set()
		_, err := Read(path)
		MaxTensorBytes, MaxFileBytes, MaxTensors, MaxDims = prevT, prevF, prevN, prevD
		if err == nil {
			t.Errorf("%s limit: file accepted", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s limit: error %q does not contain %q", tc.name, err, w)
			}
		}
	}
	if _, err := Read(path); err != nil {
		t.Errorf("default limits: %v", err)
	}
}

// TestDecodeLyingSize: Decode given a size far beyond its stream (up to
// MaxFileBytes) reports truncation and allocates in proportion to the
// bytes it read, not to the declared 1 GiB tensor.
func TestDecodeLyingSize(t *testing.T) {
	const n = 1 << 28 // floats: the 1 GiB MaxTensorBytes
	raw := file(fmt.Sprintf(`{"big":{"dtype":"F32","shape":[%d],"data_offsets":[0,%d]}}`, n, 4*n), make([]byte, 1000))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Decode(bytes.NewReader(raw), int64(len(raw))-1000+4*n)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), `tensor "big": truncated`) {
		t.Errorf("a stream shorter than its size: %v", err)
	}
	// 64 KiB read chunk plus bookkeeping: far below the declared 1 GiB.
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("Decode allocated %d bytes for a stream of %d", got, len(raw))
	}
	// A header length beyond the stream: no MaxHeader-sized allocation.
	var lb [8]byte
	binary.LittleEndian.PutUint64(lb[:], MaxHeader)
	runtime.ReadMemStats(&before)
	_, err = Decode(bytes.NewReader(append(lb[:], "{}"...)), 1<<30)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("a header longer than its stream: %v", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
		t.Errorf("Decode allocated %d bytes for a 10-byte stream declaring a %d-byte header", got, MaxHeader)
	}
}

// TestDecodeChunked: tensors larger than a read chunk, and several of
// them, decode exactly through Decode (growing slices) and Read (slices
// allocated at once).
func TestDecodeChunked(t *testing.T) {
	ts := map[string]Tensor{}
	for i, n := range []int{readChunk/4 - 1, readChunk / 4, 3*readChunk/4 + 5, 1} {
		d := make([]float32, n)
		for j := range d {
			d[j] = float32(i*1000003 + j)
		}
		ts[fmt.Sprint("t", i)] = Tensor{Shape: []int{n}, Data: d}
	}
	var b bytes.Buffer
	if err := Encode(&b, ts, nil); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "c.safetensors")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	fromRead, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	fromDecode, err := Decode(bytes.NewReader(b.Bytes()), int64(b.Len()))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range ts {
		for _, f := range []*File{fromRead, fromDecode} {
			if got := f.Tensors[name].Data; !slices.Equal(got, want.Data) {
				t.Errorf("%s: %d values read back, %d written, or different", name, len(got), len(want.Data))
			}
		}
	}
}

// TestWriteMode: files written by Write (checkpoints, dumps) are 0644 like
// the other outputs, not CreateTemp's 0600, and replacing a file keeps
// that mode.
func TestWriteMode(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix permissions")
	}
	path := filepath.Join(t.TempDir(), "m.safetensors")
	ts := map[string]Tensor{"a": {Shape: []int{1}, Data: []float32{1}}}
	for range 2 {
		if err := Write(path, ts, nil); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o644 {
			t.Errorf("mode %v, want -rw-r--r--", st.Mode().Perm())
		}
	}
}

func TestEncodeErrors(t *testing.T) {
	var b bytes.Buffer
	if err := Encode(&b, map[string]Tensor{"__metadata__": {Shape: []int{1}, Data: []float32{1}}}, nil); err == nil {
		t.Error("a tensor named __metadata__ was accepted")
	}
	if err := Encode(&b, map[string]Tensor{"a": {Shape: []int{2, 2}, Data: []float32{1}}}, nil); err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Errorf("shape mismatch: %v", err)
	}
}

// TestI8: I8 tensors round-trip beside F32 ones through Write, Read, Decode
// and ReadHeader (values, shapes, dtypes, including -128, 127, an empty
// and a scalar I8 tensor), their size counts one byte per value against
// MaxTensorBytes, and Encode refuses a tensor with both kinds of values or
// an I8 shape that does not match.
func TestI8(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.safetensors")
	ts := map[string]Tensor{
		"w":       {Shape: []int{2, 3}, I8: []int8{-128, -1, 0, 1, 127, 5}},
		"w.scale": {Shape: []int{2}, Data: []float32{0.5, 0.25}},
		"s":       {I8: []int8{-7}},
		"e":       {Shape: []int{0, 3}, I8: []int8{}},
		"odd":     {Shape: []int{5}, I8: []int8{1, 2, 3, 4, 5}}, // leaves the next tensor unaligned
		"z":       {Shape: []int{1}, Data: []float32{3}},
	}
	if err := Write(path, ts, map[string]string{"format": "test/1"}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Decode(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	h, err := ReadHeader(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range ts {
		for _, got := range []Tensor{f.Tensors[name], g.Tensors[name]} {
			if got.DType() != want.DType() || !slices.Equal(got.I8, want.I8) || !slices.Equal(got.Data, want.Data) || NumElements(got.Shape) != want.Len() {
				t.Errorf("%s: read %+v, wrote %+v", name, got, want)
			}
			if want.I8 != nil && (got.I8 == nil || got.Data != nil) {
				t.Errorf("%s: I8 tensor read as %+v", name, got)
			}
		}
		if hi := h.Tensors[name]; hi.DType != want.DType() || NumElements(hi.Shape) != want.Len() {
			t.Errorf("%s: header %+v, wrote %+v", name, hi, want)
		}
	}
	if len(h.Tensors) != len(ts) || h.Metadata["format"] != "test/1" {
		t.Errorf("header: %d tensors, metadata %v", len(h.Tensors), h.Metadata)
	}
	// One byte per value: a 64-value I8 tensor passes a limit of 100
	// bytes that its F32 twin exceeds.
	prev := MaxTensorBytes
	MaxTensorBytes = 100
	small := filepath.Join(t.TempDir(), "small.safetensors")
	err8 := Write(small, map[string]Tensor{"a": {Shape: []int{64}, I8: make([]int8, 64)}}, nil)
	if err8 == nil {
		_, err8 = Read(small)
	}
	err32 := Write(small, map[string]Tensor{"a": {Shape: []int{64}, Data: make([]float32, 64)}}, nil)
	if err32 == nil {
		_, err32 = ReadHeader(small)
	}
	MaxTensorBytes = prev
	if err8 != nil || err32 == nil || !strings.Contains(err32.Error(), "safetensors.MaxTensorBytes") {
		t.Errorf("MaxTensorBytes 100: I8[64] gave %v, F32[64] gave %v", err8, err32)
	}
	var b bytes.Buffer
	if err := Encode(&b, map[string]Tensor{"a": {Shape: []int{1}, Data: []float32{1}, I8: []int8{1}}}, nil); err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Errorf("tensor with both F32 and I8 values: %v", err)
	}
	if err := Encode(&b, map[string]Tensor{"a": {Shape: []int{3}, I8: []int8{1}}}, nil); err == nil || !strings.Contains(err.Error(), "does not match") {
		t.Errorf("I8 tensor of the wrong size: %v", err)
	}
}

// TestReadHeaderRejectsBadFiles: ReadHeader refuses what Read refuses from
// the header alone, naming the file and the tensor.
func TestReadHeaderRejectsBadFiles(t *testing.T) {
	dir := t.TempDir()
	for name, raw := range map[string][]byte{
		"trunc": file(`{"a":{"dtype":"I8","shape":[16],"data_offsets":[0,16]}}`, make([]byte, 8)),
		"size":  file(`{"a":{"dtype":"I8","shape":[3],"data_offsets":[0,8]}}`, make([]byte, 8)),
		"dtype": file(`{"a":{"dtype":"U8","shape":[8],"data_offsets":[0,8]}}`, make([]byte, 8)),
		"hole":  file(`{"a":{"dtype":"I8","shape":[4],"data_offsets":[4,8]}}`, make([]byte, 8)),
		"trail": file(`{"a":{"dtype":"I8","shape":[4],"data_offsets":[0,4]}}`, make([]byte, 8)),
	} {
		path := filepath.Join(dir, name+".safetensors")
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadHeader(path)
		if err == nil || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: ReadHeader error %v, want one line naming %s", name, err, path)
		}
		if name != "trail" && !strings.Contains(err.Error(), `tensor "a"`) {
			t.Errorf("%s: error %v does not name the tensor", name, err)
		}
	}
}

// TestReadDirectory checks that a directory is refused as one, not read
// as a truncated file.
func TestReadDirectory(t *testing.T) {
	dir := t.TempDir()
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), dir+" is a directory") {
		t.Errorf("Read(dir) = %v; want a directory error", err)
	}
	if _, err := ReadHeader(dir); err == nil || !strings.Contains(err.Error(), dir+" is a directory") {
		t.Errorf("ReadHeader(dir) = %v; want a directory error", err)
	}
}
