package eval

import (
	"fmt"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/analysis"
	"github.com/capstan-ml/capstan/train/data"
)

// ParseTree computes the parse-tree statistics of spec §7 (see
// capsnet/analysis) of model p over the first k images of epoch 0 of b (k
// ≤ 0: every image), in batches of b's size through one inference Net:
// memory does not grow with k. The images must have the model's input
// shape (use a placement on the batcher).
func ParseTree(p *capsnet.Params, b *data.Batcher, k int, th analysis.Thresholds) (analysis.Report, error) {
	if c, h, w := b.Shape(); [3]int{c, h, w} != p.Config.Input {
		in := p.Config.Input
		return analysis.Report{}, fmt.Errorf("analysis: the data gives %d×%d×%d images, model %s takes %d×%d×%d", c, h, w, p.Config.Name, in[0], in[1], in[2])
	}
	batch := b.NewBatch()
	net, err := capsnet.NewInferenceNet(p, batch.Cap())
	if err != nil {
		return analysis.Report{}, err
	}
	st, err := analysis.New(net.Layers(), th)
	if err != nil {
		return analysis.Report{}, err
	}
	b.StartEpoch(0)
	seen := 0
	for (k <= 0 || seen < k) && b.Next(batch) {
		n := batch.N
		if k > 0 {
			n = min(n, k-seen)
		}
		// A last, partial batch leaves the earlier images behind it in
		// the buffer: the Net runs a full batch and only n samples count.
		if err := net.Forward(batch.X, nil); err != nil {
			return analysis.Report{}, fmt.Errorf("analysis: %w", err)
		}
		if err := st.AddNet(net, n); err != nil {
			return analysis.Report{}, err
		}
		seen += n
	}
	if err := b.Err(); err != nil {
		return analysis.Report{}, err
	}
	if seen == 0 {
		return analysis.Report{}, fmt.Errorf("analysis: no image to analyse")
	}
	return st.Report(), nil
}
