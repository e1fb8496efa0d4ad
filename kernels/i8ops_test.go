package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRoundI8 pins the rounding of every int8 step: to nearest, ties to
// even, clamped to [lo, 127], NaN to 0, −128 never.
func TestRoundI8(t *testing.T) {
	nan := float32(math.NaN())
	inf := float32(math.Inf(1))
	for _, c := range []struct {
		v, lo float32
		want  int8
	}{
		{0.5, -127, 0}, {1.5, -127, 2}, {2.5, -127, 2}, {-0.5, -127, 0}, {-1.5, -127, -2}, {-2.5, -127, -2},
		{0.49999997, -127, 0}, {126.5, -127, 126}, {127.4, -127, 127}, {127.5, -127, 127}, {1e9, -127, 127},
		{-127.5, -127, -127}, {-128, -127, -127}, {-1e9, -127, -127}, {inf, -127, 127}, {-inf, -127, -127},
		{nan, -127, 0}, {-3, 0, 0}, {-0.4, 0, 0}, {3.6, 0, 4},
	} {
		if got := roundI8(c.v, c.lo); got != c.want {
			t.Errorf("roundI8(%v, %v) = %d, want %d", c.v, c.lo, got, c.want)
		}
	}
}

// qref is the reference quantizer of the doc comments, in float64.
func qref(v, inv float32, lo float64) int8 {
	x := float64(v * inv) // the product in float32, as documented
	if math.IsNaN(x) {
		return 0
	}
	return int8(math.Max(lo, math.Min(127, math.RoundToEven(x))))
}

func randF32(rng *rand.Rand, n int, scale float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = (rng.Float32()*2 - 1) * scale
	}
	return x
}

func randI8(rng *rand.Rand, n int) []int8 {
	x := make([]int8, n)
	for i := range x {
		x[i] = int8(rng.IntN(255) - 127)
	}
	return x
}

func TestQuantizeLayouts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, sh := range [][3]int{{1, 1, 1}, {2, 1, 17}, {3, 5, 7}, {1, 32, 9}, {4, 3, 1}} {
		b, c, hw := sh[0], sh[1], sh[2]
		x := randF32(rng, b*c*hw, 3)
		x[0] = 1.5 // a tie
		inv := float32(1) / 0.021
		q := make([]int8, len(x)+5)
		for i := range q {
			q[i] = 99
		}
		if err := QuantizeNHWC(b, c, hw, q, x, inv); err != nil {
			t.Fatal(err)
		}
		for n := range b {
			for ch := range c {
				for p := range hw {
					if got, want := q[(n*hw+p)*c+ch], qref(x[(n*c+ch)*hw+p], inv, -127); got != want {
						t.Fatalf("QuantizeNHWC %v: q[%d,%d,%d] = %d, want %d", sh, n, p, ch, got, want)
					}
				}
			}
		}
		if q[len(x)] != 99 {
			t.Fatalf("QuantizeNHWC %v wrote past its output", sh)
		}
		// QuantizeCaps: (b, d, n) component-major → (n, b, d).
		d, nc := c, hw
		if err := QuantizeCaps(b, d, nc, q, x, inv); err != nil {
			t.Fatal(err)
		}
		for s := range b {
			for l := range d {
				for i := range nc {
					if got, want := q[(i*b+s)*d+l], qref(x[(s*d+l)*nc+i], inv, -127); got != want {
						t.Fatalf("QuantizeCaps %v: q[%d,%d,%d] = %d, want %d", sh, i, s, l, got, want)
					}
				}
			}
		}
	}
}

// convI8Direct is the integer convolution of one NHWC image with OIHW
// weights, written from the definition: the oracle of Im2colI8 + GemmI8
// and of DepthwiseI8 (acc NHWC).
func convI8Direct(sh ConvShape, x, w []int8) []int32 {
	OH, OW := sh.OutH(), sh.OutW()
	cin := sh.InC / sh.Groups
	cout := sh.OutC / sh.Groups
	acc := make([]int32, OH*OW*sh.OutC)
	for oh := range OH {
		for ow := range OW {
			for o := range sh.OutC {
				g := o / cout
				var s int32
				for ci := range cin {
					c := g*cin + ci
					for kh := range sh.KH {
						for kw := range sh.KW {
							ih, iw := oh*sh.StrideH-sh.PadH+kh, ow*sh.StrideW-sh.PadW+kw
							if ih < 0 || ih >= sh.InH || iw < 0 || iw >= sh.InW {
								continue
							}
							s += int32(x[(ih*sh.InW+iw)*sh.InC+c]) * int32(w[((o*cin+ci)*sh.KH+kh)*sh.KW+kw])
						}
					}
				}
				acc[(oh*OW+ow)*sh.OutC+o] = s
			}
		}
	}
	return acc
}

// i8ConvShapes are random convolutions with odd sizes, strides, padding
// and the deep model's and Sabour's shapes.
func i8ConvShapes(rng *rand.Rand) []ConvShape {
	shapes := []ConvShape{
		{InC: 1, InH: 40, InW: 40, OutC: 32, KH: 7, KW: 7, StrideH: 1, StrideW: 1, Groups: 1},
		{InC: 64, InH: 15, InW: 15, OutC: 128, KH: 3, KW: 3, StrideH: 2, StrideW: 2, Groups: 1},
		{InC: 256, InH: 20, InW: 20, OutC: 33, KH: 9, KW: 9, StrideH: 2, StrideW: 2, Groups: 1},
	}
	for range 12 {
		k := 1 + rng.IntN(5)
		s := ConvShape{InC: 1 + rng.IntN(9), InH: k + rng.IntN(9), InW: k + rng.IntN(9), OutC: 1 + rng.IntN(40),
			KH: k, KW: max(1, k-rng.IntN(2)), StrideH: 1 + rng.IntN(3), StrideW: 1 + rng.IntN(3), PadH: rng.IntN(3), PadW: rng.IntN(3), Groups: 1}
		shapes = append(shapes, s)
	}
	return shapes
}

// TestIm2colI8Conv checks that Im2colI8 followed by GemmI8Packed of the
// weights in (OutC, KH, KW, InC) order is the integer convolution, on every
// implementation.
func TestIm2colI8Conv(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl string) {
		rng := rand.New(rand.NewPCG(5, 6))
		for _, sh := range i8ConvShapes(rng) {
			x := randI8(rng, sh.InH*sh.InW*sh.InC)
			w := randI8(rng, sh.WLen())
			// Reorder OIHW → O(KH,KW,I) and pack.
			K := sh.KH * sh.KW * sh.InC
			wr := make([]int8, sh.OutC*K)
			for o := range sh.OutC {
				for c := range sh.InC {
					for kh := range sh.KH {
						for kw := range sh.KW {
							wr[o*K+(kh*sh.KW+kw)*sh.InC+c] = w[((o*sh.InC+c)*sh.KH+kh)*sh.KW+kw]
						}
					}
				}
			}
			p, err := PackI8(sh.OutC, K, wr, K)
			if err != nil {
				t.Fatal(err)
			}
			cols := randI8(rng, sh.I8ColsLen()) // garbage: Im2colI8 must write every byte
			if err := Im2colI8(sh, cols, x); err != nil {
				t.Fatal(err)
			}
			acc := make([]int32, sh.I8AccLen())
			if err := GemmI8Packed(sh.OutH()*sh.OutW(), cols, K, p, acc, sh.OutC); err != nil {
				t.Fatal(err)
			}
			want := convI8Direct(sh, x, w)
			for i := range want {
				if acc[i] != want[i] {
					t.Fatalf("%+v: acc[%d] = %d, want %d", sh, i, acc[i], want[i])
				}
			}
		}
	})
}

func TestDepthwiseI8(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	shapes := []ConvShape{{InC: 128, InH: 7, InW: 7, OutC: 128, KH: 7, KW: 7, StrideH: 1, StrideW: 1, Groups: 128}}
	for range 10 {
		c, k := 1+rng.IntN(20), 1+rng.IntN(4)
		shapes = append(shapes, ConvShape{InC: c, InH: k + rng.IntN(6), InW: k + rng.IntN(6), OutC: c, KH: k, KW: k,
			StrideH: 1 + rng.IntN(2), StrideW: 1 + rng.IntN(2), PadH: rng.IntN(2), PadW: rng.IntN(2), Groups: c})
	}
	for _, sh := range shapes {
		x := randI8(rng, sh.InH*sh.InW*sh.InC)
		w := randI8(rng, sh.WLen()) // (C, 1, KH, KW)
		wr := make([]int8, len(w))
		for c := range sh.InC {
			for k := range sh.KH * sh.KW {
				wr[k*sh.InC+c] = w[c*sh.KH*sh.KW+k]
			}
		}
		acc := make([]int32, sh.I8AccLen())
		for i := range acc {
			acc[i] = 12345 // overwritten, not added to
		}
		if err := DepthwiseI8(sh, acc, x, wr); err != nil {
			t.Fatal(err)
		}
		want := convI8Direct(sh, x, w)
		for i := range want {
			if acc[i] != want[i] {
				t.Fatalf("%+v: acc[%d] = %d, want %d", sh, i, acc[i], want[i])
			}
		}
	}
}

func TestRequantDequant(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, sh := range [][2]int{{1, 1}, {3, 17}, {49, 128}, {5, 33}} {
		rows, cols := sh[0], sh[1]
		acc := make([]int32, rows*cols)
		for i := range acc {
			acc[i] = int32(rng.IntN(1<<16) - 1<<15)
		}
		mul := randF32(rng, cols, 0.01)
		add := randF32(rng, cols, 20)
		for _, relu := range []bool{false, true} {
			q := make([]int8, len(acc))
			if err := Requant(rows, cols, q, acc, mul, add, relu); err != nil {
				t.Fatal(err)
			}
			lo := -127.0
			if relu {
				lo = 0
			}
			for r := range rows {
				for c := range cols {
					i := r*cols + c
					if want := qref(float32(float32(acc[i])*mul[c])+add[c], 1, lo); q[i] != want {
						t.Fatalf("Requant %v relu=%v: q[%d] = %d, want %d", sh, relu, i, q[i], want)
					}
				}
			}
		}
		for _, tr := range []bool{false, true} {
			for _, withAdd := range []bool{false, true} {
				y := make([]float32, len(acc))
				a := add
				if !withAdd {
					a = nil
				}
				if err := Dequant(rows, cols, y, acc, mul, a, tr); err != nil {
					t.Fatal(err)
				}
				for r := range rows {
					for c := range cols {
						want := float32(acc[r*cols+c]) * mul[c]
						if withAdd {
							want += add[c]
						}
						got := y[r*cols+c]
						if tr {
							got = y[c*rows+r]
						}
						if got != want {
							t.Fatalf("Dequant %v transpose=%v: (%d,%d) = %v, want %v", sh, tr, r, c, got, want)
						}
					}
				}
			}
		}
	}
}

// TestRequantImpls checks Requant of every implementation bit for bit
// against the documented loop: random shapes whose cols leave tails after
// the 16 and 8 values of the SIMD steps, q and acc at odd offsets, ties
// (x.5 sums), sums far beyond ±127 and beyond the int32 range, ±Inf
// products (which clamp to 127 and lo) and NaN sums (0), both ReLU
// settings.
func TestRequantImpls(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl string) {
		rng := rand.New(rand.NewPCG(13, 14))
		for it := range 60 {
			rows, cols := 1+rng.IntN(6), 1+rng.IntN(80)
			if it < 4 {
				cols = []int{15, 17, 7, 64}[it]
			}
			const offQ, offA = 3, 5
			n := rows * cols
			acc := make([]int32, n+offA)[offA:]
			q := make([]int8, n+offQ)[offQ:]
			mul := randF32(rng, cols, 0.02)
			add := randF32(rng, cols, 100)
			for i := range acc {
				acc[i] = int32(rng.IntN(1<<16) - 1<<15)
			}
			for c := range cols {
				switch rng.IntN(10) {
				case 0: // ties: every sum is an integer + 0.5
					mul[c], add[c] = 1, float32(rng.IntN(301)-150)+0.5
					for r := range rows {
						acc[r*cols+c] = int32(rng.IntN(21) - 10)
					}
				case 1: // ±Inf products, some sums beyond the int32 range
					mul[c] = []float32{math.MaxFloat32, -math.MaxFloat32, 1e6}[rng.IntN(3)]
				case 2:
					if it%7 == 0 { // NaN sums
						add[c] = float32(math.NaN())
					}
				}
			}
			for _, relu := range []bool{false, true} {
				if err := Requant(rows, cols, q, acc, mul, add, relu); err != nil {
					t.Fatal(err)
				}
				lo := -127.0
				if relu {
					lo = 0
				}
				for i := range n {
					c := i % cols
					if want := qref(float32(float32(acc[i])*mul[c])+add[c], 1, lo); q[i] != want {
						t.Fatalf("%s %dx%d relu=%v: q[%d] = %d, want %d (acc %d, mul %v, add %v)",
							impl, rows, cols, relu, i, q[i], want, acc[i], mul[c], add[c])
					}
				}
			}
		}
	})
}

// BenchmarkRequant runs Requant of 1024 rows of 64 columns (a 3×3
// convolution's output channels over a batch of positions) for every
// implementation; ns/element is the time per requantized value.
func BenchmarkRequant(b *testing.B) {
	const rows, cols = 1024, 64
	rng := rand.New(rand.NewPCG(15, 16))
	acc := make([]int32, rows*cols)
	for i := range acc {
		acc[i] = int32(rng.IntN(1<<16) - 1<<15)
	}
	q := make([]int8, rows*cols)
	mul, add := randF32(rng, cols, 0.01), randF32(rng, cols, 20)
	forEachImpl(b, func(b *testing.B, _ string) {
		b.ReportAllocs()
		for b.Loop() {
			if err := Requant(rows, cols, q, acc, mul, add, true); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(b.Elapsed().Seconds()*1e9/float64(b.N)/float64(rows*cols), "ns/element")
	})
}

func TestDequantVotes(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	b, nOut, dOut, nIn := 3, 5, 4, 23
	uhat := make([]float32, b*nOut*dOut*nIn)
	mul := randF32(rng, nIn*nOut, 1)
	acc := make([]int32, nIn*b*nOut*dOut) // one matrix per capsule
	for k := range acc {
		acc[k] = int32(rng.IntN(2001) - 1000)
	}
	// Blocks of 16 and a tail of 7, as quant.Net calls it.
	for i0 := 0; i0 < nIn; i0 += 16 {
		ni := min(16, nIn-i0)
		if err := DequantVotes(b, nOut, dOut, nIn, i0, ni, uhat, acc[i0*b*nOut*dOut:], mul); err != nil {
			t.Fatal(err)
		}
	}
	for i := range nIn {
		for s := range b {
			for j := range nOut {
				for k := range dOut {
					want := float32(acc[((i*b+s)*nOut+j)*dOut+k]) * mul[i*nOut+j]
					if got := uhat[((s*nOut+j)*dOut+k)*nIn+i]; got != want {
						t.Fatalf("capsule %d: uhat[%d,%d,%d] = %v, want %v", i, s, j, k, got, want)
					}
				}
			}
		}
	}
}

// TestI8OpsErrors checks that bad shapes and short slices are errors, not
// panics.
func TestI8OpsErrors(t *testing.T) {
	sh := ConvShape{InC: 2, InH: 5, InW: 5, OutC: 3, KH: 3, KW: 3, StrideH: 1, StrideW: 1, Groups: 1}
	dw := ConvShape{InC: 2, InH: 5, InW: 5, OutC: 2, KH: 3, KW: 3, StrideH: 1, StrideW: 1, Groups: 2}
	q := make([]int8, 1000)
	acc := make([]int32, 1000)
	f := make([]float32, 1000)
	const huge = min(1<<31, math.MaxInt) // 2^31, or the largest int on a 32-bit GOARCH
	for name, err := range map[string]error{
		"QuantizeI8 short":     QuantizeI8(q[:2], f[:3], 1),
		"QuantizeNHWC short":   QuantizeNHWC(2, 3, 4, q[:23], f, 1),
		"QuantizeNHWC neg":     QuantizeNHWC(-1, 3, 4, q, f, 1),
		"QuantizeCaps short":   QuantizeCaps(2, 3, 4, q, f[:5], 1),
		"Im2colI8 groups":      Im2colI8(dw, q, q),
		"Im2colI8 short cols":  Im2colI8(sh, q[:sh.I8ColsLen()-1], q),
		"Im2colI8 short x":     Im2colI8(sh, q, q[:49]),
		"Im2colI8 bad shape":   Im2colI8(ConvShape{InC: 1, InH: 2, InW: 2, OutC: 1, KH: 3, KW: 3, StrideH: 1, StrideW: 1, Groups: 1}, q, q),
		"DepthwiseI8 groups":   DepthwiseI8(sh, acc, q, q),
		"DepthwiseI8 short w":  DepthwiseI8(dw, acc, q, q[:17]),
		"DepthwiseI8 short a":  DepthwiseI8(dw, acc[:17], q, q),
		"Requant short mul":    Requant(2, 3, q, acc, f[:2], f, false),
		"Requant huge":         Requant(huge, huge, q, acc, f, f, false),
		"Dequant short y":      Dequant(4, 5, f[:19], acc, f, nil, false),
		"Dequant short add":    Dequant(4, 5, f, acc, f, f[:4], true),
		"DequantVotes capsule": DequantVotes(1, 2, 3, 4, 4, 1, f, acc, f),
		"DequantVotes block":   DequantVotes(1, 2, 3, 4, 2, 3, f, acc, f),
		"DequantVotes short":   DequantVotes(2, 2, 3, 4, 0, 1, f[:47], acc, f),
		"DequantVotes acc":     DequantVotes(2, 2, 3, 4, 0, 2, f, acc[:23], f),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestI8OpsAllocs: none of the steps allocates.
func TestI8OpsAllocs(t *testing.T) {
	sh := ConvShape{InC: 8, InH: 9, InW: 9, OutC: 8, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, Groups: 1}
	dw := sh
	dw.Groups = 8
	q := make([]int8, 8192)
	acc := make([]int32, 4096)
	f := make([]float32, 4096)
	if err := Im2colI8(sh, q, q); err != nil {
		t.Fatal(err)
	}
	n := testing.AllocsPerRun(10, func() {
		_ = QuantizeNHWC(2, 8, 81, q, f, 3)
		_ = QuantizeCaps(2, 8, 81, q, f, 3)
		_ = Im2colI8(sh, q, q)
		_ = DepthwiseI8(dw, acc, q, q)
		_ = Requant(81, 8, q, acc, f, f, true)
		_ = Dequant(81, 8, f, acc, f, f, true)
		_ = DequantVotes(2, 4, 8, 9, 3, 2, f, acc, f)
	})
	if n != 0 {
		t.Errorf("%v allocations per run", n)
	}
}
