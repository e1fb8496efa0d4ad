package train

import (
	"fmt"
	"os"
)

// maxMetricsEpochs bounds the epochs ReadMetrics returns.
const maxMetricsEpochs = 1 << 20

// ReadMetrics returns the completed epochs of a run's metrics.ndjson at
// path, in epoch order (each epoch's last complete line; interrupted
// epochs' partial lines dropped). A missing file is an error.
func ReadMetrics(path string) ([]EpochMetrics, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return readMetricsFile(path, maxMetricsEpochs)
}
