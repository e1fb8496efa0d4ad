package train_test

import (
	"fmt"
	"log"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/kernels"
	"github.com/capstan-ml/capstan/train"
	"github.com/capstan-ml/capstan/train/data"
)

// Train a few steps: a model from a preset, the embedded MNIST subset in
// shuffled batches, data-parallel replicas (one per thread) and Adam.
func ExampleTrainer_TrainStep() {
	cfg, err := capsnet.LoadConfig("tiny-deep")
	if err != nil {
		log.Fatal(err)
	}
	p, err := capsnet.NewParams(cfg)
	if err != nil {
		log.Fatal(err)
	}
	p.Init(1)
	trainSet, _, err := data.LoadEmbeddedMNIST()
	if err != nil {
		log.Fatal(err)
	}
	const batch, steps = 32, 40
	tr, err := train.NewTrainer(p, batch, 2, kernels.DefaultAdamParams())
	if err != nil {
		log.Fatal(err)
	}
	defer tr.Close()
	it, err := data.NewBatcher(trainSet, data.BatchConfig{Size: batch, Shuffle: true, Seed: 1, DropLast: true})
	if err != nil {
		log.Fatal(err)
	}
	b, labels := it.NewBatch(), make([]int, batch)
	var first, last float64
	for s := 0; s < steps && it.Next(b); s++ {
		for i, y := range b.Labels() {
			labels[i] = int(y)
		}
		margin, _, err := tr.TrainStep(b.Images(), labels, 1e-2)
		if err != nil {
			log.Fatal(err)
		}
		if s == 0 {
			first = margin
		}
		last = margin
	}
	fmt.Println("margin loss fell:", last < first)
	// Output: margin loss fell: true
}
