package capsnet

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
)

// Config describes a CapsNet completely: every size is configuration, not
// code (docs/semantics.md §2). It is stored as JSON in checkpoints' __metadata__ "config".
type Config struct {
	// Name is a free label ("sabour", "deep", or the preset it came from).
	Name string `json:"name"`
	// Input is (channels, height, width) of one image.
	Input [3]int `json:"input"`
	// Convs is the convolutional backbone, applied in order. The last conv's
	// output channels are viewed as PrimaryMaps maps of PrimaryDim channels.
	Convs []ConvConfig `json:"convs"`
	// PrimaryDim is the primary capsules' dimension d: channels map·d … map·d+d−1
	// at one position form capsule map·H·W + y·W + x (docs/semantics.md §2).
	PrimaryDim int `json:"primary_dim"`
	// PrimarySquash is "mazzia" or "sabour".
	PrimarySquash string `json:"primary_squash"`
	// Caps are the fully connected capsule layers; the last must have Classes
	// capsules.
	Caps []CapsConfig `json:"caps"`
	// Classes is the number of output classes (10).
	Classes int `json:"classes"`
	// Decoder lists the hidden sizes of the reconstruction decoder (512, 1024);
	// its output size is the image size.
	Decoder []int `json:"decoder"`
	// Loss holds the margin loss constants and the reconstruction weight.
	Loss LossConfig `json:"loss"`
}

// ConvConfig is one convolution of the backbone (PyTorch Conv2d, OIHW).
type ConvConfig struct {
	// Name is the parameter prefix: NAME.weight, NAME.bias.
	Name string `json:"name"`
	Out  int    `json:"out"`
	// Kernel is the square kernel size; 0 means the whole remaining spatial
	// size (the deep model's last depthwise conv).
	Kernel int `json:"kernel"`
	Stride int `json:"stride"`
	Pad    int `json:"pad,omitempty"`
	// Depthwise makes groups = channels (in = out).
	Depthwise bool `json:"depthwise,omitempty"`
	ReLU      bool `json:"relu"`
}

// CapsConfig is one fully connected capsule layer.
type CapsConfig struct {
	// Name is the parameter prefix: NAME.W (n_out, n_in, d_out, d_in) and,
	// with a learned prior, NAME.b (n_in, n_out).
	Name string `json:"name"`
	Out  int    `json:"out"`
	Dim  int    `json:"dim"`
	// Routing names the routing kind, an entry of RoutingKinds ("rba",
	// routing by agreement, or "uniform").
	Routing string `json:"routing"`
	Iters   int    `json:"iters"`
	Squash  string `json:"squash"`
	// LearnPrior: the routing logits start from a learned prior b.
	LearnPrior bool `json:"learn_prior"`
	// InitStd is the standard deviation of the normal initialisation of W
	// (0 means DefaultInitStd, the PyTorch peer's 0.05). Not part of the
	// forward semantics: it only matters to Params.Init.
	InitStd float64 `json:"init_std,omitempty"`
	// Init chooses the votes matrices' initialisation: "" or "normal"
	// (normal with InitStd), or the Keras initialisers of the paper's
	// lineage (Efficient-CapsNet's capsule layers) with Keras' fan rules
	// for their 4-D weight (n_out, n_in, d_in, d_out), whose receptive
	// field is n_out·n_in: fan_in = d_in·n_out·n_in, fan_out =
	// d_out·n_out·n_in. "he_normal": Keras' truncated normal, a normal cut
	// at two of its standard deviations, that one sqrt(2/fan_in)/0.87962566
	// so that the draw's own std is sqrt(2/fan_in);
	// "glorot_uniform": uniform in ±sqrt(6/(fan_in+fan_out)). Like
	// InitStd, it only matters to Params.Init.
	Init string `json:"init,omitempty"`
}

// VotesInits lists the values of CapsConfig.Init.
var VotesInits = []string{"normal", "he_normal", "glorot_uniform"}

// DefaultInitStd is the votes matrices' initial standard deviation when a
// capsule layer gives none (Sabour et al.'s and the PyTorch peer's 0.05).
const DefaultInitStd = 0.05

// LossConfig holds the margin loss (m⁺, m⁻, λ) and reconstruction weight α.
type LossConfig struct {
	MPlus  float32 `json:"m_plus"`
	MMinus float32 `json:"m_minus"`
	Lambda float32 `json:"lambda"`
	Alpha  float32 `json:"alpha"`
	// Recon says what α weighs: "sum" (or empty, docs/semantics.md §4: the sum of
	// squared pixel errors) or "mean" (their mean over the pixels, the
	// Keras "mse" convention behind the literature's 0.392 = 784·0.0005).
	Recon string `json:"recon,omitempty"`
}

// ReconWeight is the factor applied to the per-image sum of squared pixel
// errors L_r in the total loss: α, or α/pixels when Recon is "mean".
func (l LossConfig) ReconWeight(pixels int) float32 {
	if l.Recon == "mean" && pixels > 0 {
		return l.Alpha / float32(pixels)
	}
	return l.Alpha
}

// Sabour returns the original CapsNet (docs/semantics.md §2).
func Sabour() Config {
	return Config{
		Name:  "sabour",
		Input: [3]int{1, 28, 28},
		Convs: []ConvConfig{
			{Name: "conv1", Out: 256, Kernel: 9, Stride: 1, ReLU: true},
			{Name: "prim", Out: 256, Kernel: 9, Stride: 2},
		},
		PrimaryDim:    8,
		PrimarySquash: "sabour",
		Caps:          []CapsConfig{{Name: "digit", Out: 10, Dim: 16, Routing: "rba", Iters: 3, Squash: "sabour"}},
		Classes:       10,
		Decoder:       []int{512, 1024},
		Loss:          LossConfig{MPlus: 0.9, MMinus: 0.1, Lambda: 0.5, Alpha: 0.0005},
	}
}

// Deep returns the paper's model with n capsules of dimension d per layer,
// L capsule layers and r routing iterations on 40×40 inputs (docs/semantics.md §2);
// uniform selects the uniform-routing baseline.
//
// Its α = 0.392 weighs the per-pixel mean of the squared reconstruction
// error (Loss.Recon "mean"), not the sum of docs/semantics.md §4: 0.392 = 784·0.0005 is
// the Keras-era convention for "Sabour's 0.0005 on the sum, written as a
// weight on the MSE", which the paper's recipe inherits. On the sum over
// 1600 pixels the reconstruction term outweighs the margin loss 20–40× and
// the model learns far slower (measured on full MNIST-40: 21% vs 89%
// validation accuracy after one epoch, 78% after 23; docs/benchmarks.md).
// Set "recon": "sum" in a config for the paper's literal loss; the test
// models (tiny-*) keep it, as the PyTorch oracle does.
func Deep(n, d, L, r int, uniform bool) Config {
	kind := DefaultRouting()
	if uniform {
		kind = baselineRouting()
	}
	return DeepRouting(n, d, L, r, kind)
}

// DeepRouting is Deep with every capsule layer routed by kind (an entry of
// RoutingKinds); its name is Deep's, with "-KIND" after it for a kind
// other than the default (PresetTwin).
func DeepRouting(n, d, L, r int, kind *RoutingKind) Config {
	c := deepConfig(n, d, L, r, kind, 40, []ConvConfig{
		{Out: 32, Kernel: 7, Stride: 1}, {Out: 64, Kernel: 3, Stride: 1}, {Out: 64, Kernel: 3, Stride: 2},
	}, []int{512, 1024})
	c.Loss.Recon = "mean"
	return c
}

// lookupKind is LookupRouting for a name of the table (it panics on
// another: a programming error in the presets).
func lookupKind(name string) *RoutingKind {
	k, err := LookupRouting(name)
	if err != nil {
		panic("capsnet: " + err.Error())
	}
	return k
}

// baselineRouting is the first baseline kind of RoutingKinds.
func baselineRouting() *RoutingKind {
	for i := range RoutingKinds {
		if RoutingKinds[i].Baseline {
			return &RoutingKinds[i]
		}
	}
	panic("capsnet: RoutingKinds has no baseline kind")
}

func deepConfig(n, d, L, r int, kind *RoutingKind, hw int, convs []ConvConfig, dec []int) Config {
	routing := kind.Name
	name := PresetTwin(fmt.Sprintf("deep-n%d-d%d-L%d-r%d", n, d, L, r), kind.Name)
	c := Config{Name: name, Input: [3]int{1, hw, hw}, PrimaryDim: d, PrimarySquash: "mazzia", Classes: 10, Decoder: dec,
		Loss: LossConfig{MPlus: 0.9, MMinus: 0.1, Lambda: 0.5, Alpha: 0.392}}
	for i, cv := range convs {
		cv.Name, cv.ReLU = fmt.Sprintf("convs.%d", i), true
		c.Convs = append(c.Convs, cv)
	}
	c.Convs = append(c.Convs,
		ConvConfig{Name: fmt.Sprintf("convs.%d", len(convs)), Out: n * d, Kernel: 3, Stride: 2, ReLU: true},
		ConvConfig{Name: "dw", Out: n * d, Kernel: 0, Stride: 1, Depthwise: true})
	for l := 0; l < L; l++ {
		out := n
		if l == L-1 {
			out = 10
		}
		c.Caps = append(c.Caps, CapsConfig{Name: fmt.Sprintf("caps.%d", l), Out: out, Dim: d, Routing: routing, Iters: r, Squash: "mazzia", LearnPrior: true,
			InitStd: DeepInitStd(d)})
	}
	return c
}

// DeepInitStd is the votes matrices' initial standard deviation in the deep
// presets: 1.5/sqrt(d_in), so that a vote has about 1.5 times its input
// capsule's length. Sabour's 0.05 is sized for 1152 input capsules; on the
// deep model's 16 it shrinks the capsules about 30× per layer, the
// gradients of the upper layers' W fall to ~1e-9 (below Adam's ε and the
// 1e-6 weight decay) and training never leaves chance accuracy (measured:
// docs/benchmarks.md). 1.5/sqrt(d_in) is the scale of the PyTorch
// reference's own test vectors.
func DeepInitStd(dIn int) float64 { return 1.5 / math.Sqrt(float64(dIn)) }

// Presets returns the named model configurations: sabour, sabour-small,
// deep (n=16, d=8, L=4, r=10), deep-uniform, deep's variants
// deep-he-normal, deep-glorot-uniform and deep-sum-loss, the test models tiny-sabour, tiny-deep,
// tiny-deep-uniform, tiny-deep3, tiny-deep-selfattn and
// tiny-deep-selfattn-in (the PyTorch reference's MODELS), the
// paper's grid deep-nN-dD-LL (L of GridL, n of GridN, d of GridD, routing by
// agreement, r 10) and its uniform-routing twins deep-nN-dD-LL-uniform
// (the baseline beside each grid model in the sweeps).
func Presets() map[string]Config {
	p := map[string]Config{"sabour": Sabour()}
	for i := range RoutingKinds {
		c := DeepRouting(16, 8, 4, 10, &RoutingKinds[i])
		c.Name = PresetTwin("deep", RoutingKinds[i].Name)
		p[c.Name] = c
	}
	// The dead-capsule investigation's variants of deep (docs/reproduction.md):
	// the votes matrices initialised with Keras' he_normal or
	// glorot_uniform (the paper's lineage, see CapsConfig.Init), and the
	// the paper's literal loss (α on the sum of squared pixel errors).
	for name, init := range map[string]string{"deep-he-normal": "he_normal", "deep-glorot-uniform": "glorot_uniform"} {
		c := Deep(16, 8, 4, 10, false)
		c.Name = name
		for i := range c.Caps {
			c.Caps[i].Init = init
		}
		p[name] = c
	}
	sl := Deep(16, 8, 4, 10, false)
	sl.Name, sl.Loss.Recon = "deep-sum-loss", "sum"
	p["deep-sum-loss"] = sl
	// sabour-small: Sabour's architecture at a quarter of the channels and
	// half the primary maps (576 primary capsules); the default of
	// tools/train, which must train in about two minutes on a laptop.
	ss := Sabour()
	ss.Name = "sabour-small"
	ss.Convs[0].Out, ss.Convs[1].Out = 64, 128
	p["sabour-small"] = ss
	ts := Sabour()
	ts.Name = "tiny-sabour"
	ts.Convs[0].Out, ts.Convs[1].Out, ts.PrimaryDim = 16, 16, 4
	ts.Caps[0].Dim = 8
	ts.Decoder = []int{64, 128}
	p["tiny-sabour"] = ts
	for i := range RoutingKinds {
		td := deepConfig(8, 4, 2, 3, &RoutingKinds[i], 28, []ConvConfig{{Out: 8, Kernel: 5, Stride: 1}}, []int{64, 128})
		td.Name = PresetTwin("tiny-deep", RoutingKinds[i].Name)
		p[td.Name] = td
	}
	td3 := deepConfig(6, 5, 3, 5, DefaultRouting(), 24, []ConvConfig{{Out: 6, Kernel: 3, Stride: 1}, {Out: 8, Kernel: 3, Stride: 1}}, []int{32, 64})
	td3.Name = "tiny-deep3"
	p["tiny-deep3"] = td3
	// The reference's test models of self-attention routing (its MODELS
	// tiny-deep-selfattn and tiny-deep-selfattn-in, iters unused).
	tsa := deepConfig(8, 4, 2, 1, lookupKind("self-attention"), 28, []ConvConfig{{Out: 8, Kernel: 5, Stride: 1}}, []int{64, 128})
	tsa.Name = "tiny-deep-selfattn"
	p[tsa.Name] = tsa
	tsi := deepConfig(6, 5, 3, 1, lookupKind("self-attention-in"), 24, []ConvConfig{{Out: 6, Kernel: 3, Stride: 1}, {Out: 8, Kernel: 3, Stride: 1}}, []int{32, 64})
	tsi.Name = "tiny-deep-selfattn-in"
	p[tsi.Name] = tsi
	for _, L := range GridL {
		for _, n := range GridN {
			for _, d := range GridD {
				for i := range RoutingKinds {
					c := DeepRouting(n, d, L, 10, &RoutingKinds[i])
					c.Name = PresetTwin(gridName(n, d, L), RoutingKinds[i].Name)
					p[c.Name] = c
				}
			}
		}
	}
	return p
}

// PresetNames lists Presets' keys, sorted.
func PresetNames() []string {
	var names []string
	for k := range Presets() {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// LoadConfig returns the preset of that name, or reads a JSON config file
// when name ends in .json or names an existing file.
func LoadConfig(name string) (Config, error) {
	if c, ok := Presets()[name]; ok {
		return c, c.Validate()
	}
	if _, err := os.Stat(name); err != nil && !strings.HasSuffix(name, ".json") {
		return Config{}, fmt.Errorf("unknown model %q: not a preset (%s) nor a config file", name, PresetHint())
	}
	f, err := os.Open(name)
	if err != nil {
		return Config{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxConfigBytes+1))
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", name, err)
	}
	if len(b) > MaxConfigBytes {
		return Config{}, fmt.Errorf("config %s: more than %d KiB, not a model config", name, MaxConfigBytes>>10)
	}
	return ParseConfig(b, name)
}

// MaxConfigBytes bounds a JSON config file (a real one is under 2 KiB).
const MaxConfigBytes = 1 << 20

// ParseConfig decodes a JSON config strictly (decodeConfig: exactly one
// object, no unknown, misspelt or repeated field, input exactly three
// numbers) and validates it, including that its parameters fit the memory
// limit of one model (ModelMemoryLimit); source names it in errors. Config
// files and checkpoints' config metadata both come through here.
func ParseConfig(b []byte, source string) (Config, error) {
	c, err := decodeConfig(b)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %v", source, err)
	}
	l, err := c.Resolve()
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", source, err)
	}
	// A model too large for this machine is refused here, where the
	// error can name the file (or checkpoint) it came from.
	if err := l.checkParamMemory(); err != nil {
		return Config{}, fmt.Errorf("config %s: %w", source, err)
	}
	return c, nil
}

// JSON returns the config as compact JSON.
func (c Config) JSON() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// Geometry is the shape bookkeeping of a validated config.
type Geometry struct {
	// ConvIn[k] is (C, H, W) entering conv k; ConvOut[k] leaving it.
	ConvIn, ConvOut [][3]int
	// Kernel[k] is conv k's resolved kernel size.
	Kernel []int
	// CapsIn[l] is (n_in, d_in) of capsule layer l; PrimaryN is the primary
	// capsule count.
	CapsIn   [][2]int
	PrimaryN int
	// Pixels is C·H·W of the input (the decoder's output size).
	Pixels int
}

// Geometry resolves every shape, or returns an error naming the field that
// makes the config impossible: the Geo of the config's Layout (Resolve,
// which says what is checked).
func (c Config) Geometry() (Geometry, error) {
	l, err := c.Resolve()
	if err != nil {
		return Geometry{}, err
	}
	return l.Geo, nil
}

// ParamCount returns the number of scalars of the config's parameters (as
// NewParams declares them), computed from its Layout with every product and
// sum checked, before anything is allocated. Each tensor has at most 2^40
// elements (Resolve); a total beyond 2^60 is an error.
func (c Config) ParamCount() (int64, error) {
	l, err := c.Resolve()
	if err != nil {
		return 0, err
	}
	return l.ParamCount()
}

// ParamCount is Config.ParamCount of the layout's config.
func (l *Layout) ParamCount() (int64, error) {
	var total int64
	for _, sp := range l.Params {
		n, ok := mulSize(sp.TorchShape...)
		if !ok || total+int64(n) > 1<<60 {
			return 0, fmt.Errorf("model %s: more than 2^60 parameters", l.Config.Name)
		}
		total += int64(n)
	}
	return total, nil
}

// MaxIters bounds the routing iterations of a capsule layer (the paper uses
// up to 10): the routing keeps every iteration for backward, so a huge
// count from a hostile config would size the arena by it.
const MaxIters = 1000

// Validate reports whether the config describes a buildable network
// (Resolve succeeds).
func (c Config) Validate() error {
	_, err := c.Resolve()
	return err
}

// checkNames refuses layer names that would give two parameters the same
// name (NAME.weight and NAME.bias of a convolution, NAME.W and NAME.b of
// a capsule layer, dec.fcK.weight and dec.fcK.bias of the decoder): a
// checkpoint could not tell them apart.
func (c Config) checkNames() error {
	owner := map[string]string{}
	claim := func(field string, params ...string) error {
		for _, q := range params {
			if prev, ok := owner[q]; ok {
				return fmt.Errorf("%s: parameter %q is also %s's: layer names must be distinct", field, q, prev)
			}
			owner[q] = field
		}
		return nil
	}
	for i := 1; i <= len(c.Decoder)+1; i++ {
		claim(fmt.Sprintf("decoder layer %d", i), fmt.Sprintf("dec.fc%d.weight", i), fmt.Sprintf("dec.fc%d.bias", i))
	}
	for k, cv := range c.Convs {
		if err := claim(fmt.Sprintf("convs[%d] (%s)", k, cv.Name), cv.Name+".weight", cv.Name+".bias"); err != nil {
			return err
		}
	}
	for k, cc := range c.Caps {
		if err := claim(fmt.Sprintf("caps[%d] (%s)", k, cc.Name), cc.Name+".W", cc.Name+".b"); err != nil {
			return err
		}
	}
	return nil
}
