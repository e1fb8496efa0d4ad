package main

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
)

func tinyCheckpoint(t *testing.T) string {
	t.Helper()
	p, err := capsnet.NewParams(capsnet.Presets()["tiny-deep"])
	if err != nil {
		t.Fatal(err)
	}
	p.Init(1)
	path := filepath.Join(t.TempDir(), "ck.safetensors")
	if err := p.SaveCheckpoint(path, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestInferDataAndImage(t *testing.T) {
	ck := tinyCheckpoint(t)
	if err := run([]string{"-checkpoint", ck, "-data", "embedded", "-batch", "64"}); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-checkpoint", ck, "-data", "affnist-embedded", "-batch", "100"}); err == nil || !strings.Contains(err.Error(), "do not fit") {
		// tiny-deep takes 28×28 images; AffNIST images are 40×40: refused.
		t.Errorf("28×28 model on 40×40 AffNIST: %v", err)
	}
	img := image.NewGray(image.Rect(0, 0, 20, 20))
	for i := 5; i < 15; i++ {
		img.SetGray(i, 10, color.Gray{Y: 255})
	}
	path := filepath.Join(t.TempDir(), "digit.png")
	f, _ := os.Create(path)
	png.Encode(f, img)
	f.Close()
	if err := run([]string{"-checkpoint", ck, "-image", path}); err != nil {
		t.Fatal(err)
	}
}

// TestPrintPlans checks the -plan report: both graphs, shared below
// unshared, with or without a checkpoint.
func TestPrintPlans(t *testing.T) {
	var sb strings.Builder
	if err := printPlans(&sb, capsnet.Presets()["tiny-deep"], 4); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	for _, want := range []string{"model tiny-deep, batch 4", "inference graph:", "training  graph:", "unshared"} {
		if !strings.Contains(out, want) {
			t.Errorf("-plan output lacks %q:\n%s", want, out)
		}
	}
	if err := run([]string{"-model", "tiny-deep", "-batch", "2", "-plan"}); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-checkpoint", tinyCheckpoint(t), "-plan"}); err != nil {
		t.Fatal(err)
	}
}

func TestInferErrors(t *testing.T) {
	ck := tinyCheckpoint(t)
	bad := filepath.Join(t.TempDir(), "bad.png")
	os.WriteFile(bad, []byte("not a png"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-checkpoint", "/nonexistent.safetensors"}, "-checkpoint"},
		{[]string{"-checkpoint", ck, "-data", "imagenet"}, "-data"},
		{[]string{"-checkpoint", ck, "-image", bad}, "bad.png"},
		{[]string{"-checkpoint", ck, "-batch", "0"}, "-batch"},
	} {
		if err := run(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("infer %v: error %v, want one mentioning %q", tc.args, err, tc.want)
		}
	}
}
