// Package runout confirms the files of a training run directory that
// tools/train and tools/sweep run write (cli.Wrote's line for each). It is
// apart from package cli, which tools/infer links without the trainer.
package runout

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/capstan-ml/capstan/capsnet/safetensors"
	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/train"
	"github.com/capstan-ml/capstan/train/telemetry"
)

// Wrote prints Wrote's line for each file of training run directory
// dir that a run writes and that is there: the checkpoint, the optimizer
// state its metadata names, the metrics and the telemetry (the lock file,
// empty, is not an output).
func Wrote(w io.Writer, dir string) {
	ck := filepath.Join(dir, train.CheckpointName)
	if _, err := os.Stat(ck); err != nil {
		return
	}
	cli.Wrote(w, ck, "checkpoint")
	if h, err := safetensors.ReadHeader(ck); err == nil {
		if opt := h.Metadata["optimizer"]; opt != "" && filepath.Base(opt) == opt {
			if p := filepath.Join(dir, opt); exists(p) {
				cli.Wrote(w, p, "optimizer state")
			}
		}
	}
	for _, f := range []struct{ name, note string }{{train.MetricsName, "metrics, NDJSON"},
		{telemetry.FileName, "telemetry, NDJSON"}, {telemetry.GzipName, "telemetry, gzip-compressed NDJSON"}} {
		if p := filepath.Join(dir, f.name); exists(p) {
			cli.Wrote(w, p, f.note)
			if f.name != telemetry.GzipName {
				continue
			}
			parts, _ := telemetry.Parts(p) // a bad part's error is the reader's to give
			for k, part := range parts {
				cli.Wrote(w, part, fmt.Sprintf("telemetry, part %d, read after %s", k+1, telemetry.GzipName))
			}
		}
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
