package infer

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/tools/internal/clitest"
	"github.com/capstan-ml/capstan/train/data"
)

// TestOutputAimedAtInput: -recon or -perturb aimed at -checkpoint,
// -image or a -model config file, by its path, as dir/./name or through
// a symbolic link, or both at one file, is refused before any work (exit
// 2, one line naming both flags) and the inputs are left byte for byte.
func TestOutputAimedAtInput(t *testing.T) {
	ck := tinyCheckpoint(t)
	dir := t.TempDir()
	img, m := filepath.Join(dir, "digit.png"), filepath.Join(dir, "m.json")
	g := image.NewGray(image.Rect(0, 0, 20, 20))
	for i := 5; i < 15; i++ {
		g.SetGray(i, 10, color.Gray{Y: 255})
	}
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(f, g); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m, []byte(capsnet.Presets()["tiny-deep"].JSON()), 0o644); err != nil {
		t.Fatal(err)
	}
	files := clitest.Snapshot(t, ck, img, m)
	args := []string{"-checkpoint", ck, "-model", m, "-image", img, "-repeat", "1"}
	for _, flag := range []string{"-recon", "-perturb"} {
		for in, path := range map[string]string{"-checkpoint": ck, "-image": img, "-model": m} {
			for _, out := range append([]string{path}, clitest.Aliases(t, path)...) {
				r := clitest.Run(t, nil, append(args, flag, out)...)
				clitest.Refused(t, flag+" "+out, r, files, flag+" "+out, in+" "+path)
			}
		}
	}
	out := filepath.Join(t.TempDir(), "fig.png")
	for _, o := range append([]string{out}, clitest.Aliases(t, out)[0]) {
		r := clitest.Run(t, nil, append(args, "-recon", out, "-perturb", o)...)
		clitest.Refused(t, "-recon and -perturb "+o, r, files, "-recon "+out+" and -perturb "+o)
	}
}

// TestOutputAimedAtData: -recon aimed at a file of the -data set in
// -data-dir is refused before the set is read (exit 2, one line naming
// both flags) and the file is left byte for byte.
func TestOutputAimedAtData(t *testing.T) {
	ck := tinyCheckpoint(t)
	dir, paths := clitest.FakeSet(t, "mnist")
	files := clitest.Snapshot(t, paths...)
	env := []string{data.DataDirEnv + "=" + t.TempDir()}
	for _, name := range []string{"mnist", "affnist"} {
		r := clitest.Run(t, env, "-checkpoint", ck, "-data", name, "-data-dir", dir, "-recon", dir+"/./"+filepath.Base(paths[2]))
		clitest.Refused(t, "-data "+name, r, files, "-recon "+dir+"/./", "-data "+paths[2])
	}
}
