package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
)

// TestBadFlags checks that every bad flag gives an error naming it, before
// any training starts.
func TestBadFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	t.Setenv("CAPSTAN_DATA", t.TempDir()) // an empty cache: no full MNIST to find
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-model", "no-such-model"}, "-model"},
		{[]string{"-data", "imagenet"}, "-data"},
		{[]string{"-batch", "-3"}, "-batch"},
		{[]string{"-lr", "0"}, "-lr"},
		{[]string{"-shift", "-1"}, "-shift"},
		{[]string{"-shift", "28"}, "-shift"},
		{[]string{"-epochs", "-1"}, "-epochs"},
		{[]string{"-target", "1.5"}, "-target"},
		{[]string{"-target", "nan"}, "-target"},
		{[]string{"-weight-decay", "nan"}, "-weight-decay"},
		{[]string{"-weight-decay", "-1"}, "-weight-decay"},
		{[]string{"-decay", "nan"}, "-decay"},
		{[]string{"-epochs", "0"}, "-epochs 0"},
		{[]string{"-batch", "0"}, "-batch 0"},
		{[]string{"-kernels", "sse9"}, "-kernels"},
		{[]string{"-threads", "0"}, "-threads"},
		{[]string{"stray"}, "stray"},
		{[]string{"-nonsense"}, "nonsense"},
		{[]string{"-model", "deep", "-data", "mnist", "-data-dir", "/nonexistent"}, "./build.sh data"},
	} {
		err := run(append(tc.args, "-out", out))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("train %v: error %v, want one mentioning %q", tc.args, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "checkpoint.safetensors")); err == nil {
		t.Error("a checkpoint was written by a run that should not have started")
	}
}

// TestTinyRun trains a test model for one short epoch end to end through
// the command's own flag handling.
func TestTinyRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	if err := run([]string{"-model", "tiny-deep", "-epochs", "1", "-batch", "200", "-out", out, "-plain"}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"checkpoint.safetensors", "optimizer-30.safetensors", "metrics.ndjson"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	// -resume alone continues with the checkpoint's model (tiny-deep, not
	// the default sabour-small); naming another model is refused.
	if err := run([]string{"-resume", out, "-epochs", "2", "-batch", "200", "-out", out, "-plain"}); err != nil {
		t.Fatalf("resume without -model: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "metrics.ndjson")); err != nil || strings.Count(string(b), "\n") != 2 {
		t.Errorf("after resuming for one more epoch, metrics.ndjson holds %q (%v); want 2 lines", b, err)
	}
	// -resume without -out goes on in the resumed run's directory (it used
	// to write to the default runs/default).
	if err := run([]string{"-resume", out, "-epochs", "3", "-batch", "200", "-plain"}); err != nil {
		t.Fatalf("resume without -out: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "metrics.ndjson")); err != nil || strings.Count(string(b), "\n") != 3 {
		t.Errorf("after resuming without -out, metrics.ndjson of the run holds %q (%v); want 3 lines", b, err)
	}
	if _, err := os.Stat("runs"); err == nil {
		t.Error("resume without -out wrote to the default runs/ directory")
	}
	// Resuming a run that already trained the epochs asked for says so and
	// succeeds (it used to panic), and adds nothing to the metrics.
	if err := run([]string{"-resume", out, "-epochs", "2", "-batch", "200", "-out", out, "-plain"}); err != nil {
		t.Errorf("resume of a finished run: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(out, "metrics.ndjson")); err != nil || strings.Count(string(b), "\n") != 3 {
		t.Errorf("after resuming a finished run, metrics.ndjson holds %q (%v); want 3 lines", b, err)
	}
	if err := run([]string{"-resume", out, "-model", "tiny-sabour", "-epochs", "3", "-batch", "200", "-out", out, "-plain"}); err == nil || !strings.Contains(err.Error(), "holds model tiny-deep") {
		t.Errorf("resume with another -model: %v", err)
	}
	changed := capsnet.Presets()["tiny-deep"]
	changed.Loss.Recon = "mean"
	cf := filepath.Join(t.TempDir(), "tiny-deep.json")
	if err := os.WriteFile(cf, []byte(changed.JSON()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-resume", out, "-model", cf, "-epochs", "3", "-batch", "200", "-out", out, "-plain"}); err == nil || !strings.Contains(err.Error(), "another configuration of model tiny-deep") {
		t.Errorf("resume with a changed configuration of the same model: %v", err)
	}
	if err := run([]string{"-resume", filepath.Join(out, "nothing-here")}); err == nil || !strings.Contains(err.Error(), "-resume") {
		t.Errorf("resume from a missing run: %v", err)
	}
}

// TestSIGTERMSaves runs the trainer in a child process (this test binary,
// re-executed), sends it SIGTERM (what Slurm and Kubernetes send before
// killing a job) once it has finished an epoch, and checks that it saves a checkpoint
// and exits 0, like Ctrl-C.
func TestSIGTERMSaves(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on windows")
	}
	if dir := os.Getenv("CAPSTAN_TEST_TRAIN_CHILD"); dir != "" {
		if err := run([]string{"-model", "tiny-deep", "-epochs", "50", "-batch", "32", "-threads", "1", "-out", dir, "-plain"}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	out := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestSIGTERMSaves$")
	cmd.Env = append(os.Environ(), "CAPSTAN_TEST_TRAIN_CHILD="+out)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		if errors.Is(err, syscall.ENOEXEC) {
			t.Skipf("cannot re-execute the test binary here (qemu-user without binfmt): %v", err)
		}
		t.Fatal(err)
	}
	// Wait until training has started (the first progress line), then TERM.
	sc := bufio.NewScanner(stdout)
	var log strings.Builder
	for sc.Scan() {
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
	if err := cmd.Wait(); err != nil {
		t.Fatalf("trainer after SIGTERM: %v; output:\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "interrupted ") {
		t.Errorf("no interruption message; output:\n%s", log.String())
	}
	if _, err := os.Stat(filepath.Join(out, "checkpoint.safetensors")); err != nil {
		t.Errorf("no checkpoint after SIGTERM: %v", err)
	}
}
