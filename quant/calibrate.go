package quant

import (
	"fmt"
	"math"
	"strconv"

	"github.com/capstan-ml/capstan/capsnet"
)

// Method is how Calibrate turns the activations it observes at a GEMM's
// input into the range that input's scale covers.
type Method int

const (
	// MinMax takes the largest |x| observed.
	MinMax Method = iota
	// Percentile takes a percentile of the observed |x| (clipping the
	// rare outliers beyond it).
	Percentile
)

// String returns the method's name in the file's metadata: "minmax" or
// "percentile".
func (m Method) String() string {
	switch m {
	case MinMax:
		return "minmax"
	case Percentile:
		return "percentile"
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// ParseMethod parses "minmax" or "percentile".
func ParseMethod(s string) (Method, error) {
	switch s {
	case "minmax":
		return MinMax, nil
	case "percentile":
		return Percentile, nil
	}
	return 0, fmt.Errorf("calibration method %q: want minmax or percentile", s)
}

// DefaultPercentile is the percentile of |x| of the Percentile method when
// CalibOptions.Percentile is zero.
const DefaultPercentile = 99.99

// histBins is the resolution of the Percentile method: the range is the
// upper edge of the bin of [0, max|x|] where the percentile falls, within
// max|x|/histBins of the exact percentile.
const histBins = 4096

// CalibOptions are the settings of Calibrate.
type CalibOptions struct {
	Method Method
	// Percentile of |x| taken as the range by the Percentile method, in
	// (0, 100]; DefaultPercentile when zero.
	Percentile float64
	// Batch is the number of images per forward pass (32 when zero).
	Batch int
}

// ActScale is the calibrated scale of the input of one int8 GEMM, named
// by the weight it multiplies: a convolution's input ("convs.0.weight"),
// a capsule layer's input capsules ("caps.1.W") or a decoder layer's
// input ("dec.fc1.weight"). The int8 input is round(x/Scale) clamped to
// [-127, 127].
type ActScale struct {
	Name  string
	Scale float32
}

// Calibration is the per-tensor activation scales of a model's int8 GEMM
// inputs, in the order of its quantized weights, and how they were
// obtained.
type Calibration struct {
	Method     Method
	Percentile float64 // the percentile of the Percentile method
	Images     int     // the number of calibration images
	Scales     []ActScale
}

// gemmInput is one int8 GEMM input of a Net: the weight's name and a view
// of its input after a Forward.
type gemmInput struct {
	name string
	get  func(n *capsnet.Net) ([]float32, error)
}

// gemmInputs lists the int8 GEMM inputs of a layout, in the order of its
// quantized weights.
func gemmInputs(l *capsnet.Layout) []gemmInput {
	var out []gemmInput
	for _, sp := range l.Params {
		l := sp.Layer
		switch sp.Role {
		case capsnet.RoleConvWeight:
			out = append(out, gemmInput{sp.Name, func(n *capsnet.Net) ([]float32, error) { return n.ConvInput(l) }})
		case capsnet.RoleVotes:
			// Capsule layer l's input is accessor layer l (0: primary).
			out = append(out, gemmInput{sp.Name, func(n *capsnet.Net) ([]float32, error) {
				v, _, err := n.Capsules(l)
				return v, err
			}})
		case capsnet.RoleFCWeight:
			out = append(out, gemmInput{sp.Name, func(n *capsnet.Net) ([]float32, error) { return n.FCInput(l) }})
		}
	}
	return out
}

// Calibrate runs the float model p forward on images (N images, NCHW,
// N·C·H·W values: the calibration set, e.g. N training images from a
// data.Batcher) and returns one symmetric per-tensor scale per int8 GEMM
// input: range/127, the range being max|x| (MinMax) or a percentile of |x|
// (Percentile, from a histogram of histBins bins over [0, max|x|], a second
// pass over the images). The decoder is masked by the predicted class, as
// in inference. An input that is zero on every image gets scale 1.
func Calibrate(p *capsnet.Params, images []float32, opts CalibOptions) (*Calibration, error) {
	pct, err := opts.percentile()
	if err != nil {
		return nil, err
	}
	r, err := newCalibRun(p, images, opts.Batch)
	if err != nil {
		return nil, err
	}
	maxAbs := make([]float64, len(r.ins))
	if err := r.run(func(k int, x []float32) {
		for _, v := range x {
			maxAbs[k] = max(maxAbs[k], math.Abs(float64(v)))
		}
	}); err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	ranges := maxAbs
	if opts.Method == Percentile {
		if ranges, err = r.percentiles(maxAbs, pct); err != nil {
			return nil, fmt.Errorf("calibrate: %w", err)
		}
	}
	c := &Calibration{Method: opts.Method, Percentile: pct, Images: r.nImg}
	for k, in := range r.ins {
		s := float32(ranges[k] / 127)
		if !(s > 0) {
			s = 1
		}
		c.Scales = append(c.Scales, ActScale{Name: in.name, Scale: s})
	}
	return c, nil
}

// percentile checks the options' method and returns the percentile it
// takes (0 for MinMax).
func (opts CalibOptions) percentile() (float64, error) {
	pct := opts.Percentile
	switch {
	case opts.Method != MinMax && opts.Method != Percentile:
		return 0, fmt.Errorf("calibrate: unknown method %v", opts.Method)
	case opts.Method == Percentile && pct == 0:
		pct = DefaultPercentile
	case opts.Method == Percentile && !(pct > 0 && pct <= 100):
		return 0, fmt.Errorf("calibrate: percentile %v, want one in (0, 100]", pct)
	case opts.Method == MinMax:
		pct = 0
	}
	return pct, nil
}

// calibRun runs the float model over the calibration images batch by
// batch and shows each GEMM input to a visitor.
type calibRun struct {
	p           *capsnet.Params
	images      []float32
	inLen, nImg int
	batch       int
	ins         []gemmInput
	nets        map[int]*capsnet.Net // one for the full batches, one for the remainder
}

// newCalibRun checks the images and the batch.
func newCalibRun(p *capsnet.Params, images []float32, batch int) (*calibRun, error) {
	inLen := 1
	for _, d := range p.Config.Input {
		inLen *= d
	}
	if len(images) == 0 || len(images)%inLen != 0 {
		return nil, fmt.Errorf("calibrate: %d image values, want a positive multiple of %d (model %s, input %v)", len(images), inLen, p.Config.Name, p.Config.Input)
	}
	for i, v := range images {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("calibrate: image value %d is %v", i, v)
		}
	}
	nImg := len(images) / inLen
	if batch == 0 {
		batch = 32
	}
	if batch < 0 {
		return nil, fmt.Errorf("calibrate: batch %d, want > 0", batch)
	}
	return &calibRun{p: p, images: images, inLen: inLen, nImg: nImg, batch: min(batch, nImg),
		ins: gemmInputs(p.Layout), nets: map[int]*capsnet.Net{}}, nil
}

// run runs every batch forward and calls visit with each GEMM input k.
func (r *calibRun) run(visit func(k int, x []float32)) error {
	for start := 0; start < r.nImg; start += r.batch {
		b := min(r.batch, r.nImg-start)
		n := r.nets[b]
		if n == nil {
			var err error
			if n, err = capsnet.NewNet(r.p, b); err != nil {
				return err
			}
			n.SetMaskByLabel(false)
			r.nets[b] = n
		}
		if err := n.Forward(r.images[start*r.inLen:(start+b)*r.inLen], nil); err != nil {
			return err
		}
		for k, in := range r.ins {
			x, err := in.get(n)
			if err != nil {
				return err
			}
			visit(k, x)
		}
	}
	return nil
}

// percentiles makes a second pass, a histogram of histBins bins over
// [0, maxAbs[k]] per input k, and returns the ranges of percentile pct.
func (r *calibRun) percentiles(maxAbs []float64, pct float64) ([]float64, error) {
	hist := make([][]int64, len(r.ins))
	for k := range hist {
		hist[k] = make([]int64, histBins)
	}
	if err := r.run(func(k int, x []float32) {
		if maxAbs[k] == 0 {
			return
		}
		for _, v := range x {
			bin := int(math.Abs(float64(v)) / maxAbs[k] * histBins)
			hist[k][min(bin, histBins-1)]++
		}
	}); err != nil {
		return nil, err
	}
	ranges := make([]float64, len(r.ins))
	for k, h := range hist {
		ranges[k] = percentileRange(h, pct, maxAbs[k])
	}
	return ranges, nil
}

// percentileRange returns the upper edge of the first bin of hist (over
// [0, hi]) at which the cumulative count reaches pct percent of the total.
func percentileRange(hist []int64, pct, hi float64) float64 {
	var total int64
	for _, c := range hist {
		total += c
	}
	if total == 0 {
		return 0
	}
	need := int64(math.Ceil(pct / 100 * float64(total)))
	var cum int64
	for i, c := range hist {
		cum += c
		if cum >= need {
			return float64(i+1) / float64(len(hist)) * hi
		}
	}
	return hi
}

// formatPercentile writes a percentile for the metadata.
func formatPercentile(p float64) string { return strconv.FormatFloat(p, 'g', -1, 64) }
