package infer

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoTrainerLinked checks that the inference tool links the evaluator
// and the data sets but not the trainer (its optimizer, checkpoint writing
// and run loop): go list -deps of this package and of tools/infer must
// not name package train. (tools/capstan, which holds train too, does.)
func TestNoTrainerLinked(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".", "github.com/capstan-ml/capstan/tools/infer").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := map[string]bool{}
	for _, d := range strings.Fields(string(out)) {
		deps[d] = true
	}
	const mod = "github.com/capstan-ml/capstan/"
	for _, want := range []string{mod + "train/eval", mod + "train/data", mod + "capsnet"} {
		if !deps[want] {
			t.Errorf("%s is not among the dependencies: the check below would prove nothing", want)
		}
	}
	if deps[mod+"train"] {
		t.Errorf("tools/infer links the trainer (%strain)", mod)
	}
}
