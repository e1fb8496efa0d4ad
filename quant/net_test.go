package quant

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/kernels"
)

// digitImages returns n images for model p that look like strokes on a
// dark background (a few bright random rectangles), so that activations
// are sparse as on real digits.
func digitImages(p *capsnet.Params, n int, seed uint64) []float32 {
	in := p.Config.Input
	rng := rand.New(rand.NewPCG(seed, 1))
	x := make([]float32, n*in[0]*in[1]*in[2])
	for k := range n {
		img := x[k*in[0]*in[1]*in[2]:][:in[0]*in[1]*in[2]]
		for range 4 {
			h0, w0 := rng.IntN(in[1]), rng.IntN(in[2])
			h1, w1 := min(in[1], h0+1+rng.IntN(in[1]/2)), min(in[2], w0+1+rng.IntN(3))
			for c := range in[0] {
				for h := h0; h < h1; h++ {
					for w := w0; w < w1; w++ {
						img[(c*in[1]+h)*in[2]+w] = 0.5 + 0.5*rng.Float32()
					}
				}
			}
		}
	}
	return x
}

// calibrated returns the int8 model of p, calibrated (MinMax) on images.
func calibrated(t testing.TB, p *capsnet.Params, images []float32, g Granularity) *Model {
	t.Helper()
	m, err := Quantize(p, Options{Granularity: g})
	if err != nil {
		t.Fatal(err)
	}
	if m.Calibration, err = Calibrate(p, images, CalibOptions{Method: MinMax}); err != nil {
		t.Fatal(err)
	}
	return m
}

// relErr is ‖a − b‖/‖b‖.
func relErr(a, b []float32) float64 {
	var num, den float64
	for i := range b {
		d := float64(a[i]) - float64(b[i])
		num += d * d
		den += float64(b[i]) * float64(b[i])
	}
	return math.Sqrt(num / max(den, 1e-300))
}

// TestNetMatchesFloat runs the int8 Net and the float inference Net of
// the dequantized model (the weights the int8 model stands for) on the
// same images and compares every capsule layer's output, the class norms
// and the reconstructions. The int8 Net differs only by the rounding of
// its activations to 7 bits plus sign, about 0.4% of each tensor's range
// per GEMM input, compounded over the layers: the bound of 8% relative
// (Frobenius) error on each capsule layer leaves room for that and fails
// on any layout or scale mistake (those give errors of order 100%). Every
// kernel implementation runs, on models with one and with four capsule
// layers, with depthwise and strided convolutions, both granularities.
func TestNetMatchesFloat(t *testing.T) {
	cases := []struct {
		preset string
		g      Granularity
		batch  int
	}{
		{"tiny-sabour", PerCapsule, 3}, {"tiny-deep", PerBlock, 2}, {"tiny-deep3", PerCapsule, 1},
		{"tiny-deep-selfattn", PerBlock, 2}, {"tiny-deep-selfattn-in", PerCapsule, 3},
		{"deep", PerCapsule, 2}, {"sabour", PerBlock, 1},
	}
	if testing.Short() {
		cases = cases[:5]
	}
	prev := kernels.Impl()
	defer kernels.Use(prev)
	for _, impl := range kernels.Available() {
		if err := kernels.Use(impl); err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			if impl == "ref" && !strings.HasPrefix(c.preset, "tiny-") {
				continue // the reference GEMM takes 15 s on Sabour's primary convolution
			}
			t.Run(fmt.Sprintf("impl=%s/%s/%s", impl, c.preset, c.g), func(t *testing.T) {
				t.Logf("int8 GEMM path %s", kernels.ImplI8())
				p := newParams(t, c.preset, 7)
				images := digitImages(p, 8, 1)
				m := calibrated(t, p, images, c.g)
				dq, err := m.Dequantize()
				if err != nil {
					t.Fatal(err)
				}
				fn, err := capsnet.NewInferenceNet(dq, c.batch)
				if err != nil {
					t.Fatal(err)
				}
				qn, err := NewNet(m, c.batch)
				if err != nil {
					t.Fatal(err)
				}
				x := digitImages(p, c.batch, 2)
				if err := fn.Forward(x, nil); err != nil {
					t.Fatal(err)
				}
				if err := qn.Forward(x); err != nil {
					t.Fatal(err)
				}
				for l, L := range qn.caps {
					want, _, err := fn.Capsules(l + 1)
					if err != nil {
						t.Fatal(err)
					}
					e := relErr(L.v.Data(), want)
					t.Logf("%s: relative error %.4f", p.Config.Caps[l].Name, e)
					if e > 0.08 || math.IsNaN(e) {
						t.Errorf("%s: relative error %.4f of the output capsules, want ≤ 0.08", p.Config.Caps[l].Name, e)
					}
				}
				if e := relErr(qn.Norms(), fn.Norms()); e > 0.08 || math.IsNaN(e) {
					t.Errorf("class norms: relative error %.4f", e)
				}
				agree := 0
				for i, y := range qn.Pred() {
					if y == fn.Pred()[i] {
						agree++
					}
				}
				// The decoder is masked by each Net's own prediction: compare
				// the reconstructions of the images both predict alike.
				pix := dq.Geo.Pixels
				for i, y := range qn.Pred() {
					if y != fn.Pred()[i] {
						continue
					}
					if e := relErr(qn.Recon()[i*pix:(i+1)*pix], fn.Recon()[i*pix:(i+1)*pix]); e > 0.08 {
						t.Errorf("image %d: reconstruction relative error %.4f", i, e)
					}
				}
				t.Logf("predictions agree on %d of %d", agree, c.batch)
			})
		}
	}
}

// TestNetAllocs: Forward allocates nothing.
func TestNetAllocs(t *testing.T) {
	for _, preset := range []string{"tiny-deep", "tiny-sabour", "tiny-deep-selfattn", "tiny-deep-selfattn-in"} {
		p := newParams(t, preset, 3)
		m := calibrated(t, p, digitImages(p, 4, 1), PerCapsule)
		n, err := NewNet(m, 4)
		if err != nil {
			t.Fatal(err)
		}
		x := digitImages(p, 4, 5)
		if a := testing.AllocsPerRun(5, func() {
			if err := n.Forward(x); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("%s: %v allocations per Forward", preset, a)
		}
	}
}

// TestNetFootprint checks the memory target: the deep model in
// int8 at batch 1 needs at most 4 MiB in total (arena + weights), and
// reports both models' footprints beside their float inference plans.
func TestNetFootprint(t *testing.T) {
	for _, preset := range []string{"deep", "sabour"} {
		p := newParams(t, preset, 1)
		m := calibrated(t, p, digitImages(p, 2, 1), PerCapsule)
		n, err := NewNet(m, 1)
		if err != nil {
			t.Fatal(err)
		}
		fp := n.Footprint()
		fn, err := capsnet.NewInferenceNet(p, 1)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s batch 1: int8 %s; float32 params %s + %s", preset, fp, capsMiB(p.Arena.Bytes()), fn.Plan())
		if preset == "deep" && fp.Total() > 4<<20 {
			t.Errorf("deep int8 batch 1 needs %s, more than 4 MiB", fp)
		}
		if fp.Weights > p.Arena.Bytes()*3/10 {
			t.Errorf("%s: int8 weights %d bytes, more than 0.3× the float %d", preset, fp.Weights, p.Arena.Bytes())
		}
	}
}

func capsMiB(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// TestNetErrors: an uncalibrated model, a bad batch, a wrong input length
// and a model whose tensors do not match its config are errors.
func TestNetErrors(t *testing.T) {
	p := newParams(t, "tiny-deep", 1)
	m := calibrated(t, p, digitImages(p, 2, 1), PerCapsule)
	unc := *m
	unc.Calibration = nil
	if _, err := NewNet(&unc, 1); err == nil || !strings.Contains(err.Error(), "calibrate") {
		t.Errorf("uncalibrated: %v", err)
	}
	for _, b := range []int{0, -1, capsnet.MaxBatch + 1} {
		if _, err := NewNet(m, b); err == nil {
			t.Errorf("batch %d: no error", b)
		}
	}
	bad := *m
	bad.Tensors = append([]Tensor(nil), m.Tensors...)
	bad.Tensors[0].Scales = bad.Tensors[0].Scales[:1]
	if _, err := NewNet(&bad, 1); err == nil || !strings.Contains(err.Error(), bad.Tensors[0].Name) {
		t.Errorf("short scales: %v", err)
	}
	cal := *m.Calibration
	cal.Scales = append([]ActScale(nil), cal.Scales...)
	cal.Scales[1].Scale = float32(math.NaN())
	nanScale := *m
	nanScale.Calibration = &cal
	if _, err := NewNet(&nanScale, 1); err == nil || !strings.Contains(err.Error(), cal.Scales[1].Name) {
		t.Errorf("NaN activation scale: %v", err)
	}
	n, err := NewNet(m, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Forward(make([]float32, n.InputLen())); err == nil {
		t.Error("one image for a batch of 2: no error")
	}
}

// TestEveryRoutingKindInt8 compiles and runs the int8 graph of tiny-deep's
// twin of every routing kind of capsnet.RoutingKinds, and checks it agrees
// with the float model's predictions on most images.
func TestEveryRoutingKindInt8(t *testing.T) {
	for _, kind := range capsnet.RoutingKinds {
		t.Run(kind.Name, func(t *testing.T) {
			p := newParams(t, capsnet.PresetTwin("tiny-deep", kind.Name), 1)
			images := digitImages(p, 8, 2)
			m := calibrated(t, p, images, PerCapsule)
			const B = 8
			n, err := NewNet(m, B)
			if err != nil {
				t.Fatal(err)
			}
			if err := n.Forward(images); err != nil {
				t.Fatal(err)
			}
			f, err := capsnet.NewInferenceNet(p, B)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Forward(images, nil); err != nil {
				t.Fatal(err)
			}
			if e := relErr(n.Norms(), f.Norms()); !(e < 0.1) {
				t.Errorf("int8 norms off the float ones by %.3g", e)
			}
		})
	}
}

// TestPlanNet: PlanNet's footprint is NewNet's, and ProcessMemory refuses
// 1000 replicas (a one-line error naming threads and batch) before
// planning any.
func TestPlanNet(t *testing.T) {
	p := newParams(t, "deep", 1)
	m := calibrated(t, p, digitImages(p, 2, 1), PerCapsule)
	for _, batch := range []int{1, 7} {
		f, err := PlanNet(m, batch)
		if err != nil {
			t.Fatal(err)
		}
		n, err := NewNet(m, batch)
		if err != nil {
			t.Fatal(err)
		}
		if got := n.Footprint(); got != f {
			t.Errorf("batch %d: PlanNet %v, NewNet %v", batch, f, got)
		}
	}
	pm, err := ProcessMemory(m, 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	f4, _ := PlanNet(m, 4)
	f3, _ := PlanNet(m, 3)
	if want := f4.Total() + 2*f3.Total(); pm.Eval != want {
		t.Errorf("ProcessMemory(10, 3).Eval = %d, want %d", pm.Eval, want)
	}
	_, err = ProcessMemory(m, 1000, 1000)
	if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "threads 1000") || !strings.Contains(err.Error(), "batch 1000") {
		t.Errorf("1000 replicas: %v", err)
	}
}
