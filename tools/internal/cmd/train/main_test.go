package train

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/tools/internal/clitest"
	"github.com/capstan-ml/capstan/train"
	"github.com/capstan-ml/capstan/train/telemetry"
)

func TestMain(m *testing.M) { clitest.MainOf(m, "train", Main) }

// TestBadFlags checks that every bad flag gives an error naming it, before
// any training starts, and the exit status it maps to: 2 for a mistake on
// the command line (as Go's flag package), 1 for a file or model.
func TestBadFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	t.Setenv("CAPSTAN_DATA", t.TempDir()) // an empty cache: no full MNIST to find
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"-model", "no-such-model"}, "-model", 1},
		{[]string{"-data", "imagenet"}, "-data", 2},
		{[]string{"-data-dir", "/tmp"}, "-data-dir", 2}, // embedded data: no directory
		{[]string{"-batch", "-3"}, "-batch", 2},
		{[]string{"-batch", "2000000"}, "-batch", 2},
		{[]string{"-lr", "0"}, "-lr", 2},
		{[]string{"-lr", "nan"}, "-lr NaN", 2},
		{[]string{"-lr", "inf"}, "-lr +Inf", 2},
		{[]string{"-lr", "-1e-3"}, "-lr", 2},
		{[]string{"-lr", "2"}, "-lr", 2},
		{[]string{"-shift", "-1"}, "-shift", 2},
		{[]string{"-shift", "28"}, "-shift", 2},
		{[]string{"-model", "deep", "-shift", "3"}, "-shift", 2}, // 40×40 on 28×28: random placement, no shift
		{[]string{"-epochs", "-1"}, "-epochs", 2},
		{[]string{"-epochs", "1000001"}, "-epochs", 2},
		{[]string{"-target", "1.5"}, "-target", 2},
		{[]string{"-target", "nan"}, "-target", 2},
		{[]string{"-target", "-inf"}, "-target", 2},
		{[]string{"-weight-decay", "nan"}, "-weight-decay", 2},
		{[]string{"-weight-decay", "-1"}, "-weight-decay", 2},
		{[]string{"-weight-decay", "+Inf"}, "-weight-decay", 2},
		{[]string{"-weight-decay-form", "adamW"}, "-weight-decay-form", 2},
		{[]string{"-group-weight-decay", "votes"}, "-group-weight-decay", 2},
		{[]string{"-group-weight-decay", "votes=1e-4,votes=0"}, "-group-weight-decay", 2},
		{[]string{"-group-weight-decay", "capsules=1e-4"}, "-group-weight-decay", 2},
		{[]string{"-group-weight-decay", "decoder=nan"}, "-group-weight-decay", 2},
		{[]string{"-adam-eps", "0"}, "-adam-eps", 2},
		{[]string{"-adam-eps", "-1e-8"}, "-adam-eps", 2},
		{[]string{"-weight-decay-form", "decoupled", "-lr", "1", "-weight-decay", "1"}, "-weight-decay", 2},
		{[]string{"-decay", "nan"}, "-decay", 2},
		{[]string{"-decay", "0"}, "-decay", 2},
		{[]string{"-decay", "1.01"}, "-decay", 2},
		{[]string{"-epochs", "0"}, "-epochs 0", 2},
		{[]string{"-batch", "0"}, "-batch 0", 2},
		{[]string{"-kernels", "sse9"}, "-kernels", 2},
		{[]string{"-threads", "0"}, "-threads", 2},
		{[]string{"-val", "0"}, "-val", 2},
		{[]string{"-val", "6000"}, "-val 6000", 2}, // the whole embedded training set
		{[]string{"-data", "mnist", "-data-dir", "/nonexistent", "-val", "-5"}, "-val", 2},
		{[]string{"-threads", "5000"}, "-threads", 2},
		{[]string{"-threads", "x"}, "-threads", 2},
		{[]string{"-seed", "-1"}, "-seed", 2},
		{[]string{"-out", ""}, "-out", 2},
		{[]string{"stray"}, "stray", 2},
		{[]string{"-nonsense"}, "nonsense", 2},
		{[]string{"-model", "deep", "-data", "mnist", "-data-dir", "/nonexistent"}, "-data-dir: data directory /nonexistent does not exist", 1},
		{[]string{"-model", "deep", "-data", "mnist"}, "./build.sh data", 1},              // the empty cache
		{[]string{"-val", "5000", "-batch", "2000"}, "-batch 2000: the training data", 2}, // 1000 training images left
		{[]string{"-profile", "0"}, "-profile", 2},
		{[]string{"-profile", "-3"}, "-profile", 2},
		{[]string{"-profile", "10001"}, "-profile", 2},
		{[]string{"-cpuprofile", "x.prof"}, "-cpuprofile", 2},
		{[]string{"-profile", "1", "-data", "mnist"}, "-data", 2},
		{[]string{"-profile", "1", "-resume", "runs/x"}, "-resume", 2},
	} {
		args := append([]string{"-out", out}, tc.args...) // tc's -out last, to override
		err := run(args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("train %v: error %v, want one mentioning %q", tc.args, err, tc.want)
		}
		var stderr strings.Builder
		if code := cli.Exit(&stderr, "train", err); code != tc.code {
			t.Errorf("train %v: exit status %d, want %d", tc.args, code, tc.code)
		}
		if strings.Count(stderr.String(), "\n") != 1 || !strings.HasPrefix(stderr.String(), "train: ") {
			t.Errorf("train %v: stderr %q, want one line starting \"train: \"", tc.args, stderr.String())
		}
	}
	if _, err := os.Stat(filepath.Join(out, "checkpoint.safetensors")); err == nil {
		t.Error("a checkpoint was written by a run that should not have started")
	}
}

// TestProcess runs the command as a process (the test binary re-executed)
// and checks its exit status and outputs: -h prints the one-line summary
// and the flags on stdout and exits 0; a bad flag prints its error once,
// on one line of stderr, with nothing on stdout, and exits 2; a bad file
// exits 1.
func TestProcess(t *testing.T) {
	for _, h := range []string{"-h", "-help", "--help"} {
		r := clitest.Run(t, nil, h)
		if r.Code != 0 || r.Stderr != "" {
			t.Errorf("train %s: exit status %d, stderr %q; want 0 and nothing", h, r.Code, r.Stderr)
		}
		if first, _, _ := strings.Cut(r.Stdout, "\n"); first != summary {
			t.Errorf("train %s: first line %q, want %q", h, first, summary)
		}
		for _, want := range []string{"\n  -lr float\n", "\n  -resume string\n", "143"} {
			if !strings.Contains(r.Stdout, want) {
				t.Errorf("train %s: usage lacks %q:\n%s", h, want, r.Stdout)
			}
		}
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"-nonsense"}, 2, "train: flag provided but not defined: -nonsense (see -h)\n"},
		{[]string{"-batch", "many"}, 2, "train: invalid value \"many\" for flag -batch: parse error (see -h)\n"},
		{[]string{"-lr", "NaN"}, 2, "train: -lr NaN: want a number in (0, 1]\n"},
		{[]string{"-out", dir, "extra"}, 2, "train: unexpected argument \"extra\" (flags only; see -h)\n"},
		{[]string{"-out", dir, "-resume", filepath.Join(dir, "none")}, 1, ""},
	} {
		r := clitest.Run(t, nil, tc.args...)
		if r.Code != tc.code {
			t.Errorf("train %v: exit status %d, want %d (stderr %q)", tc.args, r.Code, tc.code, r.Stderr)
		}
		if tc.stderr != "" && r.Stderr != tc.stderr {
			t.Errorf("train %v: stderr %q, want %q", tc.args, r.Stderr, tc.stderr)
		}
		if strings.Count(r.Stderr, "\n") != 1 || !strings.HasPrefix(r.Stderr, "train: ") || r.Stdout != "" {
			t.Errorf("train %v: stderr %q and stdout %q, want one line on stderr starting \"train: \" and nothing on stdout", tc.args, r.Stderr, r.Stdout)
		}
	}
}

// TestTinyRun trains a test model for one short epoch end to end through
// the command's own flag handling.
func TestTinyRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	if err := run([]string{"-model", "tiny-deep", "-epochs", "1", "-batch", "200", "-out", out, "-plain"}); err != nil {
		t.Fatal(err)
	}
	// 6000 embedded training digits less the 500 held out: 27 steps of 200.
	for _, f := range []string{"checkpoint.safetensors", "optimizer-27.safetensors", "metrics.ndjson"} {
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
	if b, err := os.ReadFile(filepath.Join(out, "metrics.ndjson")); err != nil || strings.Count(string(b), "\n") != 3 || !strings.Contains(string(b), `"test_acc":0.`) {
		t.Errorf("after resuming without -out, metrics.ndjson of the run holds %q (%v); want 3 lines with test accuracies", b, err)
	}
	// A resumed run keeps the plan it was started with: the seed and the
	// thread count (the data order and every bit depend on them), batch,
	// epochs, target, … unless given again.
	if m := ck0Plan(t, out); m["seed"] != "1" || m["batch"] != "200" || m["epochs"] != "3" || m["threads"] == "" || m["shift"] != "2" {
		t.Errorf("plan %v: want seed 1, batch 200, epochs 3 (the last resume's), shift 2", m)
	}
	// Provenance: the data set, its splits, the seed, the accuracies and
	// every command line that trained the checkpoint.
	ck, err := capsnet.ReadCheckpoint(filepath.Join(out, "checkpoint.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"data": "embedded", "seed": "1", "val_images": "500", "val_set": "embedded-val (500 images)",
		"train_set": "mnist-embedded-train[0:5500] (5500 images)", "test_set": "mnist-embedded-test (1000 images)",
		"command": "train -model tiny-deep -epochs 1 -batch 200 -out " + out + " -plain\ntrain -resume " + out + " -epochs 2 -batch 200 -out " + out + " -plain\ntrain -resume " + out + " -epochs 3 -batch 200 -plain",
	} {
		if got := ck.Meta[k]; got != want {
			t.Errorf("checkpoint metadata %s = %q, want %q", k, got, want)
		}
	}
	for _, k := range []string{"val_acc", "test_acc"} {
		if v, err := strconv.ParseFloat(ck.Meta[k], 64); err != nil || !(v > 0.1 && v <= 1) {
			t.Errorf("checkpoint metadata %s = %q: not an accuracy above chance", k, ck.Meta[k])
		}
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
	// A fresh run of another model over the run is refused in flags.
	err = run([]string{"-model", "tiny-sabour", "-epochs", "1", "-batch", "200", "-out", out, "-plain"})
	if want := "-out " + out + ": holds a run of model tiny-deep (epoch 3), not of tiny-sabour: resume it with -resume " + out + ", choose a fresh -out, or -overwrite to replace it"; err == nil || err.Error() != want {
		t.Errorf("a fresh run over another model's run: %v, want %q", err, want)
	}
	if code := cli.Exit(io.Discard, "train", err); code != cli.ExitError {
		t.Errorf("a fresh run over another model's run: exit status %d, want %d", code, cli.ExitError)
	}
	// So is a fresh run of the same model: it is never started over.
	err = run([]string{"-model", "tiny-deep", "-epochs", "1", "-batch", "200", "-out", out, "-plain"})
	if want := "-out " + out + ": holds a run of the same model tiny-deep (epoch 3): resume it with -resume " + out + ", choose a fresh -out, or -overwrite to replace it"; err == nil || err.Error() != want {
		t.Errorf("a fresh run over the same model's run: %v, want %q", err, want)
	}
	if err := run([]string{"-resume", filepath.Join(out, "nothing-here")}); err == nil || !strings.Contains(err.Error(), "-resume") {
		t.Errorf("resume from a missing run: %v", err)
	}
}

// TestTelemetryFlag: a short run with -telemetry writes a telemetry file
// that parses, with one record per step and the model's shapes.
// TestProfileFlag runs -profile on a tiny model with -cpuprofile: the
// profile is written (a gzip-compressed pprof file) and no run is.
func TestProfileFlag(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.prof")
	t.Chdir(dir)
	if err := run([]string{"-profile", "2", "-model", "tiny-deep3", "-batch", "4", "-threads", "2", "-cpuprofile", prof}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(prof)
	if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("-cpuprofile wrote %d bytes (%v), want a gzip-compressed pprof file", len(b), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs")); err == nil {
		t.Error("-profile wrote a run directory")
	}
}

func TestTelemetryFlag(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	// 1000 training digits (-val 5000): five steps, quick under qemu.
	if err := run([]string{"-model", "tiny-deep", "-epochs", "1", "-batch", "200", "-val", "5000", "-out", out, "-plain", "-telemetry"}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(out, telemetry.GzipName) // the default form
	l, err := telemetry.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if ck := ck0Plan(t, out); ck["telemetry-format"] != "gz" {
		t.Errorf("plan %v, want telemetry-format gz", ck)
	}
	if len(l.Records) != 5 { // 1000 embedded training images (5000 held out) / batch 200
		t.Errorf("%d records, want 5 (one per step)", len(l.Records))
	}
	want := []telemetry.Layer{{Name: "primary", N: 8, D: 4}, {Name: "caps.0", N: 8, D: 4}, {Name: "caps.1", N: 10, D: 4}}
	if !slices.Equal(l.Header.Layers, want) || l.Header.Model != "tiny-deep" || l.Header.Batch != 200 {
		t.Errorf("header %+v, want tiny-deep, batch 200, layers %+v", l.Header, want)
	}
	for k, r := range l.Records {
		if r.Step != k+1 || r.Epoch != 1 || len(r.MaxNorm) != 3 || len(r.GradW) != 2 || len(r.MaxNorm[2]) != 10 || len(r.GradW[1]) != 80 {
			t.Fatalf("record %d: epoch %d step %d, shapes %d/%d rows", k, r.Epoch, r.Step, len(r.MaxNorm), len(r.GradW))
		}
	}
	// -telemetry-format ndjson: the plain file (a fresh run over the
	// directory: -overwrite), the .gz removed; a bad value is refused.
	if err := run([]string{"-model", "tiny-deep", "-epochs", "1", "-batch", "200", "-val", "5000", "-out", out, "-plain", "-telemetry", "-telemetry-format", "ndjson", "-overwrite"}); err != nil {
		t.Fatal(err)
	}
	if p, _ := telemetry.Find(out); p != filepath.Join(out, telemetry.FileName) {
		t.Errorf("-telemetry-format ndjson: telemetry file %q, want %s", p, telemetry.FileName)
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("-telemetry-format ndjson over a run directory left its %s", telemetry.GzipName)
	}
	if err := run([]string{"-model", "tiny-deep", "-epochs", "1", "-out", out, "-telemetry", "-telemetry-format", "zip", "-overwrite"}); err == nil || !strings.Contains(err.Error(), "-telemetry-format") {
		t.Errorf("-telemetry-format zip: %v", err)
	}
	// Without the flag, no file: TestResumePlan's runs check that.
}

// ck0Plan returns the "plan" metadata of the run in dir.
func ck0Plan(t *testing.T, dir string) map[string]string {
	t.Helper()
	ck, err := capsnet.ReadCheckpoint(filepath.Join(dir, "checkpoint.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(ck.Meta["plan"]), &m); err != nil {
		t.Fatalf("plan metadata %q: %v", ck.Meta["plan"], err)
	}
	return m
}

// ck0Meta returns metadata key of the checkpoint of the run in dir.
func ck0Meta(t *testing.T, dir, key string) string {
	t.Helper()
	ck, err := capsnet.ReadCheckpoint(filepath.Join(dir, "checkpoint.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	return ck.Meta[key]
}

// TestResumePlan: a run started with a seed, a batch size, a target and a
// number of epochs resumes with them when -resume is given alone (it used
// to go on with seed 1, batch 64, 5 epochs, no target: another data order
// and another run), and keeps its validation split. It trains on 750 of
// the embedded digits (-val 5250: three steps an epoch) to stay short
// under qemu.
func TestResumePlan(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	// The optimizer settings are part of the plan: a resume that forgot
	// them would not be bit-identical to the uninterrupted run.
	opt := []string{"-weight-decay-form", "decoupled", "-weight-decay", "0.05", "-group-weight-decay", "votes=0.2,priors=0", "-adam-eps", "1e-7"}
	if err := run(append([]string{"-model", "tiny-deep", "-epochs", "1", "-batch", "250", "-val", "5250", "-seed", "7", "-target", "0.99", "-threads", "1", "-out", out, "-plain"}, opt...)); err != nil {
		t.Fatal(err)
	}
	ref := filepath.Join(t.TempDir(), "ref")
	if err := run(append([]string{"-model", "tiny-deep", "-epochs", "2", "-batch", "250", "-val", "5250", "-seed", "7", "-target", "0.99", "-threads", "1", "-out", ref, "-plain"}, opt...)); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-resume", out, "-epochs", "2", "-plain"}); err != nil {
		t.Fatal(err)
	}
	m := ck0Plan(t, out)
	if m["seed"] != "7" || m["batch"] != "250" || m["target"] != "0.99" || m["threads"] != "1" || m["epochs"] != "2" || ck0Meta(t, out, "val_images") != "5250" {
		t.Errorf("plan after the resume: %v", m)
	}
	if m["weight-decay-form"] != "decoupled" || m["group-weight-decay"] != "votes=0.2,priors=0" || m["adam-eps"] != "1e-07" {
		t.Errorf("optimizer flags in the plan after the resume: %v", m)
	}
	if a := ck0Meta(t, out, train.MetaOptimizer); a != `{"lr":0.001,"lr_decay":0.97,"beta1":0.9,"beta2":0.999,"eps":1e-7,"weight_decay":0.05,"weight_decay_form":"decoupled","group_weight_decay":{"priors":0,"votes":0.2}}` {
		t.Errorf("metadata %s after the resume: %s", train.MetaOptimizer, a)
	}
	a, err := os.ReadFile(filepath.Join(out, "checkpoint.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(ref, "checkpoint.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	// The weights (the file's tensors) are bit-identical to an
	// uninterrupted run's; the metadata differs (command lines, times).
	ca, _ := capsnet.ReadCheckpoint(filepath.Join(out, "checkpoint.safetensors"))
	cb, _ := capsnet.ReadCheckpoint(filepath.Join(ref, "checkpoint.safetensors"))
	for name, ta := range ca.Tensors {
		if !slices.Equal(ta.Data, cb.Tensors[name].Data) {
			t.Fatalf("tensor %s differs from the uninterrupted run's (files of %d and %d bytes)", name, len(a), len(b))
		}
	}
	if err := run([]string{"-resume", out, "-epochs", "3", "-batch", "0", "-plain"}); err == nil || !strings.Contains(err.Error(), "-batch") {
		t.Errorf("resume with -batch 0: %v", err)
	}
	if p, err := telemetry.Find(out); p != "" || err != nil {
		t.Errorf("a run without -telemetry wrote a telemetry file: %q, %v", p, err)
	}
}

// TestSIGTERMSaves runs the trainer in a child process (this test binary,
// re-executed), sends it SIGTERM (what Slurm and Kubernetes send before
// killing a job) or SIGINT (Ctrl-C) once it has finished an epoch, and
// checks that it saves a checkpoint, then exits 128 + the signal's number
// (143, 130) with one line on stderr.
func TestSIGTERMSaves(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on windows")
	}
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGTERM, 143}, {syscall.SIGINT, 130}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			cmd := clitest.Command(t, nil, "-model", "tiny-deep", "-epochs", "50", "-batch", "32", "-threads", "1", "-out", out, "-plain")
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				if errors.Is(err, syscall.ENOEXEC) {
					t.Skipf("cannot re-execute the test binary here (qemu-user without binfmt): %v", err)
				}
				t.Fatal(err)
			}
			// Wait until training has started (the first progress line), then signal.
			sc := bufio.NewScanner(stdout)
			var log strings.Builder
			for sc.Scan() {
				log.WriteString(sc.Text() + "\n")
				if strings.HasPrefix(sc.Text(), "epoch 1/") {
					break
				}
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			for sc.Scan() {
				log.WriteString(sc.Text() + "\n")
			}
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.code {
				t.Fatalf("trainer after %v: %v, want exit status %d; stdout:\n%s\nstderr:\n%s", tc.sig, err, tc.code, log.String(), stderr.String())
			}
			if !strings.Contains(log.String(), "interrupted ") {
				t.Errorf("no interruption message; output:\n%s", log.String())
			}
			if want := fmt.Sprintf("(exit status %d) after saving\n", tc.code); !strings.HasPrefix(stderr.String(), "train: stopped by ") || !strings.HasSuffix(stderr.String(), want) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("stderr %q, want one line \"train: stopped by … %s\"", stderr.String(), want)
			}
			if _, err := os.Stat(filepath.Join(out, "checkpoint.safetensors")); err != nil {
				t.Errorf("no checkpoint after %v: %v", tc.sig, err)
			}
		})
	}
}
