package main

import (
	"testing"

	"github.com/capstan-ml/capstan/tools/internal/clitest"
)

func TestMain(m *testing.M) { clitest.Main(m, "pool", main) }

// TestOutputAimedAtInput: DST aimed at SRC, by its path, as dir/./name or
// through a symbolic link, is refused before any work (exit 2, one line
// naming both) and SRC is left byte for byte.
func TestOutputAimedAtInput(t *testing.T) {
	src := writeLog(t, t.TempDir(), 5)
	files := clitest.Snapshot(t, src)
	for _, dst := range append([]string{src}, clitest.Aliases(t, src)...) {
		r := clitest.Run(t, nil, "-max", "2", src, dst)
		clitest.Refused(t, "DST "+dst, r, files, "DST "+dst, "SRC "+src)
	}
}
