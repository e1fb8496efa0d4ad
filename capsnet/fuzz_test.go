package capsnet

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/capstan-ml/capstan/capsnet/safetensors"
)

// microConfig is a valid model of a few hundred parameters: the fuzz
// targets' seed, small enough for the mutator to work on quickly.
const microConfig = `{"name":"micro","input":[1,6,6],"convs":[{"name":"c","out":4,"kernel":3,"stride":1,"relu":true}],` +
	`"primary_dim":2,"primary_squash":"mazzia","caps":[{"name":"d","out":3,"dim":2,"routing":"rba","iters":2,"squash":"mazzia","learn_prior":true}],` +
	`"classes":3,"decoder":[4],"loss":{"m_plus":0.9,"m_minus":0.1,"lambda":0.5,"alpha":0.0005}}`

// fuzzModelBytes is the memory limit of one model (MaxModelBytes) while
// fuzzing: a valid but large config is refused instead of allocating.
const fuzzModelBytes = 16 << 20

// fuzzLimits lowers the model memory limit for a fuzz target and clears
// CAPSTAN_MAX_MEMORY, so the bounds below hold whatever the environment.
func fuzzLimits(f *testing.F) {
	prev := MaxModelBytes
	MaxModelBytes = fuzzModelBytes
	f.Cleanup(func() { MaxModelBytes = prev })
	f.Setenv(MemoryEnv, "")
}

// allocBound is the memory a fuzzed call may allocate: the model's limit
// (parameters plus a Net's plan, refused above it), and for the rest
// (JSON decoding, the safetensors reader, per-layer bookkeeping) 64 bytes
// per input byte plus a 48 MiB constant, far below what a size taken on
// trust (gigabytes from one header field) would allocate.
func allocBound(input int) uint64 { return fuzzModelBytes + 48<<20 + 64*uint64(input) }

// FuzzParseConfig parses, validates and compiles arbitrary config JSON:
// ParseConfig, Validate, ParamCount, NewParams, NewNet (batch 2) and one
// Forward and Backward pass on a valid model. Nothing may panic, and the
// memory allocated stays within allocBound.
func FuzzParseConfig(f *testing.F) {
	fuzzLimits(f)
	f.Add([]byte(microConfig))
	for _, name := range []string{"tiny-deep", "tiny-sabour", "tiny-deep3", "deep"} {
		f.Add([]byte(Presets()[name].JSON()))
	}
	for _, bad := range []string{
		`{"name":"x"`, `{"bogus":1}`, `[]`, `null`,
		`{"input":[1,28,28],"convs":[{"name":"c","out":8,"kernel":3,"stride":1,"pad":9223372036854775807}]}`,
		`{"input":[1,28,28],"convs":[{"name":"c","out":8,"kernel":3,"stride":1}],"primary_dim":4,"primary_squash":"sabour","caps":[{"name":"d","out":10,"dim":4,"routing":"rba","iters":1000000000,"squash":"sabour"}],"classes":10}`,
		`{"input":[1,6,6],"convs":[{"name":"c","out":4,"kernel":3,"stride":1}],"primary_dim":2,"primary_squash":"mazzia","caps":[{"name":"d","out":3,"dim":2,"routing":"uniform","squash":"mazzia"}],"classes":3,"decoder":[1048576,1048576],"loss":{"m_plus":0.9,"m_minus":0.1}}`,
	} {
		f.Add([]byte(bad))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		compileConfig(t, raw)
		runtime.ReadMemStats(&after)
		if got, bound := after.TotalAlloc-before.TotalAlloc, allocBound(len(raw)); got > bound {
			t.Fatalf("config of %d bytes: allocated %d bytes, more than %d", len(raw), got, bound)
		}
	})
}

// compileConfig is FuzzParseConfig's work on one input.
func compileConfig(t *testing.T, raw []byte) {
	c, err := ParseConfig(raw, "fuzz.json")
	if err != nil {
		return
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("ParseConfig accepted a config Validate refuses: %v", err)
	}
	count, err := c.ParamCount()
	if err != nil {
		t.Fatalf("ParamCount of a valid config: %v", err)
	}
	p, err := NewParams(c)
	if err != nil {
		// The arena aligns each of its buffers (two a layer) to 64 bytes.
		bufs := int64(2 * (len(c.Convs) + len(c.Caps) + len(c.Decoder) + 1))
		if 4*count+64*bufs <= fuzzModelBytes {
			t.Fatalf("%d parameters, within the limit, refused: %v", count, err)
		}
		return
	}
	if int64(p.Count()) != count {
		t.Fatalf("ParamCount %d, NewParams declares %d", count, p.Count())
	}
	p.Init(1)
	n, err := NewNet(p, 2)
	if err != nil || flops(p, 2) > 2e7 {
		// A model within the memory limit can still take minutes of
		// compute (a kernel of 500×500 over a 1000×1000 input): such
		// models are compiled but not run.
		return
	}
	x := make([]float32, 2*n.InputLen())
	for i := range x {
		x[i] = float32(i%7) / 7
	}
	if err := n.Forward(x, []int{0, c.Classes - 1}); err != nil {
		t.Fatalf("Forward on a compiled model: %v", err)
	}
	if err := n.Backward(); err != nil {
		t.Fatalf("Backward on a compiled model: %v", err)
	}
}

// flops estimates the multiply-adds of one Forward of a batch over p's
// model (convolutions, votes, routing iterations, decoder), in float64 so
// that it cannot overflow.
func flops(p *Params, batch int) float64 {
	c, g := p.Config, p.Geo
	total := 0.0
	for k, cv := range c.Convs {
		in, out, ks := g.ConvIn[k], g.ConvOut[k], float64(g.Kernel[k])
		cin := float64(in[0])
		if cv.Depthwise {
			cin = 1
		}
		total += float64(out[0]) * float64(out[1]) * float64(out[2]) * cin * ks * ks
	}
	for l, cc := range c.Caps {
		nIn, dIn := float64(g.CapsIn[l][0]), float64(g.CapsIn[l][1])
		total += float64(cc.Out) * nIn * float64(cc.Dim) * (dIn + float64(max(cc.Iters, 1)))
	}
	in := float64(c.Classes * c.Caps[len(c.Caps)-1].Dim)
	for _, out := range append(append([]int(nil), c.Decoder...), g.Pixels) {
		total += in * float64(out)
		in = float64(out)
	}
	return total * float64(batch)
}

// FuzzReadCheckpoint reads arbitrary bytes as a checkpoint file
// (ReadCheckpoint) and builds its model from the config in its metadata,
// or the micro model for a bare state dict (Checkpoint.Params): the path
// from a file's metadata to model construction and the memory limit.
// Nothing may panic, and the memory allocated stays within allocBound.
func FuzzReadCheckpoint(f *testing.F) {
	fuzzLimits(f)
	micro, err := ParseConfig([]byte(microConfig), "micro")
	if err != nil {
		f.Fatal(err)
	}
	p, err := NewParams(micro)
	if err != nil {
		f.Fatal(err)
	}
	p.Init(1)
	dir := f.TempDir()
	seed := func(name string, tensors map[string]safetensors.Tensor, meta map[string]string) {
		path := filepath.Join(dir, name)
		if err := safetensors.Write(path, tensors, meta); err != nil {
			f.Fatal(err)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	seed("valid", p.TorchTensors(), map[string]string{"format": CheckpointFormat, "config": micro.JSON(), "epoch": "3"})
	seed("state-dict", p.TorchTensors(), nil)
	huge := micro
	huge.Decoder = []int{1 << 19, 1 << 19}
	seed("huge-config", p.TorchTensors(), map[string]string{"format": CheckpointFormat, "config": huge.JSON()})
	seed("bad-config", nil, map[string]string{"config": `{"name":`})
	other := p.TorchTensors()
	other["c.weight"] = safetensors.Tensor{Shape: []int{1}, Data: []float32{1}}
	seed("wrong-shape", other, map[string]string{"config": micro.JSON()})
	// A real checkpoint's header (testdata/oracle's weights, cut: whole,
	// they are too large for the mutator to work on quickly).
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "oracle", "tiny-deep3-weights.safetensors"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw[:min(len(raw), 4096)])
	// The inputs are written to memory (/dev/shm) where there is one: on
	// a disk, writing the file costs more than everything else together.
	if shm, err := os.MkdirTemp("/dev/shm", "capstan-fuzz-"); err == nil {
		dir = shm
		f.Cleanup(func() { os.RemoveAll(shm) })
	}
	path := filepath.Join(dir, "input.safetensors")
	f.Fuzz(func(t *testing.T, raw []byte) {
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		ck, err := ReadCheckpoint(path)
		if err == nil {
			if ck.HasConfig() {
				_, err = ck.Params(nil)
			} else {
				_, err = ck.Params(&micro)
			}
			_ = err // refusals are expected; panics and allocations are not
		}
		runtime.ReadMemStats(&after)
		if got, bound := after.TotalAlloc-before.TotalAlloc, allocBound(len(raw)); got > bound {
			t.Fatalf("checkpoint of %d bytes: allocated %d bytes, more than %d", len(raw), got, bound)
		}
	})
}
