package data

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/train/data"
)

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func quiet(string, ...any) {}

// tmpLeft lists leftover temporary files in dir.
func tmpLeft(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestWriteAtomic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sub") // created on demand
	content := []byte("some IDX bytes")
	n, err := writeAtomic(dir, "f", bytes.NewReader(content), checkSHA256("f", sha(content), false))
	if err != nil || n != int64(len(content)) {
		t.Fatalf("writeAtomic: %d, %v", n, err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "f"))
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("content %q, %v", got, err)
	}
	if st, _ := os.Stat(filepath.Join(dir, "f")); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	if !verified(dir, data.File{Name: "f", SHA256: sha(content)}) || verified(dir, data.File{Name: "f", SHA256: sha([]byte("x"))}) {
		t.Error("verified() wrong")
	}

	// a mismatching SHA-256 is refused and the old file stays
	_, err = writeAtomic(dir, "f", strings.NewReader("tampered"), checkSHA256("f", sha(content), false))
	if err == nil || !strings.Contains(err.Error(), "refusing f: SHA-256 "+sha([]byte("tampered"))) {
		t.Fatalf("tampered content: %v", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "f")); !bytes.Equal(got, content) {
		t.Errorf("old file replaced by refused content: %q", got)
	}
	// a reader failing halfway leaves nothing behind
	failing := io.MultiReader(strings.NewReader("half"), errReader{})
	if _, err := writeAtomic(dir, "g", failing, nil); err == nil {
		t.Fatal("failing reader: no error")
	}
	if _, err := os.Stat(filepath.Join(dir, "g")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("partial file g exists: %v", err)
	}
	if left := tmpLeft(t, dir); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	// gunzip verification hashes the content, not the gzip bytes
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(content)
	zw.Close()
	if _, err := writeAtomic(dir, "h.gz", bytes.NewReader(gz.Bytes()), checkSHA256("h", sha(content), true)); err != nil {
		t.Fatal(err)
	}
	if _, err := writeAtomic(dir, "i.gz", bytes.NewReader(gz.Bytes()), checkSHA256("i", sha(gz.Bytes()), true)); err == nil {
		t.Error("gzip bytes' hash accepted as the content's")
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("network gone") }

// writeTarball writes a gzipped tar with the given files (name → content).
func writeTarball(t *testing.T, p string, files map[string][]byte) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	for name, b := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(b)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	f.Close()
}

// idxNames are the names of MNIST's four files.
var idxNames = npmSet.FileNames()

// withSums returns MNIST's files with the sums of small test files.
func withSums(files map[string][]byte) []data.File {
	fs := append([]data.File(nil), npmSet.Files...)
	for i := range fs {
		fs[i].SHA256 = sha(files[fs[i].Name])
	}
	return fs
}

func TestExtractMNISTTarball(t *testing.T) {
	files := map[string][]byte{}
	tarFiles := map[string][]byte{"package/readme.md": []byte("hi")}
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
	for _, n := range idxNames {
		if got, _ := os.ReadFile(filepath.Join(dest, n)); !bytes.Equal(got, files[n]) {
			t.Errorf("%s: wrong content", n)
		}
	}
	if _, err := os.Stat(filepath.Join(dest, "readme.md")); err == nil {
		t.Error("extracted a file that is not data")
	}

	// one corrupted file: refused, named, and not written
	tarFiles["package/data/t10k-labels-idx1-ubyte"] = []byte("corrupt")
	writeTarball(t, tgz, tarFiles)
	dest2 := filepath.Join(tmp, "mnist2")
	err := extractTarball(tgz, dest2, sums, quiet)
	if err == nil || !strings.Contains(err.Error(), "refusing t10k-labels-idx1-ubyte") {
		t.Fatalf("corrupt file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dest2, "t10k-labels-idx1-ubyte")); err == nil {
		t.Error("corrupt file written")
	}
	if left := tmpLeft(t, dest2); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}

	// a missing file is reported
	delete(tarFiles, "package/data/t10k-labels-idx1-ubyte")
	writeTarball(t, tgz, tarFiles)
	err = extractTarball(tgz, filepath.Join(tmp, "mnist3"), sums, quiet)
	if err == nil || !strings.Contains(err.Error(), "lacks package/data/t10k-labels-idx1-ubyte") {
		t.Fatalf("missing file: %v", err)
	}
}
