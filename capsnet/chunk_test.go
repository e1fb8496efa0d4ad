package capsnet

import (
	"fmt"
	"slices"
	"testing"

	"github.com/capstan-ml/capstan/kernels"
)

// TestInferenceNetChunks: an inference Net of a batch of 4·convChunk or more runs
// its convolutions chunk by chunk (Net.convChunks) and computes the same
// bits as one running them layer by layer over the whole batch (convChunk
// raised past the batch), with and without packed weights, on every
// implementation, for batches whose last chunk is whole, partial or one
// image; its plan is smaller, and a Forward does not allocate.
func TestInferenceNetChunks(t *testing.T) {
	defer func(c int) { convChunk = c }(convChunk)
	for _, c := range []struct {
		preset string
		batch  int
	}{{"tiny-deep3", 9}, {"tiny-deep3", 16}, {"tiny-sabour", 11}, {"deep", 9}} {
		for _, noPack := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/batch=%d/nopack=%v", c.preset, c.batch, noPack), func(t *testing.T) {
				testInferenceNetChunks(t, c.preset, c.batch, noPack)
			})
		}
	}
}

func testInferenceNetChunks(t *testing.T, preset string, batch int, noPack bool) {
	p, err := NewParams(Presets()[preset])
	if err != nil {
		t.Fatal(err)
	}
	p.Init(5)
	opts := InferenceOptions{NoPackedWeights: noPack}
	convChunk = 2 // chunks of 2 from a batch of 8 on
	chunked, err := NewInferenceNetOptions(p, batch, opts)
	if err != nil {
		t.Fatal(err)
	}
	convChunk = batch
	whole, err := NewInferenceNetOptions(p, batch, opts)
	if err != nil {
		t.Fatal(err)
	}
	if chunked.chunk != 2 || whole.chunk != 0 {
		t.Fatalf("chunks: %d and %d, want 2 and 0", chunked.chunk, whole.chunk)
	}
	if c, w := chunked.Plan().Total, whole.Plan().Total; c >= w {
		t.Errorf("chunked plan %d bytes, whole %d", c, w)
	}
	x := make([]float32, batch*chunked.InputLen())
	for i := range x {
		x[i] = float32((i*41)%23) / 23
	}
	prev := kernels.Impl()
	eachImpl(t, func(impl string) {
		if err := chunked.Forward(x, nil); err != nil {
			t.Fatalf("impl=%s: chunked: %v", impl, err)
		}
		if err := whole.Forward(x, nil); err != nil {
			t.Fatalf("impl=%s: whole: %v", impl, err)
		}
		if err := sameOutputs(chunkOutputs(chunked), chunkOutputs(whole)); err != nil {
			t.Fatalf("impl=%s: the chunked net differs from the whole one: %v", impl, err)
		}
		if impl != prev {
			return
		}
		if a := testing.AllocsPerRun(3, func() {
			if err := chunked.Forward(x, nil); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("impl=%s: chunked Forward allocates %v times", impl, a)
		}
	})
}

// eachImpl runs f with every kernel implementation in use, then the one
// in use before.
func eachImpl(t *testing.T, f func(impl string)) {
	t.Helper()
	prev := kernels.Impl()
	defer func() {
		if err := kernels.Use(prev); err != nil {
			t.Fatal(err)
		}
	}()
	for _, impl := range kernels.Available() {
		if err := kernels.Use(impl); err != nil {
			t.Fatal(err)
		}
		f(impl)
	}
}

// chunkOutputs is what TestInferenceNetChunks compares: the primary
// capsules (computed from the last convolution's output), the class
// capsules' norms, the reconstruction (buffers the plan pins, unlike the
// convolutions' outputs).
func chunkOutputs(n *Net) [][]float32 {
	return [][]float32{append([]float32(nil), n.prim.v.Data()...), append([]float32(nil), n.Norms()...), append([]float32(nil), n.Recon()...)}
}

// TestTrainingNetChunks: a training Net of a batch of 4·convChunk or more
// runs its convolutions' forward chunk by chunk into whole-batch buffers
// and computes the same bits as one running them layer by layer: the
// norms, the reconstruction and every gradient, on every implementation;
// a step does not allocate; and its profile has the same rows as the
// layer-by-layer Net's, each convolution timed, ForwardSteps naming them.
func TestTrainingNetChunks(t *testing.T) {
	defer func(c int) { convChunk = c }(convChunk)
	const batch = 9
	p, err := NewParams(Presets()["tiny-deep3"])
	if err != nil {
		t.Fatal(err)
	}
	p.Init(6)
	convChunk = 2
	chunked, err := NewNet(p, batch)
	if err != nil {
		t.Fatal(err)
	}
	convChunk = batch
	whole, err := NewNet(p, batch)
	if err != nil {
		t.Fatal(err)
	}
	if chunked.chunk != 2 || whole.chunk != 0 {
		t.Fatalf("chunks: %d and %d, want 2 and 0", chunked.chunk, whole.chunk)
	}
	x := make([]float32, batch*chunked.InputLen())
	for i := range x {
		x[i] = float32((i*43)%29) / 29
	}
	labels := []int{0, 1, 2, 3, 4, 5, 6, 7, 8}
	step := func(n *Net) {
		t.Helper()
		if err := n.Forward(x, labels); err != nil {
			t.Fatal(err)
		}
		if err := n.Backward(); err != nil {
			t.Fatal(err)
		}
	}
	outputs := func(n *Net) [][]float32 {
		out := chunkOutputs(n)
		for _, g := range n.Grads {
			out = append(out, append([]float32(nil), g.Data()...))
		}
		return out
	}
	eachImpl(t, func(impl string) {
		step(chunked)
		step(whole)
		if err := sameOutputs(outputs(chunked), outputs(whole)); err != nil {
			t.Fatalf("impl=%s: the chunked net differs from the whole one: %v", impl, err)
		}
	})
	chunked.SetProfiling(true)
	if a := testing.AllocsPerRun(3, func() { step(chunked) }); a != 0 {
		t.Errorf("a chunked, profiled step allocates %v times", a)
	}
	fwd, _ := chunked.Profile()
	if got, want := names(fwd), whole.ForwardSteps(); !slices.Equal(got, want) || !slices.Equal(chunked.ForwardSteps(), want) {
		t.Errorf("chunked profile rows %v, ForwardSteps %v, want %v", got, chunked.ForwardSteps(), want)
	}
	for i, L := range chunked.convs {
		if fwd[i].Time <= 0 || fwd[i].Runs != 4 || fwd[i].FLOPs != L.sh.FLOPs() {
			t.Errorf("profile row %q: %v in %d runs, %v FLOPs; want > 0 in 4 runs, %v", fwd[i].Name, fwd[i].Time, fwd[i].Runs, fwd[i].FLOPs, L.sh.FLOPs())
		}
	}
}
