package capsnet

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/capstan-ml/capstan/graph"
)

// MaxModelBytes bounds the memory of the process's models: NewParams
// refuses a config whose parameters need more, NewNet and NewInferenceNet
// a Net whose parameters plus memory plan (the Net's arena) need more,
// and ProcessMemory.Check (train.NewTrainer, the evaluators of
// train/eval, the tools and sweep tasks, from their flags, task files or a
// resumed run's plan) a process whose replicas together, with the shared
// parameters, the optimizer state and the data batches, need more; all
// before allocating anything.
// 0, the default, means three quarters of the machine's memory (the
// cgroup's memory limit when lower, 2 GiB where neither is known): what a
// model can have before the kernel's OOM killer takes the process.
// ModelMemoryLimit tells how the limit in force derives from it (the
// environment variable MemoryEnv overrides it; an address-space limit
// lowers it).
var MaxModelBytes int64

// defaultModelBytes is the limit where the machine's memory is unknown.
const defaultModelBytes = 2 << 30

// MemoryEnv names the environment variable that sets the memory limit of
// one model in place of MaxModelBytes: a byte count, or a number with a
// unit (512MiB, 4GiB, 1.5GB; see ModelMemoryLimit).
const MemoryEnv = "CAPSTAN_MAX_MEMORY"

// ModelMemoryLimit returns the memory limit of one model in bytes and where
// it comes from, for error messages. MemoryEnv, when set and not empty,
// gives it as is: a whole or decimal number of bytes with an optional
// unit, B, KiB, MiB, GiB, TiB (powers of 1024; K, M, G, T too) or kB, KB,
// MB, GB, TB (powers of 1000); units are case-insensitive except that kB,
// KB, MB, GB and TB are decimal. Otherwise it is MaxModelBytes (by default from the machine's memory), lowered to
// half the process's address-space limit (ulimit -v, RLIMIT_AS on Linux)
// when one is set, leaving the other half to the Go runtime, the data and
// the optimizer state. A malformed or non-positive MemoryEnv is an error
// naming it. With MaxModelBytes 0 the limit is ¾ of the machine's memory
// (see MaxModelBytes).
//
// Whatever its source, the limit is at most the largest arena the platform
// allows (graph.MaxArenaFloats floats: 2 GiB where int has 32 bits, 4 TiB
// elsewhere), and the source then says so: a model a 32-bit process could
// not address is refused with the memory-limit error, naming that bound.
func ModelMemoryLimit() (limit int64, source string, err error) {
	limit, source, err = modelMemoryLimit()
	if err != nil {
		return 0, "", err
	}
	if max := arenaBytes(); limit > max {
		limit, source = max, fmt.Sprintf("the largest arena of a %d-bit process, lower than %s", strconv.IntSize, source)
	}
	return limit, source, nil
}

// arenaBytes is the size in bytes of the largest arena (a variable so that
// tests can lower it).
var arenaBytes = func() int64 { return int64(graph.MaxArenaFloats) * 4 }

// modelMemoryLimit is ModelMemoryLimit before the platform's bound.
func modelMemoryLimit() (limit int64, source string, err error) {
	if s := os.Getenv(MemoryEnv); s != "" {
		v, err := parseBytes(s)
		if err != nil {
			return 0, "", fmt.Errorf("%s=%q: %w", MemoryEnv, s, err)
		}
		return v, MemoryEnv, nil
	}
	limit, source = MaxModelBytes, "capsnet.MaxModelBytes"
	if limit <= 0 {
		limit, source = defaultModelBytes, "the default of capsnet.MaxModelBytes"
		if mem, what, ok := machineMemory(); ok {
			limit, source = mem/4*3, "¾ of "+what
		}
	}
	if as, ok := addressSpaceLimit(); ok && as/2 < limit {
		limit, source = as/2, "half of ulimit -v"
	}
	return limit, source, nil
}

// byteUnits maps the units parseBytes accepts (lower case) to their size;
// "kb", "mb", "gb" and "tb" are decimal only when written with an upper
// case B (see parseBytes).
var byteUnits = map[string]float64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20,
	"g": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40,
	"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
}

// parseBytes parses a positive byte count with an optional unit (see
// ModelMemoryLimit): "1073741824", "512MiB", "4GiB", "1.5 GB", "2g".
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := byteUnits[unit]
	if num == "" || !ok || strings.Count(num, ".") > 1 || num[0] == '.' || num[len(num)-1] == '.' {
		return 0, fmt.Errorf("not a size: want bytes or a number with a unit, such as 512MiB or 4GiB")
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("not a size: %w", err)
	}
	b := v * mult
	switch {
	case !(b >= 1):
		return 0, fmt.Errorf("the limit must be at least 1 byte")
	case b >= math.MaxInt64:
		return 0, fmt.Errorf("more than %d bytes", int64(math.MaxInt64))
	}
	return int64(b), nil
}

// fmtBytes formats a byte count with a binary unit and one decimal.
func fmtBytes(b int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 40, "TiB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if b >= u.size {
			return fmt.Sprintf("%.1f %s", float64(b)/float64(u.size), u.name)
		}
	}
	return fmt.Sprintf("%d bytes", b)
}

// suggestBytes is a MemoryEnv value of at least b: b rounded up to whole
// GiB (MiB below 1 GiB).
func suggestBytes(b int64) string {
	if b >= 1<<30 {
		return fmt.Sprintf("%dGiB", (b+1<<30-1)>>30)
	}
	return fmt.Sprintf("%dMiB", (b+1<<20-1)>>20)
}

// memoryError is the error of a model over its memory limit: what needs
// how much ("batch 512 needs 9.3 GiB (parameters … + memory plan …)"), the
// limit, where it comes from and how to raise it.
func memoryError(model, needs string, need, limit int64, source string) error {
	if model == "" {
		model = "(unnamed)"
	}
	if limit >= arenaBytes() {
		// The platform's bound: no setting raises it.
		return fmt.Errorf("model %s: %s, more than the limit of %s (%s); a smaller batch or model, or a 64-bit build, fits",
			model, needs, fmtBytes(limit), source)
	}
	return fmt.Errorf("model %s: %s, more than the limit of %s (%s); raise it with %s=%s",
		model, needs, fmtBytes(limit), source, MemoryEnv, suggestBytes(need))
}

// maxElems bounds every element count the config's shapes produce (2^40,
// 4 TiB of float32; less on 32-bit platforms): sums and products of such
// counts stay far from int overflow, and a config beyond them is refused
// by Geometry. maxDim bounds each single size of a config (channels,
// kernel, stride, pad, units), so that sums such as h+2·pad cannot
// overflow either.
const (
	maxElems = min(1<<40, math.MaxInt)
	maxDim   = min(1<<30, math.MaxInt/4)
)

// mulSize returns the product of non-negative sizes, or false when it is
// more than maxElems.
func mulSize(xs ...int) (int, bool) {
	p := 1
	for _, x := range xs {
		if x < 0 || (x > 0 && p > maxElems/x) {
			return 0, false
		}
		p *= x
	}
	return p, true
}

// MemoryBudget is the memory limit of one model as a compiler applies it
// to the arena of one graph (the float Net, the int8 graph of package
// quant): Limit bytes, Source saying where the limit comes from.
type MemoryBudget struct {
	Limit  int64
	Source string
}

// ModelMemoryBudget returns the budget of ModelMemoryLimit.
func ModelMemoryBudget() (MemoryBudget, error) {
	limit, source, err := ModelMemoryLimit()
	return MemoryBudget{Limit: limit, Source: source}, err
}

// Guard sets a's size check: a plan that, with fixed bytes of what
// ("parameters", "weights") beside it, needs more than the budget is
// refused with an error naming model, batch and the limit, before the
// arena is allocated. The returned function tells that refusal from
// other errors of a's Seal.
func (m MemoryBudget) Guard(a *graph.Arena, model string, batch int, what string, fixed int64) (isLimit func(error) bool) {
	var tooBig error
	a.SetSizeCheck(func(plan int64) error {
		if need := fixed + plan; need > m.Limit {
			tooBig = memoryError(model, fmt.Sprintf("batch %d needs %s (%s %s + memory plan %s)", batch, fmtBytes(need), what, fmtBytes(fixed), fmtBytes(plan)),
				need, m.Limit, m.Source)
			return tooBig
		}
		return nil
	})
	return func(err error) bool { return err != nil && err == tooBig }
}
