package quantize

import (
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/tools/internal/clitest"
	"github.com/capstan-ml/capstan/train/data"
)

// TestOutputAimedAtInput: -out aimed at the float checkpoint, by its
// path, as dir/./name or through a symbolic link, is refused before any
// work (exit 2, one line naming both flags) and the checkpoint is left
// byte for byte.
func TestOutputAimedAtInput(t *testing.T) {
	ck := clitest.Checkpoint(t, "tiny-deep")
	files := clitest.Snapshot(t, ck)
	for _, out := range append([]string{ck}, clitest.Aliases(t, ck)...) {
		r := clitest.Run(t, nil, "-checkpoint", ck, "-out", out, "-calib-images", "8", "-eval", "none", "-threads", "1")
		clitest.Refused(t, "-out "+out, r, files, "-out "+out, "-checkpoint "+ck)
	}
}

// TestOutputAimedAtData: -out aimed at a file of the calibration (-data)
// or evaluation (-eval) set is refused before the set is read (exit 2,
// one line naming both flags) and the file is left byte for byte.
func TestOutputAimedAtData(t *testing.T) {
	ck := clitest.Checkpoint(t, "tiny-deep")
	dir, paths := clitest.FakeSet(t, "mnist")
	files := clitest.Snapshot(t, paths...)
	env := []string{data.DataDirEnv + "=" + t.TempDir()}
	for _, args := range [][]string{{"-data", "mnist"}, {"-eval", "mnist-val"}} {
		r := clitest.Run(t, env, append(args, "-checkpoint", ck, "-data-dir", dir, "-out", paths[0], "-calib-images", "8")...)
		clitest.Refused(t, args[1], r, files, "-out "+paths[0], "-data "+paths[0])
	}
}

// TestWroteLine: quantize confirms the int8 model it writes, at the
// default -out beside the checkpoint, with one line "wrote PATH (SIZE;
// NOTE)" on stdout.
func TestWroteLine(t *testing.T) {
	ck := clitest.Checkpoint(t, "tiny-deep")
	r := clitest.Run(t, nil, "-checkpoint", ck, "-calib-images", "8", "-eval", "none", "-threads", "1")
	if r.Code != 0 {
		t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	out := strings.TrimSuffix(ck, ".safetensors") + ".int8.safetensors"
	clitest.Wrote(t, "quantize", r.Stdout, map[string]string{out: wroteNote(t, ck, out, "capsule")})
}
