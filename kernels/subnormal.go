package kernels

// FlushSubnormals makes the floating-point arithmetic of the calling OS
// thread treat subnormal numbers (magnitudes below 2⁻¹²⁶ ≈ 1.2e-38) as
// zero, operands and results, and returns a function that restores the
// previous mode. The calling goroutine must be locked to its thread
// (runtime.LockOSThread) from before the call until after restore, which
// must run on the same goroutine.
//
// Intel cores run every instruction that meets a subnormal operand or
// produces a subnormal result through a microcode assist of about a
// hundred cycles. Late in training, gradients that have decayed below the
// normal range fill whole GEMMs with them: the paper's model with
// self-attention routing, resumed at epoch 48, trained at 113 img/s on one
// core of an Intel Xeon (family 6, model 167) against 466 img/s from a
// fresh initialisation, the decoder's backward GEMMs taking half of the
// time; AMD's Zen cores handle subnormals at full speed. A value below
// 1e-38 carries no information for training, so the trainer's and the
// evaluator's replica goroutines run with subnormals flushed
// (package train).
//
// On amd64 (not with -tags noasm) it sets the DAZ and FTZ bits of MXCSR,
// which every kernel implementation and the Go code of the thread obey,
// so results stay identical between runs and across thread counts. On
// other architectures and with noasm it changes nothing: arm64's Advanced
// SIMD handles subnormals in hardware, and the pure-Go reference keeps
// IEEE semantics.
func FlushSubnormals() (restore func()) { return flushSubnormals() }
