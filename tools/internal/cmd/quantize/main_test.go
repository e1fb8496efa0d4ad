package quantize

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/quant"
	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/tools/internal/clitest"
)

func TestMain(m *testing.M) { clitest.MainOf(m, "quantize", Main) }

// wroteNote is the note of quantize's line for int8 model out of
// checkpoint ck with votes scales per granularity.
func wroteNote(t *testing.T, ck, out, granularity string) string {
	t.Helper()
	a, errA := os.Stat(ck)
	b, errB := os.Stat(out)
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	return fmt.Sprintf("int8 model, %.3f× the float32 checkpoint's %s; votes scales per %s", float64(b.Size())/float64(a.Size()), cli.Size(a.Size()), granularity)
}

// TestQuantize quantizes a tiny checkpoint on the embedded data (as
// tools/train writes one) and checks the output: both sizes, both
// accuracies, a file quant.Load reads with the calibration asked for.
func TestQuantize(t *testing.T) {
	ck := clitest.Checkpoint(t, "tiny-deep")
	out := filepath.Join(t.TempDir(), "m.int8.safetensors")
	r := clitest.Run(t, nil, "-checkpoint", ck, "-out", out, "-calib-images", "64", "-calib", "minmax", "-granularity", "block", "-threads", "1")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	clitest.Wrote(t, "quantize", r.Stdout, map[string]string{out: wroteNote(t, ck, out, "block")})
	for _, want := range []string{"accuracy on mnist-embedded-test (1000 images)", "float32 ", "int8 ", "points", "predicts the float32 one's class on", "\n" + compareLegend + "\n"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.Stdout)
		}
	}
	m, err := quant.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if m.Source["checkpoint"] != ck {
		t.Errorf("source %v: want the checkpoint %s", m.Source, ck)
	}
	if m.Calibration == nil || m.Calibration.Method != quant.MinMax || m.Calibration.Images != 64 || m.Granularity != quant.PerBlock {
		t.Errorf("calibration %+v, granularity %v", m.Calibration, m.Granularity)
	}
	// The default output name, and -eval none.
	r = clitest.Run(t, nil, "-checkpoint", ck, "-calib-images", "8", "-eval", "none")
	if r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	def := strings.TrimSuffix(ck, ".safetensors") + ".int8.safetensors"
	if _, err := os.Stat(def); err != nil || strings.Contains(r.Stdout, "accuracy") {
		t.Errorf("default -out %s: %v; output:\n%s", def, err, r.Stdout)
	}
}

// TestQuantizeErrors: each bad flag or file gives a one-line error naming
// it, exit 2 for the command line and 1 for a file.
func TestQuantizeErrors(t *testing.T) {
	ck := clitest.Checkpoint(t, "tiny-deep")
	q := filepath.Join(t.TempDir(), "q.int8.safetensors")
	if r := clitest.Run(t, nil, "-checkpoint", ck, "-out", q, "-calib-images", "8", "-eval", "none"); r.Code != 0 {
		t.Fatalf("exit %d: %s", r.Code, r.Stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"-checkpoint", ck, "-granularity", "row"}, "-granularity", 2},
		{[]string{"-checkpoint", ck, "-calib", "kl"}, "-calib", 2},
		{[]string{"-checkpoint", ck, "-calib", "minmax", "-percentile", "99"}, "-percentile", 2},
		{[]string{"-checkpoint", ck, "-percentile", "0"}, "-percentile", 2},
		{[]string{"-checkpoint", ck, "-calib-images", "0"}, "-calib-images", 2},
		{[]string{"-checkpoint", ck, "-out", ck}, "-out " + ck + " is the input -checkpoint", 2},
		{[]string{"-checkpoint", ck, "-data", "imagenet"}, "-data", 2},
		{[]string{"-checkpoint", ck, "-eval", "imagenet"}, "-eval", 2},
		{[]string{"-checkpoint", "/nonexistent.safetensors"}, "/nonexistent.safetensors", 1},
		{[]string{"-checkpoint", q}, "int8 model", 1},
	} {
		r := clitest.Run(t, nil, tc.args...)
		if r.Code != tc.code || !strings.Contains(r.Stderr, tc.want) || strings.Count(strings.TrimSpace(r.Stderr), "\n") > 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming %q", tc.args, r.Code, r.Stderr, tc.code, tc.want)
		}
	}
}
