// Package eval evaluates a trained capsule network apart from training:
// an Evaluator runs forward-only replicas (capsnet.NewInferenceNet: no
// gradients, no optimizer state), one per thread, over fixed-size batches,
// and reports predictions, accuracy and the confusion matrix over a
// data.Batcher, with the memory plan of what it compiled; it times
// single passes (MeasureLatency: p50, p90, p99) and compares a float32
// model with its int8 quantization (CompareInt8). The trainer
// validates through an Evaluator over its own replicas (FromNets), so
// validation and tools/infer share one code path; tools/infer links this
// package and not the trainer.
package eval
