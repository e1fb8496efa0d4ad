package study

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/analysis"
	"github.com/capstan-ml/capstan/train/data"
)

// checkpoint writes a checkpoint of preset initialised with seed and
// returns its path.
func checkpoint(t *testing.T, preset string, seed uint64) string {
	t.Helper()
	p, err := capsnet.NewParams(capsnet.Presets()[preset])
	if err != nil {
		t.Fatal(err)
	}
	p.Init(seed)
	path := filepath.Join(t.TempDir(), preset+".safetensors")
	if err := p.SaveCheckpoint(path, nil); err != nil {
		t.Fatal(err)
	}
	return path
}

func options(cks ...string) Options {
	return Options{Checkpoints: cks, Data: "embedded", Seed: 1, K: 12, Batch: 5, Thresholds: analysis.DefaultThresholds()}
}

// roundTrip decodes raw JSON into a Result, unknown fields refused, and
// encodes it again.
func roundTrip(t *testing.T, raw []byte) []byte {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var r Result
	if err := dec.Decode(&r); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := r.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestJSONSchema: the JSON that tools/analyze -json wrote for the
// reproduction (bench/repro/tables-affnist*.json, before this package
// existed; its keys converted to schema capstan-analyze/1 since, the
// numbers as written) decodes into a Result and encodes to the same
// bytes.
func TestJSONSchema(t *testing.T) {
	files, _ := filepath.Glob("../../bench/repro/tables-affnist*.json")
	if len(files) == 0 {
		t.Skip("no bench/repro/tables-affnist*.json")
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := roundTrip(t, raw); !bytes.Equal(got, raw) {
			t.Errorf("%s: the JSON of its Result differs (%d bytes, want %d)", f, len(got), len(raw))
		}
	}
}

// TestRun analyses two seeds of tiny-deep on 12 embedded test digits,
// rotation invariance included: per checkpoint and overall figures, the
// text, and JSON that decodes to the same Result.
func TestRun(t *testing.T) {
	a, b := checkpoint(t, "tiny-deep", 1), checkpoint(t, "tiny-deep", 2)
	o := options(a, b)
	o.Families = []data.Family{data.FamilyRotation}
	var warn bytes.Buffer
	o.Warnings = &warn
	r, err := Run(o)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(warn.String(), "does not record the data set") != 2 {
		t.Errorf("warnings: %q", warn.String())
	}
	if r.Data != "mnist-embedded-test" || len(r.Checkpoints) != 2 || r.Tables.Models != 2 || r.Tables.K != 12 {
		t.Fatalf("result: data %s, %d checkpoints, tables of %d models and %d images", r.Data, len(r.Checkpoints), r.Tables.Models, r.Tables.K)
	}
	for i, c := range r.Checkpoints {
		if c.Checkpoint != o.Checkpoints[i] || c.Model != "tiny-deep" || c.Images != 12 || c.Accuracy != float64(c.Correct)/12 ||
			len(c.Capsules) != 3 || len(c.Couplings) != 2 || len(c.Couplings[1].Mean) != c.Couplings[1].NIn*c.Couplings[1].NOut ||
			len(c.Invariance) != 4 || c.Invariance[0].Family != "rotation" || c.Tables.Models != 1 {
			t.Errorf("checkpoint %d: %+v", i, c)
		}
	}
	if m := (r.Checkpoints[0].Accuracy + r.Checkpoints[1].Accuracy) / 2; r.Accuracy.Mean != m {
		t.Errorf("accuracy mean %v, want %v", r.Accuracy.Mean, m)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tiny-deep on mnist-embedded-test (2 checkpoint(s))\nAccuracy on the 12 analysed image(s): ", "| routing layer |", "Viewpoint invariance", a + "\nfamily", "rotation            45"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	var js bytes.Buffer
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if got := roundTrip(t, js.Bytes()); !bytes.Equal(got, js.Bytes()) {
		t.Error("the JSON of a Result does not decode to the same Result")
	}
}

// TestRunErrors: bad options are a *FieldError naming the field.
func TestRunErrors(t *testing.T) {
	a := checkpoint(t, "tiny-deep", 1)
	missing := filepath.Join(t.TempDir(), "none.safetensors")
	cases := []struct {
		field, text string
		spoil       func(*Options)
	}{
		{"Checkpoints", "none given", func(o *Options) { o.Checkpoints = nil }},
		{"Checkpoints", "none.safetensors", func(o *Options) { o.Checkpoints = []string{missing} }},
		{"Checkpoints", "one configuration", func(o *Options) { o.Checkpoints = append(o.Checkpoints, checkpoint(t, "tiny-deep-uniform", 1)) }},
		{"Batch", "0", func(o *Options) { o.Batch = 0 }},
		{"K", "-1", func(o *Options) { o.K = -1 }},
		{"Data", "nope", func(o *Options) { o.Data = "nope" }},
		{"ReconPath", "no-dir", func(o *Options) { o.ReconPath = filepath.Join(t.TempDir(), "no-dir", "r.png") }},
	}
	for _, c := range cases {
		o := options(a)
		c.spoil(&o)
		_, err := Run(o)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: %v", c.field, err)
		}
	}
}

// TestWriteReport writes the HTML report of one checkpoint without run
// files; a telemetry file that does not exist and a bad sample count are
// field errors, and nothing is written then.
func TestWriteReport(t *testing.T) {
	r, err := Run(options(checkpoint(t, "tiny-deep", 1)))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "r.html")
	if err := r.WriteReport(&bytes.Buffer{}, ReportOptions{Path: path, Samples: 1}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<h1>Parse-tree report: tiny-deep</h1>", "<b>image 0</b>", "No telemetry given", "No metrics given", "ranked by the dimension&#39;s effect", "</html>\n"} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("report lacks %q", want)
		}
	}
	bad := filepath.Join(dir, "bad.html")
	for field, o := range map[string]ReportOptions{
		"Telemetry": {Path: bad, Telemetry: filepath.Join(dir, "none.ndjson")},
		"Samples":   {Path: bad, Samples: -1},
		"DarkNorm":  {Path: bad, DarkNorm: -0.5},
	} {
		err := r.WriteReport(&bytes.Buffer{}, o)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%s: %v", field, err)
		}
	}
	if _, err := os.Stat(bad); err == nil {
		t.Error("a report written despite an error")
	}
}
