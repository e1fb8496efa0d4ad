package capsnet

import (
	"fmt"
	"math"
	"sync/atomic"

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
	// Buf holds the values. Code that writes them directly (rather than
	// through Params.Init, Params.Load or FromTorch, or the trainer's
	// optimizer step) must call Params.Modified afterwards: inference Nets
	// read their convolutions' weights from a packed copy, refreshed only
	// then.
	Buf *graph.Buf
	// Trainable is false for tensors kept only for PyTorch compatibility:
	// Sabour's fixed zero prior and the unused prior of uniform routing. The
	// optimizer skips them and their gradient stays zero.
	Trainable bool
	// Role says what the tensor is in the model (a convolution's weight, a
	// votes matrix, ...).
	Role ParamRole
	kind paramKind
	init ParamInit
	// owner is the Params the parameter belongs to (FromTorch marks it
	// Modified).
	owner *Params
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

// ParamGroups are the names of the parameter groups an optimizer setting
// can be given for (train.Options.GroupWeightDecay), in Params.List's
// order: "backbone" (the convolutions' weights and biases), "votes" (the
// capsule layers' votes matrices W), "priors" (their routing priors b)
// and "decoder" (the reconstruction network's weights and biases).
var ParamGroups = []string{"backbone", "votes", "priors", "decoder"}

// Group is the name of the parameter group (ParamGroups) of a role.
func (r ParamRole) Group() string {
	switch r {
	case RoleConvWeight, RoleConvBias:
		return "backbone"
	case RoleVotes:
		return "votes"
	case RolePrior:
		return "priors"
	}
	return "decoder"
}

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
// allocated: its PyTorch name and shape, its role, the index of its layer
// within its kind (Convs, Caps or the decoder's layers), whether it is
// trained and how Params.Init draws it.
type ParamSpec struct {
	Name       string
	TorchShape []int
	Role       ParamRole
	Layer      int
	// Trainable is Param.Trainable.
	Trainable bool
	// Init is the parameter's initialisation.
	Init ParamInit
}

// InitKind is the distribution of a parameter's initial values.
type InitKind int

const (
	// InitUniform draws uniformly in ±Scale.
	InitUniform InitKind = iota
	// InitNormal draws a normal of standard deviation Scale.
	InitNormal
	// InitTruncNormal draws a standard normal cut at ±2, times Scale.
	InitTruncNormal
	// InitZero fills zeros (no draw).
	InitZero
)

// ParamInit is how Params.Init draws one parameter.
type ParamInit struct {
	Kind  InitKind
	Scale float64
}

// ParamSpecs returns the parameters NewParams declares for the config, in
// the order of Params.List, computed from the checked Layout without
// allocating them: a reader checks a file's tensors against them before
// reading its data.
func (c Config) ParamSpecs() ([]ParamSpec, error) {
	l, err := c.Resolve()
	if err != nil {
		return nil, err
	}
	return l.Params, nil
}

// paramSpecs declares the layout's parameters: each convolution's weight
// and bias, each capsule layer's votes matrix and prior, each decoder
// layer's weight and bias.
func (l *Layout) paramSpecs() []ParamSpec {
	var specs []ParamSpec
	add := func(name string, role ParamRole, layer int, init ParamInit, torch ...int) {
		specs = append(specs, ParamSpec{Name: name, TorchShape: torch, Role: role, Layer: layer, Trainable: true, Init: init})
	}
	for k, cv := range l.Convs {
		sh := cv.Shape
		in := sh.InC / sh.Groups
		u := fanInUniform(in, sh.KH, sh.KW)
		add(cv.Name+".weight", RoleConvWeight, k, u, sh.OutC, in, sh.KH, sh.KW)
		add(cv.Name+".bias", RoleConvBias, k, u, sh.OutC)
	}
	for i, cl := range l.Caps {
		add(cl.Name+".W", RoleVotes, i, votesInit(l.Config.Caps[i], cl), cl.Out, cl.NIn, cl.Dim, cl.DIn)
		// The reference model always has NAME.b (n_in, n_out); only a
		// learned prior of a kind that reads one is trained.
		add(cl.Name+".b", RolePrior, i, ParamInit{Kind: InitZero}, cl.NIn, cl.Out)
		specs[len(specs)-1].Trainable = cl.TrainPrior
	}
	for i, fc := range l.Decoder {
		u := fanInUniform(fc.In)
		add(fc.Name+".weight", RoleFCWeight, i, u, fc.Out, fc.In)
		add(fc.Name+".bias", RoleFCBias, i, u, fc.Out)
	}
	return specs
}

// fanInUniform is PyTorch's initialisation of conv and linear weights and
// biases: uniform in ±1/sqrt(fan_in), fan_in the product of the weight's
// dimensions after the first.
func fanInUniform(dims ...int) ParamInit {
	fanIn := 1
	for _, d := range dims {
		fanIn *= d
	}
	return ParamInit{Kind: InitUniform, Scale: 1 / math.Sqrt(float64(fanIn))}
}

// votesInit is the initialisation of a votes matrix of PyTorch shape
// (n_out, n_in, d_out, d_in) as cc.Init says (see CapsConfig.Init).
func votesInit(cc CapsConfig, cl CapsLayer) ParamInit {
	nOut, nIn, dOut, dIn := float64(cl.Out), float64(cl.NIn), float64(cl.Dim), float64(cl.DIn)
	fanIn, fanOut := dIn*nOut*nIn, dOut*nOut*nIn // Keras' rule for a 4-D (n_out, n_in, d_in, d_out) weight
	switch cc.Init {
	case "he_normal":
		return ParamInit{Kind: InitTruncNormal, Scale: math.Sqrt(2/fanIn) / 0.87962566103423978}
	case "glorot_uniform":
		return ParamInit{Kind: InitUniform, Scale: math.Sqrt(6 / (fanIn + fanOut))}
	}
	sd := cc.InitStd
	if sd == 0 {
		sd = DefaultInitStd
	}
	return ParamInit{Kind: InitNormal, Scale: sd}
}

// Params holds every parameter of a model in one arena, shared read-only by
// the data-parallel replicas of a training step.
//
// Inference Nets (NewInferenceNet) keep their convolutions' weights packed
// in the layout the kernels read (kernels.PackConv) and repack them before
// a Forward when the parameters changed since: whoever writes parameter
// data must say so with Modified. Init, Load, Param.FromTorch and the
// trainer's Adam step do; code that writes Param.Buf's data itself must
// call Modified before the next Forward of an inference Net, which
// otherwise computes with the old weights.
type Params struct {
	Config Config
	Geo    Geometry
	// Layout is the resolved config every compiler walks.
	Layout *Layout
	Arena  *graph.Arena
	List   []*Param
	byName map[string]*Param
	// gen counts the calls of Modified: an inference Net whose packed
	// weights were packed at another count repacks them.
	gen atomic.Uint64
}

// Modified marks the parameters' data as changed: every inference Net
// compiled over p repacks its packed weights (kernels.PackConv) at the
// start of its next Forward. Init, Load, Param.FromTorch and the
// trainer's optimizer step call it; code that writes Param.Buf's data
// directly must call it afterwards. It is cheap (one atomic increment)
// and safe for concurrent use, but must not run during a Forward over p.
func (p *Params) Modified() { p.gen.Add(1) }

// generation is the count of Modified calls (see Net.repack).
func (p *Params) generation() uint64 { return p.gen.Load() }

// NewParams declares the parameters of cfg (zero-filled; see Init). A
// config whose parameters need more than the memory limit of one model
// (ModelMemoryLimit, MaxModelBytes) is refused before anything is
// allocated, with an error naming the limit and how to raise it.
func NewParams(cfg Config) (*Params, error) {
	l, err := cfg.Resolve()
	if err != nil {
		return nil, err
	}
	return l.NewParams()
}

// NewParams declares the layout's parameters, as the package function
// NewParams.
func (l *Layout) NewParams() (*Params, error) { return l.newParams(false) }

// newParams declares the layout's parameters; planOnly plans their arena
// without allocating it (and without the memory limit): see TrainingPlan.
func (l *Layout) newParams(planOnly bool) (*Params, error) {
	cfg := l.Config
	if !planOnly {
		if err := l.checkParamMemory(); err != nil {
			return nil, err
		}
	}
	p := &Params{Config: cfg, Geo: l.Geo, Layout: l, Arena: graph.NewArena(), byName: map[string]*Param{}}
	for _, sp := range l.Params {
		q := &Param{Name: sp.Name, TorchShape: sp.TorchShape, Role: sp.Role, kind: sp.Role.kind(), Trainable: sp.Trainable, init: sp.Init, owner: p}
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

// FromTorch loads the parameter from src in PyTorch layout and marks its
// Params Modified.
func (q *Param) FromTorch(src []float32) {
	fromTorch(q.kind, q.TorchShape, src, q.Buf.Data())
	if q.owner != nil {
		q.owner.Modified()
	}
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

// checkParamMemory refuses a layout whose parameters alone need more than
// the memory limit of one model (ModelMemoryLimit).
func (l *Layout) checkParamMemory() error {
	count, err := l.ParamCount()
	if err != nil {
		return err
	}
	return checkBytes(l.Config.Name, "parameters", 4*count)
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
