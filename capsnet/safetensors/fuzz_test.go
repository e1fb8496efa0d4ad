package safetensors

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the reader, both as a file of known
// size (Read's path) and with a declared size larger than the stream
// (Decode's untrusted size). It must never panic, and it must allocate in
// proportion to its input, whatever the header declares.
func FuzzDecode(f *testing.F) {
	var b bytes.Buffer
	if err := Encode(&b, map[string]Tensor{"w": {Shape: []int{2, 3}, Data: []float32{1, 2, 3, 4, 5, 6}}, "s": {Data: []float32{7}},
		"e": {Shape: []int{0}, Data: []float32{}}, "q": {Shape: []int{3}, I8: []int8{-128, 0, 127}}, "qe": {Shape: []int{0}, I8: []int8{}}}, map[string]string{"format": "capstan/1", "config": "{}"}); err != nil {
		f.Fatal(err)
	}
	valid := b.Bytes()
	f.Add(valid, uint32(0))
	f.Add(valid, uint32(1<<30))
	f.Add(valid[:len(valid)-3], uint32(0))
	// A real file's header (testdata/oracle's weights are 200-740 KB, too
	// large for the mutator to handle quickly: its header with the data
	// cut to the first tensor's size).
	if raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "oracle", "tiny-deep3-weights.safetensors")); err == nil {
		hl := binary.LittleEndian.Uint64(raw)
		f.Add(raw[:min(len(raw), 8+int(hl)+256)], uint32(0))
	} else {
		f.Fatal(err)
	}
	for _, h := range []string{
		`{"a":{"dtype":"F32","shape":[268435456],"data_offsets":[0,1073741824]}}`,
		`{"a":{"dtype":"F32","shape":[65536,65536,65536],"data_offsets":[0,8]}}`,
		`{"a":{"dtype":"F16","shape":[4],"data_offsets":[0,8]}}`,
		`{"a":{"dtype":"I8","shape":[8],"data_offsets":[0,8]}}`,
		`{"a":{"dtype":"I8","shape":[3],"data_offsets":[0,3]},"b":{"dtype":"F32","shape":[1],"data_offsets":[3,7]}}`,
		`{"a":{"dtype":"I8","shape":[1073741824],"data_offsets":[0,1073741824]}}`,
		`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`,
		`{"__metadata__":{"a":1}}`,
		`{"__metadata__":null,"a":{"dtype":"F32","shape":[],"data_offsets":[0,4]}}`,
		`{"a":{"dtype":"F32","shape":[1,1,1,1,1,1,1,1,1,2],"data_offsets":[0,8]}}`,
		`{not json`,
	} {
		f.Add(file(h, make([]byte, 8)), uint32(0))
	}
	var lb [8]byte
	binary.LittleEndian.PutUint64(lb[:], MaxHeader)
	f.Add(append(lb[:], "{}"...), uint32(1<<31))
	f.Fuzz(func(t *testing.T, raw []byte, extra uint32) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		exact, errExact := decode(bytes.NewReader(raw), int64(len(raw)), true)
		_, errLying := Decode(bytes.NewReader(raw), int64(len(raw))+int64(extra))
		runtime.ReadMemStats(&after)
		// Bound: the header is held once as bytes and decoded by
		// encoding/json (a few times its size), tensor data is at most the
		// input's size as float32s (or int8s; twice that while a slice grows), plus the
		// 64 KiB read chunk; 64 bytes per input byte and a 64 MiB constant
		// cover both reads with a wide margin, while a declared size (up to
		// MaxTensorBytes, 1 GiB) allocated up front would exceed it.
		if got, bound := after.TotalAlloc-before.TotalAlloc, uint64(64<<20+64*len(raw)); got > bound {
			t.Fatalf("decoding %d bytes (size +%d) allocated %d bytes, more than %d", len(raw), extra, got, bound)
		}
		if errExact == nil {
			if extra == 0 && errLying != nil {
				t.Fatalf("Decode of a valid stream failed: %v", errLying)
			}
			if extra > 0 && errLying == nil {
				t.Fatal("Decode accepted a stream shorter than its declared size")
			}
			// A valid file re-encodes to one that decodes to the same tensors.
			var out bytes.Buffer
			if err := Encode(&out, exact.Tensors, exact.Metadata); err != nil {
				t.Fatalf("re-encoding a decoded file: %v", err)
			}
			again, err := Decode(bytes.NewReader(out.Bytes()), int64(out.Len()))
			if err != nil || len(again.Tensors) != len(exact.Tensors) {
				t.Fatalf("re-encoded file: %v", err)
			}
			for name, want := range exact.Tensors {
				if got := again.Tensors[name]; got.DType() != want.DType() || got.Len() != want.Len() {
					t.Fatalf("tensor %q: re-encoded as %s of %d values, was %s of %d", name, got.DType(), got.Len(), want.DType(), want.Len())
				}
			}
		}
	})
}
