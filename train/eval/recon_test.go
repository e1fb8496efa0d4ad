package eval

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/train/data"
)

func decodePNG(t *testing.T, b []byte) image.Image {
	t.Helper()
	im, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return im
}

// grey returns the grey level of figure pixel (x, y).
func grey(im image.Image, x, y int) uint8 { return color.GrayModel.Convert(im.At(x, y)).(color.Gray).Y }

// forwardRecon runs x through a fresh inference Net and returns its
// reconstructions and predictions, for comparison with the figures.
func forwardRecon(t *testing.T, p *capsnet.Params, x []float32, n int) ([]float32, []int) {
	t.Helper()
	net, err := capsnet.NewInferenceNet(p, n)
	if err != nil {
		t.Fatal(err)
	}
	if err := net.Forward(x, nil); err != nil {
		t.Fatal(err)
	}
	return slices.Clone(net.Recon()), slices.Clone(net.Pred())
}

// TestReconstructionFigure: 5 digits in rows of 3 give a PNG of the
// layout's size with each input and its reconstruction (the Net's, at
// 8 bits) at their places, each pixel drawn 2×2, grey elsewhere.
func TestReconstructionFigure(t *testing.T) {
	p, te := tinyModel(t)
	ds, _ := te.Slice(0, 5)
	b, err := data.NewBatcher(ds, data.BatchConfig{Size: 2})
	if err != nil {
		t.Fatal(err)
	}
	x, labels, err := Images(b, 9)
	if err != nil {
		t.Fatal(err)
	}
	if len(x) != 5*784 || !slices.Equal(x, ds.X) || len(labels) != 5 || labels[0] != int(ds.Y[0]) || labels[4] != int(ds.Y[4]) {
		t.Fatalf("Images: %d values, labels %v; want the 5 digits of the data set", len(x), labels)
	}
	raw, err := ReconstructionFigure(p, x, 5, 3)
	if err != nil {
		t.Fatal(err)
	}
	im := decodePNG(t, raw)
	// 3 pairs of 28+1+28 with margins of 3, 2 rows of 28.
	wantW, wantH := 2*(3+3*(57+3)), 2*(3+2*(28+3))
	if r := im.Bounds(); r.Dx() != wantW || r.Dy() != wantH {
		t.Fatalf("figure %v, want %d×%d", r, wantW, wantH)
	}
	recon, _ := forwardRecon(t, p, x, 5)
	for _, pt := range []struct{ i, y, x int }{{0, 14, 14}, {1, 10, 16}, {4, 20, 12}, {3, 0, 0}, {4, 27, 27}} {
		x0, y0 := 3+(pt.i%3)*60, 3+(pt.i/3)*31
		v, r := x[pt.i*784+pt.y*28+pt.x], recon[pt.i*784+pt.y*28+pt.x]
		for d := 0; d < 4; d++ { // the four figure pixels of one image pixel
			fx, fy := 2*(x0+pt.x)+d%2, 2*(y0+pt.y)+d/2
			if g := grey(im, fx, fy); g != byteOf(v) {
				t.Errorf("image %d pixel (%d,%d): input drawn %d, want %d", pt.i, pt.y, pt.x, g, byteOf(v))
			}
			if g := grey(im, fx+2*29, fy); g != byteOf(r) {
				t.Errorf("image %d pixel (%d,%d): reconstruction drawn %d, want %d", pt.i, pt.y, pt.x, g, byteOf(r))
			}
		}
	}
	// Margins, the gap inside a pair and the empty sixth cell are grey.
	for _, q := range [][2]int{{0, 0}, {2*3 + 2*28, 2 * 3}, {wantW - 1, wantH - 1}, {2*(3+2*60) + 40, 2*(3+31) + 20}} {
		if g := grey(im, q[0], q[1]); g != figureBackground {
			t.Errorf("figure pixel %v: %d, want the background %d", q, g, figureBackground)
		}
	}
	// Not every input pixel draws as its reconstruction (they are beside
	// each other, not copies).
	if slices.Equal(x[:784], recon[:784]) {
		t.Fatal("reconstruction equals the input")
	}
	for _, tc := range []struct {
		x       []float32
		n, cols int
		want    string
	}{{x, 5, 0, "columns"}, {x, 0, 3, "0 images"}, {x[1:], 5, 3, "values"}, {x, MaxFigureImages + 1, 3, "images"}} {
		if _, err := ReconstructionFigure(p, tc.x, tc.n, tc.cols); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReconstructionFigure(%d values, %d, %d): %v, want an error naming %q", len(tc.x), tc.n, tc.cols, err, tc.want)
		}
	}
	if _, _, err := Images(b, 0); err == nil {
		t.Error("Images(0): no error")
	}
}

// TestPerturbationFigure: D rows of 11 reconstructions after a label
// column, in the order of the ranked effects; the middle column is the
// unperturbed reconstruction, the others differ from it; -top keeps the
// first rows.
func TestPerturbationFigure(t *testing.T) {
	p, te := tinyModel(t)
	x := te.Image(3).Pix
	raw, class, err := PerturbationFigure(p, x)
	if err != nil {
		t.Fatal(err)
	}
	recon, pred := forwardRecon(t, p, x, 1)
	if class != pred[0] {
		t.Errorf("class %d, the Net predicts %d", class, pred[0])
	}
	im := decodePNG(t, raw)
	d := capsnet.Presets()["tiny-deep"].Caps[1].Dim
	wantW, wantH := 2*(3+FigureLabelWidth+11*29-1+3), 2*(3+d*29-1+3)
	if r := im.Bounds(); r.Dx() != wantW || r.Dy() != wantH {
		t.Fatalf("figure %v, want %d×%d", r, wantW, wantH)
	}
	cell := func(im image.Image, row, col int) []uint8 {
		var out []uint8
		for y := 0; y < 28; y++ {
			for x := 0; x < 28; x++ {
				out = append(out, grey(im, 2*(3+FigureLabelWidth+col*29+x), 2*(3+row*29+y)))
			}
		}
		return out
	}
	want := make([]uint8, 784)
	for i, v := range recon {
		want[i] = byteOf(v)
	}
	changed := 0
	for row := 0; row < d; row++ {
		if !slices.Equal(cell(im, row, 5), want) {
			t.Errorf("row %d: the middle column is not the unperturbed reconstruction", row)
		}
		if !slices.Equal(cell(im, row, 0), want) && !slices.Equal(cell(im, row, 10), want) {
			changed++
		}
		// The label column holds text: some black pixels.
		dark := false
		for y := 2 * (3 + row*29); y < 2*(3+row*29+28); y++ {
			for x := 2 * 3; x < 2*(3+FigureLabelWidth); x++ {
				dark = dark || grey(im, x, y) == 0
			}
		}
		if !dark {
			t.Errorf("row %d: no label", row)
		}
	}
	if changed == 0 {
		t.Error("no perturbation changes the reconstruction")
	}
	if offs := PerturbOffsets(); len(offs) != 11 || offs[0] != -0.25 || offs[5] != 0 || offs[10] != 0.25 {
		t.Errorf("offsets %v", offs)
	}
	if _, _, err := PerturbationFigure(p, x[1:]); err == nil || !strings.Contains(err.Error(), "values") {
		t.Errorf("short image: %v", err)
	}
	// The rows are the ranked dimensions: row k's rightmost cell is the
	// reconstruction with dimension Effects[k].Dim shifted by 0.25.
	g, err := PerturbationGrid(p, x, 2)
	if err != nil {
		t.Fatal(err)
	}
	if g.Rows != 2 || len(g.Effects) != d || g.Class != class {
		t.Fatalf("top 2: %d rows, %d effects, class %d", g.Rows, len(g.Effects), g.Class)
	}
	for k := 1; k < d; k++ {
		if g.Effects[k].Effect > g.Effects[k-1].Effect {
			t.Errorf("effects not sorted: %v", g.Effects)
		}
	}
	top := decodePNG(t, g.PNG)
	if r := top.Bounds(); r.Dx() != wantW || r.Dy() != 2*(3+2*29-1+3) {
		t.Fatalf("top 2: figure %v", r)
	}
	for row := 0; row < 2; row++ {
		if !slices.Equal(cell(top, row, 10), cell(im, row, 10)) {
			t.Errorf("top 2: row %d differs from the full figure's", row)
		}
	}
	net, err := capsnet.NewInferenceNet(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := net.Forward(x, nil); err != nil {
		t.Fatal(err)
	}
	v, sh, _ := net.Capsules(len(net.Layers()) - 1)
	caps := sh.Capsule(v, 0, class, make([]float32, sh.D))
	caps[g.Effects[1].Dim] += 0.25
	r, err := net.Reconstruct(0, caps)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range r {
		want[i] = byteOf(q)
	}
	if !slices.Equal(cell(top, 1, 10), want) {
		t.Errorf("row 1 is not dimension %d (the second largest effect) shifted", g.Effects[1].Dim)
	}
	if g, err := PerturbationGrid(p, x, d+5); err != nil || g.Rows != d {
		t.Errorf("top %d of %d dimensions: %v rows, %v", d+5, d, g, err)
	}
}

// TestDimensionEffects: in a decoder that reads dimension 3 of the class
// capsule four times as strongly as dimension 1 and the others not at
// all, 3 ranks first, then 1, then the rest with no effect in index
// order; the effect is the mean RMS pixel change computed by hand; the
// capsule comes back unchanged; the ranking is the same every time and
// does not allocate.
func TestDimensionEffects(t *testing.T) {
	p, te := tinyModel(t)
	const strong, weak = 3, 1
	cfg := p.Config
	d := cfg.Caps[len(cfg.Caps)-1].Dim
	fc := p.Get(p.Layout.Decoder[0].Name + ".weight")
	wt, in := fc.Buf.Data(), p.Layout.Decoder[0].In
	if in != cfg.Classes*d {
		t.Fatalf("decoder input %d, want %d·%d", in, cfg.Classes, d)
	}
	for i := range wt { // (out, in), input (class·D + dim)
		switch (i % in) % d {
		case strong:
			wt[i] *= 4
		case weak:
		default:
			wt[i] = 0
		}
	}
	net, err := capsnet.NewInferenceNet(p, 2)
	if err != nil {
		t.Fatal(err)
	}
	x := append(slices.Clone(te.Image(0).Pix), te.Image(1).Pix...)
	if err := net.Forward(x, nil); err != nil {
		t.Fatal(err)
	}
	v, sh, _ := net.Capsules(len(net.Layers()) - 1)
	class := net.Pred()[1]
	caps := sh.Capsule(v, 1, class, make([]float32, sh.D))
	orig := slices.Clone(caps)
	offs := PerturbOffsets()
	base := make([]float32, 784)
	out := make([]DimEffect, d)
	if err := DimensionEffects(net, 1, caps, offs, base, out); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(caps, orig) {
		t.Error("the capsule is not restored")
	}
	if out[0].Dim != strong || out[1].Dim != weak || !(out[0].Effect > out[1].Effect) || !(out[1].Effect > 0) {
		t.Fatalf("effects %v, want dimension %d first, then %d", out, strong, weak)
	}
	for k, e := range out[2:] {
		if e.Effect != 0 || (k > 0 && e.Dim < out[k+1].Dim) {
			t.Errorf("effects %v: the unread dimensions must have no effect, in index order", out)
			break
		}
	}
	// By hand: the mean over the 10 shifts of the RMS change.
	r0, _ := net.Reconstruct(1, orig)
	r0 = slices.Clone(r0)
	if !slices.Equal(r0, base) {
		t.Error("base is not the unperturbed reconstruction")
	}
	var sum float64
	for _, off := range offs {
		if off == 0 {
			continue
		}
		c := slices.Clone(orig)
		c[strong] += off
		r, _ := net.Reconstruct(1, c)
		var ss float64
		for i := range r {
			ss += (float64(r[i]) - float64(r0[i])) * (float64(r[i]) - float64(r0[i]))
		}
		sum += math.Sqrt(ss / 784)
	}
	if got := out[0].Effect; math.Abs(got-sum/10) > 1e-12 {
		t.Errorf("effect %v, by hand %v", got, sum/10)
	}
	again := make([]DimEffect, d)
	allocs := testing.AllocsPerRun(3, func() {
		if err := DimensionEffects(net, 1, caps, offs, base, again); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations a call", allocs)
	}
	if !slices.Equal(again, out) {
		t.Errorf("not deterministic: %v, then %v", out, again)
	}
	if err := DimensionEffects(net, 1, caps, offs, base, out[1:]); err == nil {
		t.Error("short result: no error")
	}
	if err := DimensionEffects(net, 1, caps, offs, base[1:], out); err == nil {
		t.Error("short base: no error")
	}
}

// TestFigureRGB: a three-channel model's figures are RGB, channel planes
// drawn as red, green and blue.
func TestFigureRGB(t *testing.T) {
	cfg := capsnet.Presets()["tiny-deep"]
	cfg.Input = [3]int{3, 28, 28}
	p, err := capsnet.NewParams(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.Init(1)
	x := make([]float32, 3*784)
	x[0*784+5*28+7], x[1*784+5*28+7], x[2*784+5*28+7] = 1, 0.5, 0.2
	raw, err := ReconstructionFigure(p, x, 1, 8)
	if err != nil {
		t.Fatal(err)
	}
	im := decodePNG(t, raw)
	if r := im.Bounds(); r.Dx() != 2*(3+57+3) || r.Dy() != 2*(3+28+3) {
		t.Fatalf("figure %v", r)
	}
	c := color.NRGBAModel.Convert(im.At(2*(3+7), 2*(3+5))).(color.NRGBA)
	if c != (color.NRGBA{R: 255, G: 128, B: 51, A: 255}) {
		t.Errorf("pixel (5,7) drawn %v, want R 255 G 128 B 51", c)
	}
	if _, _, err := PerturbationFigure(p, x); err != nil {
		t.Error(err)
	}
}

func TestByteOf(t *testing.T) {
	for _, tc := range []struct {
		v    float32
		want uint8
	}{{0, 0}, {1, 255}, {0.5, 128}, {-1, 0}, {2, 255}, {float32(math.NaN()), 0}} {
		if got := byteOf(tc.v); got != tc.want {
			t.Errorf("byteOf(%v) = %d, want %d", tc.v, got, tc.want)
		}
	}
}
