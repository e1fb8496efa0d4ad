package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/capstan-ml/capstan/capsnet/analysis"
	"github.com/capstan-ml/capstan/capsnet/atomicfile"
)

// NullFloat is a float64 that JSON holds as null when it is NaN (which
// encoding/json refuses to write) and reads back from null as NaN.
type NullFloat float64

// MarshalJSON writes null for NaN, the number otherwise (±Inf are
// refused, as by encoding/json).
func (f NullFloat) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}

// UnmarshalJSON reads null as NaN.
func (f *NullFloat) UnmarshalJSON(b []byte) error {
	if string(bytes.TrimSpace(b)) == "null" {
		*f = NullFloat(math.NaN())
		return nil
	}
	var x float64
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	*f = NullFloat(x)
	return nil
}

// routingJSON is an analysis.RoutingReport whose DYR and DYS (NaN when no
// input capsule is alive) shadow the embedded ones as NullFloat.
type routingJSON struct {
	analysis.RoutingReport
	DYR, DYS NullFloat
}

// reportJSON is an analysis.Report as a result file holds it: Go's
// field names throughout, the thresholds' too (Thresholds shadows the
// embedded one, whose JSON keys are snake_case).
type reportJSON struct {
	analysis.Report
	Thresholds struct{ Active, Dead1, Dead2 float64 }
	Routing    []routingJSON
}

func toReportJSON(r *analysis.Report) *reportJSON {
	if r == nil {
		return nil
	}
	out := &reportJSON{Report: *r, Routing: make([]routingJSON, len(r.Routing))}
	out.Report.Routing = nil
	out.Thresholds.Active, out.Thresholds.Dead1, out.Thresholds.Dead2 = r.Thresholds.Active, r.Thresholds.Dead1, r.Thresholds.Dead2
	for i, rr := range r.Routing {
		out.Routing[i] = routingJSON{rr, NullFloat(rr.DYR), NullFloat(rr.DYS)}
	}
	return out
}

func (r *reportJSON) report() *analysis.Report {
	if r == nil {
		return nil
	}
	out := r.Report
	out.Thresholds = analysis.Thresholds{Active: r.Thresholds.Active, Dead1: r.Thresholds.Dead1, Dead2: r.Thresholds.Dead2}
	out.Routing = make([]analysis.RoutingReport, len(r.Routing))
	for i, rr := range r.Routing {
		out.Routing[i] = rr.RoutingReport
		out.Routing[i].DYR, out.Routing[i].DYS = float64(rr.DYR), float64(rr.DYS)
	}
	return &out
}

// resultAlias has Result's fields without its JSON methods.
type resultAlias Result

// resultJSON is a Result whose Analysis shadows the embedded one.
type resultJSON struct {
	*resultAlias
	Analysis *reportJSON `json:"analysis,omitempty"`
}

// MarshalJSON writes the result with its analysis' NaN statistics as
// null.
func (r Result) MarshalJSON() ([]byte, error) {
	return json.Marshal(resultJSON{(*resultAlias)(&r), toReportJSON(r.Analysis)})
}

// UnmarshalJSON reads a result, its analysis' null statistics as NaN.
func (r *Result) UnmarshalJSON(b []byte) error {
	aux := resultJSON{resultAlias: (*resultAlias)(r)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	r.Analysis = aux.Analysis.report()
	return nil
}

// maxResultFile bounds a result file (the paper's largest model's analysis
// holds 64×64 couplings per layer: well under 1 MiB).
const maxResultFile = 64 << 20

// WriteResult writes a result file atomically (temporary file, fsync,
// rename), creating its directory.
func WriteResult(path string, r Result) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("result %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("result: %w", err)
	}
	err = atomicfile.Write(path, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
	if err != nil {
		return fmt.Errorf("result: %w", err)
	}
	return nil
}

// ReadResult reads a result file (at most 64 MiB, nested at most
// maxResultDepth deep).
func ReadResult(path string) (Result, error) {
	b, err := readBounded(path, "result", maxResultFile)
	if err != nil {
		return Result{}, err
	}
	if err := checkNesting(b); err != nil {
		return Result{}, fmt.Errorf("result %s: %w", path, err)
	}
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return Result{}, fmt.Errorf("result %s: %v", path, err)
	}
	if r.Status != "done" && r.Status != "failed" {
		return Result{}, fmt.Errorf("result %s: field status: %q: want done or failed", path, trunc(r.Status))
	}
	return r, nil
}

// maxResultDepth bounds the nesting of a result file's JSON (arrays and
// objects): a real result nests 6 deep (result, analysis, layers, a
// layer, its coupling rows, a row).
const maxResultDepth = 64

// checkNesting refuses JSON text nested deeper than maxResultDepth, or
// closing more than it opens, before anything decodes it: one linear
// pass over b (docs/reliability.md).
func checkNesting(b []byte) error { return checkNestingDepth(b, maxResultDepth) }

// checkNestingDepth is checkNesting with the bound max. Brackets and
// braces inside strings are skipped; whether they match in kind is left
// to encoding/json, which then decodes text of bounded depth in linear
// time.
func checkNestingDepth(b []byte, max int) error {
	depth := 0
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = stringEnd(b, i+1)
		case '[', '{':
			if depth++; depth > max {
				return fmt.Errorf("nested more than %d deep at byte %d", max, i)
			}
		case ']', '}':
			if depth--; depth < 0 {
				return fmt.Errorf("unbalanced %q at byte %d", b[i], i)
			}
		}
	}
	return nil
}

// stringEnd returns the index of the quote closing the JSON string whose
// text starts at b[i], or len(b) when it is not closed.
func stringEnd(b []byte, i int) int {
	for i < len(b) {
		k := bytes.IndexAny(b[i:], "\"\\")
		if k < 0 {
			return len(b)
		}
		if b[i+k] == '"' {
			return i + k
		}
		i += k + 2 // an escape and the byte it escapes
	}
	return len(b)
}
