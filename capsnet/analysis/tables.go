package analysis

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Value is a figure over several models: its mean and population standard
// deviation (0 for one model).
type Value struct {
	Mean float64 `json:"mean"`
	Std  float64 `json:"std"`
}

// String prints the mean, with ± std when there is a spread.
func (v Value) String() string {
	if math.IsNaN(v.Mean) {
		return "–"
	}
	if v.Std == 0 {
		return trim(v.Mean)
	}
	return trim(v.Mean) + " ± " + trim(v.Std)
}

// MarshalJSON writes {"mean": …, "std": …}, with null for NaN (a
// statistic over no alive capsule), which JSON cannot hold.
func (v Value) MarshalJSON() ([]byte, error) {
	num := func(x float64) string {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "null"
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return []byte(`{"mean":` + num(v.Mean) + `,"std":` + num(v.Std) + `}`), nil
}

func trim(x float64) string { return fmt.Sprintf("%.4g", x) }

func summarize(xs []float64) Value {
	var m float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	var v float64
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return Value{m, math.Sqrt(v / float64(len(xs)))}
}

// Tables are the paper's Table 1 (capsules alive, dyr, dys per routing
// layer) and Table 2 (cnm, cns, car, cas, cdr, cds per capsule layer),
// each figure the mean ± std over the models summarized.
//
// As JSON (tools/analyze -json, tools/sweep collect -json; docs/json.md)
// every key is snake_case.
type Tables struct {
	Models     int         `json:"models"`
	K          int         `json:"k"` // images per model
	Thresholds Thresholds  `json:"thresholds"`
	Table1     []Table1Row `json:"table1"`
	Table2     []Table2Row `json:"table2"`
}

// Table1Row is one routing layer of Table 1.
type Table1Row struct {
	From     string `json:"from"`
	To       string `json:"to"`
	AliveIn  Value  `json:"alive_in"`
	AliveOut Value  `json:"alive_out"`
	NIn      int    `json:"n_in"`
	NOut     int    `json:"n_out"`
	DYR      Value  `json:"dyr"`
	DYS      Value  `json:"dys"`
}

// Table2Row is one capsule layer of Table 2.
type Table2Row struct {
	Layer string `json:"layer"`
	N     int    `json:"n"`
	CNM   Value  `json:"cnm"`
	CNS   Value  `json:"cns"`
	CAR   Value  `json:"car"`
	CAS   Value  `json:"cas"`
	CDR   Value  `json:"cdr"`
	CDS   Value  `json:"cds"`
}

// Summarize builds the tables from the reports of one or more models of
// the same architecture, analysed with the same thresholds.
func Summarize(reps []Report) (Tables, error) {
	if len(reps) == 0 {
		return Tables{}, fmt.Errorf("analysis: no report to summarize")
	}
	first := reps[0]
	for i, r := range reps[1:] {
		if len(r.Layers) != len(first.Layers) || r.Thresholds != first.Thresholds {
			return Tables{}, fmt.Errorf("analysis: report %d has %d layers and thresholds %+v, report 0 %d and %+v", i+1, len(r.Layers), r.Thresholds, len(first.Layers), first.Thresholds)
		}
		for l := range r.Layers {
			if r.Layers[l].N != first.Layers[l].N {
				return Tables{}, fmt.Errorf("analysis: report %d layer %d has %d capsules, report 0 %d: not the same architecture", i+1, l, r.Layers[l].N, first.Layers[l].N)
			}
		}
	}
	t := Tables{Models: len(reps), K: first.Layers[0].K, Thresholds: first.Thresholds}
	col := func(f func(Report) float64) Value {
		xs := make([]float64, len(reps))
		for i, r := range reps {
			xs[i] = f(r)
		}
		return summarize(xs)
	}
	for l := range first.Layers {
		L := first.Layers[l]
		t.Table2 = append(t.Table2, Table2Row{Layer: L.Name, N: L.N,
			CNM: col(func(r Report) float64 { return r.Layers[l].CNM }),
			CNS: col(func(r Report) float64 { return r.Layers[l].CNS }),
			CAR: col(func(r Report) float64 { return r.Layers[l].CAR }),
			CAS: col(func(r Report) float64 { return r.Layers[l].CAS }),
			CDR: col(func(r Report) float64 { return r.Layers[l].CDR }),
			CDS: col(func(r Report) float64 { return float64(r.Layers[l].CDS) }),
		})
	}
	for l := range first.Routing {
		R := first.Routing[l]
		t.Table1 = append(t.Table1, Table1Row{From: R.From, To: R.To, NIn: R.NIn, NOut: R.NOut,
			AliveIn:  col(func(r Report) float64 { return float64(r.Routing[l].AliveIn) }),
			AliveOut: col(func(r Report) float64 { return float64(r.Routing[l].AliveOut) }),
			DYR:      col(func(r Report) float64 { return r.Routing[l].DYR }),
			DYS:      col(func(r Report) float64 { return r.Routing[l].DYS }),
		})
	}
	return t, nil
}

// rows returns the two tables as header and cells.
func (t Tables) rows() (h1 []string, r1 [][]string, h2 []string, r2 [][]string) {
	h1 = []string{"routing layer", "capsules alive", "dyr", "dys"}
	for _, r := range t.Table1 {
		r1 = append(r1, []string{r.From + " → " + r.To, fmt.Sprintf("%s/%d → %s/%d", r.AliveIn, r.NIn, r.AliveOut, r.NOut), r.DYR.String(), r.DYS.String()})
	}
	h2 = []string{"capsule layer", "n", "cnm", "cns", "car", "cas", "cdr", "cds"}
	for _, r := range t.Table2 {
		r2 = append(r2, []string{r.Layer, fmt.Sprint(r.N), r.CNM.String(), r.CNS.String(), r.CAR.String(), r.CAS.String(), r.CDR.String(), r.CDS.String()})
	}
	return
}

func (t Tables) caption() string {
	s := fmt.Sprintf("%d image(s)", t.K)
	if t.Models > 1 {
		s += fmt.Sprintf(", mean ± std over %d models", t.Models)
	}
	return fmt.Sprintf("%s; thresholds ε_active = %g, ε₁ = %g, ε₂ = %g", s, t.Thresholds.Active, t.Thresholds.Dead1, t.Thresholds.Dead2)
}

// Legends returns the legends of Table 1 and Table 2: which columns are
// counts, sums, means (over what) and rates, and the thresholds used
// (docs/semantics.md §7), each one line.
func (t Tables) Legends() (table1, table2 string) {
	over := ""
	if t.Models > 1 {
		over = fmt.Sprintf(" Each figure: mean ± std over the %d models.", t.Models)
	}
	th := t.Thresholds
	table1 = fmt.Sprintf("alive: counts of input → output capsules not dead (mean norm over the %d images ≤ ε₁ = %g and std ≤ ε₂ = %g). "+
		"dyr: mean over alive inputs of their couplings' std over the images (1: one output at random per image; –: none alive); dys = n_out·dyr.%s",
		t.K, th.Dead1, th.Dead2, over)
	table2 = fmt.Sprintf("n: count. cns: mean over the %d images of the sum of the layer's norms; cnm = cns/n, the mean norm. "+
		"cas: mean count of capsules with norm ≥ ε_active = %g; car = cas/n, a rate. cds: count of dead capsules (as in Table 1); cdr = cds/n, a rate.%s",
		t.K, th.Active, over)
	return
}

// WriteText prints both tables aligned for a terminal, each with its
// legend (Legends) below, wrapped at 100 columns.
func (t Tables) WriteText(w io.Writer) error {
	return t.write(w, "Table 1: routing\n", "\nTable 2: capsule layers\n", writeAligned, "", Wrap)
}

// WriteMarkdown prints both tables as Markdown, each legend (Legends) a
// paragraph after its table.
func (t Tables) WriteMarkdown(w io.Writer) error {
	return t.write(w, "**Table 1: routing**\n\n", "\n**Table 2: capsule layers**\n\n", writeMarkdown, "\n", func(s string) string { return s })
}

// write prints the caption, then each table after its title with table
// and its legend, formatted by legend, after sep.
func (t Tables) write(w io.Writer, title1, title2 string, table func(*strings.Builder, []string, [][]string), sep string, legend func(string) string) error {
	h1, r1, h2, r2 := t.rows()
	l1, l2 := t.Legends()
	var b strings.Builder
	fmt.Fprintf(&b, "Parse-tree statistics (%s)\n\n%s", t.caption(), title1)
	table(&b, h1, r1)
	b.WriteString(sep + legend(l1) + "\n" + title2)
	table(&b, h2, r2)
	b.WriteString(sep + legend(l2) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Wrap breaks s into lines of at most 100 characters (runes) at spaces,
// for a legend under a terminal table.
func Wrap(s string) string {
	var b strings.Builder
	n := 0
	for i, word := range strings.Fields(s) {
		l := len([]rune(word))
		switch {
		case i == 0:
		case n+1+l > 100:
			b.WriteString("\n")
			n = 0
		default:
			b.WriteString(" ")
			n++
		}
		b.WriteString(word)
		n += l
	}
	return b.String()
}

func writeAligned(b *strings.Builder, head []string, rows [][]string) {
	width := make([]int, len(head))
	for _, r := range append([][]string{head}, rows...) {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	line := func(r []string) {
		for i, c := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			b.WriteString(c + strings.Repeat(" ", width[i]-len([]rune(c))))
		}
		b.WriteString("\n")
	}
	line(head)
	for _, r := range rows {
		line(r)
	}
}

func writeMarkdown(b *strings.Builder, head []string, rows [][]string) {
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|")
	for range head {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
}
