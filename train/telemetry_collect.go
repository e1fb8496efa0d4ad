package train

import (
	"fmt"
	"math"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/train/telemetry"
)

// stepTelemetry is what a Trainer collects for the telemetry file (see
// SetTelemetry): per replica the capsule norms' maxima and a copy of the
// margin loss's votes gradients, reduced into one Record after the step,
// and the norms of the votes matrices (shared by the replicas) read once
// before the optimizer updates them. Every buffer is allocated once, so
// collecting does not allocate.
type stepTelemetry struct {
	on, valid bool
	rep       []repTelemetry
	rec       telemetry.Record
	gsum      [][]float32 // the batch's margin gradient per routing layer
	acc       []float64   // Frobenius sums of one routing layer
}

type repTelemetry struct {
	maxSq [][]float32 // per layer and capsule: the largest squared norm in the replica's samples
	grad  [][]float32 // per routing layer: the replica's ∂L_m/∂W
	sq    []float32   // one sample's squared norms
}

// SetTelemetry makes the following training steps collect the telemetry
// of telemetry.Record (collect true) or not (false); the first call with
// true allocates its buffers. A collecting step runs the margin-only
// backward pass (capsnet.Net.BackwardMargin) before the full one on every
// replica: it costs one more backward pass through the capsule layers.
func (t *Trainer) SetTelemetry(collect bool) {
	if collect && t.tele == nil {
		st := &stepTelemetry{}
		info := t.Reps[0].Layers()
		maxN := 0
		for l, L := range info {
			maxN = max(maxN, L.N)
			st.rec.MaxNorm = append(st.rec.MaxNorm, make([]float32, L.N))
			if l > 0 {
				st.rec.GradW = append(st.rec.GradW, make([]float32, L.N*info[l-1].N))
				st.rec.WNorm = append(st.rec.WNorm, make([]float32, L.N*info[l-1].N))
				g, _, _ := t.Reps[0].VotesGrad(l)
				st.gsum = append(st.gsum, make([]float32, len(g)))
				maxN = max(maxN, L.N*info[l-1].N)
			}
		}
		st.acc = make([]float64, maxN)
		for range t.Reps {
			var rt repTelemetry
			for l, L := range info {
				rt.maxSq = append(rt.maxSq, make([]float32, L.N))
				if l > 0 {
					rt.grad = append(rt.grad, make([]float32, len(st.gsum[l-1])))
				}
			}
			rt.sq = make([]float32, maxN)
			st.rep = append(st.rep, rt)
		}
		t.tele = st
	}
	if t.tele != nil {
		t.tele.on = collect
	}
}

// Telemetry returns the record of the last training step (its Step set,
// Epoch left to the caller), or nil when that step did not collect one
// (SetTelemetry). The record is the Trainer's: it is overwritten by the
// next collecting step.
//
// MaxNorm[l][i] is the largest length of capsule i of layer l over the
// step's whole batch (all replicas). GradW[l-1][j·N_{l-1}+i] is
// ‖∂L_m/∂W[j,i]‖_F of the batch's margin loss: the replicas' margin
// gradients (each the gradient of its own batch-mean loss) combined as
// TrainStep combines the full gradients for the optimizer, Σ_r (b_r/B)·g_r
// in replica order, in float32, so it is the margin part of exactly the
// gradient Adam receives (Adam's weight decay is not part of the loss).
// WNorm[l-1][j·N_{l-1}+i] is ‖W[j,i]‖_F of the votes matrices the step's
// forward pass used (capsnet.Net.Votes), read before the step's optimizer
// update.
func (t *Trainer) Telemetry() *telemetry.Record {
	if t.tele == nil || !t.tele.valid {
		return nil
	}
	return &t.tele.rec
}

// collect runs on replica r's goroutine after its Forward: the capsule
// norms' maxima, then BackwardMargin and a copy of ∂L_m/∂W (Backward,
// which follows, overwrites the gradients).
func (st *stepTelemetry) collect(r int, n *capsnet.Net) error {
	rt := &st.rep[r]
	for l := range rt.maxSq {
		v, sh, err := n.Capsules(l)
		if err != nil {
			return err
		}
		m, sq := rt.maxSq[l], rt.sq[:sh.N]
		clear(m)
		for b := 0; b < sh.B; b++ {
			clear(sq)
			for k := 0; k < sh.D; k++ {
				for i, x := range v[(b*sh.D+k)*sh.N:][:sh.N] {
					sq[i] += x * x
				}
			}
			for i, s := range sq {
				m[i] = max(m[i], s)
			}
		}
	}
	if err := n.BackwardMargin(); err != nil {
		return fmt.Errorf("telemetry: %w", err)
	}
	for l := range rt.grad {
		g, _, err := n.VotesGrad(l + 1)
		if err != nil {
			return err
		}
		copy(rt.grad[l], g)
	}
	return nil
}

// reduce combines the replicas' figures into st.rec after a step (see
// Trainer.Telemetry), and takes the votes matrices' norms: TrainStep
// calls it before the optimizer phase, so the weights are still those of
// the step's forward pass.
func (st *stepTelemetry) reduce(t *Trainer) {
	st.valid = st.on
	if !st.on {
		return
	}
	st.rec.Step = t.Step
	for l, row := range st.rec.MaxNorm {
		for i := range row {
			m := float32(0)
			for r := range st.rep {
				m = max(m, st.rep[r].maxSq[l][i])
			}
			row[i] = float32(math.Sqrt(float64(m)))
		}
	}
	for l, g := range st.gsum {
		for r := range t.Reps {
			t.reduce(g, r, st.rep[r].grad[l]) // as TrainStep reduces the full gradients
		}
		_, sh, _ := t.Reps[0].VotesGrad(l + 1)
		frobenius(st.rec.GradW[l], g, sh, st.acc)
		w, sh, _ := t.Reps[0].Votes(l + 1) // the replicas share the parameters
		frobenius(st.rec.WNorm[l], w, sh, st.acc)
	}
}

// frobenius sets dst[j·NIn+i] to ‖w[j,i]‖_F for votes matrices (or their
// gradients) w of layout sh, summing in float64 in acc (≥ NOut·NIn).
func frobenius(dst, w []float32, sh capsnet.VotesShape, acc []float64) {
	acc = acc[:sh.NOut*sh.NIn]
	clear(acc)
	for j := 0; j < sh.NOut; j++ {
		a := acc[j*sh.NIn:][:sh.NIn]
		for rc := 0; rc < sh.DOut*sh.DIn; rc++ {
			for i, x := range w[(j*sh.DOut*sh.DIn+rc)*sh.NIn:][:sh.NIn] {
				a[i] += float64(x) * float64(x)
			}
		}
	}
	for k, a := range acc {
		dst[k] = float32(math.Sqrt(a))
	}
}
