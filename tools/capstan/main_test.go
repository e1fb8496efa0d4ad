package main

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/tools/internal/clitest"
)

func TestMain(m *testing.M) {
	clitest.MainOf(m, "capstan", func(args []string) int { return run(args, os.Stdout, os.Stderr) })
}

// TestHelp: capstan help lists every command, one line each; help
// COMMAND prints the command's own -h; no command lists them on stderr
// and exits 2.
func TestHelp(t *testing.T) {
	r := clitest.Run(t, nil, "help")
	if r.Code != 0 || r.Stderr != "" {
		t.Fatalf("help: exit %d, stderr %q", r.Code, r.Stderr)
	}
	for _, c := range commands {
		if strings.Count(r.Stdout, "\n  "+c.name+" ") != 1 {
			t.Errorf("help does not list %s on a line of its own:\n%s", c.name, r.Stdout)
		}
	}
	if none := clitest.Run(t, nil); none.Code != 2 || none.Stdout != "" || none.Stderr != r.Stdout {
		t.Errorf("no command: exit %d, stdout %q, stderr %q; want 2 and the list on stderr", none.Code, none.Stdout, none.Stderr)
	}
	for _, c := range commands {
		h := clitest.Run(t, nil, "help", c.name)
		d := clitest.Run(t, nil, c.name, "-h")
		if h.Code != 0 || !strings.HasPrefix(h.Stdout, c.name+": ") || h.Stdout != d.Stdout || d.Code != 0 {
			t.Errorf("help %s: exit %d, stdout %.60q…; %s -h: exit %d, stdout %.60q…", c.name, h.Code, h.Stdout, c.name, d.Code, d.Stdout)
		}
	}
	r = clitest.Run(t, nil, "help", "nope")
	if r.Code != 2 || !strings.HasPrefix(r.Stderr, `capstan: unknown command "nope"`) || strings.Count(r.Stderr, "\n") != 1 {
		t.Errorf("help nope: exit %d, stderr %q", r.Code, r.Stderr)
	}
}

// TestUnknown: an unknown command is one line naming it, exit 2.
func TestUnknown(t *testing.T) {
	for _, arg := range []string{"nope", "-x", "pool"} {
		r := clitest.Run(t, nil, arg, "-h")
		if r.Code != 2 || r.Stdout != "" || strings.Count(r.Stderr, "\n") != 1 || !strings.HasPrefix(r.Stderr, "capstan: unknown command \""+arg+"\": want one of train, ") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", arg, r.Code, r.Stdout, r.Stderr)
		}
	}
}

// TestVersion: the module version and the Go version on one line.
func TestVersion(t *testing.T) {
	r := clitest.Run(t, nil, "version")
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "capstan ") || !strings.Contains(r.Stdout, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH) || strings.Count(r.Stdout, "\n") != 1 {
		t.Errorf("version: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	if r := clitest.Run(t, nil, "version", "x"); r.Code != 2 {
		t.Errorf("version x: exit %d, want 2", r.Code)
	}
}

// TestSubcommand: a subcommand's errors and exit status are the tool's,
// and its hints name the others as capstan subcommands.
func TestSubcommand(t *testing.T) {
	r := clitest.Run(t, nil, "infer", "-bogus")
	if r.Code != 2 || r.Stderr != "infer: flag provided but not defined: -bogus (see -h)\n" {
		t.Errorf("infer -bogus: exit %d, stderr %q", r.Code, r.Stderr)
	}
	r = clitest.Run(t, nil, "dump", "-weights", "/nonexistent/w.safetensors", "-batch", "/nonexistent/b.safetensors", "-out", t.TempDir()+"/o.safetensors")
	if r.Code != 1 || !strings.HasPrefix(r.Stderr, "dump: ") {
		t.Errorf("dump of missing files: exit %d, stderr %q", r.Code, r.Stderr)
	}
}
