package kernels

import (
	"fmt"
	"math"
)

// Small kernels of the public API: squash, losses, masking, softmax,
// activations and bias (the Adam update is in adam.go). Each has a forward and a backward
// form, checks its lengths and returns an error instead of panicking, and
// never allocates. The plain Go loops are also the reference: none of these
// is a hot spot next to the convolutions and the capsule votes.
//
// Unless stated otherwise, lengths are minimums (a longer slice is fine;
// only its prefix is used), an output may not alias an input, NaN and Inf
// propagate as in IEEE arithmetic, and a backward function overwrites its
// gradient output.

// nnLen reports a slice shorter than need, naming the function and the
// argument.
func nnLen(fn, name string, have, need int) error {
	if have < need {
		return fmt.Errorf("kernels.%s: %s has %d elements, need %d", fn, name, have, need)
	}
	return nil
}

// nnDims reports a negative dimension.
func nnDims(fn string, dims ...int) error {
	for _, d := range dims {
		if d < 0 {
			// Copy so that dims itself does not escape (no allocation on
			// the success path).
			return fmt.Errorf("kernels.%s: negative dimension in %v", fn, append([]int(nil), dims...))
		}
	}
	return nil
}

func nnSquashCheck(fn string, kind Squash, b, d, n int) error {
	if kind != SquashMazzia && kind != SquashSabour {
		return fmt.Errorf("kernels.%s: unknown squash kind %d", fn, int(kind))
	}
	if b < 0 || d < 0 || n < 0 {
		return fmt.Errorf("kernels.%s: negative dimension b=%d d=%d n=%d", fn, b, d, n)
	}
	return nil
}

// SquashForward computes v = squash(s) (docs/semantics.md §3, with ε = SquashEps under
// the square root) for b samples of n capsules of dimension d. Each sample
// is stored component-major: s[(k·d + l)·n + i] is component l of capsule
// i of sample k (layout (B, D, N)). v is overwritten.
func SquashForward(kind Squash, b, d, n int, s, v []float32) error {
	const fn = "SquashForward"
	if err := nnSquashCheck(fn, kind, b, d, n); err != nil {
		return err
	}
	sz := d * n
	if err := nnLen(fn, "s", len(s), b*sz); err != nil {
		return err
	}
	if err := nnLen(fn, "v", len(v), b*sz); err != nil {
		return err
	}
	if sz == 0 {
		return nil
	}
	for k := 0; k < b; k++ {
		cur.squash(kind, d, n, s[k*sz:(k+1)*sz], v[k*sz:(k+1)*sz])
	}
	return nil
}

// SquashBackward computes ds = (∂v/∂s)ᵀ·dv for SquashForward's layout,
// from the forward input s. ds is overwritten.
func SquashBackward(kind Squash, b, d, n int, s, dv, ds []float32) error {
	const fn = "SquashBackward"
	if err := nnSquashCheck(fn, kind, b, d, n); err != nil {
		return err
	}
	sz := d * n
	for _, a := range [...]struct {
		name string
		x    []float32
	}{{"s", s}, {"dv", dv}, {"ds", ds}} {
		if err := nnLen(fn, a.name, len(a.x), b*sz); err != nil {
			return err
		}
	}
	if sz == 0 {
		return nil
	}
	for k := 0; k < b; k++ {
		cur.squashGrad(kind, d, n, s[k*sz:(k+1)*sz], dv[k*sz:(k+1)*sz], ds[k*sz:(k+1)*sz])
	}
	return nil
}

// MarginParams are the constants of the margin loss (docs/semantics.md §4).
type MarginParams struct {
	MPlus  float32 // m⁺, the target length of the true class (0.9)
	MMinus float32 // m⁻, the length other classes are pushed below (0.1)
	Lambda float32 // λ, the down-weighting of absent classes (0.5)
	Eps    float32 // ε in |v| = sqrt(|v|² + ε) (1e-7)
}

// DefaultMarginParams returns the paper's m⁺ (docs/semantics.md §4) = 0.9, m⁻ = 0.1, λ = 0.5,
// ε = 1e-7.
func DefaultMarginParams() MarginParams {
	return MarginParams{MPlus: 0.9, MMinus: 0.1, Lambda: 0.5, Eps: SquashEps}
}

func nnLabels(fn string, labels []int, b, nClass int) error {
	if err := nnLen(fn, "labels", len(labels), b); err != nil {
		return err
	}
	for k, l := range labels[:b] {
		if l < 0 || l >= nClass {
			return fmt.Errorf("kernels.%s: labels[%d] = %d out of range [0, %d)", fn, k, l, nClass)
		}
	}
	return nil
}

// MarginLoss returns the batch mean of the margin loss (docs/semantics.md §4)
//
//	L_m = Σ_j t_j·max(0, m⁺ − |v_j|)² + λ·(1 − t_j)·max(0, |v_j| − m⁻)²
//
// over b samples of nClass output capsules of dimension d, stored
// component-major per sample (v[(k·d + l)·nClass + j], as SquashForward),
// with |v_j| = sqrt(Σ_l v_jl² + ε) and t_j = 1 for j = labels[k].
//
// norms, when not nil, receives |v_j| per sample (norms[k·nClass + j], the
// class scores used for prediction, see PredictLabels). dv, when not nil,
// receives ∂(mean loss)/∂v (overwritten). Labels out of [0, nClass) are an
// error; NaN in v gives a NaN loss and NaN gradients for that sample's
// affected capsules. The sum is accumulated in float64.
func MarginLoss(p MarginParams, b, d, nClass int, v []float32, labels []int, norms, dv []float32) (float32, error) {
	const fn = "MarginLoss"
	if err := nnDims(fn, b, d, nClass); err != nil {
		return 0, err
	}
	sz := d * nClass
	if err := nnLen(fn, "v", len(v), b*sz); err != nil {
		return 0, err
	}
	if err := nnLabels(fn, labels, b, nClass); err != nil {
		return 0, err
	}
	if norms != nil {
		if err := nnLen(fn, "norms", len(norms), b*nClass); err != nil {
			return 0, err
		}
	}
	if dv != nil {
		if err := nnLen(fn, "dv", len(dv), b*sz); err != nil {
			return 0, err
		}
	}
	if b == 0 {
		return 0, nil
	}
	inv := 1 / float32(b)
	var total float64
	for k := 0; k < b; k++ {
		vk := v[k*sz : (k+1)*sz]
		for j := 0; j < nClass; j++ {
			var q float32
			for l := 0; l < d; l++ {
				x := vk[l*nClass+j]
				q += x * x
			}
			nrm := float32(math.Sqrt(float64(q + p.Eps)))
			if norms != nil {
				norms[k*nClass+j] = nrm
			}
			// Written so that NaN propagates: a NaN margin fails the < 0
			// test and stays NaN.
			var loss, dn float32 // dn = ∂L/∂|v_j|
			if j == labels[k] {
				m := p.MPlus - nrm
				if m < 0 {
					m = 0
				}
				loss, dn = m*m, -2*m
			} else {
				m := nrm - p.MMinus
				if m < 0 {
					m = 0
				}
				loss, dn = p.Lambda*m*m, 2*p.Lambda*m
			}
			total += float64(loss)
			if dv != nil {
				// ∂|v|/∂v_l = v_l/|v|
				f := dn * inv / nrm
				dk := dv[k*sz : (k+1)*sz]
				for l := 0; l < d; l++ {
					dk[l*nClass+j] = f * vk[l*nClass+j]
				}
			}
		}
	}
	return float32(total / float64(b)), nil
}

// PredictLabels writes, for each of b samples, the index of the largest of
// its nClass scores (norms[k·nClass + j], e.g. from MarginLoss) into
// labels[k]; ties and NaN go to the lowest index (a NaN score never wins).
func PredictLabels(b, nClass int, norms []float32, labels []int) error {
	const fn = "PredictLabels"
	if err := nnDims(fn, b, nClass); err != nil {
		return err
	}
	if b > 0 && nClass == 0 {
		return fmt.Errorf("kernels.%s: nClass is 0", fn)
	}
	if err := nnLen(fn, "norms", len(norms), b*nClass); err != nil {
		return err
	}
	if err := nnLen(fn, "labels", len(labels), b); err != nil {
		return err
	}
	for k := 0; k < b; k++ {
		row := norms[k*nClass : (k+1)*nClass]
		best := 0
		for j, x := range row {
			if x > row[best] || (row[best] != row[best] && x == x) {
				best = j
			}
		}
		labels[k] = best
	}
	return nil
}

// ReconLoss returns alpha times the batch mean of the summed squared
// reconstruction error, alpha·(1/b)·Σ_k Σ_i (recon[k,i] − x[k,i])², for b
// samples of n pixels each (row-major b×n). drecon, when not nil, receives
// the gradient of the returned value, 2·alpha·(recon − x)/b (overwritten).
// The sum is accumulated in float64.
func ReconLoss(alpha float32, b, n int, recon, x, drecon []float32) (float32, error) {
	const fn = "ReconLoss"
	if err := nnDims(fn, b, n); err != nil {
		return 0, err
	}
	if err := nnLen(fn, "recon", len(recon), b*n); err != nil {
		return 0, err
	}
	if err := nnLen(fn, "x", len(x), b*n); err != nil {
		return 0, err
	}
	if drecon != nil {
		if err := nnLen(fn, "drecon", len(drecon), b*n); err != nil {
			return 0, err
		}
	}
	if b == 0 {
		return 0, nil
	}
	var sum float64
	g := 2 * alpha / float32(b)
	x = x[:b*n]
	for i, r := range recon[:b*n] {
		e := r - x[i]
		sum += float64(e) * float64(e)
		if drecon != nil {
			drecon[i] = g * e
		}
	}
	return float32(float64(alpha) * sum / float64(b)), nil
}

// MaskCapsules keeps, for each of b samples, only capsule labels[k] of its
// nClass capsules of dimension d (component-major input v, as MarginLoss)
// and writes them flattened j-major for the decoder: out[k·nClass·d + j·d
// + l] = v[(k·d + l)·nClass + j] if j = labels[k], else 0 (docs/semantics.md §4). out is
// overwritten. Labels out of range are an error.
func MaskCapsules(b, d, nClass int, v []float32, labels []int, out []float32) error {
	const fn = "MaskCapsules"
	if err := nnDims(fn, b, d, nClass); err != nil {
		return err
	}
	sz := d * nClass
	if err := nnLen(fn, "v", len(v), b*sz); err != nil {
		return err
	}
	if err := nnLen(fn, "out", len(out), b*sz); err != nil {
		return err
	}
	if err := nnLabels(fn, labels, b, nClass); err != nil {
		return err
	}
	clear(out[:b*sz])
	for k := 0; k < b; k++ {
		j := labels[k]
		for l := 0; l < d; l++ {
			out[k*sz+j*d+l] = v[k*sz+l*nClass+j]
		}
	}
	return nil
}

// MaskCapsulesBackward is the adjoint of MaskCapsules: dv[(k·d + l)·nClass
// + j] = dout[k·nClass·d + j·d + l] for j = labels[k], 0 otherwise (dv
// overwritten).
func MaskCapsulesBackward(b, d, nClass int, dout []float32, labels []int, dv []float32) error {
	const fn = "MaskCapsulesBackward"
	if err := nnDims(fn, b, d, nClass); err != nil {
		return err
	}
	sz := d * nClass
	if err := nnLen(fn, "dout", len(dout), b*sz); err != nil {
		return err
	}
	if err := nnLen(fn, "dv", len(dv), b*sz); err != nil {
		return err
	}
	if err := nnLabels(fn, labels, b, nClass); err != nil {
		return err
	}
	clear(dv[:b*sz])
	for k := 0; k < b; k++ {
		j := labels[k]
		for l := 0; l < d; l++ {
			dv[k*sz+l*nClass+j] = dout[k*sz+j*d+l]
		}
	}
	return nil
}

// SoftmaxRows writes y[r,:] = softmax(x[r,:]) for each row of the
// row-major rows×cols matrix x (max-subtracted, so large inputs do not
// overflow). A row containing NaN gives a NaN row. y may alias x.
func SoftmaxRows(rows, cols int, x, y []float32) error {
	const fn = "SoftmaxRows"
	if err := nnDims(fn, rows, cols); err != nil {
		return err
	}
	if err := nnLen(fn, "x", len(x), rows*cols); err != nil {
		return err
	}
	if err := nnLen(fn, "y", len(y), rows*cols); err != nil {
		return err
	}
	softmaxRowsRef(rows, cols, x, y) // the same loop as the routing kernels' reference
	return nil
}

// SoftmaxRowsBackward computes dx[r,i] = y[r,i]·(dy[r,i] − Σ_i' y[r,i']·dy[r,i'])
// from the forward output y. dx may alias dy.
func SoftmaxRowsBackward(rows, cols int, y, dy, dx []float32) error {
	const fn = "SoftmaxRowsBackward"
	if err := nnDims(fn, rows, cols); err != nil {
		return err
	}
	for _, a := range [...]struct {
		name string
		x    []float32
	}{{"y", y}, {"dy", dy}, {"dx", dx}} {
		if err := nnLen(fn, a.name, len(a.x), rows*cols); err != nil {
			return err
		}
	}
	for r := 0; r < rows; r++ {
		yr, dyr, dxr := y[r*cols:(r+1)*cols], dy[r*cols:(r+1)*cols], dx[r*cols:(r+1)*cols]
		var dot float32
		for i, v := range yr {
			dot += v * dyr[i]
		}
		for i, v := range yr {
			dxr[i] = v * (dyr[i] - dot)
		}
	}
	return nil
}

// ReLU writes y = max(x, 0) element-wise (NaN stays NaN). x and y must have
// the same length; y may alias x.
func ReLU(x, y []float32) error {
	if len(x) != len(y) {
		return fmt.Errorf("kernels.ReLU: y has %d elements, x has %d", len(y), len(x))
	}
	reluRows(x, y)
	return nil
}

// reluRows writes y = max(x, 0) (NaN stays NaN; −0 becomes +0) with the
// biasAct kernel and a zero bias, in place when y is x, else chunk by
// chunk after a copy (so that each chunk is still in cache when the kernel
// runs). max(x+0, 0) is max(x, 0) but for a signalling NaN x, which comes
// out quiet.
func reluRows(x, y []float32) {
	n := len(x)
	if n == 0 {
		return
	}
	y = y[:n]
	if &x[0] == &y[0] {
		cur.biasAct(1, n, y, n, zeroBias[:1], 1)
		return
	}
	for i := 0; i < n; i += reluChunk {
		j := min(n, i+reluChunk)
		copy(y[i:j], x[i:j])
		cur.biasAct(1, j-i, y[i:j], j-i, zeroBias[:1], 1)
	}
}

// reluChunk is the number of values reluRows copies before it runs the
// kernel on them: 16 KB, half of a level-1 data cache.
const reluChunk = 4096

// zeroBias is the bias of a layer that has none: biasActRows passes up to
// len(zeroBias) rows of it per call. It is never written.
var zeroBias [256]float32

// biasActRows is the biasAct of the convolutions' output rows with a nil
// bias meaning none: then it does nothing without relu, and with relu it
// runs the kernel on zeroBias, len(zeroBias) rows at a time (max(v+0, 0)
// is the max(v, 0) of an unbiased layer, up to the quieting of a
// signalling NaN).
func biasActRows(rows, n int, y []float32, ldy int, bias []float32, relu bool) {
	r := 0
	if relu {
		r = 1
	}
	if bias != nil {
		cur.biasAct(rows, n, y, ldy, bias, r)
		return
	}
	if !relu {
		return
	}
	for r0 := 0; r0 < rows; r0 += len(zeroBias) {
		nr := min(len(zeroBias), rows-r0)
		cur.biasAct(nr, n, y[r0*ldy:], ldy, zeroBias[:nr], 1)
	}
}

// ReLUBackward writes dx = dy where x > 0 and 0 elsewhere (the subgradient
// 0 at x = 0, as PyTorch), from the forward input x (or equally the output
// y). All three lengths must match; dx may alias dy.
func ReLUBackward(x, dy, dx []float32) error {
	if len(dy) != len(x) || len(dx) != len(x) {
		return fmt.Errorf("kernels.ReLUBackward: lengths x %d, dy %d, dx %d differ", len(x), len(dy), len(dx))
	}
	reluMask(x, dy, dx)
	return nil
}

// Sigmoid writes y = 1/(1 + exp(−x)) element-wise, computed without
// overflow for large |x| (exp of a non-positive argument only): it is
// exactly 0 or 1 only where float32 rounds it so. y may alias x.
func Sigmoid(x, y []float32) error {
	if len(x) != len(y) {
		return fmt.Errorf("kernels.Sigmoid: y has %d elements, x has %d", len(y), len(x))
	}
	for i, v := range x {
		if v >= 0 {
			y[i] = float32(1 / (1 + math.Exp(-float64(v))))
		} else {
			e := math.Exp(float64(v)) // NaN takes this branch and stays NaN
			y[i] = float32(e / (1 + e))
		}
	}
	return nil
}

// SigmoidBackward writes dx = dy·y·(1 − y) from the forward output y. All
// three lengths must match; dx may alias dy.
func SigmoidBackward(y, dy, dx []float32) error {
	if len(dy) != len(y) || len(dx) != len(y) {
		return fmt.Errorf("kernels.SigmoidBackward: lengths y %d, dy %d, dx %d differ", len(y), len(dy), len(dx))
	}
	for i, v := range y {
		dx[i] = dy[i] * v * (1 - v)
	}
	return nil
}

// BiasAddNCHW adds bias[c] in place to every element of channel c of the
// NCHW tensor x of n images, c channels and hw = H·W positions.
func BiasAddNCHW(n, c, hw int, x, bias []float32) error {
	const fn = "BiasAddNCHW"
	if err := nnDims(fn, n, c, hw); err != nil {
		return err
	}
	if err := nnLen(fn, "x", len(x), n*c*hw); err != nil {
		return err
	}
	if err := nnLen(fn, "bias", len(bias), c); err != nil {
		return err
	}
	for k := 0; k < n*c; k++ {
		b := bias[k%c]
		row := x[k*hw : (k+1)*hw]
		for i := range row {
			row[i] += b
		}
	}
	return nil
}

// BiasGradNCHW accumulates dbias[ch] += Σ over images and positions of
// dy[·, ch, ·] for the NCHW tensor dy (the backward of BiasAddNCHW).
func BiasGradNCHW(n, c, hw int, dy, dbias []float32) error {
	const fn = "BiasGradNCHW"
	if err := nnDims(fn, n, c, hw); err != nil {
		return err
	}
	if err := nnLen(fn, "dy", len(dy), n*c*hw); err != nil {
		return err
	}
	if err := nnLen(fn, "dbias", len(dbias), c); err != nil {
		return err
	}
	for k := 0; k < n*c; k++ {
		var s float32
		for _, v := range dy[k*hw : (k+1)*hw] {
			s += v
		}
		dbias[k%c] += s
	}
	return nil
}

// reluMask writes dx = dy where x > 0 and +0 elsewhere (a NaN dy where
// x ≤ 0 gives 0, as the branchy loop did) with the reluMask kernel; dx may
// alias dy.
func reluMask(x, dy, dx []float32) {
	cur.reluMask(len(x), x, dy[:len(x)], dx[:len(x)])
}

// BiasAddCols adds bias[j] in place to column j of every row of the
// row-major rows×cols matrix x (a fully connected layer's bias, one sample
// per row).
func BiasAddCols(rows, cols int, x, bias []float32) error {
	const fn = "BiasAddCols"
	if err := nnDims(fn, rows, cols); err != nil {
		return err
	}
	if err := nnLen(fn, "x", len(x), rows*cols); err != nil {
		return err
	}
	if err := nnLen(fn, "bias", len(bias), cols); err != nil {
		return err
	}
	bias = bias[:cols]
	for r := 0; r < rows; r++ {
		row := x[r*cols : (r+1)*cols]
		for j, b := range bias {
			row[j] += b
		}
	}
	return nil
}

// BiasGradCols accumulates dbias[j] += Σ_r dy[r,j] (the backward of
// BiasAddCols).
func BiasGradCols(rows, cols int, dy, dbias []float32) error {
	const fn = "BiasGradCols"
	if err := nnDims(fn, rows, cols); err != nil {
		return err
	}
	if err := nnLen(fn, "dy", len(dy), rows*cols); err != nil {
		return err
	}
	if err := nnLen(fn, "dbias", len(dbias), cols); err != nil {
		return err
	}
	dbias = dbias[:cols]
	for r := 0; r < rows; r++ {
		for j, v := range dy[r*cols : (r+1)*cols] {
			dbias[j] += v
		}
	}
	return nil
}

// PrimaryCapsules gathers the primary capsules of b samples from the last
// convolution's output y (b, maps·d, hw), its channels read as maps groups
// of d components, into the component-major s (b, d, maps·hw) that
// SquashForward takes:
//
//	s[(k·d + l)·maps·hw + m·hw + p] = y[((k·maps + m)·d + l)·hw + p]
//
// It does not allocate and returns an error for a bad size or a short
// slice.
func PrimaryCapsules(b, maps, d, hw int, y, s []float32) error {
	const fn = "PrimaryCapsules"
	if err := nnDims(fn, b, maps, d, hw); err != nil {
		return err
	}
	n := maps * hw
	if err := nnLen(fn, "y", len(y), b*d*n); err != nil {
		return err
	}
	if err := nnLen(fn, "s", len(s), b*d*n); err != nil {
		return err
	}
	for k := range b {
		for m := range maps {
			for l := range d {
				copy(s[(k*d+l)*n+m*hw:][:hw], y[((k*maps+m)*d+l)*hw:][:hw])
			}
		}
	}
	return nil
}
