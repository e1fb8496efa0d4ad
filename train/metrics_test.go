package train

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadMetrics reads completed epochs in order, the interrupted
// epoch's line dropped; a missing file is an error naming it.
func TestReadMetrics(t *testing.T) {
	path := filepath.Join(t.TempDir(), MetricsName)
	lines := `{"epoch":2,"loss":0.5,"val_acc":0.9}
{"epoch":1,"loss":1,"val_acc":0.8}
{"epoch":3,"loss":0.4,"interrupted":true}
`
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	ms, err := ReadMetrics(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Epoch != 1 || ms[1].Epoch != 2 || ms[1].ValAcc != 0.9 {
		t.Errorf("read %+v", ms)
	}
	if _, err := ReadMetrics(path + ".none"); err == nil || !strings.Contains(err.Error(), ".none") {
		t.Errorf("missing file: %v", err)
	}
}
