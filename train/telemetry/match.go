package telemetry

import (
	"errors"
	"fmt"
	"strings"
)

// Matches reports whether the log of header h can be the telemetry of a
// checkpoint of the model named model, whose capsule layers (primary
// first) are layers and whose run id (its metadata "run") is run: nil
// when they agree, else an error (one line, without the file's name)
// saying what differs. The model name, the number of capsule layers and
// each layer's capsule count N and dimension D are compared; layer names
// are not (they follow from the model). The run ids are compared only
// when both are known: a checkpoint or a telemetry file of a run that
// predates them has none, and then another run of the same model and
// sizes (another seed) cannot be told apart.
func (h *Header) Matches(model string, layers []Layer, run string) error {
	var diffs []string
	if h.Model != model {
		diffs = append(diffs, fmt.Sprintf("model %q, the checkpoint's %q", h.Model, model))
	}
	if len(h.Layers) != len(layers) {
		diffs = append(diffs, fmt.Sprintf("%d capsule layers, the checkpoint's %d", len(h.Layers), len(layers)))
	} else {
		for l, L := range h.Layers {
			if c := layers[l]; L.N != c.N || L.D != c.D {
				diffs = append(diffs, fmt.Sprintf("layer %d (%s) of %d capsules of dimension %d, the checkpoint's %d of %d", l, L.Name, L.N, L.D, c.N, c.D))
			}
		}
	}
	if h.Run != "" && run != "" && h.Run != run {
		diffs = append(diffs, fmt.Sprintf("run %q, the checkpoint's %q", h.Run, run))
	}
	if len(diffs) == 0 {
		return nil
	}
	return errors.New(strings.Join(diffs, "; "))
}
