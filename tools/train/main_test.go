package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	for _, f := range []string{"checkpoint.safetensors", "optimizer.safetensors", "metrics.ndjson"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
}
