package capsnet_test

import (
	"fmt"
	"log"

	"github.com/capstan-ml/capstan/capsnet"
)

// Load a checkpoint: one read gives the config, the tensors and the
// metadata; one conversion builds the parameters. A PyTorch state dict
// without config metadata (as here, the oracle's weights) is named by a
// preset.
func ExampleReadCheckpoint() {
	ck, err := capsnet.ReadCheckpoint("../testdata/oracle/tiny-deep-weights.safetensors")
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
	fmt.Println(p.Config.Name, len(p.List), "parameter tensors")
	// Output: tiny-deep 16 parameter tensors
}

// Run one forward pass and read the capsules through the accessors, as the
// analysis does.
func ExampleNet_Forward() {
	cfg, err := capsnet.LoadConfig("tiny-deep")
	if err != nil {
		log.Fatal(err)
	}
	p, err := capsnet.NewParams(cfg)
	if err != nil {
		log.Fatal(err)
	}
	p.Init(1)
	n, err := capsnet.NewInferenceNet(p, 2)
	if err != nil {
		log.Fatal(err)
	}
	x := make([]float32, 2*n.InputLen()) // two blank images
	if err := n.Forward(x, nil); err != nil {
		log.Fatal(err)
	}
	for l, li := range n.Layers() {
		fmt.Printf("layer %d %s: %d capsules of dimension %d\n", l, li.Name, li.N, li.D)
	}
	fmt.Println(len(n.Norms()), "class capsule lengths")
	// Output:
	// layer 0 primary: 8 capsules of dimension 4
	// layer 1 caps.0: 8 capsules of dimension 4
	// layer 2 caps.1: 10 capsules of dimension 4
	// 20 class capsule lengths
}
