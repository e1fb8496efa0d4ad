// Command dump runs one forward and backward pass of a model on a batch and
// writes every intermediate the PyTorch reference's oracle writes (docs/semantics.md §8):
// loss, norms, recon, trace.K.v (capsules of layer K; K = 0 is the primary
// capsules), trace.K.c (last-iteration couplings), grad.NAME. Researchers
// use it to extract the routing of a batch; the tests use it to match
// PyTorch.
//
//	go run ./tools/dump -weights W.safetensors -batch B.safetensors -out OUT.safetensors [-model NAME|CONFIG.json]
//
// The batch file is a safetensors file with x (B, C, H, W) and y (B, class
// numbers as floats). -model is needed only when the weights file carries
// no config metadata (a plain PyTorch state dict); for a checkpoint that
// names its model, -model must name the same configuration. A bad flag,
// flag value or argument exits 2, any other error 1 (see -h).
package main

import (
	"os"

	"github.com/capstan-ml/capstan/tools/internal/cmd/dump"
)

func main() { os.Exit(dump.Main(os.Args[1:])) }
