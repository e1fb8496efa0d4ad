package sweep

import "github.com/capstan-ml/capstan/capsnet/analysis"

// Task is one line of a manifest: one model trained with one seed.
//
// The manifest is NDJSON, one Task per line in index order (Index = line
// number from 0), self-contained: every setting a worker needs is on the
// task's line, so a worker reads one line and nothing else of the grid.
type Task struct {
	Index int `json:"index"`
	// Model is a preset name (e.g. "deep-n16-d8-L4-r3-uniform") or the path
	// of a JSON config file (relative to the manifest's directory).
	Model string `json:"model"`
	// Arch names the architecture without the routing kind and seed (e.g.
	// "n16-d8-L4"), the key of Collect's accuracy tables; Routing is the
	// name of its capsnet.RoutingKinds entry ("rba", "uniform",
	// "self-attention", …); Depth, Capsules and Dim are the grid
	// coordinates (0 when the model is not from a grid axis).
	Arch     string `json:"arch"`
	Routing  string `json:"routing"`
	Depth    int    `json:"depth,omitempty"`
	Capsules int    `json:"capsules,omitempty"`
	Dim      int    `json:"dim,omitempty"`
	Seed     uint64 `json:"seed"`
	// Data is the training data set (train/data names: mnist, embedded, …);
	// Eval the data set of the analysis (a train/data test set name:
	// affnist, mnist-val, …) and K its image count (0: all).
	Data string `json:"data"`
	Eval string `json:"eval"`
	K    int    `json:"k,omitempty"`
	// Target is the validation accuracy that ends training (0..1), Epochs
	// the most epochs, Batch and Threads as tools/train takes them.
	Target  float64 `json:"target"`
	Epochs  int     `json:"epochs"`
	Batch   int     `json:"batch"`
	Threads int     `json:"threads"`
	// Settings holds the task's training settings beyond its model and
	// recipe when they are not the defaults (Grid's optimizer and init
	// axes); Telemetry records its training telemetry in Dir.
	Settings
	Telemetry bool `json:"telemetry,omitempty"`
	// Dir is the task's run directory and Result its result file, both
	// relative to the manifest's directory unless absolute.
	Dir    string `json:"dir"`
	Result string `json:"result"`
}

// Result is a task's result file (JSON), written atomically (temporary
// file, fsync, rename) when the task is done; Collect reads them.
type Result struct {
	Task Task `json:"task"`
	// Status is "done" (trained and analysed) or "failed" (Error says why:
	// a task that cannot succeed, e.g. a model too large for the memory
	// limit, so that the sweep can finish without it).
	Status string `json:"status"`
	Error  string `json:"error,omitempty"`
	// Params is the model's parameter count.
	Params int64 `json:"params"`
	// Epochs trained, whether the target was reached, the final validation
	// and test accuracy, and the accuracy on the evaluation set.
	Epochs      int     `json:"epochs"`
	ReachedAcc  bool    `json:"reached_target"`
	ValAcc      float64 `json:"val_acc"`
	TestAcc     float64 `json:"test_acc"`
	EvalAcc     float64 `json:"eval_acc"`
	TrainSecond float64 `json:"train_seconds"`
	// Analysis is the parse-tree statistics of docs/semantics.md §7 on K images of the
	// evaluation set (Table 1 and 2 of one model; Collect summarizes the
	// seeds of a model). NaN statistics (no alive input capsule) are
	// written as null.
	Analysis *analysis.Report `json:"analysis,omitempty"`
	// Params256 is the SHA-256 of the task's final parameters (every
	// tensor's bytes in the checkpoint's order, metadata excluded: it
	// records the command lines, which differ between an interrupted and
	// an uninterrupted run), to compare runs bit for bit (a sweep run
	// through a scheduler against the same tasks run one by one).
	Params256 string `json:"params_sha256"`
	// Deaths summarises the training telemetry of a task with Telemetry:
	// which capsules died during training, when, and what became of
	// their votes matrices (nil without telemetry).
	Deaths *Deaths `json:"deaths,omitempty"`
}
