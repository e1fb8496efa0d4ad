package analyze

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/tools/internal/clitest"
)

// TestTables analyses two checkpoints of one architecture on 30 embedded
// test digits: both tables in text and Markdown, mean ± std over the two,
// and the JSON of every figure.
func TestTables(t *testing.T) {
	a := clitest.Checkpoint(t, "tiny-deep")
	b := clitest.Checkpoint(t, "tiny-deep-uniform")
	js := filepath.Join(t.TempDir(), "stats.json")
	var out bytes.Buffer
	if err := run([]string{"-checkpoint", a, "-k", "30", "-batch", "16", "-json", js, "-invariance", "rotation"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tiny-deep on mnist-embedded-test (1 checkpoint(s))", "30 image(s)", "Accuracy on the 30 analysed image(s): ", "ε_active = 0.05, ε₁ = 0.01, ε₂ = 0.01",
		"Viewpoint invariance", "rotation            45", "Table 1: routing", "primary → caps.0", "caps.0 → caps.1", "Table 2: capsule layers", "cnm", "cds"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	raw, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Data     string
		Accuracy struct{ Mean, Std float64 }
		Tables   struct {
			K      int
			Table2 []struct {
				Layer string
				CNS   struct{ Mean, Std *float64 }
			}
		}
		Checkpoints []struct {
			Checkpoint      string
			Accuracy        float64
			Correct, Images int
			Capsules        []struct {
				Layer    string
				NormMean []float64 `json:"norm_mean"`
				NormStd  []float64 `json:"norm_std"`
				Dead     []bool
			}
			Couplings []struct {
				NIn       int `json:"n_in"`
				NOut      int `json:"n_out"`
				Mean, Std []float64
			}
			Invariance []struct {
				Family    string
				Magnitude float64
				Layers    []struct{ Corr *float64 }
			}
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("JSON: %v\n%s", err, raw)
	}
	if doc.Tables.K != 30 || len(doc.Tables.Table2) != 3 || doc.Tables.Table2[0].CNS.Mean == nil || *doc.Tables.Table2[0].CNS.Mean <= 0 || len(doc.Checkpoints) != 1 ||
		len(doc.Checkpoints[0].Invariance) != 4 || doc.Checkpoints[0].Invariance[3].Family != "rotation" || doc.Checkpoints[0].Invariance[0].Layers[0].Corr == nil {
		t.Errorf("JSON figures: %s", raw)
	}
	if c := doc.Checkpoints[0]; c.Images != 30 || c.Correct < 0 || c.Correct > 30 || c.Accuracy != float64(c.Correct)/30 || doc.Accuracy.Mean != c.Accuracy || doc.Accuracy.Std != 0 {
		t.Errorf("JSON accuracy: %+v of the checkpoint, %+v over all", c, doc.Accuracy)
	}
	if c := doc.Checkpoints[0]; len(c.Capsules) != 3 || c.Capsules[0].Layer != "primary" || len(c.Capsules[1].NormMean) != len(c.Capsules[1].Dead) ||
		len(c.Capsules[1].NormMean) == 0 || c.Capsules[1].NormMean[0] <= 0 || len(c.Couplings) != 2 ||
		len(c.Couplings[1].Mean) != c.Couplings[1].NIn*c.Couplings[1].NOut || len(c.Couplings[1].Std) != len(c.Couplings[1].Mean) {
		t.Errorf("JSON per-capsule and per-coupling figures: %+v, %+v", c.Capsules, c.Couplings)
	} else {
		// Every input capsule's couplings sum to 1 in every image (softmax), so do their means.
		r := c.Couplings[1]
		for i := 0; i < r.NIn; i++ {
			sum := 0.0
			for j := 0; j < r.NOut; j++ {
				sum += r.Mean[i*r.NOut+j]
			}
			if sum < 1-1e-5 || sum > 1+1e-5 {
				t.Errorf("routing layer 2, input capsule %d: mean couplings sum to %v", i, sum)
			}
		}
	}
	// Two checkpoints of one architecture: mean ± std in Markdown.
	out.Reset()
	a2 := clitest.Checkpoint(t, "tiny-deep")
	if err := run([]string{"-checkpoint", a, "-checkpoint", a2, "-k", "10", "-markdown"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "| routing layer | capsules alive | dyr | dys |") || !strings.Contains(out.String(), "2 checkpoint(s)") ||
		!regexp.MustCompile(`Accuracy on the 10 analysed image\(s\): [0-9.]+ ± [0-9.]+% \([0-9.]+%, [0-9.]+%\)`).MatchString(out.String()) {
		t.Errorf("Markdown output:\n%s", out.String())
	}
	// Two architectures cannot be averaged.
	if err := run([]string{"-checkpoint", a, "-checkpoint", b, "-k", "5"}, &out); err == nil || !strings.Contains(err.Error(), "one configuration") {
		t.Errorf("two architectures: %v", err)
	}
}

// TestRescaled: a 28×28 model on 40×40 AffNIST: the images are rescaled
// (a note says so), invariance included, and -recon writes a PNG of 2 rows
// of 8 input / reconstruction pairs.
func TestRescaled(t *testing.T) {
	a := clitest.Checkpoint(t, "tiny-deep")
	recon := filepath.Join(t.TempDir(), "recon.png")
	var out bytes.Buffer
	if err := run([]string{"-checkpoint", a, "-data", "affnist-embedded", "-k", "20", "-invariance", "translate-x", "-recon", recon}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"the 40×40 images of mnist-embedded-test-affnist are rescaled to 28×28", "20 image(s)", "translate-x          8"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	w, h := clitest.PNGSize(t, recon)
	if w != 2*(3+8*(57+3)) || h != 2*(3+2*(28+3)) {
		t.Errorf("-recon: %d×%d figure", w, h)
	}
}

// TestBadFlags: out-of-range values are usage errors naming the flag.
func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{{"-invariance", "twist"}, {"-active", "nan"}, {"-k", "-1"}, {"-batch", "0"}, {"-data", "nope"}, {"extra"},
		{"-html", "r.html", "-dark-norm", "0"}, {"-html", "r.html", "-dark-norm", "nan"}, {"-html", "r.html", "-dark-norm", "-0.1"}} {
		err := run(args, &bytes.Buffer{})
		var ue cli.UsageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", args, err)
		} else if n := len(args); n > 1 && strings.HasPrefix(args[n-2], "-") && !strings.Contains(err.Error(), args[n-2]) {
			t.Errorf("%v: %v does not name %s", args, err, args[n-2])
		}
	}
	// Errors about an option of train/study name its flag.
	if err := run([]string{"-checkpoint", filepath.Join(t.TempDir(), "none.safetensors")}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "none.safetensors") ||
		!strings.HasPrefix(err.Error(), "-checkpoint: ") {
		t.Errorf("missing checkpoint: %v", err)
	}
	ck := clitest.Checkpoint(t, "tiny-deep")
	recon := filepath.Join(t.TempDir(), "no-dir", "r.png")
	if err := run([]string{"-checkpoint", ck, "-k", "2", "-recon", recon}, &bytes.Buffer{}); err == nil || !strings.HasPrefix(err.Error(), "-recon: ") {
		t.Errorf("-recon into a missing directory: %v", err)
	}
}
