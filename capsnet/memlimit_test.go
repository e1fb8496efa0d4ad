package capsnet

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet/safetensors"
	"github.com/capstan-ml/capstan/graph"
)

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{
		"1": 1, "1073741824": 1 << 30, "512MiB": 512 << 20, "4GiB": 4 << 30, "4gib": 4 << 30, "2G": 2 << 30, "3k": 3 << 10,
		"1.5GiB": 3 << 29, "1.5 GB": 1500000000, "10MB": 10000000, "1TiB": 1 << 40, " 64 MiB ": 64 << 20, "100B": 100,
	} {
		if got, err := parseBytes(in); err != nil || got != want {
			t.Errorf("parseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "abc", "GiB", "-1GiB", "0", "0.1", "1.2.3GiB", ".5GiB", "5.GiB", "4 GiB extra", "1e9", "9999999999999999999TiB", "4PiB", "NaN", "Inf", "0x10"} {
		if got, err := parseBytes(in); err == nil {
			t.Errorf("parseBytes(%q) = %d, want an error", in, got)
		}
	}
}

// TestModelMemoryLimit: CAPSTAN_MAX_MEMORY overrides MaxModelBytes, a bad
// value is an error naming it from NewParams and NewNet, and unset or
// empty leaves MaxModelBytes (or half of ulimit -v, below it).
func TestModelMemoryLimit(t *testing.T) {
	t.Setenv(MemoryEnv, "")
	limit, source, err := ModelMemoryLimit()
	want, wantSource := int64(defaultModelBytes), "the default of capsnet.MaxModelBytes"
	if MaxModelBytes > 0 {
		want, wantSource = MaxModelBytes, "capsnet.MaxModelBytes"
	} else if mem, what, ok := machineMemory(); ok {
		want, wantSource = mem/4*3, "¾ of "+what
	}
	if as, ok := addressSpaceLimit(); ok && as/2 < want {
		want, wantSource = as/2, "half of ulimit -v"
	}
	if want > arenaBytes() { // a 32-bit process: TestPlatformLimit
		want, wantSource = arenaBytes(), "the largest arena of a 32-bit process, lower than "+wantSource
	}
	if err != nil || limit != want || source != wantSource {
		t.Errorf("default: limit %d from %q, %v; want %d from %q", limit, source, err, want, wantSource)
	}
	if runtime.GOOS == "linux" {
		if mem, what, ok := machineMemory(); !ok || mem < 64<<20 || !strings.Contains(what, "memory") {
			t.Errorf("machineMemory on linux: %d, %q, %v", mem, what, ok)
		}
	}
	t.Setenv(MemoryEnv, "3GiB")
	if limit, source, err := ModelMemoryLimit(); strconv.IntSize == 64 && (err != nil || limit != 3<<30 || source != MemoryEnv) {
		t.Errorf("%s=3GiB: limit %d from %q, %v", MemoryEnv, limit, source, err)
	} else if strconv.IntSize == 32 && (err != nil || limit != arenaBytes()) { // past a 32-bit process's largest arena (TestPlatformLimit)
		t.Errorf("%s=3GiB on 32-bit: limit %d from %q, %v", MemoryEnv, limit, source, err)
	}
	cfg := Presets()["tiny-deep"]
	p, err := NewParams(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(MemoryEnv, "lots")
	if _, err := NewParams(cfg); err == nil || !strings.Contains(err.Error(), `CAPSTAN_MAX_MEMORY="lots"`) {
		t.Errorf("bad %s, NewParams: %v", MemoryEnv, err)
	}
	if _, err := NewNet(p, 2); err == nil || !strings.Contains(err.Error(), `CAPSTAN_MAX_MEMORY="lots"`) {
		t.Errorf("bad %s, NewNet: %v", MemoryEnv, err)
	}
}

// TestTerabyteConfig: configs that would need terabytes (a huge decoder,
// huge channel counts, a huge batch), also arriving inside a checkpoint's
// metadata, are refused with the one-line memory error before anything
// large is allocated.
func TestTerabyteConfig(t *testing.T) {
	if strconv.IntSize == 32 {
		t.Skip("its configs and batch need more than 2^31 values, past an int on a 32-bit GOARCH: Geometry and CheckWorkSizes refuse them before the memory limit, with their own errors")
	}
	t.Setenv(MemoryEnv, "")
	huge := []func(c *Config){
		func(c *Config) { c.Decoder = []int{1 << 19, 1 << 19} },                                  // 2^38 weights: 1 TiB
		func(c *Config) { c.Convs[0].Out, c.Convs[1].Out, c.Convs[2].Out = 1<<18, 1<<18, 1<<18 }, // 2^36·9 weights: 2.3 TiB
		func(c *Config) { c.Caps[0].Out, c.Caps[0].Dim = 1<<20, 1<<12 },                          // W of 2^37: 512 GiB
	}
	for i, edit := range huge {
		cfg := Presets()["tiny-deep"]
		edit(&cfg)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := NewParams(cfg)
		runtime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), "model tiny-deep: parameters need ") || !strings.Contains(err.Error(), "more than the limit of") ||
			!strings.Contains(err.Error(), "raise it with CAPSTAN_MAX_MEMORY=") || strings.Contains(err.Error(), "\n") {
			t.Errorf("config %d: %v", i, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 1<<20 {
			t.Errorf("config %d: NewParams allocated %d bytes before refusing", i, got)
		}
		// The same config in a checkpoint's metadata.
		path := filepath.Join(t.TempDir(), "huge.safetensors")
		if err := safetensors.Write(path, nil, map[string]string{"format": CheckpointFormat, "config": cfg.JSON()}); err != nil {
			t.Fatal(err)
		}
		// ReadCheckpoint refuses it already, naming the file.
		if _, err := ReadCheckpoint(path); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "more than the limit of") {
			t.Errorf("config %d in a checkpoint: %v", i, err)
		}
	}
	p, err := NewParams(Presets()["tiny-deep"])
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = NewNet(p, MaxBatch)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("model tiny-deep: batch %d needs ", MaxBatch)) || !strings.Contains(err.Error(), "+ memory plan") {
		t.Errorf("batch %d: %v", MaxBatch, err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<20 {
		t.Errorf("NewNet allocated %d bytes before refusing", got)
	}
	// Routing work beyond what an int can size (2^20 samples × 1000
	// iterations × 2048 floats), even under a limit raised to 1 TiB.
	t.Setenv(MemoryEnv, "1TiB")
	cfg := Presets()["tiny-deep"]
	cfg.Caps[0].Out, cfg.Caps[0].Iters = 128, MaxIters
	if p, err = NewParams(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err = NewNet(p, MaxBatch); err == nil || !strings.Contains(err.Error(), "(the routing work space of caps.0 alone), more than the limit of 1.0 TiB (CAPSTAN_MAX_MEMORY)") {
		t.Errorf("routing work beyond 2^40 floats: %v", err)
	}
}

// TestLoweredLimit: under a lowered MaxModelBytes a normal model is refused
// with the full message, and the value it suggests for CAPSTAN_MAX_MEMORY
// makes it fit.
func TestLoweredLimit(t *testing.T) {
	t.Setenv(MemoryEnv, "")
	prev := MaxModelBytes
	defer func() { MaxModelBytes = prev }()
	cfg := Presets()["tiny-deep"]
	p, err := NewParams(cfg)
	if err != nil {
		t.Fatal(err)
	}
	MaxModelBytes = 1 << 20
	_, err = NewNet(p, 64)
	if err == nil {
		t.Fatal("a Net over the limit was accepted")
	}
	msg := err.Error()
	want := "model tiny-deep: batch 64 needs "
	if !strings.HasPrefix(msg, want) || !strings.Contains(msg, "(parameters 472.6 KiB + memory plan ") ||
		!strings.Contains(msg, "), more than the limit of 1.0 MiB (capsnet.MaxModelBytes); raise it with CAPSTAN_MAX_MEMORY=") {
		t.Fatalf("error %q, want the full memory message", msg)
	}
	suggest := msg[strings.LastIndex(msg, "=")+1:]
	t.Setenv(MemoryEnv, suggest)
	if _, err := NewNet(p, 64); err != nil {
		t.Errorf("with %s=%s: %v", MemoryEnv, suggest, err)
	}
	t.Setenv(MemoryEnv, "")
	MaxModelBytes = 100 << 10
	if _, err := NewParams(cfg); err == nil || !strings.Contains(err.Error(), "model tiny-deep: parameters need 472.6 KiB, more than the limit of 100.0 KiB (capsnet.MaxModelBytes); raise it with CAPSTAN_MAX_MEMORY=1MiB") {
		t.Errorf("parameters over the limit: %v", err)
	}
	MaxModelBytes = prev
	// The model's limit, not graph.MaxArenaBytes, governs its arenas.
	prevArena := graph.MaxArenaBytes
	defer func() { graph.MaxArenaBytes = prevArena }()
	graph.MaxArenaBytes = 1024
	if _, err := NewNet(p, 64); err != nil {
		t.Errorf("default limit: %v", err)
	}
}

func TestMain(m *testing.M) {
	// The limit tests set CAPSTAN_MAX_MEMORY themselves; one from the
	// environment must not change the other tests' models.
	os.Unsetenv(MemoryEnv)
	os.Exit(m.Run())
}

// TestPlatformLimit: the model limit is at most the largest arena of the
// platform (2 GiB on 32-bit): a larger setting is lowered to it with a
// source that says so, and a model past it gets the memory-limit error
// without the advice to raise a setting (none can). The bound is lowered
// here so that the test runs on every GOARCH.
func TestPlatformLimit(t *testing.T) {
	prev := arenaBytes
	defer func() { arenaBytes = prev }()
	if got, want := arenaBytes(), int64(graph.MaxArenaFloats)*4; got != want {
		t.Fatalf("arenaBytes() = %d, want graph.MaxArenaFloats·4 = %d", got, want)
	}
	if strconv.IntSize == 32 && arenaBytes() != int64(math.MaxInt/4)*4 {
		t.Errorf("32-bit arena bound %d, want %d", arenaBytes(), int64(math.MaxInt/4)*4)
	}
	arenaBytes = func() int64 { return 1 << 20 }
	t.Setenv(MemoryEnv, "3GiB")
	limit, source, err := ModelMemoryLimit()
	if err != nil || limit != 1<<20 || !strings.Contains(source, "the largest arena of a") || !strings.Contains(source, "lower than "+MemoryEnv) {
		t.Fatalf("%s=3GiB over the platform's bound: limit %d from %q, %v", MemoryEnv, limit, source, err)
	}
	t.Setenv(MemoryEnv, "512KiB")
	if limit, source, err := ModelMemoryLimit(); err != nil || limit != 512<<10 || source != MemoryEnv {
		t.Errorf("%s=512KiB under the bound: limit %d from %q, %v", MemoryEnv, limit, source, err)
	}
	t.Setenv(MemoryEnv, "3GiB")
	p, err := NewParams(Presets()["tiny-deep"])
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewNet(p, 64)
	if err == nil {
		t.Fatal("a Net past the platform's bound was accepted")
	}
	if msg := err.Error(); !strings.Contains(msg, "more than the limit of 1.0 MiB (the largest arena of a") ||
		strings.Contains(msg, "raise it with") || !strings.Contains(msg, "64-bit build") {
		t.Errorf("past the platform's bound: %q", msg)
	}
}
