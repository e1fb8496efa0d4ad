// Package telemetry records and reads the training telemetry of the
// paper's appendix figures: per training step, every capsule's largest
// norm over the batch for every capsule layer (primary capsules
// included), and the Frobenius norm of the margin loss's gradient
// |∂L_m/∂W[j,i]| for every (j, i) of every routing layer. A run writes it
// as NDJSON next to metrics.ndjson, gzip-compressed in members (GzipName,
// the default form Gzip) or plain (FileName): a Header line, then one
// Record per recorded step (Writer). Read parses such a file, with
// simdjson where the CPU supports it (ReadSIMD), else encoding/json
// (ReadJSON); both give the same Log.
package telemetry

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
}

// Log is a parsed telemetry file: its header and records in file order.
type Log struct {
	Header  Header
	Records []Record
}
