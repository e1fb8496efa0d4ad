package capsnet

import (
	"fmt"

	"github.com/capstan-ml/capstan/graph"
	"github.com/capstan-ml/capstan/kernels"
)

// paramKind tells how a parameter's internal layout maps to PyTorch's.
type paramKind int

const (
	plain  paramKind = iota // same layout (conv OIHW, linear (out, in), biases)
	votesW                  // torch (n_out, n_in, d_out, d_in) ↔ internal (n_out, d_out, d_in, n_in)
	prior                   // torch (n_in, n_out) ↔ internal (n_out, n_in)
)

// Param is one trained tensor: its PyTorch name and shape, and the arena
// buffer holding it in the engine's internal layout.
type Param struct {
	Name       string
	TorchShape []int
	Buf        *graph.Buf
	// Trainable is false for tensors kept only for PyTorch compatibility:
	// Sabour's fixed zero prior and the unused prior of uniform routing. The
	// optimizer skips them and their gradient stays zero.
	Trainable bool
	// Role says what the tensor is in the model (a convolution's weight, a
	// votes matrix, ...).
	Role ParamRole
	kind paramKind
}

// ParamRole says what a parameter is in the model.
type ParamRole int

// The roles of the parameters: Params.List holds, in this order, each
// convolution's weight (PyTorch (out, in, kh, kw), in = 1 for a depthwise
// one) and bias, each capsule layer's votes matrix W (n_out, n_in, d_out,
// d_in) and prior b (n_in, n_out), and each decoder layer's weight (out,
// in) and bias.
const (
	RoleConvWeight ParamRole = iota
	RoleConvBias
	RoleVotes
	RolePrior
	RoleFCWeight
	RoleFCBias
)

// kind is the layout conversion of a role's tensors.
func (r ParamRole) kind() paramKind {
	switch r {
	case RoleVotes:
		return votesW
	case RolePrior:
		return prior
	}
	return plain
}

// ParamSpec is one parameter as a config declares it, before anything is
// allocated: its PyTorch name and shape, its role and the index of its
// layer within its kind (Convs, Caps or the decoder's layers).
type ParamSpec struct {
	Name       string
	TorchShape []int
	Role       ParamRole
	Layer      int
}

// ParamSpecs returns the parameters NewParams declares for the config, in
// the order of Params.List, computed from the checked Geometry without
// allocating them: a reader checks a file's tensors against them before
// reading its data.
func (c Config) ParamSpecs() ([]ParamSpec, error) {
	geo, err := c.Geometry()
	if err != nil {
		return nil, err
	}
	return c.paramSpecs(geo)
}

func (c Config) paramSpecs(geo Geometry) ([]ParamSpec, error) {
	var specs []ParamSpec
	add := func(name string, role ParamRole, layer int, torch ...int) {
		specs = append(specs, ParamSpec{Name: name, TorchShape: torch, Role: role, Layer: layer})
	}
	for k, cv := range c.Convs {
		in := geo.ConvIn[k][0]
		if cv.Depthwise {
			in = 1
		}
		add(cv.Name+".weight", RoleConvWeight, k, cv.Out, in, geo.Kernel[k], geo.Kernel[k])
		add(cv.Name+".bias", RoleConvBias, k, cv.Out)
	}
	for l, cc := range c.Caps {
		nIn, dIn := geo.CapsIn[l][0], geo.CapsIn[l][1]
		add(cc.Name+".W", RoleVotes, l, cc.Out, nIn, cc.Dim, dIn)
		add(cc.Name+".b", RolePrior, l, nIn, cc.Out)
	}
	if len(c.Caps) == 0 {
		return nil, fmt.Errorf("model %s: no capsule layer", c.Name)
	}
	in := c.Classes * c.Caps[len(c.Caps)-1].Dim
	sizes := append(append([]int(nil), c.Decoder...), geo.Pixels)
	for i, out := range sizes {
		add(fmt.Sprintf("dec.fc%d.weight", i+1), RoleFCWeight, i, out, in)
		add(fmt.Sprintf("dec.fc%d.bias", i+1), RoleFCBias, i, out)
		in = out
	}
	return specs, nil
}

// Params holds every parameter of a model in one arena, shared read-only by
// the data-parallel replicas of a training step.
type Params struct {
	Config Config
	Geo    Geometry
	Arena  *graph.Arena
	List   []*Param
	byName map[string]*Param
}

// NewParams declares the parameters of cfg (zero-filled; see Init). A
// config whose parameters need more than the memory limit of one model
// (ModelMemoryLimit, MaxModelBytes) is refused before anything is
// allocated, with an error naming the limit and how to raise it.
func NewParams(cfg Config) (*Params, error) { return newParams(cfg, false) }

// newParams declares the parameters of cfg; planOnly plans their arena
// without allocating it (and without the memory limit): see TrainingPlan.
func newParams(cfg Config, planOnly bool) (*Params, error) {
	geo, err := cfg.Geometry()
	if err != nil {
		return nil, err
	}
	if !planOnly {
		if err := cfg.checkParamMemory(); err != nil {
			return nil, err
		}
	}
	specs, err := cfg.paramSpecs(geo)
	if err != nil {
		return nil, err
	}
	p := &Params{Config: cfg, Geo: geo, Arena: graph.NewArena(), byName: map[string]*Param{}}
	for _, sp := range specs {
		q := &Param{Name: sp.Name, TorchShape: sp.TorchShape, Role: sp.Role, kind: sp.Role.kind(), Trainable: true}
		if sp.Role == RolePrior {
			// The reference model always has NAME.b (n_in, n_out); only a
			// learned prior under rba routing is trained.
			cc := cfg.Caps[sp.Layer]
			q.Trainable = cc.LearnPrior && cc.Routing == "rba"
		}
		q.Buf = p.Arena.Alloc(sp.Name, graph.Param, sp.TorchShape...)
		p.List = append(p.List, q)
		p.byName[sp.Name] = q
	}
	// The arena aligns every buffer: check its exact size too.
	p.Arena.SetSizeCheck(func(bytes int64) error { return checkBytes(cfg.Name, "parameters", bytes) })
	if planOnly {
		p.Arena.SetSizeCheck(stopAtPlan)
	}
	if err := p.Arena.Seal(); err != nil && err != errPlanned {
		return nil, err
	}
	return p, nil
}

// Get returns the parameter of that PyTorch name, or nil.
func (p *Params) Get(name string) *Param { return p.byName[name] }

// Count is the number of trained scalars.
func (p *Params) Count() int {
	n := 0
	for _, q := range p.List {
		n += q.Buf.Len()
	}
	return n
}

// ToTorch writes the parameter in PyTorch layout into dst (len = Buf.Len()).
func (q *Param) ToTorch(dst []float32) {
	toTorch(q.kind, q.TorchShape, q.Buf.Data(), dst)
}

// FromTorch loads the parameter from src in PyTorch layout.
func (q *Param) FromTorch(src []float32) {
	fromTorch(q.kind, q.TorchShape, src, q.Buf.Data())
}

// toTorch converts an internal-layout tensor (a parameter or its gradient)
// of the given kind to PyTorch layout. Shapes were fixed by NewParams, so
// the converters cannot fail here.
func toTorch(kind paramKind, shape []int, src, dst []float32) {
	switch kind {
	case votesW:
		sh := kernels.VotesShape{NOut: shape[0], NIn: shape[1], DOut: shape[2], DIn: shape[3]}
		mustConvert(kernels.VotesWeightsToTorch(sh, dst, src))
	case prior:
		mustConvert(kernels.PriorToTorch(shape[0], shape[1], dst, src))
	default:
		copy(dst, src)
	}
}

func fromTorch(kind paramKind, shape []int, src, dst []float32) {
	switch kind {
	case votesW:
		sh := kernels.VotesShape{NOut: shape[0], NIn: shape[1], DOut: shape[2], DIn: shape[3]}
		mustConvert(kernels.VotesWeightsFromTorch(sh, dst, src))
	case prior:
		mustConvert(kernels.PriorFromTorch(shape[0], shape[1], dst, src))
	default:
		copy(dst, src)
	}
}

// mustConvert panics on a converter error: the shapes come from the
// validated config and the buffers from NewParams, so an error is a bug in
// this package, not bad input.
func mustConvert(err error) {
	if err != nil {
		panic("capsnet: internal layout conversion: " + err.Error())
	}
}

func parseSquash(s string) (kernels.Squash, error) {
	switch s {
	case "mazzia":
		return kernels.SquashMazzia, nil
	case "sabour":
		return kernels.SquashSabour, nil
	}
	return 0, fmt.Errorf("%q is not a squash kind (mazzia or sabour)", s)
}

// checkParamMemory refuses a config whose parameters alone need more than
// the memory limit of one model (ModelMemoryLimit).
func (c Config) checkParamMemory() error {
	count, err := c.ParamCount()
	if err != nil {
		return err
	}
	return checkBytes(c.Name, "parameters", 4*count)
}

// checkBytes refuses what of a model needing more than the memory limit
// of one model.
func checkBytes(model, what string, bytes int64) error {
	limit, source, err := ModelMemoryLimit()
	if err != nil {
		return err
	}
	if bytes > limit {
		return memoryError(model, fmt.Sprintf("%s need %s", what, fmtBytes(bytes)), bytes, limit, source)
	}
	return nil
}
