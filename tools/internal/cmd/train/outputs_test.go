package train

import (
	"os"
	"path/filepath"
	"strings"
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

// TestWroteLines: a run confirms each file of its run directory (the
// checkpoint, its optimizer state, the metrics, the telemetry) with one
// line "wrote PATH (SIZE; NOTE)" on stdout; a resume with nothing left to
// train writes and confirms none; -cpuprofile's line goes to stderr (its
// stdout is the profile's Markdown).
func TestWroteLines(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	r := clitest.Run(t, nil, "-model", "tiny-deep", "-epochs", "1", "-batch", "500", "-out", out, "-plain", "-telemetry")
	if r.Code != 0 {
		t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	// 5500 training digits: 11 steps of 500.
	clitest.Wrote(t, "train", r.Stdout, map[string]string{
		filepath.Join(out, "checkpoint.safetensors"):   "checkpoint",
		filepath.Join(out, "optimizer-11.safetensors"): "optimizer state",
		filepath.Join(out, "metrics.ndjson"):           "metrics, NDJSON",
		filepath.Join(out, "telemetry.ndjson.gz"):      "telemetry, gzip-compressed NDJSON",
	})
	r = clitest.Run(t, nil, "-resume", out, "-epochs", "1", "-plain")
	if r.Code != 0 || !strings.Contains(r.Stdout, "nothing to train") {
		t.Fatalf("resume: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	clitest.Wrote(t, "train -resume with nothing to train", r.Stdout, nil)

	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.prof")
	r = clitest.Run(t, nil, "-profile", "2", "-model", "tiny-deep3", "-batch", "4", "-threads", "1", "-cpuprofile", prof)
	if r.Code != 0 {
		t.Fatalf("-profile: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	clitest.Wrote(t, "train -profile stderr", r.Stderr, map[string]string{prof: "CPU profile: go tool pprof -top " + prof})
	clitest.Wrote(t, "train -profile stdout", r.Stdout, nil)
	if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
		t.Errorf("-cpuprofile: %v, want a profile confirmed at its full size", err)
	}
}
