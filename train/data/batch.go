package data

import (
	"fmt"
	"math/rand/v2"
)

// Placement says how a Batcher puts each dataset image into the batch.
type Placement int

const (
	// PlacementNone copies images unchanged: batch images have the
	// dataset's size.
	PlacementNone Placement = iota
	// PlacementCenter centers each image on the canvas (docs/semantics.md §5
	// validation images: MNIST digits centered on 40×40).
	PlacementCenter
	// PlacementRandom puts each image at a uniformly random position on
	// the canvas, drawn afresh per sample and epoch (docs/semantics.md §5 training
	// images; see PlaceRandom).
	PlacementRandom
	// PlacementAffNIST pads each image to the canvas and applies a random
	// AffNIST map (AffNISTRanges, see Affine), drawn afresh per sample and
	// epoch.
	PlacementAffNIST
	// PlacementShift keeps the dataset's size and shifts each image by a
	// random whole number of pixels in [−MaxShift, MaxShift] on each axis,
	// filling with zeros (Sabour et al.'s MNIST augmentation; see
	// ShiftRandom), drawn afresh per sample and epoch.
	PlacementShift
	// PlacementRescale resamples each image to the canvas by area
	// averaging (see Rescale): 40×40 AffNIST for Sabour's 28×28 model.
	PlacementRescale
)

// String returns the placement's name.
func (p Placement) String() string {
	switch p {
	case PlacementNone:
		return "none"
	case PlacementCenter:
		return "center"
	case PlacementRandom:
		return "random"
	case PlacementAffNIST:
		return "affnist"
	case PlacementShift:
		return "shift"
	case PlacementRescale:
		return "rescale"
	}
	return fmt.Sprintf("Placement(%d)", int(p))
}

// BatchConfig configures a Batcher.
type BatchConfig struct {
	Size    int    // samples per batch, > 0
	Shuffle bool   // visit the samples in a random order, a new one per epoch
	Seed    uint64 // seeds the order and the placements; same seed and epoch, same batches
	// Placement of each image; the canvas is CanvasH×CanvasW (both 0 mean
	// 40×40) and must hold the dataset images, except for PlacementRescale
	// (any positive size). Ignored for PlacementNone and PlacementShift.
	Placement        Placement
	CanvasH, CanvasW int
	// MaxShift bounds the shift of PlacementShift, in pixels (≥ 0).
	MaxShift int
	DropLast bool // skip the last batch of an epoch when it is not full
}

// Batch is a caller-owned batch buffer the Batcher fills: the first N
// samples of X (NCHW, C×H×W each) and Y are valid; Index holds their
// indices in the dataset.
type Batch struct {
	N       int
	C, H, W int
	X       []float32 // capacity·C·H·W
	Y       []int32   // capacity; int32, as the trainer takes labels
	Index   []int     // capacity
}

// Cap returns how many samples the buffer holds.
func (b *Batch) Cap() int { return len(b.Y) }

// Images returns the valid part of X (N·C·H·W values).
func (b *Batch) Images() []float32 { return b.X[:b.N*b.C*b.H*b.W] }

// Labels returns the valid part of Y.
func (b *Batch) Labels() []int32 { return b.Y[:b.N] }

// Image returns sample i of the batch as a view.
func (b *Batch) Image(i int) Image {
	sz := b.C * b.H * b.W
	return Image{C: b.C, H: b.H, W: b.W, Pix: b.X[i*sz : (i+1)*sz : (i+1)*sz]}
}

// Batcher iterates over a dataset in batches, epoch after epoch. The order
// of epoch e is a permutation drawn from (Seed, e) alone (the identity
// without Shuffle), so any epoch can be replayed; random placements are
// drawn in batch order from a second generator seeded by (Seed, e).
// Filling a batch does not allocate. A Batcher is not safe for concurrent
// use.
//
//	it, err := data.NewBatcher(ds, cfg)
//	batch := it.NewBatch()
//	for epoch := 0; epoch < epochs; epoch++ {
//		it.StartEpoch(epoch)
//		for it.Next(batch) {
//			// use batch.Images(), batch.Labels()
//		}
//		if err := it.Err(); err != nil { … }
//	}
type Batcher struct {
	ds      *Dataset
	cfg     BatchConfig
	h, w    int // output image size
	perm    []int
	pos     int
	epoch   int
	err     error
	pcgPerm *rand.PCG
	rngPerm *rand.Rand
	pcgPl   *rand.PCG
	rngPl   *rand.Rand
}

// Second PCG seed words, so the order and the placements are independent
// streams of the same user seed.
const (
	streamPerm      = 0x7065726d // "perm"
	streamPlacement = 0x706c6163 // "plac"
)

// NewBatcher returns a Batcher over ds positioned at the start of epoch 0.
func NewBatcher(ds *Dataset, cfg BatchConfig) (*Batcher, error) {
	if err := ds.shapeOK(); err != nil {
		return nil, err
	}
	if cfg.Size <= 0 {
		return nil, fmt.Errorf("data: batch size %d, want > 0", cfg.Size)
	}
	h, w := ds.H, ds.W
	switch cfg.Placement {
	case PlacementNone:
	case PlacementCenter, PlacementRandom, PlacementAffNIST:
		if cfg.CanvasH == 0 && cfg.CanvasW == 0 {
			cfg.CanvasH, cfg.CanvasW = AffNISTCanvas, AffNISTCanvas
		}
		if cfg.CanvasH < ds.H || cfg.CanvasW < ds.W {
			return nil, fmt.Errorf("data: %s: %d×%d images do not fit on a %d×%d canvas", ds.Name, ds.H, ds.W, cfg.CanvasH, cfg.CanvasW)
		}
		h, w = cfg.CanvasH, cfg.CanvasW
	case PlacementRescale:
		if cfg.CanvasH == 0 && cfg.CanvasW == 0 {
			cfg.CanvasH, cfg.CanvasW = AffNISTCanvas, AffNISTCanvas
		}
		if cfg.CanvasH <= 0 || cfg.CanvasW <= 0 || cfg.CanvasW > MaxImagePixels/cfg.CanvasH {
			return nil, fmt.Errorf("data: %s: rescale to a %d×%d canvas, want positive sides and at most %d pixels (data.MaxImagePixels)", ds.Name, cfg.CanvasH, cfg.CanvasW, MaxImagePixels)
		}
		h, w = cfg.CanvasH, cfg.CanvasW
	case PlacementShift:
		if cfg.MaxShift < 0 {
			return nil, fmt.Errorf("data: shift of %d pixels, want ≥ 0", cfg.MaxShift)
		}
	default:
		return nil, fmt.Errorf("data: unknown placement %d", int(cfg.Placement))
	}
	b := &Batcher{
		ds: ds, cfg: cfg, h: h, w: w,
		perm:    make([]int, ds.N),
		pcgPerm: rand.NewPCG(0, 0),
		pcgPl:   rand.NewPCG(0, 0),
	}
	b.rngPerm = rand.New(b.pcgPerm)
	b.rngPl = rand.New(b.pcgPl)
	b.StartEpoch(0)
	return b, nil
}

// NewBatch allocates a batch buffer of the configured size and the output
// image shape.
func (b *Batcher) NewBatch() *Batch {
	c, h, w := b.Shape()
	return &Batch{
		C: c, H: h, W: w,
		X:     make([]float32, b.cfg.Size*c*h*w),
		Y:     make([]int32, b.cfg.Size),
		Index: make([]int, b.cfg.Size),
	}
}

// Shape returns the shape C, H, W of the batch images (the canvas size
// when there is a placement).
func (b *Batcher) Shape() (c, h, w int) { return b.ds.C, b.h, b.w }

// Batches returns the number of batches per epoch.
func (b *Batcher) Batches() int {
	if b.cfg.DropLast {
		return b.ds.N / b.cfg.Size
	}
	return (b.ds.N + b.cfg.Size - 1) / b.cfg.Size
}

// Epoch returns the current epoch.
func (b *Batcher) Epoch() int { return b.epoch }

// StartEpoch rewinds to the first batch of epoch e, with its order and
// placements (a function of the seed and e only).
func (b *Batcher) StartEpoch(e int) {
	b.epoch, b.pos, b.err = e, 0, nil
	for i := range b.perm {
		b.perm[i] = i
	}
	if b.cfg.Shuffle {
		b.pcgPerm.Seed(b.cfg.Seed, streamPerm^uint64(e)<<32)
		perm := b.perm
		b.rngPerm.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	}
	b.pcgPl.Seed(b.cfg.Seed, streamPlacement^uint64(e)<<32)
}

// Next fills dst with the next batch of the epoch and reports whether it
// did; it returns false at the end of the epoch or on an error (see Err).
// dst must have the shape of NewBatch (capacity at least the batch size).
// It does not allocate.
func (b *Batcher) Next(dst *Batch) bool {
	if b.err != nil {
		return false
	}
	c, h, w := b.Shape()
	if dst.C != c || dst.H != h || dst.W != w || dst.Cap() < b.cfg.Size || len(dst.Index) < b.cfg.Size || len(dst.X) < b.cfg.Size*c*h*w {
		b.err = fmt.Errorf("data: batch buffer of %d×%d×%d×%d (%d values), want at least %d×%d×%d×%d", dst.Cap(), dst.C, dst.H, dst.W, len(dst.X), b.cfg.Size, c, h, w)
		return false
	}
	n := min(b.cfg.Size, b.ds.N-b.pos)
	if n <= 0 || (b.cfg.DropLast && n < b.cfg.Size) {
		dst.N = 0
		return false
	}
	for k := 0; k < n; k++ {
		idx := b.perm[b.pos+k]
		dst.Index[k] = idx
		dst.Y[k] = int32(b.ds.Y[idx])
		out, in := dst.Image(k), b.ds.Image(idx)
		var err error
		switch b.cfg.Placement {
		case PlacementNone:
			copy(out.Pix, in.Pix)
		case PlacementCenter:
			err = PlaceCenter(out, in)
		case PlacementRandom:
			_, _, err = PlaceRandom(out, in, b.rngPl)
		case PlacementAffNIST:
			err = AffNISTRanges.Sample(b.rngPl).Apply(out, in)
		case PlacementShift:
			_, _, err = ShiftRandom(out, in, b.cfg.MaxShift, b.rngPl)
		case PlacementRescale:
			err = Rescale(out, in)
		}
		if err != nil {
			b.err = fmt.Errorf("data: %s: sample %d: %w", b.ds.Name, idx, err)
			return false
		}
	}
	b.pos += n
	dst.N = n
	return true
}

// Err returns the error that stopped Next, if any.
func (b *Batcher) Err() error { return b.err }
