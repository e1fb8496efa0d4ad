package telemetry

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capstan-ml/capstan/capsnet"
)

// testHeader is a small header: primary 3×4, caps 2×2, caps 4×3.
func testHeader() Header {
	return Header{Format: Format, Model: "test", Batch: 8, Layers: []Layer{{"primary", 3, 4}, {"caps.0", 2, 2}, {"caps.1", 4, 3}}}
}

// specials are floats whose text is unusual: the smallest denormal, the
// largest float32, zero, integers, values needing 9 digits.
var specials = []float32{1e-45, 3.4028235e38, 0, 1, 7, 16777216, 1.1754944e-38, 0.1, 123456.79, 2.5e-39}

// testRecords makes n records of h: random values with the specials mixed in.
func testRecords(h Header, n int, seed uint64) []Record {
	rng := rand.New(rand.NewPCG(seed, 1))
	val := func() float32 {
		if rng.IntN(4) == 0 {
			return specials[rng.IntN(len(specials))]
		}
		return float32(math.Exp(rng.NormFloat64() * 3))
	}
	recs := make([]Record, n)
	for k := range recs {
		r := &recs[k]
		r.Epoch, r.Step = 1+k/5, k+1
		for l, L := range h.Layers {
			row := make([]float32, L.N)
			for i := range row {
				row[i] = val()
			}
			r.MaxNorm = append(r.MaxNorm, row)
			if l > 0 {
				g := make([]float32, L.N*h.Layers[l-1].N)
				for i := range g {
					g[i] = val()
				}
				r.GradW = append(r.GradW, g)
			}
		}
	}
	return recs
}

// writeFile writes a telemetry file of recs with a Writer and returns its bytes.
func writeFile(t testing.TB, dir string, h Header, recs []Record) []byte {
	t.Helper()
	w, err := Create(dir, h, Plain)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readBoth parses b with both paths (the SIMD one where supported).
func readBoth(b []byte) (j, s *Log, ej, es error) {
	j, ej = ReadJSON(bytes.NewReader(b), "f")
	if !SIMDSupported() {
		return j, j, ej, ej
	}
	s, es = ReadSIMD(bytes.NewReader(b), "f")
	return
}

// bitsEqual compares logs bitwise (reflect.DeepEqual compares floats by
// value: 0 == -0).
func bitsEqual(a, b *Log) bool {
	if !reflect.DeepEqual(a, b) {
		return false
	}
	for k := range a.Records {
		ra, rb := a.Records[k], b.Records[k]
		for l := range ra.MaxNorm {
			for i := range ra.MaxNorm[l] {
				if math.Float32bits(ra.MaxNorm[l][i]) != math.Float32bits(rb.MaxNorm[l][i]) {
					return false
				}
			}
		}
		for l := range ra.GradW {
			for i := range ra.GradW[l] {
				if math.Float32bits(ra.GradW[l][i]) != math.Float32bits(rb.GradW[l][i]) {
					return false
				}
			}
		}
		for l := range ra.WNorm {
			for i := range ra.WNorm[l] {
				if math.Float32bits(ra.WNorm[l][i]) != math.Float32bits(rb.WNorm[l][i]) {
					return false
				}
			}
		}
	}
	return true
}

// simdFallbacks parses b with the SIMD path on one worker and returns the
// number of blocks it handed to encoding/json.
func simdFallbacks(b []byte) (int, error) {
	p := &parser{name: "f"}
	w := &simdWorker{p: p}
	_, err := p.read(bytes.NewReader(b), func(b []byte) error {
		recs, err := w.decode(b)
		return p.merge(b, recs, err)
	})
	return p.fallbacks, err
}

// TestRoundTrip: a file written by the Writer reads back, through both
// paths, as exactly the records written, special floats included.
func TestRoundTrip(t *testing.T) {
	h := testHeader()
	recs := testRecords(h, 50, 1)
	b := writeFile(t, t.TempDir(), h, recs)
	for _, want := range []string{"1e-45", "3.4028235e+38", "1.6777216e+07", ",0,", ",1,", ",7,"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("the file has no %q", want)
		}
	}
	j, s, ej, es := readBoth(b)
	if ej != nil || es != nil {
		t.Fatalf("read: %v / %v", ej, es)
	}
	want := &Log{Header: h, Records: recs}
	if !bitsEqual(j, want) {
		t.Error("ReadJSON gives other records than were written")
	}
	if !bitsEqual(s, want) {
		t.Error("ReadSIMD gives other records than were written")
	}
	if SIMDSupported() {
		if n, err := simdFallbacks(b); err != nil || n != 0 {
			t.Errorf("the SIMD path handed %d blocks of the Writer's file to encoding/json (%v)", n, err)
		}
	}
	// Small blocks: records cross many block boundaries.
	defer func(c int) { ChunkBytes = c }(ChunkBytes)
	ChunkBytes = 1 << 10
	j, s, ej, es = readBoth(b)
	if ej != nil || es != nil || !bitsEqual(j, want) || !bitsEqual(s, want) {
		t.Errorf("with 1 KiB blocks: %v / %v, or other records", ej, es)
	}
	if l, err := Read(bytes.NewReader(b), "f"); err != nil || !bitsEqual(l, want) {
		t.Errorf("Read: %v, or other records", err)
	}
}

// TestReadSIMDFallback: hand-written lines the SIMD path does not take
// (keys in another order or case, integers as 1e0-free text, ties in the
// rounding to float32) give the same Log on both paths.
func TestReadSIMDFallback(t *testing.T) {
	hdr := `{"format":"capstan-telemetry/1","model":"m","batch":2,"layers":[{"name":"primary","n":2,"d":1},{"name":"c","n":1,"d":1}]}` + "\n"
	for _, tc := range []struct {
		line     string
		fallback int
	}{
		{`{"grad_w":[[1,2]],"step":3,"max_norm":[[0.5,4],[8]],"epoch":1}`, 0},
		{`{"Epoch":1,"step":3,"max_norm":[[0.5,4],[8]],"grad_w":[[1,2]]}`, 1},
		{`{"epoch":1,"step":3,"max_norm":[[1.00000005960464477539062500,4],[8]],"grad_w":[[1,2]]}`, 1},          // a tie: rounds to even (1)
		{`{"epoch":1,"step":3,"max_norm":[[1.00000005960464477539062501,4],[8]],"grad_w":[[1,2]]}`, 1},          // just above the tie (its float64 is the tie)
		{`{"epoch":1,"step":3,"max_norm":[[-0.0,4],[8]],"grad_w":[[1e-50,123456789012345678901234567890]]}`, 0}, // -0, underflow, a huge integer
		{`{"epoch":1,"step":3,"max_norm":[[ 1 , 4 ],[8]] ,"grad_w":[[1,2]],"extra":{"a":[1,"x"]}}`, 1},
	} {
		line := tc.line
		b := []byte(hdr + line + "\n")
		j, s, ej, es := readBoth(b)
		if ej != nil || es != nil {
			t.Errorf("%s: %v / %v", line, ej, es)
			continue
		}
		if !bitsEqual(j, s) {
			t.Errorf("%s: the paths differ: %v / %v", line, j.Records, s.Records)
		}
		if SIMDSupported() {
			if n, err := simdFallbacks(b); err != nil || n != tc.fallback {
				t.Errorf("%s: %d fallbacks to encoding/json, want %d (%v)", line, n, tc.fallback, err)
			}
		}
	}
}

// TestHostile: broken or hostile files give one-line errors naming the
// file and line, on both paths, never a panic.
func TestHostile(t *testing.T) {
	h := testHeader()
	good := writeFile(t, t.TempDir(), h, testRecords(h, 3, 2))
	lines := strings.SplitAfter(string(good), "\n")
	hdr, rec := lines[0], lines[1]
	hdrOf := func(layers string) string {
		return `{"format":"capstan-telemetry/1","model":"m","batch":2,"layers":` + layers + "}\n"
	}
	for _, tc := range []struct{ name, file, want string }{
		{"empty", "", "empty file"},
		{"truncated header", hdr[:20], "line 1: truncated"},
		{"truncated record", hdr + rec[:len(rec)/2], "line 2: truncated"},
		{"torn last line", string(good[:len(good)-3]), "line 4: truncated"},
		{"other format", strings.Replace(hdr, "capstan-telemetry/1", "capstan-telemetry/9", 1), "line 1: header: format"},
		{"unknown header field", strings.Replace(hdr, `"model"`, `"modle"`, 1), "line 1: header"},
		{"one layer", hdrOf(`[{"name":"primary","n":2,"d":1}]`), "1 layers"},
		{"huge capsule count", hdrOf(`[{"name":"primary","n":1000000000,"d":8},{"name":"c","n":10,"d":8}]`), "MaxCapsules"},
		{"records beyond the line limit", hdrOf(`[{"name":"primary","n":16000,"d":8},{"name":"c","n":16000,"d":8}]`), "MaxLineBytes"},
		{"huge layer count", hdrOf("[" + strings.Repeat(`{"name":"c","n":1,"d":1},`, 100) + `{"name":"c","n":1,"d":1}]`), "MaxLayers"},
		{"negative batch", strings.Replace(hdr, `"batch":8`, `"batch":-8`, 1), "batch -8"},
		{"wrong row count", hdr + strings.Replace(rec, `"grad_w":[[`, `"grad_w":[[1],[`, 1), "line 2"},
		{"long row", hdr + strings.Replace(rec, `"max_norm":[[`, `"max_norm":[[1,`, 1), "line 2: max_norm[0] has 4 values"},
		{"NaN text", hdr + strings.Replace(rec, `"max_norm":[[`, `"max_norm":[[NaN,`, 1), "line 2"},
		{"negative value", hdr + strings.Replace(rec, `"max_norm":[[`, `"max_norm":[[-1,`, 1), "line 2"},
		{"float32 overflow", hdr + strings.Replace(rec, `"max_norm":[[`, `"max_norm":[[1e39,`, 1), "line 2"},
		{"null value", hdr + strings.Replace(rec, `"max_norm":[[`, `"max_norm":[[null,`, 1), "line 2: null"},
		{"missing step", hdr + strings.Replace(rec, `"step":1,`, ``, 1), "line 2"},
		{"fractional step", hdr + strings.Replace(rec, `"step":1,`, `"step":1.5,`, 1), "line 2"},
		{"step zero", hdr + strings.Replace(rec, `"step":1,`, `"step":0,`, 1), "line 2"},
		{"huge step", hdr + strings.Replace(rec, `"step":1,`, `"step":99999999999999999999999,`, 1), "line 2"},
		{"steps not increasing", hdr + rec + rec, "line 3: epoch 1 step 1 after epoch 1 step 1"},
		{"empty line", hdr + "\n" + rec, "line 2"},
		{"two lines in one document", hdr + strings.Replace(rec, `"step":1,`, "\n"+`"step":1,`, 1), "line 2"},
		{"two documents on a line", hdr + strings.TrimSuffix(rec, "\n") + rec, "line 2"},
		{"not an object", hdr + "[1,2]\n", "line 2"},
		{"garbage", hdr + "{\x00\xff}\n", "line 2"},
	} {
		j, s, ej, es := readBoth([]byte(tc.file))
		for _, r := range []struct {
			path string
			l    *Log
			err  error
		}{{"json", j, ej}, {"simd", s, es}} {
			if r.err == nil {
				t.Errorf("%s (%s): no error, log %+v", tc.name, r.path, r.l)
				continue
			}
			msg := r.err.Error()
			if !strings.Contains(msg, tc.want) || !strings.HasPrefix(msg, "telemetry f: ") || strings.Contains(msg, "\n") {
				t.Errorf("%s (%s): error %q, want one line starting \"telemetry f: \" mentioning %q", tc.name, r.path, msg, tc.want)
			}
		}
	}
	// Limits are checked before anything of their size is allocated.
	defer func(n int) { MaxRecords = n }(MaxRecords)
	MaxRecords = 2
	if _, _, ej, es := readBoth(good); ej == nil || es == nil || !strings.Contains(ej.Error(), "MaxRecords") || !strings.Contains(es.Error(), "MaxRecords") {
		t.Errorf("3 records with MaxRecords 2: %v / %v", ej, es)
	}
}

// TestWriterResume: resuming at a checkpoint's step cuts records after it
// and a torn last line, keeps those before; a missing file or another
// run's header starts afresh.
func TestWriterResume(t *testing.T) {
	h := testHeader()
	recs := testRecords(h, 10, 3)
	dir := t.TempDir()
	full := writeFile(t, dir, h, recs)
	path := filepath.Join(dir, FileName)
	torn := append(append([]byte(nil), full...), full[len(full)/2:len(full)/2+40]...)
	if err := os.WriteFile(path, torn, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := Resume(dir, h, 6, Plain)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(&recs[5]); err == nil {
		t.Error("writing step 6 again after resuming at step 6 is not refused")
	}
	for i := 6; i < 10; i++ {
		if err := w.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, full) {
		t.Errorf("after a resume at step 6 and steps 7..10 again, the file differs from the uninterrupted one (%d bytes, want %d)", len(got), len(full))
	}
	// Another model's file, another run's (Header.Run) and no file: a
	// fresh one.
	other := h
	other.Model = "other"
	otherRun := h
	otherRun.Run = "0123456789abcdef"
	for _, c := range []struct {
		h    Header
		prep func()
	}{{other, func() {}}, {other, func() { os.Remove(path) }}, {h, func() {}}, {otherRun, func() {}}} {
		if c.h.Run == "" { // the file of the run without Run, to resume as otherRun
			os.WriteFile(path, full, 0o644)
		}
		c.prep()
		w, err := Resume(dir, c.h, 6, Plain)
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
		l, err := ReadJSON(bytes.NewReader(must(os.ReadFile(path))), path)
		want := 0
		if c.h.Model == h.Model && c.h.Run == h.Run {
			want = 6 // its own file: cut back to step 6
		}
		if err != nil || len(l.Records) != want || l.Header.Model != c.h.Model || l.Header.Run != c.h.Run {
			t.Errorf("resume of model %q run %q: %v, %d records (want %d), model %q run %q", c.h.Model, c.h.Run, err, len(l.Records), want, l.Header.Model, l.Header.Run)
		}
	}
	// A header without Run is the header line of the files before it.
	if line := must(json.Marshal(h)); bytes.Contains(line, []byte("run")) {
		t.Errorf("a header without Run marshals to %s", line)
	}
	long := h
	long.Run = strings.Repeat("a", MaxRunBytes+1)
	if _, err := Create(dir, long, Plain); err == nil {
		t.Error("a header with a run id longer than MaxRunBytes is written")
	}
	// Bad records are refused.
	w, _ = Create(dir, h, Plain)
	defer w.Close()
	bad := testRecords(h, 1, 4)[0]
	bad.MaxNorm[1][0] = float32(math.NaN())
	if err := w.Write(&bad); err == nil || !strings.Contains(err.Error(), "max_norm[1][0]") {
		t.Errorf("writing NaN: %v", err)
	}
	bad = testRecords(h, 1, 4)[0]
	bad.GradW = bad.GradW[:1]
	if err := w.Write(&bad); err == nil {
		t.Error("writing a record with a missing row is not refused")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestWriteNoAllocs: Write allocates nothing once its buffer has grown,
// in either form (the gzip members' compressor is reset, not remade).
func TestWriteNoAllocs(t *testing.T) {
	h := testHeader()
	recs := testRecords(h, 400, 5)
	for _, form := range []Form{Plain, Gzip} {
		w, err := Create(t.TempDir(), h, form)
		if err != nil {
			t.Fatal(err)
		}
		k := 0
		write := func() {
			if err := w.Write(&recs[k]); err != nil {
				t.Fatal(err)
			}
			k++
		}
		for range 2*MemberRecords + 1 { // the buffers grow, members close
			write()
		}
		w.Sync()
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		for range 300 {
			write()
		}
		runtime.ReadMemStats(&m1)
		if a := m1.Mallocs - m0.Mallocs; a != 0 {
			t.Errorf("%s: 300 writes allocate %d times", form, a)
		}
		w.Close()
	}
}

// FuzzRead: on any input both paths agree (an error on both, or the same
// Log bitwise), and neither panics.
func FuzzRead(f *testing.F) {
	h := testHeader()
	good := writeFile(f, f.TempDir(), h, testRecords(h, 3, 6))
	f.Add(good)
	f.Add(good[:len(good)-5])
	lines := strings.SplitAfter(string(good), "\n")
	f.Add([]byte(lines[0] + strings.Replace(lines[1], `"step":1`, `"Step":1`, 1)))
	f.Add([]byte(lines[0] + strings.Replace(lines[1], `[[`, `[[1.00000005960464477539062500,`, 1)))
	f.Add([]byte(lines[0] + strings.Replace(lines[1], `[[`, `[[-0,`, 1)))
	f.Add([]byte(lines[0] + strings.Replace(lines[1], `[[`, `[[null,`, 1)))
	f.Add([]byte(lines[0] + strings.Replace(lines[1], `"epoch"`, `"epoch":2,"epoch"`, 1)))
	wn := writeFile(f, f.TempDir(), h, withWNorm(testRecords(h, 3, 6), 7))
	f.Add(wn)
	wl := strings.SplitAfter(string(wn), "\n")
	f.Add([]byte(wl[0] + wl[1] + lines[2])) // w_norm, then a record without
	f.Add([]byte(wl[0] + strings.Replace(wl[1], `"w_norm"`, `"W_norm"`, 1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 1<<16 {
			return // per-exec memory stays small: the limits scale with the input
		}
		j, s, ej, es := readBoth(b)
		if (ej == nil) != (es == nil) {
			t.Fatalf("json error %v, simd error %v", ej, es)
		}
		if ej == nil && !bitsEqual(j, s) {
			t.Fatalf("the paths give different logs:\n%+v\n%+v", j, s)
		}
	})
}

// deepLog generates a telemetry file of n records for the deep model's
// real shapes (capsnet preset "deep").
func deepLog(b *testing.B, n int) []byte {
	cfg, err := capsnet.LoadConfig("deep")
	if err != nil {
		b.Fatal(err)
	}
	p, err := capsnet.NewParams(cfg)
	if err != nil {
		b.Fatal(err)
	}
	net, err := capsnet.NewInferenceNet(p, 1)
	if err != nil {
		b.Fatal(err)
	}
	h := Header{Format: Format, Model: cfg.Name, Batch: 128}
	for _, L := range net.Layers() {
		h.Layers = append(h.Layers, Layer{L.Name, L.N, L.D})
	}
	rng := rand.New(rand.NewPCG(7, 7))
	var buf []byte
	hl := must(json.Marshal(h))
	buf = append(append(buf, hl...), '\n')
	rec := testRecords(h, 1, 8)[0]
	for k := 0; k < n; k++ {
		rec.Epoch, rec.Step = 1+k/429, k+1
		for _, rows := range [][][]float32{rec.MaxNorm, rec.GradW} {
			for _, row := range rows {
				for i := range row {
					row[i] = float32(rng.Float64() * math.Exp(-rng.Float64()*8)) // norms ≤ 1, gradients down to 1e-4
				}
			}
		}
		buf = AppendRecord(buf, &rec)
	}
	return buf
}

// benchRecords is the benchmark log's size: a tenth of the deep model's
// 30 epochs at batch 128 on 55,000 images (12,870 steps).
const benchRecords = 1287

func benchRead(b *testing.B, read func(*bytes.Reader) (*Log, error)) {
	file := deepLog(b, benchRecords)
	b.SetBytes(int64(len(file)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l, err := read(bytes.NewReader(file))
		if err != nil || len(l.Records) != benchRecords {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(file))/benchRecords, "B/record")
}

// BenchmarkReadJSON parses the deep model's telemetry with encoding/json.
func BenchmarkReadJSON(b *testing.B) {
	benchRead(b, func(r *bytes.Reader) (*Log, error) { return ReadJSON(r, "bench") })
}

// BenchmarkReadSIMD parses it with simdjson, on one worker (one block at
// a time, as ReadJSON) and on the default workers (one per CPU).
func BenchmarkReadSIMD(b *testing.B) {
	if !SIMDSupported() {
		b.Skip("no simdjson on this CPU")
	}
	for _, w := range []int{1, 0} {
		name := "workers=1"
		if w == 0 {
			name = fmt.Sprintf("workers=%d", min(runtime.GOMAXPROCS(0), 4))
		}
		b.Run(name, func(b *testing.B) {
			defer func(n int) { simdWorkers = n }(simdWorkers)
			simdWorkers = w
			benchRead(b, func(r *bytes.Reader) (*Log, error) { return ReadSIMD(r, "bench") })
		})
	}
}

// TestIsMidpoint checks the fast path against the definition.
func TestIsMidpoint(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	slow := func(d float64) bool {
		f := float32(d)
		if float64(f) == d {
			return false
		}
		if math.IsInf(float64(f), 0) {
			return math.Abs(d) == 0x1.ffffffp127
		}
		g := math.Nextafter32(f, float32(math.Copysign(math.Inf(1), d-float64(f))))
		return (float64(f)+float64(g))/2 == d
	}
	for i := 0; i < 100000; i++ {
		f := math.Float32frombits(rng.Uint32())
		g := math.Nextafter32(f, float32(math.Inf(1)))
		for _, d := range []float64{(float64(f) + float64(g)) / 2, float64(f), math.Float64frombits(rng.Uint64()), float64(f) * (1 + 1e-12)} {
			if isMidpoint(d) != slow(d) {
				t.Fatalf("isMidpoint(%v) = %v", d, !slow(d))
			}
		}
	}
	if !isMidpoint(1.00000005960464477539062500) || isMidpoint(1) || !isMidpoint(0x1.ffffffp127) {
		t.Error("isMidpoint misses a known tie")
	}
}

// BenchmarkReadSpeedup reads the deep model's log with each path in turn
// (encoding/json, simdjson on one worker, simdjson on one worker per CPU)
// in every iteration, so that the load of a machine shared with other jobs
// weighs on all alike, and reports each path's MB/s from its median time
// and the speed-ups over encoding/json.
func BenchmarkReadSpeedup(b *testing.B) {
	if !SIMDSupported() {
		b.Skip("no simdjson on this CPU")
	}
	file := deepLog(b, benchRecords)
	defer func(n int) { simdWorkers = n }(simdWorkers)
	paths := []struct {
		name    string
		workers int
		read    func(io.Reader, string) (*Log, error)
	}{{"json", 0, ReadJSON}, {"simd1", 1, ReadSIMD}, {"simd", 0, ReadSIMD}}
	times := make([][]float64, len(paths))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k, p := range paths {
			simdWorkers = p.workers
			start := time.Now()
			if l, err := p.read(bytes.NewReader(file), "bench"); err != nil || len(l.Records) != benchRecords {
				b.Fatal(err)
			}
			times[k] = append(times[k], time.Since(start).Seconds())
		}
	}
	b.StopTimer()
	mbs := make([]float64, len(paths))
	for k, p := range paths {
		slices.Sort(times[k])
		mbs[k] = float64(len(file)) / 1e6 / times[k][len(times[k])/2]
		b.ReportMetric(mbs[k], "MB/s-"+p.name)
	}
	b.ReportMetric(mbs[1]/mbs[0], "x-simd1")
	b.ReportMetric(mbs[2]/mbs[0], "x-simd")
}
