// Package safetensors reads, validates and atomically writes files in the
// safetensors format (an 8-byte little-endian header length, a JSON header
// mapping tensor names to dtype, shape and data_offsets plus an optional
// __metadata__ map of strings, then the raw little-endian data). It decodes
// and writes F32 tensors (Tensor.Data) and I8 tensors (Tensor.I8, the
// int8 models of package quant), the dtypes Capstan stores; ReadHeader
// checks a header without reading data. It checks every header entry
// and every offset against the file's size and the documented limits
// (MaxFileBytes, MaxTensorBytes, MaxTensors, MaxDims: package variables a
// program may raise) before reading any data, so a truncated, corrupt or
// hostile file is an error naming the file and the tensor, never a panic
// or a huge allocation. Files are written atomically with mode 0644.
//
// It is a leaf package (standard library only): capsnet, the tools and the
// tests of every package, kernels included, use it.
package safetensors
