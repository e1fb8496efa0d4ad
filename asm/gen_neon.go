package asm

// The arm64 NEON assembly (vec_arm64.s, sgemm_arm64.s) and its declarations
// (vec_arm64.go, sgemm_arm64.go) are generated from the templates of
// asm/_gen/arm64. This file has no build constraint (unlike a *_arm64.go
// file), so that go generate ./asm/ regenerates them on any host.

//go:generate go run -C _gen ./arm64 -out ..
