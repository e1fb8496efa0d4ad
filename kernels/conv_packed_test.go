package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestConvForwardPacked checks that the forward on packed weights
// (PackConv, ConvForwardPacked, ConvForwardPackedReLU) computes
// ConvForward's and ConvForwardReLU's bits on every path the dispatcher
// can take: every implementation with the default and tiny plans, the
// im2col path on every implementation, the direct path on every shape it
// can take, the implicit GEMM where the direct path would run, the
// portable 4×4 driver with tiny blocking, and every SGEMM tile of this
// build and CPU as the convolutions' driver.
func TestConvForwardPacked(t *testing.T) {
	t.Run("plan=default", testConvForwardPacked)
	t.Run("plan=tiny", func(t *testing.T) {
		defer func(c, f int) { convTargetCols, convMaxColFloats = c, f }(convTargetCols, convMaxColFloats)
		convTargetCols, convMaxColFloats = 40, 1
		testConvForwardPacked(t)
	})
	t.Run("path=im2col", func(t *testing.T) {
		defer func() { convImplicit = true }()
		convImplicit = false
		testConvForwardPacked(t)
	})
	t.Run("path=direct-any", func(t *testing.T) {
		defer func(w float64) { convDirectMaxWaste = w }(convDirectMaxWaste)
		convDirectMaxWaste = 1
		testConvForwardPacked(t)
	})
	t.Run("path=implicit", func(t *testing.T) {
		defer func() { convDirectOn = true }()
		convDirectOn = false
		testConvForwardPacked(t)
	})
	t.Run("driver=go4x4-tiny", func(t *testing.T) {
		defer func(kc int) { convTestDriver, convDirectKC = nil, kc }(convDirectKC)
		convTestDriver = newSgemmBlocked(sgemmMicroGo, 4, 4, 5, 9, 10)
		convTestDriver.direct, convTestDriver.directA = sgemmDirectGo4x4, sgemmDirectAGo4x4
		convDirectKC = 5
		testConvForwardPacked(t)
		defer func(c, f int) { convTargetCols, convMaxColFloats = c, f }(convTargetCols, convMaxColFloats)
		convTargetCols, convMaxColFloats = 40, 1
		t.Run("plan=tiny", testConvForwardPacked)
	})
	// The transposed layout (batch-1 packings) on every shape it can take:
	// every implementation, the default and tiny plans (several chunks and
	// slabs: the forward at batch > 1 splits the reduction as the chunked
	// path does), with the direct path off so that every shape packed at
	// batch 1 takes it, the portable driver with tiny blocking.
	t.Run("layout=transposed", func(t *testing.T) {
		defer func(r float64) { convPackTRatio, convDirectOn = r, true }(convPackTRatio)
		convPackTRatio, convDirectOn = math.Inf(1), false
		transposed := convPackedTransposed
		testConvForwardPacked(t)
		t.Run("plan=tiny", func(t *testing.T) {
			defer func(c, f int) { convTargetCols, convMaxColFloats = c, f }(convTargetCols, convMaxColFloats)
			convTargetCols, convMaxColFloats = 40, 1
			testConvForwardPacked(t)
		})
		t.Run("driver=go4x4-tiny", func(t *testing.T) {
			defer func() { convTestDriver = nil }()
			convTestDriver = newSgemmBlocked(sgemmMicroGo, 4, 4, 5, 9, 10)
			testConvForwardPacked(t)
		})
		if convPackedTransposed == transposed {
			t.Fatal("no shape was packed transposed: the layout went untested")
		}
	})
	for _, tile := range sgemmRunnableTiles() {
		t.Run("tile="+tile.name, func(t *testing.T) {
			defer func() { convTestDriver = nil }()
			convTestDriver = newSgemmFromChoice(sgemmDefaultBlocking(tile))
			testConvForwardPacked(t)
			t.Run("layout=transposed", func(t *testing.T) {
				defer func(r float64) { convPackTRatio, convDirectOn = r, true }(convPackTRatio)
				convPackTRatio, convDirectOn = math.Inf(1), false
				testConvForwardPacked(t)
			})
			// Tiny blocking on the tile: several kc blocks of each panel.
			c := sgemmDefaultBlocking(tile)
			c.kc, c.mc, c.nc = 7, tile.mr*2, tile.nr*2
			convTestDriver = newSgemmFromChoice(c)
			t.Run("blocking=tiny", testConvForwardPacked)
		})
	}
}

// convPackedTransposed counts the packings testConvForwardPacked made in
// the transposed layout (so that the tests forcing it can tell it ran).
var convPackedTransposed int

func testConvForwardPacked(t *testing.T) {
	shapes := convTestShapes()
	forEachImpl(t, func(t *testing.T, _ string) {
		rng := rand.New(rand.NewPCG(7, 8))
		for si, s := range shapes {
			name := fmt.Sprintf("shape %d %+v", si, s)
			off := si % 4
			w := convRand(rng, s.WLen(), off)
			if s.convDirect() {
				if n := s.PackedSize(); n != 0 {
					t.Errorf("%s: depthwise PackedSize %d, want 0", name, n)
				}
				if _, err := PackConv(s, make([]float32, s.WLen()), w); err == nil {
					t.Errorf("%s: PackConv of a depthwise shape: no error", name)
				}
				continue
			}
			x := convRand(rng, s.XLen(), (off+1)%4)
			var bias []float32
			if si%3 != 2 {
				bias = convRand(rng, s.OutC, (off+2)%4)
			}
			work := convNaN(s.ArenaWorkSize(), off)
			if si%2 == 1 {
				work = convNaN(s.WorkSize(), off) // the driver's own packing buffers
			}
			// Packed for another batch: the packing does not depend on it.
			ps := s
			ps.Batch = 1 + si%3
			if ps.PackedSize() < s.WLen() {
				t.Fatalf("%s: PackedSize %d < WLen %d", name, ps.PackedSize(), s.WLen())
			}
			dst := convNaN(ps.PackedSize(), (off+3)%4)
			p, err := PackConv(ps, dst, w)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !p.Current() {
				t.Fatalf("%s: packed weights not Current right after PackConv", name)
			}
			if p.nr > 0 {
				convPackedTransposed++
			}
			for _, relu := range []bool{false, true} {
				want, got := convNaN(s.YLen(), 0), convNaN(s.YLen(), 1)
				fwd, fwdP := ConvForward, ConvForwardPacked
				if relu {
					fwd, fwdP = ConvForwardReLU, ConvForwardPackedReLU
				}
				if err := fwd(s, want, x, w, bias, work); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if err := fwdP(s, got, x, p, bias, work); err != nil {
					t.Fatalf("%s: packed: %v", name, err)
				}
				convSameBits(t, fmt.Sprintf("%s relu %v: packed y", name, relu), got, want)
			}
			if t.Failed() {
				return
			}
		}
	})
}

// TestConvForwardPackedErrors: packed weights of another shape, not
// Current after kernels.Use, or the zero ConvPacked are refused, as are
// short slices; PackConv refuses bad shapes and short slices.
func TestConvForwardPackedErrors(t *testing.T) {
	s := ConvShape{Batch: 2, InC: 4, InH: 9, InW: 9, OutC: 10, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, Groups: 2}
	w := make([]float32, s.WLen())
	x := make([]float32, s.XLen())
	y := make([]float32, s.YLen())
	work := make([]float32, s.ArenaWorkSize())
	dst := make([]float32, s.PackedSize())
	p, err := PackConv(s, dst, w)
	if err != nil {
		t.Fatal(err)
	}
	if err := ConvForwardPacked(s, y, x, p, nil, work); err != nil {
		t.Fatal(err)
	}
	other := s
	other.OutC = 8
	for _, c := range []struct {
		what, want string
		err        error
	}{
		{"other shape", "packed for shape", ConvForwardPacked(other, y, x, p, nil, work)},
		{"zero ConvPacked", "packed", ConvForwardPacked(s, y, x, ConvPacked{}, nil, work)},
		{"short y", "y has", ConvForwardPacked(s, y[:1], x, p, nil, work)},
		{"short x", "x has", ConvForwardPackedReLU(s, y, x[:1], p, nil, work)},
		{"short bias", "bias has", ConvForwardPacked(s, y, x, p, make([]float32, 3), work)},
		{"short work", "work has", ConvForwardPacked(s, y, x, p, nil, nil)},
		{"invalid shape", "Groups", ConvForwardPacked(ConvShape{Batch: 1, InC: 3, InH: 4, InW: 4, OutC: 2, KH: 1, KW: 1, StrideH: 1, StrideW: 1, Groups: 2}, y, x, p, nil, work)},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.what, c.err, c.want)
		}
	}
	if _, err := PackConv(s, dst[:1], w); err == nil || !strings.Contains(err.Error(), "dst has") {
		t.Errorf("short dst: error %v", err)
	}
	if _, err := PackConv(s, dst, w[:1]); err == nil || !strings.Contains(err.Error(), "w has") {
		t.Errorf("short w: error %v", err)
	}
	if _, err := PackConv(ConvShape{}, dst, w); err == nil {
		t.Error("invalid shape: no error")
	}
	// Another implementation with another tile height: p is stale.
	prev := Impl()
	defer func() {
		if err := Use(prev); err != nil {
			t.Fatal(err)
		}
	}()
	for _, name := range Available() {
		if err := Use(name); err != nil {
			t.Fatal(err)
		}
		if convPackMR() == p.mr {
			if !p.Current() {
				t.Errorf("impl %s: same layout, not Current", name)
			}
			continue
		}
		if p.Current() {
			t.Errorf("impl %s: panels of %d rows, Current with %d", name, convPackMR(), p.mr)
		}
		if err := ConvForwardPacked(s, y, x, p, nil, work); err == nil || !strings.Contains(err.Error(), "PackConv again") {
			t.Errorf("impl %s: stale packed weights: error %v", name, err)
		}
	}
}

// TestConvForwardPackedAllocs: the packed forward allocates nothing.
func TestConvForwardPackedAllocs(t *testing.T) {
	forEachImpl(t, func(t *testing.T, _ string) {
		for _, s := range []ConvShape{
			{Batch: 1, InC: 8, InH: 20, InW: 20, OutC: 32, KH: 9, KW: 9, StrideH: 2, StrideW: 2, Groups: 1},
			{Batch: 2, InC: 12, InH: 17, InW: 36, OutC: 15, KH: 3, KW: 3, StrideH: 2, StrideW: 2, Groups: 1},
			{Batch: 3, InC: 4, InH: 9, InW: 8, OutC: 6, KH: 3, KW: 2, StrideH: 1, StrideW: 1, PadH: 1, Groups: 2},
		} {
			w, x := make([]float32, s.WLen()), make([]float32, s.XLen())
			y, work := make([]float32, s.YLen()), make([]float32, s.ArenaWorkSize())
			p, err := PackConv(s, make([]float32, s.PackedSize()), w)
			if err != nil {
				t.Fatal(err)
			}
			if a := testing.AllocsPerRun(5, func() { err = ConvForwardPackedReLU(s, y, x, p, nil, work) }); a != 0 || err != nil {
				t.Errorf("%+v: %v allocations per call, err %v", s, a, err)
			}
		}
	})
}

// TestConvPackTransposedChoice: PackConv packs Sabour's primary capsules
// (36 positions, 256 channels; here 32 input channels to keep it small)
// transposed at batch 1 on every 32-column tile, where the untransposed
// product fills 56% of its panels, but not at batch 2 nor on a shape whose
// positions fill the panels (the deep model's 34×34 layer); and the
// forward of batch 1 and of batch 3 on those weights gives ConvForward's
// bits.
func TestConvPackTransposedChoice(t *testing.T) {
	prim := ConvShape{Batch: 1, InC: 32, InH: 20, InW: 20, OutC: 256, KH: 9, KW: 9, StrideH: 2, StrideW: 2, Groups: 1}
	wide := ConvShape{Batch: 1, InC: 8, InH: 34, InW: 34, OutC: 64, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1, Groups: 1}
	tested := 0
	for _, tile := range sgemmRunnableTiles() {
		if tile.nr != 32 {
			continue
		}
		tested++
		t.Run("tile="+tile.name, func(t *testing.T) {
			defer func() { convTestDriver = nil }()
			convTestDriver = newSgemmFromChoice(sgemmDefaultBlocking(tile))
			rng := rand.New(rand.NewPCG(3, 4))
			w := convRand(rng, prim.WLen(), 1)
			for _, c := range []struct {
				sh   ConvShape
				want bool
			}{{prim, true}, {prim.withBatch(2), false}, {wide, false}} {
				p, err := PackConv(c.sh, make([]float32, c.sh.PackedSize()), w[:c.sh.WLen()])
				if err != nil {
					t.Fatal(err)
				}
				if got := p.nr > 0; got != c.want {
					t.Errorf("%+v: packed transposed %v, want %v", c.sh, got, c.want)
				}
			}
			p, err := PackConv(prim, make([]float32, prim.PackedSize()), w)
			if err != nil {
				t.Fatal(err)
			}
			for _, batch := range []int{1, 3} {
				s := prim.withBatch(batch)
				x := convRand(rng, s.XLen(), 2)
				bias := convRand(rng, s.OutC, 3)
				work := convNaN(s.ArenaWorkSize(), 0)
				want, got := convNaN(s.YLen(), 0), convNaN(s.YLen(), 1)
				if err := ConvForward(s, want, x, w, bias, work); err != nil {
					t.Fatal(err)
				}
				if err := ConvForwardPacked(s, got, x, p, bias, work); err != nil {
					t.Fatal(err)
				}
				convSameBits(t, fmt.Sprintf("batch %d: transposed packed y", batch), got, want)
			}
		})
	}
	if tested == 0 {
		t.Skip("no 32-column SGEMM tile runs on this CPU")
	}
}

// withBatch returns s with the batch b.
func (s ConvShape) withBatch(b int) ConvShape {
	s.Batch = b
	return s
}
