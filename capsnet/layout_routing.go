package capsnet

import (
	"fmt"
	"strings"

	"github.com/capstan-ml/capstan/kernels"
)

// RoutingKind is one routing algorithm a capsule layer may use: the one
// description config validation, both compilers (the float Net and the
// int8 graph of package quant), Params, TrainingPlan, the presets' twins
// and the sweep's grid, manifest and collection read.
type RoutingKind struct {
	// Name is the config's "routing" value ("rba", "uniform",
	// "self-attention", "self-attention-in").
	Name string
	// Doc says what the kind computes, in one line.
	Doc string
	// LearnedPrior: the kind reads a routing prior NAME.b (the initial
	// logits of routing by agreement, the bias added after the softmax of
	// self-attention), which is trained when the layer sets learn_prior.
	// Without it NAME.b is kept (the checkpoint format has it) but never
	// trained.
	LearnedPrior bool
	// Iterative: the kind runs the layer's iters iterations (at least 1);
	// otherwise iters is ignored (0 allowed).
	Iterative bool
	// Baseline marks the sweep's baseline kind: the uniform-routing
	// column of its tables, the NAME-KIND preset twins' reference.
	Baseline bool
	// Kernel is the kind the routing kernels run.
	Kernel kernels.RoutingKind
}

// RoutingKinds is the table of routing kinds. Its first entry is the
// default kind of the presets (a preset NAME uses it; every other entry
// KIND has the preset twin NAME-KIND). A new kind is one entry here plus
// its kernels.
var RoutingKinds = []RoutingKind{
	{Name: "rba", Doc: "routing by agreement (Sabour et al.): iters iterations of softmax couplings and agreement updates",
		LearnedPrior: true, Iterative: true, Kernel: kernels.RoutingRBA},
	{Name: "uniform", Doc: "the paper's uniform-routing baseline: couplings 1/n_out, one pass, no prior",
		Baseline: true, Kernel: kernels.RoutingUniform},
	{Name: "self-attention", Doc: "Efficient-CapsNet's self-attention routing: one pass, a[i,j] = <û[i,j], Σ_k û[k,j]>/√d, softmax over the outputs j, plus the learned bias b",
		LearnedPrior: true, Kernel: kernels.RoutingSelfAttention},
	{Name: "self-attention-in", Doc: "self-attention routing with the softmax over the inputs i (each output's couplings sum to 1), plus the learned bias b",
		LearnedPrior: true, Kernel: kernels.RoutingSelfAttentionIn},
}

// DefaultRouting is the presets' routing kind: RoutingKinds[0].
func DefaultRouting() *RoutingKind { return &RoutingKinds[0] }

// LookupRouting returns the routing kind of that name, or an error listing
// the kinds.
func LookupRouting(name string) (*RoutingKind, error) {
	for i := range RoutingKinds {
		if RoutingKinds[i].Name == name {
			return &RoutingKinds[i], nil
		}
	}
	return nil, fmt.Errorf("routing %q must be one of %s", name, strings.Join(RoutingNames(), ", "))
}

// RoutingNames lists the routing kinds' names in table order.
func RoutingNames() []string {
	names := make([]string, len(RoutingKinds))
	for i, k := range RoutingKinds {
		names[i] = k.Name
	}
	return names
}

// IsBaselineRouting reports whether name is a baseline routing kind (an
// unknown name is not).
func IsBaselineRouting(name string) bool {
	k, err := LookupRouting(name)
	return err == nil && k.Baseline
}

// PresetTwin returns the name of preset model's twin under routing kind
// name: model itself for the default kind, model-NAME for another.
func PresetTwin(model, name string) string {
	if name == DefaultRouting().Name {
		return model
	}
	return model + "-" + name
}
