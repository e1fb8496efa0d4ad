package eval_test

import (
	"fmt"
	"log"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/train/data"
	"github.com/capstan-ml/capstan/train/eval"
)

// Run inference on one image: forward-only graphs (no gradients, no
// optimizer state), then the predicted class and the class capsules'
// lengths. Load real weights with capsnet.ReadCheckpoint; this example
// uses the PyTorch oracle's weights of a test model.
func ExampleEvaluator_Predict() {
	ck, err := capsnet.ReadCheckpoint("../../testdata/oracle/tiny-deep-weights.safetensors")
	if err != nil {
		log.Fatal(err)
	}
	cfg, err := capsnet.LoadConfig("tiny-deep")
	if err != nil {
		log.Fatal(err)
	}
	p, err := ck.Params(&cfg)
	if err != nil {
		log.Fatal(err)
	}
	_, testSet, err := data.LoadEmbeddedMNIST()
	if err != nil {
		log.Fatal(err)
	}
	ev, err := eval.New(p, 1, 1) // batch 1, one thread
	if err != nil {
		log.Fatal(err)
	}
	defer ev.Close()
	img := testSet.Image(0).Pix // 1×28×28, values in [0, 1]
	pred, norms := make([]int, 1), make([]float32, cfg.Classes)
	if err := ev.Predict(img, nil, pred); err != nil {
		log.Fatal(err)
	}
	if err := ev.Norms(norms); err != nil {
		log.Fatal(err)
	}
	fmt.Println("label", testSet.Y[0], "classes", len(norms), "predicted a class:", pred[0] >= 0 && pred[0] < cfg.Classes)
	// Output:
	// label 7 classes 10 predicted a class: true
}
