package kernels

import (
	"fmt"
	"math"
)

// VotesShape describes a fully connected capsule votes layer: Batch samples,
// NIn input capsules of dimension DIn, NOut output capsules of dimension
// DOut.
//
// Internal layouts (see docs/kernels.md, "Tensor layouts"), all row-major:
//
//	u    (Batch, DIn, NIn)          u[b,l,i]: component l of input capsule i
//	W    (NOut, DOut, DIn, NIn)     W[j,k,l,i]: W[j,i] of docs/semantics.md §3, entry (k,l)
//	uhat (Batch, NOut, DOut, NIn)   uhat[b,j,k,i]: component k of the vote of i for j
//
// so that uhat[b,j,k,i] = Σ_l W[j,k,l,i]·u[b,l,i]. Use VotesWeightsFromTorch
// and CapsFromTorch to convert from the PyTorch layouts.
type VotesShape struct{ Batch, NIn, NOut, DIn, DOut int }

func (sh VotesShape) check() error {
	if sh.Batch < 0 || sh.NIn < 1 || sh.NOut < 1 || sh.DIn < 1 || sh.DOut < 1 {
		return fmt.Errorf("bad shape %+v: Batch must be >= 0 and NIn, NOut, DIn, DOut >= 1", sh)
	}
	if !capsSizeOK(max(sh.Batch, 1), sh.NOut, sh.DOut, sh.DIn, sh.NIn) {
		return fmt.Errorf("bad shape %+v: tensor sizes overflow", sh)
	}
	return nil
}

// capsSizeOK reports whether the product of the non-negative dims fits in
// an int with room to spare (below 2⁶²/16 on 64-bit), so that size and
// index arithmetic on them cannot overflow.
func capsSizeOK(dims ...int) bool {
	const limit = math.MaxInt >> 5
	p := 1
	for _, d := range dims {
		if d < 0 || d > 0 && p > limit/d {
			return false
		}
		p *= d
	}
	return true
}

// votesChunk is the number of input capsules processed together. The
// votes kernels walk the input capsules in blocks and, inside a block, loop
// over the batch, so that the block of W (NOut·DOut·DIn·chunk floats) is
// reused by every sample while it is in cache.
//
// When W is at most votesWholeBytes, the block is the whole of NIn: long
// rows (fewest primitive calls, longest streams) and W stays in the L3 cache
// across the batch. Measured on Zen 4 (1 MiB L2, 32 MiB L3, shared with
// other processes), Sabour's 5.9 MB W runs faster that way than in blocks of
// 64 to 576 input capsules (Sabour forward, thread CPU time, best of 5:
// about 20-30 GFLOP/s unblocked, 15 in blocks of 64, 6-10 in blocks of 80
// to 288). Larger W is cut into
// blocks of about 256 KiB (a multiple of 16 input capsules, at least 64) to
// stay in L2.
func votesChunk(sh VotesShape) int {
	per := sh.NOut * sh.DOut * sh.DIn
	if 4*per*sh.NIn <= votesWholeBytes {
		return sh.NIn
	}
	nb := max(64, min(votesBlockBytes/(4*per), 1024)) &^ 15
	if sh.NIn <= nb+nb/2 {
		return sh.NIn
	}
	return nb
}

// votesWholeBytes is the largest W processed without blocking and
// votesBlockBytes the size of a block of W otherwise; variables so that the
// tests can force blocking on small shapes.
var votesWholeBytes, votesBlockBytes = 8 << 20, 256 << 10

// votesGroup returns how many row pairs one mulAddRows call of the votes
// backward sums, out of k, when the rows of its two operands are lda and ldx
// floats apart. Rows a multiple of 4 KiB apart fall into the same set of the
// L1 cache (8-way on Zen 4 and most current cores), so a call summing more
// of them than the set holds misses L1 on every row: then the sum is split
// into calls of 8 rows (4 when both operands are so strided), the output
// being re-read between them. Measured on Zen 4 (thread CPU time, best of
// 5, noisy shared machine): Sabour's dW sum (both operands 4 KiB multiples)
// runs at 14-18 GFLOP/s in groups of 4 and 11 in one call of 32; the deep
// 16→16 layer's (dû rows 8 KiB apart) at 10-17 in groups of 8 and about 10
// in one call of 128.
func votesGroup(k, lda, ldx int) int {
	if votesGroupForce > 0 {
		return votesGroupForce
	}
	alias := 0
	if (4*lda)%4096 == 0 {
		alias++
	}
	if (4*ldx)%4096 == 0 {
		alias++
	}
	if alias == 0 {
		return k
	}
	return min(k, 8/alias)
}

// votesGroupForce, when positive, overrides votesGroup (tests).
var votesGroupForce = 0

// capsCheckLen reports an error unless len(x) == want (or x is nil and
// nilOK).
func capsCheckLen(fn, name string, x []float32, want int, nilOK bool) error {
	if x == nil && nilOK {
		return nil
	}
	if len(x) != want {
		return fmt.Errorf("kernels.%s: %s has %d elements, want %d", fn, name, len(x), want)
	}
	return nil
}

// capsBatchSpan returns the nb samples (sample stride xs) of k rows of
// length n with row stride ld starting at off, as mulAddRowsBatch indexes
// them.
func capsBatchSpan(x []float32, off, nb, xs, k, ld, n int) []float32 {
	return x[off : off+(nb-1)*xs+(k-1)*ld+n]
}

// votesFwdGroup and votesBwdGroup are the numbers of samples that one
// mulAddRowsBatch call of the votes forward and of the du sum walks with
// the rows of W in registers. Larger groups read W fewer times but stride
// over more samples: the samples' rows are 36 KiB (u) or 720 KiB (uhat)
// apart in Sabour's layer, multiples of 4 KiB that share one L1 set, so
// beyond 4 samples they evict each other. Measured on Zen 4 (Sabour, batch
// 32, medians of a noisy shared machine): forward 4 best (2: +10%, 8:
// +50%), du 2 best (4: +15%).
var votesFwdGroup, votesBwdGroup = 4, 2

// capsSpan returns x[off : off+(k-1)·ld+n], the k rows of length n with row
// stride ld starting at off, as the primitives index them.
func capsSpan(x []float32, off, k, ld, n int) []float32 {
	return x[off : off+(k-1)*ld+n]
}

// VotesForward computes the votes uhat[b,j,k,i] = Σ_l W[j,k,l,i]·u[b,l,i]
// (docs/semantics.md §3, û = W[j,i]·u_i) in the layouts of VotesShape. uhat is
// overwritten. Input capsules are processed in blocks so that a block of W
// stays in cache across the batch. NaN and Inf propagate as in IEEE
// arithmetic.
//
// It runs on one goroutine, does not allocate, and returns an error (never
// panics) on a bad shape or a slice whose length is not exactly the size of
// its tensor. Batch = 0 is a no-op.
func VotesForward(sh VotesShape, uhat, w, u []float32) error {
	const fn = "VotesForward"
	if err := sh.check(); err != nil {
		return fmt.Errorf("kernels.%s: %w", fn, err)
	}
	nIn, nOut, dIn, dOut, bs := sh.NIn, sh.NOut, sh.DIn, sh.DOut, sh.Batch
	if err := capsCheckLen(fn, "uhat", uhat, bs*nOut*dOut*nIn, false); err != nil {
		return err
	}
	if err := capsCheckLen(fn, "w", w, nOut*dOut*dIn*nIn, false); err != nil {
		return err
	}
	if err := capsCheckLen(fn, "u", u, bs*dIn*nIn, false); err != nil {
		return err
	}
	if bs == 0 {
		return nil
	}
	o := cur
	nb := votesChunk(sh)
	rows := nOut * dOut
	if o.mulAddRowsBatchSet != nil {
		// For each output row jk, one batched call holds the DIn rows of
		// W in registers (per column block) and walks a group of samples,
		// writing uhat (no clearing pass): W is read Batch/votesFwdGroup
		// times instead of Batch times.
		for i0 := 0; i0 < nIn; i0 += nb {
			n := min(nb, nIn-i0)
			for b0 := 0; b0 < bs; b0 += votesFwdGroup {
				g := min(votesFwdGroup, bs-b0)
				ub := capsBatchSpan(u, b0*dIn*nIn+i0, g, dIn*nIn, dIn, nIn, n)
				for jk := 0; jk < rows; jk++ {
					o.mulAddRowsBatchSet(g, dIn, n, capsSpan(w, jk*dIn*nIn+i0, dIn, nIn, n), nIn, ub, nIn, dIn*nIn,
						capsBatchSpan(uhat, (b0*rows+jk)*nIn+i0, g, rows*nIn, 1, nIn, n), rows*nIn)
				}
			}
		}
		return nil
	}
	for i0 := 0; i0 < nIn; i0 += nb {
		n := min(nb, nIn-i0)
		for b := 0; b < bs; b++ {
			ub := capsSpan(u, b*dIn*nIn+i0, dIn, nIn, n)
			for jk := 0; jk < rows; jk++ {
				y := uhat[(b*rows+jk)*nIn+i0:][:n]
				clear(y)
				o.mulAddRows(dIn, n, capsSpan(w, jk*dIn*nIn+i0, dIn, nIn, n), nIn, ub, nIn, y)
			}
		}
	}
	return nil
}

// VotesBackward is the backward pass of VotesForward: given duhat = ∂L/∂uhat
// it computes
//
//	du[b,l,i]    = Σ_{j,k} W[j,k,l,i]·duhat[b,j,k,i]   (overwritten)
//	dw[j,k,l,i] += Σ_b duhat[b,j,k,i]·u[b,l,i]          (accumulated)
//
// dw is accumulated so that a training step zeroes its parameter gradients
// once and sums over replicas or micro-batches. Either dw or du may be nil
// when that gradient is not wanted.
//
// It runs on one goroutine, does not allocate, and returns an error (never
// panics) on a bad shape or a slice whose length is not exactly the size of
// its tensor. Batch = 0 is a no-op (dw unchanged, du empty).
func VotesBackward(sh VotesShape, dw, du, w, u, duhat []float32) error {
	const fn = "VotesBackward"
	if err := sh.check(); err != nil {
		return fmt.Errorf("kernels.%s: %w", fn, err)
	}
	nIn, nOut, dIn, dOut, bs := sh.NIn, sh.NOut, sh.DIn, sh.DOut, sh.Batch
	if err := capsCheckLen(fn, "dw", dw, nOut*dOut*dIn*nIn, true); err != nil {
		return err
	}
	if err := capsCheckLen(fn, "du", du, bs*dIn*nIn, true); err != nil {
		return err
	}
	if err := capsCheckLen(fn, "w", w, nOut*dOut*dIn*nIn, false); err != nil {
		return err
	}
	if err := capsCheckLen(fn, "u", u, bs*dIn*nIn, false); err != nil {
		return err
	}
	if err := capsCheckLen(fn, "duhat", duhat, bs*nOut*dOut*nIn, false); err != nil {
		return err
	}
	if bs == 0 {
		return nil
	}
	o := cur
	nb := votesChunk(sh)
	rows := nOut * dOut
	for i0 := 0; i0 < nIn; i0 += nb {
		n := min(nb, nIn-i0)
		if du != nil && o.mulAddRowsBatchSet != nil {
			// The same sum by batched calls over groups of samples: for 8
			// rows jk and a component l, one call holds the rows W[jk,l] in
			// registers and walks the samples of the group.
			for b0 := 0; b0 < bs; b0 += votesBwdGroup {
				g := min(votesBwdGroup, bs-b0)
				for jk0 := 0; jk0 < rows; jk0 += 8 {
					kk := min(8, rows-jk0)
					x := capsBatchSpan(duhat, (b0*rows+jk0)*nIn+i0, g, rows*nIn, kk, nIn, n)
					f := o.mulAddRowsBatch
					if jk0 == 0 {
						f = o.mulAddRowsBatchSet // the first group overwrites du
					}
					for l := 0; l < dIn; l++ {
						f(g, kk, n, capsSpan(w, (jk0*dIn+l)*nIn+i0, kk, dIn*nIn, n), dIn*nIn,
							x, nIn, rows*nIn, capsBatchSpan(du, (b0*dIn+l)*nIn+i0, g, dIn*nIn, 1, nIn, n), dIn*nIn)
					}
				}
			}
		} else if du != nil {
			// du[b,l,chunk] = Σ_{jk} W[jk,l,chunk] ⊙ duhat[b,jk,chunk]:
			// the rows jk of W for a fixed l have stride DIn·NIn.
			gj := votesGroup(rows, dIn*nIn, nIn)
			for b := 0; b < bs; b++ {
				for l := 0; l < dIn; l++ {
					y := du[(b*dIn+l)*nIn+i0:][:n]
					clear(y)
					for jk0 := 0; jk0 < rows; jk0 += gj {
						g := min(gj, rows-jk0)
						o.mulAddRows(g, n, capsSpan(w, (jk0*dIn+l)*nIn+i0, g, dIn*nIn, n), dIn*nIn,
							capsSpan(duhat, (b*rows+jk0)*nIn+i0, g, nIn, n), nIn, y)
					}
				}
			}
		}
		if dw != nil && o.mulAddRowsBatch != nil {
			// The same sums by batched calls: for an output row jk and 8
			// samples, one call holds the rows duhat[b,jk] in registers and
			// walks the DIn components l (the "samples" of the primitive).
			for b0 := 0; b0 < bs; b0 += 8 {
				g := min(8, bs-b0)
				for jk := 0; jk < rows; jk++ {
					o.mulAddRowsBatch(dIn, g, n, capsSpan(duhat, (b0*rows+jk)*nIn+i0, g, rows*nIn, n), rows*nIn,
						capsBatchSpan(u, b0*dIn*nIn+i0, dIn, nIn, g, dIn*nIn, n), dIn*nIn, nIn,
						capsSpan(dw, jk*dIn*nIn+i0, dIn, nIn, n), nIn)
				}
			}
		} else if dw != nil {
			// dw[jk,l,chunk] += Σ_b duhat[b,jk,chunk] ⊙ u[b,l,chunk].
			gb := votesGroup(bs, rows*nIn, dIn*nIn)
			for b0 := 0; b0 < bs; b0 += gb {
				g := min(gb, bs-b0)
				for jk := 0; jk < rows; jk++ {
					a := capsSpan(duhat, (b0*rows+jk)*nIn+i0, g, rows*nIn, n)
					for l := 0; l < dIn; l++ {
						o.mulAddRows(g, n, a, rows*nIn, capsSpan(u, (b0*dIn+l)*nIn+i0, g, dIn*nIn, n), dIn*nIn, dw[(jk*dIn+l)*nIn+i0:][:n])
					}
				}
			}
		}
	}
	return nil
}

// VotesWeightsFromTorch converts votes matrices from the PyTorch layout
// src (NOut, NIn, DOut, DIn) of docs/semantics.md §1 to the internal layout dst (NOut,
// DOut, DIn, NIn). sh.Batch is ignored. It does not allocate and returns an
// error on a bad shape or length.
func VotesWeightsFromTorch(sh VotesShape, dst, src []float32) error {
	return votesWeightsConvert("VotesWeightsFromTorch", sh, dst, src, true)
}

// VotesWeightsToTorch converts votes matrices (or their gradient) from the
// internal layout src (NOut, DOut, DIn, NIn) to the PyTorch layout dst (NOut,
// NIn, DOut, DIn). sh.Batch is ignored.
func VotesWeightsToTorch(sh VotesShape, dst, src []float32) error {
	return votesWeightsConvert("VotesWeightsToTorch", sh, dst, src, false)
}

func votesWeightsConvert(fn string, sh VotesShape, dst, src []float32, fromTorch bool) error {
	sh.Batch = 0
	if err := sh.check(); err != nil {
		return fmt.Errorf("kernels.%s: %w", fn, err)
	}
	nIn, nOut, dIn, dOut := sh.NIn, sh.NOut, sh.DIn, sh.DOut
	size := nOut * nIn * dOut * dIn
	if err := capsCheckLen(fn, "dst", dst, size, false); err != nil {
		return err
	}
	if err := capsCheckLen(fn, "src", src, size, false); err != nil {
		return err
	}
	for j := 0; j < nOut; j++ {
		for i := 0; i < nIn; i++ {
			for k := 0; k < dOut; k++ {
				for l := 0; l < dIn; l++ {
					t := ((j*nIn+i)*dOut+k)*dIn + l // torch (j, i, k, l)
					g := ((j*dOut+k)*dIn+l)*nIn + i // internal (j, k, l, i)
					if fromTorch {
						dst[g] = src[t]
					} else {
						dst[t] = src[g]
					}
				}
			}
		}
	}
	return nil
}

// CapsFromTorch converts capsules from the PyTorch layout src (batch, n, d)
// to the internal component-major layout dst (batch, d, n). It does not
// allocate and returns an error on a bad shape or length.
func CapsFromTorch(batch, n, d int, dst, src []float32) error {
	return capsTranspose("CapsFromTorch", batch, n, d, dst, src)
}

// CapsToTorch converts capsules (or their gradient) from the internal
// layout src (batch, d, n) to the PyTorch layout dst (batch, n, d).
func CapsToTorch(batch, n, d int, dst, src []float32) error {
	return capsTranspose("CapsToTorch", batch, d, n, dst, src)
}

// PriorFromTorch converts a routing prior from the PyTorch layout src (nIn,
// nOut) to the internal layout dst (nOut, nIn) (a transpose). The same
// function converts per-sample couplings (nIn, nOut) of a trace.
func PriorFromTorch(nIn, nOut int, dst, src []float32) error {
	return capsTranspose("PriorFromTorch", 1, nIn, nOut, dst, src)
}

// PriorToTorch converts a routing prior (or its gradient, or one sample's
// couplings) from the internal layout src (nOut, nIn) to the PyTorch
// layout dst (nIn, nOut).
func PriorToTorch(nIn, nOut int, dst, src []float32) error {
	return capsTranspose("PriorToTorch", 1, nOut, nIn, dst, src)
}

// capsTranspose sets dst[b,c,r] = src[b,r,c] for batch matrices of
// rows×cols.
func capsTranspose(fn string, batch, rows, cols int, dst, src []float32) error {
	if !capsSizeOK(batch, rows, cols) {
		return fmt.Errorf("kernels.%s: bad dimensions (%d, %d, %d): negative or overflowing", fn, batch, rows, cols)
	}
	size := batch * rows * cols
	if err := capsCheckLen(fn, "dst", dst, size, false); err != nil {
		return err
	}
	if err := capsCheckLen(fn, "src", src, size, false); err != nil {
		return err
	}
	for b := 0; b < batch; b++ {
		s := src[b*rows*cols:][:rows*cols]
		d := dst[b*rows*cols:][:rows*cols]
		for r := 0; r < rows; r++ {
			for c := 0; c < cols; c++ {
				d[c*rows+r] = s[r*cols+c]
			}
		}
	}
	return nil
}
