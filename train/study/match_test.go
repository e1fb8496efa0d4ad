package study

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/train/telemetry"
)

// headerOf returns the telemetry header of checkpoint path's run (model
// sizes of its parameters), with run id run.
func headerOf(t *testing.T, path, run string) telemetry.Header {
	t.Helper()
	ck, err := capsnet.ReadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ck.Params(nil)
	if err != nil {
		t.Fatal(err)
	}
	h := telemetry.Header{Format: telemetry.Format, Model: p.Config.Name, Batch: 8, Run: run,
		Layers: []telemetry.Layer{{Name: "primary", N: p.Layout.Primary.N, D: p.Layout.Primary.D}}}
	for _, c := range p.Layout.Caps {
		h.Layers = append(h.Layers, telemetry.Layer{Name: c.Name, N: c.Out, D: c.Dim})
	}
	return h
}

// writeTelemetry writes a telemetry file of h with n records of ones
// into a fresh directory and returns its path.
func writeTelemetry(t *testing.T, h telemetry.Header, n int) string {
	t.Helper()
	dir := t.TempDir()
	w, err := telemetry.Create(dir, h, telemetry.Gzip) // the form runs write by default
	if err != nil {
		t.Fatal(err)
	}
	for k := range n {
		r := telemetry.Record{Epoch: 1, Step: k + 1}
		for l, L := range h.Layers {
			r.MaxNorm = append(r.MaxNorm, ones(L.N))
			if l > 0 {
				r.GradW = append(r.GradW, ones(L.N*h.Layers[l-1].N))
			}
		}
		if err := w.Write(&r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, telemetry.GzipName)
}

func ones(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

// TestReportOtherTelemetry: telemetry of another model, other layer sizes
// or another run id is left out of the report with one line naming the
// file and what differs, and a note in the report; the rest of the
// report is written. The checkpoint's own telemetry is drawn.
func TestReportOtherTelemetry(t *testing.T) {
	dir := t.TempDir()
	ck := filepath.Join(dir, "checkpoint.safetensors")
	p, err := capsnet.NewParams(capsnet.Presets()["tiny-deep"])
	if err != nil {
		t.Fatal(err)
	}
	p.Init(1)
	if err := p.SaveCheckpoint(ck, map[string]string{"run": "run-a"}); err != nil {
		t.Fatal(err)
	}
	r, err := Run(options(ck))
	if err != nil {
		t.Fatal(err)
	}
	own := headerOf(t, ck, "run-a")
	otherModel, otherRun, otherSize := own, own, own
	otherModel.Model = "deep"
	otherRun.Run = "run-b"
	otherSize.Layers = append([]telemetry.Layer(nil), own.Layers...)
	otherSize.Layers[1].N++
	noRun := own
	noRun.Run = ""
	for _, c := range []struct {
		name string
		h    telemetry.Header
		want string // in the warning; "" when the telemetry is drawn
	}{
		{"own", own, ""},
		{"no run id", noRun, ""},
		{"other model", otherModel, `model "deep", the checkpoint's "tiny-deep"`},
		{"other run", otherRun, `run "run-b", the checkpoint's "run-a"`},
		{"other sizes", otherSize, "layer 1 (" + own.Layers[1].Name + ")"},
	} {
		tele := writeTelemetry(t, c.h, 3)
		html := filepath.Join(t.TempDir(), "r.html")
		var out bytes.Buffer
		if err := r.WriteReport(&out, ReportOptions{Path: html, Telemetry: tele}); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		raw, err := os.ReadFile(html)
		if err != nil {
			t.Fatal(err)
		}
		drawn := !strings.Contains(string(raw), "its figures are left out") && !strings.Contains(string(raw), "No telemetry given")
		if c.want == "" {
			if !drawn || strings.Contains(out.String(), "warning") {
				t.Errorf("%s: the checkpoint's telemetry not drawn: %q", c.name, out.String())
			}
			continue
		}
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if drawn || len(lines) != 1 || !strings.Contains(lines[0], tele) || !strings.Contains(lines[0], c.want) {
			t.Errorf("%s: drawn %v, printed %q: want one line naming %s and %q", c.name, drawn, out.String(), tele, c.want)
		}
		if !strings.Contains(string(raw), "Parse-tree report: tiny-deep") || !strings.Contains(string(raw), "No metrics given") {
			t.Errorf("%s: the rest of the report is missing", c.name)
		}
	}
}

// readHeader reads the header line of a (compressed) telemetry file,
// without its records.
func readHeader(t *testing.T, path string) telemetry.Header {
	t.Helper()
	rc, err := telemetry.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	line, err := bufio.NewReader(rc).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var h telemetry.Header
	if err := json.Unmarshal(line, &h); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestCheckTelemetryRepro: the committed runs of bench/repro. deep-s1
// and deep-s2 predate run ids: their checkpoints and telemetry have
// none, and the model and sizes are the same, so deep-s2's telemetry
// beside deep-s1's checkpoint is not detectable. deep-s3 has a run id in
// both: another id is detected.
func TestCheckTelemetryRepro(t *testing.T) {
	const repro = "../../bench/repro/"
	if _, err := os.Stat(repro + "deep-s3/checkpoint.safetensors"); err != nil {
		t.Skip("no bench/repro run directories")
	}
	params := func(run string) (*capsnet.Params, string) {
		ck, err := capsnet.ReadCheckpoint(repro + run + "/checkpoint.safetensors")
		if err != nil {
			t.Fatal(err)
		}
		p, err := ck.Params(nil)
		if err != nil {
			t.Fatal(err)
		}
		return p, ck.Meta["run"]
	}
	p1, run1 := params("deep-s1")
	p3, run3 := params("deep-s3")
	if run1 != "" || run3 == "" {
		t.Fatalf("run ids: deep-s1 %q, deep-s3 %q; want none and one", run1, run3)
	}
	h2, h3 := readHeader(t, repro+"deep-s2/"+telemetry.GzipName), readHeader(t, repro+"deep-s3/"+telemetry.GzipName)
	if err := CheckTelemetry(&h2, p1, run1); err != nil {
		t.Errorf("deep-s2's telemetry beside deep-s1's checkpoint (no run ids): %v, want undetectable", err)
	}
	if err := CheckTelemetry(&h3, p3, run3); err != nil {
		t.Errorf("deep-s3's own telemetry: %v", err)
	}
	if err := CheckTelemetry(&h3, p1, run1); err != nil {
		t.Errorf("deep-s3's telemetry beside deep-s1's checkpoint (no run id in the checkpoint): %v, want undetectable", err)
	}
	if err := CheckTelemetry(&h2, p3, run3); err != nil {
		t.Errorf("deep-s2's telemetry (no run id) beside deep-s3's checkpoint: %v, want undetectable", err)
	}
	other := h3
	other.Run = "0123456789abcdef"
	if err := CheckTelemetry(&other, p3, run3); err == nil || !strings.Contains(err.Error(), run3) {
		t.Errorf("another run id beside deep-s3's checkpoint: %v", err)
	}
	tiny := h3
	tiny.Model = "tiny-deep"
	tiny.Layers = tiny.Layers[:3]
	if err := CheckTelemetry(&tiny, p3, run3); err == nil || !strings.Contains(err.Error(), "model") || !strings.Contains(err.Error(), "3 capsule layers, the checkpoint's 5") {
		t.Errorf("a tiny-deep header beside deep-s3's checkpoint: %v", err)
	}
}
