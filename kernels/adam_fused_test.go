//go:build !amd64 || amd64.v3

package kernels

// adamRefExact: Go may fuse adamStepRef's multiply-adds into FMAs on arm64
// (and on amd64 from GOAMD64=v3), rounding once where the SIMD kernels
// (which never fuse) round twice, so TestAdamStepImpls allows a last-bits
// tolerance there.
const adamRefExact = false
