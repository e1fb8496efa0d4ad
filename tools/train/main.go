// Command train trains a CapsNet. With no flags it trains the default model
// on the MNIST subset embedded in the binary, printing progress, accuracy,
// throughput and the kernel implementation, and writes its checkpoint to
// ./runs/default.
//
//	go run ./tools/train                                 # default run
//	go run ./tools/train -model sabour -data mnist       # full MNIST (./build.sh data first)
//	go run ./tools/train -model deep -data mnist -target 0.992 -epochs 100
//	go run ./tools/train -resume runs/default            # continue a run
//
// Ctrl-C or SIGTERM saves a checkpoint, then the command exits 130 (SIGINT)
// or 143 (SIGTERM); a bad flag, flag value or argument exits 2, any other
// error 1 (see -h).
package main

import (
	"os"

	"github.com/capstan-ml/capstan/tools/internal/cmd/train"
)

func main() { os.Exit(train.Main(os.Args[1:])) }
