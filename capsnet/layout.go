package capsnet

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/capstan-ml/capstan/kernels"
)

// Layout is a Config validated and resolved once (Config.Resolve) into the
// typed description every compiler walks: the float Net (training and
// inference), the int8 graph of package quant, Params and its Init,
// TrainingPlan and the sweep's memory estimate. Nothing past Resolve reads
// the config's strings. A Layout is read-only once made.
type Layout struct {
	// Config is the config it was resolved from (stored in checkpoints).
	Config Config
	// Geo is the shape bookkeeping (Config.Geometry).
	Geo Geometry
	// Convs are the backbone's convolutions, in order.
	Convs []ConvLayer
	// Primary is the primary capsule step.
	Primary PrimaryLayer
	// Caps are the capsule layers, in order.
	Caps []CapsLayer
	// Decoder is the reconstruction decoder's fully connected layers.
	Decoder []FCLayer
	// Params are the parameters in the order of Params.List.
	Params []ParamSpec
	// Margin holds the margin loss constants (with kernels.SquashEps).
	Margin kernels.MarginParams
	// ReconWeight is the factor of the per-image reconstruction error in
	// the total loss (LossConfig.ReconWeight of the input's pixels).
	ReconWeight float32
}

// ConvLayer is one resolved convolution of the backbone.
type ConvLayer struct {
	// Name is the parameter prefix (NAME.weight, NAME.bias).
	Name string
	// Shape is the convolution of one image (Batch 1; see At). Its sizes
	// are bounded; the kernels' own limits (ConvShape.Validate) are
	// checked by the compilers at their batch (At).
	Shape kernels.ConvShape
	// Depthwise: groups = channels; ReLU: a ReLU follows.
	Depthwise, ReLU bool
}

// At returns the convolution's shape for batch images, validated
// (kernels.ConvShape.Validate); the error names the convolution.
func (c ConvLayer) At(batch int) (kernels.ConvShape, error) {
	sh := c.Shape
	sh.Batch = batch
	if err := sh.Validate(); err != nil {
		return sh, fmt.Errorf("conv %s: %w", c.Name, err)
	}
	return sh, nil
}

// PrimaryLayer is the primary capsule step: the last convolution's
// channels viewed as Maps maps of D channels, gathered component-major
// into N = Maps·HW capsules of dimension D, then squashed.
type PrimaryLayer struct {
	Maps, D, HW, N int
	Squash         kernels.Squash
}

// Forward gathers the last convolution's output y (B, Maps·D, HW) into the
// capsules s (B, D, N), s[b, l, m·HW + pos] = y[b, m·D + l, pos], and
// squashes them into v. Both compilers run it.
func (p PrimaryLayer) Forward(batch int, y, s, v []float32) error {
	if err := kernels.PrimaryCapsules(batch, p.Maps, p.D, p.HW, y, s); err != nil {
		return err
	}
	return kernels.SquashForward(p.Squash, batch, p.D, p.N, s, v)
}

// CapsLayer is one resolved capsule layer.
type CapsLayer struct {
	// Name is the parameter prefix (NAME.W, NAME.b).
	Name string
	// NIn, DIn are the input capsules' count and dimension; Out, Dim the
	// output's.
	NIn, DIn, Out, Dim int
	// Routing is the layer's routing kind (an entry of RoutingKinds) and
	// Iters its iterations.
	Routing *RoutingKind
	Iters   int
	// Squash is the non-linearity.
	Squash kernels.Squash
	// TrainPrior: the prior NAME.b is trained (learn_prior under a kind
	// with a learned prior).
	TrainPrior bool
}

// Votes returns the layer's votes shape for batch samples.
func (c CapsLayer) Votes(batch int) kernels.VotesShape {
	return kernels.VotesShape{Batch: batch, NIn: c.NIn, NOut: c.Out, DIn: c.DIn, DOut: c.Dim}
}

// Route returns the layer's routing shape for batch samples.
func (c CapsLayer) Route(batch int) kernels.RoutingShape {
	return kernels.RoutingShape{Batch: batch, NIn: c.NIn, NOut: c.Out, D: c.Dim, Iters: c.Iters, Squash: c.Squash, Kind: c.Routing.Kernel}
}

// Activation is the non-linearity after a decoder layer.
type Activation int

const (
	// ActReLU is max(0, x) (the hidden layers).
	ActReLU Activation = iota
	// ActSigmoid is 1/(1+e^−x) (the output layer).
	ActSigmoid
)

// FCLayer is one fully connected layer of the decoder.
type FCLayer struct {
	// Name is the parameter prefix ("dec.fc1": NAME.weight, NAME.bias).
	Name    string
	In, Out int
	Act     Activation
}

// Resolve validates the config and resolves it into its Layout, or
// returns an error naming the field that makes the config impossible.
// Every size is bounded (no single size above 2^30, no tensor of more than
// 2^40 elements) and every product checked, so that sizes near MaxInt are
// errors, not wrapped integers; whether the model fits in memory is
// decided by NewParams and NewNet (MaxModelBytes).
func (c Config) Resolve() (*Layout, error) {
	l := &Layout{Config: c}
	if err := l.resolveInput(); err != nil {
		return nil, err
	}
	if err := c.checkNames(); err != nil {
		return nil, err
	}
	ch, h, w := c.Input[0], c.Input[1], c.Input[2]
	for k, cv := range c.Convs {
		cl, err := resolveConv(k, cv, ch, h, w)
		if err != nil {
			return nil, err
		}
		l.addConv(cl)
		ch, h, w = cl.Shape.OutC, cl.Shape.OutH(), cl.Shape.OutW()
	}
	if err := l.resolvePrimary(ch, h, w); err != nil {
		return nil, err
	}
	if err := l.resolveCaps(); err != nil {
		return nil, err
	}
	if err := l.resolveDecoder(); err != nil {
		return nil, err
	}
	if err := c.Loss.check(); err != nil {
		return nil, err
	}
	l.Margin = kernels.MarginParams{MPlus: c.Loss.MPlus, MMinus: c.Loss.MMinus, Lambda: c.Loss.Lambda, Eps: kernels.SquashEps}
	l.ReconWeight = c.Loss.ReconWeight(l.Geo.Pixels)
	l.Params = l.paramSpecs()
	return l, nil
}

// resolveInput checks the input and the presence of a backbone.
func (l *Layout) resolveInput() error {
	c := l.Config
	ch, h, w := c.Input[0], c.Input[1], c.Input[2]
	if ch <= 0 || h <= 0 || w <= 0 {
		return fmt.Errorf("input %v: channels, height and width must be positive", c.Input)
	}
	if ch > maxDim || h > maxDim || w > maxDim {
		return fmt.Errorf("input %v: a size is more than %d", c.Input, maxDim)
	}
	var ok bool
	if l.Geo.Pixels, ok = mulSize(ch, h, w); !ok {
		return fmt.Errorf("input %v: more than %d values", c.Input, maxElems)
	}
	if len(c.Convs) == 0 {
		return fmt.Errorf("convs: at least one convolution is needed to form primary capsules")
	}
	return nil
}

// resolveConv checks convolution k, cv, on a (ch, h, w) input.
func resolveConv(k int, cv ConvConfig, ch, h, w int) (ConvLayer, error) {
	field := fmt.Sprintf("convs[%d] (%s)", k, cv.Name)
	if cv.Name == "" {
		return ConvLayer{}, fmt.Errorf("convs[%d]: name is empty", k)
	}
	ks := cv.Kernel
	if ks == 0 {
		if h != w {
			return ConvLayer{}, fmt.Errorf("%s: kernel 0 (whole input) needs a square input, got %d×%d", field, h, w)
		}
		ks = h
	}
	if ks < 0 || cv.Stride <= 0 || cv.Pad < 0 || cv.Out <= 0 {
		return ConvLayer{}, fmt.Errorf("%s: out, kernel and stride must be positive and pad non-negative", field)
	}
	if ks > maxDim || cv.Stride > maxDim || cv.Pad > maxDim || cv.Out > maxDim {
		return ConvLayer{}, fmt.Errorf("%s: out %d, kernel %d, stride %d or pad %d is more than %d", field, cv.Out, ks, cv.Stride, cv.Pad, maxDim)
	}
	if cv.Depthwise && cv.Out != ch {
		return ConvLayer{}, fmt.Errorf("%s: depthwise needs out = in channels, got out %d, in %d", field, cv.Out, ch)
	}
	if h+2*cv.Pad < ks || w+2*cv.Pad < ks {
		return ConvLayer{}, fmt.Errorf("%s: kernel %d larger than its %d×%d input (pad %d)", field, ks, h, w, cv.Pad)
	}
	oh, ow := (h+2*cv.Pad-ks)/cv.Stride+1, (w+2*cv.Pad-ks)/cv.Stride+1
	if oh > maxDim || ow > maxDim {
		return ConvLayer{}, fmt.Errorf("%s: output of %d×%d, more than %d (pad %d)", field, oh, ow, maxDim, cv.Pad)
	}
	if _, ok := mulSize(cv.Out, oh, ow); !ok {
		return ConvLayer{}, fmt.Errorf("%s: output of %d×%d×%d, more than %d values", field, cv.Out, oh, ow, maxElems)
	}
	in, groups := ch, 1
	if cv.Depthwise {
		in, groups = 1, ch
	}
	if _, ok := mulSize(cv.Out, in, ks, ks); !ok {
		return ConvLayer{}, fmt.Errorf("%s: weights of %d×%d×%d×%d, more than %d values", field, cv.Out, in, ks, ks, maxElems)
	}
	sh := kernels.ConvShape{Batch: 1, InC: ch, InH: h, InW: w, OutC: cv.Out, KH: ks, KW: ks,
		StrideH: cv.Stride, StrideW: cv.Stride, PadH: cv.Pad, PadW: cv.Pad, Groups: groups}
	return ConvLayer{Name: cv.Name, Shape: sh, Depthwise: cv.Depthwise, ReLU: cv.ReLU}, nil
}

// addConv records a checked convolution in the layout and its geometry.
func (l *Layout) addConv(cl ConvLayer) {
	sh := cl.Shape
	l.Convs = append(l.Convs, cl)
	l.Geo.ConvIn = append(l.Geo.ConvIn, [3]int{sh.InC, sh.InH, sh.InW})
	l.Geo.Kernel = append(l.Geo.Kernel, sh.KH)
	l.Geo.ConvOut = append(l.Geo.ConvOut, [3]int{sh.OutC, sh.OutH(), sh.OutW()})
}

// resolvePrimary checks the primary capsules on the last convolution's
// (ch, h, w) output.
func (l *Layout) resolvePrimary(ch, h, w int) error {
	c := l.Config
	if c.PrimaryDim <= 0 || ch%c.PrimaryDim != 0 {
		return fmt.Errorf("primary_dim %d must be positive and divide the last conv's %d channels", c.PrimaryDim, ch)
	}
	sq, err := ParseSquash(c.PrimarySquash)
	if err != nil {
		return fmt.Errorf("primary_squash: %w", err)
	}
	l.Geo.PrimaryN = ch / c.PrimaryDim * h * w // ≤ ch·h·w, checked above
	l.Primary = PrimaryLayer{Maps: ch / c.PrimaryDim, D: c.PrimaryDim, HW: h * w, N: l.Geo.PrimaryN, Squash: sq}
	return nil
}

// resolveCaps checks the capsule layers and the class count.
func (l *Layout) resolveCaps() error {
	c := l.Config
	if len(c.Caps) == 0 {
		return fmt.Errorf("caps: at least one capsule layer is needed")
	}
	n, d := l.Geo.PrimaryN, c.PrimaryDim
	for i, cc := range c.Caps {
		cl, err := resolveCapsLayer(i, cc, n, d)
		if err != nil {
			return err
		}
		l.Caps = append(l.Caps, cl)
		l.Geo.CapsIn = append(l.Geo.CapsIn, [2]int{n, d})
		n, d = cc.Out, cc.Dim
	}
	if c.Classes <= 0 || n != c.Classes {
		return fmt.Errorf("classes %d: the last capsule layer has %d capsules", c.Classes, n)
	}
	return nil
}

// resolveCapsLayer checks capsule layer i, cc, on n capsules of
// dimension d.
func resolveCapsLayer(i int, cc CapsConfig, n, d int) (CapsLayer, error) {
	field := fmt.Sprintf("caps[%d] (%s)", i, cc.Name)
	if cc.Name == "" || cc.Out <= 0 || cc.Dim <= 0 {
		return CapsLayer{}, fmt.Errorf("%s: name, out and dim must be set and positive", field)
	}
	if cc.Out > maxDim || cc.Dim > maxDim {
		return CapsLayer{}, fmt.Errorf("%s: out %d or dim %d is more than %d", field, cc.Out, cc.Dim, maxDim)
	}
	kind, err := LookupRouting(cc.Routing)
	if err != nil {
		return CapsLayer{}, fmt.Errorf("%s: %w", field, err)
	}
	if kind.Iterative && cc.Iters <= 0 {
		return CapsLayer{}, fmt.Errorf("%s: iters must be at least 1 for %s routing", field, kind.Name)
	}
	if cc.Iters > MaxIters || cc.Iters < 0 {
		return CapsLayer{}, fmt.Errorf("%s: iters %d is not between 0 and %d", field, cc.Iters, MaxIters)
	}
	sq, err := ParseSquash(cc.Squash)
	if err != nil {
		return CapsLayer{}, fmt.Errorf("%s: squash: %w", field, err)
	}
	if !(cc.InitStd >= 0) || math.IsInf(cc.InitStd, 0) {
		return CapsLayer{}, fmt.Errorf("%s: init_std %v must be a finite number ≥ 0", field, cc.InitStd)
	}
	if cc.Init != "" && !slices.Contains(VotesInits, cc.Init) {
		return CapsLayer{}, fmt.Errorf("%s: init %q must be one of %s", field, cc.Init, strings.Join(VotesInits, ", "))
	}
	if _, ok := mulSize(cc.Out, n, cc.Dim, d); !ok {
		return CapsLayer{}, fmt.Errorf("%s: W of %d×%d×%d×%d, more than %d values", field, cc.Out, n, cc.Dim, d, maxElems)
	}
	if _, ok := mulSize(cc.Out, cc.Dim); !ok {
		return CapsLayer{}, fmt.Errorf("%s: %d capsules of %d, more than %d values", field, cc.Out, cc.Dim, maxElems)
	}
	return CapsLayer{Name: cc.Name, NIn: n, DIn: d, Out: cc.Out, Dim: cc.Dim, Routing: kind, Iters: cc.Iters, Squash: sq,
		TrainPrior: cc.LearnPrior && kind.LearnedPrior}, nil
}

// resolveDecoder checks the decoder's layers: the hidden sizes, then the
// output layer of the input's pixels.
func (l *Layout) resolveDecoder() error {
	c := l.Config
	top := l.Caps[len(l.Caps)-1]
	in := top.Out * top.Dim // checked with the last layer
	sizes := append(append([]int(nil), c.Decoder...), l.Geo.Pixels)
	for i, hsz := range sizes {
		if i < len(c.Decoder) && (hsz <= 0 || hsz > maxDim) {
			return fmt.Errorf("decoder[%d] = %d must be between 1 and %d", i, hsz, maxDim)
		}
		if _, ok := mulSize(hsz, in); !ok {
			return fmt.Errorf("decoder layer %d: weights of %d×%d, more than %d values", i+1, hsz, in, maxElems)
		}
		act := ActReLU
		if i == len(sizes)-1 {
			act = ActSigmoid
		}
		l.Decoder = append(l.Decoder, FCLayer{Name: fmt.Sprintf("dec.fc%d", i+1), In: in, Out: hsz, Act: act})
		in = hsz
	}
	return nil
}

// check checks the loss constants.
func (lc LossConfig) check() error {
	if lc.MPlus <= lc.MMinus || lc.Lambda < 0 || lc.Alpha < 0 {
		return fmt.Errorf("loss: need m_plus > m_minus, lambda >= 0, alpha >= 0 (got %+v)", lc)
	}
	if r := lc.Recon; r != "" && r != "sum" && r != "mean" {
		return fmt.Errorf("loss.recon: %q is not sum or mean", r)
	}
	return nil
}

// ParseSquash parses a squash kind: "mazzia" or "sabour".
func ParseSquash(s string) (kernels.Squash, error) {
	switch s {
	case "mazzia":
		return kernels.SquashMazzia, nil
	case "sabour":
		return kernels.SquashSabour, nil
	}
	return 0, fmt.Errorf("%q is not a squash kind (mazzia or sabour)", s)
}
