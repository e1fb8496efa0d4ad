package train

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/capstan-ml/capstan/train/runfile"
)

// EpochMetrics is one line of metrics.ndjson.
type EpochMetrics struct {
	Epoch       int     `json:"epoch"`
	Loss        float64 `json:"loss"`
	MarginLoss  float64 `json:"margin_loss"`
	ReconLoss   float64 `json:"recon_loss"`
	TrainAcc    float64 `json:"train_acc"`
	ValAcc      float64 `json:"val_acc"`
	TestAcc     float64 `json:"test_acc,omitempty"` // absent without Options.Test
	LR          float64 `json:"lr"`
	ImgPerSec   float64 `json:"img_per_s"`
	Seconds     float64 `json:"seconds"`
	Kernels     string  `json:"kernels"`
	Interrupted bool    `json:"interrupted,omitempty"`
}

// partialEpoch accumulates an epoch's training figures; a checkpoint
// written inside an epoch carries them (metadata "partial"), so the
// resumed epoch reports what an uninterrupted one would.
type partialEpoch struct {
	Steps     int     `json:"steps"`
	Seen      int     `json:"seen"`
	Correct   int     `json:"correct"`
	SumMargin float64 `json:"sum_margin"`
	SumRecon  float64 `json:"sum_recon"`
}

// metrics returns the epoch's training figures as EpochMetrics (the loss
// with the reconstruction weighted by reconW); the caller adds the rest.
func (acc partialEpoch) metrics(epoch int, reconW float64) EpochMetrics {
	steps := float64(max(acc.Steps, 1))
	em := EpochMetrics{Epoch: epoch, MarginLoss: acc.SumMargin / steps, ReconLoss: acc.SumRecon / steps,
		TrainAcc: float64(acc.Correct) / float64(max(acc.Seen, 1))}
	em.Loss = em.MarginLoss + reconW*em.ReconLoss
	return em
}

// metricsFile returns the contents of metrics.ndjson: one line per
// completed epoch of history and, when extra is not nil, one more line
// (the interrupted epoch's partial figures).
func metricsFile(history []EpochMetrics, extra *EpochMetrics) []byte {
	var buf bytes.Buffer
	for _, em := range history {
		line, _ := json.Marshal(em)
		buf.Write(append(line, '\n'))
	}
	if extra != nil {
		line, _ := json.Marshal(extra)
		buf.Write(append(line, '\n'))
	}
	return buf.Bytes()
}

// maxMetricsEpochs bounds the epochs ReadMetrics returns.
const maxMetricsEpochs = 1 << 20

// maxMetricsFile bounds the metrics.ndjson ReadMetrics reads (a line is
// about 250 bytes: 64 MiB is 250,000 epochs).
const maxMetricsFile = 64 << 20

// ReadMetrics returns the completed epochs of a run's metrics.ndjson at
// path, in epoch order (each epoch's last complete line; interrupted
// epochs' partial lines dropped). A missing file is an error, and so is
// one larger than 64 MiB.
func ReadMetrics(path string) ([]EpochMetrics, error) {
	f, err := runfile.Open(path) // a FIFO or device is refused, not waited on
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxMetricsFile+1))
	if err != nil {
		return nil, fmt.Errorf("metrics: %s: %w", path, err)
	}
	if len(raw) > maxMetricsFile {
		return nil, fmt.Errorf("metrics: %s: more than %d MiB, not the metrics of a run", path, maxMetricsFile>>20)
	}
	byEpoch := map[int]EpochMetrics{}
	for _, l := range strings.Split(string(raw), "\n") {
		var em EpochMetrics
		if json.Unmarshal([]byte(l), &em) == nil && !em.Interrupted && em.Epoch >= 1 && em.Epoch <= maxMetricsEpochs {
			byEpoch[em.Epoch] = em
		}
	}
	var out []EpochMetrics
	for e := 1; e <= maxMetricsEpochs && len(out) < len(byEpoch); e++ {
		if em, ok := byEpoch[e]; ok {
			out = append(out, em)
		}
	}
	return out, nil
}
