// Command sweep runs grids of training runs on a cluster scheduler (issue
// 12). PLACEHOLDER: this main.go only dispatches to the subcommands the
// sw-sched branch registers (slurm, k8s, collect); the core branch's
// main.go, with plan and run, replaces it.
package main

import (
	"os"
	"sort"
	"strings"

	"github.com/capstan-ml/capstan/tools/internal/cli"
)

// commands maps a subcommand's name to its function (its arguments after
// the name).
var commands = map[string]func([]string) error{}

func main() {
	name := "sweep"
	if len(os.Args) > 1 {
		name += " " + os.Args[1]
	}
	os.Exit(cli.Exit(os.Stderr, name, dispatch(os.Args[1:])))
}

func dispatch(args []string) error {
	var names []string
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(args) == 0 {
		return cli.Usagef("want a subcommand: %s", strings.Join(names, ", "))
	}
	f, ok := commands[args[0]]
	if !ok {
		return cli.Usagef("unknown subcommand %q (%s)", args[0], strings.Join(names, ", "))
	}
	return f(args[1:])
}
