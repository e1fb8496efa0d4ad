// Command analyze prints the parse-tree statistics of "Why Capsule Neural
// Networks Do Not Scale" (docs/semantics.md §7) for one or more checkpoints: the
// paper's Table 1 (capsules alive, dyr, dys per routing layer) and Table 2
// (cnm, cns, car, cas, cdr, cds per capsule layer), as text or Markdown,
// mean ± std over the checkpoints when several are given, with their
// accuracy on the analysed images (from the same pass); -json writes every
// figure; -html writes the whole analysis with its figures as one
// self-contained HTML page (docs/report.md). The analysis, its JSON and
// the report are train/study's; this command wires its flags to them.
//
//	go run ./tools/analyze                                   # the default run, embedded test digits
//	go run ./tools/analyze -checkpoint a.safetensors -checkpoint b.safetensors -data affnist-embedded
//	go run ./tools/analyze -markdown -json stats.json
//	go run ./tools/analyze -invariance all -html report.html
package main

import (
	"os"

	"github.com/capstan-ml/capstan/tools/internal/cmd/analyze"
)

func main() { os.Exit(analyze.Main(os.Args[1:])) }
