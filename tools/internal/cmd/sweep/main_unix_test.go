//go:build unix

package sweep

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/capstan-ml/capstan/tools/internal/clitest"
	"github.com/capstan-ml/capstan/train"
)

// TestRunLocked: a task whose run directory another worker holds (its
// flock) exits 75, EX_TEMPFAIL, with one line.
func TestRunLocked(t *testing.T) {
	tasks, m := writeTinyTasks(t, 1)
	dir := filepath.Dir(m)
	if err := os.MkdirAll(filepath.Join(dir, tasks[0].Dir), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, tasks[0].Dir, train.LockName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Skipf("no flock here: %v", err)
	}
	r := clitest.Run(t, nil, "run", "-manifest", m, "-index", "0")
	if r.Code != ExitTempFail || !strings.Contains(r.Stderr, "in use by another trainer") || strings.Count(r.Stderr, "\n") != 1 {
		t.Errorf("run on a locked run directory: exit %d, stderr %q; want %d and one line", r.Code, r.Stderr, ExitTempFail)
	}
}
