package analysis

import (
	"fmt"
	"math"

	"github.com/capstan-ml/capstan/capsnet"
)

// Thresholds are the constants of docs/semantics.md §7, which the paper does not give:
// a capsule is active in an image when its norm is ≥ Active; it is dead in
// a layer when the mean of its norms over the images is ≤ Dead1 and their
// standard deviation is ≤ Dead2. Every report states them.
//
// As JSON the keys are "active", "dead1" and "dead2" (a sweep's result
// file keeps Go's field names: train/sweep).
type Thresholds struct {
	Active float64 `json:"active"`
	Dead1  float64 `json:"dead1"`
	Dead2  float64 `json:"dead2"`
}

// DefaultThresholds returns docs/semantics.md §7's defaults: ε_active = 0.05,
// ε₁ = ε₂ = 0.01.
func DefaultThresholds() Thresholds { return Thresholds{Active: 0.05, Dead1: 0.01, Dead2: 0.01} }

// Validate refuses thresholds that are negative, NaN or infinite.
func (t Thresholds) Validate() error {
	for _, v := range []struct {
		name string
		x    float64
	}{{"active", t.Active}, {"dead mean (ε₁)", t.Dead1}, {"dead std (ε₂)", t.Dead2}} {
		if !(v.x >= 0) || math.IsInf(v.x, 0) {
			return fmt.Errorf("analysis: threshold %s = %v must be a finite number ≥ 0", v.name, v.x)
		}
	}
	return nil
}

// moments is a running mean and sum of squared deviations (Welford).
type moments struct {
	mean, m2 float64
}

func (m *moments) add(x float64, k int) { // k: count including x
	d := x - m.mean
	m.mean += d / float64(k)
	m.m2 += d * (x - m.mean)
}

func (m moments) std(k int) float64 {
	if k == 0 {
		return 0
	}
	return math.Sqrt(max(m.m2, 0) / float64(k))
}

// layerAcc accumulates one capsule layer.
type layerAcc struct {
	info   capsnet.LayerInfo
	k      int
	norm   []moments // per capsule
	active int64     // active (capsule, image) pairs
}

// routeAcc accumulates the couplings into one routing layer.
type routeAcc struct {
	nIn, nOut int
	k         int
	c         []moments // [i·nOut + j]
}

// Stats accumulates the statistics of a model's capsule layers over a
// stream of images (see the package doc). Add batches with AddNet (or
// AddCapsules and AddCouplings), then read Report. The zero value is not
// usable: call New.
type Stats struct {
	th     Thresholds
	layers []layerAcc
	routes []routeAcc // routes[l-1]: couplings from layer l-1 into layer l
}

// New returns empty statistics for capsule layers of these shapes (layer
// 0 the primary capsules, as capsnet.Net.Layers gives them) and
// thresholds.
func New(layers []capsnet.LayerInfo, th Thresholds) (*Stats, error) {
	if err := th.Validate(); err != nil {
		return nil, err
	}
	if len(layers) == 0 {
		return nil, fmt.Errorf("analysis: no capsule layer")
	}
	s := &Stats{th: th}
	for l, li := range layers {
		if li.N <= 0 || li.D <= 0 {
			return nil, fmt.Errorf("analysis: layer %d (%s) of %d capsules of dimension %d", l, li.Name, li.N, li.D)
		}
		s.layers = append(s.layers, layerAcc{info: li, norm: make([]moments, li.N)})
		if l > 0 {
			nIn := layers[l-1].N
			s.routes = append(s.routes, routeAcc{nIn: nIn, nOut: li.N, c: make([]moments, nIn*li.N)})
		}
	}
	return s, nil
}

// Thresholds returns the thresholds in use.
func (s *Stats) Thresholds() Thresholds { return s.th }

// AddNet adds the first n samples of the last Forward of net (n ≤ its
// batch: a last, partial batch passes its valid count): every layer's
// capsules and every routing layer's couplings, read through the Net's
// accessors.
func (s *Stats) AddNet(net *capsnet.Net, n int) error {
	for l := range s.layers {
		v, shape, err := net.Capsules(l)
		if err != nil {
			return err
		}
		if err := s.AddCapsules(l, v, shape, n); err != nil {
			return err
		}
		if l > 0 {
			c, cs, err := net.Couplings(l)
			if err != nil {
				return err
			}
			if err := s.AddCouplings(l, c, cs, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// AddCapsules adds the first n samples of layer l's capsules v, in the
// layout of shape (capsnet.CapsShape): one norm per capsule and image.
func (s *Stats) AddCapsules(l int, v []float32, shape capsnet.CapsShape, n int) error {
	if l < 0 || l >= len(s.layers) {
		return fmt.Errorf("analysis: layer %d of %d", l, len(s.layers))
	}
	L := &s.layers[l]
	if shape.N != L.info.N || shape.D != L.info.D || n < 0 || n > shape.B || len(v) < shape.B*shape.N*shape.D {
		return fmt.Errorf("analysis: layer %d (%s): capsules of %d×%d×%d (%d values, %d used), want %d×%d", l, L.info.Name, shape.B, shape.N, shape.D, len(v), n, L.info.N, L.info.D)
	}
	for b := 0; b < n; b++ {
		L.k++
		for i := 0; i < shape.N; i++ {
			var sq float64
			for d := 0; d < shape.D; d++ {
				x := float64(v[(b*shape.D+d)*shape.N+i])
				sq += x * x
			}
			norm := math.Sqrt(sq)
			L.norm[i].add(norm, L.k)
			if norm >= s.th.Active {
				L.active++
			}
		}
	}
	return nil
}

// AddCouplings adds the first n samples of the couplings into layer l ≥ 1
// (from layer l−1), in the layout of shape (capsnet.CouplingShape).
func (s *Stats) AddCouplings(l int, c []float32, shape capsnet.CouplingShape, n int) error {
	if l < 1 || l >= len(s.layers) {
		return fmt.Errorf("analysis: routing layer %d: want 1..%d", l, len(s.layers)-1)
	}
	R := &s.routes[l-1]
	if shape.NIn != R.nIn || shape.NOut != R.nOut || n < 0 || n > shape.B || len(c) < shape.B*shape.NIn*shape.NOut {
		return fmt.Errorf("analysis: routing layer %d: couplings of %d×%d×%d (%d values, %d used), want %d×%d", l, shape.B, shape.NIn, shape.NOut, len(c), n, R.nIn, R.nOut)
	}
	for b := 0; b < n; b++ {
		R.k++
		for j := 0; j < shape.NOut; j++ {
			row := c[(b*shape.NOut+j)*shape.NIn:]
			for i := 0; i < shape.NIn; i++ {
				R.c[i*R.nOut+j].add(float64(row[i]), R.k)
			}
		}
	}
	return nil
}

// LayerReport holds the statistics of one capsule layer (docs/semantics.md §7) over K
// images.
type LayerReport struct {
	Name string
	N, D int
	K    int
	// CNS is the mean over images of the sum of the layer's capsule norms,
	// CNM = CNS / N.
	CNS, CNM float64
	// CAS is the mean over images of the count of active capsules, CAR =
	// CAS / N.
	CAS, CAR float64
	// CDS is the count of dead capsules, CDR = CDS / N.
	CDS int
	CDR float64
	// NormMean and NormStd are each capsule's norm mean and population
	// standard deviation over the images; Dead marks the dead capsules.
	NormMean, NormStd []float64
	Dead              []bool
}

// RoutingReport holds the routing statistics of the couplings from layer
// From into layer To = From+1 over K images.
type RoutingReport struct {
	From, To          string
	K                 int
	NIn, NOut         int
	AliveIn, AliveOut int
	// DYR and DYS are the means over the alive input capsules of dyr(u)
	// and dys(u) = NOut·dyr(u); NaN when no input capsule is alive.
	DYR, DYS float64
	// CouplingMean and CouplingStd are the mean and population standard
	// deviation over the images of every coupling c[i,j], at i·NOut + j.
	CouplingMean, CouplingStd []float64
}

// Report holds every statistic and the thresholds used.
type Report struct {
	Thresholds Thresholds
	Layers     []LayerReport
	Routing    []RoutingReport
}

// Report computes the statistics of the images added so far. It can be
// called at any time; adding more images afterwards is allowed.
func (s *Stats) Report() Report {
	rep := Report{Thresholds: s.th}
	for _, L := range s.layers {
		lr := LayerReport{Name: L.info.Name, N: L.info.N, D: L.info.D, K: L.k,
			NormMean: make([]float64, L.info.N), NormStd: make([]float64, L.info.N), Dead: make([]bool, L.info.N)}
		for i, m := range L.norm {
			lr.NormMean[i], lr.NormStd[i] = m.mean, m.std(L.k)
			lr.CNS += m.mean
			if L.k > 0 && lr.NormMean[i] <= s.th.Dead1 && lr.NormStd[i] <= s.th.Dead2 {
				lr.Dead[i] = true
				lr.CDS++
			}
		}
		if L.k > 0 {
			lr.CAS = float64(L.active) / float64(L.k)
		}
		n := float64(L.info.N)
		lr.CNM, lr.CAR, lr.CDR = lr.CNS/n, lr.CAS/n, float64(lr.CDS)/n
		rep.Layers = append(rep.Layers, lr)
	}
	for r, R := range s.routes {
		in, out := rep.Layers[r], rep.Layers[r+1]
		rr := RoutingReport{From: in.Name, To: out.Name, K: R.k, NIn: R.nIn, NOut: R.nOut,
			AliveIn: in.N - in.CDS, AliveOut: out.N - out.CDS,
			CouplingMean: make([]float64, len(R.c)), CouplingStd: make([]float64, len(R.c))}
		for x, m := range R.c {
			rr.CouplingMean[x], rr.CouplingStd[x] = m.mean, m.std(R.k)
		}
		// std(pr_n): the population std of a one-hot choice among n_out
		// outputs made uniformly at random, the most a coupling can vary
		// when the choice follows the image.
		prStd := math.Sqrt((1 - 1/float64(R.nOut)) / float64(R.nOut))
		var sum float64
		alive := 0
		for i := 0; i < R.nIn; i++ {
			if in.Dead[i] {
				continue
			}
			var d float64
			for j := 0; j < R.nOut; j++ {
				d += rr.CouplingStd[i*R.nOut+j]
			}
			if prStd > 0 {
				d /= float64(R.nOut) * prStd
			} else { // a single output capsule: its coupling is always 1
				d = 0
			}
			sum += d
			alive++
		}
		rr.DYR = math.NaN()
		if alive > 0 {
			rr.DYR = sum / float64(alive)
		}
		rr.DYS = float64(R.nOut) * rr.DYR
		rep.Routing = append(rep.Routing, rr)
	}
	return rep
}
