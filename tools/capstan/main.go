// Command capstan is Capstan's command-line tools in one binary: capstan
// NAME runs the command tools/NAME with the same flags, output and exit
// status (both call tools/internal/cmd/NAME's Main).
//
//	go install github.com/capstan-ml/capstan/tools/capstan@latest
//	capstan train -model tiny-deep -epochs 1    # as go run ./tools/train …
//	capstan analyze -checkpoint runs/default/checkpoint.safetensors -json stats.json
//	capstan help                                # the commands
//	capstan help infer                          # a command's flags (capstan infer -h)
//	capstan version                             # module version, VCS commit, Go version
//
// A command's hints name the others as subcommands of the same binary
// ("capstan infer -checkpoint …"). An unknown command exits 2 with one
// line on stderr; no command prints the list of commands and exits 2.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/tools/internal/cmd/analyze"
	"github.com/capstan-ml/capstan/tools/internal/cmd/data"
	"github.com/capstan-ml/capstan/tools/internal/cmd/dump"
	"github.com/capstan-ml/capstan/tools/internal/cmd/infer"
	"github.com/capstan-ml/capstan/tools/internal/cmd/quantize"
	"github.com/capstan-ml/capstan/tools/internal/cmd/sweep"
	"github.com/capstan-ml/capstan/tools/internal/cmd/train"
)

// name is the binary's name, cli.Parent of its commands.
const name = "capstan"

// command is a subcommand: tools/NAME's Main and one line saying what it
// does.
type command struct {
	name, summary string
	main          func(args []string) int
}

// commands are the subcommands, in the order capstan help lists them.
var commands = []command{
	{"train", "train a CapsNet on a data set, writing a checkpoint every epoch", train.Main},
	{"infer", "evaluate a checkpoint on a data set, or classify one image", infer.Main},
	{"analyze", "parse-tree statistics of checkpoints (the paper's Tables 1 and 2)", analyze.Main},
	{"quantize", "turn a float32 checkpoint into an int8 model and compare their accuracy", quantize.Main},
	{"sweep", "run grids of training runs on cluster schedulers (Slurm, Kubernetes)", sweep.Main},
	{"dump", "write every intermediate of one forward and backward pass on a batch", dump.Main},
	{"data", "fetch the data sets Capstan trains on into the data directory", data.Main},
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run runs the command line args (after the binary's name) and returns
// the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return cli.ExitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		return help(args[1:], stdout, stderr)
	case "version", "-version", "--version":
		if len(args) > 1 {
			return cli.Exit(stderr, name+" version", cli.Usagef("unexpected argument %q (version takes none)", args[1]))
		}
		fmt.Fprintln(stdout, version())
		return cli.ExitOK
	}
	c := lookup(args[0])
	if c == nil {
		return unknown(stderr, args[0])
	}
	cli.Parent = name
	return c.main(args[1:])
}

// help prints the list of commands (no args) or runs command args[0]
// with -h, which prints its usage and flags on stdout.
func help(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		usage(stdout)
		return cli.ExitOK
	case len(args) > 1:
		return cli.Exit(stderr, name+" help", cli.Usagef("unexpected argument %q (capstan help [command])", args[1]))
	case args[0] == "help" || args[0] == "version":
		usage(stdout)
		return cli.ExitOK
	}
	c := lookup(args[0])
	if c == nil {
		return unknown(stderr, args[0])
	}
	cli.Parent = name
	return c.main([]string{"-h"})
}

func lookup(n string) *command {
	for i := range commands {
		if commands[i].name == n {
			return &commands[i]
		}
	}
	return nil
}

// unknown prints the one-line error of an unknown command n and returns
// exit status 2.
func unknown(stderr io.Writer, n string) int {
	var names []string
	for _, c := range commands {
		names = append(names, c.name)
	}
	return cli.Exit(stderr, name, cli.Usagef("unknown command %q: want one of %s, help, version (see capstan help)", n, strings.Join(names, ", ")))
}

// usage prints what capstan does and its commands, one line each.
func usage(w io.Writer) {
	fmt.Fprintf(w, "%s: Capstan's command-line tools (capsule networks); usage: %s COMMAND [flags] (%s help COMMAND for its flags)\n\nCommands:\n", name, name, name)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "  %-9s %s\n", "help", "list the commands, or print a command's usage and flags (help COMMAND)")
	fmt.Fprintf(w, "  %-9s %s\n", "version", "print the module version, the VCS commit and the Go version")
	fmt.Fprintf(w, "\nEach command takes the flags of go run ./tools/COMMAND and exits as it does:\n0 done, 1 error, 2 bad command, flag or argument (see the command's -h).\n")
}

// version is the version line: the module version ("(devel)" when built
// in a work tree), the VCS commit and whether the work tree had changes
// (when the build recorded them), the Go version and the platform.
func version() string {
	mod, rev, modified := "unknown", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			mod = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	commit := "commit unknown"
	if rev != "" {
		commit = "commit " + rev
		if modified {
			commit += " (modified)"
		}
	}
	return fmt.Sprintf("%s %s, %s, %s %s/%s", name, mod, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
