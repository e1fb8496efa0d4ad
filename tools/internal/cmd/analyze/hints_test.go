package analyze

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/tools/internal/clitest"
	"github.com/capstan-ml/capstan/train/data"
)

// TestHelpListsSets: -h lists every data set -data accepts, from the
// data-set table.
func TestHelpListsSets(t *testing.T) {
	var out strings.Builder
	if _, err := parse([]string{"-h"}, &out); err == nil {
		t.Fatal("-h: no flag.ErrHelp")
	}
	clitest.WantNames(t, "analyze -h, -data", clitest.FlagHelp(out.String(), "data"), data.TestSets)
}

// TestCheckpointNotAFile: a run directory or an optimizer state given as
// -checkpoint says what it is and names the run's checkpoint.
func TestCheckpointNotAFile(t *testing.T) {
	dir, ck, opt := clitest.RunDir(t, "tiny-deep")
	clitest.WantErr(t, "-checkpoint DIR", run([]string{"-checkpoint", dir, "-k", "10"}, io.Discard),
		[]string{"-checkpoint", dir + " is a directory", "give " + ck}, "truncated")
	clitest.WantErr(t, "-checkpoint optimizer", run([]string{"-checkpoint", opt, "-k", "10"}, io.Discard),
		[]string{"-checkpoint", "is an optimizer state", "not a checkpoint", ck}, "no model config")
}

// TestMissingDataDir: a -data-dir that does not exist is an error naming
// it.
func TestMissingDataDir(t *testing.T) {
	_, ck, _ := clitest.RunDir(t, "tiny-deep")
	missing := filepath.Join(t.TempDir(), "no-data")
	t.Setenv(data.DataDirEnv, t.TempDir())
	clitest.WantErr(t, "-data-dir", run([]string{"-checkpoint", ck, "-data", "mnist", "-data-dir", missing}, io.Discard),
		[]string{"-data-dir", missing, "does not exist"})
}
