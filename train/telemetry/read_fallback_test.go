package telemetry

import (
	"strings"
	"testing"
)

// TestReadFallback parses a header and two records, and refuses a wrong
// format, a record of the wrong size and a file without a header, naming
// the line.
func TestReadFallback(t *testing.T) {
	const head = `{"format":"capstan-telemetry/1","model":"m","batch":2,"layers":[{"name":"primary","n":2,"d":4},{"name":"caps.0","n":3,"d":4}]}` + "\n"
	const rec = `{"epoch":1,"step":%s,"max_norm":[[0.5,0.25],[1,0,0.5]],"grad_w":[[1,2,3,4,5,6]]}` + "\n"
	log, err := Read(strings.NewReader(head+strings.Replace(rec, "%s", "1", 1)+"\n"+strings.Replace(rec, "%s", "2", 1)), "t.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	if log.Header.Model != "m" || len(log.Header.Layers) != 2 || len(log.Records) != 2 || log.Records[1].Step != 2 || log.Records[0].GradW[0][5] != 6 || log.Records[0].MaxNorm[0][1] != 0.25 {
		t.Errorf("parsed %+v", log)
	}
	for want, text := range map[string]string{
		"t.ndjson:1: telemetry format": strings.Replace(head, "/1", "/9", 1),
		"t.ndjson:2: telemetry step 1": head + `{"epoch":1,"step":1,"max_norm":[[0.5],[1,0,0.5]],"grad_w":[[1,2,3,4,5,6]]}`,
		"t.ndjson:3: telemetry record": head + strings.Replace(rec, "%s", "1", 1) + "{",
		"no telemetry header":          "\n\n",
	} {
		if _, err := Read(strings.NewReader(text), "t.ndjson"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
}
