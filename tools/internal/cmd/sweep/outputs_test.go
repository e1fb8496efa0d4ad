package sweep

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/capstan-ml/capstan/tools/internal/clitest"
	"github.com/capstan-ml/capstan/train/sweep"
)

// TestCollectOutputAimedAtInput: collect's -markdown, -html or -json
// aimed at the manifest or a task's result file, by its path, as
// dir/./name or through a symbolic link, or two outputs at one file, is
// refused before any work (exit 2, one line naming both flags) and the
// files are left byte for byte.
func TestCollectOutputAimedAtInput(t *testing.T) {
	tasks, m := writeTinyTasks(t, 1)
	res := sweep.Path(filepath.Dir(m), tasks[0].Result)
	if err := os.MkdirAll(filepath.Dir(res), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(res, []byte(`{"status":"running"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := clitest.Snapshot(t, m, res)
	outputs := []string{"-markdown", "-html", "-json"}
	for _, flag := range outputs {
		for _, in := range []string{m, res} {
			for _, out := range append([]string{in}, clitest.Aliases(t, in)...) {
				r := clitest.Run(t, nil, "collect", "-manifest", m, flag, out)
				clitest.Refused(t, flag+" "+out, r, files, flag+" "+out, "-manifest "+in)
			}
		}
	}
	out := filepath.Join(t.TempDir(), "tables")
	for i, a := range outputs {
		for _, b := range outputs[i+1:] {
			r := clitest.Run(t, nil, "collect", "-manifest", m, a, out, b, out)
			clitest.Refused(t, a+" and "+b, r, files, a+" "+out+" and "+b+" "+out)
		}
	}
}

// TestJobFileAimedAtManifest: slurm's and k8s's -out aimed at the
// manifest, and plan's manifest aimed at its -grid file, are refused
// before any work (exit 2, one line naming both flags) and the input is
// left byte for byte.
func TestJobFileAimedAtManifest(t *testing.T) {
	m := writeTiny(t, 1)
	files := clitest.Snapshot(t, m)
	for _, out := range append([]string{m}, clitest.Aliases(t, m)...) {
		r := clitest.Run(t, nil, "slurm", "-manifest", m, "-out", out)
		clitest.Refused(t, "slurm -out "+out, r, files, "-out "+out, "-manifest "+m)
		r = clitest.Run(t, nil, "k8s", "-manifest", m, "-image", "img", "-out", out)
		clitest.Refused(t, "k8s -out "+out, r, files, "-out "+out, "-manifest "+m)
	}
	dir := t.TempDir()
	grid := filepath.Join(dir, sweep.ManifestName)
	if err := os.WriteFile(grid, []byte(`{"name":"g","models":["tiny-deep"],"seeds":[1],"data":"embedded","eval":"embedded","k":10,"epochs":1,"batch":8,"threads":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	files = clitest.Snapshot(t, grid)
	r := clitest.Run(t, nil, "plan", "-grid", grid, "-out", dir, "-img-per-s", "100")
	clitest.Refused(t, "plan -grid in -out", r, files, "-out "+dir, "-grid "+grid)
}
