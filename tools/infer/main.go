// Command infer evaluates a checkpoint on a data set (accuracy, confusion
// matrix, img/s) or classifies one image file.
//
//	go run ./tools/infer -checkpoint runs/default/checkpoint.safetensors            # embedded MNIST test digits
//	go run ./tools/infer -checkpoint CK -data mnist                                  # full MNIST test set
//	go run ./tools/infer -checkpoint CK -data affnist                                # AffNIST generated from MNIST test digits
//	go run ./tools/infer -checkpoint CK -image digit.png                             # one image (PNG, grey or colour)
//	go run ./tools/infer -checkpoint CK -recon recon.png -perturb perturb.png        # also reconstruction and capsule perturbation figures
//	go run ./tools/infer -model sabour-small -batch 100 -plan                        # memory plans, no checkpoint needed
//
// A bad flag, flag value or argument exits 2, any other error 1 (see -h).
package main

import (
	"os"

	"github.com/capstan-ml/capstan/tools/internal/cmd/infer"
)

func main() { os.Exit(infer.Main(os.Args[1:])) }
