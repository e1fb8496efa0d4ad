package kernels

import (
	"errors"
	"fmt"
	"iter"
	"math"
	"os"
	"strings"
	"sync"
)

// Winograd convolution (issue 26): F(2×2, 5×5) on the polyphase form of a
// convolution, for the shapes where it does far fewer multiply-adds than
// the direct GEMM: Sabour's primary capsules.
//
// A convolution of stride S is the sum of S² stride-1 convolutions, one per
// phase (p, q) ∈ [0, S)²: the phase's input is x[S·i+p][S·j+q] (zero padded)
// and its kernel w[S·a+p][S·b+q], a, b < ⌈K/S⌉. Sabour's primary capsules
// (9×9, stride 2) become four stride-1 convolutions with kernels of 5×5,
// 5×4, 4×5 and 4×4, each zero-padded to 5×5. F(2×2, 5×5) computes a 2×2
// tile of output from a 6×6 tile of input with 36 products instead of 100,
// through the transforms
//
//	Y = Aᵀ [ (G g Gᵀ) ⊙ (Bᵀ d B) ] A
//
// on the six points 0, 1, −1, 2, −2 and ∞ (the points of F(4×4, 3×3), so Bᵀ
// is that algorithm's integer matrix; G carries the denominators). The sum
// over the S² phases and the input channels is a GEMM in each of the 36
// transformed points: M[ξ] (tiles × OutC) = V[ξ] (tiles × S²·InC) · U[ξ]ᵀ,
// one row per 2×2 output tile of each image. On Sabour's primary capsules
// the GEMMs do 44% of the direct convolution's multiply-adds (36·4 per
// 2×2 tile and channel pair against 81·4).
//
// Every transform is a small matrix applied to rows of channels, so the
// activations go channels-last into a buffer per chunk of images (each
// phase zero padded to whole tiles): a tile's 36 inputs are then 36 rows
// of InC values at fixed offsets, and the transform is one call of the
// driver's direct GEMM kernel (asm.SgemmTile.Direct, conv_direct.go),
// Bᵀ⊗Bᵀ (36×36) times those rows. The weights' transform is G⊗G on each
// phase's taps, per output channel; the backward passes run the transposes
// of the same steps in reverse.
//
// Numerics: the results differ from the direct convolution's in the last
// bits, and by more: the transforms' coefficients (up to 5·4 on the input
// side) make Winograd's rounding a cancellation error of the tile's terms,
// about 7× the direct path's mean error on Sabour's primary capsules
// (measured against the float64 reference; the tests bound it).

// Winograd tile geometry: 2×2 outputs from 6×6 inputs with 5×5 kernels.
const (
	winoM     = 2     // output tile side
	winoR     = 5     // phase kernel side
	winoN     = 6     // input tile side, transform points
	winoPts   = 6 * 6 // transformed points per tile
	winoRows  = 144   // target rows (tiles of a chunk of images) of each point's GEMM
	winoMaxS  = 2     // largest stride taken
	winoMaxMR = 32    // bound on the direct kernels' tile rows, for the scratch
)

// convWinogradOn turns the Winograd path off for tests and benchmarks
// (the direct or implicit GEMM then runs).
var convWinogradOn = true

// WinogradEnvVar names the environment variable that turns the Winograd
// path off for the whole process: CAPSTAN_WINOGRAD=off (or 0, false, no)
// makes ConvForwardTrain and ConvBackwardTrain keep the GEMM paths, for
// bits closer to PyTorch's or to runs trained before it existed; on (or
// 1, true, yes, empty) is the default. Any other value is reported on
// standard error and leaves it on. It is read once, at the first use.
const WinogradEnvVar = "CAPSTAN_WINOGRAD"

// winogradEnvOn is the parsed CAPSTAN_WINOGRAD, read once.
var winogradEnvOn = sync.OnceValue(func() bool {
	v := os.Getenv(WinogradEnvVar)
	on, err := parseWinogradEnv(v)
	if err != nil {
		fmt.Fprintf(os.Stderr, "capstan: %s=%q: %v; the Winograd path stays on\n", WinogradEnvVar, v, err)
	}
	return on
})

// parseWinogradEnv reads a value of CAPSTAN_WINOGRAD.
func parseWinogradEnv(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "", "on", "1", "true", "yes":
		return true, nil
	case "off", "0", "false", "no":
		return false, nil
	}
	return true, fmt.Errorf("want on or off")
}

// winoOK reports whether the Winograd path can compute shape s: one group,
// equal strides of 1 or 2, and kernels whose phases are at most 5×5.
func (s ConvShape) winoOK() bool {
	if s.Groups != 1 || s.StrideH != s.StrideW || s.StrideH < 1 || s.StrideH > winoMaxS {
		return false
	}
	st := s.StrideH
	return (s.KH+st-1)/st <= winoR && (s.KW+st-1)/st <= winoR && s.OutH() > 0 && s.OutW() > 0
}

// winoPays reports whether the Winograd path is worth its transforms on
// shape s: it can take it, both channel counts are at least 32 (the
// transforms' rows and the GEMMs' panels), and the point GEMMs do at most
// half the direct GEMM's multiply-adds (36·S² per 2×2 tile against
// 4·KH·KW): 9×9 stride 2 (0.44) and 5×5 stride 1 (0.36) do, 3×3 does not.
// The inputs are trusted to be a valid shape (Validate).
func (s ConvShape) winoPays() bool {
	if !s.winoOK() || s.InC < 32 || s.OutC < 32 || 2*winoPts*s.StrideH*s.StrideW > winoM*winoM*s.KH*s.KW {
		return false
	}
	// The direct kernels take int32 offsets: the 36 planes of U, and of a
	// chunk's V and M, must be addressable by them (and every size fit a
	// 32-bit int). Beyond, the GEMM paths run.
	_, _, nt := s.winoTiles()
	cols, k := s.winoChunk()*nt, int64(s.winoK())
	lim := int64(math.MaxInt32)
	return int64(winoPts)*int64(s.OutC)*k <= lim && int64(winoPts)*int64(cols)*max(k, int64(s.OutC)) <= lim &&
		int64(s.Batch)*int64(winoPts*nt)*k <= lim
}

// winoTiles returns the output tiles of one image: rows, columns, total.
func (s ConvShape) winoTiles() (th, tw, t int) {
	th, tw = (s.OutH()+winoM-1)/winoM, (s.OutW()+winoM-1)/winoM
	return th, tw, th * tw
}

// winoK returns the reduction length of each point's GEMM: S²·InC.
func (s ConvShape) winoK() int { return s.StrideH * s.StrideW * s.InC }

// winoChunk returns the images per chunk: enough for about winoRows rows
// in each point's GEMM, at most the batch.
func (s ConvShape) winoChunk() int {
	_, _, t := s.winoTiles()
	return max(1, min(s.Batch, (winoRows+t-1)/t))
}

// winoUSize returns the floats of the transformed weights: 36·OutC·S²·InC.
func (s ConvShape) winoUSize() int { return winoPts * s.OutC * s.winoK() }

// The transforms as matrices on a tile's values in row-major order:
// winoBB = Bᵀ⊗Bᵀ (36×36, the input transform), winoAA = Aᵀ⊗Aᵀ (4×36, the
// output transform), winoGG = G⊗G (36×25, the weights' transform), each
// entry computed in float64 and rounded once.
var winoBB, winoAA, winoGG = winoKron()

func winoKron() (bb, aa, gg [][]float32) {
	bt := [winoN][winoN]float64{
		{4, 0, -5, 0, 1, 0},
		{0, 4, 4, -1, -1, 0},
		{0, -4, 4, 1, -1, 0},
		{0, -2, -1, 2, 1, 0},
		{0, 2, -1, -2, 1, 0},
		{0, 4, 0, -5, 0, 1},
	}
	at := [winoM][winoN]float64{{1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 1}}
	// G: the kernel polynomial at 0, 1, −1, 2, −2 and ∞, each row divided
	// by the factor its row of Bᵀ was multiplied by (4, 6, 6, 24, 24, 1).
	g := [winoN][winoR]float64{
		{1. / 4, 0, 0, 0, 0},
		{1. / 6, 1. / 6, 1. / 6, 1. / 6, 1. / 6},
		{1. / 6, -1. / 6, 1. / 6, -1. / 6, 1. / 6},
		{1. / 24, 2. / 24, 4. / 24, 8. / 24, 16. / 24},
		{1. / 24, -2. / 24, 4. / 24, -8. / 24, 16. / 24},
		{0, 0, 0, 0, 1},
	}
	kron := func(rows, cols int, x func(i1, j1, i2, j2 int) float64) [][]float32 {
		out := make([][]float32, rows*rows)
		for i1 := 0; i1 < rows; i1++ {
			for i2 := 0; i2 < rows; i2++ {
				row := make([]float32, cols*cols)
				for j1 := 0; j1 < cols; j1++ {
					for j2 := 0; j2 < cols; j2++ {
						row[j1*cols+j2] = float32(x(i1, j1, i2, j2))
					}
				}
				out[i1*rows+i2] = row
			}
		}
		return out
	}
	bb = kron(winoN, winoN, func(i1, j1, i2, j2 int) float64 { return bt[i1][j1] * bt[i2][j2] })
	aa = kron(winoM, winoN, func(i1, j1, i2, j2 int) float64 { return at[i1][j1] * at[i2][j2] })
	gg = kron(winoN, winoR, func(i1, j1, i2, j2 int) float64 { return g[i1][j1] * g[i2][j2] })
	return bb, aa, gg
}

// winoXform applies a small matrix t (rows × kc) to kc rows of n values
// read at fixed offsets: c[i·ldc + j] = Σ_q t[i][q]·b[offs[q]+j]. On the
// driver's direct GEMM kernel (n a multiple of its nr) t is packed in its
// mr-row panels and the rows of a last partial panel go through a scratch
// of mr·n floats; without one (f nil) Go loops compute the same sums.
type winoXform struct {
	f    sgemmDirectFn
	mr   int
	rows int
	kc   int
	t    [][]float32 // rows × kc
	a    []float32   // t packed: a[(i/mr)·kc·mr + q·mr + i%mr], rows rounded up to mr
}

// newWinoXform packs t for f (a nil f keeps only t).
func newWinoXform(f sgemmDirectFn, mr int, t [][]float32) winoXform {
	x := winoXform{f: f, mr: mr, rows: len(t), t: t}
	if len(t) > 0 {
		x.kc = len(t[0])
	}
	if f == nil {
		return x
	}
	x.a = make([]float32, roundUp(x.rows, mr)*x.kc)
	for i, row := range t {
		for q, v := range row {
			x.a[(i/mr)*x.kc*mr+q*mr+i%mr] = v
		}
	}
	return x
}

// apply computes the transform of the n columns at b into c (ldc apart);
// scratch holds mr·n floats.
func (x *winoXform) apply(n int, b []float32, offs []int32, c []float32, ldc int, scratch []float32) {
	if x.f == nil {
		for i, row := range x.t {
			ci := c[i*ldc : i*ldc+n]
			clear(ci)
			for q, v := range row {
				if v == 0 {
					continue
				}
				bq := b[int(offs[q]) : int(offs[q])+n]
				for j := range ci {
					ci[j] += v * bq[j]
				}
			}
		}
		return
	}
	full := x.rows / x.mr * x.mr
	if full > 0 {
		x.f(full, n, x.kc, x.a, x.kc*x.mr, b, offs, c, ldc, 1, 0)
	}
	if rem := x.rows - full; rem > 0 {
		x.f(x.mr, n, x.kc, x.a[full*x.kc:], x.kc*x.mr, b, offs, scratch, n, 1, 0)
		for r := 0; r < rem; r++ {
			copy(c[(full+r)*ldc:(full+r)*ldc+n], scratch[r*n:(r+1)*n])
		}
	}
}

// winoT returns the transpose of the rows × cols matrix t.
func winoT(t [][]float32) [][]float32 {
	if len(t) == 0 {
		return nil
	}
	out := make([][]float32, len(t[0]))
	for j := range out {
		out[j] = make([]float32, len(t))
		for i := range t {
			out[j][i] = t[i][j]
		}
	}
	return out
}

// winoKernel returns the direct kernel the transforms of s run on, with
// its tile's rows, or nil (the Go loops) where there is none or the
// channel counts are not whole column panels of it.
func (s ConvShape) winoKernel() (sgemmDirectFn, int) {
	if f, mr, nr := convDirectKernel(); f != nil && s.InC%nr == 0 && s.OutC%nr == 0 {
		return f, mr
	}
	return nil, 1
}

// winoXforms are the transforms of one shape on one kernel: the input's
// (Bᵀ⊗Bᵀ) and its transpose, the output's (Aᵀ⊗Aᵀ) and its transpose, and
// per phase the weights' (G⊗G on the phase's taps) and its transpose,
// with the taps' offsets in a channels-last kernel (tap·InC).
type winoXforms struct {
	in, inT, out, outT winoXform
	w, wT              [winoMaxS * winoMaxS]winoXform
	taps               [winoMaxS * winoMaxS][]int32
}

// winoKey identifies a winoXforms: the kernel (by its driver) and what the
// phases' taps depend on.
type winoKey struct {
	d               *sgemmBlocked
	mr              int
	kh, kw, st, inC int
}

// winoCache holds the transforms made so far, so that a training step
// allocates nothing after its first (the matrices are packed once per
// kernel and shape). A plain map under a lock: sync.Map would box every
// key looked up.
var winoCache struct {
	sync.RWMutex
	m map[winoKey]*winoXforms
}

// winoXformsFor returns the transforms of s on kernel f (tile rows mr).
func (s ConvShape) winoXformsFor(f sgemmDirectFn, mr int) *winoXforms {
	var d *sgemmBlocked
	if f != nil {
		d = convDriver()
	}
	key := winoKey{d, mr, s.KH, s.KW, s.StrideH, s.InC}
	winoCache.RLock()
	x, ok := winoCache.m[key]
	winoCache.RUnlock()
	if ok {
		return x
	}
	winoCache.Lock()
	defer winoCache.Unlock()
	if x, ok := winoCache.m[key]; ok {
		return x
	}
	x = &winoXforms{
		in: newWinoXform(f, mr, winoBB), inT: newWinoXform(f, mr, winoT(winoBB)),
		out: newWinoXform(f, mr, winoAA), outT: newWinoXform(f, mr, winoT(winoAA)),
	}
	st := s.StrideH
	for ph := 0; ph < st*st; ph++ {
		var cols []int
		x.taps[ph], cols = s.winoPhaseTaps(ph/st, ph%st)
		if len(cols) == 0 {
			continue
		}
		t := make([][]float32, winoPts)
		for xi := range t {
			t[xi] = make([]float32, len(cols))
			for q, col := range cols {
				t[xi][q] = winoGG[xi][col]
			}
		}
		x.w[ph], x.wT[ph] = newWinoXform(f, mr, t), newWinoXform(f, mr, winoT(t))
	}
	if winoCache.m == nil {
		winoCache.m = make(map[winoKey]*winoXforms)
	}
	winoCache.m[key] = x
	return x
}

// winoPhaseTaps returns the taps of phase (p, q) of a stride-st kernel, as
// offsets (kh·KW+kw)·InC in a channels-last kernel, and the columns of
// G⊗G (a·5+b) they are.
func (s ConvShape) winoPhaseTaps(p, q int) (taps []int32, cols []int) {
	st := s.StrideH
	for a := 0; a < winoR; a++ {
		for b := 0; b < winoR; b++ {
			if kh, kw := st*a+p, st*b+q; kh < s.KH && kw < s.KW {
				taps = append(taps, int32((kh*s.KW+kw)*s.InC))
				cols = append(cols, a*winoR+b)
			}
		}
	}
	return taps, cols
}

// winoPlan is the geometry of one Winograd pass (the tiles, the padded
// phases, the chunk) and its transforms.
type winoPlan struct {
	st, k      int // stride; reduction length S²·InC
	th, tw, nt int // output tiles per image: rows, columns, total
	hq, wq     int // padded phase height and width: 2·th+4, 2·tw+4
	chunk      int // images per chunk
	mr         int // the transforms' tile rows (1 for the Go loops)
	x          *winoXforms
}

// winoGeom returns the plan's geometry for transforms of mr-row tiles
// (no transforms).
func (s ConvShape) winoGeom(mr int) winoPlan {
	p := winoPlan{st: s.StrideH, k: s.winoK(), mr: mr}
	p.th, p.tw, p.nt = s.winoTiles()
	p.hq, p.wq = winoM*p.th+winoN-winoM, winoM*p.tw+winoN-winoM
	p.chunk = s.winoChunk()
	return p
}

// winoPlan returns the plan of s on the current implementation.
func (s ConvShape) winoPlan() winoPlan {
	f, mr := s.winoKernel()
	p := s.winoGeom(mr)
	p.x = s.winoXformsFor(f, mr)
	return p
}

// sizes returns the floats of each chunk buffer: the phase-major
// channels-last input (xs), the transformed input or its gradient (vs),
// the products or the transformed output gradient (ms), an output tile of
// 4 rows of OutC (ts), the transforms' scratch (ss), and a tile's 36 rows
// of input gradient (ds).
func (p *winoPlan) sizes(s ConvShape) (xs, vs, ms, ts, ss, ds int) {
	cols := p.chunk * p.nt
	xs = p.chunk * p.st * p.st * p.hq * p.wq * s.InC
	vs = winoPts * cols * p.k
	ms = winoPts * cols * s.OutC
	ts = winoM * winoM * s.OutC
	ss = p.mr * max(s.InC, s.OutC, winoPts)
	ds = winoPts * s.InC
	return
}

// winoBufs are a pass's chunk buffers, cut from its work, and the
// transforms' row offsets (int32 views of work: offsets on the stack would
// escape through the kernels' function values).
type winoBufs struct {
	xt, v, m, tt, scratch, dd, wt, gemm []float32
	offIn                               []int32 // a tile's 36 inputs in a channels-last phase
	offOut                              []int32 // a tile's 4 outputs in a channels-last tile
	offP                                []int32 // the 36 points' planes of v, m or u (set per use)
}

// winoOffs is the work the offsets take.
const winoOffs = 2*winoPts + winoM*winoM

// bufs cuts the chunk buffers from work (at least winoTotal −
// winoUSize floats).
func (p *winoPlan) bufs(s ConvShape, work []float32) winoBufs {
	xs, vs, ms, ts, ss, ds := p.sizes(s)
	var b winoBufs
	for _, c := range [...]struct {
		dst *[]float32
		n   int
	}{{&b.xt, xs}, {&b.v, vs}, {&b.m, ms}, {&b.tt, ts}, {&b.scratch, ss}, {&b.dd, ds}, {&b.wt, s.KH * s.KW * s.InC}} {
		*c.dst = work[:c.n:c.n]
		work = work[c.n:]
	}
	offs := int32s(work, winoOffs)
	b.gemm = work[winoOffs:]
	b.offIn, b.offOut, b.offP = offs[:winoPts:winoPts], offs[winoPts:winoPts+winoM*winoM], offs[winoPts+winoM*winoM:]
	for a := 0; a < winoN; a++ {
		for bb := 0; bb < winoN; bb++ {
			b.offIn[a*winoN+bb] = int32((a*p.wq + bb) * s.InC)
		}
	}
	for q := range b.offOut {
		b.offOut[q] = int32(q * s.OutC)
	}
	return b
}

// planes sets offP to the 36 points' planes, plane floats apart.
func (b *winoBufs) planes(plane int) []int32 {
	for q := range b.offP {
		b.offP[q] = int32(q * plane)
	}
	return b.offP
}

// winoWeights writes the transformed weights of w (OIHW) into u
// (winoUSize floats): u[ξ][o][ph·InC+c] = (G g Gᵀ)[ξ] for the kernel g of
// phase ph = p·S+q of channel pair (o, c), ξ = ξ₁·6+ξ₂. Each output
// channel's weights are put channels-last (taps × InC), then each phase is
// G⊗G on its taps.
func (p *winoPlan) weights(s ConvShape, u, w []float32, b *winoBufs) {
	st, k, c, kk := p.st, p.k, s.InC, s.KH*s.KW
	plane := s.OutC * k
	for o := 0; o < s.OutC; o++ {
		winoTranspose(b.wt, w[o*c*kk:(o+1)*c*kk], c, kk, false)
		for ph := 0; ph < st*st; ph++ {
			dst := u[o*k+ph*c:]
			if len(p.x.taps[ph]) == 0 {
				for xi := 0; xi < winoPts; xi++ {
					clear(dst[xi*plane : xi*plane+c])
				}
				continue
			}
			p.x.w[ph].apply(c, b.wt, p.x.taps[ph], dst, plane, b.scratch)
		}
	}
}

// weightsT is weights' transpose: it adds to dw (OIHW) the gradient of
// the weights from du, the gradient of u.
func (p *winoPlan) weightsT(s ConvShape, dw, du []float32, b *winoBufs) {
	st, k, c, kk := p.st, p.k, s.InC, s.KH*s.KW
	offU := b.planes(s.OutC * k)
	clear(b.wt) // taps of no phase stay zero
	for o := 0; o < s.OutC; o++ {
		for ph := 0; ph < st*st; ph++ {
			taps := p.x.taps[ph]
			if len(taps) == 0 {
				continue
			}
			p.x.wT[ph].apply(c, du[o*k+ph*c:], offU, b.dd, c, b.scratch)
			for q, tap := range taps {
				copy(b.wt[int(tap):int(tap)+c], b.dd[q*c:(q+1)*c])
			}
		}
		winoTranspose(dw[o*c*kk:(o+1)*c*kk], b.wt, kk, c, true)
	}
}

// gather puts images n0 … n0+nb−1 of x (NCHW) into xt phase by phase,
// channels last and zero padded: xt[i][ph][a][b][c] = x[n0+i][c][S·a+p−PadH][S·b+q−PadW].
func (p *winoPlan) gather(s ConvShape, xt, x []float32, n0, nb int) {
	p.phases(s, xt, x, n0, nb, false)
}

// scatter is gather's transpose for the input gradient: it writes dx of
// images n0 … n0+nb−1 from the phases in xt (every input position is in
// exactly one phase; positions no tile reaches get zero).
func (p *winoPlan) scatter(s ConvShape, dx, xt []float32, n0, nb int) {
	clear(dx[n0*s.InC*s.InH*s.InW : (n0+nb)*s.InC*s.InH*s.InW])
	p.phases(s, xt, dx, n0, nb, true)
}

// phases walks the cells of xt with their place in x: gather (toX false)
// or scatter (toX true).
func (p *winoPlan) phases(s ConvShape, xt, x []float32, n0, nb int, toX bool) {
	st, c := p.st, s.InC
	phase, plane := p.hq*p.wq*c, s.InH*s.InW
	for i := 0; i < nb; i++ {
		for ph := 0; ph < st*st; ph++ {
			pp, pq := ph/st, ph%st
			xp := xt[(i*st*st+ph)*phase:][:phase]
			for a := 0; a < p.hq; a++ {
				h := st*a + pp - s.PadH
				row := xp[a*p.wq*c : (a+1)*p.wq*c]
				for b := 0; b < p.wq; b++ {
					w := st*b + pq - s.PadW
					cell := row[b*c : (b+1)*c]
					switch {
					case h < 0 || h >= s.InH || w < 0 || w >= s.InW:
						if !toX {
							clear(cell)
						}
					case toX:
						dst := x[((n0+i)*c*s.InH+h)*s.InW+w:]
						for ch, v := range cell {
							dst[ch*plane] = v
						}
					default:
						src := x[((n0+i)*c*s.InH+h)*s.InW+w:]
						for ch := range cell {
							cell[ch] = src[ch*plane]
						}
					}
				}
			}
		}
	}
}

// winoTile is an output tile of one phase of an image in a chunk: the
// image, the phase, the tile's row in the points' GEMMs, and the offset
// of its first input in the channels-last phases.
type winoTile struct{ i, ph, col, base int }

// inputTiles yields the tiles of a chunk of nb images, phase by phase.
func (p *winoPlan) inputTiles(s ConvShape, nb int) iter.Seq[winoTile] {
	return func(yield func(winoTile) bool) {
		st, phase := p.st, p.hq*p.wq*s.InC
		for i := 0; i < nb; i++ {
			for ph := 0; ph < st*st; ph++ {
				for ti := 0; ti < p.th; ti++ {
					for tj := 0; tj < p.tw; tj++ {
						t := winoTile{i, ph, i*p.nt + ti*p.tw + tj, (i*st*st+ph)*phase + (winoM*ti*p.wq+winoM*tj)*s.InC}
						if !yield(t) {
							return
						}
					}
				}
			}
		}
	}
}

// transformIn writes the transformed input of a chunk of nb images:
// v[ξ][col][ph·InC+c] = (Bᵀ d B)[ξ] for the tile col of phase ph.
func (p *winoPlan) transformIn(s ConvShape, b *winoBufs, nb int) {
	c, k, cols := s.InC, p.k, nb*p.nt
	for t := range p.inputTiles(s, nb) {
		p.x.in.apply(c, b.xt[t.base:], b.offIn, b.v[t.col*k+t.ph*c:], cols*k, b.scratch)
	}
}

// transformDY writes the output gradient of a chunk in the transformed
// domain, the transpose of the output transform: m[ξ][col][o] =
// Σ_{ab} (Aᵀ⊗Aᵀ)[ab][ξ]·dy[n][o][2ti+a][2tj+b] (zero past the output's edge).
func (p *winoPlan) transformDY(s ConvShape, b *winoBufs, dy []float32, n0, nb int) {
	oh, ow := s.OutH(), s.OutW()
	cols := nb * p.nt
	for i := 0; i < nb; i++ {
		for ti := 0; ti < p.th; ti++ {
			for tj := 0; tj < p.tw; tj++ {
				for a := 0; a < winoM; a++ {
					for bb := 0; bb < winoM; bb++ {
						r := b.tt[(a*winoM+bb)*s.OutC:][:s.OutC]
						h, w := winoM*ti+a, winoM*tj+bb
						if h >= oh || w >= ow {
							clear(r)
							continue
						}
						src := dy[(n0+i)*s.OutC*oh*ow+h*ow+w:]
						for o := range r {
							r[o] = src[o*oh*ow]
						}
					}
				}
				col := i*p.nt + ti*p.tw + tj
				p.x.outT.apply(s.OutC, b.tt, b.offOut, b.m[col*s.OutC:], cols*s.OutC, b.scratch)
			}
		}
	}
}

// forward computes y (NCHW) = conv(x, w) + bias from u = weights(w), with
// the ReLU when relu. Per chunk of images: the input channels-last, its
// transform, M[ξ] (tiles × OutC) = V[ξ]·U[ξ]ᵀ for each point, and the
// output transform, one tile at a time, into NCHW with the bias. With
// vsave (winoVSize floats) the transformed input of every chunk stays
// there, chunk after chunk, for backwardFilter.
func (p *winoPlan) forward(s ConvShape, y, x, u, vsave, bias []float32, relu bool, b *winoBufs) error {
	k := p.k
	oh, ow := s.OutH(), s.OutW()
	v := b.v
	for n0 := 0; n0 < s.Batch; n0 += p.chunk {
		nb := min(p.chunk, s.Batch-n0)
		cols := nb * p.nt
		if vsave != nil {
			b.v = vsave[winoPts*n0*p.nt*k:]
		}
		p.gather(s, b.xt, x, n0, nb)
		p.transformIn(s, b, nb)
		for xi := 0; xi < winoPts; xi++ {
			if err := SgemmWork(false, true, cols, s.OutC, k, 1, b.v[xi*cols*k:], k, u[xi*s.OutC*k:], k, 0, b.m[xi*cols*s.OutC:], s.OutC, b.gemm); err != nil {
				return fmt.Errorf("winograd point %d: %w", xi, err)
			}
		}
		offM := b.planes(cols * s.OutC)
		for i := 0; i < nb; i++ {
			for ti := 0; ti < p.th; ti++ {
				for tj := 0; tj < p.tw; tj++ {
					col := i*p.nt + ti*p.tw + tj
					p.x.out.apply(s.OutC, b.m[col*s.OutC:], offM, b.tt, s.OutC, b.scratch)
					for a := 0; a < winoM; a++ {
						h := winoM*ti + a
						if h >= oh {
							break
						}
						for bb := 0; bb < winoM; bb++ {
							w := winoM*tj + bb
							if w >= ow {
								break
							}
							r := b.tt[(a*winoM+bb)*s.OutC:][:s.OutC]
							yo := y[(n0+i)*s.OutC*oh*ow+h*ow+w:]
							for o, z := range r {
								if bias != nil {
									z += bias[o]
								}
								if relu && !(z > 0) {
									z = 0
								}
								yo[o*oh*ow] = z
							}
						}
					}
				}
			}
		}
	}
	b.v = v
	return nil
}

// backwardData writes dx from dy and u = weights(w): the transposes of
// forward's steps in reverse. dM[ξ] = (Aᵀ⊗Aᵀ)ᵀ on each tile of dy; dV[ξ]
// (tiles × S²·InC) = dM[ξ]·U[ξ]; each tile's 36 input gradients are
// (Bᵀ⊗Bᵀ)ᵀ on its 36 rows of dV, added into the channels-last phases where
// tiles overlap; the phases go back into NCHW.
func (p *winoPlan) backwardData(s ConvShape, dx, dy, u []float32, b *winoBufs) error {
	st, k, c := p.st, p.k, s.InC
	phase := p.hq * p.wq * c
	for n0 := 0; n0 < s.Batch; n0 += p.chunk {
		nb := min(p.chunk, s.Batch-n0)
		cols := nb * p.nt
		p.transformDY(s, b, dy, n0, nb)
		for xi := 0; xi < winoPts; xi++ {
			if err := SgemmWork(false, false, cols, k, s.OutC, 1, b.m[xi*cols*s.OutC:], s.OutC, u[xi*s.OutC*k:], k, 0, b.v[xi*cols*k:], k, b.gemm); err != nil {
				return fmt.Errorf("winograd point %d: %w", xi, err)
			}
		}
		clear(b.xt[:nb*st*st*phase])
		offV := b.planes(cols * k)
		for t := range p.inputTiles(s, nb) {
			p.x.inT.apply(c, b.v[t.col*k+t.ph*c:], offV, b.dd, c, b.scratch)
			for q, off := range b.offIn {
				dst := b.xt[t.base+int(off) : t.base+int(off)+c]
				for ch, g := range b.dd[q*c : (q+1)*c] {
					dst[ch] += g
				}
			}
		}
		p.scatter(s, dx, b.xt, n0, nb)
	}
	return nil
}

// backwardFilter adds to dw the weights' gradient: dU[ξ] (OutC × S²·InC)
// = Σ over the chunks of dM[ξ]ᵀ·V[ξ] into du (winoUSize floats), then
// weightsT. V is forward's vsave, or made again from x when vsave is nil.
func (p *winoPlan) backwardFilter(s ConvShape, dw, x, dy, du, vsave []float32, b *winoBufs) error {
	k := p.k
	v := b.v
	defer func() { b.v = v }()
	for n0 := 0; n0 < s.Batch; n0 += p.chunk {
		nb := min(p.chunk, s.Batch-n0)
		cols := nb * p.nt
		if vsave != nil {
			b.v = vsave[winoPts*n0*p.nt*k:]
		} else {
			p.gather(s, b.xt, x, n0, nb)
			p.transformIn(s, b, nb)
		}
		p.transformDY(s, b, dy, n0, nb)
		beta := float32(1)
		if n0 == 0 {
			beta = 0
		}
		for xi := 0; xi < winoPts; xi++ {
			if err := SgemmWork(true, false, s.OutC, k, cols, 1, b.m[xi*cols*s.OutC:], s.OutC, b.v[xi*cols*k:], k, beta, du[xi*s.OutC*k:], k, b.gemm); err != nil {
				return fmt.Errorf("winograd point %d: %w", xi, err)
			}
		}
	}
	p.weightsT(s, dw, du, b)
	return nil
}

// winoTranspose writes the rows × cols matrix src transposed into dst
// (cols × rows), or adds it with add, in blocks of 16 rows so that the
// strided side stays in the level-1 cache.
func winoTranspose(dst, src []float32, rows, cols int, add bool) {
	const blk = 16
	for r0 := 0; r0 < rows; r0 += blk {
		r1 := min(r0+blk, rows)
		for j := 0; j < cols; j++ {
			d := dst[j*rows+r0 : j*rows+r1]
			if add {
				for i := range d {
					d[i] += src[(r0+i)*cols+j]
				}
			} else {
				for i := range d {
					d[i] = src[(r0+i)*cols+j]
				}
			}
		}
	}
}

// winoVSize returns the floats of every image's transformed input:
// Batch·36·tiles·S²·InC.
func (s ConvShape) winoVSize() int {
	_, _, nt := s.winoTiles()
	return s.Batch * winoPts * nt * s.winoK()
}

// WinogradSaveSize returns the floats ConvForwardTrain keeps in save for
// ConvBackwardTrain when it takes the Winograd path: the transformed
// weights (36·OutC·S²·InC; their gradient in the backward pass), every
// image's transformed input (36·⌈OutH/2⌉·⌈OutW/2⌉·S²·InC per image) and
// a flag. It is 0 for the shapes the path does not take (winoPays) and
// for every shape with CAPSTAN_WINOGRAD=off. Sabour's primary capsules
// take it (9.4 M floats and 0.33 M per image, 59 MB at batch 16); the
// other layers of the models do not.
func (s ConvShape) WinogradSaveSize() int {
	if s.Batch <= 0 || s.Validate() != nil || !s.winoPays() || !winogradEnvOn() {
		return 0
	}
	return s.winoUSize() + s.winoVSize() + 1
}

// WinogradWorkSize returns the work ConvForwardTrain and ConvBackwardTrain
// need: ArenaWorkSize, or for the shapes the Winograd path takes the
// larger of it and the path's buffers for one chunk of images (the input
// channels-last, its transform, the products, the transforms' scratch
// and the products' packing).
func (s ConvShape) WinogradWorkSize() int {
	ws := s.ArenaWorkSize()
	if s.WinogradSaveSize() == 0 {
		return ws
	}
	return max(ws, s.winoWork())
}

// WinogradRuns reports whether ConvForwardTrain and ConvBackwardTrain,
// given WinogradSaveSize and WinogradWorkSize floats, compute shape s by
// Winograd on the implementation in use (false where WinogradSaveSize is
// 0, with CAPSTAN_WINOGRAD=off, and on implementations without a direct
// kernel for its channel counts: ref, neon).
func (s ConvShape) WinogradRuns() bool {
	if !convWinogradOn || s.WinogradSaveSize() == 0 {
		return false
	}
	f, _ := s.winoKernel()
	return f != nil
}

// winoWork is the work of the Winograd passes, for any implementation's
// tile.
func (s ConvShape) winoWork() int {
	p := s.winoGeom(winoMaxMR)
	xs, vs, ms, ts, ss, ds := p.sizes(s)
	cols := p.chunk * p.nt
	g := max(SgemmWorkSize(cols, s.OutC, p.k), SgemmWorkSize(cols, p.k, s.OutC), SgemmWorkSize(s.OutC, p.k, cols))
	return xs + vs + ms + ts + ss + ds + s.KH*s.KW*s.InC + winoOffs + g
}

// winoTake reports whether the training entry points run shape s by
// Winograd: it pays, the path is on, the current implementation has a
// direct kernel for its channel counts, and save and work are large
// enough.
func (s ConvShape) winoTake(save, work []float32) bool {
	if n := s.WinogradSaveSize(); !convWinogradOn || n == 0 || len(save) < n || len(work) < s.winoWork() {
		return false
	}
	f, _ := s.winoKernel()
	return f != nil
}

// The flag at the end of save: what ConvForwardTrain left there.
const (
	winoSavedNone = 0 // the GEMM path ran, or the backward used the weights' part
	winoSavedAll  = 1 // U and V are there
)

// ConvForwardTrain is ConvForward (relu false) or ConvForwardReLU (relu
// true) for a training step, whose ConvBackwardTrain follows with the same
// save: where the Winograd path pays (WinogradSaveSize > 0) and save and
// work hold WinogradSaveSize and WinogradWorkSize floats, it computes the
// convolution by Winograd's F(2×2, 5×5) (conv_winograd.go) and keeps the
// transformed weights and input in save for the backward pass. Elsewhere
// it is ConvForward(ReLU), bit for bit. The Winograd results differ from
// the GEMM path's in the last bits (its rounding is larger; see the
// file's comment); they are the same for every run and thread count. It
// does not allocate after the first call per shape and implementation.
func ConvForwardTrain(sh ConvShape, y, x, w, bias, save, work []float32, relu bool) error {
	const fn = "ConvForwardTrain"
	take := sh.winoTake(save, work)
	if n := sh.WinogradSaveSize(); n > 0 && len(save) >= n {
		save[n-1] = winoSavedNone
	}
	if !take {
		return convForward(fn, sh, y, x, w, bias, work, relu)
	}
	if err := errors.Join(convCheckLen(fn, "y", len(y), sh.YLen()), convCheckLen(fn, "x", len(x), sh.XLen()),
		convCheckLen(fn, "w", len(w), sh.WLen())); err != nil {
		return err
	}
	if bias != nil && len(bias) < sh.OutC {
		return fmt.Errorf("kernels.%s: bias has %d elements, OutC=%d", fn, len(bias), sh.OutC)
	}
	p := sh.winoPlan()
	us, vs := sh.winoUSize(), sh.winoVSize()
	b := p.bufs(sh, work)
	p.weights(sh, save[:us], w, &b)
	if err := p.forward(sh, y, x, save[:us], save[us:us+vs], bias, relu, &b); err != nil {
		return fmt.Errorf("kernels.%s: %w", fn, err)
	}
	save[us+vs] = winoSavedAll
	return nil
}

// ConvBackwardTrain is ConvBackward after ConvForwardTrain with the same
// save: where that forward took the Winograd path (and the implementation
// is the same), the data gradient (dx not nil) is computed from the saved
// transformed weights and the filter gradient (dw not nil) from the saved
// transformed input, in that order; the filter gradient overwrites the
// saved weights with their gradient, so a second ConvBackwardTrain without
// a forward in between takes the GEMM path. Elsewhere it is ConvBackward
// (then dw may not be nil). It does not allocate after the first call per
// shape and implementation. w is read only for the data gradient.
func ConvBackwardTrain(sh ConvShape, dw, dbias, dx, x, dy, w, y, save, work []float32) error {
	const fn = "ConvBackwardTrain"
	n := sh.WinogradSaveSize()
	if !sh.winoTake(save, work) || save[n-1] != winoSavedAll {
		if dw == nil {
			return fmt.Errorf("kernels.%s: dw is nil and the forward did not take the Winograd path", fn)
		}
		return ConvBackward(sh, dw, dbias, dx, x, dy, w, y, work)
	}
	if err := errors.Join(convCheckLen(fn, "x", len(x), sh.XLen()), convCheckLen(fn, "dy", len(dy), sh.YLen())); err != nil {
		return err
	}
	if dx != nil {
		if err := convCheckLen(fn, "w", len(w), sh.WLen()); err != nil {
			return err
		}
	}
	for _, c := range [...]struct {
		name string
		s    []float32
		n    int
	}{{"dw", dw, sh.WLen()}, {"dbias", dbias, sh.OutC}, {"dx", dx, sh.XLen()}, {"y", y, sh.YLen()}} {
		if c.s != nil {
			if err := convCheckLen(fn, c.name, len(c.s), c.n); err != nil {
				return err
			}
		}
	}
	// The mask and the bias gradient as on the GEMM paths, then the data
	// and filter gradients.
	if y != nil {
		reluMask(y[:sh.YLen()], dy, dy)
	}
	if dbias != nil {
		convBiasGrad(sh, dbias, dy, 0, sh.Batch)
	}
	p := sh.winoPlan()
	us, vs := sh.winoUSize(), sh.winoVSize()
	b := p.bufs(sh, work)
	if dx != nil {
		if err := p.backwardData(sh, dx, dy, save[:us], &b); err != nil {
			return fmt.Errorf("kernels.%s: %w", fn, err)
		}
	}
	if dw != nil {
		save[n-1] = winoSavedNone
		if err := p.backwardFilter(sh, dw, x, dy, save[:us], save[us:us+vs], &b); err != nil {
			return fmt.Errorf("kernels.%s: %w", fn, err)
		}
	}
	return nil
}
