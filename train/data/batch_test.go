package data

import (
	"slices"
	"testing"
)

// smallDataset returns n 1×3×2 images whose pixels encode the index.
func smallDataset(t *testing.T, n int) *Dataset {
	t.Helper()
	d, err := NewDataset("small", n, 1, 3, 2, 10)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		for k := 0; k < 6; k++ {
			d.X[i*6+k] = float32(i*6+k) / float32(6*n)
		}
		d.Y[i] = uint8(i % 10)
	}
	return d
}

// epochOrder runs one epoch and returns the dataset indices in order,
// checking each batch's contents against the dataset.
func epochOrder(t *testing.T, it *Batcher, b *Batch, ds *Dataset, epoch int) (order []int, sizes []int) {
	t.Helper()
	it.StartEpoch(epoch)
	for it.Next(b) {
		sizes = append(sizes, b.N)
		for k := 0; k < b.N; k++ {
			idx := b.Index[k]
			order = append(order, idx)
			if b.Y[k] != int32(ds.Y[idx]) {
				t.Fatalf("label of sample %d: %d, want %d", idx, b.Y[k], ds.Y[idx])
			}
			if it.cfg.Placement == PlacementNone && !slices.Equal(b.Image(k).Pix, ds.Image(idx).Pix) {
				t.Fatalf("pixels of sample %d differ", idx)
			}
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return order, sizes
}

func TestBatcherCoversEpoch(t *testing.T) {
	ds := smallDataset(t, 103)
	it, err := NewBatcher(ds, BatchConfig{Size: 10, Shuffle: true, Seed: 42})
	if err != nil {
		t.Fatal(err)
	}
	b := it.NewBatch()
	if it.Batches() != 11 {
		t.Errorf("Batches() = %d, want 11", it.Batches())
	}
	var orders [][]int
	for e := 0; e < 3; e++ {
		order, sizes := epochOrder(t, it, b, ds, e)
		if len(sizes) != 11 || sizes[10] != 3 || sizes[0] != 10 {
			t.Errorf("epoch %d: batch sizes %v", e, sizes)
		}
		sorted := slices.Sorted(slices.Values(order))
		for i, v := range sorted {
			if v != i {
				t.Fatalf("epoch %d does not visit every sample once: sorted order %v", e, sorted)
			}
		}
		orders = append(orders, order)
	}
	if slices.Equal(orders[0], orders[1]) || slices.Equal(orders[1], orders[2]) {
		t.Error("two epochs in the same order")
	}
	if slices.Equal(orders[0], slices.Sorted(slices.Values(orders[0]))) {
		t.Error("shuffled epoch in dataset order")
	}
	// replay: epoch 1 again, and from a fresh batcher with the same seed
	again, _ := epochOrder(t, it, b, ds, 1)
	it2, _ := NewBatcher(ds, BatchConfig{Size: 10, Shuffle: true, Seed: 42})
	fresh, _ := epochOrder(t, it2, it2.NewBatch(), ds, 1)
	if !slices.Equal(again, orders[1]) || !slices.Equal(fresh, orders[1]) {
		t.Error("epoch 1 not reproducible")
	}
	it3, _ := NewBatcher(ds, BatchConfig{Size: 10, Shuffle: true, Seed: 43})
	other, _ := epochOrder(t, it3, it3.NewBatch(), ds, 1)
	if slices.Equal(other, orders[1]) {
		t.Error("seeds 42 and 43 give the same order")
	}

	// no shuffle: dataset order; DropLast drops the partial batch
	it4, _ := NewBatcher(ds, BatchConfig{Size: 10, DropLast: true})
	order, sizes := epochOrder(t, it4, it4.NewBatch(), ds, 5)
	if len(sizes) != 10 || it4.Batches() != 10 || !slices.Equal(order, slices.Collect(func(yield func(int) bool) {
		for i := 0; i < 100; i++ {
			if !yield(i) {
				return
			}
		}
	})) {
		t.Errorf("unshuffled, DropLast: %d batches, order %v", len(sizes), order)
	}
	// batch larger than the dataset
	it5, _ := NewBatcher(ds, BatchConfig{Size: 500, Shuffle: true})
	order, sizes = epochOrder(t, it5, it5.NewBatch(), ds, 0)
	if len(order) != 103 || len(sizes) != 1 {
		t.Errorf("one partial batch: %v", sizes)
	}
}

func TestBatcherPlacement(t *testing.T) {
	ds := testDigits(t, 37)
	for _, p := range []Placement{PlacementCenter, PlacementRandom, PlacementAffNIST, PlacementShift} {
		cfg := BatchConfig{Size: 8, Shuffle: true, Seed: 9, Placement: p, MaxShift: 2}
		it, err := NewBatcher(ds, cfg)
		if err != nil {
			t.Fatal(err)
		}
		side := 40
		if p == PlacementShift {
			side = 28
		}
		if c, h, w := it.Shape(); c != 1 || h != side || w != side {
			t.Fatalf("%v: shape %d×%d×%d, want 1×%d×%d", p, c, h, w, side, side)
		}
		b := it.NewBatch()
		snapshot := func(e int) []float32 {
			var all []float32
			order, _ := epochOrder(t, it, b, ds, e)
			if len(order) != ds.N {
				t.Fatalf("%v: %d samples", p, len(order))
			}
			it.StartEpoch(e)
			for it.Next(b) {
				all = append(all, b.Images()...)
				for k := 0; k < b.N; k++ {
					img, src := b.Image(k), ds.Image(b.Index[k])
					for _, v := range img.Pix {
						if !(v >= 0 && v <= 1) {
							t.Fatalf("%v: value %v", p, v)
						}
					}
					switch p {
					case PlacementCenter:
						want := canvas(1, 40, 40)
						_ = PlaceCenter(want, src)
						if !slices.Equal(img.Pix, want.Pix) {
							t.Fatalf("centered sample %d differs from PlaceCenter", b.Index[k])
						}
					case PlacementRandom:
						// some offset reproduces it exactly
						found := false
						want := canvas(1, 40, 40)
						for y0 := 0; y0 <= 12 && !found; y0++ {
							for x0 := 0; x0 <= 12 && !found; x0++ {
								_ = PlaceAt(want, src, y0, x0)
								found = slices.Equal(img.Pix, want.Pix)
							}
						}
						if !found {
							t.Fatalf("random sample %d is no placement of the digit", b.Index[k])
						}
					case PlacementShift:
						found := false
						want := canvas(1, 28, 28)
						for dy := -2; dy <= 2 && !found; dy++ {
							for dx := -2; dx <= 2 && !found; dx++ {
								_ = Shift(want, src, dy, dx)
								found = slices.Equal(img.Pix, want.Pix)
							}
						}
						if !found {
							t.Fatalf("shifted sample %d is no shift of at most 2 of the digit", b.Index[k])
						}
					}
				}
			}
			return all
		}
		e0, e0again, e1 := snapshot(0), snapshot(0), snapshot(1)
		if !slices.Equal(e0, e0again) {
			t.Errorf("%v: epoch 0 not reproducible", p)
		}
		if slices.Equal(e0, e1) {
			t.Errorf("%v: epochs 0 and 1 identical", p)
		}
	}
	if _, err := NewBatcher(ds, BatchConfig{Size: 4, Placement: PlacementCenter, CanvasH: 20, CanvasW: 40}); err == nil {
		t.Error("canvas smaller than the digits: no error")
	}
	if _, err := NewBatcher(ds, BatchConfig{Size: 4, Placement: PlacementShift, MaxShift: -1}); err == nil {
		t.Error("negative shift: no error")
	}
	if _, err := NewBatcher(ds, BatchConfig{Size: 0}); err == nil {
		t.Error("batch size 0: no error")
	}
	// a buffer of the wrong shape stops the epoch with an error
	it, _ := NewBatcher(ds, BatchConfig{Size: 4, Placement: PlacementRandom})
	wrong := &Batch{C: 1, H: 28, W: 28, X: make([]float32, 4*784), Y: make([]int32, 4), Index: make([]int, 4)}
	if it.Next(wrong) || it.Err() == nil {
		t.Error("28×28 buffer for 40×40 batches: no error")
	}
}

func TestBatcherNoAlloc(t *testing.T) {
	ds := testDigits(t, 64)
	for _, p := range []Placement{PlacementNone, PlacementCenter, PlacementRandom, PlacementAffNIST, PlacementRescale} {
		it, err := NewBatcher(ds, BatchConfig{Size: 16, Shuffle: true, Seed: 1, Placement: p})
		if err != nil {
			t.Fatal(err)
		}
		b := it.NewBatch()
		epoch := 0
		allocs := testing.AllocsPerRun(50, func() {
			if !it.Next(b) {
				epoch++
				it.StartEpoch(epoch) // reshuffling does not allocate either
				it.Next(b)
			}
		})
		if allocs != 0 {
			t.Errorf("%v: %v allocations per batch", p, allocs)
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
	}
}

// BenchmarkBatcher measures filling 128-sample batches of MNIST digits per
// placement (images/s): the data side of a training step.
func BenchmarkBatcher(b *testing.B) {
	ds, err := embeddedTrain()
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range []Placement{PlacementNone, PlacementCenter, PlacementRandom, PlacementAffNIST} {
		b.Run("placement="+p.String(), func(b *testing.B) {
			it, err := NewBatcher(ds, BatchConfig{Size: 128, Shuffle: true, Seed: 1, Placement: p, DropLast: true})
			if err != nil {
				b.Fatal(err)
			}
			batch := it.NewBatch()
			b.ReportAllocs()
			epoch := 0
			for b.Loop() {
				if !it.Next(batch) {
					epoch++
					it.StartEpoch(epoch)
					it.Next(batch)
				}
			}
			b.ReportMetric(float64(b.N)*128/b.Elapsed().Seconds(), "images/s")
		})
	}
}
