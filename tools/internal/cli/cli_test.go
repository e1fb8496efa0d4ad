package cli

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
)

func TestExit(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		out  string
	}{
		{nil, 0, ""},
		{flag.ErrHelp, 0, ""},
		{errors.New("bad file"), 1, "tool: bad file\n"},
		{Usagef("-x %d: no", 3), 2, "tool: -x 3: no\n"},
		{fmt.Errorf("wrapped: %w", Usagef("-y")), 2, "tool: wrapped: -y\n"},
		{Interrupted{os.Interrupt}, 130, "tool: stopped by SIGINT (Ctrl-C) (exit status 130) after saving\n"},
		{Interrupted{syscall.SIGTERM}, 143, "tool: stopped by SIGTERM (exit status 143) after saving\n"},
		{errors.Join(errors.New("a"), errors.New("b")), 1, "tool: a; b\n"},
	} {
		var sb strings.Builder
		if code := Exit(&sb, "tool", tc.err); code != tc.code || sb.String() != tc.out {
			t.Errorf("Exit(%v): %d, %q; want %d, %q", tc.err, code, sb.String(), tc.code, tc.out)
		}
	}
}

func TestParse(t *testing.T) {
	newFS := func() *flag.FlagSet {
		fs := flag.NewFlagSet("tool", flag.ContinueOnError)
		fs.Int("n", 1, "a number")
		SetUsage(fs, "tool: does things; usage: tool [flags]", "Notes.\n")
		return fs
	}
	var out strings.Builder
	if err := Parse(newFS(), []string{"-h"}, 0, &out); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
	if want := "tool: does things; usage: tool [flags]\n\nNotes.\n\nFlags:\n  -n int\n    \ta number (default 1)\n"; out.String() != want {
		t.Errorf("-h prints %q, want %q", out.String(), want)
	}
	for _, tc := range []struct {
		args    []string
		maxArgs int
		want    string // "" for no error
	}{
		{[]string{"-n", "2"}, 0, ""},
		{[]string{"-n", "x"}, 0, `invalid value "x" for flag -n`},
		{[]string{"-m"}, 0, "flag provided but not defined: -m"},
		{[]string{"a"}, 0, `unexpected argument "a" (flags only`},
		{[]string{"a"}, 1, ""},
		{[]string{"a", "b"}, 1, `unexpected argument "b" (at most 1`},
	} {
		out.Reset()
		err := Parse(newFS(), tc.args, tc.maxArgs, &out)
		if out.Len() != 0 {
			t.Errorf("%v: printed %q", tc.args, out.String())
		}
		var ue UsageError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.want != "" && (!errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: %v, want a UsageError mentioning %q", tc.args, err, tc.want)
		}
	}
}

func TestRanges(t *testing.T) {
	for _, tc := range []struct {
		v      float64
		loOpen bool
		ok     bool
	}{
		{0, false, true}, {0, true, false}, {1, true, true}, {0.5, true, true}, {1.0000001, false, false},
		{-1e-300, false, false}, {math.NaN(), false, false}, {math.Inf(1), false, false}, {math.Inf(-1), false, false},
	} {
		err := Float("f", tc.v, 0, 1, tc.loOpen)
		if (err == nil) != tc.ok {
			t.Errorf("Float(%v, loOpen %v): %v, want ok %v", tc.v, tc.loOpen, err, tc.ok)
		}
		if err != nil && (!errors.As(err, new(UsageError)) || !strings.HasPrefix(err.Error(), "-f ")) {
			t.Errorf("Float(%v): %v, want a UsageError naming -f", tc.v, err)
		}
	}
	if Int("n", 1, 1, 3) != nil || Int("n", 3, 1, 3) != nil || Int("n", 0, 1, 3) == nil || Int("n", 4, 1, 3) == nil {
		t.Error("Int: wrong bounds")
	}
	if err := OneOf("data", "mnist", []string{"embedded", "mnist"}); err != nil {
		t.Errorf("OneOf: %v", err)
	}
	if err := OneOf("data", "svhn", []string{"embedded", "mnist"}); !errors.As(err, new(UsageError)) || err.Error() != `-data "svhn": want one of embedded, mnist` {
		t.Errorf("OneOf(svhn): %v", err)
	}
}

// TestWarnData: one line naming the checkpoint when it is evaluated on
// images it was not trained for, or records no data set; nothing otherwise.
func TestWarnData(t *testing.T) {
	for _, tc := range []struct {
		meta map[string]string
		eval string
		want string
	}{
		{map[string]string{"data": "mnist"}, "affnist", ""},
		{map[string]string{"data": "mnist"}, "mnist-val", ""},
		{map[string]string{"data": "fashion"}, "mnist", "trained on fashion, not on mnist"},
		{map[string]string{}, "mnist", "does not record"},
	} {
		var b strings.Builder
		warned := WarnData(&b, "ck.safetensors", &capsnet.Checkpoint{Meta: tc.meta}, tc.eval)
		if tc.want == "" {
			if warned || b.Len() != 0 {
				t.Errorf("%v on %s: warned %q", tc.meta, tc.eval, b.String())
			}
			continue
		}
		if !warned || !strings.HasPrefix(b.String(), "warning: ck.safetensors: ") || !strings.Contains(b.String(), tc.want) || strings.Count(b.String(), "\n") != 1 {
			t.Errorf("%v on %s: warning %q, want one line mentioning %q", tc.meta, tc.eval, b.String(), tc.want)
		}
	}
}

// TestThreads: -threads outside 1 … MaxThreads is a usage error naming
// -threads and, when given, -batch.
func TestThreads(t *testing.T) {
	for _, c := range []struct {
		threads, batch int
		want           string
	}{{0, 0, "-threads 0: want 1 to 256"}, {4096, 4096, "-threads 4096 (-batch 4096): want 1 to 256"}, {MaxThreads + 1, 0, "-threads 257: "}} {
		err := Threads(c.threads, c.batch)
		var u UsageError
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || !errors.As(err, &u) {
			t.Errorf("Threads(%d, %d) = %v, want a usage error %q…", c.threads, c.batch, err, c.want)
		}
	}
	if err := Threads(MaxThreads, 1); err != nil {
		t.Errorf("Threads(MaxThreads, 1) = %v", err)
	}
}
