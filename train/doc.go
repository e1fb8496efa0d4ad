// Package train trains capsule networks: the data-parallel Trainer (one
// compiled replica per thread, gradients reduced in replica order, Adam),
// Run (the epoch loop with validation through train/eval, metrics.ndjson,
// atomic checkpoints, Ctrl-C and resume) and progress reporting. The data
// sets and batching are in train/data, the evaluator in train/eval.
package train
