package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/train/telemetry"
)

// writeLog writes a telemetry file of n records to dir.
func writeLog(t *testing.T, dir string, n int) string {
	t.Helper()
	h := telemetry.Header{Format: telemetry.Format, Model: "m", Batch: 4, Layers: []telemetry.Layer{{Name: "primary", N: 2, D: 2}, {Name: "caps.0", N: 3, D: 2}}}
	w, err := telemetry.Create(dir, h, telemetry.Gzip) // the form runs write by default
	if err != nil {
		t.Fatal(err)
	}
	for s := 1; s <= n; s++ {
		r := telemetry.Record{Epoch: 1, Step: s, MaxNorm: [][]float32{{float32(s), 0.5}, {0.1, 0.2, float32(s % 7)}}, GradW: [][]float32{{1, 2, 3, 4, 5, float32(s)}}}
		if err := w.Write(&r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, telemetry.GzipName)
}

func TestPool(t *testing.T) {
	dir := t.TempDir()
	src := writeLog(t, dir, 95)
	dst := filepath.Join(t.TempDir(), telemetry.GzipName)
	if err := run([]string{"-max", "10", src, dst}); err != nil {
		t.Fatal(err)
	}
	g, err := telemetry.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if p := g.Header.Pool; p == nil || p.Window != 10 || p.Records != 95 || len(g.Records) != 10 || g.Records[9].MaxNorm[0][0] != 95 {
		t.Fatalf("pooled log: %+v, %d records", g.Header.Pool, len(g.Records))
	}
}

func TestPoolBadArgs(t *testing.T) {
	dir := t.TempDir()
	src := writeLog(t, dir, 5)
	for _, c := range []struct {
		args  []string
		want  string
		usage bool
	}{
		{[]string{src}, "want SRC and DST", true},
		{[]string{"-max", "0", src, src + ".gz"}, "-max 0", true},
		{[]string{src, src}, "DST " + src + " is the input SRC " + src, true},
		{[]string{filepath.Join(dir, "missing"), filepath.Join(dir, "out.gz")}, "missing", false},
	} {
		err := run(c.args)
		var u cli.UsageError
		if err == nil || !strings.Contains(err.Error(), c.want) || errors.As(err, &u) != c.usage {
			t.Errorf("%v: error %v, want %q (usage error: %v)", c.args, err, c.want, c.usage)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out.gz")); err == nil {
		t.Error("a failed pool left its output")
	}
}
