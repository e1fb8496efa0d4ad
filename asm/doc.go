// Package asm holds the Plan 9 assembly kernels and their //go:noescape
// stubs; no logic beyond instructions. Use package kernels.
package asm
