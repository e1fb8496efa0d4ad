// Package graph is Capstan's static graph: tensors are views into one arena
// whose size is known before the first step, and forward and backward passes
// are fixed schedules of kernel calls. Nothing in a schedule allocates.
//
// A model builds a graph in two phases: it declares every buffer with
// Arena.Alloc (parameters, gradients, activations kept for backward, scratch),
// then Seal allocates the arena once and binds every buffer to its slice.
// Steps are closures over those buffers that call Buf.Data when they run.
//
// Seal gives every buffer its own memory. SealShared takes the schedules
// (forward, then backward, …) whose steps declare the buffers they read and
// write, derives each buffer's lifetime (first to last step that uses it),
// and lets buffers whose lifetimes do not overlap share memory: the memory
// plan of TensorFlow Lite Micro's greedy planner, largest buffer first.
package graph
