//go:build ignore

// Command gen regenerates docs/complexity.md (its generated section) and
// docs/complexity.png from the output of BenchmarkCapsLayer. Run it from
// the repository root:
//
//	go run ./kernels/internal/complexity/gen.go [flags] BENCH-OUTPUT...
//
// It is a go:build ignore program beside its package so that it needs no
// module, tool or dependency of its own: see docs/complexity.md.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/capstan-ml/capstan/kernels/internal/complexity"
)

func main() {
	o := complexity.Options{}
	flag.StringVar(&o.Markdown, "md", "docs/complexity.md", "the page whose generated section is rewritten")
	flag.StringVar(&o.PNG, "png", "docs/complexity.png", "the figure (\"\" for none)")
	flag.StringVar(&o.Note, "note", "", "a note put first in the generated section")
	flag.IntVar(&o.FixedD, "d", 8, "the d of the fits and plots in n")
	flag.IntVar(&o.FixedN, "n", 16, "the n of the fits and plots in d")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./kernels/internal/complexity/gen.go [flags] BENCH-OUTPUT...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if o.Inputs = flag.Args(); len(o.Inputs) == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := complexity.Generate(o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
