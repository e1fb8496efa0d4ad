package infer

import (
	"path/filepath"
	"testing"

	"github.com/capstan-ml/capstan/tools/internal/clitest"
	"github.com/capstan-ml/capstan/train/data"
)

// TestHelpListsSets: -h lists every data set -data accepts (the
// validation splits NAME-val too), from the data-set table.
func TestHelpListsSets(t *testing.T) {
	r := clitest.Run(t, nil, "-h")
	clitest.WantNames(t, "infer -h, -data", clitest.FlagHelp(r.Stdout, "data"), evalData)
	clitest.WantNames(t, "infer -h, -data", clitest.FlagHelp(r.Stdout, "data"), data.TestSets)
}

// TestCheckpointNotAFile: a run directory or an optimizer state given as
// -checkpoint says what it is and names the run's checkpoint.
func TestCheckpointNotAFile(t *testing.T) {
	dir, ck, opt := clitest.RunDir(t, "tiny-deep")
	clitest.WantErr(t, "-checkpoint DIR", run([]string{"-checkpoint", dir}),
		[]string{"-checkpoint", dir + " is a directory", "give " + ck}, "truncated")
	clitest.WantErr(t, "-checkpoint optimizer", run([]string{"-checkpoint", opt}),
		[]string{"-checkpoint", "is an optimizer state", "not a checkpoint", ck}, "no model config")
}

// TestMissingDataDir: a -data-dir or $CAPSTAN_DATA that does not exist is
// an error naming it.
func TestMissingDataDir(t *testing.T) {
	_, ck, _ := clitest.RunDir(t, "tiny-deep")
	missing := filepath.Join(t.TempDir(), "no-data")
	t.Setenv(data.DataDirEnv, t.TempDir())
	clitest.WantErr(t, "-data-dir", run([]string{"-checkpoint", ck, "-data", "mnist-val", "-data-dir", missing}),
		[]string{"-data-dir", missing, "does not exist"})
	t.Setenv(data.DataDirEnv, missing)
	clitest.WantErr(t, data.DataDirEnv, run([]string{"-checkpoint", ck, "-data", "affnist"}),
		[]string{data.DataDirEnv, missing, "does not exist"})
}
