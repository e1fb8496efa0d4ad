package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/train/data"
)

// TestCheckOutputs: an output naming an input, by the same path, through
// dir/./name, a symbolic link, a hard link or a linked directory, or
// naming another output, is a one-line usage error naming both flags;
// other files pass.
func TestCheckOutputs(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "ck.safetensors")
	if err := os.WriteFile(in, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	other := t.TempDir()
	link := filepath.Join(other, "link")
	hard := filepath.Join(other, "hard")
	dirLink := filepath.Join(other, "dirlink")
	for _, err := range []error{os.Symlink(in, link), os.Link(in, hard), os.Symlink(dir, dirLink)} {
		if err != nil {
			t.Skipf("links: %v", err)
		}
	}
	inputs := []Path{{Flag: "-checkpoint", Value: in}, {Flag: "-telemetry", Value: filepath.Join(dir, "missing.ndjson"), Note: "default: beside -checkpoint"}, {}}
	for _, out := range []string{in, dir + "/./ck.safetensors", link, hard, filepath.Join(dirLink, "ck.safetensors"), filepath.Join(dir, "sub", "..", "ck.safetensors")} {
		err := CheckOutputs([]Path{{Flag: "-json", Value: out}}, inputs)
		var ue UsageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), "-json "+out) || !strings.Contains(err.Error(), "-checkpoint "+in) || strings.Contains(err.Error(), "\n") {
			t.Errorf("-json %s: %v", out, err)
		}
	}
	// A missing input, named through a linked directory.
	err := CheckOutputs([]Path{{Flag: "-html", Value: filepath.Join(dirLink, "missing.ndjson")}}, inputs)
	if err == nil || !strings.Contains(err.Error(), "-telemetry") || !strings.Contains(err.Error(), "(default: beside -checkpoint)") {
		t.Errorf("missing input through a linked directory: %v", err)
	}
	// Two outputs naming one file, neither existing.
	a, b := filepath.Join(other, "r.json"), filepath.Join(other, "new", "..", "r.json")
	err = CheckOutputs([]Path{{Flag: "-json", Value: a}, {}, {Flag: "-html", Value: b}}, inputs)
	if err == nil || !strings.Contains(err.Error(), "-json "+a+" and -html "+b) {
		t.Errorf("two outputs: %v", err)
	}
	if err := CheckOutputs([]Path{{Flag: "-json", Value: a}, {Flag: "-html", Value: filepath.Join(other, "r.html")}, {Flag: "-recon"}}, inputs); err != nil {
		t.Errorf("distinct outputs: %v", err)
	}
}

// TestModelInput: a preset names no file, a config file does.
func TestModelInput(t *testing.T) {
	if p := ModelInput("tiny-deep"); p.Value != "" {
		t.Errorf("preset: %+v", p)
	}
	if p := ModelInput("m.json"); p.Flag != "-model" || p.Value != "m.json" {
		t.Errorf("config file: %+v", p)
	}
}

// TestDataInputs: the files of a data set read from a -data-dir, of its
// base for a generated set; none for the embedded set or a missing one.
func TestDataInputs(t *testing.T) {
	t.Setenv(data.DataDirEnv, t.TempDir())
	dir := t.TempDir()
	s := data.Lookup("mnist")
	for i, n := range s.FileNames() {
		if i == 0 {
			n += ".gz"
		}
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"mnist", "mnist-val", "affnist"} {
		in := DataInputs(name, dir)
		if len(in) != len(s.FileNames()) || in[0].Value != filepath.Join(dir, s.FileNames()[0]+".gz") || in[1].Flag != "-data" {
			t.Errorf("%s: %+v", name, in)
		}
	}
	if in := DataInputs("embedded", dir); in != nil {
		t.Errorf("embedded: %+v", in)
	}
	if in := DataInputs("cifar10", dir); in != nil {
		t.Errorf("cifar10, not there: %+v", in)
	}
}

// TestWroteLine: the line of a file written names it (shell-quoted when
// needed) with its size and the note; Size prints binary units.
func TestWroteLine(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a b.json")
	if err := os.WriteFile(p, make([]byte, 1536), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := WroteLine(p, "JSON"), "wrote '"+p+"' (1.50 KiB; JSON)"; got != want {
		t.Errorf("WroteLine = %q, want %q", got, want)
	}
	q := filepath.Join(dir, "b")
	os.WriteFile(q, []byte("hi"), 0o644)
	var b strings.Builder
	Wrote(&b, q, "")
	if got, want := b.String(), "wrote "+q+" (2 B)\n"; got != want {
		t.Errorf("Wrote printed %q, want %q", got, want)
	}
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.00 KiB", 50 << 10: "50.0 KiB", 300 << 10: "300 KiB", 5 << 20: "5.00 MiB", 3 << 30: "3.00 GiB"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
