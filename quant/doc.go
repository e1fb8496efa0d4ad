// Package quant is the int8 side of Capstan: post-training
// quantization of a float checkpoint into an int8 model, the model's file
// format, and the int8 inference graph (NewNet) that runs it with the
// kernels.GemmI8 family.
//
// # Scheme
//
// Weights are quantized symmetrically, per output channel, to int8 in
// [-127, 127]: w ≈ q·s with s = max|w|/127 over the channel (float32) and
// q = round(w/s), so |w − q·s| ≤ s/2 up to float32 rounding. A channel is
// one output channel of a convolution (depthwise too: its weights are
// (out, 1, k, k)), one output unit of a decoder FC layer, and for a capsule
// layer's votes matrix W (PyTorch (n_out, n_in, d_out, d_in)) one output
// capsule j (Granularity PerCapsule, the default) or one (j, i) block
// (PerBlock). A channel whose weights are all zero (or whose max|w|/127
// underflows to zero) gets scale 1 and all-zero q: its scale stays a valid
// positive number and its dequantized weights are 0 (an error of at most
// max|w| < 2^-142 for the underflow case). -128 is never produced and a
// file holding it is refused. Biases and the routing priors stay float32,
// as do routing, squash and softmax.
//
// Activations (Calibrate, optional): one symmetric per-tensor scale per
// int8 GEMM input (each convolution's input, each capsule layer's input
// capsules, each decoder layer's input), range/127, the range being the
// largest |x| (MinMax) or a percentile of |x| (Percentile) observed by
// running the float model on N calibration images.
//
// # File format
//
// An int8 model is a safetensors file (package capsnet/safetensors) in the
// PyTorch names and layouts of the float checkpoint: each quantized weight
// NAME as an I8 tensor of its float shape, its scales NAME.scale as an F32
// tensor of the weight's leading channel dimensions ((out) for convolutions
// and FC layers, (n_out) or (n_out, n_in) for votes matrices), biases and
// priors as F32 tensors under their own names, for a calibrated model each
// quantized weight's input scale NAME.act_scale (a scalar F32), and
// nothing else. The metadata holds "format" (Format, "capstan-int8/1"),
// "config" (the model, capsnet.Config JSON) and "granularity" ("capsule"
// or "block"), and for a calibrated model only "activation_method"
// ("minmax" or "percentile"), "activation_images" (N) and, for the
// percentile method, "activation_percentile", and optionally the float
// checkpoint's provenance as "source_KEY" entries (Model.Source). Load
// checks the header against the config before reading any data, then every
// scale (finite, > 0, activation scales too), every float (finite) and every int8 value (not
// -128); every error is one line naming the file and the tensor.
package quant
