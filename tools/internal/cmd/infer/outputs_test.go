package infer

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
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

// TestWroteLines: infer confirms each figure it writes (-recon,
// -perturb) with one line "wrote PATH (SIZE; NOTE)" on stdout, for a data
// set and for an -image, and prints the legend under the confusion
// matrix.
func TestWroteLines(t *testing.T) {
	ck := clitest.Checkpoint(t, "tiny-deep")
	dir := t.TempDir()
	recon, perturb := filepath.Join(dir, "r.png"), filepath.Join(dir, "p.png")
	r := clitest.Run(t, nil, "-checkpoint", ck, "-recon", recon, "-perturb", perturb, "-perturb-index", "3")
	if r.Code != 0 {
		t.Fatalf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	i := strings.Index(r.Stdout, "capsule perturbations of image 3, label ")
	j := strings.Index(r.Stdout[max(i, 0):], ";")
	if i < 0 || j < 0 {
		t.Fatalf("no -perturb line:\n%s", r.Stdout)
	}
	note := r.Stdout[i : i+j] // the label and the predicted class
	clitest.Wrote(t, "infer", r.Stdout, map[string]string{
		recon:   "reconstructions of the first 16 images, inputs on the left",
		perturb: note + "; rows: dimensions ranked by effect, columns: shifts -0.25 to 0.25",
	})
	if !strings.Contains(r.Stdout, "\n"+confusionLegend+"\n") {
		t.Errorf("no legend under the confusion matrix:\n%s", r.Stdout)
	}
	img := filepath.Join(dir, "digit.png")
	if err := os.WriteFile(img, onePixelPNG(t), 0o644); err != nil {
		t.Fatal(err)
	}
	r = clitest.Run(t, nil, "-checkpoint", ck, "-image", img, "-recon", recon, "-perturb", perturb)
	if r.Code != 0 {
		t.Fatalf("-image: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	i = strings.Index(r.Stdout, "capsule perturbations of class ")
	j = strings.Index(r.Stdout[max(i, 0):], ";")
	if i < 0 || j < 0 {
		t.Fatalf("-image: no -perturb line:\n%s", r.Stdout)
	}
	clitest.Wrote(t, "infer -image", r.Stdout, map[string]string{
		recon:   "the image beside its reconstruction",
		perturb: r.Stdout[i:i+j] + "; rows: dimensions ranked by effect, columns: shifts -0.25 to 0.25",
	})
}

// onePixelPNG is a 28×28 grey PNG with one white pixel.
func onePixelPNG(t *testing.T) []byte {
	img := image.NewGray(image.Rect(0, 0, 28, 28))
	img.SetGray(14, 14, color.Gray{Y: 255})
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
