//go:build !amd64 || noasm

package kernels

// sgemmArchTiles: this build has no selectable SGEMM tiles (arm64 registers
// its one NEON micro-kernel directly, noasm has none).
func sgemmArchTiles() []sgemmTile { return nil }
