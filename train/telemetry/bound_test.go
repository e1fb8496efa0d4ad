package telemetry

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// zeroRecords returns h's header line and n records of zeros, the most
// records per byte of text a file can hold.
func zeroRecords(t *testing.T, h Header, n int) []byte {
	t.Helper()
	line, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	b := append(line, '\n')
	r := testRecords(h, 1, 1)[0]
	for _, rows := range [][][]float32{r.MaxNorm, r.GradW} {
		for _, row := range rows {
			clear(row)
		}
	}
	for k := range n {
		r.Epoch, r.Step = 1, k+1
		b = AppendRecord(b, &r)
	}
	return b
}

// TestMaxLogBytes: the records a Log may hold are bounded in total
// (MaxLogBytes), checked as blocks of lines arrive, with one line naming
// the file and the limit, by both parsing paths.
func TestMaxLogBytes(t *testing.T) {
	h := testHeader()
	defer func(v int64) { MaxLogBytes = v }(MaxLogBytes)
	MaxLogBytes = 3 * h.RecordBytes(false)
	b3, b4 := zeroRecords(t, h, 3), zeroRecords(t, h, 4)
	if j, s, ej, es := readBoth(b3); ej != nil || es != nil || len(j.Records) != 3 || len(s.Records) != 3 {
		t.Fatalf("3 records within MaxLogBytes: %v / %v", ej, es)
	}
	_, _, ej, es := readBoth(b4)
	for _, err := range []error{ej, es} {
		if err == nil || !strings.Contains(err.Error(), "telemetry f: line 5: ") || !strings.Contains(err.Error(), "MaxLogBytes") || strings.Contains(err.Error(), "\n") {
			t.Errorf("4 records beyond MaxLogBytes: %v, want one line naming f, line 5 and MaxLogBytes", err)
		}
	}
}

// TestZeroBomb: a small gzip of many zero records (it expands about
// 400×) is refused when its records would exceed MaxLogBytes, before they
// are parsed; the test lowers MaxLogBytes instead of allocating
// gigabytes.
func TestZeroBomb(t *testing.T) {
	h := testHeader()
	plain := zeroRecords(t, h, 100_000)
	var z bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
	zw.Write(plain)
	zw.Close()
	path := filepath.Join(t.TempDir(), GzipName)
	if err := os.WriteFile(path, z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func(v int64) { MaxLogBytes = v }(MaxLogBytes)
	MaxLogBytes = 1 << 20 // about 1,800 records of testHeader
	for _, read := range []func(string) (*Log, error){ReadFile, readFileJSON} {
		l, err := read(path)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "MaxLogBytes") {
			n := 0
			if l != nil {
				n = len(l.Records)
			}
			t.Errorf("%d KB gzip of %d MB of zero records with MaxLogBytes 1 MiB: %d records, error %v", z.Len()>>10, len(plain)>>20, n, err)
		}
	}
}

// readFileJSON is ReadFile with the encoding/json path.
func readFileJSON(path string) (*Log, error) {
	rc, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return ReadJSON(rc, path)
}

// TestResumeGzipChecked: a resume reads a compressed file's header line
// before reading it further: another run's (or a pooled) file is not read
// (its damaged body never is), and the resume decompresses at most
// UnpackLimit, derived from MaxLogBytes.
func TestResumeGzipChecked(t *testing.T) {
	h := testHeader()
	other := h
	other.Run = "another-run"
	dir := t.TempDir()
	gz := filepath.Join(dir, GzipName)
	plain := filepath.Join(dir, FileName)
	z := gzipBytes(t, zeroRecords(t, other, 2000))
	damaged := z[:len(z)/2] // a truncated stream: unpacking it fails
	if err := os.WriteFile(gz, damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := Resume(dir, h, 5, Plain)
	if err != nil {
		t.Fatalf("resume beside another run's compressed telemetry: %v, want a fresh file", err)
	}
	w.Close()
	if got, _ := os.ReadFile(plain); !bytes.Equal(got, zeroRecords(t, h, 0)) {
		t.Errorf("resume beside another run's telemetry wrote %d bytes, want the header alone", len(got))
	}
	os.Remove(plain)

	pooledHdr := h
	pooledHdr.Pool = &Pooling{Window: 2, First: 1, Last: 4, Records: 4}
	pz := gzipBytes(t, zeroRecords(t, pooledHdr, 2))
	os.WriteFile(gz, pz[:len(pz)-4], 0o644) // a damaged trailer
	if _, err := Resume(dir, h, 5, Plain); !errors.Is(err, errPooled) || !strings.Contains(err.Error(), gz) {
		t.Errorf("resume from a pooled compressed log: %v, want errPooled naming %s", err, gz)
	}

	defer func(v int64) { MaxLogBytes = v }(MaxLogBytes)
	MaxLogBytes = 2 * h.RecordBytes(false)
	lim := UnpackLimit(h)
	if lim < int64(len(testFile(t, h, 2))) || lim > 2000 {
		t.Errorf("UnpackLimit %d, want at least the %d bytes of 2 records, at most 2000", lim, len(testFile(t, h, 2)))
	}
	os.WriteFile(gz, gzipBytes(t, zeroRecords(t, h, 20)), 0o644) // more than 2000 bytes
	if _, err := Resume(dir, h, 5, Plain); err == nil || !strings.Contains(err.Error(), "MaxLogBytes") || !strings.Contains(err.Error(), gz) {
		t.Errorf("unpacking 20 records with MaxLogBytes for 2: %v", err)
	}
	if _, err := os.Stat(plain); err == nil {
		t.Errorf("a refused unpack left %s", FileName)
	}
	os.WriteFile(gz, gzipBytes(t, testFile(t, h, 2)), 0o644)
	w, err = Resume(dir, h, 5, Plain)
	if err != nil {
		t.Fatalf("unpacking 2 records with MaxLogBytes for 2: %v", err)
	}
	w.Close()
}

// testFile is a telemetry file of n records of h with testRecords' values.
func testFile(t *testing.T, h Header, n int) []byte {
	t.Helper()
	return writeFile(t, t.TempDir(), h, testRecords(h, n, 7))
}
