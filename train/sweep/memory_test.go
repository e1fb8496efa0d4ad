package sweep

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
)

// TestRunTaskProcessMemory: a task whose process needs more than the
// memory limit (its replicas, analysis and data sets together), or asks
// 4096 threads of a batch of 4096, is refused with a one-line error naming
// threads and batch before anything is loaded or written: no run
// directory, no result file.
func TestRunTaskProcessMemory(t *testing.T) {
	task := tinyTask(t)
	task.Batch, task.Threads = 8, 2
	mem, err := (&Planner{}).TaskMemory(task)
	if err != nil {
		t.Fatal(err)
	}
	huge := task
	huge.Batch, huge.Threads = 4096, 4096
	for _, c := range []struct {
		task  Task
		limit int64
	}{{task, mem.Process(task.Model, task.Batch, task.Threads).Total() - 1}, {huge, 0}} {
		if c.limit > 0 {
			t.Setenv(capsnet.MemoryEnv, strconv.FormatInt(c.limit, 10))
		}
		dir := t.TempDir()
		_, err := RunTask(context.Background(), dir, c.task, RunOptions{})
		b, th := strconv.Itoa(c.task.Batch), strconv.Itoa(c.task.Threads)
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "threads "+th) || !strings.Contains(err.Error(), "batch "+b) {
			t.Fatalf("threads %s, batch %s: %v", th, b, err)
		}
		for _, p := range []string{c.task.Dir, c.task.Result} {
			if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
				t.Errorf("threads %s, batch %s: %s written", th, b, p)
			}
		}
		t.Log(err)
	}
}

// TestManifestThreadsBound: a manifest task asking more than
// capsnet.MaxThreads threads is refused when the manifest is read.
func TestManifestThreadsBound(t *testing.T) {
	task := tinyTask(t)
	task.Batch, task.Threads = 4096, 4096
	err := task.check(0, map[string]int{})
	if err == nil || !strings.Contains(err.Error(), "threads: 4096 (batch 4096)") {
		t.Fatalf("threads 4096: %v", err)
	}
}
