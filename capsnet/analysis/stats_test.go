package analysis

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
)

// caps builds capsules in the Net's layout from norms: capsule i of sample
// b is the vector (norm, 0, …, 0) of dimension d.
func caps(norms [][]float64, d int) ([]float32, capsnet.CapsShape) {
	sh := capsnet.CapsShape{B: len(norms), N: len(norms[0]), D: d}
	v := make([]float32, sh.B*sh.N*sh.D)
	for b, row := range norms {
		for i, x := range row {
			v[(b*sh.D+0)*sh.N+i] = float32(x)
		}
	}
	return v, sh
}

// couplings builds couplings in the Net's layout from c[b][i][j].
func couplings(c [][][]float64) ([]float32, capsnet.CouplingShape) {
	sh := capsnet.CouplingShape{B: len(c), NIn: len(c[0]), NOut: len(c[0][0])}
	out := make([]float32, sh.B*sh.NIn*sh.NOut)
	for b := range c {
		for i := range c[b] {
			for j, x := range c[b][i] {
				out[(b*sh.NOut+j)*sh.NIn+i] = float32(x)
			}
		}
	}
	return out, sh
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

// twoLayers is a model of 2 input capsules routed to 4 output capsules.
var twoLayers = []capsnet.LayerInfo{{Name: "in", N: 2, D: 3}, {Name: "out", N: 4, D: 2}}

func mustNew(t *testing.T, layers []capsnet.LayerInfo, th Thresholds) *Stats {
	t.Helper()
	s, err := New(layers, th)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func add(t *testing.T, s *Stats, in, out [][]float64, c [][][]float64) {
	t.Helper()
	v, sh := caps(in, 3)
	if err := s.AddCapsules(0, v, sh, sh.B); err != nil {
		t.Fatal(err)
	}
	v, sh = caps(out, 2)
	if err := s.AddCapsules(1, v, sh, sh.B); err != nil {
		t.Fatal(err)
	}
	cc, cs := couplings(c)
	if err := s.AddCouplings(1, cc, cs, cs.B); err != nil {
		t.Fatal(err)
	}
}

// TestPerfectAndUniformRouting: couplings one-hot on an output that
// follows the image, each output equally often, give dyr = 1 and dys =
// n_out; constant uniform couplings give 0.
func TestPerfectAndUniformRouting(t *testing.T) {
	for _, tc := range []struct {
		name     string
		coupling func(b, i, j int) float64
		want     float64
	}{
		{"perfect", func(b, i, j int) float64 {
			if j == (b+i)%4 {
				return 1
			}
			return 0
		}, 1},
		{"uniform", func(b, i, j int) float64 { return 0.25 }, 0},
	} {
		s := mustNew(t, twoLayers, DefaultThresholds())
		var in, out [][]float64
		var c [][][]float64
		for b := 0; b < 8; b++ {
			in = append(in, []float64{0.5, 0.75})
			out = append(out, []float64{0.5, 0.5, 0.5, 0.5})
			c = append(c, [][]float64{make([]float64, 4), make([]float64, 4)})
			for i := 0; i < 2; i++ {
				for j := 0; j < 4; j++ {
					c[b][i][j] = tc.coupling(b, i, j)
				}
			}
		}
		add(t, s, in, out, c)
		r := s.Report().Routing[0]
		if !near(r.DYR, tc.want) || !near(r.DYS, 4*tc.want) || r.AliveIn != 2 || r.AliveOut != 4 || r.K != 8 {
			t.Errorf("%s routing: dyr %v dys %v, alive %d → %d, k %d; want dyr %v dys %v, 2 → 4, 8", tc.name, r.DYR, r.DYS, r.AliveIn, r.AliveOut, r.K, tc.want, 4*tc.want)
		}
	}
}

// TestDeadAndActiveCapsules: hand-computed cnm, cns, car, cas, cdr, cds
// with a dead capsule (always 0), an always-active one and one in
// between; the dead input capsule is left out of dyr.
func TestDeadAndActiveCapsules(t *testing.T) {
	s := mustNew(t, twoLayers, DefaultThresholds())
	// Input capsule 0 alive (norm 1, 0.5, 1, 0.5), capsule 1 dead (0).
	in := [][]float64{{1, 0}, {0.5, 0}, {1, 0}, {0.5, 0}}
	// Output: 0 always active (1), 1 dead (0), 2 active in half the
	// images (0.5 / 0.0), 3 always 0.04 (below ε_active, std 0 but mean
	// above ε₁: neither active nor dead).
	out := [][]float64{{1, 0, 0.5, 0.04}, {1, 0, 0, 0.04}, {1, 0, 0.5, 0.04}, {1, 0, 0, 0.04}}
	// Couplings of input 0 perfect over outputs 0..3 by image; of the dead
	// input 1 random (must not count).
	rng := rand.New(rand.NewPCG(1, 2))
	var c [][][]float64
	for b := 0; b < 4; b++ {
		row0 := make([]float64, 4)
		row0[b] = 1
		row1 := []float64{rng.Float64(), rng.Float64(), rng.Float64(), rng.Float64()}
		c = append(c, [][]float64{row0, row1})
	}
	add(t, s, in, out, c)
	rep := s.Report()
	L0, L1, R := rep.Layers[0], rep.Layers[1], rep.Routing[0]
	// Layer "in": norms sum per image 1, 0.5, 1, 0.5 → cns 0.75, cnm 0.375;
	// active per image 1 → cas 1, car 0.5; dead 1 → cds 1, cdr 0.5.
	check := func(name string, got, want float64) {
		t.Helper()
		if !near(got, want) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("in cns", L0.CNS, 0.75)
	check("in cnm", L0.CNM, 0.375)
	check("in cas", L0.CAS, 1)
	check("in car", L0.CAR, 0.5)
	check("in cdr", L0.CDR, 0.5)
	if L0.CDS != 1 || !L0.Dead[1] || L0.Dead[0] {
		t.Errorf("in: dead %v (cds %d), want capsule 1 only", L0.Dead, L0.CDS)
	}
	check("in norm std of capsule 0", L0.NormStd[0], 0.25)
	// Layer "out": sums 1.54, 1.04, 1.54, 1.04 → cns 1.29; active counts
	// 2, 1, 2, 1 → cas 1.5; dead: capsule 1.
	check("out cns", L1.CNS, float64(float32(0.04))+1.25) // 0.04 is stored as float32
	check("out cnm", L1.CNM, (float64(float32(0.04))+1.25)/4)
	check("out cas", L1.CAS, 1.5)
	check("out car", L1.CAR, 0.375)
	if L1.CDS != 1 || !L1.Dead[1] {
		t.Errorf("out: dead %v, want capsule 1 only", L1.Dead)
	}
	if R.AliveIn != 1 || R.AliveOut != 3 {
		t.Errorf("alive %d → %d, want 1 → 3", R.AliveIn, R.AliveOut)
	}
	check("dyr over the alive input capsule", R.DYR, 1)
	check("coupling mean c[0,2]", R.CouplingMean[0*4+2], 0.25)
}

// TestOneImageAndBoundaries: k = 1 (every std 0) and norms exactly at the
// thresholds: active is ≥ ε_active, dead is mean ≤ ε₁ and std ≤ ε₂.
func TestOneImageAndBoundaries(t *testing.T) {
	th := Thresholds{Active: 0.5, Dead1: 0.25, Dead2: 0}
	s := mustNew(t, twoLayers, th)
	in := [][]float64{{0.5, 0.25}}
	out := [][]float64{{0.5, 0.25, 0.2500001, 0.125}}
	c := [][][]float64{{{1, 0, 0, 0}, {0.25, 0.25, 0.25, 0.25}}}
	add(t, s, in, out, c)
	rep := s.Report()
	if got := rep.Layers[0].CAS; got != 1 {
		t.Errorf("norm exactly ε_active: cas %v, want 1 (active is ≥)", got)
	}
	if d := rep.Layers[1].Dead; !d[1] || d[2] || !d[3] || d[0] {
		t.Errorf("dead at the boundary: %v, want [false true false true]", d)
	}
	if r := rep.Routing[0]; r.DYR != 0 || r.AliveIn != 1 || r.AliveOut != 2 {
		t.Errorf("k = 1: dyr %v, alive %d → %d; want 0 (no variation), 1 → 2", r.DYR, r.AliveIn, r.AliveOut)
	}
	if rep.Thresholds != th {
		t.Errorf("report thresholds %+v, want %+v", rep.Thresholds, th)
	}
}

// TestNoAliveInput: dyr is NaN, not 0, when every input capsule is dead.
func TestNoAliveInput(t *testing.T) {
	s := mustNew(t, twoLayers, DefaultThresholds())
	add(t, s, [][]float64{{0, 0}, {0, 0}}, [][]float64{{1, 1, 1, 1}, {1, 1, 1, 1}},
		[][][]float64{{{1, 0, 0, 0}, {1, 0, 0, 0}}, {{0, 1, 0, 0}, {0, 1, 0, 0}}})
	if r := s.Report().Routing[0]; !math.IsNaN(r.DYR) || r.AliveIn != 0 {
		t.Errorf("no alive input: dyr %v, alive in %d", r.DYR, r.AliveIn)
	}
}

// reference computes the statistics of all images at once, two-pass, as
// docs/semantics.md §7 writes them.
func reference(norms [][][]float64, c [][][]float64, th Thresholds) (cns, cas []float64, dead [][]bool, dyr float64) {
	for _, layer := range norms { // layer[b][i]
		k, n := len(layer), len(layer[0])
		var sum, act float64
		dl := make([]bool, n)
		for i := 0; i < n; i++ {
			var m float64
			for b := 0; b < k; b++ {
				m += layer[b][i]
				if layer[b][i] >= th.Active {
					act++
				}
			}
			m /= float64(k)
			var v float64
			for b := 0; b < k; b++ {
				v += (layer[b][i] - m) * (layer[b][i] - m)
			}
			sum += m
			dl[i] = m <= th.Dead1 && math.Sqrt(v/float64(k)) <= th.Dead2
		}
		cns, cas, dead = append(cns, sum), append(cas, act/float64(k)), append(dead, dl)
	}
	k, nIn, nOut := len(c), len(c[0]), len(c[0][0])
	pr := math.Sqrt((1 - 1/float64(nOut)) / float64(nOut))
	alive := 0
	for i := 0; i < nIn; i++ {
		if dead[0][i] {
			continue
		}
		alive++
		var d float64
		for j := 0; j < nOut; j++ {
			var m, v float64
			for b := 0; b < k; b++ {
				m += c[b][i][j]
			}
			m /= float64(k)
			for b := 0; b < k; b++ {
				v += (c[b][i][j] - m) * (c[b][i][j] - m)
			}
			d += math.Sqrt(v / float64(k))
		}
		dyr += d / (float64(nOut) * pr)
	}
	return cns, cas, dead, dyr / float64(alive)
}

// TestStreamingEqualsOneShot: random norms and couplings added in batches
// of 3, 5, 1 and 7 give what one batch of 16 and the two-pass reference
// give (to 1e-12: Welford's running moments against two passes).
func TestStreamingEqualsOneShot(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	layers := []capsnet.LayerInfo{{Name: "primary", N: 6, D: 3}, {Name: "caps", N: 5, D: 2}}
	const k = 16
	norms := [][][]float64{make([][]float64, k), make([][]float64, k)}
	c := make([][][]float64, k)
	for b := 0; b < k; b++ {
		for l, li := range layers {
			norms[l][b] = make([]float64, li.N)
			for i := range norms[l][b] {
				x := rng.Float64()
				if i == 0 { // a dead capsule
					x = 0
				}
				norms[l][b][i] = float64(float32(x))
			}
		}
		c[b] = make([][]float64, 6)
		for i := range c[b] {
			c[b][i] = make([]float64, 5)
			var sum float64
			for j := range c[b][i] {
				c[b][i][j] = rng.Float64()
				sum += c[b][i][j]
			}
			for j := range c[b][i] {
				c[b][i][j] = float64(float32(c[b][i][j] / sum))
			}
		}
	}
	th := DefaultThresholds()
	addRange := func(s *Stats, lo, hi int) {
		v, sh := caps(norms[0][lo:hi], 3)
		s.AddCapsules(0, v, sh, sh.B)
		v, sh = caps(norms[1][lo:hi], 2)
		s.AddCapsules(1, v, sh, sh.B)
		cc, cs := couplings(c[lo:hi])
		s.AddCouplings(1, cc, cs, cs.B)
	}
	one, stream := mustNew(t, layers, th), mustNew(t, layers, th)
	addRange(one, 0, k)
	lo := 0
	for _, n := range []int{3, 5, 1, 7} {
		addRange(stream, lo, lo+n)
		lo += n
	}
	cns, cas, dead, dyr := reference(norms, c, th)
	for name, rep := range map[string]Report{"one batch": one.Report(), "streamed": stream.Report()} {
		for l := range layers {
			L := rep.Layers[l]
			if !near(L.CNS, cns[l]) || !near(L.CAS, cas[l]) || L.K != k {
				t.Errorf("%s layer %d: cns %v cas %v k %d, want %v %v %d", name, l, L.CNS, L.CAS, L.K, cns[l], cas[l], k)
			}
			for i := range dead[l] {
				if L.Dead[i] != dead[l][i] {
					t.Errorf("%s layer %d capsule %d: dead %v, want %v", name, l, i, L.Dead[i], dead[l][i])
				}
			}
		}
		if r := rep.Routing[0]; !near(r.DYR, dyr) || r.AliveIn != 5 {
			t.Errorf("%s: dyr %v, alive in %d; want %v, 5", name, r.DYR, r.AliveIn, dyr)
		}
	}
}

// TestBadInput: shapes that do not match, counts beyond the batch and bad
// thresholds are errors.
func TestBadInput(t *testing.T) {
	if _, err := New(twoLayers, Thresholds{Active: math.NaN()}); err == nil {
		t.Error("NaN threshold accepted")
	}
	if _, err := New(nil, DefaultThresholds()); err == nil {
		t.Error("no layers accepted")
	}
	s := mustNew(t, twoLayers, DefaultThresholds())
	v, sh := caps([][]float64{{1, 1}}, 3)
	if err := s.AddCapsules(0, v, sh, 2); err == nil {
		t.Error("n beyond the batch accepted")
	}
	if err := s.AddCapsules(1, v, sh, 1); err == nil {
		t.Error("capsules of another layer's shape accepted")
	}
	cc, cs := couplings([][][]float64{{{1, 0, 0, 0}, {1, 0, 0, 0}}})
	if err := s.AddCouplings(0, cc, cs, 1); err == nil {
		t.Error("couplings into layer 0 accepted")
	}
}
