//go:build amd64 && !amd64.v3

package kernels

// adamRefExact: on amd64 below GOAMD64=v3 Go rounds every product of
// adamStepRef before its sum, as the SIMD kernels do, so TestAdamStepImpls
// demands equal bits.
const adamRefExact = true
