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
	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/tools/internal/clitest"
	"github.com/capstan-ml/capstan/train/eval"
)

// tinyCheckpoint writes a checkpoint of tiny-deep (config in its metadata).
func tinyCheckpoint(t *testing.T) string { return clitest.Checkpoint(t, "tiny-deep") }

func TestInferDataAndImage(t *testing.T) {
	ck := tinyCheckpoint(t)
	if err := run([]string{"-checkpoint", ck, "-data", "embedded", "-batch", "64"}); err != nil {
		t.Fatal(err)
	}
	// tiny-deep takes 28×28 images; AffNIST images are 40×40: rescaled.
	if err := run([]string{"-checkpoint", ck, "-data", "affnist-embedded", "-batch", "100"}); err != nil {
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

// TestFigures: -recon and -perturb write PNGs of the layout's size, from
// a data set (AffNIST rescaled to the model's 28×28) or one -image.
func TestFigures(t *testing.T) {
	ck := tinyCheckpoint(t)
	dir := t.TempDir()
	recon, perturb := filepath.Join(dir, "recon.png"), filepath.Join(dir, "perturb.png")
	if err := run([]string{"-checkpoint", ck, "-data", "affnist-embedded", "-recon", recon, "-perturb", perturb, "-perturb-index", "999"}); err != nil {
		t.Fatal(err)
	}
	// 2 rows of 8 pairs of 28×28 images (gap 1, margins 3), pixels drawn 2×2.
	if w, h := clitest.PNGSize(t, recon); w != 2*(3+8*(57+3)) || h != 2*(3+2*(28+3)) {
		t.Errorf("-recon: %d×%d figure", w, h)
	}
	// tiny-deep's output capsules have 4 dimensions: 4 rows of a label
	// and 11 images.
	if w, h := clitest.PNGSize(t, perturb); w != 2*(3+eval.FigureLabelWidth+11*29-1+3) || h != 2*(3+4*29-1+3) {
		t.Errorf("-perturb: %d×%d figure", w, h)
	}
	img := image.NewGray(image.Rect(0, 0, 28, 28))
	img.SetGray(14, 14, color.Gray{Y: 255})
	path := filepath.Join(dir, "digit.png")
	f, _ := os.Create(path)
	png.Encode(f, img)
	f.Close()
	if err := run([]string{"-checkpoint", ck, "-image", path, "-recon", recon, "-perturb", perturb, "-perturb-top", "2"}); err != nil {
		t.Fatal(err)
	}
	if w, h := clitest.PNGSize(t, recon); w != 2*(3+57+3) || h != 2*(3+28+3) {
		t.Errorf("-image -recon: %d×%d figure", w, h)
	}
	if w, h := clitest.PNGSize(t, perturb); w != 2*(3+eval.FigureLabelWidth+11*29-1+3) || h != 2*(3+2*29-1+3) {
		t.Errorf("-perturb-top 2: %d×%d figure", w, h)
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

func TestMain(m *testing.M) { clitest.MainOf(m, "infer", Main) }

// TestInferErrors checks that each bad flag, file or combination gives an
// error naming it, and the exit status it maps to: 2 for a mistake on the
// command line, 1 for a file or model.
func TestInferErrors(t *testing.T) {
	ck := tinyCheckpoint(t)
	bad := filepath.Join(t.TempDir(), "bad.png")
	os.WriteFile(bad, []byte("not a png"), 0o644)
	changed := capsnet.Presets()["tiny-deep"]
	changed.Loss.Recon = "mean"
	cf := filepath.Join(t.TempDir(), "tiny-deep.json")
	if err := os.WriteFile(cf, []byte(changed.JSON()), 0o644); err != nil {
		t.Fatal(err)
	}
	stateDict := filepath.Join("..", "..", "..", "..", "testdata", "oracle", "tiny-deep-weights.safetensors") // no config metadata
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"-checkpoint", "/nonexistent.safetensors"}, "-checkpoint", 1},
		{[]string{"-checkpoint", ck, "-data", "imagenet"}, "-data", 2},
		{[]string{"-checkpoint", ck, "-image", bad}, "bad.png", 1},
		{[]string{"-checkpoint", ck, "-batch", "0"}, "-batch", 2},
		{[]string{"-checkpoint", ck, "-batch", "-1"}, "-batch", 2},
		{[]string{"-checkpoint", ck, "-batch", "2000000"}, "-batch", 2},
		{[]string{"-checkpoint", ck, "-threads", "0"}, "-threads", 2},
		{[]string{"-checkpoint", ck, "-threads", "100000"}, "-threads", 2},
		{[]string{"-checkpoint", ck, "-batch", "1e3"}, "-batch", 2},
		{[]string{"-checkpoint", ""}, "-checkpoint", 2},
		{[]string{"-checkpoint", ck, "extra"}, "extra", 2},
		{[]string{"-checkpoint", ck, "-nonsense"}, "-nonsense", 2},
		{[]string{"-checkpoint", ck, "-image", bad, "-data", "mnist"}, "-data does not apply", 2},
		{[]string{"-checkpoint", ck, "-image", bad, "-batch", "10"}, "-batch does not apply", 2},
		{[]string{"-checkpoint", ck, "-plan", "-data", "mnist"}, "-data does not apply", 2},
		{[]string{"-checkpoint", ck, "-plan", "-model", "tiny-deep"}, "not both", 2},
		{[]string{"-checkpoint", ck, "-seed", "3"}, "-seed", 2},
		{[]string{"-checkpoint", ck, "-data-dir", "/tmp"}, "-data-dir", 2},
		// -model against a checkpoint that names its own model
		{[]string{"-checkpoint", ck, "-model", "tiny-sabour"}, ck + " holds model tiny-deep, not tiny-sabour (-model); leave -model out to use the checkpoint's", 1},
		{[]string{"-checkpoint", ck, "-model", cf}, "another configuration of model tiny-deep", 1},
		{[]string{"-checkpoint", stateDict}, "no model config", 1},
		{[]string{"-checkpoint", stateDict, "-model", "tiny-sabour"}, "missing", 1},
		{[]string{"-model", "nope", "-plan"}, "-model", 1},
		{[]string{"-checkpoint", ck, "-perturb-index", "3"}, "only with -perturb", 2},
		{[]string{"-checkpoint", ck, "-perturb-top", "3"}, "-perturb-top: only with -perturb", 2},
		{[]string{"-checkpoint", ck, "-perturb", "p.png", "-perturb-top", "-1"}, "-perturb-top", 2},
		{[]string{"-checkpoint", ck, "-perturb", "p.png", "-perturb-index", "-1"}, "-perturb-index", 2},
		{[]string{"-checkpoint", ck, "-perturb", "p.png", "-perturb-index", "1000"}, "-perturb-index 1000: mnist-embedded-test has 1000 images", 2},
		{[]string{"-checkpoint", ck, "-plan", "-recon", "r.png"}, "-recon does not apply", 2},
		{[]string{"-checkpoint", ck, "-image", bad, "-perturb", "p.png", "-perturb-index", "2"}, "-perturb-index does not apply", 2},
		{[]string{"-checkpoint", ck, "-recon", filepath.Join(t.TempDir(), "no", "dir", "r.png")}, "-recon", 1},
	} {
		err := run(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("infer %v: error %v, want one mentioning %q", tc.args, err, tc.want)
		}
		if code := cli.Exit(io.Discard, "infer", err); code != tc.code {
			t.Errorf("infer %v: exit status %d, want %d", tc.args, code, tc.code)
		}
	}
	// The same model as the checkpoint's, given with -model, is accepted,
	// as is -model for a state dict without config metadata.
	if err := run([]string{"-checkpoint", ck, "-model", "tiny-deep", "-batch", "500"}); err != nil {
		t.Errorf("-model naming the checkpoint's own model: %v", err)
	}
	if err := run([]string{"-checkpoint", stateDict, "-model", "tiny-deep", "-batch", "500"}); err != nil {
		t.Errorf("-model for a state dict: %v", err)
	}
}

// TestProcess runs the command as a process (the test binary re-executed):
// -h prints the one-line summary and the flags on stdout and exits 0; a bad
// flag, value or argument prints its error once, on one line of stderr,
// and exits 2; a bad file exits 1.
func TestProcess(t *testing.T) {
	for _, h := range []string{"-h", "-help"} {
		r := clitest.Run(t, nil, h)
		if first, _, _ := strings.Cut(r.Stdout, "\n"); r.Code != 0 || r.Stderr != "" || first != summary {
			t.Errorf("infer %s: exit status %d, stderr %q, first line %q; want 0, nothing, %q", h, r.Code, r.Stderr, first, summary)
		}
		if !strings.Contains(r.Stdout, "\n  -checkpoint string\n") {
			t.Errorf("infer %s: no flags in the usage:\n%s", h, r.Stdout)
		}
	}
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"-bogus"}, 2, "infer: flag provided but not defined: -bogus (see -h)\n"},
		{[]string{"-batch", "0"}, 2, "infer: -batch 0: want 1 to 1048576\n"},
		{[]string{"-threads", "two"}, 2, "infer: invalid value \"two\" for flag -threads: parse error (see -h)\n"},
		{[]string{"x.safetensors"}, 2, "infer: unexpected argument \"x.safetensors\" (flags only; see -h)\n"},
		{[]string{"-checkpoint", filepath.Join(t.TempDir(), "none")}, 1, ""},
	} {
		r := clitest.Run(t, nil, tc.args...)
		if r.Code != tc.code || (tc.stderr != "" && r.Stderr != tc.stderr) {
			t.Errorf("infer %v: exit status %d, stderr %q; want %d, %q", tc.args, r.Code, r.Stderr, tc.code, tc.stderr)
		}
		if strings.Count(r.Stderr, "\n") != 1 || !strings.HasPrefix(r.Stderr, "infer: ") || r.Stdout != "" {
			t.Errorf("infer %v: stderr %q, stdout %q; want one line on stderr starting \"infer: \", nothing on stdout", tc.args, r.Stderr, r.Stdout)
		}
	}
}
