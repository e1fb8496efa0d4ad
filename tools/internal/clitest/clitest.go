// Package clitest runs a command's main function in a child process (the
// test binary re-executed) so that a test can check what only a process
// shows: its exit status, stdout and stderr. A command's tests call Main
// (MainOf for a command's Main function of tools/internal/cmd) from
// TestMain, then Run or Command. Checkpoint writes a small checkpoint for
// them; PNGSize reads the size of a PNG a command wrote. Aliases,
// Snapshot and Refused check that a command refuses an output aimed at an
// input and leaves the input as it was; FakeSet makes a data directory to
// aim one at. Wrote checks the line a command prints for each file it
// wrote.
package clitest

import (
	"bytes"
	"encoding/json"
	"errors"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/safetensors"
	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/train/data"
)

// argsEnv carries the child's command-line arguments (a JSON array).
const argsEnv = "CAPSTAN_CLITEST_ARGS"

// Main is the body of a command's TestMain: in a child started by Run or
// Command it runs main as the command name with the arguments given there
// (and exits 0 if main returns); otherwise it runs the tests.
func Main(m *testing.M, name string, main func()) {
	if js, ok := os.LookupEnv(argsEnv); ok {
		var args []string
		if err := json.Unmarshal([]byte(js), &args); err != nil {
			os.Stderr.WriteString("clitest: bad " + argsEnv + ": " + err.Error() + "\n")
			os.Exit(99)
		}
		os.Args = append([]string{name}, args...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// MainOf is Main for a command whose logic is a function of its
// arguments returning the exit status (tools/internal/cmd/NAME's Main): in
// a child it runs cmd on the child's arguments and exits with its status.
func MainOf(m *testing.M, name string, cmd func(args []string) int) {
	Main(m, name, func() { os.Exit(cmd(os.Args[1:])) })
}

// Command returns the command that runs main with args in a child process
// (the test binary re-executed, see Main), with env added to the
// environment. The caller sets its outputs and starts it.
func Command(t testing.TB, env []string, args ...string) *exec.Cmd {
	t.Helper()
	js, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(append(os.Environ(), argsEnv+"="+string(js)), env...)
	return cmd
}

// Result is what a child process did.
type Result struct {
	Code           int // exit status
	Stdout, Stderr string
}

// Run runs main with args in a child process (see Command) and returns its
// exit status and outputs. The test is skipped where the test binary
// cannot be re-executed (qemu-user without binfmt).
func Run(t testing.TB, env []string, args ...string) Result {
	t.Helper()
	cmd := Command(t, env, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.Is(err, syscall.ENOEXEC):
		t.Skipf("cannot re-execute the test binary here (qemu-user without binfmt): %v", err)
	case errors.As(err, &ee):
	case err != nil:
		t.Fatal(err)
	}
	return Result{Code: cmd.ProcessState.ExitCode(), Stdout: stdout.String(), Stderr: stderr.String()}
}

// Checkpoint writes a checkpoint of the preset model (config in its
// metadata, parameters initialised with seed 1) in a temporary directory
// and returns its path.
func Checkpoint(t testing.TB, preset string) string {
	t.Helper()
	p, err := capsnet.NewParams(capsnet.Presets()[preset])
	if err != nil {
		t.Fatal(err)
	}
	p.Init(1)
	path := filepath.Join(t.TempDir(), preset+".safetensors")
	if err := p.SaveCheckpoint(path, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

// RunDir writes a run directory as tools/train leaves it, for the errors
// of a directory or an optimizer state given as a checkpoint: a checkpoint
// of preset (checkpoint.safetensors) and its optimizer state
// (optimizer-1.safetensors: the Adam moments adam.m.NAME and adam.v.NAME
// of every parameter). It returns the directory and the two files.
func RunDir(t testing.TB, preset string) (dir, checkpoint, optimizer string) {
	t.Helper()
	p, err := capsnet.NewParams(capsnet.Presets()[preset])
	if err != nil {
		t.Fatal(err)
	}
	p.Init(1)
	dir = t.TempDir()
	checkpoint = filepath.Join(dir, capsnet.CheckpointFileName)
	if err := p.SaveCheckpoint(checkpoint, map[string]string{"epoch": "1", "step": "1", "optimizer": "optimizer-1.safetensors"}); err != nil {
		t.Fatal(err)
	}
	opt := map[string]safetensors.Tensor{}
	for _, q := range p.List {
		n := q.Buf.Len()
		opt["adam.m."+q.Name] = safetensors.Tensor{Shape: []int{n}, Data: make([]float32, n)}
		opt["adam.v."+q.Name] = safetensors.Tensor{Shape: []int{n}, Data: make([]float32, n)}
	}
	optimizer = filepath.Join(dir, "optimizer-1.safetensors")
	if err := safetensors.Write(optimizer, opt, map[string]string{"epoch": "1", "step": "1", "batch": "0"}); err != nil {
		t.Fatal(err)
	}
	return dir, checkpoint, optimizer
}

// FlagHelp returns the help text of flag -name in usage (a command's -h
// output): the lines after "  -name …" up to the next flag.
func FlagHelp(usage, name string) string {
	_, rest, ok := strings.Cut(usage, "\n  -"+name+" ")
	if !ok {
		_, rest, _ = strings.Cut(usage, "\n  -"+name+"\n")
	}
	help, _, _ := strings.Cut(rest, "\n  -")
	return help
}

// WantNames fails the test for every name of names that text (a flag's
// help, an error) does not list as a word of its own: "mnist" is not
// found in "mnist-val".
func WantNames(t testing.TB, what, text string, names []string) {
	t.Helper()
	for _, n := range names {
		if !regexp.MustCompile(`(^|[\s,:;(/])` + regexp.QuoteMeta(n) + `($|[\s,:;)/])`).MatchString(text) {
			t.Errorf("%s does not list %s: %q", what, n, text)
		}
	}
}

// WantErr fails the test unless err mentions every fragment of want and
// none of unwanted.
func WantErr(t testing.TB, what string, err error, want []string, unwanted ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want one mentioning %q", what, want)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q, want one mentioning %q", what, err, w)
		}
	}
	for _, u := range unwanted {
		if strings.Contains(err.Error(), u) {
			t.Errorf("%s: error %q mentions %q", what, err, u)
		}
	}
}

// PNGSize returns the width and height of the PNG file at path, failing
// the test when it is missing or not a PNG.
func PNGSize(t testing.TB, path string) (w, h int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return cfg.Width, cfg.Height
}

// Aliases returns names of the file at path other than path itself, as a
// user may aim an output at it: dir/./name, and a symbolic link to it in
// a new temporary directory (left out where links cannot be made).
func Aliases(t testing.TB, path string) []string {
	t.Helper()
	sep := string(filepath.Separator)
	names := []string{filepath.Dir(path) + sep + "." + sep + filepath.Base(path)}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link-"+filepath.Base(path))
	if err := os.Symlink(abs, link); err == nil {
		names = append(names, link)
	}
	return names
}

// Files are the contents of files, read by Snapshot.
type Files map[string][]byte

// Snapshot reads the files at paths (each must exist).
func Snapshot(t testing.TB, paths ...string) Files {
	t.Helper()
	f := Files{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f[p] = b
	}
	return f
}

// Refused checks that r is a command's refusal of its command line: exit
// status 2, one line on stderr holding each of want, and every file of
// files byte for byte unchanged. what names the case in failures.
func Refused(t testing.TB, what string, r Result, files Files, want ...string) {
	t.Helper()
	if r.Code != 2 || strings.Count(strings.TrimSuffix(r.Stderr, "\n"), "\n") != 0 {
		t.Errorf("%s: exit %d, stderr %q: want exit 2 and one line", what, r.Code, r.Stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.Stderr, w) {
			t.Errorf("%s: stderr %q lacks %q", what, r.Stderr, w)
		}
	}
	for p, b := range files {
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, b) {
			t.Errorf("%s: %s changed (%d bytes, was %d; %v)", what, p, len(got), len(b), err)
		}
	}
}

// FakeSet writes a file named as each file of data set name (data.Sets),
// holding its name only, in a new temporary directory and returns the
// directory and the files: a -data-dir that data.Set.Find accepts, that
// no loader reads.
func FakeSet(t testing.TB, name string) (dir string, files []string) {
	t.Helper()
	s := data.Lookup(name)
	if s == nil {
		t.Fatalf("no data set %s", name)
	}
	dir = t.TempDir()
	for _, n := range s.FileNames() {
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	return dir, files
}

// Wrote checks that out (a command's stdout or stderr) confirms each file
// of wrote (path → the note of its line) with exactly one line
// cli.WroteLine(path, note), and holds no other "wrote " line.
func Wrote(t testing.TB, what, out string, wrote map[string]string) {
	t.Helper()
	n := 0
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "wrote ") {
			n++
		}
	}
	for path, note := range wrote {
		line := cli.WroteLine(path, note)
		if c := strings.Count("\n"+out, "\n"+line+"\n"); c != 1 {
			t.Errorf("%s: %d lines %q, want 1:\n%s", what, c, line, out)
		}
	}
	if n != len(wrote) {
		t.Errorf("%s: %d \"wrote\" lines, want %d:\n%s", what, n, len(wrote), out)
	}
}
