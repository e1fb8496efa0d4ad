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

// TestSgemmDirect runs every generated direct kernel of this CPU on blocks
// of one and several tiles, k steps around the unrolling, offsets in
// random order (repeated, unaligned, reaching the last value of b), beta
// 0 (C preset to NaN), 1 and −0.5 and a padded ldc, against the Go loop
// of its doc comment, and checks that C outside the block is untouched;
// then the bounds panics.
func TestSgemmDirect(t *testing.T) {
	ran := 0
	for _, tile := range SgemmTilesAMD64 {
		if !sgemmTileRuns(tile.ISA) {
			continue
		}
		ran++
		rng := rand.New(rand.NewPCG(uint64(tile.NR), uint64(tile.MR)))
		mr, nr := tile.MR, tile.NR
		for _, kc := range []int{0, 1, 3, 4, 5, 9, 37} {
			for _, mn := range [][2]int{{1, 1}, {2, 3}} {
				m, n := mn[0]*mr, mn[1]*nr
				for _, beta := range []float32{0, 1, -0.5} {
					ldc := n + 5
					lda := kc*mr + rng.IntN(3) // panels apart by more than kc·mr too
					a := make([]float32, (m/mr-1)*lda+kc*mr)
					for i := range a {
						a[i] = rng.Float32()*2 - 1
					}
					b := make([]float32, n+50+rng.IntN(7))
					for i := range b {
						b[i] = rng.Float32()*2 - 1
					}
					offs := make([]int32, kc)
					for p := range offs {
						offs[p] = int32(rng.IntN(len(b) - n + 1))
					}
					if kc > 0 {
						offs[kc/2] = int32(len(b) - n) // the last value of b is read
					}
					c := make([]float32, (m+1)*ldc)
					for i := range c {
						c[i] = rng.Float32()*2 - 1
						if beta == 0 && i%ldc < n && i/ldc < m {
							c[i] = float32(math.NaN())
						}
					}
					want := append([]float32(nil), c...)
					const alpha = 0.75
					for i := range m {
						for j := range n {
							var s float64
							for p := range kc {
								s += float64(a[(i/mr)*lda+p*mr+i%mr]) * float64(b[int(offs[p])+j])
							}
							v := float64(alpha) * s
							if beta != 0 {
								v += float64(beta) * float64(want[i*ldc+j])
							}
							want[i*ldc+j] = float32(v)
						}
					}
					tile.Direct(m, n, kc, a, lda, b, offs, c[:(m-1)*ldc+n], ldc, alpha, beta)
					for i := range c {
						inside := i%ldc < n && i/ldc < m
						// As in TestSgemmTiles: a float32 chain of kc
						// products of magnitude ≤ 1 against a float64 sum.
						tol := 0.0
						if inside {
							tol = 1e-5 * float64(kc+2)
						}
						if d := math.Abs(float64(c[i] - want[i])); !(d <= tol) {
							t.Fatalf("%s direct m=%d n=%d kc=%d beta=%g: c[%d] (row %d, col %d) = %g, want %g", tile.Name, m, n, kc, beta, i, i/ldc, i%ldc, c[i], want[i])
						}
					}
				}
			}
		}
		kc, m, n := 5, mr, nr
		offs := []int32{0, 3, 1, 2, 4}
		mustPanic(t, tile.Name+" direct short a", "a", func() {
			tile.Direct(m, n, kc, mk(m*kc-1), kc*mr, mk(n+4), offs, mk(m*n), n, 1, 0)
		})
		mustPanic(t, tile.Name+" direct short b", "b", func() {
			tile.Direct(m, n, kc, mk(m*kc), kc*mr, mk(n+3), offs, mk(m*n), n, 1, 0)
		})
		mustPanic(t, tile.Name+" direct short offs", "offs", func() {
			tile.Direct(m, n, kc, mk(m*kc), kc*mr, mk(n+4), offs[:4], mk(m*n), n, 1, 0)
		})
		mustPanic(t, tile.Name+" direct negative offset", "offs", func() {
			tile.Direct(m, n, kc, mk(m*kc), kc*mr, mk(n+4), []int32{0, 3, -1, 2, 4}, mk(m*n), n, 1, 0)
		})
		mustPanic(t, tile.Name+" direct short c", "c", func() {
			tile.Direct(m, n, kc, mk(m*kc), kc*mr, mk(n+4), offs, mk(m*n-1), n, 1, 0)
		})
		mustPanic(t, tile.Name+" direct small ldc", "ldc", func() {
			tile.Direct(m, n, kc, mk(m*kc), kc*mr, mk(n+4), offs, mk(m*n*2), n-1, 1, 0)
		})
		mustPanic(t, tile.Name+" direct small lda", "lda", func() {
			tile.Direct(m, n, kc, mk(m*kc), kc*mr-1, mk(n+4), offs, mk(m*n), n, 1, 0)
		})
		mustPanic(t, tile.Name+" direct partial tile", "m", func() {
			tile.Direct(m+1, n, kc, mk((m+1)*kc), kc*mr, mk(n+4), offs, mk((m+1)*n), n, 1, 0)
		})
	}
	if ran == 0 {
		t.Skip("this CPU runs none of the tiles")
	}
}

// TestSgemmDirectA runs every generated direct-A kernel of this CPU (the
// tiles of at most 8 rows) on blocks of one and several tiles, k steps
// around the unrolling, row offsets in random order (repeated, reaching
// the last value of a), padded panels of B, beta 0 (C preset to NaN), 1
// and −0.5 and a padded ldc, against the Go loop of its doc comment, and
// checks that C outside the block is untouched; then the bounds panics.
func TestSgemmDirectA(t *testing.T) {
	ran := 0
	for _, tile := range SgemmTilesAMD64 {
		if (tile.DirectA == nil) != (tile.MR > 8) {
			t.Errorf("%s: DirectA is nil %v with %d rows", tile.Name, tile.DirectA == nil, tile.MR)
		}
		if !sgemmTileRuns(tile.ISA) || tile.DirectA == nil {
			continue
		}
		ran++
		rng := rand.New(rand.NewPCG(uint64(tile.NR), uint64(tile.MR)+1))
		mr, nr := tile.MR, tile.NR
		for _, kc := range []int{0, 1, 3, 4, 5, 9, 37} {
			for _, mn := range [][2]int{{1, 1}, {3, 2}} {
				m, n := mn[0]*mr, mn[1]*nr
				for _, beta := range []float32{0, 1, -0.5} {
					ldc, ldb := n+5, kc*nr+rng.IntN(3)*nr
					a := make([]float32, kc+40+rng.IntN(7))
					for i := range a {
						a[i] = rng.Float32()*2 - 1
					}
					aoffs := make([]int32, m)
					for i := range aoffs {
						aoffs[i] = int32(rng.IntN(len(a) - kc + 1))
					}
					aoffs[m/2] = int32(len(a) - kc) // the last value of a is read
					b := make([]float32, (n/nr-1)*ldb+kc*nr)
					for i := range b {
						b[i] = rng.Float32()*2 - 1
					}
					c := make([]float32, (m+1)*ldc)
					for i := range c {
						c[i] = rng.Float32()*2 - 1
						if beta == 0 && i%ldc < n && i/ldc < m {
							c[i] = float32(math.NaN())
						}
					}
					want := append([]float32(nil), c...)
					const alpha = 0.75
					for i := range m {
						for j := range n {
							var s float64
							for p := range kc {
								s += float64(a[int(aoffs[i])+p]) * float64(b[(j/nr)*ldb+p*nr+j%nr])
							}
							v := float64(alpha) * s
							if beta != 0 {
								v += float64(beta) * float64(want[i*ldc+j])
							}
							want[i*ldc+j] = float32(v)
						}
					}
					tile.DirectA(m, n, kc, a, aoffs, b, ldb, c[:(m-1)*ldc+n], ldc, alpha, beta)
					for i := range c {
						inside := i%ldc < n && i/ldc < m
						// As in TestSgemmTiles.
						tol := 0.0
						if inside {
							tol = 1e-5 * float64(kc+2)
						}
						if d := math.Abs(float64(c[i] - want[i])); !(d <= tol) {
							t.Fatalf("%s directA m=%d n=%d kc=%d beta=%g: c[%d] (row %d, col %d) = %g, want %g", tile.Name, m, n, kc, beta, i, i/ldc, i%ldc, c[i], want[i])
						}
					}
				}
			}
		}
		kc, m, n := 5, mr, nr
		aoffs := make([]int32, m)
		for i := range aoffs {
			aoffs[i] = int32(i % 3)
		}
		mustPanic(t, tile.Name+" directA short a", "a", func() {
			tile.DirectA(m, n, kc, mk(kc+1), aoffs, mk(kc*nr), kc*nr, mk(m*n), n, 1, 0)
		})
		mustPanic(t, tile.Name+" directA short aoffs", "aoffs", func() {
			tile.DirectA(m, n, kc, mk(kc+2), aoffs[:m-1], mk(kc*nr), kc*nr, mk(m*n), n, 1, 0)
		})
		bad := append([]int32(nil), aoffs...)
		bad[m-1] = -1
		mustPanic(t, tile.Name+" directA negative offset", "aoffs", func() {
			tile.DirectA(m, n, kc, mk(kc+2), bad, mk(kc*nr), kc*nr, mk(m*n), n, 1, 0)
		})
		mustPanic(t, tile.Name+" directA short b", "b", func() {
			tile.DirectA(m, n, kc, mk(kc+2), aoffs, mk(kc*nr-1), kc*nr, mk(m*n), n, 1, 0)
		})
		mustPanic(t, tile.Name+" directA small ldb", "ldb", func() {
			tile.DirectA(m, n, kc, mk(kc+2), aoffs, mk(kc*nr), kc*nr-1, mk(m*n), n, 1, 0)
		})
		mustPanic(t, tile.Name+" directA short c", "c", func() {
			tile.DirectA(m, n, kc, mk(kc+2), aoffs, mk(kc*nr), kc*nr, mk(m*n-1), n, 1, 0)
		})
		mustPanic(t, tile.Name+" directA partial tile", "n", func() {
			tile.DirectA(m, n+1, kc, mk(kc+2), aoffs, mk(kc*nr), kc*nr, mk(m*(n+1)), n+1, 1, 0)
		})
	}
	if ran == 0 {
		t.Skip("this CPU runs none of the tiles")
	}
}
