package complexity

import (
	"fmt"
	"math"
	"strings"
)

// Report is what the Markdown section is made from: the results and the
// fixed d (for the fits in n) and fixed n (for the fits in d).
type Report struct {
	R              *Results
	FixedD, FixedN int
	// Note, when not empty, is put first in the section (a placeholder
	// warning, the machine's state).
	Note string
	// Figure is the path of the figure relative to the Markdown file ("" for
	// none).
	Figure string
	// Sources names the benchmark files.
	Sources []string
}

// Markdown returns the generated section of docs/complexity.md: how the
// figures were measured, the figure, the fitted exponents beside the
// paper's and Capstan's, the routing's share of the layer's time, the
// times and the memory of every kind, n and d, and any sub-benchmark that
// allocated.
func (rp *Report) Markdown() string {
	var b strings.Builder
	rs := rp.R
	kinds, _, ns, ds := rs.Axes()
	lo, hi := rs.Counts()
	if rp.Note != "" {
		fmt.Fprintf(&b, "> **%s**\n\n", rp.Note)
	}
	runs := fmt.Sprint(lo)
	if hi != lo {
		runs = fmt.Sprintf("%d to %d", lo, hi)
	}
	fmt.Fprintf(&b, "Measured on %s (%s/%s), GOMAXPROCS %d, batch %s, from %s: medians of %s runs per sub-benchmark.\n\n",
		orUnknown(rs.CPU), orUnknown(rs.GOOS), orUnknown(rs.GOARCH), rs.Procs, rp.batch(), codeList(rp.Sources), runs)
	if rp.Figure != "" {
		fmt.Fprintf(&b, "![Time per sample against n at d = %d and against d at n = %d, log-log](%s)\n\n", rp.FixedD, rp.FixedN, rp.Figure)
	}
	rp.timeSlopes(&b, kinds, ns, ds)
	rp.memorySlopes(&b, kinds)
	rp.routingShare(&b, kinds, ns, ds)
	rp.timeTable(&b, "Layer time, µs per sample: forward / forward + backward (pass=fwd / pass=fwdbwd)", kinds, ns, ds, "fwd", "fwdbwd", "ns/sample", 1e-3)
	rp.timeTable(&b, "Routing alone, µs per sample: forward / forward + backward (pass=routing-fwd / pass=routing-fwdbwd)", without(kinds, "votes"), ns, ds, "routing-fwd", "routing-fwdbwd", "ns/sample", 1e-3)
	rp.timeTable(&b, "Memory, KiB for the batch: parameters / activations (param-bytes / act-bytes of pass=fwdbwd)", kinds, ns, ds, "fwdbwd", "fwdbwd", "", 1.0/1024)
	rp.allocs(&b)
	return b.String()
}

// batch is ns/op ÷ ns/sample of any sub-benchmark, as text.
func (rp *Report) batch() string {
	for k := range rp.R.Runs {
		m, _ := rp.R.Median(k)
		if op, ok := m["ns/op"]; ok && m["ns/sample"] > 0 {
			return fmt.Sprint(math.Round(op / m["ns/sample"]))
		}
	}
	return "unknown"
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func codeList(s []string) string {
	if len(s) == 0 {
		return "the input"
	}
	return "`" + strings.Join(s, "`, `") + "`"
}

func without(s []string, x string) []string {
	var out []string
	for _, v := range s {
		if v != x {
			out = append(out, v)
		}
	}
	return out
}

// upperFrom is the smallest of the last three values of axis: the fits
// "from" it leave out the smallest shapes, where fixed costs weigh most.
func upperFrom(axis []int) int {
	return axis[max(0, len(axis)-3)]
}

func fmtSlope(f Fit, err error) string {
	if err != nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", f.Slope)
}

func (rp *Report) timeSlopes(b *strings.Builder, kinds []string, ns, ds []int) {
	rs := rp.R
	nu, du := upperFrom(ns), upperFrom(ds)
	fmt.Fprintf(b, "### Fitted exponents of time\n\n")
	fmt.Fprintf(b, "Least-squares slopes of log(time per sample): in n at d = %d (all n, and n ≥ %d) and in d at n = %d (all d, and d ≥ %d), beside the paper's Table 3 and the operation counts of Capstan's kernels.\n\n", rp.FixedD, nu, rp.FixedN, du)
	fmt.Fprintf(b, "| kind | pass | n: all | n ≥ %d | paper | Capstan | d: all | d ≥ %d | paper | Capstan |\n|---|---|---:|---:|---|---|---:|---:|---|---|\n", nu, du)
	for _, kind := range kinds {
		for _, pass := range PassOrder {
			if _, ok := rs.Value(Key{kind, rp.FixedN, rp.FixedD, pass}, "ns/sample"); !ok {
				continue
			}
			pt, ct := PaperTime(kind), CapstanTime(kind, pass)
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", kind, pass,
				fmtSlope(rs.SlopeN(kind, pass, "ns/sample", rp.FixedD, 0)), fmtSlope(rs.SlopeN(kind, pass, "ns/sample", rp.FixedD, nu)), pt.N, ct.N,
				fmtSlope(rs.SlopeD(kind, pass, "ns/sample", rp.FixedN, 0)), fmtSlope(rs.SlopeD(kind, pass, "ns/sample", rp.FixedN, du)), pt.D, ct.D)
		}
	}
	b.WriteString("\nThe paper's exponents for routing are those of the whole layer, votes included; Capstan's for a routing-only pass are those of the routing kernels (r, or about 3, passes over the n·n·d votes per sample).\n\n")
}

func (rp *Report) memorySlopes(b *strings.Builder, kinds []string) {
	rs := rp.R
	fmt.Fprintf(b, "### Fitted exponents of memory\n\n")
	fmt.Fprintf(b, "Slopes of log(bytes) in n at d = %d and in d at n = %d, all points (the byte counts are exact, so these are the formulas' local exponents).\n\n", rp.FixedD, rp.FixedN)
	b.WriteString("| kind | bytes | n | paper | Capstan | d | paper | Capstan |\n|---|---|---:|---|---|---:|---|---|\n")
	for _, kind := range kinds {
		for _, unit := range []string{"param-bytes", "act-bytes"} {
			pm, cm := PaperMemory(kind), CapstanMemory(kind, unit)
			if unit == "act-bytes" {
				pm = Exponents{"—", "—"}
				if kindFamily(kind) == "rba" || kindFamily(kind) == "attention" {
					pm = PaperMemory(kind)
				}
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", kind, unit,
				fmtSlope(rs.SlopeN(kind, "fwdbwd", unit, rp.FixedD, 0)), pm.N, cm.N,
				fmtSlope(rs.SlopeD(kind, "fwdbwd", unit, rp.FixedN, 0)), pm.D, cm.D)
		}
	}
	b.WriteString("\nThe paper gives one space figure per kind; it is set beside both the parameters and the activations.\n\n")
}

// corners are the (n, d) of the share table: the smallest and largest
// shapes and the fixed ones.
func (rp *Report) corners(ns, ds []int) [][2]int {
	cand := [][2]int{{ns[0], ds[0]}, {rp.FixedN, rp.FixedD}, {ns[len(ns)-1], rp.FixedD}, {rp.FixedN, ds[len(ds)-1]}, {ns[len(ns)-1], ds[len(ds)-1]}}
	var out [][2]int
	for _, c := range cand {
		if !containsPair(out, c) {
			out = append(out, c)
		}
	}
	return out
}

func containsPair(s [][2]int, p [2]int) bool {
	for _, q := range s {
		if q == p {
			return true
		}
	}
	return false
}

func (rp *Report) routingShare(b *strings.Builder, kinds []string, ns, ds []int) {
	cs := rp.corners(ns, ds)
	b.WriteString("### The routing's share of the layer\n\n")
	b.WriteString("Time of the routing alone (pass=routing-fwdbwd) over that of the whole layer (pass=fwdbwd), the rest being the votes; and the votes alone (kind=votes, pass=fwdbwd) over the layer.\n\n| kind | share |")
	for _, c := range cs {
		fmt.Fprintf(b, " n=%d, d=%d |", c[0], c[1])
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---:|", len(cs)) + "\n")
	for _, kind := range without(kinds, "votes") {
		for _, row := range []struct{ name, kind, pass string }{{"routing", kind, "routing-fwdbwd"}, {"votes", "votes", "fwdbwd"}} {
			fmt.Fprintf(b, "| %s | %s |", kind, row.name)
			for _, c := range cs {
				part, ok1 := rp.R.Value(Key{row.kind, c[0], c[1], row.pass}, "ns/sample")
				all, ok2 := rp.R.Value(Key{kind, c[0], c[1], "fwdbwd"}, "ns/sample")
				if ok1 && ok2 && all > 0 {
					fmt.Fprintf(b, " %.0f%% |", 100*part/all)
				} else {
					b.WriteString(" |")
				}
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n")
}

// timeTable writes one table with a row per (n, d) and a column per kind,
// each cell "a / b": the medians of unit of passes a and b, times scale;
// with unit "", param-bytes / act-bytes of pass a.
func (rp *Report) timeTable(b *strings.Builder, title string, kinds []string, ns, ds []int, a, bp, unit string, scale float64) {
	fmt.Fprintf(b, "### %s\n\n| n | d |", title)
	for _, k := range kinds {
		fmt.Fprintf(b, " %s |", k)
	}
	b.WriteString("\n|---:|---:|" + strings.Repeat("---:|", len(kinds)) + "\n")
	ua, ub := unit, unit
	if unit == "" {
		ua, ub = "param-bytes", "act-bytes"
	}
	for _, n := range ns {
		for _, d := range ds {
			fmt.Fprintf(b, "| %d | %d |", n, d)
			for _, k := range kinds {
				va, oka := rp.R.Value(Key{k, n, d, a}, ua)
				vb, okb := rp.R.Value(Key{k, n, d, bp}, ub)
				if oka && okb {
					fmt.Fprintf(b, " %s / %s |", sig3(va*scale), sig3(vb*scale))
				} else {
					b.WriteString(" |")
				}
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n")
}

// sig3 formats v with three significant digits, without exponent.
func sig3(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprint(v)
	}
	dec := max(0, 2-int(math.Floor(math.Log10(math.Abs(v)))))
	return fmt.Sprintf("%.*f", dec, v)
}

// allocs lists, per kind and pass, the shapes whose median allocs/op is
// not 0.
func (rp *Report) allocs(b *strings.Builder) {
	kinds, passes, ns, ds := rp.R.Axes()
	var bad []string
	for _, k := range kinds {
		for _, p := range passes {
			var shapes []string
			lo, hi := math.Inf(1), 0.0
			for _, n := range ns {
				for _, d := range ds {
					if a, ok := rp.R.Value(Key{k, n, d, p}, "allocs/op"); ok && a != 0 {
						shapes = append(shapes, fmt.Sprintf("n=%d/d=%d", n, d))
						lo, hi = min(lo, a), max(hi, a)
					}
				}
			}
			where := strings.Join(shapes, ", ")
			if len(shapes) == len(ns)*len(ds) {
				where = "every n and d"
			}
			if len(shapes) > 0 {
				bad = append(bad, fmt.Sprintf("kind=%s pass=%s: %g to %g allocs/op at %s", k, p, lo, hi, where))
			}
		}
	}
	b.WriteString("### Allocations\n\n")
	if len(bad) == 0 {
		b.WriteString("Every sub-benchmark made 0 allocs/op.\n")
		return
	}
	b.WriteString("The kernels promise no allocation, but these sub-benchmarks allocated (medians):\n\n")
	for _, s := range bad {
		fmt.Fprintf(b, "- %s\n", s)
	}
}
