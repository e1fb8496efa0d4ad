package telemetry

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// gzipBytes compresses b as gzip(1) would.
func gzipBytes(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestGzip: a compressed telemetry file reads as the plain one (Find,
// Open, ReadFile), and a resume from it (the plain file missing) unpacks
// it, cuts it back to the checkpoint's step and appends exactly as an
// uninterrupted run would have written.
func TestGzip(t *testing.T) {
	h := testHeader()
	recs := testRecords(h, 10, 3)
	dir := t.TempDir()
	full := writeFile(t, dir, h, recs)
	plain := filepath.Join(dir, FileName)
	gz := filepath.Join(dir, GzipName)

	want, err := ReadJSON(bytes.NewReader(full), plain)
	if err != nil {
		t.Fatal(err)
	}
	// Records up to step 8, compressed, the plain file removed: the state
	// of a committed run directory whose checkpoint is at step 6 (a kill
	// after step 8).
	cut := bytes.Index(full, []byte(`{"epoch":2,"step":9,`))
	if cut < 0 {
		t.Fatalf("no record of step 9 in the test file")
	}
	if err := os.WriteFile(gz, gzipBytes(t, full[:cut]), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(plain); err != nil {
		t.Fatal(err)
	}
	if p, err := Find(dir); err != nil || p != gz {
		t.Fatalf("Find with only %s = %q, %v", GzipName, p, err)
	}
	got, err := ReadFile(gz)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Records, want.Records[:8]) || !reflect.DeepEqual(got.Header, want.Header) {
		t.Errorf("ReadFile of the compressed file differs from the plain file's first 8 records (%d records)", len(got.Records))
	}

	w, err := Resume(dir, h, 6)
	if err != nil {
		t.Fatal(err)
	}
	for i := 6; i < 10; i++ {
		if err := w.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(plain); !bytes.Equal(b, full) {
		t.Errorf("a resume at step 6 from %s gives %d bytes, want the uninterrupted file's %d", GzipName, len(b), len(full))
	}
	if _, err := os.Stat(gz); err != nil {
		t.Errorf("the compressed file is not kept: %v", err)
	}
	// Both there: the plain one (the newer) is found.
	if p, err := Find(dir); err != nil || p != plain {
		t.Errorf("Find with both = %q, %v; want %s", p, err, plain)
	}
	// A plain file named .gz reads too (Open goes by the magic bytes).
	if err := os.WriteFile(gz, full, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadFile(gz); err != nil || len(got.Records) != 10 {
		t.Errorf("plain text named %s: %v", GzipName, err)
	}
	if p, err := Find(t.TempDir()); err != nil || p != "" {
		t.Errorf("Find in an empty directory = %q, %v", p, err)
	}
}

// TestGzipHostile: a damaged or oversized compressed file is an error
// naming it, never a panic, and a resume from it touches nothing.
func TestGzipHostile(t *testing.T) {
	h := testHeader()
	recs := testRecords(h, 4, 2)
	dir := t.TempDir()
	full := writeFile(t, dir, h, recs)
	plain := filepath.Join(dir, FileName)
	gz := filepath.Join(dir, GzipName)
	os.Remove(plain)
	z := gzipBytes(t, full)

	for name, b := range map[string][]byte{
		"truncated":    z[:len(z)/2],
		"bad checksum": append(append([]byte(nil), z[:len(z)-8]...), 0, 0, 0, 0, 0, 0, 0, 0),
		"bad header":   {0x1f, 0x8b, 0xff, 0, 0, 0},
		"only magic":   {0x1f, 0x8b},
	} {
		if err := os.WriteFile(gz, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadFile(gz); err == nil || !strings.Contains(err.Error(), gz) {
			t.Errorf("%s: ReadFile: %v, want an error naming %s", name, err, gz)
		}
		if _, err := Resume(dir, h, 2); err == nil || !strings.Contains(err.Error(), gz) {
			t.Errorf("%s: Resume: %v, want an error naming %s", name, err, gz)
		}
		if _, err := os.Stat(plain); err == nil {
			t.Errorf("%s: a failed unpack left %s", name, FileName)
			os.Remove(plain)
		}
		if got, _ := os.ReadFile(gz); !bytes.Equal(got, b) {
			t.Errorf("%s: a failed unpack changed %s", name, GzipName)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("%s: a failed unpack left files: %v", name, ents)
		}
	}
	// Larger than MaxUnpackedBytes.
	defer func(v int64) { MaxUnpackedBytes = v }(MaxUnpackedBytes)
	MaxUnpackedBytes = int64(len(full) - 1)
	os.WriteFile(gz, z, 0o644)
	if _, err := Resume(dir, h, 2); err == nil || !strings.Contains(err.Error(), "MaxUnpackedBytes") {
		t.Errorf("unpacking beyond MaxUnpackedBytes: %v", err)
	}
	MaxUnpackedBytes = int64(len(full))
	w, err := Resume(dir, h, 2)
	if err != nil {
		t.Fatalf("unpacking exactly MaxUnpackedBytes: %v", err)
	}
	w.Close()
}
