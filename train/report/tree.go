package report

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"
	"slices"
	"strings"

	"github.com/capstan-ml/capstan/train/report/figure"
)

// writeTrees draws the parse tree of every sample.
func (in *Input) writeTrees(b *strings.Builder) error {
	if len(in.Samples) == 0 {
		figure.Note(b, "No sample image given (tools/analyze -samples N).")
		return nil
	}
	in.treeCaption(b)
	b.WriteString("<div class=\"row\">\n")
	for k := range in.Samples {
		if err := in.writeTree(b, &in.Samples[k]); err != nil {
			return err
		}
	}
	b.WriteString("</div>\n")
	return nil
}

// writeViews draws the parse trees of one digit under transformations
// side by side.
func (in *Input) writeViews(b *strings.Builder) error {
	if len(in.Views) == 0 {
		figure.Note(b, "No transformed digit given.")
		return nil
	}
	figure.Note(b, "The same digit as it is and transformed with the AffNIST transform code: a viewpoint-invariant parse tree would route it the same way (compare the edges and the norms of the capsules that win).")
	b.WriteString("<div class=\"row\">\n")
	for k := range in.Views {
		if err := in.writeTree(b, &in.Views[k]); err != nil {
			return err
		}
	}
	b.WriteString("</div>\n")
	return nil
}

func (in *Input) treeCaption(b *strings.Builder) {
	figure.Note(b, "Capsules as nodes, one column per layer (primary capsules on the left, classes on the right); a node's area and shade grow with the capsule's norm, a hollow grey node is inactive (norm < ε_active = %g). An edge joins input capsule i to output capsule j, darker and wider for a larger coupling c[i,j]; couplings below %g are hidden. Layers of more than %d capsules show their %d largest norms in this image. The predicted class is circled in red; hover a node or edge for its value.",
		in.Thresholds.Active, in.EdgeMin, in.MaxNodes, in.MaxNodes)
}

// Parse-tree geometry, in SVG pixels.
const (
	treeColW   = 96  // distance between layer columns
	treeRowH   = 12  // distance between nodes of a column
	treeMaxR   = 5.5 // radius of a node of norm 1
	treeTop    = 30  // space for the column titles
	treeMargin = 56
)

// writeTree writes one sample: its image and its parse tree.
func (in *Input) writeTree(b *strings.Builder, s *Sample) error {
	img, err := samplePNG(s)
	if err != nil {
		return err
	}
	// The capsules shown per layer, in index order.
	shown := make([][]int, len(s.Layers))
	rows := 0
	for l, L := range s.Layers {
		shown[l] = topIndices(L.Norms, in.MaxNodes)
		rows = max(rows, len(shown[l]))
	}
	width := treeMargin + treeColW*(len(s.Layers)-1) + 24
	height := treeTop + rows*treeRowH + 10
	ypos := func(l, k int) float64 { // row k of layer l's shown capsules, centered
		off := float64(rows-len(shown[l])) * treeRowH / 2
		return float64(treeTop) + off + float64(k)*treeRowH + treeRowH/2
	}
	xpos := func(l int) float64 { return float64(treeMargin + l*treeColW) }
	radius := func(n float32) float64 { return 1.5 + (treeMaxR-1.5)*math.Sqrt(clamp01(float64(n))) }

	title := s.Caption
	if title == "" {
		title = "sample"
	}
	fmt.Fprintf(b, "<div class=\"tree\">\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-size=\"11\" font-family=\"Liberation Sans, Arial, sans-serif\">\n", width, height, width, height)
	fmt.Fprintf(b, "<title>parse tree: %s</title>\n", figure.Esc(title))
	for l, L := range s.Layers {
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"12\" text-anchor=\"middle\" font-weight=\"bold\">%s</text>\n", xpos(l), figure.Esc(L.Name))
		if len(shown[l]) < len(L.Norms) {
			fmt.Fprintf(b, "<text x=\"%.1f\" y=\"24\" text-anchor=\"middle\" font-size=\"9\">top %d of %d</text>\n", xpos(l), len(shown[l]), len(L.Norms))
		}
	}
	// Edges first, under the nodes.
	b.WriteString("<g stroke=\"#1f4e9c\" stroke-linecap=\"round\">\n")
	for l := 1; l < len(s.Layers); l++ {
		c := s.Couplings[l-1]
		nIn := len(s.Layers[l-1].Norms)
		for kj, j := range shown[l] {
			for ki, i := range shown[l-1] {
				v := float64(c[j*nIn+i])
				if v < in.EdgeMin {
					continue
				}
				v = clamp01(v)
				fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke-width=\"%.2f\" stroke-opacity=\"%.3f\"><title>c[%d,%d] = %.3f</title></line>\n",
					xpos(l-1)+treeMaxR, ypos(l-1, ki), xpos(l)-treeMaxR, ypos(l, kj), 0.5+2.5*v, 0.1+0.9*v, i, j, v)
			}
		}
	}
	b.WriteString("</g>\n")
	last := len(s.Layers) - 1
	for l, L := range s.Layers {
		for k, i := range shown[l] {
			n := L.Norms[i]
			x, y := xpos(l), ypos(l, k)
			fill, stroke := normColor(float64(n)), "#123"
			if float64(n) < in.Thresholds.Active {
				fill, stroke = "none", "#999"
			}
			fmt.Fprintf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.2f\" fill=\"%s\" stroke=\"%s\" stroke-width=\"0.8\"><title>%s capsule %d: norm %.3f</title></circle>\n",
				x, y, radius(n), fill, stroke, figure.Esc(L.Name), i, n)
			if l == last {
				fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\" dominant-baseline=\"middle\">%d</text>\n", x+treeMaxR+3, y, i)
				if i == s.Pred {
					fmt.Fprintf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"none\" stroke=\"#d00\" stroke-width=\"1.5\"/>\n", x, y, treeMaxR+2)
				}
			}
		}
	}
	b.WriteString("</svg>\n")
	label := "unknown"
	if s.Label >= 0 {
		label = fmt.Sprint(s.Label)
	}
	verdict := ""
	if s.Label >= 0 && s.Label != s.Pred {
		verdict = " (wrong)"
	}
	fmt.Fprintf(b, "<div class=\"cap\"><img alt=\"input image\" src=\"%s\"><br><b>%s</b><br>label %s<br>predicted %d%s</div>\n</div>\n",
		figure.PNGURI(img), figure.Esc(title), label, s.Pred, verdict)
	return nil
}

// topIndices returns the indices of the k largest values of xs (all when
// len(xs) ≤ k), in increasing index order.
func topIndices(xs []float32, k int) []int {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	if len(xs) <= k {
		return idx
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case xs[a] > xs[b]:
			return -1
		case xs[a] < xs[b]:
			return 1
		}
		return 0
	})
	idx = idx[:k]
	slices.Sort(idx)
	return idx
}

func clamp01(x float64) float64 { return math.Min(math.Max(x, 0), 1) }

// normColor shades a node from light to dark blue as its norm grows to 1.
func normColor(n float64) string {
	t := clamp01(n)
	lerp := func(a, b float64) int { return int(math.Round(a + (b-a)*t)) }
	return fmt.Sprintf("#%02x%02x%02x", lerp(0xdd, 0x08), lerp(0xea, 0x30), lerp(0xf7, 0x6b))
}

// samplePNG encodes a sample's input image (grey for one channel, RGB for
// three, the first channel otherwise) as PNG.
func samplePNG(s *Sample) ([]byte, error) {
	plane := s.H * s.W
	pix := func(c, y, x int) uint8 {
		return uint8(math.Round(255 * clamp01(float64(s.Pixels[c*plane+y*s.W+x]))))
	}
	var img image.Image
	if s.C == 3 {
		m := image.NewRGBA(image.Rect(0, 0, s.W, s.H))
		for y := 0; y < s.H; y++ {
			for x := 0; x < s.W; x++ {
				m.SetRGBA(x, y, color.RGBA{pix(0, y, x), pix(1, y, x), pix(2, y, x), 255})
			}
		}
		img = m
	} else {
		m := image.NewGray(image.Rect(0, 0, s.W, s.H))
		for y := 0; y < s.H; y++ {
			for x := 0; x < s.W; x++ {
				m.SetGray(x, y, color.Gray{pix(0, y, x)})
			}
		}
		img = m
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("sample %q: %w", s.Caption, err)
	}
	return buf.Bytes(), nil
}
