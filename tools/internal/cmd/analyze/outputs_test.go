package analyze

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/tools/internal/clitest"
	"github.com/capstan-ml/capstan/train"
	"github.com/capstan-ml/capstan/train/data"
	"github.com/capstan-ml/capstan/train/study"
	"github.com/capstan-ml/capstan/train/telemetry"
)

func TestMain(m *testing.M) { clitest.MainOf(m, "analyze", Main) }

// TestOutputAimedAtInput: -json, -html or -recon aimed at a -checkpoint,
// or at the telemetry (plain or gzip) or metrics file found beside the
// first checkpoint, or at a -telemetry or -metrics file named, by its
// path, as dir/./name or through a symbolic link, or two outputs at one
// file, is refused before any work (exit 2, one line naming both flags)
// and the inputs are left byte for byte.
func TestOutputAimedAtInput(t *testing.T) {
	ck := clitest.Checkpoint(t, "tiny-deep")
	ck2 := clitest.Checkpoint(t, "tiny-deep")
	writeRunFiles(t, ck, "tiny-deep")
	dir := filepath.Dir(ck)
	tele, gz, metrics := filepath.Join(dir, telemetry.FileName), filepath.Join(dir, telemetry.GzipName), filepath.Join(dir, train.MetricsName)
	raw, err := os.ReadFile(tele)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(gz, raw, 0o644); err != nil { // only its name matters here
		t.Fatal(err)
	}
	files := clitest.Snapshot(t, ck, ck2, tele, gz, metrics)
	args := []string{"-checkpoint", ck, "-checkpoint", ck2, "-k", "4", "-batch", "4"}
	inputs := []struct{ flag, path string }{{"-checkpoint", ck}, {"-checkpoint", ck2}, {"-telemetry", tele}, {"-telemetry", gz}, {"-metrics", metrics}}
	outputs := []string{"-json", "-html", "-recon"}
	for _, flag := range outputs {
		for _, in := range inputs {
			for _, out := range append([]string{in.path}, clitest.Aliases(t, in.path)...) {
				r := clitest.Run(t, nil, append(args, flag, out)...)
				clitest.Refused(t, flag+" "+out, r, files, flag+" "+out, in.flag+" "+in.path)
			}
		}
		// The files named by -telemetry and -metrics.
		for _, in := range []struct{ flag, path string }{{"-telemetry", tele}, {"-metrics", metrics}} {
			r := clitest.Run(t, nil, "-checkpoint", ck2, "-k", "4", in.flag, in.path, flag, in.path)
			clitest.Refused(t, flag+" "+in.path+" with "+in.flag, r, files, flag+" "+in.path, in.flag+" "+in.path)
		}
	}
	out := filepath.Join(t.TempDir(), "out")
	for i, a := range outputs {
		for _, b := range outputs[i+1:] {
			r := clitest.Run(t, nil, append(args, a, out, b, out)...)
			clitest.Refused(t, a+" and "+b, r, files, a+" "+out+" and "+b+" "+out)
		}
	}
}

// TestOutputAimedAtData: -json aimed at a file of the -data set in
// -data-dir is refused before the set is read (exit 2, one line naming
// both flags) and the file is left byte for byte.
func TestOutputAimedAtData(t *testing.T) {
	ck := clitest.Checkpoint(t, "tiny-deep")
	dir, paths := clitest.FakeSet(t, "mnist")
	files := clitest.Snapshot(t, paths...)
	env := []string{data.DataDirEnv + "=" + t.TempDir()}
	r := clitest.Run(t, env, "-checkpoint", ck, "-data", "mnist", "-data-dir", dir, "-json", paths[3])
	clitest.Refused(t, "-json "+paths[3], r, files, "-json "+paths[3], "-data "+paths[3])
}

// TestWroteLines: analyze confirms each file it writes (-recon, -html,
// -json) with one line "wrote PATH (SIZE; NOTE)" on stdout, and prints a
// legend under each table: as text, and as a paragraph with -markdown.
func TestWroteLines(t *testing.T) {
	ck := clitest.Checkpoint(t, "tiny-deep")
	dir := t.TempDir()
	js, html, recon := filepath.Join(dir, "a.json"), filepath.Join(dir, "a.html"), filepath.Join(dir, "r.png")
	r := clitest.Run(t, nil, "-checkpoint", ck, "-k", "4", "-batch", "4", "-json", js, "-html", html, "-recon", recon, "-samples", "0")
	if r.Code != 0 {
		t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	clitest.Wrote(t, "analyze", r.Stdout, map[string]string{
		recon: "reconstructions, PNG", html: "HTML report", js: "JSON, schema " + study.Schema,
	})
	for _, want := range []string{"\nalive: counts of input → output capsules", "\nn: count. cns: mean over the 4 images"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("no legend %q under the tables:\n%s", want, r.Stdout)
		}
	}
	r = clitest.Run(t, nil, "-checkpoint", ck, "-k", "4", "-batch", "4", "-markdown")
	if r.Code != 0 || !strings.Contains(r.Stdout, " |\n\nalive: counts") || strings.Contains(r.Stdout, "wrote ") {
		t.Errorf("-markdown: exit %d, want the legend a paragraph after Table 1 and no file:\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// TestJSONSchema: analyze -json decodes into the structure docs/json.md
// documents (study.Result, every key snake_case) with no unknown key, and
// names its schema capstan-analyze/1.
func TestJSONSchema(t *testing.T) {
	ck := clitest.Checkpoint(t, "tiny-deep")
	js := filepath.Join(t.TempDir(), "a.json")
	r := clitest.Run(t, nil, "-checkpoint", ck, "-k", "4", "-batch", "4", "-invariance", "rotation", "-json", js)
	if r.Code != 0 {
		t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	raw, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var res study.Result
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	if res.Schema != "capstan-analyze/1" || res.Data != "mnist-embedded-test" || len(res.Checkpoints) != 1 ||
		res.Tables.K != 4 || len(res.Checkpoints[0].Invariance) == 0 {
		t.Errorf("decoded: schema %q, data %q, %d checkpoint(s), %d images", res.Schema, res.Data, len(res.Checkpoints), res.Tables.K)
	}
	// Every key is snake_case: lower case letters, digits and underscores.
	for _, m := range regexp.MustCompile(`"([^"]*)":`).FindAllStringSubmatch(string(raw), -1) {
		if !regexp.MustCompile(`^[a-z][a-z0-9_]*$`).MatchString(m[1]) {
			t.Errorf("key %q is not snake_case", m[1])
		}
	}
}
