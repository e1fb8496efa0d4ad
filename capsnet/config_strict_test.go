package capsnet

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet/safetensors"
)

// TestConfigStrict: a config is exactly one JSON object whose keys are
// the fields' exact names, each once, and whose input is exactly three
// numbers; anything else is a one-line error naming the source and the
// field, from a file, from bytes and from a checkpoint's metadata.
func TestConfigStrict(t *testing.T) {
	good := Presets()["tiny-sabour"].JSON()
	withInput := func(in string) string { return strings.Replace(good, `"input":[1,28,28]`, `"input":`+in, 1) }
	if withInput("X") == good {
		t.Fatal("tiny-sabour's JSON has no input [1,28,28]")
	}
	for _, tc := range []struct{ json, want string }{
		{good + `{"name":"other"}`, "after the config object"},
		{good + " x", "after the config object"},
		{good + "]", "after the config object"},
		{"null", "not a JSON object"},
		{"[" + good + "]", "not a JSON object"},
		{"", "not a JSON object"},
		{withInput("[1,28,28,5]"), "input: 4 numbers, want 3"},
		{withInput("[1,28]"), "input: 2 numbers, want 3"},
		{withInput("[]"), "input: 0 numbers, want 3"},
		{withInput("null"), "input: null"},
		{withInput(`[1,28,"28"]`), "input"},
		{withInput("[1,28,28.5]"), "input"},
		{withInput("{}"), "input"},
		{strings.Replace(good, `"classes"`, `"CLASSES"`, 1), `"CLASSES"`},
		{strings.Replace(good, `"stride"`, `"Stride"`, 1), `"Stride"`},
		{strings.Replace(good, `"name":"tiny-sabour"`, `"name":"a","name":"b"`, 1), `"name" twice`},
		{strings.Replace(good, `"m_plus"`, `"m_plus":1,"m_plus"`, 1), `loss: field "m_plus" twice`},
		{strings.Replace(good, `"classes":10`, `"classes":10,"colour":1`, 1), `unknown field "colour"`},
	} {
		_, err := ParseConfig([]byte(tc.json), "test.json")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "test.json") || strings.Contains(err.Error(), "\n") {
			t.Errorf("config %.80s…: error %v, want one line naming test.json and containing %q", tc.json, err, tc.want)
		}
	}
	for _, ok := range []string{good, " \n" + good + "\n\t ", withInput("[ 1 , 28 , 28 ]")} {
		if _, err := ParseConfig([]byte(ok), "ok.json"); err != nil {
			t.Errorf("config %.60q: %v", ok, err)
		}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "four.json")
	os.WriteFile(path, []byte(withInput("[1,28,28,5]")), 0o644)
	if _, err := LoadConfig(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "input") {
		t.Errorf("LoadConfig of a four-number input: %v", err)
	}
	ck := filepath.Join(dir, "trailing.safetensors")
	ts := map[string]safetensors.Tensor{"x": {Shape: []int{1}, Data: []float32{0}}}
	if err := safetensors.Write(ck, ts, map[string]string{"config": good + "{}"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadCheckpoint(ck); err == nil || !strings.Contains(err.Error(), ck) || !strings.Contains(err.Error(), "after the config object") {
		t.Errorf("checkpoint with trailing config metadata: %v", err)
	}
}

// TestCommittedConfigsLoad: the committed configs (bench/repro/configs),
// the committed checkpoints' config metadata and every preset's JSON
// still parse.
func TestCommittedConfigsLoad(t *testing.T) {
	files, _ := filepath.Glob("../bench/repro/configs/*.json")
	if len(files) == 0 {
		t.Fatal("no committed configs found")
	}
	for _, f := range files {
		if _, err := LoadConfig(f); err != nil {
			t.Error(err)
		}
	}
	cks, _ := filepath.Glob("../bench/repro/*/checkpoint.safetensors")
	more, _ := filepath.Glob("../testdata/*/*.safetensors")
	for _, ck := range append(cks, more...) {
		if st, err := os.Stat(ck); err != nil || st.Size() < 1024 {
			continue // absent, or a Git LFS pointer
		}
		if _, err := ReadCheckpoint(ck); err != nil && !strings.Contains(err.Error(), "int8") {
			t.Error(err)
		}
	}
	for name, c := range Presets() {
		if _, err := ParseConfig([]byte(c.JSON()), name); err != nil {
			t.Error(err)
		}
	}
}

// TestConfigDeepNesting: a config of 1 MB of nested arrays is refused
// quickly, its memory a few times the file (the decoder's buffer) and not
// growing with the nesting.
func TestConfigDeepNesting(t *testing.T) {
	for _, raw := range []string{`{"decoder":` + strings.Repeat("[", MaxConfigBytes-20), strings.Repeat(`{"loss":`, 100)} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := ParseConfig([]byte(raw), "deep.json")
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "nested more than") || !strings.Contains(err.Error(), "deep.json") {
			t.Errorf("error %v", err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 4*uint64(len(raw))+1<<16 {
			t.Errorf("%d bytes of nesting: allocated %d bytes", len(raw), got)
		}
	}
}
