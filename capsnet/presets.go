package capsnet

import (
	"fmt"
	"strconv"
	"strings"
)

// The paper's grid of deep models, deep-nN-dD-LL (and its routing twins,
// deep-nN-dD-LL-KIND, PresetTwin): the capsules per layer n, their
// dimension d and the capsule layers L that Presets builds, every model at
// 10 routing iterations. PresetHint lists them.
var (
	GridN = []int{16, 32, 64}
	GridD = []int{8, 16, 32, 64}
	GridL = []int{1, 2, 3, 4, 5, 6, 7, 8}
)

// gridName is the name of the grid model of n, d and L under the default
// routing kind.
func gridName(n, d, L int) string { return fmt.Sprintf("deep-n%d-d%d-L%d", n, d, L) }

// isGridName reports whether name is a grid preset (of any routing kind).
func isGridName(name string) bool {
	_, _, _, ok := GridCoords(name)
	return ok
}

// GridCoords returns the capsules per layer n, their dimension d and the
// capsule layers L of the grid preset name (deep-nN-dD-LL or one of its
// routing twins); ok is false when name is not a grid preset.
func GridCoords(name string) (n, d, L int, ok bool) {
	for _, n := range GridN {
		for _, d := range GridD {
			for _, L := range GridL {
				for i := range RoutingKinds {
					if name == PresetTwin(gridName(n, d, L), RoutingKinds[i].Name) {
						return n, d, L, true
					}
				}
			}
		}
	}
	return 0, 0, 0, false
}

// PresetHint describes the model presets for an error or a flag's help:
// every named preset (from Presets, sorted), then the grid's pattern and
// the values of n, d and L it takes (GridN, GridD, GridL), with its
// routing twins' suffixes.
func PresetHint() string {
	var named []string
	for _, name := range PresetNames() {
		if !isGridName(name) {
			named = append(named, name)
		}
	}
	pattern := "deep-nN-dD-LL"
	for i := range RoutingKinds {
		if k := RoutingKinds[i].Name; k != DefaultRouting().Name {
			pattern += ", deep-nN-dD-LL-" + k
		}
	}
	return fmt.Sprintf("%s; the grid %s with n %s, d %s, L %s", strings.Join(named, ", "), pattern,
		joinInts(GridN), joinInts(GridD), joinInts(GridL))
}

// joinInts lists values as "1, 2, 3" (a run of consecutive integers
// longer than two as "1 to 8").
func joinInts(values []int) string {
	consecutive := len(values) > 2
	for i := 1; i < len(values); i++ {
		consecutive = consecutive && values[i] == values[i-1]+1
	}
	if consecutive {
		return fmt.Sprintf("%d to %d", values[0], values[len(values)-1])
	}
	s := make([]string, len(values))
	for i, v := range values {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ", ")
}
