package kernels

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/cpuid/v2"
)

// SgemmTileEnvVar names the environment variable that forces the SGEMM
// micro-kernel tile, and optionally its blocking, at start-up:
//
//	CAPSTAN_SGEMM_TILE=avx512-14x32
//	CAPSTAN_SGEMM_TILE=avx512-14x32/kc=384/mc=112/nc=512
//
// The value is a tile name (ISA-MRxNR, see docs/sgemm-tiles.md), then any
// of kc, mc and nc; the others keep the tile's default. It is also the tail
// of the sub-benchmark names of BenchmarkSgemmTiles, so a sweep result can
// be pasted as is (a leading "tile=" is accepted). An AVX2 tile applies to
// the avx2 and avx512 implementations, an AVX-512 tile to avx512 only. A
// value that does not parse, names no tile of this build or needs an ISA the
// CPU lacks is reported on stderr once and ignored.
const SgemmTileEnvVar = "CAPSTAN_SGEMM_TILE"

// sgemmTile is one micro-kernel the blocked driver can run.
type sgemmTile struct {
	name    string // e.g. "avx512-8x32"
	isa     string // the implementation that provides it: "avx2", "avx512"
	mr, nr  int
	micro   sgemmMicro
	direct  sgemmDirectFn  // nil when the tile has no direct twin
	directA sgemmDirectAFn // nil when the tile has no direct-A twin
}

// sgemmTiles lists the tiles of this build, set by the architecture file
// (empty without selectable tiles: arm64, noasm).
var sgemmTiles = sgemmArchTiles()

// sgemmPackA8 packs 8 rows of a row-major op(A) into one 8-row panel,
// dst[p*8+i] = a[i*lda+p] for i < 8, p < kc, when the architecture file has
// a SIMD version for this CPU (nil otherwise): sgemmPackA uses it for every
// full panel of a tile with mr = 8. It is a copy: results do not change.
var sgemmPackA8 func(kc int, a []float32, lda int, dst []float32)

// sgemmChoice is a tile with its blocking sizes.
type sgemmChoice struct {
	tile       string
	kc, mc, nc int
}

// String formats c as CAPSTAN_SGEMM_TILE accepts it.
func (c sgemmChoice) String() string {
	return fmt.Sprintf("%s/kc=%d/mc=%d/nc=%d", c.tile, c.kc, c.mc, c.nc)
}

// sgemmDefaultBlocking is the blocking of a tile that no table entry or
// override sets: kc = 256 (a kc×nr micro-panel of B of at most 64 KiB stays
// in L1/L2), mc the multiple of mr nearest to 144 rows (an mc×kc block of A
// of about 144 KiB in L2), nc = 512. These are the sizes measured on Zen 4
// for the historical 8×32 AVX-512 tile.
func sgemmDefaultBlocking(t sgemmTile) sgemmChoice {
	mc := max(t.mr, (144+t.mr/2)/t.mr*t.mr)
	return sgemmChoice{tile: t.name, kc: 256, mc: mc, nc: 512}
}

// sgemmCPU is one row of the per-CPU table: on CPUs of this vendor, family
// and model (-1: any model), implementation isa runs choice.
type sgemmCPU struct {
	vendor        cpuid.Vendor
	family, model int
	isa           string
	choice        sgemmChoice
}

// sgemmCPUTable picks tile and blocking per CPU, for the entries where
// BenchmarkSgemmTiles measured a gain over the default (docs/sgemm-tiles.md
// has the figures and how to add a row). The first matching row wins; the
// rows of the "default" vendor (VendorUnknown, family -1) apply to every
// other CPU.
var sgemmCPUTable = []sgemmCPU{
	// Intel Xeon reporting family 6 model 167 (AVX-512 with FP16, 48 KiB
	// L1d, 2 MiB L2 per core): 8×48 beats 8×32 by 4-7 % on the model's
	// GEMMs and ties on n = 512; 4×24 beats 6×16 by 1.5-6 % on every shape
	// measured (docs/sgemm-tiles.md).
	{cpuid.Intel, 6, 167, "avx512", sgemmChoice{"avx512-8x48", 512, 96, 512}},
	{cpuid.Intel, 6, 167, "avx2", sgemmChoice{"avx2-4x24", 256, 192, 512}},
	// The historical tiles and blocking, measured on Zen 4.
	{cpuid.VendorUnknown, -1, -1, "avx2", sgemmChoice{"avx2-6x16", 256, 192, 512}},
	{cpuid.VendorUnknown, -1, -1, "avx512", sgemmChoice{"avx512-8x32", 256, 144, 512}},
}

// sgemmLookupCPU returns the table's choice for implementation isa on a CPU
// of the given vendor, family and model.
func sgemmLookupCPU(table []sgemmCPU, vendor cpuid.Vendor, family, model int, isa string) (sgemmChoice, bool) {
	for _, r := range table {
		if r.isa != isa {
			continue
		}
		if r.family == -1 || (r.vendor == vendor && r.family == family && (r.model == -1 || r.model == model)) {
			return r.choice, true
		}
	}
	return sgemmChoice{}, false
}

// sgemmFindTile returns the tile named name.
func sgemmFindTile(name string) (sgemmTile, bool) {
	for _, t := range sgemmTiles {
		if t.name == name {
			return t, true
		}
	}
	return sgemmTile{}, false
}

// sgemmTileNames lists the tiles of this build, for error messages.
func sgemmTileNames() string {
	names := make([]string, len(sgemmTiles))
	for i, t := range sgemmTiles {
		names[i] = t.name
	}
	if len(names) == 0 {
		return "none in this build"
	}
	return strings.Join(names, ", ")
}

// parseSgemmChoice parses a CAPSTAN_SGEMM_TILE value (see SgemmTileEnvVar)
// against the tiles of this build.
func parseSgemmChoice(s string) (sgemmChoice, error) {
	parts := strings.Split(strings.TrimPrefix(strings.TrimSpace(s), "tile="), "/")
	t, ok := sgemmFindTile(parts[0])
	if !ok {
		return sgemmChoice{}, fmt.Errorf("unknown tile %q (tiles: %s)", parts[0], sgemmTileNames())
	}
	c := sgemmDefaultBlocking(t)
	seen := map[string]bool{}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil || n < 1 || n > 1<<16 {
			return sgemmChoice{}, fmt.Errorf("bad blocking %q (want kc=N, mc=N or nc=N with 1 ≤ N ≤ 65536)", p)
		}
		if seen[k] {
			return sgemmChoice{}, fmt.Errorf("%s given twice", k)
		}
		seen[k] = true
		switch k {
		case "kc":
			c.kc = n
		case "mc":
			c.mc = n
		case "nc":
			c.nc = n
		default:
			return sgemmChoice{}, fmt.Errorf("bad blocking %q (want kc, mc or nc)", p)
		}
	}
	return c, nil
}

// sgemmISARank orders the ISAs of the tiles: a tile of rank r runs in every
// implementation of rank ≥ r.
var sgemmISARank = map[string]int{"avx2": 1, "avx512": 2}

// sgemmOverride is the parsed CAPSTAN_SGEMM_TILE, read once.
var sgemmOverride = sync.OnceValue(func() *sgemmChoice {
	v := os.Getenv(SgemmTileEnvVar)
	if v == "" {
		return nil
	}
	c, err := parseSgemmChoice(v)
	if err == nil {
		t, _ := sgemmFindTile(c.tile)
		if !implCPUOK(t.isa) {
			err = fmt.Errorf("tile %s needs %s, which this CPU lacks", t.name, t.isa)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "capstan: %s=%q: %v; using the per-CPU choice\n", SgemmTileEnvVar, v, err)
		return nil
	}
	return &c
})

// implCPUOK reports whether this CPU runs implementation name.
func implCPUOK(name string) bool {
	for _, d := range implDefs {
		if d.name == name {
			return d.cpuOK()
		}
	}
	return false
}

// sgemmChoose returns the tile and blocking implementation isa runs: the
// override when it names a tile isa can run, else the first matching row of
// table, else the default blocking of the first tile of isa. ok is false when
// this build has no tile for isa.
func sgemmChoose(isa string, override *sgemmChoice, table []sgemmCPU, vendor cpuid.Vendor, family, model int) (c sgemmChoice, ok bool) {
	if override != nil {
		if t, found := sgemmFindTile(override.tile); found && sgemmISARank[t.isa] <= sgemmISARank[isa] {
			return *override, true
		}
	}
	if c, found := sgemmLookupCPU(table, vendor, family, model, isa); found {
		if _, found := sgemmFindTile(c.tile); found {
			return c, true
		}
	}
	for _, t := range sgemmTiles {
		if t.isa == isa {
			return sgemmDefaultBlocking(t), true
		}
	}
	return sgemmChoice{}, false
}

// newSgemmFromChoice returns the blocked driver of c (whose tile exists).
func newSgemmFromChoice(c sgemmChoice) *sgemmBlocked {
	t, _ := sgemmFindTile(c.tile)
	g := newSgemmBlocked(t.micro, t.mr, t.nr, c.kc, c.mc, c.nc)
	g.direct, g.directA = t.direct, t.directA
	if t.nr&(t.nr-1) != 0 {
		// The filter gradient's columns are output channels, mostly powers
		// of two: fall back to the widest direct-A tile of the ISA with nr a
		// power of two of at most 32 (avx512: 8×32; avx2: 6×16). Measured
		// on Intel family 6 model 167, whose table picks 8×48: the deep
		// model's 3×3 filter gradients 84-90 → 94-99 GFLOP/s (stride 1)
		// and 77-78 → 92-95 (stride 2) on 8×32's direct kernel.
		for _, a := range sgemmTiles {
			if a.isa == t.isa && a.directA != nil && a.nr&(a.nr-1) == 0 && a.nr <= 32 && a.nr > g.filterNR {
				g.filterA, g.filterMR, g.filterNR = a.directA, a.mr, a.nr
			}
		}
	}
	return g
}

// sgemmForISA returns the blocked driver implementation isa registers on
// this CPU, and the choice it was built from.
func sgemmForISA(isa string) (*sgemmBlocked, sgemmChoice) {
	c, ok := sgemmChoose(isa, sgemmOverride(), sgemmCPUTable, cpuid.CPU.VendorID, cpuid.CPU.Family, cpuid.CPU.Model)
	if !ok {
		panic("kernels: no sgemm tile for " + isa) // a build defect: the arch file lists them
	}
	return newSgemmFromChoice(c), c
}

// sgemmChoiceByImpl records the tile and blocking of every implementation
// that registered a tiled sgemm (for tests and SgemmTile).
var sgemmChoiceByImpl = map[string]sgemmChoice{}

// registerSgemmTile registers the per-CPU tiled sgemm of implementation isa.
func registerSgemmTile(isa string) bool {
	g, c := sgemmForISA(isa)
	sgemmChoiceByImpl[isa] = c
	return registerSgemm(isa, g)
}

// SgemmTile returns the micro-kernel tile and blocking Sgemm uses in the
// current implementation, formatted as CAPSTAN_SGEMM_TILE accepts it (e.g.
// "avx512-8x32/kc=256/mc=144/nc=512"), or "" when the implementation has no
// selectable tiles (ref, neon).
func SgemmTile() string {
	c, ok := sgemmChoiceByImpl[cur.name]
	if !ok {
		return ""
	}
	return c.String()
}
