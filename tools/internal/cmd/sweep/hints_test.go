package sweep

import (
	"path/filepath"
	"testing"

	"github.com/capstan-ml/capstan/tools/internal/clitest"
)

// TestRunMissingDataDir: sweep run's -data-dir must exist; it is never
// replaced by the data cache.
func TestRunMissingDataDir(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-data")
	err := runCmd([]string{"-manifest", filepath.Join(t.TempDir(), "manifest.ndjson"), "-index", "0", "-data-dir", missing})
	clitest.WantErr(t, "-data-dir", err, []string{"-data-dir", missing, "does not exist"})
}
