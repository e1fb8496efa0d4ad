package telemetry

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/capstan-ml/capstan/capsnet/atomicfile"
)

// Pooling records how a log was max-pooled (Log.Pool): every Window
// consecutive records of a source log of Records records, whose first
// and last records were of steps First and Last, became one record (the last window may be
// shorter). A pooled record carries the epoch and step of its window's
// first record; each of its values is the largest of that value over the
// window (w_norm too, when the log has it: the largest ‖W[j,i]‖ of the
// window). A capsule is below a threshold in a pooled record exactly when
// it was below it in every step of the window, so the dark capsules of a
// pooled log (Log.DarkCapsules) are those of its source, with Since
// rounded down to a window's first step.
type Pooling struct {
	Window  int `json:"window"`  // source records per pooled record
	First   int `json:"first"`   // step of the source's first record
	Last    int `json:"last"`    // step of the source's last record
	Records int `json:"records"` // records in the source log
}

// check checks a Pooling's fields (read from a file) against the package
// limits.
func (p *Pooling) check() error {
	if p.Window < 2 || p.Window > MaxRecords || p.Records < 1 || p.Records > MaxRecords || p.First < 1 || p.Last < p.First || p.Last > maxCount {
		return fmt.Errorf("pool: window %d, steps %d to %d, %d records: want a window of 2 to %d records of a log of 1 to %d from a step ≥ 1 to one not before it", p.Window, p.First, p.Last, p.Records, MaxRecords, MaxRecords)
	}
	return nil
}

// PoolWindow returns the smallest window that pools n records into at
// most maxRecords (at least 1: no pooling needed when n ≤ maxRecords).
func PoolWindow(n, maxRecords int) int {
	if maxRecords < 1 || n <= maxRecords {
		return 1
	}
	return (n + maxRecords - 1) / maxRecords
}

// Pool returns the log max-pooled over windows of window consecutive
// records (see Pooling); g is not changed. A window of 1 returns g
// itself. It returns an error for window < 1, a log without records, a
// log that is already pooled, a record whose sizes disagree with the
// header, or a log with w_norm in some records only.
func (g *Log) Pool(window int) (*Log, error) {
	switch {
	case window < 1:
		return nil, fmt.Errorf("telemetry: pool window %d, must be ≥ 1", window)
	case window == 1:
		return g, nil
	case g.Header.Pool != nil:
		return nil, fmt.Errorf("telemetry: the log is already pooled (window %d)", g.Header.Pool.Window)
	case len(g.Records) == 0:
		return nil, fmt.Errorf("telemetry: pool: the log has no records")
	}
	for k := range g.Records {
		if err := g.Header.checkRecord(&g.Records[k]); err != nil {
			return nil, fmt.Errorf("telemetry: pool: record %d: %w", k, err)
		}
	}
	if err := g.checkWNorm(); err != nil {
		return nil, fmt.Errorf("telemetry: pool: %w", err)
	}
	out := &Log{Header: g.Header}
	out.Header.Layers = append([]Layer(nil), g.Header.Layers...)
	out.Header.Pool = &Pooling{Window: window, First: g.Records[0].Step, Last: g.Records[len(g.Records)-1].Step, Records: len(g.Records)}
	for lo := 0; lo < len(g.Records); lo += window {
		win := g.Records[lo:min(lo+window, len(g.Records))]
		rec := Record{
			Epoch:   win[0].Epoch,
			Step:    win[0].Step,
			MaxNorm: poolRows(win, func(r *Record) [][]float32 { return r.MaxNorm }),
			GradW:   poolRows(win, func(r *Record) [][]float32 { return r.GradW }),
		}
		if g.HasWNorm() {
			rec.WNorm = poolRows(win, func(r *Record) [][]float32 { return r.WNorm })
		}
		out.Records = append(out.Records, rec)
	}
	return out, nil
}

// poolRows returns the element-wise maximum of rows(r) over the records
// of win (a NaN value wins: it marks a step without the figure).
func poolRows(win []Record, rows func(r *Record) [][]float32) [][]float32 {
	first := rows(&win[0])
	out := make([][]float32, len(first))
	for l, row := range first {
		m := append([]float32(nil), row...)
		for k := 1; k < len(win); k++ {
			for i, v := range rows(&win[k])[l] {
				if v > m[i] || math.IsNaN(float64(v)) {
					m[i] = v
				}
			}
		}
		out[l] = m
	}
	return out
}

// Write writes the log as a telemetry file (header line, then one line
// per record) to w. A log with w_norm in some records only is an error.
func (g *Log) Write(w io.Writer) error {
	if err := g.Header.check(); err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	if err := g.checkWNorm(); err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	h, err := json.Marshal(g.Header)
	if err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	if _, err := w.Write(append(h, '\n')); err != nil {
		return err
	}
	var buf []byte
	for k := range g.Records {
		if err := g.Header.checkRecord(&g.Records[k]); err != nil {
			return fmt.Errorf("telemetry: record %d: %w", k, err)
		}
		buf = AppendRecord(buf[:0], &g.Records[k])
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// PoolFile reads the telemetry file src (plain or gzip, with its parts:
// Open), max-pools it into
// at most maxRecords records (Log.Pool with PoolWindow) and writes the
// result gzip-compressed to dst atomically (temporary file, fsync,
// rename). dst must not be src, nor have parts beside it. It returns the
// pooled log.
func PoolFile(src, dst string, maxRecords int) (*Log, error) {
	if maxRecords < 1 {
		return nil, fmt.Errorf("telemetry: pool %s: at most %d records, must be ≥ 1", src, maxRecords)
	}
	if same, err := sameFile(src, dst); err != nil || same {
		if err == nil {
			err = fmt.Errorf("is the file to pool")
		}
		return nil, fmt.Errorf("telemetry: pool %s into %s: %w", src, dst, err)
	}
	if parts, err := Parts(dst); err != nil || len(parts) > 0 {
		if err == nil {
			err = fmt.Errorf("%s is beside it and would be read after the pooled log: remove the parts, or write elsewhere", parts[0])
		}
		return nil, fmt.Errorf("telemetry: pool %s into %s: %w", src, dst, err)
	}
	g, err := ReadFile(src)
	if err != nil {
		return nil, err
	}
	p, err := g.Pool(PoolWindow(len(g.Records), maxRecords))
	if err != nil {
		return nil, fmt.Errorf("telemetry %s: %w", src, err)
	}
	err = atomicfile.Write(dst, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		zw, err := gzip.NewWriterLevel(bw, gzip.BestCompression)
		if err != nil {
			return err
		}
		if err := p.Write(zw); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		return nil, fmt.Errorf("telemetry: pool %s: %w", src, err)
	}
	return p, nil
}

// sameFile reports whether a and b name the same existing file (a
// missing b is not a).
func sameFile(a, b string) (bool, error) {
	sa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	sb, err := os.Stat(b)
	if os.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(sa, sb), nil
}
