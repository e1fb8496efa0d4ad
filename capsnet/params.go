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
	kind      paramKind
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
func NewParams(cfg Config) (*Params, error) {
	geo, err := cfg.Geometry()
	if err != nil {
		return nil, err
	}
	if err := cfg.checkParamMemory(); err != nil {
		return nil, err
	}
	p := &Params{Config: cfg, Geo: geo, Arena: graph.NewArena(), byName: map[string]*Param{}}
	add := func(name string, kind paramKind, torch ...int) *Param {
		q := &Param{Name: name, TorchShape: torch, kind: kind, Trainable: true}
		q.Buf = p.Arena.Alloc(name, graph.Param, torch...)
		p.List = append(p.List, q)
		p.byName[name] = q
		return q
	}
	for k, cv := range cfg.Convs {
		in := geo.ConvIn[k][0]
		if cv.Depthwise {
			in = 1
		}
		add(cv.Name+".weight", plain, cv.Out, in, geo.Kernel[k], geo.Kernel[k])
		add(cv.Name+".bias", plain, cv.Out)
	}
	for l, cc := range cfg.Caps {
		nIn, dIn := geo.CapsIn[l][0], geo.CapsIn[l][1]
		add(cc.Name+".W", votesW, cc.Out, nIn, cc.Dim, dIn)
		// The reference model always has NAME.b (n_in, n_out); only a learned
		// prior under rba routing is trained.
		add(cc.Name+".b", prior, nIn, cc.Out).Trainable = cc.LearnPrior && cc.Routing == "rba"
	}
	in := cfg.Classes * cfg.Caps[len(cfg.Caps)-1].Dim
	sizes := append(append([]int(nil), cfg.Decoder...), geo.Pixels)
	for i, out := range sizes {
		add(fmt.Sprintf("dec.fc%d.weight", i+1), plain, out, in)
		add(fmt.Sprintf("dec.fc%d.bias", i+1), plain, out)
		in = out
	}
	// The arena aligns every buffer: check its exact size too.
	p.Arena.SetSizeCheck(func(bytes int64) error { return checkBytes(cfg.Name, "parameters", bytes) })
	if err := p.Arena.Seal(); err != nil {
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
