//go:build amd64 && !noasm

package asm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/cpuid/v2"
)

// sgemmTileRuns reports whether this CPU runs the tiles of isa.
func sgemmTileRuns(isa string) bool {
	switch isa {
	case "avx2":
		return cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2, cpuid.FMA3)
	case "avx512":
		return cpuid.CPU.Supports(cpuid.AVX512F)
	}
	return false
}

// sgemmTileRef is the Go loop of the kernels' doc comments, with the sums in
// float64 (the kernels' float32 FMA chains differ by rounding only).
func sgemmTileRef(mr, nr, kc int, a, b, c []float32, ldc int, alpha, beta float32) {
	for i := range mr {
		for j := range nr {
			var s float64
			for p := range kc {
				s += float64(a[p*mr+i]) * float64(b[p*nr+j])
			}
			v := float64(alpha) * s
			if beta != 0 {
				v += float64(beta) * float64(c[i*ldc+j])
			}
			c[i*ldc+j] = float32(v)
		}
	}
}

// TestSgemmTiles runs every generated micro-kernel of this CPU on packed
// panels for k steps around the unrolling (0 to 9, 64), beta 0 (C preset to
// NaN: it must not be read), 1 and −0.5, and a padded ldc, and checks the
// tile against the Go loop and that C outside the tile is untouched.
func TestSgemmTiles(t *testing.T) {
	if len(SgemmTilesAMD64) == 0 {
		t.Fatal("no tiles")
	}
	ran := 0
	for _, tile := range SgemmTilesAMD64 {
		if !sgemmTileRuns(tile.ISA) {
			t.Logf("%s: skipped, the CPU lacks %s", tile.Name, tile.ISA)
			continue
		}
		ran++
		if want := fmt.Sprintf("%s-%dx%d", tile.ISA, tile.MR, tile.NR); tile.Name != want {
			t.Errorf("tile %q: name should be %q", tile.Name, want)
		}
		rng := rand.New(rand.NewPCG(uint64(tile.MR), uint64(tile.NR)))
		mr, nr := tile.MR, tile.NR
		for _, kc := range []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 64} {
			for _, beta := range []float32{0, 1, -0.5} {
				ldc := nr + 3
				a := make([]float32, kc*mr)
				b := make([]float32, kc*nr)
				for i := range a {
					a[i] = rng.Float32()*2 - 1
				}
				for i := range b {
					b[i] = rng.Float32()*2 - 1
				}
				// c has one guard row after the tile and guard columns
				// within the padding of every row.
				c := make([]float32, (mr+1)*ldc)
				for i := range c {
					c[i] = rng.Float32()*2 - 1
					if beta == 0 && i%ldc < nr && i/ldc < mr {
						c[i] = float32(math.NaN())
					}
				}
				want := append([]float32(nil), c...)
				const alpha = 0.75
				sgemmTileRef(mr, nr, kc, a, b, want, ldc, alpha, beta)
				tile.Kernel(kc, a, b, c[:(mr-1)*ldc+nr], ldc, alpha, beta)
				for i := range c {
					inside := i%ldc < nr && i/ldc < mr
					// Inside the tile: a float32 chain of kc products of
					// magnitude ≤ 1 errs by at most about kc²·2⁻²⁴ (2.4e-4 at
					// kc = 64); outside it nothing may change.
					tol := 0.0
					if inside {
						tol = 1e-5 * float64(kc+2)
					}
					if d := math.Abs(float64(c[i] - want[i])); !(d <= tol) {
						t.Fatalf("%s kc=%d beta=%g: c[%d] (row %d, col %d) = %g, want %g", tile.Name, kc, beta, i, i/ldc, i%ldc, c[i], want[i])
					}
				}
			}
		}
		// The exported kernel checks its operands.
		kc, ldc := 5, nr
		mustPanic(t, tile.Name+" short a", "a", func() {
			tile.Kernel(kc, mk(kc*mr-1), mk(kc*nr), mk(mr*ldc), ldc, 1, 0)
		})
		mustPanic(t, tile.Name+" short b", "b", func() {
			tile.Kernel(kc, mk(kc*mr), mk(kc*nr-1), mk(mr*ldc), ldc, 1, 0)
		})
		mustPanic(t, tile.Name+" short c", "c", func() {
			tile.Kernel(kc, mk(kc*mr), mk(kc*nr), mk((mr-1)*ldc+nr-1), ldc, 1, 0)
		})
		mustPanic(t, tile.Name+" small ldc", "ldc", func() {
			tile.Kernel(kc, mk(kc*mr), mk(kc*nr), mk(mr*nr*2), nr-1, 1, 0)
		})
	}
	if ran == 0 {
		t.Skip("this CPU runs none of the tiles")
	}
}

// TestSgemmPackA8 checks the 8-row packing against its Go loop for k steps
// around the 8-step blocks, a padded row stride, and a destination with
// guard values after the panel; then the bounds panics.
func TestSgemmPackA8(t *testing.T) {
	if !sgemmTileRuns("avx2") {
		t.Skip("the CPU lacks AVX2")
	}
	rng := rand.New(rand.NewPCG(8, 8))
	for _, kc := range []int{0, 1, 3, 7, 8, 9, 15, 16, 17, 64, 67} {
		lda := kc + 5
		a := make([]float32, 7*lda+kc)
		for i := range a {
			a[i] = rng.Float32()
		}
		dst := make([]float32, 8*kc+3)
		for i := range dst {
			dst[i] = -1
		}
		SgemmPackA8AVX2(kc, a, lda, dst[:8*kc])
		for p := range kc {
			for i := range 8 {
				if got, want := dst[p*8+i], a[i*lda+p]; got != want {
					t.Fatalf("kc=%d: dst[%d] (p=%d, row %d) = %g, want %g", kc, p*8+i, p, i, got, want)
				}
			}
		}
		for i := 8 * kc; i < len(dst); i++ {
			if dst[i] != -1 {
				t.Fatalf("kc=%d: dst[%d] = %g written past the panel", kc, i, dst[i])
			}
		}
	}
	mustPanic(t, "PackA8 short a", "a", func() { SgemmPackA8AVX2(5, mk(7*6+4), 6, mk(40)) })
	mustPanic(t, "PackA8 short dst", "dst", func() { SgemmPackA8AVX2(5, mk(7*6+5), 6, mk(39)) })
	mustPanic(t, "PackA8 negative lda", "stride", func() { SgemmPackA8AVX2(5, mk(100), -1, mk(40)) })
}
