package graph

import (
	"fmt"
	"sort"
	"strings"
)

// Kind classifies a buffer for the memory plan report.
type Kind int

const (
	// Param is a trained parameter.
	Param Kind = iota
	// Grad is a parameter gradient.
	Grad
	// Activation is a value produced by forward and kept for backward.
	Activation
	// ActGrad is the gradient of an activation.
	ActGrad
	// Scratch is kernel work space (im2col columns, routing state).
	Scratch
	// State is optimizer state (Adam moments).
	State
	numKinds
)

var kindNames = [...]string{"params", "grads", "activations", "activation grads", "scratch", "optimizer state"}

// String names the kind.
func (k Kind) String() string {
	if k >= 0 && k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Buf is a named tensor in an arena. Its Data slice is valid after the
// arena is sealed.
type Buf struct {
	Name  string
	Kind  Kind
	Shape []int
	off   int
	n     int
	data  []float32
}

// Data returns the buffer's elements (nil before Seal).
func (b *Buf) Data() []float32 {
	if b == nil { // an absent buffer (e.g. a gradient in an inference graph)
		return nil
	}
	return b.data
}

// Len is the number of elements.
func (b *Buf) Len() int { return b.n }

// Arena owns one []float32 that holds every buffer allocated from it.
type Arena struct {
	bufs   []*Buf
	byName map[string]*Buf
	data   []float32
	size   int
	sealed bool
	err    error
}

// NewArena returns an empty arena.
func NewArena() *Arena { return &Arena{byName: map[string]*Buf{}} }

// Alloc declares a buffer of the given shape. Errors (a duplicate name, a
// non-positive dimension, an Alloc after Seal) are reported by Seal, so a
// model can declare everything and check once.
func (a *Arena) Alloc(name string, kind Kind, shape ...int) *Buf {
	b := &Buf{Name: name, Kind: kind, Shape: append([]int(nil), shape...)}
	n := 1
	for _, s := range shape {
		if s < 0 && a.err == nil {
			a.err = fmt.Errorf("graph: buffer %q: negative dimension in shape %v", name, shape)
		}
		n *= s
	}
	b.n = n
	switch {
	case a.sealed && a.err == nil:
		a.err = fmt.Errorf("graph: buffer %q allocated after the arena was sealed", name)
	case a.byName[name] != nil && a.err == nil:
		a.err = fmt.Errorf("graph: buffer %q declared twice", name)
	}
	a.byName[name] = b
	// Align every buffer to 16 floats (64 bytes) so SIMD loads of a buffer's
	// start never straddle a cache line.
	b.off = a.size
	a.size += (n + 15) &^ 15
	a.bufs = append(a.bufs, b)
	return b
}

// Seal allocates the arena once and binds every buffer. It returns the first
// declaration error, if any.
func (a *Arena) Seal() error {
	if a.err != nil {
		return a.err
	}
	if a.sealed {
		return nil
	}
	a.data = make([]float32, a.size)
	for _, b := range a.bufs {
		b.data = a.data[b.off : b.off+b.n : b.off+b.n]
	}
	a.sealed = true
	return nil
}

// Buf returns the buffer of that name, or nil.
func (a *Arena) Buf(name string) *Buf { return a.byName[name] }

// Bufs returns every buffer in declaration order.
func (a *Arena) Bufs() []*Buf { return a.bufs }

// Floats is the arena size in float32 elements.
func (a *Arena) Floats() int { return a.size }

// Bytes is the arena size in bytes.
func (a *Arena) Bytes() int64 { return int64(a.size) * 4 }

// Zero clears every buffer of the given kind.
func (a *Arena) Zero(kind Kind) {
	for _, b := range a.bufs {
		if b.Kind == kind {
			clear(b.data)
		}
	}
}

// Plan summarizes the memory plan: bytes per kind and in total.
type Plan struct {
	Bytes [numKinds]int64
	Total int64
}

// Plan returns the arena's memory plan.
func (a *Arena) Plan() Plan {
	var p Plan
	for _, b := range a.bufs {
		p.Bytes[b.Kind] += int64(b.n) * 4
	}
	p.Total = a.Bytes()
	return p
}

// Add returns the element-wise sum of two plans (e.g. over replicas).
func (p Plan) Add(q Plan) Plan {
	for k := range p.Bytes {
		p.Bytes[k] += q.Bytes[k]
	}
	p.Total += q.Total
	return p
}

// String formats the plan as "total 12.3 MiB (params 1.2 MiB, ...)".
func (p Plan) String() string {
	var parts []string
	for k, b := range p.Bytes {
		if b > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", Kind(k), MiB(b)))
		}
	}
	return fmt.Sprintf("total %s (%s)", MiB(p.Total), strings.Join(parts, ", "))
}

// MiB formats a byte count.
func MiB(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// Step is one kernel call (or a few fused ones) of a schedule.
type Step struct {
	Name string
	Run  func() error
}

// Schedule is a fixed sequence of steps.
type Schedule []Step

// Run executes the steps in order and wraps the first error with the step's
// name.
func (s Schedule) Run() error {
	for i := range s {
		if err := s[i].Run(); err != nil {
			return fmt.Errorf("%s: %w", s[i].Name, err)
		}
	}
	return nil
}

// Names lists the step names (for docs and debugging).
func (s Schedule) Names() []string {
	out := make([]string, len(s))
	for i, st := range s {
		out[i] = st.Name
	}
	return out
}

// Largest returns the n largest buffers, for reports.
func (a *Arena) Largest(n int) []*Buf {
	b := append([]*Buf(nil), a.bufs...)
	sort.SliceStable(b, func(i, j int) bool { return b[i].n > b[j].n })
	if len(b) > n {
		b = b[:n]
	}
	return b
}
