package sweep

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet/analysis"
	"github.com/capstan-ml/capstan/tools/internal/clitest"
	"github.com/capstan-ml/capstan/train/sweep"
)

// writeDepthManifest writes a manifest of the RBA models deep-n16-d8-LL
// for each depth, with telemetry (a sweep with variants), and a done
// result with an analysis of each (16 primary capsules, 8 per hidden
// layer, 10 outputs; one dead capsule in each hidden layer), and returns
// its path.
func writeDepthManifest(t *testing.T, depths ...int) string {
	t.Helper()
	dir := t.TempDir()
	var tasks []sweep.Task
	for i, L := range depths {
		model := fmt.Sprintf("deep-n16-d8-L%d", L)
		tasks = append(tasks, sweep.Task{Index: i, Model: model, Arch: model, Routing: "rba", Seed: 1, Data: "mnist", Eval: "affnist", K: 50,
			Target: 0.99, Epochs: 1, Batch: 8, Threads: 1, Telemetry: true,
			Dir: fmt.Sprintf("runs/%05d", i), Result: fmt.Sprintf("results/%05d.json", i)})
	}
	m := filepath.Join(dir, sweep.ManifestName)
	if err := sweep.WriteManifest(m, tasks); err != nil {
		t.Fatal(err)
	}
	for i, task := range tasks {
		rep := &analysis.Report{Thresholds: analysis.DefaultThresholds()}
		ns := []int{16}
		for l := 1; l <= depths[i]; l++ {
			ns = append(ns, map[bool]int{false: 8, true: 10}[l == depths[i]])
		}
		for l, n := range ns {
			cds := 0
			if l > 0 && l < len(ns)-1 {
				cds = 1
			}
			rep.Layers = append(rep.Layers, analysis.LayerReport{Name: fmt.Sprintf("caps%d", l), N: n, D: 8, K: 50, CDS: cds})
		}
		for l := 0; l+1 < len(ns); l++ {
			in, out := rep.Layers[l], rep.Layers[l+1]
			rep.Routing = append(rep.Routing, analysis.RoutingReport{From: in.Name, To: out.Name, K: 50, NIn: in.N, NOut: out.N,
				AliveIn: in.N - in.CDS, AliveOut: out.N - out.CDS})
		}
		r := sweep.Result{Task: task, Status: "done", Params: 1000, Epochs: 1, ValAcc: 0.99, TestAcc: 0.99, EvalAcc: 0.9 - 0.1*float64(i), Analysis: rep}
		if err := sweep.WriteResult(sweep.Path(dir, task.Result), r); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// TestCollectDepthPNG: collect -depth-png writes the depth-trend figure
// (alone: no Markdown on stdout; with -markdown beside the Depth trend
// section), fails naming the flag and the file on a sweep of one depth,
// and is refused aimed at the manifest.
func TestCollectDepthPNG(t *testing.T) {
	m := writeDepthManifest(t, 1, 2, 3)
	dir := filepath.Dir(m)
	out := filepath.Join(dir, "depth.png")
	r := clitest.Run(t, nil, "collect", "-manifest", m, "-depth-png", out)
	if r.Code != 0 || strings.Contains(r.Stdout, "# Sweep results") {
		t.Fatalf("collect -depth-png: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	clitest.Wrote(t, "collect -depth-png", r.Stdout, map[string]string{out: "depth-trend figure, PNG"})
	if w, h := clitest.PNGSize(t, out); w != 1728 || h != 720 {
		t.Errorf("%s: %d×%d, want 1728×720", out, w, h)
	}

	md, out2 := filepath.Join(dir, "t.md"), filepath.Join(dir, "depth2.png")
	r = clitest.Run(t, nil, "collect", "-manifest", m, "-markdown", md, "-depth-png", out2)
	if r.Code != 0 {
		t.Fatalf("collect -markdown -depth-png: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	clitest.Wrote(t, "collect -markdown -depth-png", r.Stdout, map[string]string{md: "Markdown tables", out2: "depth-trend figure, PNG"})
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "\n## Depth trend\n") || !strings.Contains(string(b), "| 3 | deep-n16-d8-L3 | RBA | 1 | 99.00 | 70.00 | 0, 1, 1, 0 | 16→7, 7→7, 7→10 | 2 |") {
		t.Errorf("Markdown without the depth trend:\n%s", b)
	}

	one := writeDepthManifest(t, 2)
	bad := filepath.Join(filepath.Dir(one), "depth.png")
	r = clitest.Run(t, nil, "collect", "-manifest", one, "-depth-png", bad)
	if r.Code != 1 || !strings.Contains(r.Stderr, "-depth-png: "+bad+": depth figure: 1 depth(s)") || strings.Count(strings.TrimSuffix(r.Stderr, "\n"), "\n") != 0 {
		t.Errorf("collect -depth-png of one depth: exit %d, stderr %q", r.Code, r.Stderr)
	}
	if _, err := os.Stat(bad); err == nil {
		t.Errorf("%s written for one depth", bad)
	}

	files := clitest.Snapshot(t, m)
	r = clitest.Run(t, nil, "collect", "-manifest", m, "-depth-png", m)
	clitest.Refused(t, "-depth-png at the manifest", r, files, "-depth-png "+m, "-manifest "+m)
}
