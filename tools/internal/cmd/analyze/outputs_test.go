package analyze

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/capstan-ml/capstan/tools/internal/clitest"
	"github.com/capstan-ml/capstan/train"
	"github.com/capstan-ml/capstan/train/data"
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
