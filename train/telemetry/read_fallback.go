package telemetry

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// This file is a stand-in for the telemetry parser (written elsewhere),
// so that the report can read telemetry now: a plain encoding/json
// reader, bounded, with the same signature. Drop it at merge in favour of
// the real Read.

// fallbackMaxLine bounds one line of a telemetry file (a record of the largest
// models is a few MiB) and fallbackMaxRecords the records read.
const (
	fallbackMaxLine    = 64 << 20
	fallbackMaxRecords = 1 << 22
)

// Read parses a telemetry file from r (name names it in errors): the
// Header line, then one Record per line. Blank lines are skipped; a
// record's sizes are checked against the header's layers.
func Read(r io.Reader, name string) (*Log, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), fallbackMaxLine)
	log := &Log{}
	line, header := 0, false
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		if !header {
			if err := json.Unmarshal(raw, &log.Header); err != nil {
				return nil, fmt.Errorf("%s:%d: telemetry header: %w", name, line, err)
			}
			if log.Header.Format != Format {
				return nil, fmt.Errorf("%s:%d: telemetry format %q, want %q", name, line, log.Header.Format, Format)
			}
			header = true
			continue
		}
		if len(log.Records) >= fallbackMaxRecords {
			return nil, fmt.Errorf("%s:%d: more than %d telemetry records", name, line, fallbackMaxRecords)
		}
		var rec Record
		if err := json.Unmarshal(raw, &rec); err != nil {
			return nil, fmt.Errorf("%s:%d: telemetry record: %w", name, line, err)
		}
		if err := fallbackCheck(&log.Header, rec); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		log.Records = append(log.Records, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	if !header {
		return nil, fmt.Errorf("%s: no telemetry header", name)
	}
	return log, nil
}

// fallbackCheck compares a record's sizes with the header's layers.
func fallbackCheck(h *Header, r Record) error {
	if len(r.MaxNorm) != len(h.Layers) || len(r.GradW) != max(len(h.Layers)-1, 0) {
		return fmt.Errorf("telemetry step %d: %d max_norm and %d grad_w layers for %d capsule layers", r.Step, len(r.MaxNorm), len(r.GradW), len(h.Layers))
	}
	for l, v := range r.MaxNorm {
		if len(v) != h.Layers[l].N {
			return fmt.Errorf("telemetry step %d: %d max norms for layer %s of %d capsules", r.Step, len(v), h.Layers[l].Name, h.Layers[l].N)
		}
	}
	for l, g := range r.GradW {
		if want := h.Layers[l].N * h.Layers[l+1].N; len(g) != want {
			return fmt.Errorf("telemetry step %d: %d gradient norms into layer %s, want %d", r.Step, len(g), h.Layers[l+1].Name, want)
		}
	}
	return nil
}
