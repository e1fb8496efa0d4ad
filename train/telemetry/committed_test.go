package telemetry

import (
	"os"
	"path/filepath"
	"testing"
)

// committedLog is the largest committed run log (bench/repro/deep-s3: 7,062
// records, 33 MB compressed in one gzip member by bench/repro/pack.sh).
var committedLog = filepath.Join("..", "..", "bench", "repro", "deep-s3", GzipName)

// BenchmarkReadCommitted reads committedLog (decompression and parse, the
// path tools/analyze -html and the dark-capsule analysis take):
// go test ./train/telemetry -run '^$' -bench ReadCommitted -benchtime 3x.
func BenchmarkReadCommitted(b *testing.B) {
	st, err := os.Stat(committedLog)
	if err != nil {
		b.Skip(err)
	}
	b.SetBytes(st.Size())
	for b.Loop() {
		g, err := ReadFile(committedLog)
		if err != nil {
			b.Fatal(err)
		}
		if len(g.Records) != 7062 {
			b.Fatalf("%d records, want 7062", len(g.Records))
		}
	}
}
