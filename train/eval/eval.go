package eval

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/graph"
	"github.com/capstan-ml/capstan/kernels"
	"github.com/capstan-ml/capstan/quant"
	"github.com/capstan-ml/capstan/train/data"
)

// Evaluator classifies fixed-size batches with data-parallel replicas of a
// model. Each replica takes a fixed slice of the batch, so results do not
// depend on the thread count. After the first batch nothing allocates. An
// Evaluator is not safe for concurrent use; Close stops its goroutines.
type Evaluator struct {
	p      *capsnet.Params // nil for an int8 model (NewInt8)
	cfg    capsnet.Config
	reps   []replica
	nets   []*capsnet.Net // the float replicas (Plan)
	q      []*quant.Net   // the int8 replicas (NewInt8)
	starts []int          // first sample of each replica
	batch  int
	img    int // values per image
	// owned: the replicas were compiled by New (their memory is the
	// evaluator's); FromNets borrows them.
	owned bool

	x      []float32 // the batch of the current run
	labels []int
	work   []chan struct{}
	done   chan error
	closed bool

	// Scratch of the Batcher loops, allocated on first use.
	pad      []float32
	labelBuf []int
	predBuf  []int
	// lastPredict is the wall time of the last Predict of each, in seconds.
	lastPredict float64
}

// New compiles threads forward-only replicas (capsnet.NewInferenceNet) of
// p for a total batch size batch, split as evenly as possible (threads is
// capped at batch). threads above capsnet.MaxThreads, or replicas that
// together need more than the process's memory limit
// (Layout.InferenceMemory, capsnet.ProcessMemory.Check), are refused
// before anything is compiled. A batch of 1 with threads ≥ 2 runs on one
// replica whose convolutions use two threads (capsnet.Net.SetConvThreads).
func New(p *capsnet.Params, batch, threads int) (*Evaluator, error) {
	if p == nil {
		return nil, fmt.Errorf("eval: no parameters")
	}
	if batch <= 0 {
		return nil, fmt.Errorf("eval: batch %d must be positive", batch)
	}
	if threads <= 0 {
		return nil, fmt.Errorf("eval: threads %d must be positive", threads)
	}
	// The process's memory (parameters, every replica, a batch of data) is
	// checked before anything is compiled.
	m, err := p.Layout.InferenceMemory(batch, threads)
	if err == nil {
		err = m.Check()
	}
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	// One image has no second replica to share the cores with: it gets
	// both halves of every convolution on two threads instead.
	intra := 1
	if batch == 1 && threads >= 2 {
		intra = 2
	}
	threads = min(threads, batch)
	nets := make([]*capsnet.Net, 0, threads)
	for r := 0; r < threads; r++ {
		b := batch / threads
		if r < batch%threads {
			b++
		}
		n, err := capsnet.NewInferenceNet(p, b)
		if err != nil {
			return nil, fmt.Errorf("eval: replica %d: %w", r, err)
		}
		if intra > 1 {
			if err := n.SetConvThreads(intra); err != nil {
				return nil, fmt.Errorf("eval: %w", err)
			}
		}
		nets = append(nets, n)
	}
	e, err := FromNets(p, nets)
	if err != nil {
		return nil, err
	}
	e.owned = true
	return e, nil
}

// FromNets makes an evaluator over nets already compiled for p (the
// trainer's replicas: validation then needs no memory of its own and
// computes exactly what the training graphs compute). The evaluator runs
// them forward only, with the decoder masked by the prediction; whoever
// else drives the nets must not run them at the same time.
func FromNets(p *capsnet.Params, nets []*capsnet.Net) (*Evaluator, error) {
	if p == nil || len(nets) == 0 {
		return nil, fmt.Errorf("eval: no parameters or no nets")
	}
	e := &Evaluator{p: p, cfg: p.Config, img: nets[0].InputLen(), nets: nets}
	for r, n := range nets {
		if n.P != p {
			return nil, fmt.Errorf("eval: net %d was compiled for other parameters", r)
		}
		if n.InputLen() != e.img {
			return nil, fmt.Errorf("eval: net %d takes images of %d values, net 0 of %d", r, n.InputLen(), e.img)
		}
		e.reps = append(e.reps, floatReplica{n})
	}
	e.start()
	return e, nil
}

// NewInt8 compiles threads int8 replicas (quant.NewNet) of the calibrated
// int8 model m for a total batch size batch, split as New splits it. Each
// replica packs its own copy of the weights (Footprint counts them all).
// Params returns nil for such an evaluator. The process's memory
// (quant.ProcessMemory: all replicas) is checked as New checks it, before
// any replica is compiled.
func NewInt8(m *quant.Model, batch, threads int) (*Evaluator, error) {
	if m == nil {
		return nil, fmt.Errorf("eval: no model")
	}
	if batch <= 0 {
		return nil, fmt.Errorf("eval: batch %d must be positive", batch)
	}
	if threads <= 0 {
		return nil, fmt.Errorf("eval: threads %d must be positive", threads)
	}
	// The process's memory (every replica's arena and packed weights, a
	// batch of data) is checked before any replica is compiled.
	pm, err := quant.ProcessMemory(m, batch, threads)
	if err == nil {
		err = pm.Check()
	}
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	threads = min(threads, batch)
	e := &Evaluator{cfg: m.Config, owned: true}
	for r := 0; r < threads; r++ {
		b := batch / threads
		if r < batch%threads {
			b++
		}
		n, err := quant.NewNet(m, b)
		if err != nil {
			return nil, fmt.Errorf("eval: replica %d: %w", r, err)
		}
		e.q = append(e.q, n)
		e.reps = append(e.reps, int8Replica{n})
		e.img = n.InputLen()
	}
	e.start()
	return e, nil
}

// start numbers the replicas' slices of the batch and starts their
// goroutines.
func (e *Evaluator) start() {
	e.done = make(chan error, len(e.reps))
	for _, n := range e.reps {
		e.starts = append(e.starts, e.batch)
		e.batch += n.size()
	}
	for r := range e.reps {
		ch := make(chan struct{})
		e.work = append(e.work, ch)
		go e.worker(r, ch)
	}
}

// replica is one Net of an evaluator, float32 or int8.
type replica interface {
	size() int
	// run runs the Net forward only, decoder masked by the prediction, on
	// its slice of the batch (labels feed only the float loss; nil clears
	// them).
	run(x []float32, labels []int) error
	pred() []int
	norms() []float32
}

type floatReplica struct{ n *capsnet.Net }

func (r floatReplica) size() int { return r.n.Batch }

// run is the only place that feeds a float Net.
func (r floatReplica) run(x []float32, labels []int) error {
	r.n.SetMaskByLabel(false)
	return r.n.Forward(x, labels)
}
func (r floatReplica) pred() []int      { return r.n.Pred() }
func (r floatReplica) norms() []float32 { return r.n.Norms() }

type int8Replica struct{ n *quant.Net }

func (r int8Replica) size() int                      { return r.n.Batch }
func (r int8Replica) run(x []float32, _ []int) error { return r.n.Forward(x) }
func (r int8Replica) pred() []int                    { return r.n.Pred() }
func (r int8Replica) norms() []float32               { return r.n.Norms() }

func (e *Evaluator) worker(r int, ch chan struct{}) {
	// Subnormals flushed on a thread of the replica's own, as in the
	// trainer's replicas (kernels.FlushSubnormals).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer kernels.FlushSubnormals()()
	n := e.reps[r]
	for range ch {
		s := e.starts[r]
		var labels []int
		if e.labels != nil {
			labels = e.labels[s : s+n.size()]
		}
		err := n.run(e.x[s*e.img:(s+n.size())*e.img], labels)
		if err != nil {
			err = fmt.Errorf("replica %d: %w", r, err)
		}
		e.done <- err
	}
}

// Close stops the replica goroutines. The evaluator must not be used
// afterwards.
func (e *Evaluator) Close() {
	if e.closed {
		return
	}
	e.closed = true
	for _, ch := range e.work {
		close(ch)
	}
	if e.owned {
		for _, n := range e.nets {
			n.Close() // the convolution helper of a batch-1 Net on two threads
		}
	}
}

// Params returns the parameters the evaluator runs (nil for an int8
// model).
func (e *Evaluator) Params() *capsnet.Params { return e.p }

// Config returns the config of the model the evaluator runs.
func (e *Evaluator) Config() capsnet.Config { return e.cfg }

// Batch returns the compiled batch size: Predict takes exactly this many
// images.
func (e *Evaluator) Batch() int { return e.batch }

// Replicas returns the number of replicas (threads actually used).
func (e *Evaluator) Replicas() int { return len(e.reps) }

// Plan is the memory plan of the parameters and the replicas (for an
// evaluator made by FromNets, of the nets it borrows).
func (e *Evaluator) Plan() graph.Plan {
	var p graph.Plan
	if e.p != nil {
		p = e.p.Arena.Plan()
	}
	for _, n := range e.nets {
		p = p.Add(n.Plan())
	}
	for _, n := range e.q {
		p = p.Add(n.Arena.Plan())
	}
	return p
}

// Footprint returns the static memory the evaluator holds: the replicas'
// arenas (activations and scratch) and the weights (the float parameters,
// or every int8 replica's packed weights).
func (e *Evaluator) Footprint() (arena, weights int64) {
	if e.p != nil {
		weights = e.p.Arena.Bytes()
	}
	for _, n := range e.nets {
		arena += n.Plan().Total
	}
	for _, n := range e.q {
		f := n.Footprint()
		arena += f.Arena
		weights += f.Weights
	}
	return arena, weights
}

// Predict runs the forward pass on a full batch x (Batch() images, NCHW)
// and writes the predicted classes to pred (Batch() entries). labels may
// be nil: they feed only the loss, which evaluation does not report.
func (e *Evaluator) Predict(x []float32, labels []int, pred []int) error {
	if e.closed {
		return fmt.Errorf("predict: evaluator closed")
	}
	if len(x) != e.batch*e.img {
		return fmt.Errorf("predict: x has %d values, a batch of %d images needs %d", len(x), e.batch, e.batch*e.img)
	}
	if len(pred) != e.batch || (labels != nil && len(labels) != e.batch) {
		return fmt.Errorf("predict: labels (%d) and pred (%d) must hold %d entries", len(labels), len(pred), e.batch)
	}
	classes := e.cfg.Classes
	for i, y := range labels {
		if y < 0 || y >= classes {
			return fmt.Errorf("predict: label %d of sample %d is not a class in 0..%d", y, i, classes-1)
		}
	}
	e.x, e.labels = x, labels
	var err error
	for _, ch := range e.work {
		ch <- struct{}{}
	}
	for range e.work {
		if r := <-e.done; r != nil && err == nil {
			err = r
		}
	}
	e.x, e.labels = nil, nil // keep no reference to the caller's batch
	if err != nil {
		return fmt.Errorf("predict: %w", err)
	}
	for r, n := range e.reps {
		copy(pred[e.starts[r]:], n.pred())
	}
	return nil
}

// Norms copies the capsule lengths of the last Predict, (Batch(), classes)
// row-major, into dst.
func (e *Evaluator) Norms(dst []float32) error {
	classes := e.cfg.Classes
	if len(dst) != e.batch*classes {
		return fmt.Errorf("norms: dst has %d values, want %d×%d", len(dst), e.batch, classes)
	}
	for r, n := range e.reps {
		copy(dst[e.starts[r]*classes:], n.norms())
	}
	return nil
}

// Prediction is the outcome for one sample of a data set.
type Prediction struct {
	Index int // in the data set
	Label int // true class
	Pred  int // predicted class
}

// Report is the result of evaluating every image of a data set.
type Report struct {
	// Confusion counts the samples by true class (row) and predicted class
	// (column).
	Confusion      [][]int
	Correct, Total int
	// Seconds is the wall time of the pass, batching included.
	Seconds float64
	// Latency is the wall time of each batch's forward pass (Predict
	// alone), in seconds, in order: at batch 1, the per-image latency.
	Latency []float64
}

// Accuracy is Correct/Total (0 for an empty data set).
func (r *Report) Accuracy() float64 { return float64(r.Correct) / float64(max(r.Total, 1)) }

// Confusion evaluates every image of the batcher's data set (one epoch from
// its start: epoch 0) and returns the confusion matrix and accuracy. The
// batcher's batch size must not exceed Batch(); a short batch is padded
// with copies of its first image, whose predictions are ignored (the
// compiled batch size is fixed).
func (e *Evaluator) Confusion(b *data.Batcher) (*Report, error) {
	classes := e.cfg.Classes
	rep := &Report{Confusion: make([][]int, classes)}
	for i := range rep.Confusion {
		rep.Confusion[i] = make([]int, classes)
	}
	start := time.Now()
	err := e.each(b, func(batch *data.Batch, labels, pred []int) {
		for i := 0; i < batch.N; i++ {
			rep.Confusion[labels[i]][pred[i]]++
			if pred[i] == labels[i] {
				rep.Correct++
			}
		}
		rep.Total += batch.N
		rep.Latency = append(rep.Latency, e.lastPredict)
	})
	if err != nil {
		return nil, err
	}
	rep.Seconds = time.Since(start).Seconds()
	return rep, nil
}

// Accuracy returns the fraction of the batcher's data set classified
// correctly (see Confusion).
func (e *Evaluator) Accuracy(b *data.Batcher) (float64, error) {
	r, err := e.Confusion(b)
	if err != nil {
		return 0, err
	}
	return r.Accuracy(), nil
}

// Predictions classifies every image of the batcher's data set (see
// Confusion) and returns one Prediction per sample, in the batcher's order.
func (e *Evaluator) Predictions(b *data.Batcher) ([]Prediction, error) {
	var out []Prediction
	err := e.each(b, func(batch *data.Batch, labels, pred []int) {
		for i := 0; i < batch.N; i++ {
			out = append(out, Prediction{Index: batch.Index[i], Label: labels[i], Pred: pred[i]})
		}
	})
	return out, err
}

// Comparison compares two models' predictions on the same images (e.g. a
// float32 model and its int8 quantization).
type Comparison struct {
	Total int
	// AccA and AccB are the two models' accuracies.
	AccA, AccB float64
	// Differ counts the images whose predicted classes differ; Fixed those
	// B gets right and A wrong, Broken those A gets right and B wrong.
	Differ, Fixed, Broken int
}

// Agreement is the fraction of images both models give the same class.
func (c Comparison) Agreement() float64 {
	return 1 - float64(c.Differ)/float64(max(c.Total, 1))
}

// ComparePredictions compares the predictions a and b of two models on the
// same images, in the same order (Predictions of the same batcher); it
// compares the first min(len(a), len(b)).
func ComparePredictions(a, b []Prediction) Comparison {
	n := min(len(a), len(b))
	c := Comparison{Total: n}
	var ra, rb int
	for i := range n {
		okA, okB := a[i].Pred == a[i].Label, b[i].Pred == b[i].Label
		if okA {
			ra++
		}
		if okB {
			rb++
		}
		if a[i].Pred != b[i].Pred {
			c.Differ++
		}
		switch {
		case okB && !okA:
			c.Fixed++
		case okA && !okB:
			c.Broken++
		}
	}
	c.AccA, c.AccB = float64(ra)/float64(max(n, 1)), float64(rb)/float64(max(n, 1))
	return c
}

// each runs Predict on every batch of epoch 0 of b and hands the valid
// samples to f.
func (e *Evaluator) each(b *data.Batcher, f func(batch *data.Batch, labels, pred []int)) error {
	if c, h, w := b.Shape(); [3]int{c, h, w} != e.cfg.Input {
		in := e.cfg.Input
		return fmt.Errorf("evaluation: the data gives %d×%d×%d images, model %s takes %d×%d×%d", c, h, w, e.cfg.Name, in[0], in[1], in[2])
	}
	batch := b.NewBatch()
	if batch.Cap() > e.batch {
		return fmt.Errorf("evaluation: batches of %d images, the evaluator was compiled for %d", batch.Cap(), e.batch)
	}
	if e.labelBuf == nil {
		e.labelBuf, e.predBuf = make([]int, e.batch), make([]int, e.batch)
	}
	labels, pred := e.labelBuf, e.predBuf
	classes := e.cfg.Classes
	b.StartEpoch(0)
	for b.Next(batch) {
		n := batch.N
		for i, y := range batch.Labels() {
			if int(y) >= classes || y < 0 {
				return fmt.Errorf("evaluation: sample %d has label %d, model %s has %d classes", batch.Index[i], y, e.cfg.Name, classes)
			}
			labels[i] = int(y)
		}
		x := batch.X[:n*e.img]
		if n < e.batch { // pad with copies of the first image
			if e.pad == nil {
				e.pad = make([]float32, e.batch*e.img)
			}
			copy(e.pad, x)
			for i := n; i < e.batch; i++ {
				copy(e.pad[i*e.img:(i+1)*e.img], x[:e.img])
				labels[i] = labels[0]
			}
			x = e.pad
		}
		t0 := time.Now()
		if err := e.Predict(x, labels, pred); err != nil {
			return fmt.Errorf("evaluation: %w", err)
		}
		e.lastPredict = time.Since(t0).Seconds()
		f(batch, labels, pred)
	}
	return b.Err()
}

// Percentile returns the p-th percentile (0 ≤ p ≤ 100) of v by the
// nearest-rank method (the smallest value with at least p% of v at or
// below it), 0 for an empty v. v is not modified.
func Percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	k := int(math.Ceil(p / 100 * float64(len(s))))
	return s[max(0, min(len(s)-1, k-1))]
}
