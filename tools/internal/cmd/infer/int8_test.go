package infer

import (
	"image"
	"image/color"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/quant"
	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/tools/internal/clitest"
)

// int8Model writes a calibrated int8 model of tiny-deep and returns its
// path.
func int8Model(t *testing.T) string {
	t.Helper()
	p, err := capsnet.NewParams(capsnet.Presets()["tiny-deep"])
	if err != nil {
		t.Fatal(err)
	}
	p.Init(1)
	m, err := quant.Quantize(p, quant.Options{})
	if err != nil {
		t.Fatal(err)
	}
	x := make([]float32, 4*28*28)
	for i := range x {
		x[i] = float32(i%11) / 11
	}
	if m.Calibration, err = quant.Calibrate(p, x, quant.CalibOptions{}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tiny.int8.safetensors")
	if err := m.Save(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestInferInt8 runs an int8 model on a data set at batch 1 (footprint
// before the first image, latency percentiles), on one image (kernels,
// latency) and with -plan; the figures and -model are refused.
func TestInferInt8(t *testing.T) {
	q := int8Model(t)
	r := clitest.Run(t, nil, "-checkpoint", q, "-batch", "1", "-threads", "1")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	foot := strings.Index(r.Stdout, "int8 model tiny-deep, batch 1, 1 replica(s): static memory")
	acc := strings.Index(r.Stdout, "model tiny-deep (int8), mnist-embedded-test: 1000 images, accuracy")
	if foot < 0 || acc < foot || !strings.Contains(r.Stdout, "int8 GEMM ") || !strings.Contains(r.Stdout, "latency at batch 1 over 1000 images: p50 ") {
		t.Errorf("output:\n%s", r.Stdout)
	}
	// Quantized without the provenance of a checkpoint: infer says so.
	if !strings.Contains(r.Stderr, "warning: "+q+": the int8 model's checkpoint does not record the data set") {
		t.Errorf("no provenance warning: %q", r.Stderr)
	}
	img := image.NewGray(image.Rect(0, 0, 20, 20))
	for i := 5; i < 15; i++ {
		img.SetGray(i, 10, color.Gray{Y: 255})
	}
	path := filepath.Join(t.TempDir(), "digit.png")
	f, _ := os.Create(path)
	png.Encode(f, img)
	f.Close()
	r = clitest.Run(t, nil, "-checkpoint", q, "-image", path, "-repeat", "7")
	if r.Code != 0 || !strings.Contains(r.Stdout, path+": class ") || !strings.Contains(r.Stdout, "latency at batch 1 over 7 images") || !strings.Contains(r.Stdout, "kernels ") {
		t.Errorf("-image: exit %d, output:\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	r = clitest.Run(t, nil, "-checkpoint", q, "-plan", "-batch", "3")
	if r.Code != 0 || !strings.Contains(r.Stdout, "int8 model tiny-deep, batch 3: static memory") {
		t.Errorf("-plan: exit %d, output:\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"-checkpoint", q, "-recon", "r.png"}, "-recon does not apply to an int8 model", 2},
		{[]string{"-checkpoint", q, "-model", "tiny-deep"}, "-model does not apply", 2},
		{[]string{"-checkpoint", q, "-repeat", "3"}, "-repeat: only with -image", 2},
		{[]string{"-checkpoint", q, "-image", path, "-repeat", "0"}, "-repeat", 2},
	} {
		err := run(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("infer %v: error %v, want one mentioning %q", tc.args, err, tc.want)
		}
		if code := cli.Exit(io.Discard, "infer", err); code != tc.code {
			t.Errorf("infer %v: exit status %d, want %d", tc.args, code, tc.code)
		}
	}
}
