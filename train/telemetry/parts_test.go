package telemetry

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeParted writes recs as writeGzip does, with PartBytes set to
// partBytes, and returns the files of the log, GzipName first.
func writeParted(t *testing.T, dir string, h Header, recs []Record, members int, partBytes int64, syncs map[int]bool) [][]byte {
	t.Helper()
	defer func(n int64) { PartBytes = n }(PartBytes)
	PartBytes = partBytes
	writeGzip(t, dir, h, recs, members, syncs)
	return logFiles(t, dir)
}

// logFiles reads the GzipName of dir and its parts, in order.
func logFiles(t *testing.T, dir string) [][]byte {
	t.Helper()
	gz := filepath.Join(dir, GzipName)
	parts, err := Parts(gz)
	if err != nil {
		t.Fatal(err)
	}
	var files [][]byte
	for _, p := range append([]string{gz}, parts...) {
		files = append(files, must(os.ReadFile(p)))
	}
	return files
}

// writeSegments lays files out in dir as a log's GzipName and parts,
// removing any other part.
func writeSegments(t *testing.T, dir string, files [][]byte) {
	t.Helper()
	gz := filepath.Join(dir, GzipName)
	if err := removeParts(gz); err != nil {
		t.Fatal(err)
	}
	for i, b := range files {
		p := gz
		if i > 0 {
			p = filepath.Join(dir, PartName(GzipName, i))
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestParts: with a small PartBytes the Writer splits the log into
// parts at member boundaries, every part but the last at least PartBytes
// and at most PartBytes plus a member, the parts together the bytes of
// the unsplit file; Open, ReadFile and Find read them as one log; a run
// killed at any byte of it (the files written so far, the last one cut,
// a new part possibly still empty) reads a prefix of its records and
// resumes to the uninterrupted log's text, and to its bytes when the cut
// is at a member end (where a checkpoint's Sync leaves it); a resume at
// any earlier step removes the parts after its cut.
func TestParts(t *testing.T) {
	h := testHeader()
	recs := testRecords(h, 30, 21)
	syncs := map[int]bool{5: true, 10: true, 17: true}
	const members, partBytes = 3, 700
	full := writeFile(t, t.TempDir(), h, recs)
	z := writeGzip(t, t.TempDir(), h, recs, members, syncs)
	dir := t.TempDir()
	files := writeParted(t, dir, h, recs, members, partBytes, syncs)
	if len(files) < 4 {
		t.Fatalf("%d files for %d bytes at PartBytes %d, want at least 4", len(files), len(z), partBytes)
	}
	if got := bytes.Join(files, nil); !bytes.Equal(got, z) {
		t.Fatalf("the parts hold %d bytes, want the unsplit file's %d, byte for byte", len(got), len(z))
	}
	ends, _ := memberEnds(t, z)
	maxMember, prev := 0, 0
	for _, e := range ends {
		maxMember, prev = max(maxMember, e-prev), e
	}
	var starts []int // offsets of the files in z
	off := 0
	for i, b := range files {
		starts = append(starts, off)
		if !slicesContains(append([]int{0}, ends...), off) {
			t.Errorf("file %d starts at %d, inside a member", i, off)
		}
		if i < len(files)-1 && len(b) < partBytes {
			t.Errorf("file %d holds %d bytes, below PartBytes %d, and a part follows it", i, len(b), partBytes)
		}
		if len(b) > partBytes+maxMember {
			t.Errorf("file %d holds %d bytes, more than PartBytes %d and a member (%d)", i, len(b), partBytes, maxMember)
		}
		off += len(b)
	}
	gz := filepath.Join(dir, GzipName)
	if p, err := Find(dir); p != gz || err != nil {
		t.Errorf("Find = %q, %v", p, err)
	}
	if g, err := ReadFile(gz); err != nil || !reflect.DeepEqual(g.Records, recs) {
		t.Fatalf("ReadFile of the parted log: %v", err)
	}

	defer func(n int, b int64) { MemberRecords, PartBytes = n, b }(MemberRecords, PartBytes)
	MemberRecords, PartBytes = members, partBytes
	_, lines := memberEnds(t, z)
	near := func(offs []int, cut int) bool {
		return slicesContains(offs, cut) || slicesContains(offs, cut-1) || slicesContains(offs, cut+1)
	}
	// Every 5th offset and those around member ends and file starts
	// (TestGzipTruncated cuts a single file at every one).
	for cut := ends[0]; cut <= len(z); cut++ { // Create writes the header member atomically
		if cut%5 != 0 && !near(ends, cut) && !near(starts, cut) {
			continue
		}
		complete := -1
		for m, e := range ends {
			if e <= cut {
				complete += lines[m]
			}
		}
		// The files a kill at byte cut leaves: those before it whole, the
		// one it falls in cut, and at a file boundary possibly the next
		// part created and still empty.
		var left [][]byte
		for i, b := range files {
			if starts[i] < cut || i == 0 {
				left = append(left, b[:min(len(b), cut-starts[i])])
			} else if starts[i] == cut && cut%2 == 0 {
				left = append(left, nil)
			}
		}
		writeSegments(t, dir, left)
		g, err := ReadFile(gz)
		if err != nil {
			t.Fatalf("cut at %d of %d: %v", cut, len(z), err)
		}
		if n := len(g.Records); n < complete || (n > 0 && !reflect.DeepEqual(g.Records, recs[:n])) {
			t.Fatalf("cut at %d: %d records, want a prefix of the records of at least %d", cut, n, complete)
		}
		resumeRest(t, dir, h, recs, complete, syncs)
		got := logFiles(t, dir)
		if text := gunzipBytes(t, bytes.Join(got, nil)); !bytes.Equal(text, full) {
			t.Fatalf("cut at %d, resumed at step %d: %d bytes of text, want the uninterrupted %d", cut, complete, len(text), len(full))
		}
		if slicesContains(ends, cut) && !bytes.Equal(bytes.Join(got, nil), z) {
			t.Errorf("cut at the member end %d (step %d): the resumed log differs from the uninterrupted one", cut, complete)
		}
		for i, b := range got {
			if len(b) > partBytes+maxMember {
				t.Errorf("cut at %d, resumed: file %d holds %d bytes", cut, i, len(b))
			}
		}
	}

	// A resume at an earlier step than the log's last: the parts after the
	// cut go, the part it falls in is cut (or its member rewritten).
	for step := 0; step <= len(recs); step++ {
		writeSegments(t, dir, files)
		w, err := Resume(dir, h, step, Gzip)
		if err != nil {
			t.Fatalf("resume at step %d: %v", step, err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		g, err := ReadFile(gz)
		if err != nil || len(g.Records) != step || (step > 0 && !reflect.DeepEqual(g.Records, recs[:step])) {
			t.Fatalf("resume at step %d: %v records, %v", step, len(g.Records), err)
		}
		if n := len(logFiles(t, dir)); n > len(files) {
			t.Errorf("resume at step %d: %d files, the log had %d", step, n, len(files))
		}
		resumeRest(t, dir, h, recs, step, syncs)
		if text := gunzipBytes(t, bytes.Join(logFiles(t, dir), nil)); !bytes.Equal(text, full) {
			t.Fatalf("resumed at step %d: %d bytes of text, want %d", step, len(text), len(full))
		}
	}
}

// resumeRest resumes the log in dir at step and writes the records after
// it, syncing at syncs.
func resumeRest(t *testing.T, dir string, h Header, recs []Record, step int, syncs map[int]bool) {
	t.Helper()
	w, err := Resume(dir, h, step, Gzip)
	if err != nil {
		t.Fatalf("resume at step %d: %v", step, err)
	}
	for i := step; i < len(recs); i++ {
		if err := w.Write(&recs[i]); err != nil {
			t.Fatalf("resume at step %d: %v", step, err)
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
}

// gunzipBytes decompresses z, every member.
func gunzipBytes(t *testing.T, z []byte) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "z.gz")
	if err := os.WriteFile(p, z, 0o644); err != nil {
		t.Fatal(err)
	}
	return gunzip(t, p)
}

// TestPartsCommitted: a resume of a log whose last file is full (as a
// committed one of a long run is) leaves every file as it was and goes on
// in a new part; one whose last part is not full appends to it.
func TestPartsCommitted(t *testing.T) {
	h := testHeader()
	recs := testRecords(h, 20, 22)
	dir := t.TempDir()
	defer func(n int, b int64) { MemberRecords, PartBytes = n, b }(MemberRecords, PartBytes)
	MemberRecords = 4
	PartBytes = 1 << 40
	writeGzip(t, dir, h, recs[:12], 4, map[int]bool{12: true})
	before := logFiles(t, dir)
	PartBytes = int64(len(before[0])) // the file is full
	resumeRest(t, dir, h, recs[:16], 12, nil)
	after := logFiles(t, dir)
	if len(after) != 2 || !bytes.Equal(after[0], before[0]) {
		t.Fatalf("resumed past a full file: %d files, the first unchanged %v; want it unchanged and one part", len(after), bytes.Equal(after[0], before[0]))
	}
	PartBytes = 1 << 40 // the part is not full: the next resume appends to it
	resumeRest(t, dir, h, recs, 16, nil)
	again := logFiles(t, dir)
	if len(again) != 2 || !bytes.Equal(again[0], before[0]) || !bytes.HasPrefix(again[1], after[1]) || len(again[1]) == len(after[1]) {
		t.Errorf("resumed with a part that is not full: %d files; want the part appended to", len(again))
	}
	g, err := ReadFile(filepath.Join(dir, GzipName))
	if err != nil || !reflect.DeepEqual(g.Records, recs) {
		t.Errorf("the log reads %v", err)
	}
}

// TestPartsHostile: parts with a gap, a misnamed part, parts without
// their GzipName, a part that is a link, parts after a plain file: each
// is a one-line error naming the file, from Open, Find and Resume, and
// nothing is removed; Create removes an earlier run's parts.
func TestPartsHostile(t *testing.T) {
	h := testHeader()
	recs := testRecords(h, 12, 23)
	dir := t.TempDir()
	files := writeParted(t, dir, h, recs, 2, 300, nil)
	if len(files) < 3 {
		t.Fatalf("%d files, want at least 3", len(files))
	}
	gz := filepath.Join(dir, GzipName)
	p1, p2 := filepath.Join(dir, PartName(GzipName, 1)), filepath.Join(dir, PartName(GzipName, 2))
	check := func(what, wantIn string) {
		t.Helper()
		before := entriesOf(t, dir)
		_, oerr := Open(gz)
		_, rerr := Resume(dir, h, 3, Gzip)
		for _, err := range []error{oerr, rerr} {
			if err == nil || !strings.Contains(err.Error(), wantIn) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: %v, want a one-line error naming %s", what, err, wantIn)
			}
		}
		if after := entriesOf(t, dir); !reflect.DeepEqual(after, before) {
			t.Errorf("%s: the directory went from %v to %v", what, before, after)
		}
	}
	// A gap: part01 missing.
	b1 := must(os.ReadFile(p1))
	os.Remove(p1)
	check("a gap", p1)
	os.WriteFile(p1, b1, 0o644)
	// A misnamed part.
	odd := filepath.Join(dir, GzipName+".part1")
	os.WriteFile(odd, b1, 0o644)
	check("a misnamed part", odd)
	os.Remove(odd)
	// A part that is a link.
	os.Rename(p2, p2+".x")
	if err := os.Symlink(p2+".x", p2); err == nil {
		check("a link", p2)
		os.Remove(p2)
	}
	os.Rename(p2+".x", p2)
	if g, err := ReadFile(gz); err != nil || !reflect.DeepEqual(g.Records, recs) {
		t.Fatalf("restored: %v", err)
	}
	// Parts without their GzipName.
	zb := must(os.ReadFile(gz))
	os.Remove(gz)
	before := entriesOf(t, dir)
	if p, err := Find(dir); err == nil || !strings.Contains(err.Error(), p1) {
		t.Errorf("parts without %s: Find = %q, %v", GzipName, p, err)
	}
	if _, err := Resume(dir, h, 3, Gzip); err == nil || !strings.Contains(err.Error(), p1) {
		t.Errorf("parts without %s: Resume: %v", GzipName, err)
	}
	if after := entriesOf(t, dir); !reflect.DeepEqual(after, before) {
		t.Errorf("parts without %s: the directory went from %v to %v", GzipName, before, after)
	}
	// Parts after a plain file named as the compressed one.
	os.WriteFile(gz, []byte(`{"format":"x"}`+"\n"), 0o644)
	if _, err := Open(gz); err == nil || !strings.Contains(err.Error(), "not gzip") {
		t.Errorf("a plain file with parts: %v", err)
	}
	os.WriteFile(gz, zb, 0o644)
	// Create removes them, in either form.
	for _, form := range []Form{Gzip, Plain} {
		writeSegments(t, dir, files)
		w, err := Create(dir, h, form)
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
		if ps, err := Parts(gz); len(ps) != 0 || err != nil {
			t.Errorf("Create(%s) left the earlier run's parts %v (%v)", form, ps, err)
		}
	}
}

// TestPartsPool: PoolFile reads a log with its parts as the same log in
// one file, and refuses a destination with parts beside it.
func TestPartsPool(t *testing.T) {
	h := testHeader()
	recs := testRecords(h, 40, 24)
	dir, one := t.TempDir(), t.TempDir()
	if files := writeParted(t, dir, h, recs, 3, 500, nil); len(files) < 3 {
		t.Fatalf("%d files, want at least 3", len(files))
	}
	writeGzip(t, one, h, recs, 3, nil)
	a, err := PoolFile(filepath.Join(dir, GzipName), filepath.Join(t.TempDir(), "a.gz"), 7)
	if err != nil {
		t.Fatal(err)
	}
	b, err := PoolFile(filepath.Join(one, GzipName), filepath.Join(t.TempDir(), "b.gz"), 7)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) || a.Header.Pool == nil {
		t.Error("the pooled parted log differs from the pooled single file")
	}
	dst := filepath.Join(dir, "copy", GzipName)
	os.MkdirAll(filepath.Dir(dst), 0o755)
	os.WriteFile(filepath.Join(filepath.Dir(dst), PartName(GzipName, 1)), nil, 0o644)
	if _, err := PoolFile(filepath.Join(one, GzipName), dst, 7); err == nil || !strings.Contains(err.Error(), PartName(GzipName, 1)) {
		t.Errorf("pooled into a file with parts beside it: %v", err)
	}
}

// entriesOf lists the names in dir.
func entriesOf(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}
