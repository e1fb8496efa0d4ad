package capsnet

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// addressSpaceLimit returns the process's soft address-space limit
// (RLIMIT_AS, set by ulimit -v) in bytes, and whether one is set.
func addressSpaceLimit() (int64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &rl); err != nil || rl.Cur >= math.MaxInt64 { // RLIM_INFINITY is all ones
		return 0, false
	}
	return int64(rl.Cur), true
}

// machineMemory returns the memory the process may use: the machine's
// (MemTotal of /proc/meminfo) or its cgroup's memory limit (cgroup v2
// memory.max, v1 memory.limit_in_bytes) when lower, with a description
// for error messages.
func machineMemory() (int64, string, bool) {
	var total int64
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				if err == nil && kb > 0 && kb < math.MaxInt64>>10 {
					total = kb << 10
				}
				break
			}
		}
		f.Close()
	}
	mem, what := total, fmt.Sprintf("the machine's %s of memory", fmtBytes(total))
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err == nil && v > 0 && (mem == 0 || v < mem) {
			mem, what = v, fmt.Sprintf("the cgroup's memory limit of %s", fmtBytes(v))
		}
	}
	return mem, what, mem > 0
}
