package capsnet

import (
	"strconv"
	"syscall"
	"testing"
)

// TestAddressSpaceLimit: under an address-space limit (ulimit -v) the
// model limit is half of it when that is below MaxModelBytes, and the
// error says so. The soft limit is lowered to 1 TiB (far above what the
// test process maps) and restored.
func TestAddressSpaceLimit(t *testing.T) {
	if strconv.IntSize == 32 {
		t.Skip("a 32-bit process's largest arena (2 GiB) lies below every limit here, and is the limit: TestPlatformLimit")
	}
	t.Setenv(MemoryEnv, "")
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &old); err != nil {
		t.Skip(err)
	}
	if old.Max < 1<<40 {
		t.Skipf("hard address-space limit %d is below 1 TiB", old.Max)
	}
	set := old
	set.Cur = 1 << 40
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &set); err != nil {
		t.Skip(err)
	}
	defer func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, &old); err != nil {
			t.Errorf("restoring RLIMIT_AS: %v", err)
		}
	}()
	if as, ok := addressSpaceLimit(); !ok || as != 1<<40 {
		// qemu-user ignores setrlimit(RLIMIT_AS): the emulator needs the
		// address space itself.
		t.Skipf("setrlimit(RLIMIT_AS) is not in effect here (getrlimit gives %d, %v): qemu-user?", as, ok)
	}
	prev := MaxModelBytes
	defer func() { MaxModelBytes = prev }()
	MaxModelBytes = 1 << 45
	if limit, source, err := ModelMemoryLimit(); err != nil || limit != 1<<39 || source != "half of ulimit -v" {
		t.Errorf("ulimit -v of 1 TiB: limit %d from %q, %v; want 512 GiB, half of ulimit -v", limit, source, err)
	}
	MaxModelBytes = 1 << 30
	if limit, source, _ := ModelMemoryLimit(); limit != 1<<30 || source != "capsnet.MaxModelBytes" {
		t.Errorf("MaxModelBytes below half of ulimit -v: limit %d from %q", limit, source)
	}
	MaxModelBytes = 1 << 45
	cfg := Presets()["tiny-deep"]
	cfg.Decoder = []int{1 << 19, 1 << 19}
	if _, err := NewParams(cfg); err == nil || err.Error() != "model tiny-deep: parameters need 1.0 TiB, more than the limit of 512.0 GiB (half of ulimit -v); raise it with CAPSTAN_MAX_MEMORY=1026GiB" {
		t.Errorf("over half of ulimit -v: %v", err)
	}
}
