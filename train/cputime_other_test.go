//go:build !unix

package train

import "time"

// cpuTime is not measured here (the CPU cost reads NaN).
func cpuTime() time.Duration { return 0 }
