package train

import "testing"

// TestDefaultPlan: the data-set table's plans, and the paper's for a name
// not in it.
func TestDefaultPlan(t *testing.T) {
	for name, want := range map[string][2]int{"embedded": {5, 64}, "mnist": {30, 512}, "cifar10": {30, 512}, "imagenet": {30, 512}} {
		if e, b := DefaultPlan(name); e != want[0] || b != want[1] {
			t.Errorf("DefaultPlan(%q) = %d, %d; want %d, %d", name, e, b, want[0], want[1])
		}
	}
}
