package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/safetensors"
	"github.com/capstan-ml/capstan/kernels"
	"github.com/capstan-ml/capstan/train/data"
	"github.com/capstan-ml/capstan/train/telemetry"
)

// The fault-injection harness runs the trainer in a child process (this
// test binary, re-executed with faultChildEnv set) and kills it with
// SIGKILL at a chosen point: the child counts the calls of faultHook (after
// every training step, between the stages of a checkpoint write and inside
// the writes, every 64 KiB) and kills itself at call N. The parent then
// resumes the directory (a fresh start when no checkpoint was committed
// yet, as a job script would) and checks that the run ends bit-identical to
// an uninterrupted one, with each epoch once in metrics.ndjson and nothing
// stale left.
const faultChildEnv = "CAPSTAN_TEST_FAULT_CHILD"

// faultEpochs is how long the child trains: 3 epochs of 6 steps.
const faultEpochs = 3

func TestMain(m *testing.M) {
	if spec := os.Getenv(faultChildEnv); spec != "" {
		os.Exit(faultChild(spec))
	}
	os.Exit(m.Run())
}

// faultOptions is the child's run: tiny-deep on 96 embedded images.
func faultOptions(dir string) (Options, error) {
	tr, te, err := data.LoadEmbeddedMNIST()
	if err != nil {
		return Options{}, err
	}
	if tr, err = tr.Slice(0, 96); err != nil {
		return Options{}, err
	}
	if te, err = te.Slice(0, 32); err != nil {
		return Options{}, err
	}
	o := DefaultOptions(capsnet.Presets()["tiny-deep"])
	o.Train, o.Val, o.Batch, o.Threads, o.Epochs, o.OutDir = tr, te, 16, 1, faultEpochs, dir
	o.Telemetry = true
	return o, nil
}

// faultChild runs "DIR KILLAT": train in DIR (resuming when it holds a
// checkpoint), SIGKILL at hook call KILLAT (0: never). It prints the
// names of the hook calls it passed, one per line, for the parent to count.
func faultChild(spec string) int {
	var dir string
	var killAt int
	if _, err := fmt.Sscanf(spec, "%s %d", &dir, &killAt); err != nil {
		fmt.Fprintln(os.Stderr, "bad spec:", err)
		return 3
	}
	o, err := faultOptions(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	if _, err := os.Stat(filepath.Join(dir, CheckpointName)); err == nil {
		o.Resume = dir
	}
	calls := 0
	faultHook = func(point string) {
		calls++
		fmt.Println(point)
		if calls == killAt {
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			time.Sleep(time.Minute)
		}
	}
	if _, err := Run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// runChild runs one child and returns its output lines and whether it
// was killed.
func runChild(t *testing.T, dir string, killAt int) (points []string, killed bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d", faultChildEnv, dir, killAt))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if errors.Is(err, syscall.ENOEXEC) {
		t.Skipf("cannot re-execute the test binary here (qemu-user without binfmt): %v", err)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return strings.Fields(string(out)), true
		}
	}
	if err != nil {
		t.Fatalf("child (kill at %d) in %s: %v\n%s", killAt, dir, err, stderr.String())
	}
	return strings.Fields(string(out)), false
}

// runFiles returns the final parameters and optimizer moments of a run
// directory, and checks its other files: metrics.ndjson holds epochs
// 1..faultEpochs once each, one optimizer file, no temporary file.
func runFiles(t *testing.T, dir string) (params, opt map[string]safetensors.Tensor) {
	t.Helper()
	ck, err := capsnet.ReadCheckpoint(filepath.Join(dir, CheckpointName))
	if err != nil {
		t.Fatal(err)
	}
	o, err := safetensors.Read(filepath.Join(dir, ck.Meta["optimizer"]))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, MetricsName))
	if err != nil {
		t.Fatal(err)
	}
	var epochs []int
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var em EpochMetrics
		if err := json.Unmarshal([]byte(l), &em); err != nil {
			t.Fatalf("%s: metrics line %q: %v", dir, l, err)
		}
		epochs = append(epochs, em.Epoch)
	}
	if want := []int{1, 2, 3}; !slices.Equal(epochs, want) {
		t.Errorf("%s: metrics.ndjson holds epochs %v, want %v", dir, epochs, want)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if n := e.Name(); strings.Contains(n, ".tmp-") || (isOptimizerFile(n) && n != ck.Meta["optimizer"]) {
			t.Errorf("%s: stale file %s left", dir, n)
		}
	}
	return ck.Tensors, o.Tensors
}

func sameAll(t *testing.T, what string, a, b map[string]safetensors.Tensor) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d tensors, want %d", what, len(a), len(b))
	}
	if k, ok := sameTensors(a, b); !ok {
		t.Fatalf("%s: tensor %s differs from the uninterrupted run", what, k)
	}
}

// sameTelemetry checks that dir's telemetry file is byte-identical to the
// uninterrupted run's in ref (every step once, the same values).
func sameTelemetry(t *testing.T, what, ref, dir string) {
	t.Helper()
	a, err1 := os.ReadFile(filepath.Join(ref, telemetry.GzipName))
	b, err2 := os.ReadFile(filepath.Join(dir, telemetry.GzipName))
	if err1 != nil || err2 != nil || len(a) == 0 || string(a) != string(b) {
		t.Fatalf("%s: the telemetry file (%d bytes, %v) differs from the uninterrupted run's (%d bytes, %v)", what, len(b), err2, len(a), err1)
	}
}

// TestKillAnywhereResumes kills the trainer at every hook point of a
// 3-epoch run (more than 50: steps, checkpoint and optimizer writes in
// 64 KiB pieces, renames, metrics), plus at random instants from outside,
// and resumes each: 100% resumable, bit-identical parameters and optimizer
// state, every epoch once in the metrics, the telemetry file (the run
// writes it) byte-identical.
func TestKillAnywhereResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("fault injection runs ~100 child trainers (-short)")
	}
	if os.Getenv("CAPSTAN_QEMU") != "" {
		// ./build.sh sets CAPSTAN_QEMU for its runs under qemu-user, where a
		// child forked by a multithreaded parent can deadlock in the
		// emulator before its exec (seen on 2026-11-27 with two trainings
		// beside the tests: the child stuck at 0 s of CPU for 17 minutes,
		// until the 30-minute timeout). The harness tests file-system
		// logic, the same on every GOARCH; it runs natively.
		t.Skip("fault injection re-executes the test binary ~40 times: not under qemu-user (CAPSTAN_QEMU)")
	}
	base := t.TempDir()
	ref := filepath.Join(base, "ref")
	points, killed := runChild(t, ref, 0)
	if killed {
		t.Fatal("reference run killed")
	}
	if len(points) < 50 {
		t.Fatalf("only %d fault points in the run, want ≥ 50: %v", len(points), points)
	}
	refP, refO := runFiles(t, ref)
	kinds := map[string]int{}
	for _, p := range points {
		kinds[p]++
	}
	t.Logf("%d fault points: %v", len(points), kinds)
	// Every point with the best SIMD kernels; every 5th with forced or
	// reference kernels, as in the forced-kernel and noasm passes of
	// ./build.sh test (the points do not depend on the kernels, and the
	// reference kernels are slow).
	stride := 1
	if av := kernels.Available(); kernels.Impl() != av[len(av)-1] || kernels.Impl() == "ref" {
		stride = 5
	}
	for n := 1; n <= len(points); n += stride {
		dir := filepath.Join(base, strconv.Itoa(n))
		if _, killed := runChild(t, dir, n); !killed {
			t.Fatalf("kill at point %d (%s): the child finished", n, points[n-1])
		}
		if _, killed := runChild(t, dir, 0); killed {
			t.Fatalf("resume after kill at %d was killed", n)
		}
		p, o := runFiles(t, dir)
		sameAll(t, fmt.Sprintf("parameters after kill at point %d (%s)", n, points[n-1]), refP, p)
		sameAll(t, fmt.Sprintf("optimizer state after kill at point %d (%s)", n, points[n-1]), refO, o)
		sameTelemetry(t, fmt.Sprintf("kill at point %d (%s)", n, points[n-1]), ref, dir)
		os.RemoveAll(dir)
	}
	// kill -9 from outside at random instants, twice per run.
	rng := rand.New(rand.NewPCG(9, 9))
	for i := 0; i < 8/stride; i++ {
		dir := filepath.Join(base, fmt.Sprintf("ext%d", i))
		for k := 0; k < 2; k++ {
			cmd := exec.Command(os.Args[0], "-test.run", "^$")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s 0", faultChildEnv, dir))
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
			cmd.Process.Kill()
			cmd.Wait()
		}
		runChild(t, dir, 0)
		p, o := runFiles(t, dir)
		sameAll(t, fmt.Sprintf("parameters after external kills (run %d)", i), refP, p)
		sameAll(t, fmt.Sprintf("optimizer state after external kills (run %d)", i), refO, o)
		sameTelemetry(t, fmt.Sprintf("external kills (run %d)", i), ref, dir)
	}
}
