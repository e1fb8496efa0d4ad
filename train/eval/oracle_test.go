package eval

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/safetensors"
)

// TestOracleNorms runs the evaluator on the PyTorch oracle's weights and
// batch and compares the capsule lengths and predictions with PyTorch's
// (the lengths do not depend on the decoder mask, so the forward-only
// graph must give the oracle's). Tolerance: capsnet's oracleTolOut, 1e-4
// of the largest length (float32 sums in another order).
func TestOracleNorms(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "oracle")
	for _, name := range []string{"tiny-sabour", "tiny-deep", "tiny-deep-uniform", "tiny-deep3"} {
		t.Run(name, func(t *testing.T) {
			cfg := capsnet.Presets()[name]
			ck, err := capsnet.ReadCheckpoint(filepath.Join(dir, name+"-weights.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			p, err := ck.Params(&cfg)
			if err != nil {
				t.Fatal(err)
			}
			exp, err := safetensors.Read(filepath.Join(dir, name+"-expected.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			x, y, want := exp.Tensors["x"], exp.Tensors["y"], exp.Tensors["norms"]
			B := len(y.Data)
			ev, err := New(p, B, 2)
			if err != nil {
				t.Fatal(err)
			}
			defer ev.Close()
			labels, pred := make([]int, B), make([]int, B)
			for i, v := range y.Data {
				labels[i] = int(v)
			}
			if err := ev.Predict(x.Data, labels, pred); err != nil {
				t.Fatal(err)
			}
			got := make([]float32, len(want.Data))
			if err := ev.Norms(got); err != nil {
				t.Fatal(err)
			}
			scale := 0.0
			for _, v := range want.Data {
				scale = math.Max(scale, math.Abs(float64(v)))
			}
			for i := range want.Data {
				if e := math.Abs(float64(got[i]-want.Data[i])) / scale; !(e <= 1e-4) {
					t.Fatalf("norm %d: %v, PyTorch %v (error %.1e of %.3g)", i, got[i], want.Data[i], e, scale)
				}
			}
			classes := p.Config.Classes
			for b := 0; b < B; b++ {
				row := want.Data[b*classes : (b+1)*classes]
				best := 0
				for j, v := range row {
					if v > row[best] {
						best = j
					}
				}
				if pred[b] != best {
					t.Errorf("sample %d: predicted %d, PyTorch's longest capsule %d", b, pred[b], best)
				}
			}
		})
	}
}
