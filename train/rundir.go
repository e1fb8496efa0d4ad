package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/capstan-ml/capstan/capsnet/safetensors"
)

// LockName is the lock file Run holds in its output directory for as long
// as it runs: a second trainer on the same directory is refused with the
// first one's process id. The lock is an advisory lock on the open file
// (flock), so it dies with its process, kill -9 included; the file itself
// stays and is harmless.
const LockName = "lock"

// optimizerFile is the name of the optimizer state saved at an optimizer
// step. The checkpoint names the file it belongs to (metadata
// "optimizer"), so the pair commits as one unit when the checkpoint is
// renamed into place: see Trainer.save.
func optimizerFile(step int) string { return fmt.Sprintf("optimizer-%d.safetensors", step) }

// isOptimizerFile reports whether name is an optimizer state file of a run
// directory (step-named, or the single name of older runs).
func isOptimizerFile(name string) bool {
	return name == OptimizerName || (strings.HasPrefix(name, "optimizer-") && strings.HasSuffix(name, ".safetensors"))
}

// ErrLocked is wrapped by the error of Run when another trainer holds the
// run directory's lock (errors.Is): a scheduler may retry later.
var ErrLocked = errors.New("run directory in use")

// lockRunDir takes the run directory's lock, or returns an error naming
// the process that holds it. release drops it.
func lockRunDir(dir string) (release func(), err error) {
	path := filepath.Join(dir, LockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := tryLock(f); err != nil {
		holder, _ := io.ReadAll(io.LimitReader(f, 256))
		f.Close()
		if errors.Is(err, errLocked) {
			who := strings.TrimSpace(string(holder))
			if who == "" {
				who = "a process that has not written its id yet"
			}
			return nil, fmt.Errorf("%w: %s is in use by another trainer (%s); wait for it to finish or choose another -out", ErrLocked, dir, who)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	host, _ := os.Hostname()
	id := fmt.Sprintf("pid %d on %s, started %s\n", os.Getpid(), host, time.Now().Format(time.DateTime))
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(id), 0)
	}
	return func() {
		unlock(f)
		f.Close()
	}, nil
}

// cleanStale removes what a killed run leaves behind in dir: temporary
// files of interrupted atomic writes, and optimizer states that no
// committed checkpoint names (keep is the one that the checkpoint names;
// "" removes them all). Only called with the directory's lock held.
func cleanStale(dir, keep string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("run directory: %w", err)
	}
	for _, e := range entries {
		n := e.Name()
		stale := strings.HasPrefix(n, ".") && strings.Contains(n, ".tmp-")
		stale = stale || (isOptimizerFile(n) && n != keep)
		if stale && e.Type().IsRegular() {
			if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("removing stale %s: %w", n, err)
			}
		}
	}
	return nil
}

// writeMetrics replaces dir's metrics.ndjson, atomically, by one line per
// completed epoch of history and, when extra is not nil, one more line
// (the interrupted epoch's partial figures).
func writeMetrics(dir string, history []EpochMetrics, extra *EpochMetrics) error {
	var buf bytes.Buffer
	for _, em := range history {
		line, _ := json.Marshal(em)
		buf.Write(append(line, '\n'))
	}
	if extra != nil {
		line, _ := json.Marshal(extra)
		buf.Write(append(line, '\n'))
	}
	err := safetensors.WriteAtomic(filepath.Join(dir, MetricsName), func(w io.Writer) error {
		_, err := w.Write(buf.Bytes())
		return err
	})
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

// maxMetricsFile bounds the metrics.ndjson of an older run that a resume
// reads (a line is about 250 bytes: 64 MiB is 250,000 epochs).
const maxMetricsFile = 64 << 20

// readMetricsFile returns the completed epochs 1..upTo of an existing
// metrics.ndjson (runs saved before checkpoints carried their history):
// the last complete line of each epoch, interrupted lines dropped. A
// missing file gives no history; one larger than maxMetricsFile is an
// error.
func readMetricsFile(path string, upTo int) ([]EpochMetrics, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxMetricsFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(raw) > maxMetricsFile {
		return nil, fmt.Errorf("%s: more than %d MiB, not the metrics of a run", path, maxMetricsFile>>20)
	}
	byEpoch := map[int]EpochMetrics{}
	for _, l := range strings.Split(string(raw), "\n") {
		var em EpochMetrics
		if json.Unmarshal([]byte(l), &em) == nil && !em.Interrupted && em.Epoch >= 1 && em.Epoch <= upTo {
			byEpoch[em.Epoch] = em
		}
	}
	var out []EpochMetrics
	for e := 1; e <= upTo && len(out) < len(byEpoch); e++ {
		if em, ok := byEpoch[e]; ok {
			out = append(out, em)
		}
	}
	return out, nil
}

// faultHook, when set (by the fault-injection tests only), is called at
// every point where a kill could land: after each training step and
// between the stages of a checkpoint write, including inside the writes.
var faultHook func(point string)

func fault(point string) {
	if faultHook != nil {
		faultHook(point)
	}
}

// faultWriter calls the fault hook before every write it passes on.
type faultWriter struct {
	w     io.Writer
	point string
}

func (f faultWriter) Write(p []byte) (int, error) {
	fault(f.point)
	return f.w.Write(p)
}
