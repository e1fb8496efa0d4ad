// Package cli holds the command-line conventions the Capstan commands
// (tools/train, tools/infer, tools/dump, tools/data, …) share: -h prints a
// one-line summary then the flags on stdout and exits 0; a mistake on the
// command line (an unknown flag, a value that does not parse or is out of
// range, an extra argument) is a UsageError, printed once and exit status 2
// as Go's flag package does; any other error exits 1; a run stopped by a
// signal after saving its work exits 128 + the signal's number (130 for
// Ctrl-C, 143 for SIGTERM), as a shell reports a process killed by it. An
// output aimed at one of the command's inputs (named by a flag or found
// by the command, such as a run's telemetry beside its checkpoint) or at
// another output is refused before any work (CheckOutputs): a
// UsageError naming both flags. A hint naming another command says how
// to run it as the running one was run: go run ./tools/NAME, the sibling
// binary, or capstan NAME (Invocation).
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/train/data"
)

// MaxThreads bounds every -threads flag: capsnet.MaxThreads, the
// replicas of one process (see there why 256).
const MaxThreads = capsnet.MaxThreads

// Exit statuses of the commands.
const (
	ExitOK    = 0 // success, or -h
	ExitError = 1 // a bad file, model, data set, or a failure while running
	ExitUsage = 2 // a bad flag, flag value or argument (as Go's flag package)
)

// UsageError is a mistake on the command line: an unknown flag, a value
// that does not parse, is out of range or does not apply, an extra
// argument. Exit maps it to status 2.
type UsageError struct{ Err error }

// Error returns the wrapped error's message.
func (e UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e UsageError) Unwrap() error { return e.Err }

// Usagef returns a UsageError formatted as by fmt.Errorf.
func Usagef(format string, args ...any) error {
	return UsageError{fmt.Errorf(format, args...)}
}

// Interrupted is returned by a command that a signal stopped after it had
// saved its work; Exit maps it to 128 + the signal's number.
type Interrupted struct{ Signal os.Signal }

// Error says which signal stopped the command and its exit status.
func (e Interrupted) Error() string {
	return fmt.Sprintf("stopped by %s (exit status %d) after saving", signalName(e.Signal), e.Code())
}

// Code is the exit status: 128 + the signal's number (130 for SIGINT,
// 143 for SIGTERM), 130 for a signal without a number.
func (e Interrupted) Code() int {
	if s, ok := e.Signal.(syscall.Signal); ok && s > 0 && s < 128 {
		return 128 + int(s)
	}
	return 130
}

func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "SIGINT (Ctrl-C)"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return fmt.Sprint(s)
}

// SetUsage makes fs.Usage print summary (one line saying what the command
// does and how it is called, e.g. "train: trains a CapsNet …; usage:
// train [flags]"), then notes (may be empty; a paragraph, ending in a
// newline), then the flags with their defaults, on fs.Output().
func SetUsage(fs *flag.FlagSet, summary, notes string) {
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintln(w, summary)
		if notes != "" {
			fmt.Fprint(w, "\n"+notes)
		}
		fmt.Fprintln(w, "\nFlags:")
		fs.PrintDefaults()
	}
}

// Parse parses args with fs. -h or -help prints fs.Usage on stdout and
// returns flag.ErrHelp (Exit maps it to 0). A flag that is unknown or does
// not parse, or more than maxArgs positional arguments, is a UsageError;
// flag's own printing is silenced so that Exit prints the error once.
func Parse(fs *flag.FlagSet, args []string, maxArgs int, stdout io.Writer) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fs.Usage()
		return err
	}
	if err != nil {
		return UsageError{fmt.Errorf("%w (see -h)", err)}
	}
	if fs.NArg() > maxArgs {
		if maxArgs == 0 {
			return Usagef("unexpected argument %q (flags only; see -h)", fs.Arg(0))
		}
		return Usagef("unexpected argument %q (at most %d; see -h)", fs.Arg(maxArgs), maxArgs)
	}
	return nil
}

// Given reports which flags of fs were set on the command line.
func Given(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// Int checks that the value v of flag -name is in [lo, hi].
func Int(name string, v, lo, hi int) error {
	if v < lo || v > hi {
		return Usagef("-%s %d: want %d to %d", name, v, lo, hi)
	}
	return nil
}

// Threads checks -threads against 1 … MaxThreads, naming -batch (when
// not 0, the default) in the error: the replicas split the batch.
func Threads(threads, batch int) error {
	if threads >= 1 && threads <= MaxThreads {
		return nil
	}
	b := ""
	if batch != 0 {
		b = fmt.Sprintf(" (-batch %d)", batch)
	}
	return Usagef("-threads %d%s: want 1 to %d (capsnet.MaxThreads, the replicas of one process)", threads, b, MaxThreads)
}

// Float checks that the value v of flag -name is a finite number in
// [lo, hi], or in (lo, hi] when loOpen: NaN and ±Inf are refused.
func Float(name string, v, lo, hi float64, loOpen bool) error {
	ok := !math.IsNaN(v) && v >= lo && v <= hi && (!loOpen || v > lo)
	if ok {
		return nil
	}
	br := "["
	if loOpen {
		br = "("
	}
	return Usagef("-%s %v: want a number in %s%v, %v]", name, v, br, lo, hi)
}

// OneOf checks that the value v of flag -name is one of names (a list of
// the data-set table's, e.g. data.DataSets or data.TestSets).
func OneOf(name, v string, names []string) error {
	if !slices.Contains(names, v) {
		return Usagef("-%s %q: want one of %s", name, v, strings.Join(names, ", "))
	}
	return nil
}

// Exit prints err, if any and not flag.ErrHelp, on w as one line prefixed
// by the command's name, and returns the exit status: 0 for nil or
// flag.ErrHelp, 2 for a UsageError, Interrupted's Code, 1 otherwise.
func Exit(w io.Writer, name string, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return ExitOK
	}
	// One line even for joined errors (tools/data all).
	fmt.Fprintf(w, "%s: %s\n", name, strings.ReplaceAll(err.Error(), "\n", "; "))
	var ue UsageError
	var ie Interrupted
	switch {
	case errors.As(err, &ue):
		return ExitUsage
	case errors.As(err, &ie):
		return ie.Code()
	}
	return ExitError
}

// CheckModel checks a -model flag (cfg; nil when not given) against a
// checkpoint that names its own model in its metadata: they must be the
// same configuration (as capsnet.Params.Load requires), else the error
// says which model the file holds. A file without config metadata (a
// PyTorch state dict) takes any -model.
func CheckModel(ck *capsnet.Checkpoint, cfg *capsnet.Config) error {
	if cfg == nil || !ck.HasConfig() || ck.Config.JSON() == cfg.JSON() {
		return nil
	}
	if ck.Config.Name == cfg.Name {
		return fmt.Errorf("%s holds another configuration of model %s than -model gives; leave -model out to use the checkpoint's", ck.Path, cfg.Name)
	}
	return fmt.Errorf("%s holds model %s, not %s (-model); leave -model out to use the checkpoint's", ck.Path, ck.Config.Name, cfg.Name)
}

// WarnData prints a one-line warning to w when checkpoint ck (read from
// path) is evaluated on evaluation set evalSet (a data.LoadTest name)
// other than the data it was trained on (its "data" metadata), and
// returns whether it did.
func WarnData(w io.Writer, path string, ck *capsnet.Checkpoint, evalSet string) bool {
	msg := data.EvalWarning(ck.Meta["data"], evalSet)
	if msg != "" {
		fmt.Fprintf(w, "warning: %s: %s\n", path, msg)
	}
	return msg != ""
}
