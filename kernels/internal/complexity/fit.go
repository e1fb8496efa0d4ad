package complexity

import (
	"fmt"
	"math"
	"strings"
)

// KindOrder and PassOrder are the kinds and passes of BenchmarkCapsLayer
// in the order the tables list them.
var (
	KindOrder = []string{"rba-r3", "rba-r10", "uniform", "self-attention", "self-attention-in", "votes"}
	PassOrder = []string{"fwd", "fwdbwd", "routing-fwd", "routing-fwdbwd"}
)

// Fit is a least-squares line log y = Slope·log x + Intercept over Points
// points.
type Fit struct {
	Slope, Intercept float64
	Points           int
}

// FitLogLog fits log y against log x by least squares. It needs at least
// two points, two distinct x, and every x and y finite and positive.
func FitLogLog(xs, ys []float64) (Fit, error) {
	if len(xs) != len(ys) {
		return Fit{}, fmt.Errorf("complexity: fit: %d x and %d y", len(xs), len(ys))
	}
	if len(xs) < 2 {
		return Fit{}, fmt.Errorf("complexity: fit: %d points, want at least 2", len(xs))
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		if !(xs[i] > 0 && ys[i] > 0) || math.IsInf(xs[i], 0) || math.IsInf(ys[i], 0) {
			return Fit{}, fmt.Errorf("complexity: fit: point (%g, %g) is not finite and positive", xs[i], ys[i])
		}
		lx, ly := math.Log(xs[i]), math.Log(ys[i])
		sx, sy, sxx, sxy = sx+lx, sy+ly, sxx+lx*lx, sxy+lx*ly
	}
	n := float64(len(xs))
	den := n*sxx - sx*sx
	if den <= 1e-12*n*sxx {
		return Fit{}, fmt.Errorf("complexity: fit: all x equal")
	}
	slope := (n*sxy - sx*sy) / den
	return Fit{Slope: slope, Intercept: (sy - slope*sx) / n, Points: len(xs)}, nil
}

// SlopeN fits the median of unit of kind and pass against n at fixed d,
// over the n >= minN that were measured.
func (rs *Results) SlopeN(kind, pass, unit string, d, minN int) (Fit, error) {
	_, _, ns, _ := rs.Axes()
	var xs, ys []float64
	for _, n := range ns {
		if v, ok := rs.Value(Key{kind, n, d, pass}, unit); ok && n >= minN {
			xs, ys = append(xs, float64(n)), append(ys, v)
		}
	}
	f, err := FitLogLog(xs, ys)
	if err != nil {
		return f, fmt.Errorf("%s in n of kind=%s pass=%s d=%d: %w", unit, kind, pass, d, err)
	}
	return f, nil
}

// SlopeD fits the median of unit of kind and pass against d at fixed n,
// over the d >= minD that were measured.
func (rs *Results) SlopeD(kind, pass, unit string, n, minD int) (Fit, error) {
	_, _, _, ds := rs.Axes()
	var xs, ys []float64
	for _, d := range ds {
		if v, ok := rs.Value(Key{kind, n, d, pass}, unit); ok && d >= minD {
			xs, ys = append(xs, float64(d)), append(ys, v)
		}
	}
	f, err := FitLogLog(xs, ys)
	if err != nil {
		return f, fmt.Errorf("%s in d of kind=%s pass=%s n=%d: %w", unit, kind, pass, n, err)
	}
	return f, nil
}

// Exponents is a pair of expected exponents, in n and in d, as text
// ("2", "0–1", "—" when there is no claim).
type Exponents struct{ N, D string }

// PaperTime and PaperMemory are the paper's Table 3 claims, as exponents
// of n and d: routing by agreement O(n²d²) time and space, self-attention
// O(n²d + nd²) time (n² from the n²d term, d² from nd²) and O(d²) space.
// Uniform routing and the votes alone are not in the table.
func PaperTime(kind string) Exponents {
	switch kindFamily(kind) {
	case "rba":
		return Exponents{"2", "2"}
	case "attention":
		return Exponents{"2 (n²d)", "2 (nd²)"}
	}
	return Exponents{"—", "—"}
}

// PaperMemory: see PaperTime.
func PaperMemory(kind string) Exponents {
	switch kindFamily(kind) {
	case "rba":
		return Exponents{"2", "2"}
	case "attention":
		return Exponents{"0", "2"}
	}
	return Exponents{"—", "—"}
}

// CapstanTime is the exponents that Capstan's kernels' operation counts
// give for a pass: the votes are n·n·d·d multiply-adds per sample (so are
// their two gradients), every routing pass over the votes n·n·d (r of them
// forward for routing by agreement, one for uniform routing and about
// three for self-attention).
func CapstanTime(kind, pass string) Exponents {
	if kind == "votes" || pass == "fwd" || pass == "fwdbwd" {
		return Exponents{"2", "2"}
	}
	return Exponents{"2", "1"}
}

// CapstanMemory is the exponents of Capstan's parameter count (W, n·n·d·d,
// and the n·n prior) and of its activations: per sample the votes (n·n·d),
// the couplings and, for routing by agreement, r records of n·n couplings
// and 2·d·n capsule values, so that in d it is 1 only once d dominates r.
func CapstanMemory(kind, unit string) Exponents {
	if unit == "param-bytes" {
		return Exponents{"2", "2"}
	}
	if kindFamily(kind) == "rba" {
		return Exponents{"2", "0–1"}
	}
	return Exponents{"2", "1"}
}

// kindFamily is "rba" for routing by agreement (rba-rN), "attention" for
// the self-attention kinds, else kind.
func kindFamily(kind string) string {
	switch {
	case strings.HasPrefix(kind, "rba-r"):
		return "rba"
	case strings.HasPrefix(kind, "self-attention"):
		return "attention"
	}
	return kind
}
