package quant

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
)

// FuzzLoad feeds arbitrary files to Load. It must never panic, must
// allocate in proportion to the file whatever its header and config
// declare, and a file it accepts must dequantize and survive Save and Load
// unchanged.
func FuzzLoad(f *testing.F) {
	dir := f.TempDir()
	// A small model (a few hundred parameters, a file of about 2 KB: the
	// mutator and the minimizer handle it quickly) with every kind of
	// layer: a convolution, a depthwise one, two capsule layers, two FC
	// layers.
	cfg, err := capsnet.ParseConfig([]byte(fuzzConfig), "fuzz config")
	if err != nil {
		f.Fatal(err)
	}
	p, err := capsnet.NewParams(cfg)
	if err != nil {
		f.Fatal(err)
	}
	p.Init(1)
	cal, err := Calibrate(p, calibImages(p, 2), CalibOptions{Method: Percentile})
	if err != nil {
		f.Fatal(err)
	}
	for _, g := range []Granularity{PerCapsule, PerBlock} {
		m, err := Quantize(p, Options{Granularity: g})
		if err != nil {
			f.Fatal(err)
		}
		if g == PerBlock {
			m.Calibration = cal
		}
		var b bytes.Buffer
		if err := m.Encode(&b); err != nil {
			f.Fatal(err)
		}
		raw := b.Bytes()
		f.Add(raw)
		f.Add(raw[:len(raw)-1])
	}
	if err := p.SaveCheckpoint(filepath.Join(dir, "float"), nil); err != nil {
		f.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "float"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	head := func(h string) []byte {
		var lb [8]byte
		binary.LittleEndian.PutUint64(lb[:], uint64(len(h)))
		return append(append(lb[:], h...), make([]byte, 8)...)
	}
	f.Add(head(`{"__metadata__":{"format":"capstan/1"}}`))
	f.Add(head(`{"__metadata__":{"format":"capstan-int8/1","granularity":"capsule","config":"{}"}}`))
	f.Add(head(`{"__metadata__":{"format":"capstan-int8/1"},"a":{"dtype":"I8","shape":[8],"data_offsets":[0,8]}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		path := filepath.Join(t.TempDir(), "m")
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		m, err := Load(path)
		runtime.ReadMemStats(&after)
		if err == nil && len(raw) < 64 {
			t.Fatalf("accepted a %d-byte file", len(raw))
		}
		// Bound: the header and config JSON are decoded a few times over
		// their size, tensor data is at most the file's size (as int8 or
		// float32) held once with a read chunk of 64 KiB; 64 bytes per
		// input byte and 64 MiB cover it widely, while a tensor or a model
		// sized by a hostile header or config would exceed it.
		if got, bound := after.TotalAlloc-before.TotalAlloc, uint64(64<<20+64*len(raw)); got > bound {
			t.Fatalf("loading %d bytes allocated %d bytes, more than %d", len(raw), got, bound)
		}
		if err != nil {
			return
		}
		if _, err := m.Dequantize(); err != nil {
			t.Fatalf("accepted model does not dequantize: %v", err)
		}
		// Encode and a plain write: Save's fsync would make each
		// accepted input take a disk flush.
		var b bytes.Buffer
		if err := m.Encode(&b); err != nil {
			t.Fatalf("accepted model does not encode: %v", err)
		}
		again := filepath.Join(t.TempDir(), "again")
		if err := os.WriteFile(again, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		m2, err := Load(again)
		if err != nil {
			t.Fatalf("re-saved model does not load: %v", err)
		}
		for i, a := range m.Tensors {
			b := m2.Tensors[i]
			if a.Name != b.Name || !slices.Equal(a.Q, b.Q) || !slices.Equal(a.Scales, b.Scales) || !slices.Equal(a.Float, b.Float) {
				t.Fatalf("tensor %q changed through Save and Load", a.Name)
			}
		}
	})
}

// fuzzConfig is FuzzLoad's model.
const fuzzConfig = `{"name":"fuzz","input":[1,8,8],"convs":[{"name":"c","out":4,"kernel":3,"stride":1,"relu":true},{"name":"dw","out":4,"kernel":0,"stride":1,"depthwise":true}],"primary_dim":2,"primary_squash":"mazzia","caps":[{"name":"k0","out":3,"dim":2,"routing":"rba","iters":2,"squash":"mazzia"},{"name":"k1","out":3,"dim":2,"routing":"rba","iters":2,"squash":"mazzia"}],"classes":3,"decoder":[4],"loss":{"m_plus":0.9,"m_minus":0.1,"lambda":0.5,"alpha":0.392}}`
