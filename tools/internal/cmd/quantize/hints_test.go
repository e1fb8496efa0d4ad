package quantize

import (
	"path/filepath"
	"testing"

	"github.com/capstan-ml/capstan/tools/internal/clitest"
	"github.com/capstan-ml/capstan/train/data"
)

// TestHelpListsSets: -h lists every data set -data and -eval accept,
// from the data-set table.
func TestHelpListsSets(t *testing.T) {
	r := clitest.Run(t, nil, "-h")
	clitest.WantNames(t, "quantize -h, -data", clitest.FlagHelp(r.Stdout, "data"), data.DataSets)
	clitest.WantNames(t, "quantize -h, -eval", clitest.FlagHelp(r.Stdout, "eval"), append([]string{"none"}, data.TestSets...))
}

// TestCheckpointNotAFile: a run directory or an optimizer state given as
// -checkpoint says what it is and names the run's checkpoint.
func TestCheckpointNotAFile(t *testing.T) {
	dir, ck, opt := clitest.RunDir(t, "tiny-deep")
	out := filepath.Join(t.TempDir(), "q.safetensors")
	clitest.WantErr(t, "-checkpoint DIR", run([]string{"-checkpoint", dir, "-out", out}),
		[]string{"-checkpoint", dir + " is a directory", "give " + ck}, "truncated")
	clitest.WantErr(t, "-checkpoint optimizer", run([]string{"-checkpoint", opt, "-out", out}),
		[]string{"-checkpoint", "is an optimizer state", "not a checkpoint", ck}, "no model config")
}

// TestMissingDataDir: a -data-dir that does not exist is an error naming
// it.
func TestMissingDataDir(t *testing.T) {
	_, ck, _ := clitest.RunDir(t, "tiny-deep")
	missing := filepath.Join(t.TempDir(), "no-data")
	t.Setenv(data.DataDirEnv, t.TempDir())
	out := filepath.Join(t.TempDir(), "q.safetensors")
	clitest.WantErr(t, "-data-dir", run([]string{"-checkpoint", ck, "-data", "mnist", "-data-dir", missing, "-out", out}),
		[]string{"-data-dir", missing, "does not exist"})
}
