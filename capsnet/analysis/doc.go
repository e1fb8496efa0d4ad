// Package analysis computes the parse-tree statistics of "Why Capsule
// Neural Networks Do Not Scale" (docs/semantics.md §7, the paper's section 4) over a
// stream of batches: per capsule layer the capsule norm mean and sum
// (cnm, cns), the active capsule rate and count (car, cas) and the dead
// capsule rate and count (cdr, cds); per routing layer the capsules alive
// (input → output) and the routing dynamics (dyr, dys) over alive input
// capsules; and the mean and standard deviation of every capsule norm and
// every coupling, for the figures.
//
// Invariance accumulates the viewpoint invariance of docs/semantics.md §7 for one
// transformation at one magnitude: per capsule, the correlation of its
// norms on original and transformed images, and per layer their mean.
//
// Stats never holds the activations of more than the batch it is given:
// each capsule and coupling has a float64 running mean and variance
// (Welford's update), so k images cost the same memory as one batch.
// Standard deviations are population ones (ddof 0), as docs/semantics.md §7 says. It
// reads a Net only through its accessors (Layers, Capsules, Couplings).
// Invariance keeps three float64 sums per capsule likewise.
//
//	st := analysis.New(net.Layers(), analysis.DefaultThresholds())
//	for each batch {
//		net.Forward(x, nil)
//		st.AddNet(net, n) // n: valid samples of the batch
//	}
//	rep := st.Report()
package analysis
