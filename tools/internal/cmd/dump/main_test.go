package dump

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet/safetensors"
	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/tools/internal/clitest"
)

// TestDumpOracle runs the command on a PyTorch state dict (no config
// metadata, so -model is needed) and a batch file, and checks the loss it
// writes against PyTorch's (the full tensor comparison is capsnet's
// TestOracle).
func TestDumpOracle(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "..", "testdata", "oracle")
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

func TestMain(m *testing.M) { clitest.MainOf(m, "dump", Main) }

func TestDumpErrors(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "..", "testdata", "oracle")
	w := filepath.Join(dir, "tiny-deep-weights.safetensors")
	exp := filepath.Join(dir, "tiny-deep-expected.safetensors")
	out := filepath.Join(t.TempDir(), "out.safetensors")
	ck := clitest.Checkpoint(t, "tiny-deep")
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"-weights", w, "-out", out}, "-batch", 2},
		{[]string{"-weights", w, "-batch", exp}, "-out", 2},
		{[]string{"-batch", exp, "-out", out}, "-weights", 2},
		{[]string{"-weights", w, "-batch", w, "-out", out}, "no model config", 1},
		{[]string{"-model", "tiny-deep", "-weights", w, "-batch", w, "-out", out}, "needs tensors x", 1},
		{[]string{"-model", "tiny-sabour", "-weights", w, "-batch", w, "-out", out}, "missing", 1},
		{[]string{"-model", "nope", "-weights", w, "-batch", w, "-out", out}, "-model", 1},
		{[]string{"-model", "tiny-deep", "-weights", w, "-batch", exp, "-out", out, "more"}, "more", 2},
		{[]string{"-model", "tiny-deep", "-weights", w, "-batch", exp, "-out", out, "-x"}, "-x", 2},
		{[]string{"-model", "tiny-deep", "-weights", w, "-batch", exp, "-out", out, "-kernels", "sse9"}, "-kernels", 2},
		{[]string{"-model", "tiny-deep", "-weights", w, "-batch", exp, "-out", w}, "-out " + w + " is the input -weights " + w, 2},
		{[]string{"-model", "tiny-deep", "-weights", w, "-batch", exp, "-out", "./" + exp}, "is the input -batch " + exp, 2},
		{[]string{"-weights", filepath.Join(dir, "none.safetensors"), "-batch", exp, "-out", out}, "none.safetensors", 1},
		// -model against a checkpoint that names its own model: refused,
		// not silently replaced by the checkpoint's.
		{[]string{"-model", "tiny-sabour", "-weights", ck, "-batch", exp, "-out", out}, ck + " holds model tiny-deep, not tiny-sabour (-model); leave -model out to use the checkpoint's", 1},
	} {
		err := run(tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("dump %v: error %v, want one mentioning %q", tc.args, err, tc.want)
		}
		if code := cli.Exit(io.Discard, "dump", err); code != tc.code {
			t.Errorf("dump %v: exit status %d, want %d", tc.args, code, tc.code)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("%s written by a failed dump", out)
	}
	// The checkpoint's own model, named or not, is dumped; the dump is
	// mode 0644 like the other outputs.
	for _, args := range [][]string{{"-weights", ck}, {"-weights", ck, "-model", "tiny-deep"}} {
		if err := run(append(args, "-batch", exp, "-out", out)); err != nil {
			t.Errorf("dump %v: %v", args, err)
		}
		if st, err := os.Stat(out); err != nil {
			t.Error(err)
		} else if st.Mode().Perm() != 0o644 {
			t.Errorf("dump %v: %s has mode %v, want 0644", args, out, st.Mode().Perm())
		}
	}
}

// TestProcess runs the command as a process (the test binary re-executed):
// -h prints the one-line summary and the flags on stdout and exits 0; a bad
// flag or argument prints its error once on one line of stderr and exits
// 2; a bad file exits 1.
func TestProcess(t *testing.T) {
	r := clitest.Run(t, nil, "-h")
	if first, _, _ := strings.Cut(r.Stdout, "\n"); r.Code != 0 || r.Stderr != "" || first != summary || !strings.Contains(r.Stdout, "\n  -weights string\n") {
		t.Errorf("dump -h: exit status %d, stderr %q, stdout %q; want 0, nothing, %q then the flags", r.Code, r.Stderr, r.Stdout, summary)
	}
	tmp := t.TempDir()
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"-weigths", "w"}, 2, "dump: flag provided but not defined: -weigths (see -h)\n"},
		{[]string{"-weights", "w", "-batch", "b"}, 2, "dump: -out is required (see -h)\n"},
		{[]string{"-weights", "w", "-batch", "b", "-out", "o", "x"}, 2, "dump: unexpected argument \"x\" (flags only; see -h)\n"},
		{[]string{"-weights", filepath.Join(tmp, "w"), "-batch", "b", "-out", filepath.Join(tmp, "o")}, 1, ""},
	} {
		r := clitest.Run(t, nil, tc.args...)
		if r.Code != tc.code || (tc.stderr != "" && r.Stderr != tc.stderr) {
			t.Errorf("dump %v: exit status %d, stderr %q; want %d, %q", tc.args, r.Code, r.Stderr, tc.code, tc.stderr)
		}
		if strings.Count(r.Stderr, "\n") != 1 || !strings.HasPrefix(r.Stderr, "dump: ") || r.Stdout != "" {
			t.Errorf("dump %v: stderr %q, stdout %q; want one line on stderr starting \"dump: \", nothing on stdout", tc.args, r.Stderr, r.Stdout)
		}
	}
}
