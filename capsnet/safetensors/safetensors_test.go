package safetensors

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
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
		{"unknown-dtype", file(`{"a":{"dtype":"Q3","shape":[2],"data_offsets":[0,8]}}`, d8), "unknown dtype"},
		{"shape-size", file(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, d8), "needs 12 bytes"},
		{"negative-shape", file(`{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, d8), "bad shape"},
		{"huge-shape", file(`{"a":{"dtype":"F32","shape":[65536,65536,65536],"data_offsets":[0,8]}}`, d8), "bad shape"},
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

func TestEncodeErrors(t *testing.T) {
	var b bytes.Buffer
	if err := Encode(&b, map[string]Tensor{"__metadata__": {Shape: []int{1}, Data: []float32{1}}}, nil); err == nil {
		t.Error("a tensor named __metadata__ was accepted")
	}
	if err := Encode(&b, map[string]Tensor{"a": {Shape: []int{2, 2}, Data: []float32{1}}}, nil); err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Errorf("shape mismatch: %v", err)
	}
}
