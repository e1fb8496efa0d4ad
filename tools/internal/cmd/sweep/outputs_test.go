package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
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

// TestWroteLines: every file a sweep command writes is confirmed with one
// line "wrote PATH (SIZE; NOTE)" on stdout: plan's manifest, slurm's
// script, k8s's job (none for -out -, the job itself on stdout), run's
// run directory and result file (none for a task done already), and
// collect's -markdown, -html and -json.
func TestWroteLines(t *testing.T) {
	dir := t.TempDir()
	m := filepath.Join(dir, sweep.ManifestName)
	r := clitest.Run(t, nil, "plan", "-preset", "tiny", "-out", dir, "-img-per-s", "1000")
	if r.Code != 0 {
		t.Fatalf("plan: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	tasks, err := sweep.ReadManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	clitest.Wrote(t, "plan", r.Stdout, map[string]string{m: fmt.Sprintf("manifest of grid tiny, %d tasks", len(tasks))})
	r = clitest.Run(t, nil, "slurm", "-manifest", m)
	clitest.Wrote(t, "slurm", r.Stdout, map[string]string{filepath.Join(dir, "sweep.sbatch"): fmt.Sprintf("Slurm batch script, %d tasks", len(tasks))})
	r = clitest.Run(t, nil, "k8s", "-manifest", m, "-image", "img")
	clitest.Wrote(t, "k8s", r.Stdout, map[string]string{filepath.Join(dir, "k8s-job.json"): fmt.Sprintf("Kubernetes Indexed Job, %d tasks", len(tasks))})
	r = clitest.Run(t, nil, "k8s", "-manifest", m, "-image", "img", "-out", "-")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "{") {
		t.Errorf("k8s -out -: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	clitest.Wrote(t, "k8s -out -", r.Stdout, nil)

	m = writeTiny(t, 1)
	dir = filepath.Dir(m)
	tasks, _ = sweep.ReadManifest(m)
	r = clitest.Run(t, nil, "run", "-manifest", m, "-index", "0")
	if r.Code != 0 {
		t.Fatalf("run: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	run := sweep.Path(dir, tasks[0].Dir)
	opt, _ := filepath.Glob(filepath.Join(run, "optimizer-*.safetensors"))
	if len(opt) != 1 {
		t.Fatalf("optimizer state files %v, want 1", opt)
	}
	clitest.Wrote(t, "run", r.Stdout, map[string]string{
		filepath.Join(run, "checkpoint.safetensors"): "checkpoint",
		opt[0]:                               "optimizer state",
		filepath.Join(run, "metrics.ndjson"): "metrics, NDJSON",
		sweep.Path(dir, tasks[0].Result):     "task result, JSON",
	})
	r = clitest.Run(t, nil, "run", "-manifest", m, "-index", "0")
	if r.Code != 0 || !strings.Contains(r.Stdout, "done already") {
		t.Errorf("rerun: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	clitest.Wrote(t, "run of a task done", r.Stdout, nil)

	md, html, js := filepath.Join(dir, "t.md"), filepath.Join(dir, "t.html"), filepath.Join(dir, "t.json")
	r = clitest.Run(t, nil, "collect", "-manifest", m, "-markdown", md, "-html", html, "-json", js)
	if r.Code != 0 {
		t.Fatalf("collect: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	clitest.Wrote(t, "collect", r.Stdout, map[string]string{md: "Markdown tables", html: "HTML page", js: "JSON, schema " + sweep.SummarySchema})
	r = clitest.Run(t, nil, "collect", "-manifest", m)
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "# Sweep results") || !strings.Contains(r.Stdout, " |\n\nalive: counts") {
		t.Errorf("collect to stdout: exit %d, want the Markdown with the tables' legends\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	clitest.Wrote(t, "collect to stdout", r.Stdout, nil)

	// The JSON decodes into the documented structure (sweep.Summary,
	// docs/json.md) with no unknown key, every key snake_case.
	raw, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var s sweep.Summary
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	if s.Schema != "capstan-sweep-collect/2" || s.Done != 1 || len(s.Best) == 0 || s.Best[0].Tables == nil {
		t.Errorf("decoded: schema %q, %d done, best %+v", s.Schema, s.Done, s.Best)
	}
	for _, k := range regexp.MustCompile(`"([^"]*)":`).FindAllStringSubmatch(string(raw), -1) {
		if !regexp.MustCompile(`^[a-z][a-z0-9_]*$`).MatchString(k[1]) && !strings.Contains(k[1], "-") {
			t.Errorf("key %q is not snake_case", k[1])
		}
	}
}
