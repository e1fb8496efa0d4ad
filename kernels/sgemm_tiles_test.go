package kernels

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/klauspost/cpuid/v2"
)

// sgemmRunnableTiles returns the tiles of this build the CPU runs.
func sgemmRunnableTiles() []sgemmTile {
	var ts []sgemmTile
	for _, t := range sgemmTiles {
		if implCPUOK(t.isa) {
			ts = append(ts, t)
		}
	}
	return ts
}

// TestSgemmEveryTile runs every micro-kernel tile of this build and CPU
// (asm.SgemmTilesAMD64 on amd64) through the blocked driver against
// sgemmRef: with tiny blocking (every block boundary, edge tile and
// beta-on-the-first-kc-block path crossed by odd shapes), and with the
// tile's default blocking on shapes that cross kc and leave tails in m and n.
func TestSgemmEveryTile(t *testing.T) {
	tiles := sgemmRunnableTiles()
	if len(tiles) == 0 {
		t.Skip("no selectable tiles in this build")
	}
	for _, tile := range tiles {
		t.Run(tile.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tile.mr), uint64(tile.nr)))
			def := sgemmDefaultBlocking(tile)
			for _, c := range []sgemmChoice{
				{tile.name, 3, tile.mr + 1, tile.nr + 1},
				{tile.name, 7, 3 * tile.mr, 2 * tile.nr},
				def,
			} {
				g := newSgemmFromChoice(c)
				call := func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, cm []float32, ldc int) error {
					g.sgemm(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, cm, ldc)
					return nil
				}
				n := 40
				if testing.Short() {
					n = 15
				}
				if c == def {
					for _, s := range [][3]int{{2*tile.mr + 1, 3*tile.nr - 1, def.kc + 5}, {37, 45, 70}} {
						sgemmRunCase(t, rng, c.String(), call, sgemmRandomCase(rng, s[0], s[1], s[2]))
					}
					continue
				}
				for range n {
					s := [3]int{sgemmSizes[rng.IntN(len(sgemmSizes))], sgemmSizes[rng.IntN(len(sgemmSizes))], sgemmSizes[rng.IntN(len(sgemmSizes))]}
					sgemmRunCase(t, rng, c.String(), call, sgemmRandomCase(rng, s[0], s[1], s[2]))
				}
			}
		})
	}
}

// withSgemmTiles runs f with sgemmTiles replaced by ts.
func withSgemmTiles(ts []sgemmTile, f func()) {
	prev := sgemmTiles
	sgemmTiles = ts
	defer func() { sgemmTiles = prev }()
	f()
}

// fakeSgemmTiles are portable tiles for the tests of parsing and choice.
var fakeSgemmTiles = []sgemmTile{
	{"avx2-4x4", "avx2", 4, 4, sgemmMicroGo, nil, nil},
	{"avx2-8x8", "avx2", 8, 8, sgemmMicroGo, nil, nil},
	{"avx512-4x4", "avx512", 4, 4, sgemmMicroGo, nil, nil},
}

func TestParseSgemmChoice(t *testing.T) {
	withSgemmTiles(fakeSgemmTiles, func() {
		good := map[string]sgemmChoice{
			"avx2-4x4":                        {"avx2-4x4", 256, 144, 512},
			"avx2-8x8":                        {"avx2-8x8", 256, 144, 512},
			" tile=avx512-4x4/kc=7 ":          {"avx512-4x4", 7, 144, 512},
			"avx2-8x8/nc=100/kc=64/mc=20":     {"avx2-8x8", 64, 20, 100},
			"avx2-4x4/kc=256/mc=144/nc=512":   {"avx2-4x4", 256, 144, 512},
			"tile=avx2-4x4/kc=1/mc=1/nc=1000": {"avx2-4x4", 1, 1, 1000},
		}
		for s, want := range good {
			got, err := parseSgemmChoice(s)
			if err != nil || got != want {
				t.Errorf("parseSgemmChoice(%q) = %v, %v; want %v", s, got, err, want)
			}
			if err == nil {
				if again, err := parseSgemmChoice(got.String()); err != nil || again != got {
					t.Errorf("%q does not round-trip: %v, %v", got.String(), again, err)
				}
			}
		}
		for _, s := range []string{"", "avx2", "avx2-4x5", "AVX2-4x4", "avx2-4x4/", "avx2-4x4/kc", "avx2-4x4/kc=0",
			"avx2-4x4/kc=-3", "avx2-4x4/kc=x", "avx2-4x4/kc=99999999", "avx2-4x4/kc=4/kc=5", "avx2-4x4/kr=4"} {
			if c, err := parseSgemmChoice(s); err == nil {
				t.Errorf("parseSgemmChoice(%q) = %v, want an error", s, c)
			}
		}
	})
}

func TestSgemmChoose(t *testing.T) {
	table := []sgemmCPU{
		{cpuid.Intel, 6, 167, "avx512", sgemmChoice{"avx512-4x4", 384, 96, 512}},
		{cpuid.Intel, 6, -1, "avx2", sgemmChoice{"avx2-8x8", 128, 96, 1024}},
		{cpuid.AMD, 25, 17, "avx512", sgemmChoice{"avx512-gone", 128, 96, 1024}}, // no such tile: skipped
		{cpuid.VendorUnknown, -1, -1, "avx2", sgemmChoice{"avx2-4x4", 256, 192, 512}},
	}
	over := &sgemmChoice{"avx2-4x4", 64, 32, 128}
	over512 := &sgemmChoice{"avx512-4x4", 64, 32, 128}
	cases := []struct {
		isa           string
		override      *sgemmChoice
		vendor        cpuid.Vendor
		family, model int
		want          sgemmChoice
	}{
		{"avx512", nil, cpuid.Intel, 6, 167, table[0].choice},
		{"avx512", nil, cpuid.Intel, 6, 143, sgemmChoice{"avx512-4x4", 256, 144, 512}}, // default blocking
		{"avx2", nil, cpuid.Intel, 6, 143, table[1].choice},                            // any model
		{"avx2", nil, cpuid.AMD, 6, 143, table[3].choice},                              // vendor differs: default row
		{"avx512", nil, cpuid.AMD, 25, 17, sgemmChoice{"avx512-4x4", 256, 144, 512}},   // unknown tile ignored
		{"avx2", over, cpuid.Intel, 6, 167, *over},
		{"avx512", over, cpuid.Intel, 6, 167, *over}, // an AVX2 tile runs in avx512
		{"avx2", over512, cpuid.Intel, 6, 167, table[1].choice},
		{"avx512", over512, cpuid.AMD, 25, 17, *over512},
	}
	withSgemmTiles(fakeSgemmTiles, func() {
		for _, c := range cases {
			got, ok := sgemmChoose(c.isa, c.override, table, c.vendor, c.family, c.model)
			if !ok || got != c.want {
				t.Errorf("sgemmChoose(%s, %v, %v %d/%d) = %v, %v; want %v", c.isa, c.override, c.vendor, c.family, c.model, got, ok, c.want)
			}
		}
		if c, ok := sgemmChoose("neon", nil, table, cpuid.Intel, 6, 167); ok {
			t.Errorf("sgemmChoose(neon) = %v, want none", c)
		}
	})
}

// TestSgemmCPUTable: every row of the real table names a tile of this build
// of its own ISA with a usable blocking, and every implementation with tiles
// has a default row.
func TestSgemmCPUTable(t *testing.T) {
	if len(sgemmTiles) == 0 {
		t.Skip("no selectable tiles in this build")
	}
	for _, r := range sgemmCPUTable {
		tile, ok := sgemmFindTile(r.choice.tile)
		if !ok || tile.isa != r.isa {
			t.Errorf("row %+v: no %s tile %q", r, r.isa, r.choice.tile)
		}
		if r.choice.kc < 1 || r.choice.mc < 1 || r.choice.nc < 1 {
			t.Errorf("row %+v: bad blocking", r)
		}
	}
	for isa := range sgemmISARank {
		if _, ok := sgemmLookupCPU(sgemmCPUTable, cpuid.VendorUnknown, 0, 0, isa); !ok {
			t.Errorf("no default row for %s", isa)
		}
	}
	for impl, c := range sgemmChoiceByImpl {
		if g := sgemmBlockedByImpl[impl]; g == nil || g.kc != c.kc {
			t.Errorf("%s: registered driver does not match its choice %v", impl, c)
		}
	}
	if _, ok := sgemmChoiceByImpl[Impl()]; ok && SgemmTile() == "" {
		t.Error("SgemmTile() is empty")
	}
}

// TestSgemmTileEnvVar runs this test binary again with CAPSTAN_SGEMM_TILE
// set: a valid value is used by every implementation that can run the tile,
// a bad one is reported once on stderr and ignored.
func TestSgemmTileEnvVar(t *testing.T) {
	if os.Getenv("CAPSTAN_PRINT_TILE") == "1" {
		for _, impl := range Available() {
			if c, ok := sgemmChoiceByImpl[impl]; ok {
				os.Stdout.WriteString("impl=" + impl + " tile=" + c.String() + "\n")
			}
		}
		return
	}
	if testing.Short() {
		t.Skip("spawns the test binary")
	}
	if os.Getenv(SgemmTileEnvVar) != "" {
		t.Skipf("%s is set for the whole test run", SgemmTileEnvVar)
	}
	tiles := sgemmRunnableTiles()
	if len(tiles) == 0 {
		t.Skip("no selectable tiles in this build")
	}
	run := func(val string) string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSgemmTileEnvVar$")
		cmd.Env = append(os.Environ(), "CAPSTAN_PRINT_TILE=1", SgemmTileEnvVar+"="+val)
		out, err := cmd.CombinedOutput()
		if errors.Is(err, syscall.ENOEXEC) {
			t.Skip("cannot re-execute the test binary")
		}
		if err != nil {
			t.Fatalf("%s=%s: %v\n%s", SgemmTileEnvVar, val, err, out)
		}
		return string(out)
	}
	last := tiles[len(tiles)-1]
	want := sgemmChoice{last.name, 5, 2 * last.mr, 3 * last.nr}
	out := run("tile=" + want.String())
	if !strings.Contains(out, " tile="+want.String()+"\n") {
		t.Errorf("%s=%s: output %q does not use it", SgemmTileEnvVar, want, out)
	}
	out = run("avx512-bogus")
	if n := strings.Count(out, SgemmTileEnvVar); n != 1 || !strings.Contains(out, "avx512-bogus") {
		t.Errorf("%s=avx512-bogus: %d warnings in %q, want 1", SgemmTileEnvVar, n, out)
	}
	for impl, c := range sgemmChoiceByImpl {
		if !strings.Contains(out, fmt.Sprintf("impl=%s tile=%s\n", impl, c)) && implCPUOK(impl) {
			t.Errorf("%s=avx512-bogus: output %q, want the per-CPU choice %s for %s", SgemmTileEnvVar, out, c, impl)
		}
	}
}

// sgemmTileShapes are the products of BenchmarkSgemmTiles: the square
// n = 512 of the OpenBLAS comparison and three GEMMs of the Sabour model
// (see sgemmBenchShapes): conv1 forward, one GEMM of the primary capsules'
// forward as the convolution issues it (16 images of 36 positions, a slab
// of 22 input channels of 9×9 taps; see docs/kernels.md) and the decoder's
// last layer at batch 32.
var sgemmTileShapes = []sgemmBenchShape{
	{"n=512", false, false, 512, 512, 512},
	{"conv1/fwd", false, false, 256, 400, 81},
	{"primcaps/fwd-chunk", false, false, 256, 576, 22 * 81},
	{"fc3/fwd", false, true, 32, 784, 1024},
}

// sgemmTileCandidates returns the blockings BenchmarkSgemmTiles tries for
// tile t: kc ∈ {256, 384, 512, 768} × mc ≈ {96, 192} rows (multiples of
// mr) with nc = 512, and the tile's default blocking first.
func sgemmTileCandidates(t sgemmTile) []sgemmChoice {
	cs := []sgemmChoice{sgemmDefaultBlocking(t)}
	for _, kc := range []int{256, 384, 512, 768} {
		for _, mc := range []int{96, 192} {
			c := sgemmChoice{t.name, kc, max(t.mr, (mc+t.mr/2)/t.mr*t.mr), 512}
			if c != cs[0] {
				cs = append(cs, c)
			}
		}
	}
	return cs
}

// BenchmarkSgemmTiles runs the blocked GEMM with every tile this CPU runs
// and every candidate blocking of sgemmTileCandidates, on sgemmTileShapes,
// and reports GFLOP/s. Sub-benchmarks are named SHAPE/tile=CHOICE, where
// CHOICE is a value for CAPSTAN_SGEMM_TILE. See docs/sgemm-tiles.md:
//
//	go test -run '^$' -bench 'SgemmTiles/n=512/' -benchtime 20x -count 6 -cpu 1 ./kernels/
func BenchmarkSgemmTiles(b *testing.B) {
	tiles := sgemmRunnableTiles()
	if len(tiles) == 0 {
		b.Skip("no selectable tiles in this build")
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for _, s := range sgemmTileShapes {
		op := s.operands(rng)
		ac, bc, a, bm, c, flops := op.ac, op.bc, op.a, op.b, op.c, op.flops
		for _, t := range tiles {
			for _, ch := range sgemmTileCandidates(t) {
				b.Run(s.name+"/tile="+ch.String(), func(b *testing.B) {
					g := newSgemmFromChoice(ch)
					g.sgemm(s.transA, s.transB, s.m, s.n, s.k, 1, a, ac, bm, bc, 0, c, s.n) // allocates the buffers
					b.ReportAllocs()
					for b.Loop() {
						g.sgemm(s.transA, s.transB, s.m, s.n, s.k, 1, a, ac, bm, bc, 0, c, s.n)
					}
					b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

// BenchmarkSgemmMicro runs each micro-kernel alone on cache-resident packed
// panels (kc = 256, beta = 0) and reports GFLOP/s: the ceiling of the
// blocked driver with that tile, without packing or edge tiles.
func BenchmarkSgemmMicro(b *testing.B) {
	const kc = 256
	for _, t := range sgemmRunnableTiles() {
		b.Run("tile="+t.name, func(b *testing.B) {
			a := make([]float32, kc*t.mr)
			bp := make([]float32, kc*t.nr)
			c := make([]float32, t.mr*t.nr)
			for i := range a {
				a[i] = 1
			}
			for i := range bp {
				bp[i] = 0.5
			}
			for b.Loop() {
				t.micro(kc, a, bp, c, t.nr, 1, 0)
			}
			b.ReportMetric(2*kc*float64(t.mr*t.nr)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
