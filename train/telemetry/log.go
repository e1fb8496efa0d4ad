// Package telemetry records and reads the training telemetry of the
// paper's appendix figures: per training step, every capsule's largest
// norm over the batch for every capsule layer (primary capsules
// included), and the Frobenius norm of the margin loss's gradient
// |∂L_m/∂W[j,i]| for every (j, i) of every routing layer, and (in the
// logs written since it exists) the Frobenius norm of every votes matrix
// W[j,i] itself. A run writes it
// as NDJSON next to metrics.ndjson, gzip-compressed in members (GzipName,
// the default form Gzip) or plain (FileName): a Header line, then one
// Record per recorded step (Writer). Read parses such a file, with
// simdjson where the CPU supports it (ReadSIMD), else encoding/json
// (ReadJSON); both give the same Log.
package telemetry

import "fmt"

// Format is the value of Header.Format of the files this package writes.
const Format = "capstan-telemetry/1"

// FileName is the telemetry file's name in a run directory.
const FileName = "telemetry.ndjson"

// Layer describes one capsule layer of the logged model: its name
// ("primary" for layer 0), its capsule count N and dimension D.
type Layer struct {
	Name string `json:"name"`
	N    int    `json:"n"`
	D    int    `json:"d"`
}

// Header is the first line of a telemetry file.
type Header struct {
	Format string  `json:"format"`
	Model  string  `json:"model"`
	Batch  int     `json:"batch"`
	Layers []Layer `json:"layers"` // layer 0 (primary capsules) first
	// Run identifies the training run that writes the file (train's
	// fingerprint of the settings that decide its steps, kept in the
	// run's checkpoints as metadata "run"), so that a resume never
	// continues the records of another run. Empty in the files of runs
	// that predate it, whose header line is then as before.
	Run string `json:"run,omitempty"`
	// Pool is set in a log made by Log.Pool: each record then stands for
	// a window of consecutive steps of the run, not one step. Nil in a
	// log as training writes it.
	Pool *Pooling `json:"pool,omitempty"`
}

// MaxRunBytes bounds Header.Run.
const MaxRunBytes = 128

// Record is one training step.
type Record struct {
	Epoch int `json:"epoch"` // 1-based
	Step  int `json:"step"`  // global optimizer step, 1-based
	// MaxNorm[l][i] is capsule i of layer l's largest norm over the
	// step's batch (all replicas), l = 0 the primary capsules.
	MaxNorm [][]float32 `json:"max_norm"`
	// GradW[l-1][j·N_{l-1}+i] is ‖∂L_m/∂W[j,i]‖_F of routing layer l ≥ 1
	// (output capsule j, input capsule i) for the step's batch: the
	// gradient of the margin loss alone (summed over replicas, as the
	// optimizer's gradient is).
	GradW [][]float32 `json:"grad_w"`
	// WNorm[l-1][j·N_{l-1}+i] is ‖W[j,i]‖_F of routing layer l ≥ 1, the
	// votes matrix the step's forward pass used (before the step's
	// optimizer update), in GradW's layout. Optional: nil in the logs
	// written before it existed (and in the records a run resumed from such
	// a log goes on writing); a log has it in every record or in none
	// (Log.HasWNorm).
	WNorm [][]float32 `json:"w_norm,omitempty"`
}

// Log is a parsed telemetry file: its header and records in file order.
type Log struct {
	Header  Header
	Records []Record
}

// HasWNorm reports whether the log's records hold w_norm (Record.WNorm):
// whether its first one does, since a file read by Read has it in all its
// records or in none.
func (g *Log) HasWNorm() bool {
	return len(g.Records) > 0 && g.Records[0].WNorm != nil
}

// checkWNorm checks that every record holds w_norm or none does; the
// error names the first record that differs from the first one.
func (g *Log) checkWNorm() error {
	has := g.HasWNorm()
	for k := range g.Records {
		if r := &g.Records[k]; (r.WNorm != nil) != has {
			return fmt.Errorf("record %d (step %d) %s w_norm and record 0 (step %d) %s: a log has it in every record or in none", k, r.Step, hasNot(r.WNorm != nil), g.Records[0].Step, hasNot(has))
		}
	}
	return nil
}

// hasNot is "has" or "has no", for the errors about w_norm.
func hasNot(has bool) string {
	if has {
		return "has"
	}
	return "has no"
}
