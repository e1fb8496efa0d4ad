package train

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/tools/internal/clitest"
)

// TestOutputsNotInputs: a -model config file that a run would write over
// (it has the name of one of the run's files in -out) is refused before
// anything is trained or written, and left as it was.
func TestOutputsNotInputs(t *testing.T) {
	out := t.TempDir()
	cfg := capsnet.Presets()["tiny-deep"].JSON()
	for _, name := range []string{"metrics.ndjson", "checkpoint.safetensors"} {
		path := filepath.Join(out, name)
		if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		files := clitest.Snapshot(t, path)
		r := clitest.Run(t, nil, "-model", filepath.Join(out, ".", name), "-out", out, "-epochs", "1", "-plain")
		clitest.Refused(t, name, r, files, "-model", "-out")
		os.Remove(path)
	}
}
