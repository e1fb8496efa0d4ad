package capsnet

import (
	"math"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/kernels"
)

// TestRoutingKindsTable: every kernels routing kind has exactly one entry
// in RoutingKinds, names are distinct and documented, the default (first)
// entry is not a baseline and some entry is.
func TestRoutingKindsTable(t *testing.T) {
	seen := map[kernels.RoutingKind]string{}
	names := map[string]bool{}
	baselines := 0
	for _, k := range RoutingKinds {
		if k.Name == "" || k.Doc == "" {
			t.Errorf("routing kind %+v: no name or doc", k)
		}
		if names[k.Name] {
			t.Errorf("routing kind %q: twice in the table", k.Name)
		}
		names[k.Name] = true
		if prev, ok := seen[k.Kernel]; ok {
			t.Errorf("kernel kind %v: entries %q and %q", k.Kernel, prev, k.Name)
		}
		seen[k.Kernel] = k.Name
		if k.Baseline {
			baselines++
		}
		if k.Kernel.Iterative() != k.Iterative {
			t.Errorf("routing kind %q: Iterative %v, its kernel kind's %v", k.Name, k.Iterative, k.Kernel.Iterative())
		}
	}
	for kk := range kernels.NumRoutingKinds {
		if _, ok := seen[kk]; !ok {
			t.Errorf("kernel routing kind %v has no entry in RoutingKinds", kk)
		}
	}
	if DefaultRouting().Baseline || baselines == 0 {
		t.Errorf("the default kind %q is a baseline, or no kind is (%d baselines)", DefaultRouting().Name, baselines)
	}
	if _, err := LookupRouting("dynamic"); err == nil || !strings.Contains(err.Error(), strings.Join(RoutingNames(), ", ")) {
		t.Errorf("LookupRouting(dynamic): %v, want an error listing the kinds", err)
	}
}

// TestEveryRoutingKindTrains compiles tiny-deep's twin of every routing
// kind (the preset twins are made from the table), runs a training step
// and checks the layout, the parameters and the gradients against the
// kind's entry: the prior is trained (and gets a gradient) exactly when
// the kind has a learned prior.
func TestEveryRoutingKindTrains(t *testing.T) {
	for i := range RoutingKinds {
		kind := &RoutingKinds[i]
		t.Run(kind.Name, func(t *testing.T) {
			name := PresetTwin("tiny-deep", kind.Name)
			cfg, ok := Presets()[name]
			if !ok {
				t.Fatalf("no preset %s", name)
			}
			l, err := cfg.Resolve()
			if err != nil {
				t.Fatal(err)
			}
			for _, cl := range l.Caps {
				if cl.Routing != kind || cl.Route(1).Kind != kind.Kernel || cl.TrainPrior != kind.LearnedPrior {
					t.Errorf("layer %s: routing %q (kernel %v, trained prior %v), want %q", cl.Name, cl.Routing.Name, cl.Route(1).Kind, cl.TrainPrior, kind.Name)
				}
			}
			p, err := l.NewParams()
			if err != nil {
				t.Fatal(err)
			}
			p.Init(1)
			const B = 3
			n, err := NewNet(p, B)
			if err != nil {
				t.Fatal(err)
			}
			x := make([]float32, B*n.InputLen())
			for j := range x {
				x[j] = float32(j%17) / 17
			}
			if err := n.Forward(x, []int{0, 1, 2}); err != nil {
				t.Fatal(err)
			}
			if err := n.Backward(); err != nil {
				t.Fatal(err)
			}
			if _, _, total := n.Loss(); math.IsNaN(total) || total <= 0 {
				t.Errorf("loss %v", total)
			}
			checkKindGrads(t, n, kind)
		})
	}
}

// checkKindGrads checks that every gradient is finite and that the priors'
// gradients are nonzero exactly for a kind with a learned prior.
func checkKindGrads(t *testing.T, n *Net, kind *RoutingKind) {
	t.Helper()
	g := 0
	for _, q := range n.P.List {
		if q.Role == RolePrior && q.Trainable != kind.LearnedPrior {
			t.Errorf("%s: trainable %v", q.Name, q.Trainable)
		}
		grad := n.Grads[g]
		g++
		var sum float64
		for _, v := range grad.Data() {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("%s: gradient %v", q.Name, v)
			}
			sum += math.Abs(float64(v))
		}
		if q.Role == RolePrior && (sum != 0) != kind.LearnedPrior {
			t.Errorf("%s: |gradient| %g under %s routing", q.Name, sum, kind.Name)
		}
	}
}

// TestResolveIters: iters is required by an iterative kind only.
func TestResolveIters(t *testing.T) {
	for _, kind := range RoutingKinds {
		c := Presets()["tiny-deep"]
		for i := range c.Caps {
			c.Caps[i].Routing, c.Caps[i].Iters = kind.Name, 0
		}
		_, err := c.Resolve()
		if (err != nil) != kind.Iterative {
			t.Errorf("%s routing with iters 0: %v", kind.Name, err)
		}
	}
}

// TestLayoutMatchesConfig: the layout's geometry, parameters and loss
// constants are those the config's own accessors report.
func TestLayoutMatchesConfig(t *testing.T) {
	for _, name := range []string{"tiny-sabour", "tiny-deep", "tiny-deep3", "sabour"} {
		c := Presets()[name]
		l, err := c.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Convs) != len(c.Convs) || len(l.Caps) != len(c.Caps) || len(l.Decoder) != len(c.Decoder)+1 {
			t.Fatalf("%s: %d convs, %d capsule layers, %d decoder layers", name, len(l.Convs), len(l.Caps), len(l.Decoder))
		}
		if l.Primary.N != l.Geo.PrimaryN || l.Primary.Maps*l.Primary.HW != l.Primary.N || l.Primary.D != c.PrimaryDim {
			t.Errorf("%s: primary %+v, geometry %d capsules", name, l.Primary, l.Geo.PrimaryN)
		}
		if l.Margin.MPlus != c.Loss.MPlus || l.Margin.MMinus != c.Loss.MMinus || l.Margin.Lambda != c.Loss.Lambda || l.ReconWeight != c.Loss.ReconWeight(l.Geo.Pixels) {
			t.Errorf("%s: margin %+v, recon weight %v", name, l.Margin, l.ReconWeight)
		}
		last := l.Decoder[len(l.Decoder)-1]
		if last.Act != ActSigmoid || last.Out != l.Geo.Pixels || l.Decoder[0].Act != ActReLU {
			t.Errorf("%s: decoder %+v", name, l.Decoder)
		}
		for i, cl := range l.Caps {
			if cl.NIn != l.Geo.CapsIn[i][0] || cl.DIn != l.Geo.CapsIn[i][1] || cl.Out != c.Caps[i].Out || cl.Iters != c.Caps[i].Iters {
				t.Errorf("%s layer %d: %+v", name, i, cl)
			}
		}
	}
}
