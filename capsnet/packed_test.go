package capsnet

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/capstan-ml/capstan/capsnet/safetensors"
	"github.com/capstan-ml/capstan/graph"
	"github.com/capstan-ml/capstan/kernels"
)

// packedOutputs is what TestInferenceNetPacked compares: the last
// convolution's output, the class capsules' norms, the reconstruction.
func packedOutputs(n *Net) [][]float32 {
	last := n.convs[len(n.convs)-1].y.Data()
	return [][]float32{append([]float32(nil), last...), append([]float32(nil), n.Norms()...), append([]float32(nil), n.Recon()...)}
}

// sameOutputs reports the first element whose bits differ.
func sameOutputs(a, b [][]float32) error {
	for i := range a {
		for j := range a[i] {
			if math.Float32bits(a[i][j]) != math.Float32bits(b[i][j]) {
				return fmt.Errorf("output %d[%d]: %v, want %v", i, j, a[i][j], b[i][j])
			}
		}
	}
	return nil
}

// TestInferenceNetPacked checks that an inference Net on packed weights
// computes the same bits as one with InferenceOptions.NoPackedWeights:
// after Init, after Load of other weights, after an Adam step marked with
// Params.Modified, on every kernel implementation, and on two conv
// threads; that without Modified it keeps computing with the old weights
// (the contract is needed, and Modified is what refreshes them); that the
// packed copies are in the plan as graph.Packed; and that a forward,
// repacking included, does not allocate.
func TestInferenceNetPacked(t *testing.T) {
	defer func(f float64) { convSplitMinFLOPs = f }(convSplitMinFLOPs)
	convSplitMinFLOPs = 0 // tiny-sabour's 16-channel convolutions split
	for _, c := range []struct {
		preset string
		batch  int
	}{{"tiny-deep3", 3}, {"tiny-sabour", 1}, {"tiny-sabour", 2}, {"tiny-deep", 1}} {
		t.Run(fmt.Sprintf("%s/batch=%d", c.preset, c.batch), func(t *testing.T) {
			testInferenceNetPacked(t, c.preset, c.batch)
		})
	}
}

func testInferenceNetPacked(t *testing.T, preset string, batch int) {
	p, err := NewParams(Presets()[preset])
	if err != nil {
		t.Fatal(err)
	}
	p.Init(2)
	packed, err := NewInferenceNet(p, batch)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := NewInferenceNetOptions(p, batch, InferenceOptions{NoPackedWeights: true})
	if err != nil {
		t.Fatal(err)
	}
	if b := packed.Plan().Bytes[graph.Packed]; b == 0 {
		t.Errorf("packed net: no packed weights in the plan %v", packed.Plan())
	}
	if b := plain.Plan().Bytes[graph.Packed]; b != 0 {
		t.Errorf("NoPackedWeights: %d bytes of packed weights", b)
	}
	for _, L := range packed.convs {
		if (L.pw != nil) != (L.sh.PackedSize() > 0) {
			t.Errorf("conv %s: packed buffer %v, PackedSize %d", L.Name, L.pw != nil, L.sh.PackedSize())
		}
	}
	x := make([]float32, batch*packed.InputLen())
	for i := range x {
		x[i] = float32((i*37)%19) / 19
	}
	check := func(what string) [][]float32 {
		t.Helper()
		if err := packed.Forward(x, nil); err != nil {
			t.Fatalf("%s: packed: %v", what, err)
		}
		if err := plain.Forward(x, nil); err != nil {
			t.Fatalf("%s: unpacked: %v", what, err)
		}
		got, want := packedOutputs(packed), packedOutputs(plain)
		if err := sameOutputs(got, want); err != nil {
			t.Fatalf("%s: packed net differs from the unpacked one: %v", what, err)
		}
		return got
	}
	first := check("after Init")

	// Load other weights.
	q, err := NewParams(p.Config)
	if err != nil {
		t.Fatal(err)
	}
	q.Init(9)
	ts := map[string]safetensors.Tensor{}
	for _, par := range q.List {
		d := make([]float32, par.Buf.Len())
		par.ToTorch(d)
		ts[par.Name] = safetensors.Tensor{Shape: par.TorchShape, Data: d}
	}
	if err := p.Load(&Checkpoint{Path: "other weights", Tensors: ts}); err != nil {
		t.Fatal(err)
	}
	loaded := check("after Load")
	if sameOutputs(loaded, first) == nil {
		t.Fatal("Load of other weights did not change the outputs")
	}

	// An Adam step on every parameter, then Modified, as the trainer does.
	rng := rand.New(rand.NewPCG(3, 4))
	a := kernels.AdamParams{LR: 0.01, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
	for _, par := range p.List {
		w := par.Buf.Data()
		g, m, v := make([]float32, len(w)), make([]float32, len(w)), make([]float32, len(w))
		for i := range g {
			g[i] = float32(rng.Float64()*2 - 1)
		}
		if err := kernels.AdamStep(a, 1, w, g, m, v); err != nil {
			t.Fatal(err)
		}
	}
	p.Modified()
	stepped := check("after an Adam step and Modified")
	if sameOutputs(stepped, loaded) == nil {
		t.Fatal("the Adam step did not change the outputs")
	}

	// A write without Modified: the packed net keeps the old weights, the
	// unpacked one sees the new ones; Modified makes them agree again.
	w0 := p.List[0].Buf.Data()
	for i := range w0 {
		w0[i] = -w0[i]
	}
	if err := packed.Forward(x, nil); err != nil {
		t.Fatal(err)
	}
	if err := sameOutputs(packedOutputs(packed), stepped); err != nil {
		t.Fatalf("without Modified, the packed net changed its outputs: %v", err)
	}
	if err := plain.Forward(x, nil); err != nil {
		t.Fatal(err)
	}
	if sameOutputs(packedOutputs(plain), stepped) == nil {
		t.Fatal("negating the first convolution's weights did not change the unpacked net's outputs")
	}
	p.Modified()
	check("after a direct write and Modified")

	// Every implementation (another tile height: repacked at the next
	// Forward), and back.
	prev := kernels.Impl()
	for _, impl := range kernels.Available() {
		if err := kernels.Use(impl); err != nil {
			t.Fatal(err)
		}
		check("impl=" + impl)
	}
	if err := kernels.Use(prev); err != nil {
		t.Fatal(err)
	}
	check("impl=" + prev + " again")

	// Two conv threads at batch 1: the halves packed on their own, and
	// back to one thread.
	if batch == 1 {
		if err := packed.SetConvThreads(2); err != nil {
			t.Fatal(err)
		}
		split := 0
		for _, L := range packed.convs {
			if L.split != nil {
				split++
			}
		}
		if preset == "tiny-sabour" && split == 0 {
			t.Fatal("no convolution split")
		}
		check("two conv threads")
		for _, L := range packed.convs {
			if L.split != nil && !L.pack.usable(true) {
				t.Errorf("conv %s: split but its halves are not packed", L.Name)
			}
		}
		p.Modified()
		check("two conv threads after Modified")
		if a := testing.AllocsPerRun(3, func() { p.Modified(); _ = packed.Forward(x, nil) }); a != 0 {
			t.Errorf("a forward on two conv threads that repacks allocates %.1f times", a)
		}
		if err := packed.SetConvThreads(1); err != nil {
			t.Fatal(err)
		}
		check("one conv thread again")
	}
	for _, L := range packed.convs {
		if L.pw != nil && !L.pack.usable(false) {
			t.Errorf("conv %s: packed buffer not in use", L.Name)
		}
	}

	if a := testing.AllocsPerRun(5, func() { _ = packed.Forward(x, nil) }); a != 0 {
		t.Errorf("a packed forward allocates %.1f times", a)
	}
	if a := testing.AllocsPerRun(5, func() { p.Modified(); _ = packed.Forward(x, nil) }); a != 0 {
		t.Errorf("a packed forward that repacks allocates %.1f times", a)
	}
}

// TestInferenceNetPackedOptions: NewInferenceNetOptions refuses nil
// parameters; a training Net has no packed weights.
func TestInferenceNetPackedOptions(t *testing.T) {
	if _, err := NewInferenceNetOptions(nil, 1, InferenceOptions{}); err == nil {
		t.Error("nil parameters: no error")
	}
	p, err := NewParams(Presets()["tiny-deep3"])
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewNet(p, 2)
	if err != nil {
		t.Fatal(err)
	}
	if b := tr.Plan().Bytes[graph.Packed]; b != 0 {
		t.Errorf("training net: %d bytes of packed weights", b)
	}
	for _, L := range tr.convs {
		if L.pw != nil {
			t.Errorf("training net: conv %s has a packed buffer", L.Name)
		}
	}
}
