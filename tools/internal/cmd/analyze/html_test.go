package analyze

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/tools/internal/clitest"
	"github.com/capstan-ml/capstan/train"
	"github.com/capstan-ml/capstan/train/telemetry"
)

// writeRunFiles writes a metrics.ndjson of two epochs and a telemetry file
// of three steps for model preset next to checkpoint ck.
func writeRunFiles(t *testing.T, ck, preset string) {
	t.Helper()
	dir := filepath.Dir(ck)
	var m bytes.Buffer
	for e := 1; e <= 2; e++ {
		line, _ := json.Marshal(train.EpochMetrics{Epoch: e, Loss: 1 / float64(e), MarginLoss: 0.5 / float64(e), ReconLoss: 1, TrainAcc: 0.5, ValAcc: 0.4 + 0.1*float64(e)})
		m.Write(append(line, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, train.MetricsName), m.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := capsnet.NewParams(capsnet.Presets()[preset])
	if err != nil {
		t.Fatal(err)
	}
	net, err := capsnet.NewInferenceNet(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	h := telemetry.Header{Format: telemetry.Format, Model: preset, Batch: 4}
	for _, l := range net.Layers() {
		h.Layers = append(h.Layers, telemetry.Layer{Name: l.Name, N: l.N, D: l.D})
	}
	var tb bytes.Buffer
	line, _ := json.Marshal(h)
	tb.Write(append(line, '\n'))
	for s := 1; s <= 3; s++ {
		r := telemetry.Record{Epoch: 1, Step: s}
		for l, L := range h.Layers {
			r.MaxNorm = append(r.MaxNorm, make([]float32, L.N))
			if l > 0 {
				g := make([]float32, L.N*h.Layers[l-1].N)
				for k := range g {
					g[k] = float32(k+s) * 1e-4
				}
				r.GradW = append(r.GradW, g)
				w := make([]float32, len(g))
				for k := range w {
					w[k] = float32(3-s) / 2 // 1, 0.5, 0: the votes matrices decay to 0
				}
				r.WNorm = append(r.WNorm, w)
			}
		}
		line, _ := json.Marshal(r)
		tb.Write(append(line, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, telemetry.FileName), tb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHTML writes the report of a tiny model with its run's metrics and
// telemetry found next to the checkpoint: every part present.
func TestHTML(t *testing.T) {
	ck := clitest.Checkpoint(t, "tiny-deep")
	writeRunFiles(t, ck, "tiny-deep")
	out := filepath.Join(t.TempDir(), "report.html")
	var stdout bytes.Buffer
	if err := run([]string{"-checkpoint", ck, "-k", "20", "-batch", "8", "-invariance", "rotation", "-html", out, "-samples", "2"}, &stdout); err != nil {
		t.Fatal(err)
	}
	// The telemetry's norms are all 0: every capsule dark from step 1, in
	// the terminal and in the report.
	for _, want := range []string{"Dark capsules in ", "below 0.1 from a step to the last, step 3 of epoch 1, for ≥ 1 logged steps", "capsule@since-step: 0@1 1@1",
		"Deaths and revivals (below 0.1 for ≥ 1 logged steps", "primary    capsule 0: dead since step 1 (epoch 1), 0 revival(s)",
		"‖W[j,i]‖ out: mean 1 (first step) → 1 (death) → 0 (end), min 0 at step 3, largest at the end 0"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, want := range []string{"<h1>Parse-tree report: tiny-deep</h1>", "<td>primary → caps.0</td>", "<b>image 0</b>", "<b>image 1</b>", "<b>rotation 30°</b>", "<b>shear 30°</b>",
		"coupling std, caps.0 → caps.1", "viewpoint invariance under rotation", "3 training step(s) of tiny-deep", "accuracy per epoch", "</html>", "Capsules dark at the end of training", "0: step 1 (epoch 1, peak 0)",
		"Deaths and revivals", "<th>‖W‖ out</th>", "mean 1 (first step) → 1 (death) → 0 (end), min 0 at step 3, largest at the end 0"} {
		if !strings.Contains(doc, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(doc, "<b>image 2</b>") {
		t.Error("more parse trees than -samples 2")
	}
	// No temporary file left beside it.
	if ents, _ := os.ReadDir(filepath.Dir(out)); len(ents) != 1 {
		t.Errorf("%d files beside the report", len(ents))
	}
	// The telemetry committed compressed (gzip -k; the plain file gone)
	// is found and read as the plain one.
	tpath := filepath.Join(filepath.Dir(ck), telemetry.FileName)
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write(must(os.ReadFile(tpath)))
	zw.Close()
	if err := os.WriteFile(tpath+".gz", zb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(tpath); err != nil {
		t.Fatal(err)
	}
	var zout bytes.Buffer
	if err := run([]string{"-checkpoint", ck, "-k", "5", "-html", out}, &zout); err != nil {
		t.Fatal(err)
	}
	if zdoc := string(must(os.ReadFile(out))); !strings.Contains(zdoc, "3 training step(s) of tiny-deep") || !strings.Contains(zout.String(), "capsule@since-step: 0@1 1@1") {
		t.Errorf("the report or the output lacks the telemetry of %s", telemetry.GzipName)
	}
	// A named telemetry file that does not exist is an error naming it.
	err = run([]string{"-checkpoint", ck, "-k", "5", "-html", out, "-telemetry", filepath.Join(t.TempDir(), "none.ndjson")}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "-telemetry") || !strings.Contains(err.Error(), "none.ndjson") {
		t.Errorf("missing telemetry: %v", err)
	}
	// -samples out of range is a usage error.
	var ue cli.UsageError
	if err := run([]string{"-checkpoint", ck, "-html", out, "-samples", "-1"}, &bytes.Buffer{}); !errors.As(err, &ue) {
		t.Errorf("-samples -1: %v", err)
	}
}

// must returns v, panicking on err (test set-up that cannot fail).
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
