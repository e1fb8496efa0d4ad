package kernels

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"

	"github.com/klauspost/cpuid/v2"
)

// EnvVar names the environment variable that forces an implementation at
// start-up: CAPSTAN_KERNELS=ref|avx2|avx512|neon. An unknown or unavailable
// value is reported on stderr once and the best available implementation is
// used instead (a typo must not silently change numerics unnoticed).
const EnvVar = "CAPSTAN_KERNELS"

// ops is the table of primitives one implementation provides. Every field
// is filled: an implementation starts from its base table (ref for avx2 and
// neon, avx2 for avx512) and overrides what it has in assembly. Callers have
// checked every shape and length; primitives never allocate.
type ops struct {
	name string

	// sgemm is the full row-major GEMM of the public Sgemm, arguments checked.
	sgemm func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)
	// sgemmWork is sgemm with caller work space: when work holds at least
	// sgemmWorkSize(m, n, k) floats the packing buffers are carved from it
	// and nothing outside work is used; otherwise the driver's own are.
	sgemmWork func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int, work []float32)
	// sgemmWorkSize is the work sgemmWork uses for an m×n×k product (0 for
	// the reference loops, which use none).
	sgemmWorkSize func(m, n, k int) int
	// sgemmDriver is the blocked driver behind sgemm, or nil for the
	// reference loops; the implicit-GEMM convolutions (conv_implicit.go)
	// run on it with their own packing of op(B) and their own destination.
	sgemmDriver *sgemmBlocked

	// gemvN: y[r] += Σ_c a[r*lda+c]·x[c] for r < m, c < n.
	gemvN func(m, n int, a []float32, lda int, x, y []float32)
	// gemvT: y[c] += Σ_r x[r]·a[r*lda+c] for r < m, c < n.
	gemvT func(m, n int, a []float32, lda int, x, y []float32)
	// ger: a[r*lda+c] += x[r]·y[c] for r < m, c < n.
	ger func(m, n int, x, y, a []float32, lda int)
	// axpy: y[i] += alpha·x[i] for i < len(x) (len(y) ≥ len(x)); the SIMD
	// implementations run it as a one-row ger with alpha in a local array,
	// so that alpha passed by value does not escape.
	axpy func(alpha float32, x, y []float32)
	// mulAddRows: y[c] += Σ_l a[l*lda+c]·x[l*ldx+c] for l < k, c < n
	// (element-wise products of k row pairs, summed into y).
	mulAddRows func(k, n int, a []float32, lda int, x []float32, ldx int, y []float32)
	// mulAddRowsBatch: y[b*ystride+c] += Σ_l a[l*lda+c]·x[b*xstride+l*ldx+c]
	// for b < nb, l < k, c < n: mulAddRows for nb samples sharing a, in one
	// call that reads a once. Optional: nil when the implementation has no
	// kernel for it (callers then loop over mulAddRows).
	mulAddRowsBatch func(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int)
	// mulAddRowsBatchSet: mulAddRowsBatch overwriting y (y is not read):
	// y[b*ystride+c] = Σ_l a[l*lda+c]·x[b*xstride+l*ldx+c]. Optional, as
	// mulAddRowsBatch (both nil or both set).
	mulAddRowsBatchSet func(nb, k, n int, a []float32, lda int, x []float32, ldx, xstride int, y []float32, ystride int)

	// softmaxCols: for every column i < n of the rows×n row-major matrix l,
	// c[:,i] = softmax over the rows of l[:,i] (max-subtracted).
	softmaxCols func(rows, n int, l, c []float32)
	// softmaxColsGrad: dl[r,i] = c[r,i]·(dc[r,i] − Σ_r' c[r',i]·dc[r',i]).
	softmaxColsGrad func(rows, n int, c, dc, dl []float32)

	// softmaxRows: for every row r < rows of the rows×n row-major matrix l,
	// c[r,:] = softmax of l[r,:] (max-subtracted). c may be l.
	softmaxRows func(rows, n int, l, c []float32)
	// softmaxRowsGrad: dl[r,i] = c[r,i]·(dc[r,i] − Σ_i' c[r,i']·dc[r,i']).
	// dl may be dc.
	softmaxRowsGrad func(rows, n int, c, dc, dl []float32)

	// gerGroups: a[(j*d+k)*lda+c] += x[j*xs+k*xk]·y[j*ldy+c] for j < g,
	// k < d, c < n: g rank-1 updates of d×n blocks stacked in one matrix,
	// block j with its own rows of x and y, in one call. x is read with two
	// strides so that it can be capsule-major (xs = d, xk = 1) or
	// component-major (xs = 1, xk = g).
	gerGroups func(g, d, n int, x []float32, xs, xk int, y []float32, ldy int, a []float32, lda int)
	// ger2Groups: a[(j*d+k)*lda+c] += x[j*xs+k*xk]·y[j*ldy+c] +
	// x2[j*xs+k*xk]·y2[j*ldy+c]: gerGroups of two operand pairs with the same
	// strides, in one pass over a (the first product is added first).
	ger2Groups func(g, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int)
	// ger2GroupsSet is ger2Groups overwriting a instead of adding to it
	// (a is not read): a[(j*d+k)*lda+c] = x[j*xs+k*xk]·y[j*ldy+c] +
	// x2[j*xs+k*xk]·y2[j*ldy+c].
	ger2GroupsSet func(g, d, n int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, a []float32, lda int)
	// ger2GemvGroups: out[r*lda+c] = alpha·Σ_c' a[r*lda+c']·y2[j*ldy+c'] +
	// x[j*xs+k*xk]·y[j*ldy+c] + x2[j*xs+k*xk]·y2[j*ldy+c] for r = j*d+k:
	// gemvNGroups of a against y2, scaled, broadcast along the row and
	// added first, then ger2GroupsSet's two products, in one pass over a
	// and out (out has a's row stride).
	ger2GemvGroups func(g, d, n int, alpha float32, a []float32, lda int, x, x2 []float32, xs, xk int, y, y2 []float32, ldy int, out []float32)
	// gemvNTGroups: y[j*ys+k*yk] = Σ_c a[(j*d+k)*lda+c]·x[j*ldx+c], then
	// z[j*ldz+c] = Σ_k y[j*ys+k*yk]·a[(j*d+k)*lda+c]: gemvNGroups and
	// gemvTGroups of its result, both overwriting, in one call (y does not
	// overlap a, x or z; nothing is written when g, d or n is 0).
	gemvNTGroups func(g, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int, z []float32, ldz int)
	// gemvTGroups: y[j*ldy+c] += Σ_k x[j*xs+k*xk]·a[(j*d+k)*lda+c] for
	// j < g, k < d, c < n: the gemvT of every d×n block j into row j of y.
	gemvTGroups func(g, d, n int, a []float32, lda int, x []float32, xs, xk int, y []float32, ldy int)
	// gemvNGroups: y[j*ys+k*yk] += Σ_c a[(j*d+k)*lda+c]·x[j*ldx+c] for
	// j < g, k < d, c < n: the gemvN of every d×n block j with row j of x.
	gemvNGroups func(g, d, n int, a []float32, lda int, x []float32, ldx int, y []float32, ys, yk int)

	// squash: v = squash(s) for n capsules of dimension d stored
	// component-major (s[l*n+i] is component l of capsule i), kind SquashMazzia
	// or SquashSabour.
	squash func(kind Squash, d, n int, s, v []float32)
	// squashGrad: ds = (∂v/∂s)ᵀ·dv for the same layout (overwrites ds).
	squashGrad func(kind Squash, d, n int, s, dv, ds []float32)

	// exp: y[i] = exp(x[i]) for i < len(x) (y holds at least len(x)
	// values), within 2 ulp of float32(math.Exp) with the clamps of expRef.
	exp func(x, y []float32)

	// biasAct is the epilogue of the convolutions' GEMMs: for r < rows,
	// c < n, v = y[r*ldy+c] + bias[r], then v = max(v, 0) when relu ≠ 0,
	// stored back in y[r*ldy+c] (the ReLU of Go's max: +0 for every v ≤ 0,
	// −0 included, and NaN stays NaN, its bits as max leaves them on this
	// GOARCH). bias holds rows values (a layer without bias passes zeros;
	// see biasActRows). Element-wise, so every implementation must match
	// biasActRef bit for bit.
	biasAct func(rows, n int, y []float32, ldy int, bias []float32, relu int)
	// reluMask is the ReLU's backward: dx[i] = dy[i] where y[i] > 0 and +0
	// elsewhere (y ≤ 0 or NaN; a NaN dy there gives +0 too), for i < n; dx
	// may be dy. Bit for bit reluMaskRef.
	reluMask func(n int, y, dy, dx []float32)
	// compactAct is the direct convolutions' epilogue (conv_direct.go):
	// for o < ch, r < rows, c < n, y[(o*rows+r)*n+c] =
	// src[o*ldc+r*lds+c] + bias[o], then the ReLU when relu ≠ 0 — the
	// copy of the wide grid's rows into the dense output and biasAct in
	// one pass. Element-wise: bit for bit compactActRef (the copy and
	// biasActRef).
	compactAct func(ch, rows, n int, y, src []float32, lds, ldc int, bias []float32, relu int)
	// deinterleaveRows splits rows: for r < rows, j < ⌈n/2⌉,
	// d0[r*ldd+j] = src[r*lds+2j] and d1[r*ldd+j] = src[r*lds+2j+1], or 0
	// where 2j+1 = n (splitPhases). Moves only: bit for bit
	// deinterleaveRowsRef.
	deinterleaveRows func(rows, n int, src []float32, lds int, d0, d1 []float32, ldd int)
	// transpose16, where an implementation has it (nil elsewhere: the Go
	// loops of transposePanels run): for r < rows, t < n, j < 16,
	// dst[r*drow+t*ldd+j] = src[j*lds+r*srow+t]. Moves only: bit for bit
	// transpose16Ref.
	transpose16 func(rows, n int, src []float32, lds, srow int, dst []float32, ldd, drow int)

	// adamStep is AdamStep's element-wise update of len(w) elements (g, m
	// and v at least as long; w may be empty) with the scalars of k, of the
	// gradient g or, when h is not empty (then at least as long as w), of
	// g + h (AdamStepSum): the float32 operations of adamStepRef, in its
	// order, never fused. Bit for bit adamStepRef on amd64 (see adam.go for
	// arm64).
	adamStep func(k adamConsts, w, g, h, m, v []float32)

	// fmaPeak is the FMA throughput loop of FMAPeak (peak.go): fn(out, in,
	// iters) runs iters rounds of one FMA on each of a independent
	// accumulators of w lanes (acc_k += in[0:w]·in[w:2w]), 2·a·w·iters
	// flops, and writes their sum to out[0:w].
	fmaPeak fmaLoop

	// i8Name names the int8 GEMM path (ImplI8): "ref", "avx2", "avx512vnni".
	i8Name string
	// gemmI8: c[i*ldc+j] += Σ_p int32(a[i*lda+p])·int32(B[j][p]) for i < m,
	// j < p.n, p < p.k, B packed in p (GemmI8Packed, arguments checked).
	gemmI8 func(m int, a []int8, lda int, p *PackedI8, c []int32, ldc int)
	// requant: q[r*cols+c] = roundI8(float32(float32(acc[r*cols+c])·mul[c]) +
	// add[c], lo) for r < rows, c < cols (Requant, arguments checked). The
	// SIMD versions must match requantRef bit for bit.
	requant func(rows, cols int, q []int8, acc []int32, mul, add []float32, lo float32)
}

// Squash selects the squash non-linearity (docs/semantics.md §3).
type Squash int

const (
	// SquashMazzia is (1 − exp(−n))·s/n with n = sqrt(|s|² + ε) (paper eq. 1).
	SquashMazzia Squash = iota
	// SquashSabour is |s|²/(1 + |s|²)·s/n with n = sqrt(|s|² + ε).
	SquashSabour
)

// SquashEps is the ε added under the square root of every capsule norm.
const SquashEps = 1e-7

// String returns "mazzia" or "sabour".
func (k Squash) String() string {
	switch k {
	case SquashMazzia:
		return "mazzia"
	case SquashSabour:
		return "sabour"
	}
	return fmt.Sprintf("squash(%d)", int(k))
}

// implDef describes one implementation: its base and whether this CPU runs it.
type implDef struct {
	name, base string
	cpuOK      func() bool
	rank       int // higher is preferred
}

var implDefs = []implDef{
	{"ref", "", func() bool { return true }, 0},
	{"avx2", "ref", func() bool {
		return runtime.GOARCH == "amd64" && cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2, cpuid.FMA3)
	}, 1},
	{"avx512", "avx2", func() bool {
		return runtime.GOARCH == "amd64" && cpuid.CPU.Supports(cpuid.AVX, cpuid.AVX2, cpuid.FMA3, cpuid.AVX512F, cpuid.AVX512DQ, cpuid.AVX512BW, cpuid.AVX512VL)
	}, 2},
	{"neon", "ref", func() bool { return runtime.GOARCH == "arm64" }, 1},
}

type patch struct {
	impl  string
	apply func(*ops)
}

// patches is filled by package-level variable initialisers in the
// architecture files (var _ = register(...)), which all run before init.
var patches []patch

// register records that impl overrides some primitives with apply. It is
// called from package-level var declarations of build-tagged files.
func register(impl string, apply func(*ops)) bool {
	patches = append(patches, patch{impl, apply})
	return true
}

var (
	tables    = map[string]*ops{}
	available []string
	cur       *ops
)

func build(name string) *ops {
	for _, d := range implDefs {
		if d.name != name {
			continue
		}
		var o ops
		if d.base == "" {
			o = refOps
		} else {
			o = *build(d.base)
		}
		o.name = name
		for _, p := range patches {
			if p.impl == name {
				p.apply(&o)
			}
		}
		return &o
	}
	panic("kernels: unknown implementation " + name)
}

func init() {
	best := implDefs[0]
	for _, d := range implDefs {
		has := d.base == ""
		for _, p := range patches {
			if p.impl == d.name {
				has = true
			}
		}
		if !has || !d.cpuOK() {
			continue
		}
		tables[d.name] = build(d.name)
		available = append(available, d.name)
		if d.rank > best.rank {
			best = d
		}
	}
	cur = tables[best.name]
	if want := os.Getenv(EnvVar); want != "" {
		if err := Use(want); err != nil {
			fmt.Fprintf(os.Stderr, "capstan: %s=%q: %v; using %s\n", EnvVar, want, err, cur.name)
		}
	}
}

// Impl returns the name of the implementation in use: "ref", "avx2",
// "avx512" or "neon".
func Impl() string { return cur.name }

// Available lists the implementations this binary and CPU can run, the
// reference first. Tests loop over it.
func Available() []string { return append([]string(nil), available...) }

// Use switches every kernel to the named implementation. It is meant for
// start-up and tests: it must not race with running kernels.
func Use(name string) error {
	t, ok := tables[name]
	if !ok {
		known := make([]string, 0, len(implDefs))
		for _, d := range implDefs {
			known = append(known, d.name)
		}
		sort.Strings(known)
		return fmt.Errorf("kernel implementation %q not available on this CPU/build (available: %s; known: %s)",
			name, strings.Join(available, ", "), strings.Join(known, ", "))
	}
	cur = t
	return nil
}
