package kernels

import (
	"fmt"
	"math/rand"
	"testing"
)

// BenchmarkCapsLayer measures the cost of one fully connected capsule layer
// (votes û = W·u, then routing) against the claims of the paper's Table 3
// (docs/complexity.md): n input and n output capsules, all of dimension d,
// for n in capsLayerNs and d in capsLayerDs, on a batch of capsLayerBatch
// samples, with the implementation dispatch picked (AVX-512, AVX2, NEON or
// the reference). Sub-benchmarks are kind=K/n=N/d=D/pass=P, so that -bench
// selects any subset:
//
//	kind  rba-r3, rba-r10 (routing by agreement, 3 and 10 iterations),
//	      uniform, self-attention, self-attention-in; votes (the votes
//	      alone, no routing)
//	pass  fwd            VotesForward + RoutingForward
//	      fwdbwd         fwd, then RoutingBackward + VotesBackward
//	      routing-fwd    RoutingForward alone
//	      routing-fwdbwd RoutingForward + RoutingBackward
//
// (kind=votes has fwd and fwdbwd only, the votes' passes.) Every
// sub-benchmark reports, besides ns/op for the whole batch:
//
//	ns/sample    ns/op / capsLayerBatch
//	param-bytes  float32 bytes of the parameters: W (n·n·d·d) and, except
//	             for uniform routing and the votes alone, the prior or bias
//	             (n·n)
//	act-bytes    float32 bytes of what the layer keeps from its forward for
//	             its backward, for the whole batch: uhat (Batch·n·d·n), the
//	             routing work buffer (RoutingShape.WorkSize), v (Batch·d·n)
//	             and c (Batch·n·n); for the votes alone, uhat only
//
// act-bytes is the same for every pass of a kind, n and d: it is what the
// layer holds in training. Not counted: the input u (the previous layer's
// output), the gradients (dW and dprior have the size of the parameters,
// duhat, du and dv that of uhat, u and v) and the loss.
//
// One thread: the kernels run on the calling goroutine (each documents
// "runs on one goroutine, does not allocate"), so a sub-benchmark uses one
// core whatever GOMAXPROCS is; run it with -cpu 1 anyway, so that nothing
// else of the process (the garbage collector) runs beside it. Every
// sub-benchmark is 0 allocs/op but those of capsLayerKnownAllocs (a kernel
// that allocates, TestCapsLayerAllocs): its buffers are allocated, filled
// and warmed (one untimed pass, which also faults their pages in) before
// the timed loop.
func BenchmarkCapsLayer(b *testing.B) {
	for _, k := range capsLayerKinds {
		b.Run("kind="+k.name, func(b *testing.B) {
			for _, n := range capsLayerNs {
				b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
					for _, d := range capsLayerDs {
						b.Run(fmt.Sprintf("d=%d", d), func(b *testing.B) {
							capsLayerBench(b, newCapsLayer(k, capsLayerBatch, n, d))
						})
					}
				})
			}
		})
	}
}

// capsLayerBatch is BenchmarkCapsLayer's batch: small enough that its
// figures are per-sample costs, large enough that a sample does not pay
// alone for the calls' fixed costs and that W is reused across samples as
// in training (the paper's model trains at batch 512).
const capsLayerBatch = 8

// capsLayerNs and capsLayerDs are the grid of BenchmarkCapsLayer: n input
// and n output capsules of dimension d.
var capsLayerNs, capsLayerDs = []int{8, 16, 32, 64, 128}, []int{4, 8, 16, 32}

// capsLayerKind is a layer kind of BenchmarkCapsLayer: the routing (kind,
// iterations), or none (votes alone).
type capsLayerKind struct {
	name  string
	kind  RoutingKind
	iters int
	votes bool // votes alone, no routing
}

var capsLayerKinds = []capsLayerKind{
	{name: "rba-r3", kind: RoutingRBA, iters: 3},
	{name: "rba-r10", kind: RoutingRBA, iters: 10},
	{name: "uniform", kind: RoutingUniform},
	{name: "self-attention", kind: RoutingSelfAttention},
	{name: "self-attention-in", kind: RoutingSelfAttentionIn},
	{name: "votes", votes: true},
}

// capsLayer is one capsule layer's tensors: parameters, input,
// activations and gradients.
type capsLayer struct {
	votesOnly                 bool
	vs                        VotesShape
	rs                        RoutingShape
	w, prior                  []float32 // parameters (prior nil for uniform routing)
	u                         []float32 // input
	uhat, v                   []float32 // activations kept for the backward, with c and work
	c, work                   []float32
	dw, dprior, du, duhat, dv []float32 // gradients (dv given)
}

// newCapsLayer allocates and fills a layer of kind k: bs samples, n input
// and n output capsules of dimension d, Mazzia's squash (Efficient-CapsNet,
// the paper's model).
func newCapsLayer(k capsLayerKind, bs, n, d int) *capsLayer {
	rng := rand.New(rand.NewSource(int64(7*n + d)))
	l := &capsLayer{votesOnly: k.votes}
	l.vs = VotesShape{Batch: bs, NIn: n, NOut: n, DIn: d, DOut: d}
	l.rs = RoutingShape{Batch: bs, NIn: n, NOut: n, D: d, Iters: k.iters, Squash: SquashMazzia, Kind: k.kind}
	l.w = capsRand(rng, n*d*d*n, 0, 0.5/float64(d))
	l.u = capsRand(rng, bs*d*n, 0, 1)
	l.uhat = capsBuf(bs*n*d*n, 0)
	l.dw = capsBuf(len(l.w), 0)
	l.du = capsBuf(len(l.u), 0)
	l.duhat = capsBuf(len(l.uhat), 0)
	if k.votes {
		// The gradient reaching the votes from the routing.
		capsFill(l.duhat, 0.01)
		return l
	}
	if k.kind != RoutingUniform {
		l.prior = capsRand(rng, n*n, 0, 0.1)
		l.dprior = capsBuf(len(l.prior), 0)
	}
	l.v = capsBuf(bs*d*n, 0)
	l.c = capsBuf(bs*n*n, 0)
	l.work = capsBuf(l.rs.WorkSize(), 0)
	l.dv = capsRand(rng, len(l.v), 0, 0.1)
	return l
}

// paramBytes and actBytes are the float32 bytes BenchmarkCapsLayer reports
// as param-bytes and act-bytes.
func (l *capsLayer) paramBytes() int { return 4 * (len(l.w) + len(l.prior)) }
func (l *capsLayer) actBytes() int   { return 4 * (len(l.uhat) + len(l.work) + len(l.v) + len(l.c)) }

func (l *capsLayer) votesFwd() error { return VotesForward(l.vs, l.uhat, l.w, l.u) }
func (l *capsLayer) votesBwd() error { return VotesBackward(l.vs, l.dw, l.du, l.w, l.u, l.duhat) }
func (l *capsLayer) routingFwd() error {
	return RoutingForward(l.rs, l.v, l.c, l.uhat, l.prior, l.work)
}
func (l *capsLayer) routingBwd() error {
	return RoutingBackward(l.rs, l.duhat, l.dprior, l.dv, l.uhat, l.prior, l.work)
}

// passes returns the passes of the layer by name, in the order
// BenchmarkCapsLayer runs them.
func (l *capsLayer) passes() []capsLayerPass {
	if l.votesOnly {
		return []capsLayerPass{
			{"fwd", []func() error{l.votesFwd}},
			{"fwdbwd", []func() error{l.votesFwd, l.votesBwd}},
		}
	}
	return []capsLayerPass{
		{"fwd", []func() error{l.votesFwd, l.routingFwd}},
		{"fwdbwd", []func() error{l.votesFwd, l.routingFwd, l.routingBwd, l.votesBwd}},
		{"routing-fwd", []func() error{l.routingFwd}},
		{"routing-fwdbwd", []func() error{l.routingFwd, l.routingBwd}},
	}
}

// capsLayerPass is a named sequence of kernel calls.
type capsLayerPass struct {
	name  string
	steps []func() error
}

func (p capsLayerPass) run() error {
	for _, s := range p.steps {
		if err := s(); err != nil {
			return err
		}
	}
	return nil
}

// capsLayerBench runs the pass=P sub-benchmarks of l. The forward is run
// once first (untimed) so that the routing-only passes find votes in uhat.
func capsLayerBench(b *testing.B, l *capsLayer) {
	if err := l.votesFwd(); err != nil {
		b.Fatal(err)
	}
	for _, p := range l.passes() {
		b.Run("pass="+p.name, func(b *testing.B) {
			if err := p.run(); err != nil { // warm-up, untimed
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := p.run(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(l.vs.Batch), "ns/sample")
			b.ReportMetric(float64(l.paramBytes()), "param-bytes")
			b.ReportMetric(float64(l.actBytes()), "act-bytes")
		})
	}
}

// TestCapsLayerAllocs checks what BenchmarkCapsLayer reports as 0
// allocs/op, on its smallest shape, for every kind and pass, with every
// implementation this CPU has.
func TestCapsLayerAllocs(t *testing.T) {
	forEachImpl(t, func(t *testing.T, _ string) {
		for _, k := range capsLayerKinds {
			l := newCapsLayer(k, 2, capsLayerNs[0], capsLayerDs[0])
			if err := l.votesFwd(); err != nil {
				t.Fatal(err)
			}
			for _, p := range l.passes() {
				var err error
				a := testing.AllocsPerRun(3, func() { err = p.run() })
				if err != nil {
					t.Fatalf("%s pass=%s: %v", k.name, p.name, err)
				}
				if a != 0 {
					t.Errorf("%s pass=%s: %v allocs per run, want 0", k.name, p.name, a)
				}
			}
		}
	})
}
