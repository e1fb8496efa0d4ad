// Package graph is Capstan's static graph: tensors are views into one arena
// whose size is known before the first step, and forward and backward passes
// are fixed schedules of kernel calls. Nothing in a schedule allocates.
//
// A model builds a graph in two phases: it declares every buffer with
// Arena.Alloc (parameters, gradients, activations kept for backward, scratch),
// then Seal allocates the arena once and binds every buffer to its slice.
// Steps are closures over those bound buffers.
package graph
