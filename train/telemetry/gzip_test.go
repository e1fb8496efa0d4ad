package telemetry

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// gunzip decompresses the file at path, every member.
func gunzip(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return b
}

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

	// Resumed in place: the member is cut after step 6 (rewritten, as it
	// holds steps 7 and 8 too) and new members appended, the plain file
	// not made.
	w, err := Resume(dir, h, 6, Plain)
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
	if b := gunzip(t, gz); !bytes.Equal(b, full) {
		t.Errorf("a resume at step 6 from %s gives %d bytes, want the uninterrupted file's %d", GzipName, len(b), len(full))
	}
	if _, err := os.Stat(plain); err == nil {
		t.Errorf("a resume from %s made %s", GzipName, FileName)
	}
	// Both there (an earlier resume unpacked the .gz): the plain one, the
	// one the resume appended to, is found.
	if err := os.WriteFile(plain, full, 0o644); err != nil {
		t.Fatal(err)
	}
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
		if _, err := Resume(dir, h, 2, Plain); err == nil || !strings.Contains(err.Error(), gz) {
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
	if _, err := Resume(dir, h, 2, Plain); err == nil || !strings.Contains(err.Error(), "MaxUnpackedBytes") {
		t.Errorf("unpacking beyond MaxUnpackedBytes: %v", err)
	}
	MaxUnpackedBytes = int64(len(full))
	w, err := Resume(dir, h, 2, Plain)
	if err != nil {
		t.Fatalf("unpacking exactly MaxUnpackedBytes: %v", err)
	}
	w.Close()
}

// writeGzip writes recs with a Gzip Writer of MemberRecords members,
// syncing after the steps in syncs, and returns the file's bytes and, per
// member end, its offset and the records before it.
func writeGzip(t *testing.T, dir string, h Header, recs []Record, members int, syncs map[int]bool) []byte {
	t.Helper()
	defer func(n int) { MemberRecords = n }(MemberRecords)
	MemberRecords = members
	w, err := Create(dir, h, Gzip)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
		if syncs[recs[i].Step] {
			if err := w.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return must(os.ReadFile(filepath.Join(dir, GzipName)))
}

// memberEnds returns the offsets of the ends of the gzip members of z and
// the records (lines after the header) each holds.
func memberEnds(t *testing.T, z []byte) (ends []int, lines []int) {
	t.Helper()
	cr := &countingReader{r: bufio.NewReader(bytes.NewReader(z))}
	zr, err := gzip.NewReader(cr)
	if err != nil {
		t.Fatal(err)
	}
	for {
		zr.Multistream(false)
		b, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, int(cr.n))
		lines = append(lines, bytes.Count(b, []byte("\n")))
		if err := zr.Reset(cr); err == io.EOF {
			return ends, lines
		} else if err != nil {
			t.Fatal(err)
		}
	}
}

// TestGzipWriter: the Gzip form decodes to the Plain form's bytes, in
// members of at most MemberRecords records (the header alone first), a
// member closed at every Sync; Create of either form removes the other's
// file of an earlier run.
func TestGzipWriter(t *testing.T) {
	h := testHeader()
	recs := testRecords(h, 23, 11)
	dir := t.TempDir()
	full := writeFile(t, dir, h, recs)
	z := writeGzip(t, dir, h, recs, 4, map[int]bool{6: true, 7: true, 20: true})
	if _, err := os.Stat(filepath.Join(dir, FileName)); err == nil {
		t.Errorf("Create(Gzip) left the earlier run's %s", FileName)
	}
	if got := gunzip(t, filepath.Join(dir, GzipName)); !bytes.Equal(got, full) {
		t.Fatalf("the gzip form decodes to %d bytes, want the plain form's %d", len(got), len(full))
	}
	_, lines := memberEnds(t, z)
	// header | 1-4 | 5,6 (sync) | 7 (sync) | 8-11 | 12-15 | 16-19 | 20 (sync) | 21-23
	if want := []int{1, 4, 2, 1, 4, 4, 4, 1, 3}; !reflect.DeepEqual(lines, want) {
		t.Errorf("members of %v lines, want %v", lines, want)
	}
	g, err := ReadFile(filepath.Join(dir, GzipName))
	if err != nil || !reflect.DeepEqual(g.Records, recs) {
		t.Errorf("ReadFile of the gzip form: %v", err)
	}
	if p, _ := Find(dir); p != filepath.Join(dir, GzipName) {
		t.Errorf("Find = %q", p)
	}
	// Same settings, same bytes.
	if z2 := writeGzip(t, t.TempDir(), h, recs, 4, map[int]bool{6: true, 7: true, 20: true}); !bytes.Equal(z, z2) {
		t.Error("two writes of the same records differ")
	}
	w, err := Create(dir, h, Plain)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, err := os.Stat(filepath.Join(dir, GzipName)); err == nil {
		t.Errorf("Create(Plain) left the earlier run's %s", GzipName)
	}
	for _, s := range []string{"gz", "ndjson"} {
		if f, err := ParseForm(s); err != nil || f.String() != s {
			t.Errorf("ParseForm(%q) = %v, %v", s, f, err)
		}
	}
	if _, err := ParseForm("zip"); err == nil {
		t.Error("ParseForm(zip) accepted")
	}
}

// TestGzipTruncated cuts a Gzip-form file at every offset (a kill at any
// instant of a write leaves a prefix of it): ReadFile reads a prefix of
// the records, at least those of the complete members, without error
// once the header member is whole; Resume (at every 5th offset and
// around every member end) at the last step of the
// complete members, then the rest of the records written again, gives
// the uninterrupted file's text, and its bytes when the cut is at a
// member's end.
func TestGzipTruncated(t *testing.T) {
	h := testHeader()
	recs := testRecords(h, 14, 12)
	full := writeFile(t, t.TempDir(), h, recs)
	syncs := map[int]bool{5: true, 10: true}
	z := writeGzip(t, t.TempDir(), h, recs, 3, syncs)
	ends, lines := memberEnds(t, z)
	dir := t.TempDir()
	path := filepath.Join(dir, GzipName)
	defer func(n int) { MemberRecords = n }(MemberRecords)
	MemberRecords = 3
	for cut := 0; cut <= len(z); cut++ {
		complete := -1 // records in the complete members before cut (-1: no header)
		for m, e := range ends {
			if e <= cut {
				complete += lines[m]
			}
		}
		if err := os.WriteFile(path, z[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		g, err := ReadFile(path)
		if complete < 0 {
			if err == nil && len(g.Records) > 0 {
				t.Fatalf("cut at %d, inside the header member: %d records", cut, len(g.Records))
			}
		} else if err != nil {
			t.Fatalf("cut at %d of %d: %v", cut, len(z), err)
		} else if n := len(g.Records); n < complete || (n > 0 && !reflect.DeepEqual(g.Records, recs[:n])) {
			t.Fatalf("cut at %d: %d records, want a prefix of the records of at least %d", cut, len(g.Records), complete)
		}
		if complete < 0 {
			continue // Create writes the header member atomically: no kill leaves it torn
		}
		if cut%5 != 0 && !slicesContains(ends, cut) && !slicesContains(ends, cut-1) {
			continue // resumes (fsyncs) at every 5th offset and around member ends
		}
		step := complete
		w, err := Resume(dir, h, step, Gzip)
		if err != nil {
			t.Fatalf("cut at %d: resume at step %d: %v", cut, step, err)
		}
		for i := step; i < len(recs); i++ {
			if err := w.Write(&recs[i]); err != nil {
				t.Fatalf("cut at %d: resume at step %d: %v", cut, step, err)
			}
			if syncs[recs[i].Step] {
				w.Sync()
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if got := gunzip(t, path); !bytes.Equal(got, full) {
			t.Fatalf("cut at %d, resumed at step %d: %d bytes of text, want the uninterrupted %d", cut, step, len(got), len(full))
		}
		// Cut at a member end (a Sync's, as a checkpoint's resume is), the
		// resume appends to the bytes there: the file is the uninterrupted
		// one, byte for byte.
		if got := must(os.ReadFile(path)); slicesContains(ends, cut) && !bytes.Equal(got, z) {
			t.Errorf("cut at the member end %d (step %d): the resumed file differs from the uninterrupted one", cut, complete)
		}
	}
}

func slicesContains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestResumeForms: a resume continues the file in the form it has,
// whatever form it is asked for (an old run's plain file stays plain),
// and starts a missing one in the form asked for.
func TestResumeForms(t *testing.T) {
	h := testHeader()
	recs := testRecords(h, 8, 13)
	full := writeFile(t, t.TempDir(), h, recs)
	for _, c := range []struct{ have, ask Form }{{Plain, Gzip}, {Gzip, Plain}, {Plain, Plain}, {Gzip, Gzip}} {
		dir := t.TempDir()
		if c.have == Plain {
			writeFile(t, dir, h, recs[:6])
		} else {
			writeGzip(t, dir, h, recs[:6], 4, nil)
		}
		w, err := Resume(dir, h, 4, c.ask)
		if err != nil {
			t.Fatal(err)
		}
		for i := 4; i < 8; i++ {
			if err := w.Write(&recs[i]); err != nil {
				t.Fatal(err)
			}
		}
		w.Close()
		var got []byte
		if c.have == Plain {
			got = must(os.ReadFile(filepath.Join(dir, FileName)))
		} else {
			got = gunzip(t, filepath.Join(dir, GzipName))
		}
		if p, _ := Find(dir); p != filepath.Join(dir, c.have.Name()) || !bytes.Equal(got, full) {
			t.Errorf("%s file resumed asking for %s: Find %q, %d bytes of text, want %d", c.have, c.ask, p, len(got), len(full))
		}
		// No file: a fresh one of the form asked for.
		os.Remove(filepath.Join(dir, c.have.Name()))
		w, err = Resume(dir, h, 4, c.ask)
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
		if p, _ := Find(dir); p != filepath.Join(dir, c.ask.Name()) {
			t.Errorf("no file, resume asking for %s: Find %q", c.ask, p)
		}
	}
}
