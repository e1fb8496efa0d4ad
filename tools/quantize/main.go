// Command quantize turns a float32 checkpoint into an int8 model (package
// quant): per-channel int8 weights, activation scales calibrated on
// training images, one safetensors file. It prints both files' sizes and
// both models' accuracy on an evaluation set.
//
//	go run ./tools/quantize -checkpoint runs/default/checkpoint.safetensors          # → runs/default/checkpoint.int8.safetensors
//	go run ./tools/quantize -checkpoint CK -data mnist -eval mnist-val -out deep.int8.safetensors
//	go run ./tools/quantize -checkpoint CK -calib minmax -granularity block
//
// A bad flag, flag value or argument exits 2, any other error 1 (see -h).
package main

import (
	"os"

	"github.com/capstan-ml/capstan/tools/internal/cmd/quantize"
)

func main() { os.Exit(quantize.Main(os.Args[1:])) }
