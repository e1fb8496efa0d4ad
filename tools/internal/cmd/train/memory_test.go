package train

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/train"
)

// planCheckpoint writes a tiny-deep checkpoint in a run directory whose
// "plan" metadata records threads and batch.
func planCheckpoint(t *testing.T, threads, batch int) string {
	t.Helper()
	p, err := capsnet.NewParams(capsnet.Presets()["tiny-deep"])
	if err != nil {
		t.Fatal(err)
	}
	plan, _ := json.Marshal(map[string]string{"threads": strconv.Itoa(threads), "batch": strconv.Itoa(batch), "epochs": "2", "seed": "1"})
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	meta := map[string]string{"plan": string(plan), "data": "embedded", "epoch": "1", "step": "0", "metrics": "[]"}
	if err := p.SaveCheckpoint(filepath.Join(dir, train.CheckpointName), meta); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestThreadsAndMemory: -threads above capsnet.MaxThreads, threads and a
// batch whose process needs more than the memory limit, from the flags or
// from a resumed checkpoint's plan (4096 × 4096), are refused with one
// line naming threads and batch, before any data is loaded or any output
// written.
func TestThreadsAndMemory(t *testing.T) {
	l, err := capsnet.Presets()["tiny-deep"].Resolve()
	if err != nil {
		t.Fatal(err)
	}
	m, err := l.TrainingMemory(64, 8)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	for _, c := range []struct {
		args  []string
		limit int64
		want  string
		code  int
	}{
		{[]string{"-threads", "300", "-batch", "4096"}, 0, "-threads 300 (-batch 4096)", cli.ExitUsage},
		{[]string{"-resume", planCheckpoint(t, 4096, 4096), "-out", out}, 0, "-threads 4096 (-batch 4096)", cli.ExitUsage},
		{[]string{"-threads", "8", "-batch", "64"}, m.Total() - 1, "threads 8 × batch 64", cli.ExitError},
		{[]string{"-resume", planCheckpoint(t, 8, 64), "-out", out}, m.Total() - 1, "threads 8 × batch 64", cli.ExitError},
	} {
		if c.limit > 0 {
			t.Setenv(capsnet.MemoryEnv, strconv.FormatInt(c.limit, 10))
		} else {
			os.Unsetenv(capsnet.MemoryEnv)
		}
		err := run(append([]string{"-model", "tiny-deep", "-out", out, "-plain"}, c.args...))
		var stderr strings.Builder
		code := cli.Exit(&stderr, "train", err)
		if err == nil || !strings.Contains(err.Error(), c.want) || code != c.code || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("train %v: exit %d, stderr %q; want %d and one line with %q", c.args, code, stderr.String(), c.code, c.want)
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("train %v: %s created", c.args, out)
		}
		t.Log(strings.TrimSpace(stderr.String()))
	}
}
