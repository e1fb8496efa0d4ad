package telemetry

import (
	"bufio"
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// withWNorm gives every record of recs w_norm rows (GradW's shapes) of
// random values with the specials mixed in, and returns recs.
func withWNorm(recs []Record, seed uint64) []Record {
	rng := rand.New(rand.NewPCG(seed, 2))
	for k := range recs {
		r := &recs[k]
		r.WNorm = nil
		for _, g := range r.GradW {
			w := make([]float32, len(g))
			for i := range w {
				if rng.IntN(4) == 0 {
					w[i] = specials[rng.IntN(len(specials))]
				} else {
					w[i] = float32(rng.Float64())
				}
			}
			r.WNorm = append(r.WNorm, w)
		}
	}
	return recs
}

// TestWNormRoundTrip: records with w_norm, written by the Writer in
// either form, read back through both paths as exactly the records
// written, with no fallback of the SIMD path, in blocks of any size.
func TestWNormRoundTrip(t *testing.T) {
	h := testHeader()
	recs := withWNorm(testRecords(h, 50, 1), 2)
	b := writeFile(t, t.TempDir(), h, recs)
	if n := bytes.Count(b, []byte(`],"w_norm":[[`)); n != len(recs) {
		t.Fatalf("%d lines with w_norm after grad_w, want %d", n, len(recs))
	}
	want := &Log{Header: h, Records: recs}
	j, s, ej, es := readBoth(b)
	if ej != nil || es != nil || !bitsEqual(j, want) || !bitsEqual(s, want) || !j.HasWNorm() {
		t.Fatalf("read: %v / %v, or other records", ej, es)
	}
	if SIMDSupported() {
		if n, err := simdFallbacks(b); err != nil || n != 0 {
			t.Errorf("the SIMD path handed %d blocks of the Writer's file to encoding/json (%v)", n, err)
		}
	}
	defer func(c int) { ChunkBytes = c }(ChunkBytes)
	ChunkBytes = 1 << 10
	if j, s, ej, es = readBoth(b); ej != nil || es != nil || !bitsEqual(j, want) || !bitsEqual(s, want) {
		t.Errorf("with 1 KiB blocks: %v / %v, or other records", ej, es)
	}
	dir := t.TempDir()
	writeGzip(t, dir, h, recs, 4, map[int]bool{7: true})
	if l, err := ReadFile(filepath.Join(dir, GzipName)); err != nil || !bitsEqual(l, want) {
		t.Errorf("gzip form: %v, or other records", err)
	}
	// A log without w_norm (the files before it) reads as before.
	old := testRecords(h, 5, 1)
	j, s, ej, es = readBoth(writeFile(t, t.TempDir(), h, old))
	if ej != nil || es != nil || j.HasWNorm() || s.HasWNorm() || j.Records[0].WNorm != nil || !bitsEqual(j, &Log{Header: h, Records: old}) {
		t.Errorf("a log without w_norm: %v / %v, or w_norm", ej, es)
	}
}

// TestWNormMixed: a file with w_norm in some records only is an error
// naming the first record that differs, on both paths, wherever the
// blocks split it; the Writer refuses a record without w_norm after
// records with it.
func TestWNormMixed(t *testing.T) {
	h := testHeader()
	with := writeFile(t, t.TempDir(), h, withWNorm(testRecords(h, 6, 3), 4))
	without := writeFile(t, t.TempDir(), h, testRecords(h, 6, 3))
	lw, lo := strings.SplitAfter(string(with), "\n"), strings.SplitAfter(string(without), "\n")
	mixed := map[string]string{
		"with then without": lw[0] + strings.Join(lw[1:4], "") + strings.Join(lo[4:], ""),
		"without then with": lo[0] + strings.Join(lo[1:4], "") + strings.Join(lw[4:], ""),
	}
	defer func(c int) { ChunkBytes = c }(ChunkBytes)
	for _, chunk := range []int{1 << 10, 4 << 20} {
		ChunkBytes = chunk
		for name, file := range mixed {
			_, _, ej, es := readBoth([]byte(file))
			for _, err := range []error{ej, es} {
				if err == nil || !strings.Contains(err.Error(), "telemetry f: line 5: ") || !strings.Contains(err.Error(), "w_norm") || strings.Contains(err.Error(), "\n") {
					t.Errorf("%s (blocks of %d): %v, want an error at line 5 about w_norm", name, chunk, err)
				}
			}
		}
	}
	w, err := Create(t.TempDir(), h, Plain)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	recs := withWNorm(testRecords(h, 2, 5), 6)
	if err := w.Write(&recs[0]); err != nil {
		t.Fatal(err)
	}
	recs[1].WNorm = nil
	if err := w.Write(&recs[1]); err == nil || !strings.Contains(err.Error(), "w_norm") {
		t.Errorf("a record without w_norm after one with it: %v", err)
	}
	bad := withWNorm(testRecords(h, 1, 5), 6)[0]
	bad.Step = 9
	bad.WNorm[1][2] = float32(math.Inf(1))
	if err := w.Write(&bad); err == nil || !strings.Contains(err.Error(), "w_norm[1][2]") {
		t.Errorf("writing an infinite w_norm: %v", err)
	}
	bad.WNorm = bad.WNorm[:1]
	if err := w.Write(&bad); err == nil || !strings.Contains(err.Error(), "w_norm rows") {
		t.Errorf("writing a w_norm row short: %v", err)
	}
}

// TestWNormHostile: broken w_norm fields give one-line errors naming the
// file and line on both paths.
func TestWNormHostile(t *testing.T) {
	h := testHeader()
	good := writeFile(t, t.TempDir(), h, withWNorm(testRecords(h, 1, 2), 3))
	lines := strings.SplitAfter(string(good), "\n")
	hdr, rec := lines[0], lines[1]
	for _, tc := range []struct{ name, file, want string }{
		{"null", hdr + strings.Replace(rec, `"w_norm":[[`, `"w_norm":null,"x":[[`, 1), "line 2"},
		{"empty", hdr + strings.Replace(rec, `"w_norm":[[`, `"w_norm":[],"x":[[`, 1), "line 2: 0 w_norm rows"},
		{"missing row", hdr + strings.Replace(rec, `"w_norm":[[`, `"w_norm":[[1],[`, 1), "line 2"},
		{"long row", hdr + strings.Replace(rec, `"w_norm":[[`, `"w_norm":[[1,`, 1), "line 2: w_norm[0] has 7 values"},
		{"negative", hdr + strings.Replace(rec, `"w_norm":[[`, `"w_norm":[[-1,`, 1), "line 2"},
		{"NaN", hdr + strings.Replace(rec, `"w_norm":[[`, `"w_norm":[[NaN,`, 1), "line 2"},
		{"repeated", hdr + strings.Replace(rec, `"w_norm":[[`, `"w_norm":[[1]],"w_norm":[[`, 1), "line 2"},
		{"a string", hdr + strings.Replace(rec, `"w_norm":[[`, `"w_norm":"x","y":[[`, 1), "line 2"},
	} {
		j, s, ej, es := readBoth([]byte(tc.file))
		for _, r := range []struct {
			path string
			l    *Log
			err  error
		}{{"json", j, ej}, {"simd", s, es}} {
			if r.err == nil {
				// encoding/json keeps the last of repeated keys; both paths
				// must then agree.
				if tc.name == "repeated" && ej == nil && es == nil && bitsEqual(j, s) {
					continue
				}
				t.Errorf("%s (%s): no error, log %+v", tc.name, r.path, r.l)
				continue
			}
			if msg := r.err.Error(); !strings.Contains(msg, tc.want) || !strings.HasPrefix(msg, "telemetry f: ") || strings.Contains(msg, "\n") {
				t.Errorf("%s (%s): error %q, want one line mentioning %q", tc.name, r.path, msg, tc.want)
			}
		}
	}
}

// TestWNormResume: a resume continues a file in the form of its records:
// one with w_norm as the uninterrupted run's, one without (written
// before w_norm existed) without it, in either form of file.
func TestWNormResume(t *testing.T) {
	h := testHeader()
	recs := withWNorm(testRecords(h, 8, 13), 14)
	plain := testRecords(h, 8, 13) // the same records without w_norm
	for _, form := range []Form{Plain, Gzip} {
		for _, c := range []struct {
			name string
			have []Record
		}{{"with", recs}, {"without", plain}} {
			dir := t.TempDir()
			if form == Plain {
				writeFile(t, dir, h, c.have[:6])
			} else {
				writeGzip(t, dir, h, c.have[:6], 4, nil)
			}
			w, err := Resume(dir, h, 4, form)
			if err != nil {
				t.Fatal(err)
			}
			for i := 4; i < 8; i++ {
				if err := w.Write(&recs[i]); err != nil { // the new run's records have w_norm
					t.Fatal(err)
				}
			}
			w.Close()
			l, err := ReadFile(filepath.Join(dir, form.Name()))
			if err != nil || !bitsEqual(l, &Log{Header: h, Records: c.have}) {
				t.Errorf("%s file of records %s w_norm resumed at step 4: %v, or other records than the uninterrupted file's", form, c.name, err)
			}
		}
	}
	// A resume keeping no record lets the new records decide.
	dir := t.TempDir()
	writeFile(t, dir, h, plain[2:4])
	w, err := Resume(dir, h, 1, Plain)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(&recs[1])
	w.Close()
	if l, err := ReadFile(filepath.Join(dir, FileName)); err != nil || len(l.Records) != 1 || !l.HasWNorm() {
		t.Errorf("resume of a file cut to its header: %v, want one record with w_norm", err)
	}
}

// TestReadLineWNorm: readLine finds the w_norm key wherever the reader's
// buffer splits the line, and only there.
func TestReadLineWNorm(t *testing.T) {
	for _, line := range []string{
		`{"epoch":1,"step":2,"max_norm":[[1,2,3]],"grad_w":[[4,5,6,7,8]],"w_norm":[[1,2,3,4,5]]}`,
		`{"epoch":1,"step":2,"max_norm":[[1,2,3]],"grad_w":[[4,5,6,7,8,9,10,11,12]]}`,
		`{"epoch":1,"step":2,"max_norm":[[1,2,3]],"grad_w":[[4,5,6,7,8]],"w_nor":[[1]],"_norm":[[1]]}`,
	} {
		want := strings.Contains(line, wnormKey)
		for pad := 0; pad < 20; pad++ {
			text := strings.Repeat(" ", pad) + line + "\n"
			for _, size := range []int{16, 17, 19, 23, 31, 64, 4096} {
				n, _, got, err := readLine(bufio.NewReaderSize(strings.NewReader(text), size))
				if err != nil || n != int64(len(text)) || got != want {
					t.Fatalf("pad %d, buffer %d: %d bytes, w_norm %v (%v); want %d, %v", pad, size, n, got, err, len(text), want)
				}
			}
		}
	}
}

// TestWNormBounds: MaxLogBytes counts the w_norm of the records that have
// it, and UnpackLimit covers either form.
func TestWNormBounds(t *testing.T) {
	h := testHeader()
	if d := h.RecordBytes(true) - h.RecordBytes(false); d != 4*(2*3+4*2)+2*24 {
		t.Errorf("w_norm adds %d bytes to a record, want %d", d, 4*(2*3+4*2)+2*24)
	}
	defer func(v int64) { MaxLogBytes = v }(MaxLogBytes)
	MaxLogBytes = 3 * h.RecordBytes(true)
	recs := withWNorm(testRecords(h, 4, 1), 2)
	for _, n := range []int{3, 4} {
		b := writeFile(t, t.TempDir(), h, recs[:n])
		_, _, ej, es := readBoth(b)
		for _, err := range []error{ej, es} {
			if n == 3 && err != nil {
				t.Errorf("3 records with w_norm within MaxLogBytes: %v", err)
			}
			if n == 4 && (err == nil || !strings.Contains(err.Error(), "line 5: ") || !strings.Contains(err.Error(), "MaxLogBytes")) {
				t.Errorf("4 records with w_norm beyond MaxLogBytes: %v", err)
			}
		}
		if n == 4 && UnpackLimit(h) < int64(len(writeFile(t, t.TempDir(), h, recs[:3]))) {
			t.Errorf("UnpackLimit %d below the 3 records with w_norm that Read takes", UnpackLimit(h))
		}
	}
	// Without w_norm, more records fit in the same bytes.
	if m := MaxLogBytes / h.RecordBytes(false); m < 4 {
		t.Fatalf("%d records without w_norm fit", m)
	}
	if _, _, ej, es := readBoth(writeFile(t, t.TempDir(), h, testRecords(h, 4, 1))); ej != nil || es != nil {
		t.Errorf("4 records without w_norm: %v / %v", ej, es)
	}
}

// TestWNormPool: pooling keeps w_norm, max-pooled over each window as
// grad_w; a log with w_norm in some records only is refused.
func TestWNormPool(t *testing.T) {
	h := testHeader()
	recs := withWNorm(testRecords(h, 11, 5), 6)
	g := &Log{Header: h, Records: recs}
	p, err := g.Pool(3)
	if err != nil {
		t.Fatal(err)
	}
	for k, r := range p.Records {
		win := recs[k*3 : min(k*3+3, len(recs))]
		for l := range r.WNorm {
			for i, v := range r.WNorm[l] {
				m := float32(0)
				for _, s := range win {
					m = max(m, s.WNorm[l][i])
				}
				if v != m {
					t.Fatalf("record %d w_norm[%d][%d] = %g, want %g", k, l, i, v, m)
				}
			}
		}
	}
	if !p.HasWNorm() {
		t.Fatal("the pooled log has no w_norm")
	}
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src.ndjson"), filepath.Join(dir, "dst.ndjson.gz")
	os.WriteFile(src, writeFile(t, t.TempDir(), h, recs), 0o644)
	if _, err := PoolFile(src, dst, 4); err != nil {
		t.Fatal(err)
	}
	if l, err := ReadFile(dst); err != nil || !bitsEqual(l, p) {
		t.Errorf("PoolFile: %v, or other records than Pool(3)", err)
	}
	recs[7].WNorm = nil
	if _, err := g.Pool(3); err == nil || !strings.Contains(err.Error(), "record 7 (step 8) has no w_norm") {
		t.Errorf("pooling a log with w_norm in some records: %v", err)
	}
	if err := g.Write(&bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "record 7") {
		t.Errorf("writing a log with w_norm in some records: %v", err)
	}
}
