// Package complexity turns the output of BenchmarkCapsLayer
// (kernels/capslayer_bench_test.go) into docs/complexity.md: the paper's
// Table 3 measured. It parses standard go test -bench output (several
// -count runs, medians taken), fits log-log slopes of time and memory in n
// and in d, and writes the Markdown tables and a gonum/plot figure.
//
// The program gen.go in this directory (go:build ignore) wires flags to
// Generate; run it from the repository root:
//
//	go run ./kernels/internal/complexity/gen.go -note '...' bench/complexity.txt
package complexity

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// BenchPrefix is the name of the benchmark Parse reads; other benchmarks'
// lines are skipped.
const BenchPrefix = "BenchmarkCapsLayer/"

// Key names one sub-benchmark: kind=Kind/n=N/d=D/pass=Pass.
type Key struct {
	Kind string
	N, D int
	Pass string
}

// Metrics maps a unit (ns/op, ns/sample, param-bytes, act-bytes,
// allocs/op, …) to its value on one line or, after Median, to the median
// over the runs.
type Metrics map[string]float64

// Results holds every parsed run of every sub-benchmark.
type Results struct {
	// CPU, GOOS, GOARCH are from the header lines of go test (the last
	// seen; CPU is "" when go test printed none).
	CPU, GOOS, GOARCH string
	// Procs is the GOMAXPROCS that go test appended to the names (-cpu):
	// 1 when there is no suffix. Parse refuses output that mixes values.
	Procs int
	// Runs holds the metrics of each run of each sub-benchmark, in input
	// order.
	Runs map[Key][]Metrics
}

// ParseFiles parses the named files as one output (Parse).
func ParseFiles(names ...string) (*Results, error) {
	rs := &Results{Runs: map[Key][]Metrics{}}
	for _, name := range names {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("complexity: %w", err)
		}
		err = rs.parse(f, name)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	if len(rs.Runs) == 0 {
		return nil, fmt.Errorf("complexity: no %s lines in %s", BenchPrefix, strings.Join(names, ", "))
	}
	return rs, nil
}

// Parse reads go test -bench output and returns the runs of the
// BenchmarkCapsLayer sub-benchmarks in it (several -count runs, several
// files concatenated). Lines of other benchmarks, and the name-only lines
// go test prints before a benchmark's log, are skipped; a malformed
// result line of BenchmarkCapsLayer is an error naming it.
func Parse(r io.Reader) (*Results, error) {
	rs := &Results{Runs: map[Key][]Metrics{}}
	if err := rs.parse(r, "input"); err != nil {
		return nil, err
	}
	if len(rs.Runs) == 0 {
		return nil, fmt.Errorf("complexity: no %s lines in the input", BenchPrefix)
	}
	return rs, nil
}

func (rs *Results) parse(r io.Reader, name string) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		for _, h := range []struct {
			prefix string
			dst    *string
		}{{"cpu: ", &rs.CPU}, {"goos: ", &rs.GOOS}, {"goarch: ", &rs.GOARCH}} {
			if v, ok := strings.CutPrefix(text, h.prefix); ok {
				*h.dst = strings.TrimSpace(v)
			}
		}
		f := strings.Fields(text)
		if len(f) < 2 || !strings.HasPrefix(f[0], BenchPrefix) {
			continue
		}
		if err := rs.addLine(f); err != nil {
			return fmt.Errorf("complexity: %s line %d: %w", name, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("complexity: reading %s: %w", name, err)
	}
	return nil
}

// addLine adds one result line, split into fields: name, iterations, then
// value-unit pairs.
func (rs *Results) addLine(f []string) error {
	k, procs, err := parseName(f[0])
	if err != nil {
		return err
	}
	if rs.Procs != 0 && procs != rs.Procs {
		return fmt.Errorf("%s: GOMAXPROCS %d, earlier lines %d", f[0], procs, rs.Procs)
	}
	rs.Procs = procs
	if _, err := strconv.Atoi(f[1]); err != nil {
		return fmt.Errorf("%s: iteration count %q: %w", f[0], f[1], err)
	}
	if len(f)%2 != 0 {
		return fmt.Errorf("%s: %d fields after the iteration count, want value-unit pairs", f[0], len(f)-2)
	}
	m := Metrics{}
	for i := 2; i < len(f); i += 2 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			return fmt.Errorf("%s: value of %s: %w", f[0], f[i+1], err)
		}
		m[f[i+1]] = v
	}
	if _, ok := m["ns/op"]; !ok {
		return fmt.Errorf("%s: no ns/op", f[0])
	}
	rs.Runs[k] = append(rs.Runs[k], m)
	return nil
}

// parseName parses BenchmarkCapsLayer/kind=K/n=N/d=D/pass=P[-procs].
func parseName(name string) (Key, int, error) {
	var k Key
	procs := 1
	rest := strings.TrimPrefix(name, BenchPrefix)
	if i := strings.LastIndexByte(rest, '-'); i >= 0 {
		if p, err := strconv.Atoi(rest[i+1:]); err == nil {
			if p < 1 {
				return k, 0, fmt.Errorf("%s: GOMAXPROCS suffix %d", name, p)
			}
			procs, rest = p, rest[:i]
		}
	}
	seen := map[string]bool{}
	for _, part := range strings.Split(rest, "/") {
		key, val, ok := strings.Cut(part, "=")
		if !ok || seen[key] {
			return k, 0, fmt.Errorf("%s: want kind=K/n=N/d=D/pass=P, got part %q", name, part)
		}
		seen[key] = true
		var err error
		switch key {
		case "kind":
			k.Kind = val
		case "pass":
			k.Pass = val
		case "n":
			k.N, err = strconv.Atoi(val)
		case "d":
			k.D, err = strconv.Atoi(val)
		default:
			return k, 0, fmt.Errorf("%s: unknown part %q", name, part)
		}
		if err != nil {
			return k, 0, fmt.Errorf("%s: %s: %w", name, part, err)
		}
	}
	if k.Kind == "" || k.Pass == "" || k.N < 1 || k.D < 1 {
		return k, 0, fmt.Errorf("%s: want kind=K/n=N/d=D/pass=P with n, d >= 1", name)
	}
	return k, procs, nil
}

// Median returns the median over the runs of k of every metric that all
// its runs report (the mean of the middle two for an even count), and
// false when k has no runs.
func (rs *Results) Median(k Key) (Metrics, bool) {
	runs := rs.Runs[k]
	if len(runs) == 0 {
		return nil, false
	}
	out := Metrics{}
	for unit := range runs[0] {
		vals := make([]float64, 0, len(runs))
		for _, m := range runs {
			if v, ok := m[unit]; ok {
				vals = append(vals, v)
			}
		}
		if len(vals) == len(runs) {
			out[unit] = median(vals)
		}
	}
	return out, true
}

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	h := len(s) / 2
	if len(s)%2 == 1 {
		return s[h]
	}
	return (s[h-1] + s[h]) / 2
}

// Value returns the median of unit over the runs of k, and false when k
// has no runs or they do not all report unit.
func (rs *Results) Value(k Key, unit string) (float64, bool) {
	m, ok := rs.Median(k)
	if !ok {
		return 0, false
	}
	v, ok := m[unit]
	return v, ok
}

// Counts returns the smallest and largest number of runs of a
// sub-benchmark.
func (rs *Results) Counts() (lo, hi int) {
	lo = math.MaxInt
	for _, r := range rs.Runs {
		lo, hi = min(lo, len(r)), max(hi, len(r))
	}
	return lo, hi
}

// Axes returns the sorted distinct kinds, passes, n and d of the results;
// kinds and passes in the order of KindOrder and PassOrder first, others
// after them sorted.
func (rs *Results) Axes() (kinds, passes []string, ns, ds []int) {
	for k := range rs.Runs {
		kinds = appendNew(kinds, k.Kind)
		passes = appendNew(passes, k.Pass)
		ns = appendNew(ns, k.N)
		ds = appendNew(ds, k.D)
	}
	slices.Sort(ns)
	slices.Sort(ds)
	return orderBy(kinds, KindOrder), orderBy(passes, PassOrder), ns, ds
}

func appendNew[T comparable](s []T, v T) []T {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// orderBy sorts s by position in order, unknown names last, sorted.
func orderBy(s, order []string) []string {
	rank := func(x string) int {
		if i := slices.Index(order, x); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortFunc(s, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return s
}
