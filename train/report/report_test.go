package report

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/capstan-ml/capstan/capsnet/analysis"
	"github.com/capstan-ml/capstan/train/report/figure"
	"github.com/capstan-ml/capstan/train/telemetry"
)

// synthLayers are the capsule layers of the synthetic input: 40 primary
// capsules (more than DefaultMaxNodes), 8, then 10 classes.
var synthLayers = []telemetry.Layer{{Name: "primary", N: 40, D: 4}, {Name: "caps.0", N: 8, D: 8}, {Name: "caps.1", N: 10, D: 8}}

// synthSample is a parse tree whose couplings route input i to output
// i mod NOut and whose image is a diagonal bar.
func synthSample(caption string, pred int) Sample {
	s := Sample{Caption: caption, C: 1, H: 28, W: 28, Pixels: make([]float32, 28*28), Label: 3, Pred: pred}
	for y := 4; y < 24; y++ {
		s.Pixels[y*28+y] = 1
	}
	for l, L := range synthLayers {
		norms := make([]float32, L.N)
		for i := range norms {
			norms[i] = float32(i%5) / 4 // capsules 0, 5, … are inactive
		}
		s.Layers = append(s.Layers, analysis.SampleLayer{Name: L.Name, Norms: norms})
		if l > 0 {
			nIn := synthLayers[l-1].N
			c := make([]float32, L.N*nIn)
			for i := 0; i < nIn; i++ {
				for j := 0; j < L.N; j++ {
					c[j*nIn+i] = 0.02
				}
				c[(i%L.N)*nIn+i] = 1 - 0.02*float32(L.N-1)
			}
			s.Couplings = append(s.Couplings, c)
		}
	}
	return s
}

func synthStats() *analysis.Report {
	r := &analysis.Report{Thresholds: analysis.DefaultThresholds()}
	for l, L := range synthLayers {
		lr := analysis.LayerReport{Name: L.Name, N: L.N, D: L.D, K: 100, NormMean: make([]float64, L.N), NormStd: make([]float64, L.N), Dead: make([]bool, L.N)}
		for i := range lr.NormMean {
			lr.NormMean[i], lr.NormStd[i] = 0.1+0.8*float64(i)/float64(L.N), 0.05
			if i%7 == 3 {
				lr.NormMean[i], lr.NormStd[i], lr.Dead[i] = 0, 0, true
				lr.CDS++
			}
		}
		r.Layers = append(r.Layers, lr)
		if l > 0 {
			nIn := synthLayers[l-1].N
			rr := analysis.RoutingReport{From: synthLayers[l-1].Name, To: L.Name, K: 100, NIn: nIn, NOut: L.N,
				CouplingMean: make([]float64, nIn*L.N), CouplingStd: make([]float64, nIn*L.N)}
			for x := range rr.CouplingMean {
				rr.CouplingMean[x], rr.CouplingStd[x] = 1/float64(L.N)+0.05*math.Sin(float64(x)), 0.01*float64(x%9)
			}
			r.Routing = append(r.Routing, rr)
		}
	}
	return r
}

// synthTelemetry has steps records; capsule 2 of every layer dies at
// step 300 (norm and gradients 0 from then on), and the votes matrices
// from it decay linearly from 1 at step 300 to 0 at step 1300 (the others
// stay at 1).
func synthTelemetry(steps int) *telemetry.Log {
	t := &telemetry.Log{Header: telemetry.Header{Format: telemetry.Format, Model: "synthetic", Batch: 16, Layers: synthLayers}}
	for s := 1; s <= steps; s++ {
		r := telemetry.Record{Epoch: 1 + (s-1)/500, Step: s}
		for l, L := range synthLayers {
			v := make([]float32, L.N)
			for i := range v {
				v[i] = float32(0.5 + 0.5*math.Sin(float64(s)/50+float64(i)))
			}
			if s >= 300 {
				v[2] = 0
			}
			r.MaxNorm = append(r.MaxNorm, v)
			if l > 0 {
				nIn := synthLayers[l-1].N
				g := make([]float32, L.N*nIn)
				for x := range g {
					g[x] = float32(math.Pow(10, -3-3*float64(x%nIn)/float64(nIn)) * (1 + 0.5*math.Sin(float64(s)/30)))
					if s >= 300 && x%nIn == 2 {
						g[x] = 0
					}
				}
				r.GradW = append(r.GradW, g)
				w := make([]float32, L.N*nIn)
				for x := range w {
					w[x] = 1
					if x%nIn == 2 {
						w[x] = float32(math.Min(1, math.Max(0, 1-float64(s-300)/1000)))
					}
				}
				r.WNorm = append(r.WNorm, w)
			}
		}
		t.Records = append(t.Records, r)
	}
	return t
}

func synthPNG(t testing.TB) []byte {
	img := image.NewGray(image.Rect(0, 0, 56, 28))
	for x := 0; x < 56; x++ {
		img.SetGray(x, x/2, color.Gray{255})
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func synthInput(t testing.TB) Input {
	stats := synthStats()
	tables, err := analysis.Summarize([]analysis.Report{*stats, *stats})
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Model: "synthetic", Data: "none", Checkpoints: []string{"a.safetensors", "b.safetensors"}, Accuracy: []float64{0.9, 0.8}, Thresholds: analysis.DefaultThresholds(),
		Tables: &tables, Stats: stats, StatsOf: "a.safetensors",
		Samples:         []Sample{synthSample("image 0", 3), synthSample("image 1", 5)},
		Views:           []Sample{synthSample("original", 3), synthSample("rotation 30°", 3), synthSample("shear 30°", 4)},
		Telemetry:       synthTelemetry(1500),
		Reconstructions: &Figure{Caption: "reconstructions", PNG: synthPNG(t)},
		Perturbation:    &Figure{Caption: "perturbations", PNG: synthPNG(t)},
	}
	for _, f := range []string{"rotation", "shear"} {
		for k, m := range []float64{0, 15, 30, 45} {
			p := InvariancePoint{Family: f, Magnitude: m, K: 100}
			for l, L := range synthLayers {
				c := 1 - float64(k*l)*0.1
				if l == 2 && k == 3 {
					c = math.NaN() // every capsule dead: no point
				}
				p.Layers = append(p.Layers, analysis.InvarianceLayer{Name: L.Name, Corr: c})
			}
			in.Invariance = append(in.Invariance, p)
		}
	}
	for e := 1; e <= 5; e++ {
		in.Metrics = append(in.Metrics, Epoch{Epoch: e, Loss: 1 / float64(e), MarginLoss: 0.8 / float64(e), ReconLoss: 0.2 / float64(e),
			TrainAcc: 1 - 0.5/float64(e), ValAcc: 1 - 0.6/float64(e), TestAcc: math.NaN()})
	}
	return in
}

var sectionIDs = []string{"tables", "trees", "views", "stats", "invariance", "telemetry", "training", "images"}

// voidElements have no end tag in HTML.
var voidElements = map[string]bool{"meta": true, "img": true, "br": true, "link": true, "input": true, "hr": true, "col": true, "source": true}

// checkWellFormed tokenizes doc and checks that every element is closed
// in order (SVG elements may self-close), and returns the count of each
// start tag.
func checkWellFormed(t *testing.T, doc string) map[string]int {
	t.Helper()
	z := html.NewTokenizer(strings.NewReader(doc))
	var stack []string
	count := map[string]int{}
	for {
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			if z.Err() != io.EOF {
				t.Fatalf("tokenizer: %v", z.Err())
			}
			if len(stack) != 0 {
				t.Fatalf("unclosed elements at the end: %v", stack)
			}
			return count
		case html.StartTagToken:
			name, _ := z.TagName()
			count[string(name)]++
			if !voidElements[string(name)] {
				stack = append(stack, string(name))
			}
		case html.SelfClosingTagToken:
			name, _ := z.TagName()
			count[string(name)]++
		case html.EndTagToken:
			name, _ := z.TagName()
			if len(stack) == 0 || stack[len(stack)-1] != string(name) {
				t.Fatalf("end tag </%s> with open elements %v", name, stack)
			}
			stack = stack[:len(stack)-1]
		}
	}
}

// checkOffline fails on any reference to the network: http(s) URLs other
// than the SVG and XLink namespaces.
func checkOffline(t *testing.T, doc string) {
	t.Helper()
	rest := strings.NewReplacer(`xmlns="http://www.w3.org/2000/svg"`, "", `xmlns:xlink="http://www.w3.org/1999/xlink"`, "").Replace(doc)
	for _, bad := range []string{"http://", "https://", "//cdn", "url(//"} {
		if i := strings.Index(rest, bad); i >= 0 {
			t.Errorf("network reference %q at …%s…", bad, rest[max(0, i-80):min(len(rest), i+80)])
		}
	}
}

// TestWrite writes a report of every part and checks its structure: well
// formed, every section in the table of contents and the page, the
// tables with mean ± std, one parse tree per sample and view, a figure
// per plot, nothing fetched from a network.
func TestWrite(t *testing.T) {
	in := synthInput(t)
	var b bytes.Buffer
	if err := Write(&b, in); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	var again bytes.Buffer
	if err := Write(&again, in); err != nil || again.String() != doc {
		t.Errorf("a second report of the same input differs (%v)", err)
	}
	count := checkWellFormed(t, doc)
	checkOffline(t, doc)
	if _, err := html.Parse(strings.NewReader(doc)); err != nil {
		t.Fatal(err)
	}
	for _, id := range sectionIDs {
		if !strings.Contains(doc, `<a href="#`+id+`">`) || !strings.Contains(doc, `<section id="`+id+`">`) {
			t.Errorf("section %s missing from the contents or the page", id)
		}
	}
	// Two identical models: std 0, printed without ±; Table 1 of two rows.
	for _, want := range []string{"<td>primary → caps.0</td>", "<td>caps.0 → caps.1</td>", "top 32 of 40", "label 3", "predicted 5 (wrong)",
		"rotation 30°", "shear 30°", "@font-face", "data:font/ttf;base64,", "Largest capsule norm", "log₁₀ ‖∂L_m/∂W[j,i]‖", "max-pooled into 480 column(s) of 3.12 step(s)",
		`preserveAspectRatio="none"`, "reconstructions", "perturbations",
		// capsule 2 of every layer dies at step 300: dark since then, the only one
		"Capsules dark at the end of training", "<td>primary</td><td>1/40</td><td>2: step 300 (epoch 1, peak 0)</td>",
		"<td>caps.0</td><td>1/8</td>", "<td>caps.1</td><td>1/10</td>", "at least the last 150 logged record(s)",
		// and its votes matrices to the next layer decay to 0 by step 1300
		"Deaths and revivals", "<td>primary</td><td>2</td><td>step 300 (epoch 1, peak 0)</td><td>—</td><td>mean 1 (first step) → 1 (death) → 0 (end), min 0 at step 1300, largest at the end 0</td><td>—</td>",
		"<td>caps.1</td><td>2</td><td>step 300 (epoch 1, peak 0)</td><td>—</td><td>—</td><td>mean 1 (first step) → 1 (death) → 0.875 (end), min 0.875 at step 1300, largest at the end 1</td>",
		"a.safetensors (accuracy 90.00%)", "b.safetensors (accuracy 80.00%)", "85.00 ± 5.00% over the 2 checkpoints"} {
		if !strings.Contains(doc, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// Plots: 2 routing layers × (mean, std), 3 norm charts, 2 invariance
	// families, 3 + 2 telemetry heatmaps, 3 training curves; parse trees:
	// 2 samples + 3 views.
	if want := 4 + 3 + 2 + 5 + 3 + 5; count["svg"] != want {
		t.Errorf("%d <svg> elements, want %d", count["svg"], want)
	}
	if count["figure"] != 4+3+2+5+3+2 || count["table"] != 4 || count["section"] != len(sectionIDs) {
		t.Errorf("%d figures, %d tables, %d sections", count["figure"], count["table"], count["section"])
	}
	// Edges: in the first sample, couplings ≥ 0.05 are the 40 + 8 routes
	// of weight 0.86 and 0.82 (the 0.02 ones are hidden), but only the
	// top 32 primary capsules are drawn: 32 + 8 edges.
	first := doc[strings.Index(doc, `<section id="trees">`):strings.Index(doc, `<section id="views">`)]
	first = first[:strings.Index(first, "</svg>")]
	if n := strings.Count(first, "<line "); n != 32+8 {
		t.Errorf("first parse tree has %d edges, want 40", n)
	}
	// A dark threshold above every norm: every capsule dark from the first step.
	in.DarkNorm = 1.5
	b.Reset()
	if err := Write(&b, in); err != nil {
		t.Fatal(err)
	}
	if d := b.String(); !strings.Contains(d, "<td>primary</td><td>40/40</td><td>0: step 1 (epoch 1, peak ") || !strings.Contains(d, "stayed below 1.5") {
		t.Error("with DarkNorm 1.5 the report does not list every capsule as dark from step 1")
	}
	in.DarkNorm = 0
	// Two different models: the tables show mean ± std.
	in.Tables.Table2[1].CNM = analysis.Value{Mean: 0.4, Std: 0.1}
	b.Reset()
	if err := Write(&b, in); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "<td>0.4 ± 0.1</td>") {
		t.Error("tables lack mean ± std")
	}
}

// TestWriteEmpty: a report of nothing but a model name still has every
// section, each saying what is missing.
func TestWriteEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := Write(&b, Input{Model: "m"}); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	checkWellFormed(t, doc)
	checkOffline(t, doc)
	for _, id := range sectionIDs {
		if !strings.Contains(doc, `<section id="`+id+`">`) {
			t.Errorf("section %s missing", id)
		}
	}
	for _, want := range []string{"No statistics given", "-samples N", "-invariance all", "-telemetry FILE", "-metrics FILE", "No reconstruction"} {
		if !strings.Contains(doc, want) {
			t.Errorf("empty report lacks %q", want)
		}
	}
}

// TestWriteBadInput: inconsistent input is an error naming the part, and
// nothing is written.
func TestWriteBadInput(t *testing.T) {
	cases := map[string]func(*Input){
		"sample 1":          func(in *Input) { in.Samples[1].Couplings[0] = in.Samples[1].Couplings[0][:5] },
		"view 0":            func(in *Input) { in.Views[0].Pixels = in.Views[0].Pixels[:3] },
		"non-finite":        func(in *Input) { in.Samples[0].Layers[1].Norms[0] = float32(math.NaN()) },
		"telemetry record":  func(in *Input) { in.Telemetry.Records[7].MaxNorm[1] = nil },
		"grad_w":            func(in *Input) { in.Telemetry.Records[9].GradW[0] = in.Telemetry.Records[9].GradW[0][:1] },
		"reconstructions":   func(in *Input) { in.Reconstructions.PNG = []byte("not a png") },
		"statistics":        func(in *Input) { in.Stats.Routing[0].CouplingStd = nil },
		"invariance point":  func(in *Input) { in.Invariance[2].Layers = in.Invariance[2].Layers[:1] },
		"edge threshold":    func(in *Input) { in.EdgeMin = 2 },
		"tables":            func(in *Input) { in.Tables.Table1 = nil },
		"statistics of lay": func(in *Input) { in.Stats.Layers[0].Dead = nil },
	}
	for want, spoil := range cases {
		in := synthInput(t)
		spoil(&in)
		var b bytes.Buffer
		err := Write(&b, in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
		if b.Len() != 0 {
			t.Errorf("%s: %d bytes written", want, b.Len())
		}
	}
}

// TestPooling: steps are max-pooled into columns of consecutive records,
// NaN left out.
func TestPooling(t *testing.T) {
	var recs []telemetry.Record
	vals := []float64{1, 5, 2, math.NaN(), 3, 0.5, math.NaN()}
	for k := range vals {
		recs = append(recs, telemetry.Record{Step: k + 1})
	}
	p := newPooling(recs, 3)
	if p.cols != 3 || p.lo(0) != 0 || p.lo(1) != 2 || p.lo(2) != 4 || p.lo(3) != 7 {
		t.Fatalf("pooling %+v", p)
	}
	g := figure.NewGrid(1, p.cols)
	p.pool(g, recs, func(r *telemetry.Record, _ int) float64 { return vals[r.Step-1] })
	if g.Values[0] != 5 || g.Values[1] != 2 || g.Values[2] != 3 {
		t.Errorf("pooled %v, want [5 2 3]", g.Values)
	}
	// Fewer records than columns: one column each.
	if p := newPooling(recs, 600); p.cols != len(recs) || p.x(0) != 1 || p.x(6) != 7 {
		t.Errorf("pooling of 7 records into 600 columns: %+v, x(0) %g", p, p.x(0))
	}
}

// TestTopIndices: the k largest, in index order, ties to the lower index.
func TestTopIndices(t *testing.T) {
	got := topIndices([]float32{0.1, 0.9, 0.5, 0.9, 0.2}, 3)
	if fmt.Sprint(got) != "[1 2 3]" {
		t.Errorf("top 3: %v", got)
	}
	if got := topIndices([]float32{0.3, 0.1}, 5); fmt.Sprint(got) != "[0 1]" {
		t.Errorf("all: %v", got)
	}
}

func BenchmarkWrite(b *testing.B) {
	in := synthInput(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := Write(io.Discard, in); err != nil {
			b.Fatal(err)
		}
	}
}

// TestWritePooled: a pooled log (the committed form of a finished run) is
// described as such, with its source's steps, and its dark capsule found.
func TestWritePooled(t *testing.T) {
	in := synthInput(t)
	p, err := in.Telemetry.Pool(4)
	if err != nil {
		t.Fatal(err)
	}
	in.Telemetry = p
	var b strings.Builder
	if err := Write(&b, in); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	for _, want := range []string{"1500 training step(s)", "kept max-pooled by 4 into 375 record(s)", "drawn in 375 column(s) of 1 record(s)",
		// dead from step 300, in the window of steps 297–300 with three live ones: dark from the next
		"<td>primary</td><td>1/40</td><td>2: step 301 (epoch 1, peak 0)</td>", "at least the last 38 logged record(s)"} {
		if !strings.Contains(doc, want) {
			t.Errorf("report of a pooled log lacks %q", want)
		}
	}
}

// TestWriteNoWNorm: the log of a run from before w_norm was recorded
// gives the deaths without the votes-matrix norms, and says why.
func TestWriteNoWNorm(t *testing.T) {
	in := synthInput(t)
	for k := range in.Telemetry.Records {
		in.Telemetry.Records[k].WNorm = nil
	}
	var b strings.Builder
	if err := Write(&b, in); err != nil {
		t.Fatal(err)
	}
	doc := b.String()
	for _, want := range []string{"The log has no votes-matrix norms", "<td>primary</td><td>2</td><td>step 300 (epoch 1, peak 0)</td><td>—</td><td>—</td><td>—</td>"} {
		if !strings.Contains(doc, want) {
			t.Errorf("report of a log without w_norm lacks %q", want)
		}
	}
	in.Telemetry.Records[5].WNorm = [][]float32{{1}}
	if err := Write(&b, in); err == nil || !strings.Contains(err.Error(), "record 5 (step 6): 1 w_norm layers") {
		t.Errorf("a record with a broken w_norm: %v", err)
	}
}
