// Command sweep runs grids of training runs on cluster schedulers (issue
// 12, docs/sweeps.md): plan expands a grid into a manifest of tasks, run
// trains and analyses one task (a Slurm array element, a Kubernetes
// Indexed Job's pod, or by hand), slurm and k8s write the schedulers' job
// files, collect turns the results into the paper's appendix tables.
//
//	go run ./tools/sweep plan -preset tiny -out sweeps/tiny
//	go run ./tools/sweep run -manifest sweeps/tiny/manifest.ndjson -index 0
//
// Exit status: 0 done, 1 error, 2 bad command, flag or argument; run also
// exits 130 (SIGINT) or 143 (SIGTERM) after saving the task's checkpoint
// (a rerun resumes it), and 75 (EX_TEMPFAIL) when another worker holds
// the task's run directory (retry later).
package main

import (
	"os"

	"github.com/capstan-ml/capstan/tools/internal/cmd/sweep"
)

func main() { os.Exit(sweep.Main(os.Args[1:])) }
