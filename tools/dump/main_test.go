package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet/safetensors"
)

// TestDumpOracle runs the command on a PyTorch state dict (no config
// metadata, so -model is needed) and a batch file, and checks the loss it
// writes against PyTorch's (the full tensor comparison is capsnet's
// TestOracle).
func TestDumpOracle(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "oracle")
	out := filepath.Join(t.TempDir(), "out.safetensors")
	exp := filepath.Join(dir, "tiny-deep-expected.safetensors")
	if err := run([]string{"-model", "tiny-deep", "-weights", filepath.Join(dir, "tiny-deep-weights.safetensors"), "-batch", exp, "-out", out}); err != nil {
		t.Fatal(err)
	}
	got, err := safetensors.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := safetensors.Read(exp)
	g, w := got.Tensors["loss"].Data[0], want.Tensors["loss"].Data[0]
	if d := g - w; d > 1e-4*w || d < -1e-4*w {
		t.Errorf("loss %v, PyTorch %v", g, w)
	}
	if len(got.Tensors) < len(want.Tensors) {
		t.Errorf("dump has %d tensors, the oracle %d", len(got.Tensors), len(want.Tensors))
	}
}

func TestDumpErrors(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "oracle")
	w := filepath.Join(dir, "tiny-deep-weights.safetensors")
	out := filepath.Join(t.TempDir(), "out.safetensors")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-weights", w, "-out", out}, "-batch"},
		{[]string{"-weights", w, "-batch", w, "-out", out}, "no model config"},
		{[]string{"-model", "tiny-deep", "-weights", w, "-batch", w, "-out", out}, "needs tensors x"},
		{[]string{"-model", "tiny-sabour", "-weights", w, "-batch", w, "-out", out}, "missing"},
		{[]string{"-model", "nope", "-weights", w, "-batch", w, "-out", out}, "-model"},
	} {
		if err := run(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("dump %v: error %v, want one mentioning %q", tc.args, err, tc.want)
		}
	}
}
