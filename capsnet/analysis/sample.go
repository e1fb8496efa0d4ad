package analysis

import (
	"fmt"
	"math"

	"github.com/capstan-ml/capstan/capsnet"
)

// Sample is the parse tree of one image (the paper's Fig. 2): the image,
// its label and predicted class, every capsule layer's capsule norms and
// every routing layer's couplings, as one forward pass computed them. It
// is plain data (no reference to a Net), for reports.
type Sample struct {
	// Caption names the image or its transformation ("test image 3",
	// "rotation 30°"); it may be empty.
	Caption string
	// C, H, W and Pixels are the model's input image, C planes of H rows
	// of W values in [0, 1].
	C, H, W int
	Pixels  []float32
	// Label is the true class (−1: unknown), Pred the predicted one.
	Label, Pred int
	// Layers are the capsule layers, layer 0 (primary capsules) first.
	Layers []SampleLayer
	// Couplings[l-1] are the couplings into layer l from layer l−1,
	// output-major as the engine stores them: c[j·NIn + i] is input
	// capsule i's coupling to output capsule j.
	Couplings [][]float32
}

// SampleLayer is one capsule layer of a Sample: its name and each
// capsule's norm.
type SampleLayer struct {
	Name  string
	Norms []float32
}

// Validate checks that the sample's sizes agree: pixels for C×H×W, at
// least one layer, one coupling matrix of NOut×NIn per routing layer, and
// finite values.
func (s *Sample) Validate() error {
	if s.C <= 0 || s.H <= 0 || s.W <= 0 || len(s.Pixels) != s.C*s.H*s.W {
		return fmt.Errorf("analysis: sample %q: %d pixels for a %d×%d×%d image", s.Caption, len(s.Pixels), s.C, s.H, s.W)
	}
	if len(s.Layers) == 0 || len(s.Couplings) != len(s.Layers)-1 {
		return fmt.Errorf("analysis: sample %q: %d capsule layers and %d coupling matrices, want at least one layer and one matrix fewer", s.Caption, len(s.Layers), len(s.Couplings))
	}
	for l, L := range s.Layers {
		if len(L.Norms) == 0 || !finite(L.Norms) {
			return fmt.Errorf("analysis: sample %q: layer %d (%s) has %d norms or a non-finite one", s.Caption, l, L.Name, len(L.Norms))
		}
		if l > 0 {
			if c := s.Couplings[l-1]; len(c) != len(L.Norms)*len(s.Layers[l-1].Norms) || !finite(c) {
				return fmt.Errorf("analysis: sample %q: %d couplings into layer %d (%s) or a non-finite one, want %d×%d", s.Caption, len(c), l, L.Name, len(L.Norms), len(s.Layers[l-1].Norms))
			}
		}
	}
	return nil
}

func finite(xs []float32) bool {
	for _, x := range xs {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return false
		}
	}
	return true
}

// NetSample copies sample b of net's last Forward into a Sample, read
// through the Net's accessors: its input image x (the model's input
// shape), every capsule layer's norms and every routing layer's
// couplings, and the predicted class; label is stored as given.
func NetSample(net *capsnet.Net, b int, x []float32, label int) (Sample, error) {
	if b < 0 || b >= net.Batch {
		return Sample{}, fmt.Errorf("analysis: sample %d of a batch of %d", b, net.Batch)
	}
	in := net.P.Config.Input
	if len(x) != in[0]*in[1]*in[2] {
		return Sample{}, fmt.Errorf("analysis: sample image of %d values, model %s takes %d×%d×%d", len(x), net.P.Config.Name, in[0], in[1], in[2])
	}
	s := Sample{C: in[0], H: in[1], W: in[2], Pixels: append([]float32(nil), x...), Label: label, Pred: net.Pred()[b]}
	for l, li := range net.Layers() {
		v, sh, err := net.Capsules(l)
		if err != nil {
			return Sample{}, err
		}
		norms := make([]float32, sh.N)
		for i := range norms {
			var sq float64
			for k := 0; k < sh.D; k++ {
				a := float64(sh.At(v, b, i, k))
				sq += a * a
			}
			norms[i] = float32(math.Sqrt(sq))
		}
		s.Layers = append(s.Layers, SampleLayer{Name: li.Name, Norms: norms})
		if l > 0 {
			c, cs, err := net.Couplings(l)
			if err != nil {
				return Sample{}, err
			}
			m := cs.NIn * cs.NOut
			s.Couplings = append(s.Couplings, append([]float32(nil), c[b*m:(b+1)*m]...))
		}
	}
	return s, nil
}
