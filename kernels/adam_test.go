package kernels

import (
	"fmt"
	"math"
	"math/rand"
	randv2 "math/rand/v2"
	"testing"
)

// adamBufs returns w, g, m, v of n values each at offset off into their
// own buffers (so the kernels see unaligned starts), with values of the
// magnitudes training sees: w and g in (−1, 1), m in (−0.1, 0.1), v in
// [0, 0.01).
func adamBufs(rng *rand.Rand, n, off int) (w, g, m, v []float32) {
	mk := func(scale float32, signed bool) []float32 {
		b := make([]float32, off+n+3)
		for i := range b {
			x := rng.Float32()
			if signed {
				x = 2*x - 1
			}
			b[i] = scale * x
		}
		return b[off : off+n]
	}
	return mk(1, true), mk(1, true), mk(0.1, true), mk(0.01, false)
}

// adamClose reports whether got may stand for want: the same bits (any
// two NaNs: their payloads depend on which operand an instruction takes
// first, which Go's register allocation does not fix), or, when the
// reference fuses (adamRefExact false), within 4 ulp of want plus 1e-7.
// One rounding fewer in b1·m + c1·gi moves m by at most an ulp of its
// terms (≤ 0.2 here, ulp 1.5e-8), which cancellation can make many ulp of
// a small m: hence the absolute term; w and v move by an ulp or two.
// (Under qemu, arm64 gave m = -0.0017172582 against the fused reference's
// -0.0017172598.)
func adamClose(got, want float32) bool {
	if math.Float32bits(got) == math.Float32bits(want) || (got != got && want != want) {
		return true
	}
	if adamRefExact {
		return false
	}
	return math.Abs(float64(got)-float64(want)) <= 2.4e-7*math.Abs(float64(want))+1e-7
}

// TestAdamStepImpls: every implementation's AdamStep and AdamStepSum equal
// adamStepRef (bit for bit on amd64, see adamClose) on lengths 0..70 and
// some longer ones with every tail, at odd offsets, in both forms, with one
// gradient and with two, and at several steps, and leave g (and h)
// unchanged.
func TestAdamStepImpls(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl string) {
		rng := rand.New(rand.NewSource(26))
		lens := []int{}
		for n := 0; n <= 70; n++ {
			lens = append(lens, n)
		}
		for i := 0; i < 12; i++ {
			lens = append(lens, 1000+rng.Intn(200))
		}
		for _, n := range lens {
			for _, sum := range []bool{false, true} {
				for _, dec := range []bool{false, true} {
					for _, step := range []int{1, 2, 10, 1000} {
						p := AdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 1e-2, Decoupled: dec}
						off := rng.Intn(8)
						w, g, m, v := adamBufs(rng, n, off)
						var h []float32
						if sum {
							_, h, _, _ = adamBufs(rng, n, rng.Intn(8))
						}
						rw, rg, rh, rm, rv := clone(w), clone(g), clone(h), clone(m), clone(v)
						var err error
						if sum {
							err = AdamStepSum(p, step, w, g, h, m, v)
						} else {
							err = AdamStep(p, step, w, g, m, v)
						}
						if err != nil {
							t.Fatal(err)
						}
						adamStepRef(newAdamConsts(p, step), rw, rg, rh, rm, rv)
						for j, pair := range [][2][]float32{{w, rw}, {g, rg}, {m, rm}, {v, rv}, {h, rh}} {
							for i := range pair[0] {
								if !adamClose(pair[0][i], pair[1][i]) {
									t.Fatalf("n=%d off=%d sum=%v decoupled=%v t=%d: %s[%d] = %v (%#08x), ref %v (%#08x)", n, off, sum, dec, step,
										"wgmvh"[j:j+1], i, pair[0][i], math.Float32bits(pair[0][i]), pair[1][i], math.Float32bits(pair[1][i]))
								}
							}
						}
					}
				}
			}
		}
	})
}

// TestAdamStepNaN: a NaN or infinite gradient element makes that
// element's w, m and v NaN (or, for ±Inf, m ±Inf and w NaN) in every
// implementation, and leaves the others as the reference computes them.
func TestAdamStepNaN(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl string) {
		rng := rand.New(rand.NewSource(1))
		for _, dec := range []bool{false, true} {
			p := DefaultAdamParams()
			p.Decoupled = dec
			const n = 53
			w, g, m, v := adamBufs(rng, n, 3)
			bad := map[int]bool{0: true, 7: true, 16: true, 33: true, 52: true}
			for i := range bad {
				g[i] = float32(math.NaN())
			}
			g[20] = float32(math.Inf(1))
			rw, rm, rv := clone(w), clone(m), clone(v)
			if err := AdamStep(p, 3, w, g, m, v); err != nil {
				t.Fatal(err)
			}
			adamStepRef(newAdamConsts(p, 3), rw, g, nil, rm, rv)
			for i := 0; i < n; i++ {
				if bad[i] {
					if !isNaN32(w[i]) || !isNaN32(m[i]) || !isNaN32(v[i]) {
						t.Errorf("decoupled=%v: NaN g[%d] gave w %v m %v v %v", dec, i, w[i], m[i], v[i])
					}
					continue
				}
				if i == 20 {
					if !isNaN32(w[i]) || !math.IsInf(float64(m[i]), 1) || !math.IsInf(float64(v[i]), 1) {
						t.Errorf("decoupled=%v: +Inf g gave w %v m %v v %v", dec, w[i], m[i], v[i])
					}
					continue
				}
				if !adamClose(w[i], rw[i]) || !adamClose(m[i], rm[i]) || !adamClose(v[i], rv[i]) {
					t.Errorf("decoupled=%v: element %d: w %v m %v v %v, ref %v %v %v", dec, i, w[i], m[i], v[i], rw[i], rm[i], rv[i])
				}
			}
		}
	})
}

func clone(x []float32) []float32 { return append([]float32(nil), x...) }

// BenchmarkAdamStep times one AdamStep over n weights per implementation,
// at 2^20 and at the Sabour model's primary-capsule convolution
// (5,308,672 weights). GB/s counts w, g, m and v read and w, m and v
// written: 28 bytes a weight.
func BenchmarkAdamStep(b *testing.B) {
	forEachImpl(b, func(b *testing.B, impl string) {
		for _, n := range []int{1 << 20, 5308672} {
			b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
				w, g, m, v := adamBufs(rand.New(rand.NewSource(2)), n, 0)
				p := DefaultAdamParams()
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := AdamStep(p, 1+i%1000, w, g, m, v); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(28*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	})
}

// BenchmarkAdamStepSum times the trainer's optimizer pass for two replicas'
// gradients over the Sabour model's primary-capsule weights: Axpy(1, h, g)
// then AdamStep (two passes, "axpy+adam", 40 bytes a weight) against
// AdamStepSum (one, "sum", 32 bytes a weight); GB/s counts those bytes.
func BenchmarkAdamStepSum(b *testing.B) {
	forEachImpl(b, func(b *testing.B, impl string) {
		const n = 5308672
		rng := rand.New(rand.NewSource(3))
		w, g, m, v := adamBufs(rng, n, 0)
		_, h, _, _ := adamBufs(rng, n, 0)
		p := DefaultAdamParams()
		p.GradScale = 0.5
		for _, form := range []string{"axpy+adam", "sum"} {
			b.Run("form="+form, func(b *testing.B) {
				b.ReportAllocs()
				b.ResetTimer()
				bytes := 32
				for i := 0; i < b.N; i++ {
					var err error
					if form == "sum" {
						err = AdamStepSum(p, 1+i%1000, w, g, h, m, v)
					} else {
						bytes = 40
						if err = Axpy(1, h, g); err == nil {
							err = AdamStep(p, 1+i%1000, w, g, m, v)
						}
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(bytes*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
			})
		}
	})
}

// TestAdamStepSumAxpy: AdamStepSum(g, h) gives the bits of Axpy(1, h, g)
// followed by AdamStep on the sum — the trainer's two-replica reduction it
// replaces — with GradScale ½ (the replicas' mean) and 1, in both decay
// forms, on every implementation; and its argument errors.
func TestAdamStepSumAxpy(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl string) {
		rng := rand.New(rand.NewSource(7))
		for _, dec := range []bool{false, true} {
			for _, scale := range []float64{0, 0.5} {
				const n = 1037
				p := DefaultAdamParams()
				p.WeightDecay, p.Decoupled, p.GradScale = 1e-2, dec, scale
				w, g, m, v := adamBufs(rng, n, 1)
				_, h, _, _ := adamBufs(rng, n, 2)
				w2, g2, m2, v2 := clone(w), clone(g), clone(m), clone(v)
				gIn, hIn := clone(g), clone(h)
				if err := AdamStepSum(p, 5, w, g, h, m, v); err != nil {
					t.Fatal(err)
				}
				if err := Axpy(1, h, g2); err != nil {
					t.Fatal(err)
				}
				if err := AdamStep(p, 5, w2, g2, m2, v2); err != nil {
					t.Fatal(err)
				}
				for i := range w {
					if !adamClose(w[i], w2[i]) || !adamClose(m[i], m2[i]) || !adamClose(v[i], v2[i]) {
						t.Fatalf("%s decoupled=%v scale=%g: element %d: w %v m %v v %v, want %v %v %v", impl, dec, scale, i, w[i], m[i], v[i], w2[i], m2[i], v2[i])
					}
					if g[i] != gIn[i] || h[i] != hIn[i] {
						t.Fatalf("%s: AdamStepSum wrote its gradients (element %d)", impl, i)
					}
				}
			}
		}
		w, g, m, v := adamBufs(rng, 4, 0)
		if err := AdamStepSum(DefaultAdamParams(), 1, w, g, g[:3], m, v); err == nil {
			t.Error("AdamStepSum accepted a short h")
		}
		if err := AdamStepSum(DefaultAdamParams(), 0, w, g, g, m, v); err == nil {
			t.Error("AdamStepSum accepted step 0")
		}
		if err := AdamStepSum(DefaultAdamParams(), 1, nil, nil, nil, nil, nil); err != nil {
			t.Errorf("AdamStepSum on nothing: %v", err)
		}
	})
}

// TestAdamGradScale checks that GradScale = 2⁻ᵏ on a gradient gives the bits
// of the step on the scaled gradient, in both decay forms, on every
// implementation.
func TestAdamGradScale(t *testing.T) {
	rng := randv2.New(randv2.NewPCG(5, 6))
	forEachImpl(t, func(t *testing.T, impl string) {
		for _, decoupled := range []bool{false, true} {
			for _, scale := range []float64{0.5, 0.25, 2} {
				const n = 1000
				p := DefaultAdamParams()
				p.WeightDecay, p.Decoupled = 1e-2, decoupled
				w := convRand(rng, n, 0)
				g := convRand(rng, n, 0)
				m, v := convRand(rng, n, 0), convRand(rng, n, 0)
				for i := range v {
					v[i] *= v[i]
				}
				w2, m2, v2 := append([]float32(nil), w...), append([]float32(nil), m...), append([]float32(nil), v...)
				gs := make([]float32, n)
				for i := range g {
					gs[i] = float32(scale) * g[i]
				}
				if err := AdamStep(p, 3, w, gs, m, v); err != nil {
					t.Fatal(err)
				}
				p.GradScale = scale
				if err := AdamStep(p, 3, w2, g, m2, v2); err != nil {
					t.Fatal(err)
				}
				for i := range w {
					if math.Float32bits(w[i]) != math.Float32bits(w2[i]) || math.Float32bits(m[i]) != math.Float32bits(m2[i]) || math.Float32bits(v[i]) != math.Float32bits(v2[i]) {
						t.Fatalf("%s decoupled=%v scale=%g: element %d: w %v m %v v %v, want %v %v %v", impl, decoupled, scale, i, w2[i], m2[i], v2[i], w[i], m[i], v[i])
					}
				}
			}
		}
	})
}
