package sweep

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/kernels"
	"github.com/capstan-ml/capstan/train"
)

// tinyTasks are four tasks of the CI sweep's kind: tiny-deep and
// tiny-deep-uniform, seeds 1 and 2, batch 8; the last has threads 2.
func tinyTasks() []Task {
	var ts []Task
	for _, m := range []string{"tiny-deep", "tiny-deep-uniform"} {
		routing := "rba"
		if strings.HasSuffix(m, "-uniform") {
			routing = "uniform"
		}
		for _, seed := range []uint64{1, 2} {
			i := len(ts)
			ts = append(ts, Task{Index: i, Model: m, Arch: "tiny-deep", Routing: routing, Seed: seed, Data: "embedded", Eval: "affnist-embedded", K: 200,
				Epochs: 2, Batch: 8, Threads: 1, Dir: "runs/" + m, Result: filepath.Join("results", strings.Repeat("0", 4)+string(rune('0'+i))+".json")})
		}
	}
	ts[3].Threads = 2
	return ts
}

// writeManifest writes tasks as DIR/manifest.ndjson and returns its path.
func writeManifest(t testing.TB, dir string, tasks []Task) string {
	t.Helper()
	var b strings.Builder
	for _, task := range tasks {
		line, err := json.Marshal(task)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	path := filepath.Join(dir, "manifest.ndjson")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestTaskMemory checks the memory plan against its parts computed here:
// two replicas of half the batch, the optimizer three times the
// parameters, the embedded data and its AffNIST.
func TestTaskMemory(t *testing.T) {
	task := tinyTasks()[3]
	m, err := (&Planner{}).TaskMemory(task)
	if err != nil {
		t.Fatal(err)
	}
	p, err := capsnet.NewParams(capsnet.Presets()["tiny-deep-uniform"])
	if err != nil {
		t.Fatal(err)
	}
	n, err := capsnet.NewNet(p, 4)
	if err != nil {
		t.Fatal(err)
	}
	count := int64(p.Count())
	if m.Params < 4*count || m.Params > 4*count+64*int64(len(p.List)) {
		t.Errorf("params %d bytes, want about %d", m.Params, 4*count)
	}
	if m.Optimizer < 12*count || m.Optimizer > 12*count+3*64*int64(len(p.List)) {
		t.Errorf("optimizer %d bytes, want about 3×%d", m.Optimizer, 4*count)
	}
	if want := 2 * n.Plan().Total; m.Replicas != want {
		t.Errorf("replicas %d bytes, want 2 × %d", m.Replicas, n.Plan().Total)
	}
	tr, err := train.NewTrainer(p, task.Batch, task.Threads, kernels.DefaultAdamParams())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if got, want := m.Params+m.Optimizer+m.Replicas, tr.Plan().Total; got != want {
		t.Errorf("params + optimizer + replicas %d bytes, train.NewTrainer's plan %d", got, want)
	}
	if m.Analysis <= 0 || m.Analysis >= m.Replicas {
		t.Errorf("analysis %d bytes: want an inference graph, less than the training replicas' %d", m.Analysis, m.Replicas)
	}
	if want := int64(7000*784*4 + 1000*(784+1600)*4); m.Data != want {
		t.Errorf("data %d bytes, want %d", m.Data, want)
	}
	if m.Margin != RuntimeMargin || m.MiB() != (m.Total()+(1<<20)-1)>>20 || m.MiB()<<20 < m.Total() {
		t.Errorf("margin %d, total %d, MiB %d", m.Margin, m.Total(), m.MiB())
	}
	one := task
	one.Threads = 1
	m1, err := (&Planner{}).TaskMemory(one)
	if err != nil {
		t.Fatal(err)
	}
	if m1.Total() >= m.Total() {
		t.Errorf("one thread needs %d bytes, two %d: want less", m1.Total(), m.Total())
	}
	// A login node plans for larger compute nodes: its memory limit of
	// one model does not apply.
	t.Setenv(capsnet.MemoryEnv, "1MiB")
	if m2, err := (&Planner{}).TaskMemory(task); err != nil || m2 != m {
		t.Errorf("under a 1 MiB model limit: %+v, %v; want %+v", m2, err, m)
	}
	for _, bad := range []Task{{Model: "nope", Batch: 8, Threads: 1, Data: "embedded"}, {Model: "tiny-deep", Batch: 0, Threads: 1, Data: "embedded"}, {Model: "tiny-deep", Batch: 8, Threads: 1, Data: "imagenet"}, {Model: "tiny-deep", Batch: 8, Threads: 1, Data: "mnist", Eval: "svhn"}} {
		if _, err := (&Planner{}).TaskMemory(bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

func TestSlurmScript(t *testing.T) {
	dir := t.TempDir()
	tasks := tinyTasks()
	mp := writeManifest(t, dir, tasks)
	script, err := SlurmScript(mp, tasks, SlurmOptions{Parallel: 2, Partition: "cpu", Binary: "/opt/bin/sweep"})
	if err != nil {
		t.Fatal(err)
	}
	var most Memory
	for _, task := range tasks {
		m, err := (&Planner{Dir: dir}).TaskMemory(task)
		if err != nil {
			t.Fatal(err)
		}
		if m.Total() > most.Total() {
			most = m
		}
	}
	lines := strings.Split(strings.TrimSuffix(script, "\n"), "\n")
	if lines[0] != "#!/bin/bash" {
		t.Errorf("first line %q", lines[0])
	}
	want := []string{
		"#SBATCH --array=0-3%2",
		"#SBATCH --cpus-per-task=2",
		"#SBATCH --mem=" + itoa(most.MiB()) + "M",
		"#SBATCH --time=24:00:00",
		"#SBATCH --partition=cpu",
		"#SBATCH --requeue",
		"#SBATCH --signal=B:TERM@120",
		"#SBATCH --open-mode=append",
		"#SBATCH --output=" + dir + "/logs/%A_%a.out",
		"#SBATCH --job-name=sweep-" + filepath.Base(dir),
		"cd '" + dir + "' || exit 1",
	}
	has := map[string]bool{}
	for _, l := range lines {
		has[l] = true
	}
	for _, w := range want {
		if !has[w] {
			t.Errorf("script lacks %q:\n%s", w, script)
		}
	}
	if last := lines[len(lines)-1]; last != "exec '/opt/bin/sweep' run -manifest '"+mp+"'" {
		t.Errorf("last line %q", last)
	}
	// The capstan binary runs the sweep as its subcommand.
	capstan, err := SlurmScript(mp, tasks, SlurmOptions{Binary: "/opt/bin/capstan", Args: []string{"sweep"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "exec '/opt/bin/capstan' 'sweep' run -manifest '" + mp + "'\n"; !strings.HasSuffix(capstan, want) {
		t.Errorf("capstan script ends %q, want %q", capstan[strings.LastIndex(strings.TrimSuffix(capstan, "\n"), "\n")+1:], want)
	}
	// Every #SBATCH line comes before the first command (sbatch stops
	// reading them there).
	cmd := false
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "#") {
			cmd = true
		} else if cmd && strings.HasPrefix(l, "#SBATCH") {
			t.Errorf("%q after a command", l)
		}
	}
	if bash, err := exec.LookPath("bash"); err == nil {
		f := filepath.Join(dir, "s.sbatch")
		if err := WriteSlurm(mp, f, script); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(bash, "-n", f).CombinedOutput(); err != nil {
			t.Errorf("bash -n: %v: %s", err, out)
		}
		if st, err := os.Stat(filepath.Join(dir, "logs")); err != nil || !st.IsDir() {
			t.Errorf("WriteSlurm made no logs directory: %v", err)
		}
	}
	// K defaults to all tasks and is capped at N.
	for _, k := range []int{0, 9} {
		s, err := SlurmScript(mp, tasks, SlurmOptions{Parallel: k, Time: "2-00:00:00"})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []string{"#SBATCH --array=0-3%4\n", "#SBATCH --time=2-00:00:00\n"} {
			if !strings.Contains(s, w) {
				t.Errorf("-parallel %d: script lacks %q", k, w)
			}
		}
		if exe, _ := os.Executable(); !strings.Contains(s, "exec '"+exe+"' run") || strings.Contains(s, "--partition") {
			t.Errorf("default binary %s or partition:\n%s", exe, s)
		}
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestSlurmScriptErrors(t *testing.T) {
	dir := t.TempDir()
	tasks := tinyTasks()
	mp := writeManifest(t, dir, tasks)
	spaced := filepath.Join(dir, "a b")
	if err := os.Mkdir(spaced, 0o755); err != nil {
		t.Fatal(err)
	}
	swapped := tinyTasks()
	swapped[0], swapped[1] = swapped[1], swapped[0]
	bad := tinyTasks()
	bad[2].Model = "no-such-model"
	for _, c := range []struct {
		name  string
		path  string
		tasks []Task
		opts  SlurmOptions
		want  string
	}{
		{"time", mp, tasks, SlurmOptions{Time: "tomorrow"}, "time limit"},
		{"parallel", mp, tasks, SlurmOptions{Parallel: -1}, "parallel"},
		{"no tasks", mp, nil, SlurmOptions{}, "no task"},
		{"order", mp, swapped, SlurmOptions{}, "index order"},
		{"model", mp, bad, SlurmOptions{}, "task 2: model no-such-model"},
		{"space", filepath.Join(spaced, "manifest.ndjson"), tasks, SlurmOptions{}, "manifest directory"},
		{"partition", mp, tasks, SlurmOptions{Partition: "a;b"}, "partition"},
	} {
		_, err := SlurmScript(c.path, c.tasks, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line with %q", c.name, err, c.want)
		}
	}
}

// TestSubmitSlurm runs a stand-in sbatch that records its arguments.
func TestSubmitSlurm(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "sbatch")
	args := filepath.Join(dir, "args")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho \"$@\" > "+args+"\necho '4242;cluster'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	defer func(s string) { Sbatch = s }(Sbatch)
	Sbatch = fake
	id, err := SubmitSlurm("/x/sweep.sbatch")
	if err != nil || id != "4242" {
		t.Fatalf("job id %q, %v; want 4242", id, err)
	}
	if b, _ := os.ReadFile(args); string(b) != "--parsable /x/sweep.sbatch\n" {
		t.Errorf("sbatch arguments %q", b)
	}
	os.WriteFile(fake, []byte("#!/bin/sh\necho 'sbatch: error: invalid partition' >&2\nexit 1\n"), 0o755)
	if _, err := SubmitSlurm("/x/s"); err == nil || !strings.Contains(err.Error(), "invalid partition") {
		t.Errorf("failing sbatch: %v", err)
	}
	os.WriteFile(fake, []byte("#!/bin/sh\necho 'Submitted batch job 12'\n"), 0o755)
	if _, err := SubmitSlurm("/x/s"); err == nil || !strings.Contains(err.Error(), "not a job id") {
		t.Errorf("sbatch without --parsable output: %v", err)
	}
	Sbatch = filepath.Join(dir, "missing", "sbatch")
	if _, err := SubmitSlurm("/x/s"); err == nil || !strings.Contains(err.Error(), "not found") || strings.Contains(err.Error(), "\n") {
		t.Errorf("missing sbatch: %v", err)
	}
}
