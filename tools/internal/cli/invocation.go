package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Parent is the multi-command binary that runs the command as one of its
// subcommands ("capstan": tools/capstan sets it before it runs one), ""
// when the command runs as its own binary (tools/NAME).
var Parent string

// Invocation is how a hint printed by the running command names another
// Capstan command, tool (its directory under tools/, e.g. "infer"), so
// that the user can paste it back into a shell:
//
//   - "go run ./tools/TOOL" when the running executable was built by go
//     run, which is the case when os.Executable's path holds "/go-build":
//     go run's first run executes $TMPDIR/go-buildNNN/b001/exe/TOOL and,
//     since Go 1.24, later ones the copy it cached in the build cache,
//     whose default is $XDG_CACHE_HOME/go-build; a build cache elsewhere
//     counts when $GOCACHE names it in the environment;
//   - otherwise the sibling binary: os.Args[0] with its last element
//     replaced by TOOL when os.Args[0] has a directory part
//     ("bin/linux-arm64/train" → "bin/linux-arm64/infer", "./train" →
//     "./infer"), else TOOL alone, found on PATH as the running one was;
//   - when that sibling does not exist (a binary built alone, go build
//     -o /tmp/train ./tools/train): TOOL if it is on PATH, else
//     "capstan TOOL" if capstan is, else "go run ./tools/TOOL".
//
// Run as a subcommand of Parent (capstan train), it names TOOL as a
// subcommand of the same binary: "go run ./tools/capstan TOOL" under go
// run, else os.Args[0] as typed and TOOL ("capstan infer",
// "bin/linux-arm64/capstan infer").
//
// The binary's path is shell-quoted (ShellQuote) when it needs it.
func Invocation(tool string) string {
	exe, err := os.Executable()
	if err != nil {
		exe = "" // unknown: argv0 decides
	}
	return invocation(tool, exe, os.Args[0], os.Getenv("GOCACHE"), Parent, executable)
}

// executable reports whether name is an executable file: a path when it
// holds a slash, else a name looked up on PATH.
func executable(name string) bool {
	if !strings.ContainsRune(name, '/') {
		_, err := exec.LookPath(name)
		return err == nil
	}
	fi, err := os.Stat(name)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// invocation is Invocation for the executable path exe (os.Executable,
// "" if unknown), argv0 (os.Args[0]), gocache ($GOCACHE, "" if unset),
// parent (Parent) and exists, which reports whether a path (or a name on
// PATH) is an executable (executable).
func invocation(tool, exe, argv0, gocache, parent string, exists func(string) bool) string {
	if parent != "" {
		if isGoRun(exe, gocache) {
			return "go run ./tools/" + parent + " " + tool
		}
		return ShellQuote(argv0) + " " + tool
	}
	if isGoRun(exe, gocache) {
		return "go run ./tools/" + tool
	}
	sibling := tool
	if i := strings.LastIndexAny(argv0, "/"+string(filepath.Separator)); i >= 0 {
		sibling = argv0[:i+1] + tool
	}
	switch {
	case exists(sibling):
		return ShellQuote(sibling)
	case sibling != tool && exists(tool):
		return ShellQuote(tool)
	case exists("capstan"):
		return "capstan " + tool
	}
	return "go run ./tools/" + tool
}

// isGoRun reports whether exe is a go run build: its path holds
// "/go-build" (go run's temporary directory, or the default build cache),
// or it lies under gocache when that is an absolute path.
func isGoRun(exe, gocache string) bool {
	if exe == "" {
		return false
	}
	if strings.Contains(filepath.ToSlash(exe), "/go-build") {
		return true
	}
	if gocache == "" || gocache == "off" || !filepath.IsAbs(gocache) {
		return false
	}
	rel, err := filepath.Rel(gocache, exe)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// ShellQuote returns s as a POSIX shell reads it back as one word: s itself
// when it holds only letters, digits and -_./=:,+@%, else s in single
// quotes, each single quote in s closing the quotes, escaped, and
// reopening them:
//
//	it's → 'it'\''s'
func ShellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
