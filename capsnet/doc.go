// Package capsnet builds capsule networks from JSON configurations and
// presets (Config, Presets, LoadConfig): the parameters in one arena
// (Params, initialised as PyTorch initialises the reference model), the
// compiled training and inference graphs (NewNet, NewInferenceNet) with the
// margin and reconstruction losses, checkpoints in PyTorch's state-dict
// names and layouts (SaveCheckpoint; ReadCheckpoint reads a file once,
// Checkpoint.Params or Params.Load converts it), and the dump of every
// intermediate the PyTorch oracle writes (Dump, DumpFiles). The file format
// itself is package capsnet/safetensors.
//
// A config is validated and resolved once (Config.Resolve) into a Layout,
// the typed description every compiler walks: the float Net, Params and
// Init, TrainingPlan, and the int8 graph of package quant. The routing
// kinds a capsule layer may use are one table, RoutingKinds.
package capsnet
