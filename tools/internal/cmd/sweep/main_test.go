package sweep

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/tools/internal/clitest"
	"github.com/capstan-ml/capstan/train"
	"github.com/capstan-ml/capstan/train/sweep"
)

func TestMain(m *testing.M) { clitest.MainOf(m, "sweep", Main) }

// writeTiny writes a manifest of the tiny preset's first task cut to
// epochs epochs and 20 evaluation images, and returns its path.
func writeTiny(t *testing.T, epochs int) string {
	t.Helper()
	_, path := writeTinyTasks(t, epochs)
	return path
}

// writeTinyTasks is writeTiny that also returns the tasks.
func writeTinyTasks(t *testing.T, epochs int) ([]sweep.Task, string) {
	t.Helper()
	tasks, err := sweep.Expand(sweep.Presets()["tiny"])
	if err != nil {
		t.Fatal(err)
	}
	tasks = tasks[:1]
	tasks[0].Epochs, tasks[0].K = epochs, 20
	path := filepath.Join(t.TempDir(), sweep.ManifestName)
	if err := sweep.WriteManifest(path, tasks); err != nil {
		t.Fatal(err)
	}
	return tasks, path
}

// TestBadArgs: mistakes on the command line exit 2, other errors 1, each
// with one line on stderr naming the command and the flag or file.
func TestBadArgs(t *testing.T) {
	dir := t.TempDir()
	m := writeTiny(t, 1)
	for _, tc := range []struct {
		env  []string
		args []string
		want string
		code int
	}{
		{nil, nil, "sweep: no command", 2},
		{nil, []string{"train"}, `unknown command "train"`, 2},
		{nil, []string{"plan", "-preset", "tiny"}, "sweep plan: -out", 2},
		{nil, []string{"plan", "-out", dir}, "-grid or -preset", 2},
		{nil, []string{"plan", "-out", dir, "-preset", "tiny", "-grid", "g.json"}, "-grid or -preset", 2},
		{nil, []string{"plan", "-out", dir, "-preset", "huge"}, `-preset "huge"`, 2},
		{nil, []string{"plan", "-out", dir, "-grid", filepath.Join(dir, "none.json")}, "-grid", 1},
		{nil, []string{"plan", "-out", dir, "-preset", "tiny", "-img-per-s", "-1"}, "-img-per-s", 2},
		{nil, []string{"plan", "-out", dir, "-preset", "tiny", "stray"}, "stray", 2},
		{nil, []string{"run"}, "sweep run: -manifest", 2},
		{nil, []string{"run", "-manifest", filepath.Join(dir, "none.ndjson"), "-index", "0"}, "-manifest", 1},
		{[]string{"SLURM_ARRAY_TASK_ID=", "JOB_COMPLETION_INDEX="}, []string{"run", "-manifest", m}, "$SLURM_ARRAY_TASK_ID", 2},
		{nil, []string{"run", "-manifest", m, "-index", "1"}, "-index 1", 2},
		{nil, []string{"run", "-manifest", m, "-index", "-2"}, "-index -2", 2},
		{[]string{"SLURM_ARRAY_TASK_ID=", "JOB_COMPLETION_INDEX=7"}, []string{"run", "-manifest", m}, "$JOB_COMPLETION_INDEX 7", 2},
	} {
		r := clitest.Run(t, tc.env, tc.args...)
		if r.Code != tc.code || !strings.Contains(r.Stderr, tc.want) || strings.Count(r.Stderr, "\n") != 1 {
			t.Errorf("sweep %q: exit %d, stderr %q; want %d and one line naming %q", tc.args, r.Code, r.Stderr, tc.code, tc.want)
		}
	}
	if r := clitest.Run(t, nil, "-h"); r.Code != 0 || !strings.Contains(r.Stdout, "collect") {
		t.Errorf("sweep -h: exit %d, stdout %q", r.Code, r.Stdout)
	}
	if r := clitest.Run(t, nil, "run", "-h"); r.Code != 0 || !strings.Contains(r.Stdout, "SLURM_ARRAY_TASK_ID") {
		t.Errorf("sweep run -h: exit %d, stdout %q", r.Code, r.Stdout)
	}
}

// TestPlan: plan -preset tiny writes the 4 tasks' manifest and a cost; a
// second plan of the same grid keeps it, one of another grid is refused
// unless -overwrite.
func TestPlan(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sweep")
	r := clitest.Run(t, nil, "plan", "-preset", "tiny", "-out", out, "-img-per-s", "1000")
	if r.Code != 0 || !strings.Contains(r.Stdout, "4 tasks") || !strings.Contains(r.Stdout, "node-hours") {
		t.Fatalf("plan: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	tasks, err := sweep.ReadManifest(filepath.Join(out, sweep.ManifestName))
	if err != nil || len(tasks) != 4 {
		t.Fatalf("manifest: %d tasks, %v", len(tasks), err)
	}
	// 4 tasks × 2 epochs × 5,500 images at 1,000 img/s: 44 s.
	if !strings.Contains(r.Stdout, "0.0122 node-hours") {
		t.Errorf("cost of 44,000 images at 1000 img/s: %s", r.Stdout)
	}
	if r := clitest.Run(t, nil, "plan", "-preset", "tiny", "-out", out, "-img-per-s", "1000"); r.Code != 0 {
		t.Errorf("plan again: exit %d, %s", r.Code, r.Stderr)
	}
	if r := clitest.Run(t, nil, "plan", "-preset", "paper-small", "-out", out, "-img-per-s", "1000"); r.Code != 1 || !strings.Contains(r.Stderr, "-overwrite") {
		t.Errorf("plan of another grid over a manifest: exit %d, %s", r.Code, r.Stderr)
	}
	if r := clitest.Run(t, nil, "plan", "-preset", "paper-small", "-out", out, "-img-per-s", "1000", "-overwrite"); r.Code != 0 || !strings.Contains(r.Stdout, "16 tasks") {
		t.Errorf("plan -overwrite: exit %d, %s", r.Code, r.Stderr)
	}
}

// TestPlanRouting: plan -routing with the four kinds plans the tiny grid
// with tiny-deep's three twins (8 tasks); a -grid file's routing is
// replaced by it; a bad list is refused before anything is written (exit
// 2, one line naming -routing and, for an unknown kind, every kind).
func TestPlanRouting(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "sweep")
	r := clitest.Run(t, nil, "plan", "-preset", "tiny", "-routing", "rba,uniform,self-attention,self-attention-in", "-out", out, "-img-per-s", "1000")
	if r.Code != 0 || !strings.Contains(r.Stdout, "8 tasks") {
		t.Fatalf("plan -routing: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	tasks, err := sweep.ReadManifest(filepath.Join(out, sweep.ManifestName))
	if err != nil || len(tasks) != 8 {
		t.Fatalf("manifest: %d tasks, %v", len(tasks), err)
	}
	for i, want := range []string{"tiny-deep", "tiny-deep", "tiny-deep-uniform", "tiny-deep-uniform", "tiny-deep-self-attention", "tiny-deep-self-attention",
		"tiny-deep-self-attention-in", "tiny-deep-self-attention-in"} {
		if tasks[i].Model != want || tasks[i].Model != capsnet.PresetTwin("tiny-deep", tasks[i].Routing) {
			t.Errorf("task %d: model %s, routing %s; want %s", i, tasks[i].Model, tasks[i].Routing, want)
		}
	}
	grid := filepath.Join(dir, "grid.json")
	if err := os.WriteFile(grid, []byte(`{"name":"g","models":["tiny-deep"],"routing":["rba","uniform"],"seeds":[1],"data":"embedded","eval":"embedded","k":10,"epochs":1,"batch":8,"threads":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out2 := filepath.Join(dir, "sweep2")
	if r := clitest.Run(t, nil, "plan", "-grid", grid, "-routing", "self-attention,uniform", "-out", out2, "-img-per-s", "1000"); r.Code != 0 {
		t.Fatalf("plan -grid -routing: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if tasks, err := sweep.ReadManifest(filepath.Join(out2, sweep.ManifestName)); err != nil || len(tasks) != 2 ||
		tasks[0].Model != "tiny-deep-uniform" || tasks[1].Model != "tiny-deep-self-attention" {
		t.Errorf("plan -grid -routing self-attention,uniform: %+v, %v; want the grid's routing replaced", tasks, err)
	}
	all := strings.Join(capsnet.RoutingNames(), ", ")
	for _, tc := range []struct{ list, want string }{
		{"rba,dynamic", `sweep plan: -routing "rba,dynamic": unknown kind "dynamic": want one of ` + all},
		{"rba,self-attention", `-routing "rba,self-attention": no baseline kind: add uniform`},
		{"rba,uniform,rba", `-routing "rba,uniform,rba": kind "rba" twice`},
		{"", `-routing "": no routing kind`},
	} {
		bad := filepath.Join(dir, "bad")
		r := clitest.Run(t, nil, "plan", "-preset", "tiny", "-routing", tc.list, "-out", bad, "-img-per-s", "1000")
		if r.Code != 2 || !strings.Contains(r.Stderr, tc.want) || strings.Count(r.Stderr, "\n") != 1 {
			t.Errorf("plan -routing %q: exit %d, stderr %q; want 2 and one line naming %q", tc.list, r.Code, r.Stderr, tc.want)
		}
		if _, err := os.Stat(bad); err == nil {
			t.Errorf("plan -routing %q: -out %s created", tc.list, bad)
		}
	}
	if r := clitest.Run(t, nil, "plan", "-h"); r.Code != 0 || !strings.Contains(r.Stdout, "-routing") || !strings.Contains(r.Stdout, all) {
		t.Errorf("plan -h: exit %d, stdout %q; want -routing and the kinds", r.Code, r.Stdout)
	}
}

// TestRunFromEnv: run takes the index from $SLURM_ARRAY_TASK_ID, writes
// the result, and a rerun exits 0 at once.
func TestRunFromEnv(t *testing.T) {
	m := writeTiny(t, 1)
	dir := filepath.Dir(m)
	tasks, _ := sweep.ReadManifest(m)
	r := clitest.Run(t, []string{"SLURM_ARRAY_TASK_ID=0", "JOB_COMPLETION_INDEX=5"}, "run", "-manifest", m)
	if r.Code != 0 {
		t.Fatalf("run: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	res, err := sweep.ReadResult(filepath.Join(dir, tasks[0].Result))
	if err != nil || res.Status != "done" {
		t.Fatalf("result: %v %+v", err, res)
	}
	r = clitest.Run(t, []string{"JOB_COMPLETION_INDEX=0", "SLURM_ARRAY_TASK_ID="}, "run", "-manifest", m)
	if r.Code != 0 || !strings.Contains(r.Stdout, "done already") {
		t.Errorf("rerun: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

}

// TestRunSIGTERM: SIGTERM during training saves the task's checkpoint and
// exits 143 (Slurm's --requeue then reruns it and it resumes).
func TestRunSIGTERM(t *testing.T) {
	m := writeTiny(t, 50)
	tasks, _ := sweep.ReadManifest(m)
	cmd := clitest.Command(t, nil, "run", "-manifest", m, "-index", "0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		if errors.Is(err, syscall.ENOEXEC) {
			t.Skipf("cannot re-execute the test binary here: %v", err)
		}
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	var log strings.Builder
	for sc.Scan() { // training has started once the first epoch is done
		log.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "epoch 1/") {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 143 {
		t.Fatalf("run after SIGTERM: %v, want exit status 143\n%s%s", err, log.String(), stderr.String())
	}
	if !strings.HasPrefix(stderr.String(), "sweep run: stopped by SIGTERM") || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("stderr %q", stderr.String())
	}
	dir := filepath.Dir(m)
	if _, err := os.Stat(filepath.Join(dir, tasks[0].Dir, train.CheckpointName)); err != nil {
		t.Errorf("no checkpoint after SIGTERM: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, tasks[0].Result)); err == nil {
		t.Error("a result file after SIGTERM")
	}
}

// TestPlanGridFile: a grid file's config-file models, relative to the
// working directory, are written relative to the manifest's directory
// (where a task reads them), and keep their own routing kind without a
// routing axis.
func TestPlanGridFile(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "my-model.json")
	if err := os.WriteFile(cfg, []byte(capsnet.Presets()["tiny-deep-uniform"].JSON()), 0o644); err != nil {
		t.Fatal(err)
	}
	grid := filepath.Join(dir, "grid.json")
	if err := os.WriteFile(grid, []byte(`{"name":"mine","models":["my-model.json","tiny-deep"],"seeds":[7],"data":"embedded","eval":"affnist-embedded","k":10,"epochs":1,"batch":32,"threads":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "sweep")
	cmd := clitest.Command(t, nil, "plan", "-grid", "grid.json", "-out", out, "-img-per-s", "100")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); errors.Is(err, syscall.ENOEXEC) {
		t.Skipf("cannot re-execute the test binary here (qemu-user without binfmt): %v", err)
	} else if err != nil {
		t.Fatalf("plan -grid: %v\n%s", err, b)
	}
	tasks, err := sweep.ReadManifest(filepath.Join(out, sweep.ManifestName))
	if err != nil || len(tasks) != 2 {
		t.Fatalf("manifest: %+v, %v", tasks, err)
	}
	if tasks[0].Model != "../my-model.json" || sweep.Path(out, tasks[0].Model) != cfg || tasks[0].Routing != "uniform" || tasks[0].Arch != "my-model" || tasks[1].Model != "tiny-deep" || tasks[1].Routing != "rba" || tasks[1].Seed != 7 {
		t.Errorf("tasks %+v", tasks)
	}
}
