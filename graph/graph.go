package graph

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
	"unsafe"
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
	// Packed is a copy of parameters in the layout a kernel reads (an
	// inference graph's convolution weights packed once, see
	// kernels.PackConv): written when the parameters change, read by every
	// pass, so pinned like Param (never shared by the memory plan).
	Packed
	numKinds
)

var kindNames = [...]string{"params", "grads", "activations", "activation grads", "scratch", "optimizer state", "packed weights"}

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
	// DType is the element type: Float32 (Alloc), Int8 (AllocI8) or Int32
	// (AllocI32).
	DType DType
	off   int
	n     int // size in float32 slots (4 bytes)
	elems int // element count
	data  []float32
	// Lifetime in the global step order of SealShared (first, last step
	// that uses the buffer); pinned buffers live for the whole step.
	first, last int
	pinned      bool
}

// DType is the element type of a buffer. Every buffer lives in the
// arena's float32 memory; an int8 buffer of n elements takes ⌈n/4⌉ float
// slots, an int32 buffer n, and each starts 64-byte aligned like any other.
type DType int

const (
	// Float32 buffers are read with Data.
	Float32 DType = iota
	// Int8 buffers are read with I8.
	Int8
	// Int32 buffers are read with I32.
	Int32
)

// Data returns the buffer's elements (nil before Seal, and for an absent
// or an integer buffer).
func (b *Buf) Data() []float32 {
	if b == nil || b.DType != Float32 { // absent (e.g. a gradient in an inference graph), or integer
		return nil
	}
	return b.data
}

// I8 returns an Int8 buffer's elements (nil before Seal, and for an absent
// or a non-Int8 buffer).
func (b *Buf) I8() []int8 {
	if b == nil || b.DType != Int8 || len(b.data) == 0 {
		return nil
	}
	return unsafe.Slice((*int8)(unsafe.Pointer(&b.data[0])), b.elems)
}

// I32 returns an Int32 buffer's elements (nil before Seal, and for an
// absent or a non-Int32 buffer).
func (b *Buf) I32() []int32 {
	if b == nil || b.DType != Int32 || len(b.data) == 0 {
		return nil
	}
	return unsafe.Slice((*int32)(unsafe.Pointer(&b.data[0])), b.elems)
}

// Len is the number of elements.
func (b *Buf) Len() int { return b.elems }

// Arena owns one []float32 that holds every buffer allocated from it.
type Arena struct {
	bufs   []*Buf
	byName map[string]*Buf
	data   []float32
	size   int
	sealed bool
	err    error
	// unshared is the size without sharing (every buffer its own memory).
	unshared int
	shared   bool
	steps    int // global step count of the shared plan
	debug    bool
	// sizeCheck, when set (SetSizeCheck), vets the planned size before the
	// arena is allocated.
	sizeCheck func(bytes int64) error
}

// NewArena returns an empty arena.
func NewArena() *Arena { return &Arena{byName: map[string]*Buf{}} }

// Alloc declares a buffer of the given shape. Errors (a duplicate name, a
// non-positive dimension, an Alloc after Seal) are reported by Seal, so a
// model can declare everything and check once.
func (a *Arena) Alloc(name string, kind Kind, shape ...int) *Buf {
	return a.alloc(name, kind, Float32, shape)
}

// AllocI8 declares an int8 buffer of the given shape (see Alloc).
func (a *Arena) AllocI8(name string, kind Kind, shape ...int) *Buf {
	return a.alloc(name, kind, Int8, shape)
}

// AllocI32 declares an int32 buffer of the given shape (see Alloc).
func (a *Arena) AllocI32(name string, kind Kind, shape ...int) *Buf {
	return a.alloc(name, kind, Int32, shape)
}

func (a *Arena) alloc(name string, kind Kind, dt DType, shape []int) *Buf {
	b := &Buf{Name: name, Kind: kind, DType: dt, Shape: append([]int(nil), shape...)}
	n := 1
	for _, s := range shape {
		switch {
		case s < 0:
			if a.err == nil {
				a.err = fmt.Errorf("graph: buffer %q: negative dimension in shape %v", name, shape)
			}
			n = 0
		case s > 0 && n > maxFloats/s:
			if a.err == nil {
				a.err = fmt.Errorf("graph: buffer %q: shape %v holds more than %d floats", name, shape, maxFloats)
			}
			n = 0
		default:
			n *= s
		}
	}
	b.elems = n
	if dt == Int8 {
		b.n = (n + 3) / 4
	} else {
		b.n = n
	}
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
	a.size += align(n)
	if a.size > maxFloats && a.err == nil {
		a.err = fmt.Errorf("graph: buffer %q takes the arena past %d floats", name, maxFloats)
	}
	a.unshared = a.size
	a.bufs = append(a.bufs, b)
	return b
}

// maxFloats bounds every buffer and the arena's declared size (2^40 floats,
// 4 TiB; math.MaxInt/4 on 32-bit platforms, whose address space holds no
// more): products and sums of sizes stay far from int overflow (the arena's
// size plus one more buffer, and the size in bytes, fit an int), and a
// shape computed from hostile sizes is an error, not a panic.
const maxFloats = min(1<<40, math.MaxInt/4)

// MaxArenaFloats is the most floats an arena may hold on this platform
// (maxFloats: 2^40, or math.MaxInt/4 where int has 32 bits): a memory limit
// above MaxArenaFloats·4 bytes cannot be reached by a plan, and package
// capsnet lowers its model limit to it so that a model too big for the
// platform gets the memory-limit error, not the arena's.
const MaxArenaFloats = maxFloats

// MaxArenaBytes is the largest arena Seal and SealShared allocate (16 GiB by
// default) unless the arena has its own size check (SetSizeCheck). A larger
// plan is refused with an error that names the size, so that a model too
// big for the machine fails with a message instead of "fatal error: out of
// memory". Raise it before building the graphs for a machine that has the
// memory.
var MaxArenaBytes int64 = 16 << 30

// SetSizeCheck installs a check of the arena's planned size in place of
// MaxArenaBytes: Seal and SealShared call check with the size in bytes once
// the plan is made and before anything is allocated, and return its error
// unchanged (the arena stays unsealed). A model uses it to apply its own
// memory limit, naming what the memory is for and how to raise it.
func (a *Arena) SetSizeCheck(check func(bytes int64) error) { a.sizeCheck = check }

// checkSize refuses an arena the size check (SetSizeCheck) refuses or,
// without one, of more than MaxArenaBytes.
func (a *Arena) checkSize() error {
	if a.sizeCheck != nil {
		return a.sizeCheck(int64(a.size) * 4)
	}
	if b := int64(a.size) * 4; b > MaxArenaBytes {
		return fmt.Errorf("graph: the memory plan needs %s, more than the limit of %s (graph.MaxArenaBytes)", MiB(b), MiB(MaxArenaBytes))
	}
	return nil
}

// align rounds a float count up to 16 floats (64 bytes).
func align(n int) int { return (n + 15) &^ 15 }

// Pin keeps buffers alive for the whole step in a shared plan (SealShared):
// the input, and what a model exposes to its callers after a pass. nil
// buffers are ignored. Parameters, packed weights, gradients and optimizer
// state are always pinned.
func (a *Arena) Pin(bufs ...*Buf) {
	for _, b := range bufs {
		if b != nil {
			b.pinned = true
		}
	}
}

// SetDebug turns on the validation mode of SealShared (call it before):
// every step of the given schedules is wrapped so that each buffer is filled
// with NaN just before its first step and just after its last one. A step
// that reads or writes a buffer it does not declare then reads NaN or
// clobbers another buffer, which a comparison with an unshared plan
// (Seal) shows. It costs time and is meant for tests.
func (a *Arena) SetDebug(on bool) { a.debug = on }

// Seal allocates the arena once and binds every buffer. It returns the first
// declaration error, if any.
func (a *Arena) Seal() error {
	if a.err != nil {
		return a.err
	}
	if a.sealed {
		return nil
	}
	if err := a.checkSize(); err != nil {
		return err
	}
	a.bind()
	return nil
}

func (a *Arena) bind() {
	a.data = make([]float32, a.size)
	for _, b := range a.bufs {
		b.data = a.data[b.off : b.off+b.n : b.off+b.n]
	}
	a.sealed = true
}

// SealShared allocates the arena with a memory plan derived from the given
// schedules, run in that order (e.g. forward, backward): every buffer a step
// lists in Reads or Writes lives from the first to the last such step over
// the concatenated schedules (buffers of other arenas, such as shared
// parameters, are ignored); parameters, packed weights, gradients,
// optimizer state, pinned buffers (Pin) and buffers no step uses live for
// the whole step. Buffers are placed largest first (declaration order
// breaks ties) at the lowest 64-byte aligned offset that overlaps no
// placed buffer whose lifetime meets its own, so buffers with disjoint
// lifetimes share memory. The plan is then
// checked with Validate.
//
// Every step must declare every buffer it touches and write a buffer before
// reading it within the schedules (a buffer carries no value from one run of
// the schedules to the next unless it is pinned). SetDebug checks that at
// run time. A schedule may be run alone (forward only) as long as it reads
// nothing a later schedule in the order writes.
func (a *Arena) SealShared(phases ...Schedule) error {
	if a.err != nil {
		return a.err
	}
	if a.sealed {
		return nil
	}
	for _, b := range a.bufs {
		b.first, b.last = math.MaxInt, -1
	}
	t := 0
	for _, ph := range phases {
		for i := range ph {
			for _, list := range [2][]*Buf{ph[i].Reads, ph[i].Writes} {
				for _, b := range list {
					if b == nil || a.byName[b.Name] != b {
						continue // absent, or another arena's (shared parameters)
					}
					b.first, b.last = min(b.first, t), max(b.last, t)
				}
			}
			t++
		}
	}
	a.steps = t
	for _, b := range a.bufs {
		if b.pinned || b.Kind == Param || b.Kind == Packed || b.Kind == Grad || b.Kind == State || b.last < 0 {
			b.pinned = true
			b.first, b.last = 0, max(t-1, 0)
		}
	}
	order := append([]*Buf(nil), a.bufs...)
	sort.SliceStable(order, func(i, j int) bool { return align(order[i].n) > align(order[j].n) })
	var placed []*Buf
	a.size = 0
	for _, b := range order {
		var busy []*Buf
		for _, q := range placed {
			if q.first <= b.last && b.first <= q.last && q.n > 0 {
				busy = append(busy, q)
			}
		}
		sort.Slice(busy, func(i, j int) bool { return busy[i].off < busy[j].off })
		off := 0
		for _, q := range busy {
			if off+b.n <= q.off {
				break
			}
			off = max(off, q.off+align(q.n))
		}
		b.off = off
		a.size = max(a.size, off+align(b.n))
		placed = append(placed, b)
	}
	a.shared = true
	if err := a.Validate(); err != nil {
		return err
	}
	if err := a.checkSize(); err != nil {
		return err
	}
	a.bind()
	if a.debug {
		a.instrument(phases)
	}
	return nil
}

// Validate checks the memory plan: every buffer is 64-byte aligned and
// inside the arena, and no two buffers whose lifetimes overlap (any two
// after a plain Seal) share memory.
func (a *Arena) Validate() error {
	for i, b := range a.bufs {
		if b.off%16 != 0 || b.off < 0 || b.off+b.n > a.size {
			return fmt.Errorf("graph: buffer %q at [%d, %d) is unaligned or outside the arena of %d floats", b.Name, b.off, b.off+b.n, a.size)
		}
		for _, q := range a.bufs[:i] {
			live := !a.shared || (q.first <= b.last && b.first <= q.last)
			if live && b.n > 0 && q.n > 0 && b.off < q.off+q.n && q.off < b.off+b.n {
				return fmt.Errorf("graph: buffers %q [%d, %d) and %q [%d, %d) overlap while both live (steps %d–%d and %d–%d)",
					q.Name, q.off, q.off+q.n, b.Name, b.off, b.off+b.n, q.first, q.last, b.first, b.last)
			}
		}
	}
	return nil
}

// instrument wraps every step to poison the buffers born before it and
// those dying after it with NaN (SetDebug).
func (a *Arena) instrument(phases []Schedule) {
	born := make([][]*Buf, a.steps)
	dead := make([][]*Buf, a.steps)
	for _, b := range a.bufs {
		if !b.pinned {
			born[b.first] = append(born[b.first], b)
			dead[b.last] = append(dead[b.last], b)
		}
	}
	nan := float32(math.NaN())
	poison := func(bs []*Buf) {
		for _, b := range bs {
			for i := range b.data {
				b.data[i] = nan
			}
		}
	}
	t := 0
	for _, ph := range phases {
		for i := range ph {
			run, bn, dd := ph[i].Run, born[t], dead[t]
			ph[i].Run = func() error {
				poison(bn)
				err := run()
				poison(dd)
				return err
			}
			t++
		}
	}
}

// Lifetime returns the buffer's first and last step in the shared plan's
// step order and whether it is pinned (alive for the whole step); after a
// plain Seal every buffer is pinned.
func (b *Buf) Lifetime() (first, last int, pinned bool) {
	return b.first, b.last, b.pinned
}

// Offset is the buffer's offset in the arena, in floats (for plan reports
// and tests).
func (b *Buf) Offset() int { return b.off }

// Buf returns the buffer of that name, or nil.
func (a *Arena) Buf(name string) *Buf { return a.byName[name] }

// Bufs returns every buffer in declaration order.
func (a *Arena) Bufs() []*Buf { return a.bufs }

// Floats is the arena size in float32 elements.
func (a *Arena) Floats() int { return a.size }

// Bytes is the arena size in bytes.
func (a *Arena) Bytes() int64 { return int64(a.size) * 4 }

// Zero clears every buffer of the given kind. After SealShared, clearing a
// kind whose buffers share memory (activations, scratch) clobbers the
// buffers that share it; the pinned kinds (Param, Packed, Grad, State) are
// safe.
func (a *Arena) Zero(kind Kind) {
	for _, b := range a.bufs {
		if b.Kind == kind {
			clear(b.data)
		}
	}
}

// Plan summarizes the memory plan: bytes per kind (each buffer counted at
// its own size, as if nothing were shared) and the arena's total.
type Plan struct {
	Bytes [numKinds]int64
	Total int64
	// Unshared is what the arena would take with every buffer in its own
	// memory (Seal); Total is less when SealShared shares memory.
	Unshared int64
}

// Plan returns the arena's memory plan.
func (a *Arena) Plan() Plan {
	var p Plan
	for _, b := range a.bufs {
		p.Bytes[b.Kind] += int64(b.n) * 4
	}
	p.Total = a.Bytes()
	p.Unshared = int64(a.unshared) * 4
	return p
}

// Add returns the element-wise sum of two plans (e.g. over replicas).
func (p Plan) Add(q Plan) Plan {
	for k := range p.Bytes {
		p.Bytes[k] += q.Bytes[k]
	}
	p.Total += q.Total
	p.Unshared += q.Unshared
	return p
}

// String formats the plan as "total 12.3 MiB (params 1.2 MiB, ...)", with
// ", 20.1 MiB unshared" when buffers share memory.
func (p Plan) String() string {
	var parts []string
	for k, b := range p.Bytes {
		if b > 0 {
			parts = append(parts, fmt.Sprintf("%s %s", Kind(k), MiB(b)))
		}
	}
	if p.Unshared > p.Total {
		parts = append(parts, fmt.Sprintf("%s unshared", MiB(p.Unshared)))
	}
	return fmt.Sprintf("total %s (%s)", MiB(p.Total), strings.Join(parts, ", "))
}

// MiB formats a byte count.
func MiB(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// Step is one kernel call (or a few fused ones) of a schedule. Reads and
// Writes list the buffers it uses (nil entries are ignored); SealShared
// derives the buffers' lifetimes from them. Run must get buffer memory with
// Buf.Data when it runs, not before SealShared.
type Step struct {
	Name   string
	Run    func() error
	Reads  []*Buf
	Writes []*Buf
	// FLOPs is the floating-point work of one Run (a multiply-add counts
	// as 2), for profiles; 0 for steps whose work is not counted (data
	// movement, element-wise maps, the routing loops).
	FLOPs float64
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

// RunTimed is Run that also adds each step's wall-clock time to ns[i]
// (nanoseconds; ns holds at least len(s) entries), for per-step profiles.
// It does not allocate. Steps after a failing one are not run or timed.
func (s Schedule) RunTimed(ns []int64) error {
	if len(ns) < len(s) {
		return fmt.Errorf("graph: RunTimed: %d timers for %d steps", len(ns), len(s))
	}
	for i := range s {
		t0 := time.Now()
		err := s[i].Run()
		ns[i] += int64(time.Since(t0))
		if err != nil {
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
