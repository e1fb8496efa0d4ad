package sweep

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/atomicfile"
	"github.com/capstan-ml/capstan/train/runfile"
)

// ManifestName is the manifest's file name in a sweep's directory.
const ManifestName = "manifest.ndjson"

// Bounds of a manifest line's strings (a real line is under 500 bytes).
const (
	MaxLine  = 16 << 10 // bytes of one manifest line
	maxField = 4 << 10  // bytes of one string field
)

// WriteManifest writes tasks to path as NDJSON, one task per line in
// index order, atomically (temporary file, fsync, rename). The tasks are
// checked as ReadManifest checks them.
func WriteManifest(path string, tasks []Task) error {
	b, err := encodeManifest(path, tasks)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	err = atomicfile.Write(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	return nil
}

// encodeManifest checks tasks and returns them as a manifest's bytes.
func encodeManifest(path string, tasks []Task) ([]byte, error) {
	if err := checkTasks(path, tasks); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	for _, t := range tasks {
		line, err := json.Marshal(t)
		if err != nil {
			return nil, fmt.Errorf("manifest %s: task %d: %w", path, t.Index, err)
		}
		buf.Write(append(line, '\n'))
	}
	return buf.Bytes(), nil
}

// checkTasks checks tasks written as a manifest: the count, each task,
// the index order, distinct run directories and result files.
func checkTasks(path string, tasks []Task) error {
	if len(tasks) == 0 || len(tasks) > MaxTasks {
		return fmt.Errorf("manifest %s: %d tasks: want 1 to %d", path, len(tasks), MaxTasks)
	}
	seen := map[string]int{}
	for i, t := range tasks {
		if err := t.check(i, seen); err != nil {
			return fmt.Errorf("manifest %s: line %d: %w", path, i+1, err)
		}
	}
	return nil
}

// ReadManifest reads a manifest (untrusted: a line is at most MaxLine
// bytes, the tasks at most MaxTasks, every field is checked, unknown
// fields are errors) and returns its tasks in index order. An error is one
// line naming the file, the line and the field.
func ReadManifest(path string) ([]Task, error) {
	f, err := runfile.Open(path) // a FIFO or device is refused, not waited on
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	defer f.Close()
	return readManifest(f, path)
}

func readManifest(r io.Reader, path string) ([]Task, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxLine)
	var tasks []Task
	seen := map[string]int{}
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			return nil, fmt.Errorf("manifest %s: line %d: empty line", path, line)
		}
		if len(tasks) == MaxTasks {
			return nil, fmt.Errorf("manifest %s: line %d: more than %d tasks", path, line, MaxTasks)
		}
		var t Task
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&t); err != nil {
			return nil, fmt.Errorf("manifest %s: line %d: %s", path, line, jsonError(err))
		}
		if dec.More() {
			return nil, fmt.Errorf("manifest %s: line %d: more than one JSON value", path, line)
		}
		if err := t.check(line-1, seen); err != nil {
			return nil, fmt.Errorf("manifest %s: line %d: %w", path, line, err)
		}
		tasks = append(tasks, t)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("manifest %s: line %d: longer than %d bytes", path, line+1, MaxLine)
		}
		return nil, fmt.Errorf("manifest %s: %w", path, err)
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("manifest %s: no tasks", path)
	}
	return tasks, nil
}

// jsonError names the field of a JSON decoding error where it can.
func jsonError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %s: %s is not a %s", te.Field, te.Value, te.Type)
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

// check checks a task read or written at position i of a manifest; seen
// maps the run directories and result files of the tasks before it (it
// adds this one's).
func (t Task) check(i int, seen map[string]int) error {
	if t.Index != i {
		return fmt.Errorf("field index: %d, want %d (tasks in index order from 0)", t.Index, i)
	}
	for _, f := range []struct{ name, v string }{{"model", t.Model}, {"arch", t.Arch}, {"dir", t.Dir}, {"result", t.Result}} {
		if f.v == "" || len(f.v) > maxField || strings.ContainsAny(f.v, "\x00\n\r") {
			return fmt.Errorf("field %s: %q: want a non-empty name of at most %d bytes on one line", f.name, trunc(f.v), maxField)
		}
	}
	for _, f := range []struct{ name, v string }{{"dir", t.Dir}, {"result", t.Result}} {
		if !filepath.IsAbs(f.v) && !filepath.IsLocal(f.v) {
			return fmt.Errorf("field %s: %q: want a path inside the manifest's directory, or an absolute one", f.name, trunc(f.v))
		}
		key := filepath.Clean(f.v)
		if j, ok := seen[key]; ok {
			return fmt.Errorf("field %s: %q is task %d's too", f.name, trunc(f.v), j)
		}
		seen[key] = i
	}
	if _, err := capsnet.LookupRouting(t.Routing); err != nil {
		return fmt.Errorf("field routing: %q: want one of %s", trunc(t.Routing), strings.Join(capsnet.RoutingNames(), ", "))
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"depth", t.Depth}, {"capsules", t.Capsules}, {"dim", t.Dim}} {
		if f.v < 0 || f.v > MaxAxis {
			return fmt.Errorf("field %s: %d: want 0 to %d", f.name, f.v, MaxAxis)
		}
	}
	if err := checkSettings(t.Data, t.Eval, t.K, t.Target, t.Epochs, t.Batch, t.Threads); err != nil {
		return fmt.Errorf("field %w", err)
	}
	if err := t.Settings.check(); err != nil {
		return fmt.Errorf("field %w", err)
	}
	return nil
}

// trunc shortens a string quoted in an error.
func trunc(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// Path resolves a path of a task (Dir, Result, Model when a file) against
// the manifest's directory dir: absolute paths stay.
func Path(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}
