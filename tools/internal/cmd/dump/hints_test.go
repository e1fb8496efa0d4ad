package dump

import (
	"path/filepath"
	"testing"

	"github.com/capstan-ml/capstan/tools/internal/clitest"
)

// TestWeightsNotAFile: a run directory or an optimizer state given as
// -weights says what it is and names the run's checkpoint.
func TestWeightsNotAFile(t *testing.T) {
	dir, ck, opt := clitest.RunDir(t, "tiny-deep")
	batch := filepath.Join(t.TempDir(), "batch.safetensors")
	out := filepath.Join(t.TempDir(), "out.safetensors")
	clitest.WantErr(t, "-weights DIR", run([]string{"-weights", dir, "-batch", batch, "-out", out}),
		[]string{"-weights", dir + " is a directory", "give " + ck}, "truncated")
	clitest.WantErr(t, "-weights optimizer", run([]string{"-weights", opt, "-batch", batch, "-out", out}),
		[]string{"is an optimizer state", "not a checkpoint", ck}, "no model config")
}
