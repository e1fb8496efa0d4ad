//go:build amd64 && !noasm

package asm

import (
	"math"
	"runtime"
	"testing"
)

//go:noinline
func mulF32(x, y float32) float32 { return x * y }

// TestMXCSRFlush checks that the DAZ and FTZ bits set through SetMXCSR
// change the arithmetic of the thread (a subnormal product becomes 0, a
// subnormal operand reads as 0) and that restoring the saved value brings
// subnormals back.
func TestMXCSRFlush(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	prev := MXCSR()
	if prev&(MXCSRFlushToZero|MXCSRDenormalsAreZero) != 0 {
		t.Fatalf("MXCSR %#x: the thread starts with FTZ or DAZ set", prev)
	}
	tiny := float32(1e-20)
	sub := math.Float32frombits(1) // the smallest subnormal
	if got := mulF32(tiny, tiny); got == 0 {
		t.Fatalf("1e-20·1e-20 = 0 with MXCSR %#x: want a subnormal", prev)
	}
	SetMXCSR(prev | MXCSRFlushToZero | MXCSRDenormalsAreZero)
	gotFTZ := mulF32(tiny, tiny)
	gotDAZ := mulF32(sub, 1e30)
	now := MXCSR()
	SetMXCSR(prev)
	// Bits 0-5 are the sticky exception flags the multiplications set
	// (underflow, precision): compare the control bits only.
	const flags = 0x3f
	if now&^flags != (prev|MXCSRFlushToZero|MXCSRDenormalsAreZero)&^flags {
		t.Errorf("MXCSR read back %#x after setting %#x", now, prev|MXCSRFlushToZero|MXCSRDenormalsAreZero)
	}
	if gotFTZ != 0 {
		t.Errorf("with FTZ, 1e-20·1e-20 = %g, want 0", gotFTZ)
	}
	if gotDAZ != 0 {
		t.Errorf("with DAZ, (smallest subnormal)·1e30 = %g, want 0", gotDAZ)
	}
	if got := mulF32(tiny, tiny); got == 0 || MXCSR()&^flags != prev&^flags {
		t.Errorf("after restoring MXCSR %#x: 1e-20·1e-20 = %g, MXCSR %#x", prev, got, MXCSR())
	}
}
