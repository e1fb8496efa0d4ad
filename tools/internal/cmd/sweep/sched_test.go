package sweep

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/train/sweep"
)

// schedManifest writes a two-task manifest (tiny-deep, tiny-deep-uniform)
// without results and returns its path.
func schedManifest(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	for i, m := range []string{"tiny-deep", "tiny-deep-uniform"} {
		routing := map[bool]string{false: "rba", true: "uniform"}[i == 1]
		line, _ := json.Marshal(sweep.Task{Index: i, Model: m, Arch: "tiny-deep", Routing: routing, Seed: 1, Data: "embedded", Eval: "affnist-embedded",
			Epochs: 1, Batch: 8, Threads: 1, Dir: "runs/" + m, Result: "results/" + m + ".json"})
		b.Write(append(line, '\n'))
	}
	p := filepath.Join(dir, "manifest.ndjson")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// code is the exit status of a subcommand run with args.
func code(args ...string) (int, error) {
	err := dispatch(io.Discard, args)
	return cli.Exit(io.Discard, "sweep", err), err
}

func TestSchedCommands(t *testing.T) {
	mp := schedManifest(t)
	dir := filepath.Dir(mp)
	if c, err := code("slurm", "-manifest", mp, "-parallel", "1", "-binary", "/usr/local/bin/sweep"); c != 0 {
		t.Fatalf("slurm: %v", err)
	}
	script, err := os.ReadFile(filepath.Join(dir, "sweep.sbatch"))
	if err != nil || !strings.Contains(string(script), "#SBATCH --array=0-1%1\n") || !strings.Contains(string(script), "exec '/usr/local/bin/sweep' run -manifest '"+mp+"'\n") {
		t.Errorf("script (%v):\n%s", err, script)
	}
	if st, err := os.Stat(filepath.Join(dir, "logs")); err != nil || !st.IsDir() {
		t.Errorf("no logs directory: %v", err)
	}
	out := filepath.Join(dir, "job.json")
	if c, err := code("k8s", "-manifest", mp, "-image", "capstan:1", "-out", out); c != 0 {
		t.Fatalf("k8s: %v", err)
	}
	var job map[string]any
	if b, err := os.ReadFile(out); err != nil || json.Unmarshal(b, &job) != nil || job["kind"] != "Job" {
		t.Errorf("k8s job %s: %v", b, err)
	}
	md := filepath.Join(dir, "r.md")
	if c, err := code("collect", "-manifest", mp, "-markdown", md, "-html", filepath.Join(dir, "r.html")); c != 0 {
		t.Fatalf("collect: %v", err)
	}
	if b, _ := os.ReadFile(md); !strings.Contains(string(b), "2 tasks: 0 done, 0 failed, 2 missing, 0 invalid.") {
		t.Errorf("collect Markdown:\n%s", b)
	}
	old := sweep.Sbatch
	defer func() { sweep.Sbatch = old }()
	sweep.Sbatch = filepath.Join(dir, "no-sbatch")
	if c, err := code("slurm", "-manifest", mp, "-submit"); c != 1 || !strings.Contains(err.Error(), "not found") {
		t.Errorf("-submit without sbatch: exit %d, %v", c, err)
	}
}

func TestSchedUsage(t *testing.T) {
	mp := schedManifest(t)
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"slurm"}, 2, "-manifest"},
		{[]string{"slurm", "-manifest", mp, "-parallel", "-1"}, 2, "-parallel"},
		{[]string{"slurm", "-manifest", mp, "extra"}, 2, "extra"},
		{[]string{"slurm", "-manifest", mp, "-time", "soon"}, 1, "time limit"},
		{[]string{"slurm", "-manifest", filepath.Join(t.TempDir(), "none")}, 1, "manifest"},
		{[]string{"k8s", "-manifest", mp}, 2, "-image"},
		{[]string{"k8s", "-manifest", mp, "-image", "i", "-backoff", "0"}, 2, "-backoff"},
		{[]string{"collect"}, 2, "-manifest"},
		{[]string{"collect", "-manifest", mp, "-nope"}, 2, "nope"},
		{[]string{"nope"}, 2, "nope"},
	} {
		got, err := code(c.args...)
		if got != c.code || err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: exit %d, %v; want %d and one line with %q", c.args, got, err, c.code, c.want)
		}
	}
}
