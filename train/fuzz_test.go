package train

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/kernels"
)

// microModel is tiny-deep shrunk to about 2,500 parameters: the fuzz
// inputs (an optimizer file of 20 KB) stay small enough for Go's fuzzer,
// which slows down a lot on inputs of a megabyte.
func microModel() capsnet.Config {
	c := capsnet.Presets()["tiny-deep"]
	c.Name = "micro-deep"
	c.Convs = append([]capsnet.ConvConfig(nil), c.Convs...)
	c.Caps = append([]capsnet.CapsConfig(nil), c.Caps...)
	c.Convs[0].Out, c.Convs[0].Stride, c.Convs[1].Out, c.Convs[2].Out = 2, 2, 8, 8
	c.Caps[0].Out = 4
	c.Decoder = []int{2, 2}
	return c
}

// fuzzRun trains microModel for one epoch into a temporary directory and
// returns it with a trainer of the same model to resume into.
func fuzzRun(f *testing.F) (string, *Trainer, *capsnet.Checkpoint) {
	// Each input is written to a file: on /dev/shm when there is one (a
	// disk write costs more than the rest of an exec).
	dir := f.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if d, err := os.MkdirTemp("/dev/shm", "capstan-fuzz-"); err == nil {
			dir = d
			f.Cleanup(func() { os.RemoveAll(d) })
		}
	}
	tr, te := smallData(&testing.T{})
	o := DefaultOptions(microModel())
	o.Train, o.Val, o.Batch, o.Threads, o.Epochs, o.OutDir = tr, te, 16, 1, 1, dir
	if _, err := Run(context.Background(), o); err != nil {
		f.Fatal(err)
	}
	ck, err := ReadResume(dir)
	if err != nil {
		f.Fatal(err)
	}
	p, err := capsnet.NewParams(o.Model)
	if err != nil {
		f.Fatal(err)
	}
	t, err := NewTrainer(p, 16, 1, kernels.AdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(t.Close)
	return dir, t, ck
}

// allocated returns the bytes allocated while fn runs.
func allocated(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// FuzzOptimizerState resumes from a checkpoint whose optimizer file is the
// fuzz input: any content is either loaded (it then holds finite moments
// of the right sizes) or refused with an error; never a panic. Memory
// bound: the file's tensors (at most its size, as float32) plus the
// decoded copy and 16 MiB of slack for the reader and the error paths.
func FuzzOptimizerState(f *testing.F) {
	dir, t, ck := fuzzRun(f)
	good, err := os.ReadFile(filepath.Join(dir, ck.Meta["optimizer"]))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{})
	f.Add(append([]byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, good[8:]...))
	optPath := filepath.Join(dir, ck.Meta["optimizer"])
	f.Fuzz(func(tt *testing.T, b []byte) {
		if err := os.WriteFile(optPath, b, 0o644); err != nil {
			tt.Fatal(err)
		}
		var err error
		n := allocated(func() { _, err = resumeRun(t, dir, ck) })
		if bound := uint64(16<<20 + 3*len(b)); n > bound {
			tt.Fatalf("resume allocated %d bytes for a %d-byte optimizer file (bound %d)", n, len(b), bound)
		}
		if err == nil {
			for i := range t.P.List {
				m, v := t.Moments(i)
				for j := range m {
					if m[j] != m[j] || v[j] < 0 {
						tt.Fatalf("loaded a bad moment: m %v v %v", m[j], v[j])
					}
				}
			}
		}
	})
}

// FuzzResumeMetadata resumes from a checkpoint whose run-state metadata
// (epoch, step, batch, partial, metrics, optimizer) is the fuzz input:
// loaded or refused, never a panic, never an optimizer file outside the
// run directory.
func FuzzResumeMetadata(f *testing.F) {
	dir, t, ck := fuzzRun(f)
	m := ck.Meta
	f.Add(m["epoch"], m["step"], m["batch"], m["partial"], m["metrics"], m["optimizer"])
	f.Add("1", "6", "3", `{"steps":3,"seen":48,"correct":5,"sum_margin":1.5,"sum_recon":2}`, "[]", m["optimizer"])
	f.Add("-1", "x", "", "", "{", "../../etc/passwd")
	f.Add("99999999999999999999", "6", "-5", "null", "null", "optimizer.safetensors")
	f.Fuzz(func(tt *testing.T, epoch, step, batch, partial, metrics, opt string) {
		c := *ck
		c.Meta = map[string]string{}
		for k, v := range ck.Meta {
			c.Meta[k] = v
		}
		c.Meta["epoch"], c.Meta["step"], c.Meta["batch"], c.Meta["partial"], c.Meta["metrics"], c.Meta["optimizer"] = epoch, step, batch, partial, metrics, opt
		var st runState
		var err error
		n := allocated(func() { st, err = resumeRun(t, dir, &c) })
		if bound := uint64(32<<20 + 64*(len(partial)+len(metrics))); n > bound {
			tt.Fatalf("resume allocated %d bytes (bound %d)", n, bound)
		}
		if err == nil {
			if st.epoch < 0 || st.partial.Steps < 0 || filepath.Base(st.optimizer) != st.optimizer {
				tt.Fatalf("accepted a bad state: %+v", st)
			}
		}
	})
}
