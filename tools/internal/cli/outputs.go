package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/train/data"
)

// Path is a file a command reads or writes and the flag that names it.
type Path struct {
	// Flag is the flag with its dash ("-checkpoint"), or the positional
	// argument's name ("SRC").
	Flag string
	// Value is the file's path as given; "" (the flag not given, or a
	// file not read) is skipped.
	Value string
	// Note says how the command came to the file when the flag does not
	// name it itself: a default, or a file it finds beside another
	// ("default: beside -checkpoint"); "" for the file the flag names.
	Note string
}

// String is the flag, the path (shell-quoted when needed) and the note
// in parentheses: "-telemetry runs/a/telemetry.ndjson (default: beside
// -checkpoint)".
func (p Path) String() string {
	s := p.Flag + " " + ShellQuote(p.Value)
	if p.Note != "" {
		s += " (" + p.Note + ")"
	}
	return s
}

// ModelInput is the input a -model flag names: its value when that is
// a config file, and an empty Path for a preset name (no file) or no
// -model.
func ModelInput(value string) Path {
	if _, ok := capsnet.Presets()[value]; ok || value == "" {
		return Path{}
	}
	return Path{Flag: "-model", Value: value}
}

// DataInputs are the files of evaluation or training set name (a
// data.TestSets name; a generated set reads its base's) that a command
// reads, in the directory data.Set.Find finds from dir (a -data-dir; ""
// for none): each of its files present there, plain or gzip-compressed.
// None for a set in the binary, or when its files are not found (loading
// the set reports that).
func DataInputs(name, dir string) []Path {
	s, _ := data.LookupTest(name)
	if s != nil && s.Generated() {
		s = data.Lookup(s.Base)
	}
	if s == nil {
		return nil
	}
	d, err := s.Find(dir)
	if err != nil || d == "" {
		return nil
	}
	var in []Path
	for _, n := range s.FileNames() {
		for _, p := range []string{filepath.Join(d, n), filepath.Join(d, n+".gz")} {
			if _, err := os.Stat(p); err == nil {
				in = append(in, Path{Flag: "-data", Value: p, Note: "a file of " + s.Name})
			}
		}
	}
	return in
}

// CheckOutputs refuses, before a command does any work, an output that
// would replace one of its inputs or another output: each output is
// compared with every input (the files the flags name and those the
// command reads by itself, such as a run's telemetry beside its
// checkpoint) and with every other output by SameFile. The error is a
// UsageError (exit status 2), one line naming both flags and paths.
// Paths with an empty Value are skipped.
func CheckOutputs(outputs, inputs []Path) error {
	for i, o := range outputs {
		if o.Value == "" {
			continue
		}
		for _, in := range inputs {
			if in.Value != "" && SameFile(o.Value, in.Value) {
				return Usagef("%s is the input %s: the output would replace it; choose another %s", o, in, o.Flag)
			}
		}
		for _, prev := range outputs[:i] {
			if prev.Value != "" && SameFile(o.Value, prev.Value) {
				return Usagef("%s and %s are the same file: one output would replace the other; give each its own", prev, o)
			}
		}
	}
	return nil
}

// SameFile reports whether paths a and b name the same file: one
// existing file (os.SameFile, so also through hard and symbolic links),
// or, when either is missing, the same absolute clean path once the
// symbolic links of its existing directories are resolved
// ("run/./ck.safetensors" is "run/ck.safetensors").
func SameFile(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(sa, sb)
	}
	return resolve(a) == resolve(b)
}

// resolve is p made absolute and clean, with the symbolic links of its
// deepest existing directory resolved (p itself is not resolved: an
// output replaces a link rather than writing through it).
func resolve(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	dir, rest := filepath.Dir(abs), filepath.Base(abs)
	for {
		d, err := filepath.EvalSymlinks(dir)
		if err == nil {
			return filepath.Join(d, rest)
		}
		parent := filepath.Dir(dir)
		if !errors.Is(err, fs.ErrNotExist) || parent == dir {
			return abs
		}
		dir, rest = parent, filepath.Join(filepath.Base(dir), rest)
	}
}

// Wrote prints on w the one line by which every command confirms a file
// it wrote: "wrote PATH (SIZE)", or "wrote PATH (SIZE; NOTE)" with a note
// (what the file holds, how it was checked). PATH is shell-quoted when
// needed, SIZE the file's size now (Size). A command prints it once per
// file, on stdout, or on stderr when stdout carries what it prints for a
// program to read (train -profile's Markdown).
func Wrote(w io.Writer, path, note string) {
	fmt.Fprintln(w, WroteLine(path, note))
}

// WroteLine is the line Wrote prints, without its newline.
func WroteLine(path, note string) string {
	size := "size unknown"
	if fi, err := os.Stat(path); err == nil {
		size = Size(fi.Size())
	}
	if note != "" {
		size += "; " + note
	}
	return "wrote " + ShellQuote(path) + " (" + size + ")"
}

// Size formats n bytes for a person: "812 B", "3.4 KiB", "1.23 MiB",
// "2.01 GiB" (binary units; three significant digits from KiB up).
func Size(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	x, unit := float64(n)/1024, "KiB"
	for _, u := range []string{"MiB", "GiB", "TiB"} {
		if x < 1024 {
			break
		}
		x, unit = x/1024, u
	}
	switch {
	case x < 10:
		return fmt.Sprintf("%.2f %s", x, unit)
	case x < 100:
		return fmt.Sprintf("%.1f %s", x, unit)
	}
	return fmt.Sprintf("%.0f %s", x, unit)
}
