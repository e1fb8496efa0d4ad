package cli

import (
	"slices"
	"testing"
)

func TestInvocation(t *testing.T) {
	const cached = "/root/.cache/go-build/a0/a0acdb21ea15447e0c1fbc42938ebd0863eeb673c1cf5eb098189274123d97cd-d/train"
	for _, tc := range []struct {
		exe, argv0, gocache, want string
	}{
		// go run: the executable lies in a go-build temporary directory
		// (first run) or in the build cache (later runs, Go 1.24 on),
		// whatever argv0 says.
		{"/tmp/go-build1234567/b001/exe/train", "/tmp/go-build1234567/b001/exe/train", "", "go run ./tools/infer"},
		{cached, cached, "", "go run ./tools/infer"},
		{"/var/gocache/a0/a0ac-d/train", "/var/gocache/a0/a0ac-d/train", "/var/gocache", "go run ./tools/infer"},
		{"/var/gocache/a0/a0ac-d/train", "/var/gocache/a0/a0ac-d/train", "/var/gocache/", "go run ./tools/infer"},
		// a binary run by path: its sibling, the prefix kept as typed.
		{"/work/capstan/bin/linux-arm64/train", "bin/linux-arm64/train", "", "bin/linux-arm64/infer"},
		{"/home/pi/train", "./train", "", "./infer"},
		{"/usr/local/bin/train", "/usr/local/bin/train", "/var/gocache", "/usr/local/bin/infer"},
		{"/var/gocache2/train", "/var/gocache2/train", "/var/gocache", "/var/gocache2/infer"}, // beside GOCACHE, not in it
		{"/home/pi/train", "./train", "off", "./infer"},
		{"/home/pi/my tools/train", "/home/pi/my tools/train", "", "'/home/pi/my tools/infer'"},
		// a binary found on PATH: the other name alone, found there too.
		{"/usr/local/bin/train", "train", "", "infer"},
		// os.Executable failed: argv0 decides.
		{"", "train", "", "infer"},
		{"", "../bin/train", "/var/gocache", "../bin/infer"},
	} {
		if got := invocation("infer", tc.exe, tc.argv0, tc.gocache, "", everything); got != tc.want {
			t.Errorf("invocation(infer, %q, %q, GOCACHE=%q) = %q, want %q", tc.exe, tc.argv0, tc.gocache, got, tc.want)
		}
	}
}

// everything is an invocation's exists for a machine where every sibling
// binary is installed.
func everything(string) bool { return true }

// TestInvocationMissingSibling: a binary built alone (go build -o
// /tmp/train ./tools/train) has no sibling; the hint names the tool on
// PATH, else capstan's subcommand, else go run.
func TestInvocationMissingSibling(t *testing.T) {
	for _, tc := range []struct {
		argv0 string
		have  []string
		want  string
	}{
		{"/tmp/train", []string{"/tmp/infer"}, "/tmp/infer"},
		{"/tmp/train", []string{"infer", "capstan"}, "infer"},
		{"/tmp/train", []string{"capstan"}, "capstan infer"},
		{"/tmp/train", nil, "go run ./tools/infer"},
		{"train", []string{"capstan"}, "capstan infer"},
		{"./train", nil, "go run ./tools/infer"},
	} {
		exists := func(p string) bool { return slices.Contains(tc.have, p) }
		if got := invocation("infer", "/x/"+tc.argv0, tc.argv0, "", "", exists); got != tc.want {
			t.Errorf("invocation(infer, argv0 %q, existing %q) = %q, want %q", tc.argv0, tc.have, got, tc.want)
		}
	}
}

// TestInvocationParent: a subcommand of capstan names another subcommand
// of the same binary.
func TestInvocationParent(t *testing.T) {
	for _, tc := range []struct {
		exe, argv0, want string
	}{
		{"/tmp/go-build1234567/b001/exe/capstan", "/tmp/go-build1234567/b001/exe/capstan", "go run ./tools/capstan infer"},
		{"/usr/local/bin/capstan", "capstan", "capstan infer"},
		{"/work/capstan/bin/linux-arm64/capstan", "bin/linux-arm64/capstan", "bin/linux-arm64/capstan infer"},
		{"/home/pi/my tools/capstan", "/home/pi/my tools/capstan", "'/home/pi/my tools/capstan' infer"},
		{"", "capstan", "capstan infer"},
	} {
		if got := invocation("infer", tc.exe, tc.argv0, "", "capstan", everything); got != tc.want {
			t.Errorf("invocation(infer, %q, %q, parent capstan) = %q, want %q", tc.exe, tc.argv0, got, tc.want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"runs/default/checkpoint.safetensors", "runs/default/checkpoint.safetensors"},
		{"-lr=0.001", "-lr=0.001"},
		{"", "''"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{"$HOME", "'$HOME'"},
	} {
		if got := ShellQuote(tc.in); got != tc.want {
			t.Errorf("ShellQuote(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
