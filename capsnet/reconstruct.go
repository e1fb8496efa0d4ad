package capsnet

import (
	"fmt"

	"github.com/capstan-ml/capstan/kernels"
)

// Reconstruct runs the decoder alone, with the masked output capsule of
// sample b (the one of its label or predicted class, see MaskByLabel)
// replaced by caps (D values of the last of Layers, in component order), and returns the
// reconstruction of sample b (Pixels values): a view of Recon's row b,
// valid until the next pass; do not modify it. It is the capsule
// perturbation figure of Sabour et al.: capsules of the last Forward with
// one dimension shifted. Reconstruct with the capsule of the last Forward
// gives Recon's row b bit for bit.
//
// It needs a Forward first and reads only what that leaves pinned (the
// output capsules and the mask's classes): the decoder input and the
// decoder's hidden layers may share memory with earlier buffers in the
// memory plan, so it masks the whole batch again from the output capsules
// and runs every decoder layer on it (the other samples' rows of Recon are
// recomputed unchanged). Loss, Norms, Pred and the capsule accessors keep
// the last Forward's values. Afterwards Backward and BackwardMargin are
// refused until the next Forward (the decoder no longer holds the
// Forward's pass). It does not allocate.
func (n *Net) Reconstruct(b int, caps []float32) ([]float32, error) {
	if !n.forwardDone {
		return nil, fmt.Errorf("capsnet: Reconstruct before a successful Forward")
	}
	if b < 0 || b >= n.Batch {
		return nil, fmt.Errorf("capsnet: Reconstruct: sample %d of a batch of %d", b, n.Batch)
	}
	top := n.caps[len(n.caps)-1]
	classes, d := n.P.Config.Classes, top.Route.D
	if len(caps) != d {
		return nil, fmt.Errorf("capsnet: Reconstruct: a capsule of %d values, the output capsules have %d", len(caps), d)
	}
	labels := n.maskLabels()
	in := n.decIn.Data()
	if err := kernels.MaskCapsules(n.Batch, d, classes, top.V.Data(), labels, in); err != nil {
		return nil, fmt.Errorf("capsnet: Reconstruct: %w", err)
	}
	copy(in[(b*classes+labels[b])*d:][:d], caps)
	n.reconstructed = true
	for _, L := range n.dec {
		if err := L.forward(); err != nil {
			return nil, fmt.Errorf("capsnet: Reconstruct: %s: %w", L.w.Name, err)
		}
	}
	px := n.P.Geo.Pixels
	return n.recon.Data()[b*px : (b+1)*px : (b+1)*px], nil
}
