package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Tests of the convolution epilogue and prologue primitives biasAct and
// reluMask: every implementation against the Go reference, bit for bit
// (they are element-wise), over random shapes with vector tails, odd
// widths, row strides wider than the rows, unaligned starts and the
// special values NaN (both signs, quiet and signalling, random payloads),
// ±0, ±Inf and subnormals in both operands; guard values around and
// between the rows must stay untouched. TestEpilogueCompareCanFail runs
// the same comparisons on plausible bugs.

// epiVal is a random operand: about half specials, half ordinary values.
func epiVal(rng *rand.Rand) float32 {
	payload := rng.Uint32() & 0x3fffff
	switch rng.IntN(16) {
	case 0:
		return math.Float32frombits(0x7fc00000 | payload) // quiet NaN
	case 1:
		return math.Float32frombits(0xffc00000 | payload) // negative quiet NaN
	case 2:
		return math.Float32frombits(0x7f800000 | max(payload, 1)) // signalling NaN
	case 3:
		return math.Float32frombits(0xff800000 | max(payload, 1)) // negative signalling NaN
	case 4:
		return 0
	case 5:
		return float32(math.Copysign(0, -1))
	case 6:
		return float32(math.Inf(1))
	case 7:
		return float32(math.Inf(-1))
	case 8:
		return math.Float32frombits(payload | rng.Uint32()&0x80000000) // subnormal
	}
	return 4*rng.Float32() - 2
}

// epiBias is a random bias: mostly ordinary, sometimes special, sometimes
// the negation of a typical y (sums of exactly 0).
func epiBias(rng *rand.Rand) float32 {
	if rng.IntN(4) == 0 {
		return epiVal(rng)
	}
	return 4*rng.Float32() - 2
}

// epiGuard is the value of every element a kernel must not touch.
var epiGuard = math.Float32frombits(0x7fbadbad) // a signalling NaN

// epiShape is one random biasAct case.
type epiShape struct{ rows, n, ldy, off, relu int }

func (s epiShape) String() string {
	return fmt.Sprintf("rows=%d n=%d ldy=%d off=%d relu=%d", s.rows, s.n, s.ldy, s.off, s.relu)
}

// epiWidth is a random row width: around the multiples of 4, 8, 16 and
// 64 (block, vector and tail boundaries), sometimes long.
func epiWidth(rng *rand.Rand) int {
	switch rng.IntN(4) {
	case 0:
		return 1 + rng.IntN(7)
	case 1:
		return 1 + rng.IntN(80)
	case 2:
		return 64*(1+rng.IntN(4)) + rng.IntN(5) - 2
	}
	return 1 + rng.IntN(1100)
}

// biasActMismatch runs biasAct f and the reference on the same random case
// and describes the first bit difference, nil when there is none.
func biasActMismatch(rng *rand.Rand, f func(rows, n int, y []float32, ldy int, bias []float32, relu int)) error {
	s := epiShape{rows: 1 + rng.IntN(9), n: epiWidth(rng), off: rng.IntN(4), relu: rng.IntN(2)}
	s.ldy = s.n + rng.IntN(3)*rng.IntN(5)
	if s.rows == 1 && rng.IntN(2) == 0 {
		s.ldy = 0 // any stride for one row
	}
	size := s.off + (s.rows-1)*s.ldy + s.n + 5
	buf, want := make([]float32, size), make([]float32, size)
	for i := range buf {
		buf[i] = epiGuard
	}
	bias := make([]float32, s.rows+1)
	for r := 0; r < s.rows; r++ {
		for c := 0; c < s.n; c++ {
			buf[s.off+r*s.ldy+c] = epiVal(rng)
		}
		bias[r] = epiBias(rng)
	}
	bias[s.rows] = epiGuard
	copy(want, buf)
	end := s.off + (s.rows-1)*s.ldy + s.n
	biasActRef(s.rows, s.n, want[s.off:end], s.ldy, bias, s.relu)
	in := append([]float32(nil), buf...)
	f(s.rows, s.n, buf[s.off:end], s.ldy, bias, s.relu)
	for i := range buf {
		if math.Float32bits(buf[i]) != math.Float32bits(want[i]) {
			r, c := (i-s.off)/max(s.ldy, 1), (i-s.off)%max(s.ldy, 1)
			return fmt.Errorf("%v: y[%d] (row %d col %d) = %#08x, want %#08x (y was %#08x, bias %#08x)",
				s, i-s.off, r, c, math.Float32bits(buf[i]), math.Float32bits(want[i]),
				math.Float32bits(in[i]), math.Float32bits(bias[min(max(r, 0), s.rows-1)]))
		}
	}
	return nil
}

// reluMaskMismatch runs reluMask f and the reference on the same random
// case (dx a separate slice or dy itself) and describes the first bit
// difference, nil when there is none.
func reluMaskMismatch(rng *rand.Rand, f func(n int, y, dy, dx []float32)) error {
	n, off, alias := epiWidth(rng), rng.IntN(4), rng.IntN(2) == 0
	mk := func() []float32 {
		v := make([]float32, off+n+5)
		for i := range v {
			v[i] = epiGuard
		}
		for i := 0; i < n; i++ {
			v[off+i] = epiVal(rng)
		}
		return v
	}
	y, dy := mk(), mk()
	dx := mk()
	want := append([]float32(nil), dx...)
	wdy := append([]float32(nil), dy...)
	if alias {
		want = wdy
	}
	reluMaskRef(n, y[off:off+n], wdy[off:off+n], want[off:off+n])
	y0, dy0 := append([]float32(nil), y...), append([]float32(nil), dy...)
	out := dx
	if alias {
		out = dy
	}
	f(n, y[off:off+n], dy[off:off+n], out[off:off+n])
	if !alias && !sameBits(dy, dy0) {
		return fmt.Errorf("n=%d off=%d: dy written", n, off)
	}
	if !sameBits(y, y0) {
		return fmt.Errorf("n=%d off=%d: y written", n, off)
	}
	for i := range out {
		if math.Float32bits(out[i]) != math.Float32bits(want[i]) {
			return fmt.Errorf("n=%d off=%d alias=%v: dx[%d] = %#08x, want %#08x (y %#08x, dy %#08x)", n, off, alias, i-off,
				math.Float32bits(out[i]), math.Float32bits(want[i]), math.Float32bits(y0[i]), math.Float32bits(dy0[i]))
		}
	}
	return nil
}

func sameBits(a, b []float32) bool {
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return len(a) == len(b)
}

func epiTrials() int {
	if testing.Short() {
		return 400
	}
	return 3000
}

func TestBiasAct(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl string) {
		rng := rand.New(rand.NewPCG(26, 1))
		for range epiTrials() {
			if err := biasActMismatch(rng, cur.biasAct); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func TestReluMask(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl string) {
		rng := rand.New(rand.NewPCG(26, 2))
		for range epiTrials() {
			if err := reluMaskMismatch(rng, cur.reluMask); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// TestBiasActSpecials checks the ReLU of biasAct on each special value
// against the semantics the docs promise (not only against the
// reference): v > 0 is kept, every other number gives +0, NaN stays NaN.
func TestBiasActSpecials(t *testing.T) {
	nan := math.Float32frombits(0xffc00001)
	neg0 := float32(math.Copysign(0, -1))
	inf := float32(math.Inf(1))
	x := []float32{-2, neg0, 0, 1.5, nan, inf, -inf, math.Float32frombits(1), math.Float32frombits(0x80000001), -1e-45, 3e38}
	forEachImpl(t, func(t *testing.T, impl string) {
		for _, n := range []int{len(x), 1, 17, 40} { // scalar or masked tails and full vectors
			y := make([]float32, n)
			for i := range y {
				y[i] = x[i%len(x)]
			}
			zero := []float32{0}
			cur.biasAct(1, n, y, n, zero, 1)
			for i, v := range y {
				in := x[i%len(x)]
				switch {
				case in != in:
					if v == v {
						t.Errorf("n=%d: relu(NaN) = %v", n, v)
					}
				case in > 0:
					if v != in {
						t.Errorf("n=%d: relu(%v) = %v", n, in, v)
					}
				default:
					if math.Float32bits(v) != 0 {
						t.Errorf("n=%d: relu(%v) = %v (bits %#08x), want +0", n, in, v, math.Float32bits(v))
					}
				}
			}
		}
	})
}

// TestEpilogueCompareCanFail runs the comparisons of TestBiasAct and
// TestReluMask on plausible bugs: each must be caught.
func TestEpilogueCompareCanFail(t *testing.T) {
	bad := func(name string, relu func(v float32) float32) func(rows, n int, y []float32, ldy int, bias []float32, r int) {
		return func(rows, n int, y []float32, ldy int, bias []float32, r int) {
			for i := 0; i < rows; i++ {
				for c := 0; c < n; c++ {
					v := y[i*ldy+c] + bias[i]
					if r != 0 {
						v = relu(v)
					}
					y[i*ldy+c] = v
				}
			}
		}
	}
	neg0 := float32(math.Copysign(0, -1))
	biasMutants := map[string]func(rows, n int, y []float32, ldy int, bias []float32, relu int){
		"relu keeps −0": bad("", func(v float32) float32 {
			if v > 0 || v == 0 || v != v {
				return max(v, neg0) // −0 stays −0
			}
			return 0
		}),
		"relu zeroes NaN": bad("", func(v float32) float32 {
			if v > 0 {
				return v
			}
			return 0
		}),
		"relu keeps the NaN's sign": bad("", func(v float32) float32 {
			if v != v {
				return v + 0 // the VMAXPS-and-add-zero form
			}
			return max(v, 0)
		}),
		"relu flips the NaN's sign": bad("", func(v float32) float32 {
			if v != v {
				return -v
			}
			return max(v, 0)
		}),
		"bias after relu": func(rows, n int, y []float32, ldy int, bias []float32, r int) {
			for i := 0; i < rows; i++ {
				for c := 0; c < n; c++ {
					v := y[i*ldy+c]
					if r != 0 {
						v = max(v, 0)
					}
					y[i*ldy+c] = v + bias[i]
				}
			}
		},
		"bias + y (the NaN of bias when both are)": func(rows, n int, y []float32, ldy int, bias []float32, r int) {
			for i := 0; i < rows; i++ {
				for c := 0; c < n; c++ {
					v := bias[i] + y[i*ldy+c]
					if r != 0 {
						v = max(v, 0)
					}
					y[i*ldy+c] = v
				}
			}
		},
		"last column skipped": func(rows, n int, y []float32, ldy int, bias []float32, r int) {
			biasActRef(rows, n-1, y, ldy, bias, r)
		},
		"one past the row": func(rows, n int, y []float32, ldy int, bias []float32, r int) {
			biasActRef(rows, n, y, ldy, bias, r)
			if ldy > n && rows > 1 {
				y[n] = 0 // the gap after row 0
			}
		},
		"last row skipped": func(rows, n int, y []float32, ldy int, bias []float32, r int) {
			biasActRef(rows-1, n, y, ldy, bias, r)
		},
	}
	maskMutants := map[string]func(n int, y, dy, dx []float32){
		"y ≥ 0": func(n int, y, dy, dx []float32) {
			for i := 0; i < n; i++ {
				if y[i] >= 0 {
					dx[i] = dy[i]
				} else {
					dx[i] = 0
				}
			}
		},
		"NaN y passes": func(n int, y, dy, dx []float32) {
			for i := 0; i < n; i++ {
				if !(y[i] <= 0) {
					dx[i] = dy[i]
				} else {
					dx[i] = 0
				}
			}
		},
		"multiply by the mask": func(n int, y, dy, dx []float32) {
			for i := 0; i < n; i++ {
				var m float32
				if y[i] > 0 {
					m = 1
				}
				dx[i] = dy[i] * m
			}
		},
		"tail skipped": func(n int, y, dy, dx []float32) {
			reluMaskRef(n-n%4, y, dy, dx)
		},
	}
	if negNaN := math.Float32frombits(0xffc00001); math.Float32bits(max(negNaN, 0)) == math.Float32bits(negNaN) {
		delete(biasMutants, "relu keeps the NaN's sign") // it does on this GOARCH (arm64's FMAX)
	}
	for name, f := range biasMutants {
		rng := rand.New(rand.NewPCG(26, 1))
		caught := false
		for range epiTrials() {
			if biasActMismatch(rng, f) != nil {
				caught = true
				break
			}
		}
		if !caught {
			t.Errorf("biasAct mutant %q not caught", name)
		}
	}
	for name, f := range maskMutants {
		rng := rand.New(rand.NewPCG(26, 2))
		caught := false
		for range epiTrials() {
			if reluMaskMismatch(rng, f) != nil {
				caught = true
				break
			}
		}
		if !caught {
			t.Errorf("reluMask mutant %q not caught", name)
		}
	}
}

// TestReLUKernelPaths checks the exported ReLU, in place and into another
// slice (the chunked copy), and ReLUBackward against the Go loops they
// replaced, bit for bit (a signalling NaN x excepted for ReLU: it comes
// out quiet).
func TestReLUKernelPaths(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl string) {
		rng := rand.New(rand.NewPCG(26, 3))
		for _, n := range []int{1, 7, 33, 1000, reluChunk - 1, reluChunk + 17, 3*reluChunk + 5} {
			x := make([]float32, n)
			for i := range x {
				x[i] = epiVal(rng)
			}
			want := make([]float32, n)
			for i, v := range x {
				if v != v {
					v += 0 // quiet a signalling NaN, as max(x+0, 0)
				}
				want[i] = max(v, 0)
			}
			y := make([]float32, n)
			if err := ReLU(x, y); err != nil {
				t.Fatal(err)
			}
			if !sameBits(y, want) {
				t.Fatalf("n=%d: ReLU(x, y) differs from max(x, 0)", n)
			}
			in := append([]float32(nil), x...)
			if err := ReLU(in, in); err != nil {
				t.Fatal(err)
			}
			if !sameBits(in, want) {
				t.Fatalf("n=%d: ReLU(x, x) differs from max(x, 0)", n)
			}
			dy := make([]float32, n)
			for i := range dy {
				dy[i] = epiVal(rng)
			}
			wantDx := make([]float32, n)
			for i, v := range x {
				if v > 0 {
					wantDx[i] = dy[i]
				}
			}
			dx := make([]float32, n)
			if err := ReLUBackward(x, dy, dx); err != nil {
				t.Fatal(err)
			}
			if !sameBits(dx, wantDx) {
				t.Fatalf("n=%d: ReLUBackward differs from the branchy loop", n)
			}
			if err := ReLUBackward(x, dy, dy); err != nil {
				t.Fatal(err)
			}
			if !sameBits(dy, wantDx) {
				t.Fatalf("n=%d: ReLUBackward in place differs from the branchy loop", n)
			}
		}
	})
}

// TestBiasActRowsNilBias checks biasActRows with a nil bias over more rows
// than zeroBias holds: nothing without relu, max(v+0, 0) with it.
func TestBiasActRowsNilBias(t *testing.T) {
	forEachImpl(t, func(t *testing.T, impl string) {
		rng := rand.New(rand.NewPCG(26, 4))
		rows, n, ldy := 2*len(zeroBias)+3, 5, 7
		y := make([]float32, rows*ldy)
		for i := range y {
			y[i] = epiVal(rng)
		}
		y0 := append([]float32(nil), y...)
		biasActRows(rows, n, y, ldy, nil, false)
		if !sameBits(y, y0) {
			t.Fatal("nil bias without relu changed y")
		}
		want := append([]float32(nil), y...)
		zeros := make([]float32, rows)
		biasActRef(rows, n, want, ldy, zeros, 1)
		biasActRows(rows, n, y, ldy, nil, true)
		if !sameBits(y, want) {
			t.Fatal("nil bias with relu differs from the reference with zero bias")
		}
		for _, v := range zeroBias {
			if v != 0 {
				t.Fatal("zeroBias written")
			}
		}
	})
}

// BenchmarkBiasAct: the epilogue on the output rows of a deep-model 3×3
// convolution (64 channels of 32×32) and of Sabour's conv1 (256 channels
// of 20×20), bias only and bias with ReLU; GB/s counts y read and written.
func BenchmarkBiasAct(b *testing.B) {
	for _, sh := range []struct {
		name    string
		rows, n int
	}{{"64x1024", 64, 1024}, {"256x400", 256, 400}} {
		rng := rand.New(rand.NewPCG(1, 10))
		y, bias := benchVec(rng, sh.rows*sh.n, 1), benchVec(rng, sh.rows, 1)
		for relu := range 2 {
			benchOp(b, fmt.Sprintf("%s/relu=%d", sh.name, relu), 0, float64(8*sh.rows*sh.n), func(o *ops) {
				o.biasAct(sh.rows, sh.n, y, sh.n, bias, relu)
			})
		}
	}
}

// BenchmarkReluMask: the backward's mask on 64K values (in the level-2
// cache) and on 4M (in memory); GB/s counts y and dy read and dx written.
func BenchmarkReluMask(b *testing.B) {
	for _, n := range []int{1 << 16, 1 << 22} {
		rng := rand.New(rand.NewPCG(1, 11))
		y, dy, dx := benchVec(rng, n, 1), benchVec(rng, n, 1), make([]float32, n)
		benchOp(b, fmt.Sprintf("n=%d", n), 0, float64(12*n), func(o *ops) { o.reluMask(n, y, dy, dx) })
	}
}
