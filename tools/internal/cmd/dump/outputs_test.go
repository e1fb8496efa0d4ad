package dump

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/tools/internal/clitest"
)

// TestOutputAimedAtInput: -out aimed at -weights, -batch or a -model
// config file, by its path, as dir/./name or through a symbolic link, is
// refused before any work (exit 2, one line naming both flags) and the
// input is left byte for byte.
func TestOutputAimedAtInput(t *testing.T) {
	src := filepath.Join("..", "..", "..", "..", "testdata", "oracle")
	dir := t.TempDir()
	w, b, m := filepath.Join(dir, "w.safetensors"), filepath.Join(dir, "b.safetensors"), filepath.Join(dir, "m.json")
	for dst, from := range map[string]string{w: "tiny-deep-weights.safetensors", b: "tiny-deep-expected.safetensors"} {
		raw, err := os.ReadFile(filepath.Join(src, from))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(m, []byte(capsnet.Presets()["tiny-deep"].JSON()), 0o644); err != nil {
		t.Fatal(err)
	}
	files := clitest.Snapshot(t, w, b, m)
	for flag, in := range map[string]string{"-weights": w, "-batch": b, "-model": m} {
		for _, out := range append([]string{in}, clitest.Aliases(t, in)...) {
			r := clitest.Run(t, nil, "-model", m, "-weights", w, "-batch", b, "-out", out)
			clitest.Refused(t, "-out "+out, r, files, "-out "+out, flag+" "+in)
		}
	}
}

// TestWroteLine: dump confirms the file it writes with one line "wrote
// PATH (SIZE; kernels NAME)" on stdout.
func TestWroteLine(t *testing.T) {
	src := filepath.Join("..", "..", "..", "..", "testdata", "oracle")
	out := filepath.Join(t.TempDir(), "out.safetensors")
	r := clitest.Run(t, nil, "-weights", filepath.Join(src, "tiny-deep-weights.safetensors"), "-batch", filepath.Join(src, "tiny-deep-expected.safetensors"),
		"-model", "tiny-deep", "-out", out, "-kernels", "ref")
	if r.Code != 0 {
		t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	clitest.Wrote(t, "dump", r.Stdout, map[string]string{out: "kernels ref"})
}
