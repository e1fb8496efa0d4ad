package complexity

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// synthetic returns go test -bench output of BenchmarkCapsLayer whose
// ns/sample is c·n^en·d^ed exactly in the median run: each of the three
// runs (-count 3, run after run as go test prints them) scales it by 1.3,
// 1 and 0.6, in an order that changes with n, so that the first or the
// last run would fit other exponents and the mean is 3% off. procs
// is the GOMAXPROCS suffix ("" for none).
func synthetic(procs string) string {
	type law struct {
		kind   string
		c      float64
		en, ed float64
	}
	laws := []law{{"rba-r10", 3, 2, 1.5}, {"self-attention-in", 0.5, 1.25, 2}}
	factors := [][]float64{{1.3, 1, 0.6}, {0.6, 1.3, 1}} // per kind, rotated per n
	var b strings.Builder
	b.WriteString("goos: linux\ngoarch: amd64\npkg: github.com/capstan-ml/capstan/kernels\ncpu: Test CPU @ 1 GHz\n")
	b.WriteString("BenchmarkVotesForward/deep-16x16/impl=ref         	      10	    123 ns/op	  1.0 GFLOP/s\n")
	for run := range 3 {
		for li, l := range laws {
			for _, n := range []int{8, 16, 32, 64, 128} {
				for _, d := range []int{4, 8, 16, 32} {
					for _, pass := range []string{"fwd", "routing-fwdbwd"} {
						f := factors[li][(run+n)%3]
						t := f * l.c * math.Pow(float64(n), l.en) * math.Pow(float64(d), l.ed)
						name := fmt.Sprintf("BenchmarkCapsLayer/kind=%s/n=%d/d=%d/pass=%s%s", l.kind, n, d, pass, procs)
						if n == 16 && d == 8 {
							b.WriteString(name + "\n    capslayer_bench_test.go:1: a log line\n")
						}
						fmt.Fprintf(&b, "%s \t 100\t %.6g ns/op\t %.6g ns/sample\t %d param-bytes\t %d act-bytes\t 0 B/op\t 0 allocs/op\n",
							name, 8*t, t, 4*n*n*d*d, 4*8*n*n*d)
					}
				}
			}
		}
	}
	b.WriteString("PASS\nok  \tgithub.com/capstan-ml/capstan/kernels\t1.0s\n")
	return b.String()
}

func TestParseAndFit(t *testing.T) {
	rs, err := Parse(strings.NewReader(synthetic("")))
	if err != nil {
		t.Fatal(err)
	}
	if rs.CPU != "Test CPU @ 1 GHz" || rs.GOOS != "linux" || rs.GOARCH != "amd64" || rs.Procs != 1 {
		t.Errorf("header: cpu %q goos %q goarch %q procs %d", rs.CPU, rs.GOOS, rs.GOARCH, rs.Procs)
	}
	if lo, hi := rs.Counts(); lo != 3 || hi != 3 || len(rs.Runs) != 2*5*4*2 {
		t.Errorf("%d sub-benchmarks with %d to %d runs, want 80 with 3", len(rs.Runs), lo, hi)
	}
	kinds, passes, ns, ds := rs.Axes()
	if fmt.Sprint(kinds, passes, ns, ds) != "[rba-r10 self-attention-in] [fwd routing-fwdbwd] [8 16 32 64 128] [4 8 16 32]" {
		t.Errorf("axes %v %v %v %v", kinds, passes, ns, ds)
	}
	if v, _ := rs.Value(Key{"rba-r10", 16, 8, "fwd"}, "ns/sample"); math.Abs(v/(3*16*16*math.Pow(8, 1.5))-1) > 1e-5 {
		t.Errorf("median ns/sample %g, want the middle run's", v)
	}
	for _, c := range []struct {
		kind, unit string
		en, ed     float64
	}{
		{"rba-r10", "ns/sample", 2, 1.5},
		{"self-attention-in", "ns/sample", 1.25, 2},
		{"rba-r10", "param-bytes", 2, 2},
		{"self-attention-in", "act-bytes", 2, 1},
	} {
		for _, pass := range passes {
			for _, d := range ds {
				f, err := rs.SlopeN(c.kind, pass, c.unit, d, 0)
				if err != nil || math.Abs(f.Slope-c.en) > 0.01 || f.Points != 5 {
					t.Errorf("%s %s %s in n at d=%d: slope %.4f over %d points (%v), want %g", c.kind, pass, c.unit, d, f.Slope, f.Points, err, c.en)
				}
			}
			for _, n := range ns {
				f, err := rs.SlopeD(c.kind, pass, c.unit, n, 8)
				if err != nil || math.Abs(f.Slope-c.ed) > 0.01 || f.Points != 3 {
					t.Errorf("%s %s %s in d ≥ 8 at n=%d: slope %.4f over %d points (%v), want %g", c.kind, pass, c.unit, n, f.Slope, f.Points, err, c.ed)
				}
			}
		}
	}
	if _, err := rs.SlopeN("rba-r10", "fwd", "ns/sample", 8, 128); err == nil {
		t.Error("fit over one point: no error")
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in   []float64
		want float64
	}{{[]float64{5}, 5}, {[]float64{9, 1, 4}, 4}, {[]float64{9, 1, 4, 2}, 3}} {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %g, want %g", c.in, got, c.want)
		}
	}
}

func TestFitLogLog(t *testing.T) {
	f, err := FitLogLog([]float64{2, 4, 8}, []float64{3 * 2 * 2 * 2, 3 * 4 * 4 * 4, 3 * 8 * 8 * 8})
	if err != nil || math.Abs(f.Slope-3) > 1e-12 || math.Abs(math.Exp(f.Intercept)-3) > 1e-9 {
		t.Errorf("y = 3x³: %+v, %v", f, err)
	}
	for _, c := range []struct{ xs, ys []float64 }{
		{[]float64{2}, []float64{1}},
		{[]float64{2, 2}, []float64{1, 3}},
		{[]float64{2, 4}, []float64{1, 0}},
		{[]float64{2, 4}, []float64{1, math.Inf(1)}},
		{[]float64{2, 4}, []float64{1}},
	} {
		if _, err := FitLogLog(c.xs, c.ys); err == nil {
			t.Errorf("FitLogLog(%v, %v): no error", c.xs, c.ys)
		}
	}
}

func TestParseErrors(t *testing.T) {
	const ok = "BenchmarkCapsLayer/kind=uniform/n=8/d=4/pass=fwd \t 10\t 100 ns/op\t 12.5 ns/sample\n"
	for _, c := range []struct{ in, want string }{
		{"PASS\n", "no BenchmarkCapsLayer/"},
		{"BenchmarkCapsLayer/kind=uniform/n=8/d=4/pass=fwd \t 10\t 1x00 ns/op\n", "line 1: BenchmarkCapsLayer/kind=uniform/n=8/d=4/pass=fwd: value of ns/op"},
		{"BenchmarkCapsLayer/kind=uniform/n=8/d=4/pass=fwd \t 10\t 100\n", "value-unit pairs"},
		{"BenchmarkCapsLayer/kind=uniform/n=8/d=4/pass=fwd \t 10\t 100 ns/sample\n", "no ns/op"},
		{"BenchmarkCapsLayer/kind=uniform/n=8/pass=fwd \t 10\t 100 ns/op\n", "n, d >= 1"},
		{"BenchmarkCapsLayer/kind=uniform/n=8/d=4/impl=x/pass=fwd \t 10\t 100 ns/op\n", "unknown part"},
		{"BenchmarkCapsLayer/kind=uniform/n=x/d=4/pass=fwd \t 10\t 100 ns/op\n", "n=x: strconv.Atoi"},
		{ok + strings.Replace(ok, "pass=fwd ", "pass=fwd-2 ", 1), "line 2: BenchmarkCapsLayer/kind=uniform/n=8/d=4/pass=fwd-2: GOMAXPROCS 2, earlier lines 1"},
	} {
		_, err := Parse(strings.NewReader(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q): error %v, want one containing %q", c.in, err, c.want)
		}
	}
	rs, err := Parse(strings.NewReader(synthetic("-2")))
	if err != nil || rs.Procs != 2 || len(rs.Runs) != 80 {
		t.Fatalf("GOMAXPROCS suffix -2: %v, procs %d, %d sub-benchmarks", err, rs.Procs, len(rs.Runs))
	}
	if _, ok := rs.Runs[Key{"self-attention-in", 8, 4, "routing-fwdbwd"}]; !ok {
		t.Error("suffix -2 not stripped from pass=routing-fwdbwd-2")
	}
}

func TestSplice(t *testing.T) {
	doc := "# T\n\nintro\n" + BeginMarker + "\nold\n" + EndMarker + "\n\nafter\n"
	got, err := Splice(doc, "new")
	if want := "# T\n\nintro\n" + BeginMarker + "\n\nnew\n\n" + EndMarker + "\n\nafter\n"; err != nil || got != want {
		t.Errorf("Splice: %q, %v; want %q", got, err, want)
	}
	if again, _ := Splice(got, "new"); again != got {
		t.Error("Splice is not idempotent")
	}
	for _, bad := range []string{"no markers", EndMarker + BeginMarker, doc + BeginMarker} {
		if _, err := Splice(bad, "x"); err == nil {
			t.Errorf("Splice(%q): no error", bad)
		}
	}
}

func TestGenerate(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "bench.txt")
	if err := os.WriteFile(in, []byte(synthetic("")), 0o644); err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(dir, "docs", "complexity.md")
	if err := os.Mkdir(filepath.Dir(md), 0o755); err != nil {
		t.Fatal(err)
	}
	page := "# Kept title\n\n" + BeginMarker + "\n" + EndMarker + "\n\nkept tail\n"
	if err := os.WriteFile(md, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	o := Options{Inputs: []string{in}, Markdown: md, PNG: filepath.Join(dir, "docs", "c.png"), Note: "PLACEHOLDER", FixedD: 8, FixedN: 16}
	if err := Generate(o); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# Kept title", "kept tail", "> **PLACEHOLDER**", "Test CPU @ 1 GHz", "](c.png)",
		"| rba-r10 | fwd | 2.00 | 2.00 | 2 | 2 | 1.50 | 1.50 | 2 | 2 |", "Every sub-benchmark made 0 allocs/op."} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("page lacks %q:\n%s", want, out)
		}
	}
	png, err := os.ReadFile(o.PNG)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("figure: %v, %d bytes, not a PNG", err, len(png))
	}
	o.FixedN = 20
	if err := Generate(o); err == nil || !strings.Contains(err.Error(), "must be among the measured") {
		t.Errorf("fixed n = 20 not measured: error %v", err)
	}
	if err := os.WriteFile(in, []byte(synthetic("-2")), 0o644); err != nil {
		t.Fatal(err)
	}
	o.FixedN = 16
	if err := Generate(o); err == nil || !strings.Contains(err.Error(), "-cpu 1") {
		t.Errorf("GOMAXPROCS 2: error %v", err)
	}
}
