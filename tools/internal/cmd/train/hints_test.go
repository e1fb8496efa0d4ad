package train

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/tools/internal/clitest"
)

// checkErr checks that err mentions every fragment of want and none of
// unwanted, and maps to exit status code.
func checkErr(t *testing.T, what string, err error, code int, want []string, unwanted ...string) {
	t.Helper()
	clitest.WantErr(t, what, err, want, unwanted...)
	if err == nil {
		return
	}
	if got := cli.Exit(&strings.Builder{}, "train", err); got != code {
		t.Errorf("%s: exit status %d, want %d", what, got, code)
	}
}

// TestResumeOtherModel: -resume of a run with a -model it does not hold
// names the models and how to go on, not a recipe detail the resumed
// plan set (-shift 2 does not apply to the deep model's 40×40 canvas).
func TestResumeOtherModel(t *testing.T) {
	run0 := t.TempDir()
	p, err := capsnet.NewParams(capsnet.Presets()["tiny-sabour"])
	if err != nil {
		t.Fatal(err)
	}
	p.Init(1)
	meta := map[string]string{"data": "embedded", "val_images": "500", "epoch": "1", "step": "27",
		"plan": `{"batch":"200","decay":"0.97","epochs":"1","lr":"0.001","seed":"1","shift":"2","target":"0","telemetry":"false","threads":"1","weight-decay":"1e-06"}`}
	if err := p.SaveCheckpoint(filepath.Join(run0, "checkpoint.safetensors"), meta); err != nil {
		t.Fatal(err)
	}
	err = run([]string{"-resume", run0, "-model", "deep", "-plain"})
	checkErr(t, "-resume with -model deep", err, 2,
		[]string{"-model deep", "holds model tiny-sabour", "-model asks for deep", "drop -model", "-overwrite"}, "-shift")
	err = run([]string{"-resume", filepath.Join(run0, "checkpoint.safetensors"), "-model", "deep", "-plain"})
	checkErr(t, "-resume FILE with -model deep", err, 2, []string{"holds model tiny-sabour"}, "-shift")
}

// TestResumeNoCheckpoint: -resume of a run directory that holds no
// checkpoint yet, or does not exist, says so and how to start the run,
// not a raw open error.
func TestResumeNoCheckpoint(t *testing.T) {
	early := t.TempDir() // a run stopped before its first epoch ended
	if err := os.WriteFile(filepath.Join(early, "metrics.ndjson"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "never")
	for _, tc := range []struct {
		resume string
		want   []string
	}{
		{early, []string{"-resume " + early, "no checkpoint yet in " + early, "had not finished an epoch", "-out " + early}},
		{filepath.Join(early, "checkpoint.safetensors"), []string{"no checkpoint yet in " + early, "-out " + early}},
		{missing, []string{"-resume " + missing, "does not exist", "-out " + missing}},
	} {
		err := run([]string{"-resume", tc.resume, "-plain"})
		checkErr(t, "-resume "+tc.resume, err, 1, tc.want, "open ", "no such file")
	}
}

// TestMissingDataDirFlag: a -data-dir or $CAPSTAN_DATA that does not
// exist is an error naming it, before any data is looked for elsewhere.
func TestMissingDataDirFlag(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-data")
	t.Setenv("CAPSTAN_DATA", t.TempDir())
	out := filepath.Join(t.TempDir(), "run")
	err := run([]string{"-data", "mnist", "-data-dir", missing, "-out", out})
	checkErr(t, "-data-dir "+missing, err, 1, []string{"-data-dir", missing, "does not exist"}, "./build.sh data")
	t.Setenv("CAPSTAN_DATA", missing)
	err = run([]string{"-data", "mnist", "-out", out})
	checkErr(t, "CAPSTAN_DATA="+missing, err, 1, []string{"CAPSTAN_DATA", missing, "does not exist"})
}

// TestHelpLists: -h lists every data set -data accepts and every named
// model preset with the grid's values.
func TestHelpLists(t *testing.T) {
	r := clitest.Run(t, nil, "-h")
	for _, want := range []string{"embedded, mnist, fashion, cifar10", "sabour-small", "tiny-deep3", "n 16, 32, 64"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("train -h lacks %q:\n%s", want, r.Stdout)
		}
	}
}

// TestStartLine: the start-up line names where the data set was read
// from (the embedded set: built in).
func TestStartLine(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	r := clitest.Run(t, nil, "-model", "tiny-sabour", "-epochs", "1", "-batch", "500", "-out", out, "-plain")
	if r.Code != 0 {
		t.Fatalf("train: exit status %d: %s", r.Code, r.Stderr)
	}
	if first, _, _ := strings.Cut(r.Stdout, "\n"); !strings.Contains(first, "on embedded, built in (") {
		t.Errorf("start-up line %q does not say the data set is built in", first)
	}
}
