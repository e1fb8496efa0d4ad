package graph

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"
)

// TestArenaLayout checks that Seal binds every buffer to its own aligned,
// non-overlapping, exactly sized slice of one allocation, and that capacity
// is clipped so an append cannot run into the next buffer.
func TestArenaLayout(t *testing.T) {
	a := NewArena()
	shapes := [][]int{{3}, {16}, {17}, {2, 5, 7}, {0}, {1}, {33, 1}, {5}}
	kinds := []Kind{Param, Grad, Activation, ActGrad, Scratch, State, Param, Packed}
	var bufs []*Buf
	for i, s := range shapes {
		bufs = append(bufs, a.Alloc(string(rune('a'+i)), kinds[i], s...))
	}
	if bufs[0].Data() != nil {
		t.Fatal("Data before Seal is not nil")
	}
	if err := a.Seal(); err != nil {
		t.Fatal(err)
	}
	if err := a.Seal(); err != nil {
		t.Fatalf("second Seal: %v", err)
	}
	base := uintptr(unsafe.Pointer(&a.data[0]))
	end := 0
	for i, b := range bufs {
		want := 1
		for _, s := range shapes[i] {
			want *= s
		}
		if b.Len() != want || len(b.Data()) != want || cap(b.Data()) != want {
			t.Errorf("%s: len %d, Data len %d cap %d; want %d", b.Name, b.Len(), len(b.Data()), cap(b.Data()), want)
		}
		if b.off%16 != 0 || b.off < end {
			t.Errorf("%s: offset %d (previous buffer ends at %d): not 16-aligned or overlapping", b.Name, b.off, end)
		}
		if want > 0 {
			if p := uintptr(unsafe.Pointer(&b.Data()[0])); p != base+uintptr(b.off)*4 {
				t.Errorf("%s: not a view of the arena", b.Name)
			}
		}
		end = b.off + want
		if a.Buf(b.Name) != b {
			t.Errorf("Buf(%q) is not the declared buffer", b.Name)
		}
	}
	if a.Floats() < end || a.Bytes() != int64(a.Floats())*4 {
		t.Errorf("arena %d floats, %d bytes; buffers end at %d", a.Floats(), a.Bytes(), end)
	}
	for i := range bufs[1].Data() {
		bufs[1].Data()[i] = 1
	}
	for _, v := range bufs[0].Data() {
		if v != 0 {
			t.Fatal("writing one buffer changed another")
		}
	}
	if a.Buf("missing") != nil {
		t.Error("Buf of an unknown name is not nil")
	}
	var absent *Buf
	if absent.Data() != nil {
		t.Error("nil Buf has data")
	}
}

func TestArenaErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		build func(a *Arena)
		want  string
	}{
		{"duplicate", func(a *Arena) { a.Alloc("w", Param, 2); a.Alloc("w", Grad, 2) }, `"w" declared twice`},
		{"negative", func(a *Arena) { a.Alloc("x", Activation, 4, -1) }, `"x": negative dimension`},
		{"first error wins", func(a *Arena) { a.Alloc("x", Activation, -1); a.Alloc("x", Activation, 1) }, "negative"},
	} {
		a := NewArena()
		tc.build(a)
		if err := a.Seal(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Seal error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	a := NewArena()
	a.Alloc("w", Param, 2)
	if err := a.Seal(); err != nil {
		t.Fatal(err)
	}
	a.Alloc("late", Scratch, 2)
	if err := a.Seal(); err == nil || !strings.Contains(err.Error(), `"late" allocated after`) {
		t.Errorf("Alloc after Seal: %v", err)
	}
}

func TestPlanAndZero(t *testing.T) {
	a := NewArena()
	w := a.Alloc("w", Param, 10)
	g := a.Alloc("g", Grad, 10)
	h := a.Alloc("h", Activation, 3, 7)
	s := a.Alloc("s", Scratch, 100)
	if err := a.Seal(); err != nil {
		t.Fatal(err)
	}
	p := a.Plan()
	if p.Bytes[Param] != 40 || p.Bytes[Grad] != 40 || p.Bytes[Activation] != 84 || p.Bytes[Scratch] != 400 || p.Bytes[State] != 0 {
		t.Errorf("plan %+v", p)
	}
	if p.Total != a.Bytes() || p.Total < 40+40+84+400 {
		t.Errorf("plan total %d, arena %d bytes", p.Total, a.Bytes())
	}
	q := p.Add(p)
	if q.Total != 2*p.Total || q.Bytes[Scratch] != 800 {
		t.Errorf("Add: %+v", q)
	}
	str := p.String()
	for _, want := range []string{"total 0.0 MiB", "params 0.0 MiB", "scratch 0.0 MiB"} {
		if !strings.Contains(str, want) {
			t.Errorf("plan string %q lacks %q", str, want)
		}
	}
	if strings.Contains(str, "optimizer state") {
		t.Errorf("plan string %q lists an empty kind", str)
	}
	if MiB(3<<20) != "3.0 MiB" {
		t.Errorf("MiB(3<<20) = %q", MiB(3<<20))
	}
	for _, b := range []*Buf{w, g, h, s} {
		for i := range b.Data() {
			b.Data()[i] = 2
		}
	}
	a.Zero(Grad)
	for _, v := range g.Data() {
		if v != 0 {
			t.Fatal("Zero(Grad) left a gradient")
		}
	}
	for _, b := range []*Buf{w, h, s} {
		for _, v := range b.Data() {
			if v != 2 {
				t.Fatalf("Zero(Grad) cleared %s", b.Name)
			}
		}
	}
	if l := a.Largest(2); len(l) != 2 || l[0] != s || l[1] != h {
		t.Errorf("Largest(2) = %v", l)
	}
	if Kind(99).String() != "kind(99)" || State.String() != "optimizer state" || Packed.String() != "packed weights" {
		t.Errorf("kind names: %q %q %q", Kind(99), State, Packed)
	}
	for k := Kind(0); k < numKinds; k++ {
		if s := k.String(); s == "" || strings.HasPrefix(s, "kind(") {
			t.Errorf("kind %d has no name", int(k))
		}
	}
}

func TestScheduleRun(t *testing.T) {
	var ran []string
	step := func(name string, err error) Step {
		return Step{Name: name, Run: func() error { ran = append(ran, name); return err }}
	}
	boom := errors.New("boom")
	s := Schedule{step("conv", nil), step("route", boom), step("decoder", nil)}
	err := s.Run()
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "route: ") {
		t.Errorf("error %v, want boom wrapped with the step name", err)
	}
	if strings.Join(ran, ",") != "conv,route" {
		t.Errorf("ran %v: a schedule must stop at the first error", ran)
	}
	if strings.Join(s.Names(), ",") != "conv,route,decoder" {
		t.Errorf("Names %v", s.Names())
	}
	ran = nil
	if err := (Schedule{step("a", nil), step("b", nil)}).Run(); err != nil || len(ran) != 2 {
		t.Errorf("clean schedule: %v, ran %v", err, ran)
	}
	s = Schedule{step("a", nil)}
	if n := testing.AllocsPerRun(10, func() { ran = ran[:0]; _ = s.Run() }); n != 0 {
		t.Errorf("Schedule.Run allocates %.1f times", n)
	}
}

func TestScheduleRunTimed(t *testing.T) {
	boom := errors.New("boom")
	sleep := func(d time.Duration, err error) Step {
		return Step{Name: d.String(), Run: func() error { time.Sleep(d); return err }}
	}
	s := Schedule{sleep(20*time.Millisecond, nil), sleep(0, nil), sleep(0, boom), sleep(0, nil)}
	ns := []int64{5, 0, 0, 7}
	err := s.RunTimed(ns)
	if !errors.Is(err, boom) {
		t.Fatalf("error %v, want boom", err)
	}
	// Times add to what is there; the first step slept 20 ms, the last one
	// did not run.
	if ns[0] < 5+int64(20*time.Millisecond) || ns[3] != 7 {
		t.Errorf("timers %v: want ns[0] ≥ 20 ms + 5 and ns[3] untouched", ns)
	}
	if ns[0] <= ns[1] {
		t.Errorf("timers %v: the sleeping step is not the slowest", ns)
	}
	if err := s.RunTimed(ns[:2]); err == nil {
		t.Error("RunTimed with fewer timers than steps: no error")
	}
	q := Schedule{sleep(0, nil)}
	if n := testing.AllocsPerRun(10, func() { _ = q.RunTimed(ns) }); n != 0 {
		t.Errorf("Schedule.RunTimed allocates %.1f times", n)
	}
}

// chain declares x → a → b → c → y, each step reading the previous buffer
// and writing the next (y = x + 4), with x and y pinned.
func chain(undeclared bool) (*Arena, Schedule, []*Buf) {
	ar := NewArena()
	x := ar.Alloc("x", Activation, 40)
	a := ar.Alloc("a", Activation, 100)
	b := ar.Alloc("b", Activation, 100)
	c := ar.Alloc("c", Scratch, 30)
	y := ar.Alloc("y", Activation, 40)
	w := ar.Alloc("w", Param, 3)
	ar.Pin(x, y)
	add1 := func(dst, src *Buf) func() error {
		return func() error {
			for i := range dst.Data() {
				dst.Data()[i] = src.Data()[i%src.Len()] + 1
			}
			return nil
		}
	}
	s := Schedule{
		{Name: "a", Run: add1(a, x), Reads: []*Buf{x}, Writes: []*Buf{a}},
		{Name: "b", Run: add1(b, a), Reads: []*Buf{a}, Writes: []*Buf{b}},
		{Name: "c", Run: add1(c, b), Reads: []*Buf{b}, Writes: []*Buf{c}},
		{Name: "y", Run: add1(y, c), Reads: []*Buf{c}, Writes: []*Buf{y}},
	}
	if undeclared {
		// Step y also reads a, dead since step b: declared nowhere in it.
		s[3].Run = func() error {
			for i := range y.Data() {
				y.Data()[i] = c.Data()[i%c.Len()] + 1 + 0*a.Data()[i]
			}
			return nil
		}
	}
	return ar, s, []*Buf{x, a, b, c, y, w}
}

// TestSealShared checks the lifetime plan: buffers with disjoint lifetimes
// share memory, the arena is smaller than the unshared one, live buffers
// never overlap (Validate), and the results equal the unshared plan's.
func TestSealShared(t *testing.T) {
	ref, rs, rb := chain(false)
	if err := ref.Seal(); err != nil {
		t.Fatal(err)
	}
	ar, s, bs := chain(false)
	if err := ar.SealShared(s); err != nil {
		t.Fatal(err)
	}
	x, a, b, c, y, w := bs[0], bs[1], bs[2], bs[3], bs[4], bs[5]
	want := map[*Buf][3]int{x: {0, 3, 1}, a: {0, 1, 0}, b: {1, 2, 0}, c: {2, 3, 0}, y: {0, 3, 1}, w: {0, 3, 1}}
	for buf, lt := range want {
		f, l, p := buf.Lifetime()
		if f != lt[0] || l != lt[1] || p != (lt[2] == 1) {
			t.Errorf("%s: lifetime %d–%d pinned %v, want %v", buf.Name, f, l, p, lt)
		}
	}
	if b.Offset() < a.Offset()+a.Len() && a.Offset() < b.Offset()+b.Len() {
		t.Errorf("a and b overlap while both live")
	}
	pl := ar.Plan()
	if pl.Total >= pl.Unshared || pl.Unshared != ref.Plan().Total {
		t.Errorf("shared plan %d bytes, unshared %d (reference %d): nothing shared", pl.Total, pl.Unshared, ref.Plan().Total)
	}
	if !strings.Contains(pl.String(), "unshared") {
		t.Errorf("plan %q does not report the unshared size", pl)
	}
	if err := ar.Validate(); err != nil {
		t.Fatal(err)
	}
	for i := range x.Data() {
		x.Data()[i], rb[0].Data()[i] = float32(i), float32(i)
	}
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if err := rs.Run(); err != nil {
		t.Fatal(err)
	}
	for i, v := range y.Data() {
		if v != rb[4].Data()[i] || v != float32(i%30)+4 {
			t.Fatalf("y[%d] = %v, unshared %v, want %v", i, v, rb[4].Data()[i], float32(i%30)+4)
		}
	}
	// Validate must catch two live buffers moved onto each other.
	b.off = a.off
	if err := ar.Validate(); err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Errorf("Validate of overlapping live buffers: %v", err)
	}
	// A buffer of another arena (shared parameters) is that arena's
	// business: it neither fails the plan nor gets a lifetime here.
	other := NewArena()
	ob := other.Alloc("a", Activation, 4)
	ar2, s2, _ := chain(false)
	s2[0].Reads = append(s2[0].Reads, ob)
	if err := ar2.SealShared(s2); err != nil {
		t.Fatal(err)
	}
	if f, l, _ := ob.Lifetime(); f != 0 || l != 0 || ar2.Buf("a") == ob {
		t.Errorf("buffer of another arena got lifetime %d–%d", f, l)
	}
}

// TestSealSharedDebug checks the validation mode: a step that reads a buffer
// it does not declare reads the NaN the poisoning left there, so its result
// differs from the unshared plan's; a correctly declared schedule matches
// bit for bit.
func TestSealSharedDebug(t *testing.T) {
	for _, undeclared := range []bool{false, true} {
		ar, s, bs := chain(undeclared)
		ar.SetDebug(true)
		if err := ar.SealShared(s); err != nil {
			t.Fatal(err)
		}
		for i := range bs[0].Data() {
			bs[0].Data()[i] = float32(i)
		}
		if err := s.Run(); err != nil {
			t.Fatal(err)
		}
		bad := false
		for i, v := range bs[4].Data() {
			bad = bad || v != float32(i%30)+4
		}
		if bad != undeclared {
			t.Errorf("undeclared read %v: result differs from the unshared plan: %v", undeclared, bad)
		}
	}
}

// TestHostileSizes: shapes whose product overflows, or an arena larger than
// MaxArenaBytes, are errors from Seal and SealShared, never a panic or an
// attempt to allocate.
func TestHostileSizes(t *testing.T) {
	a := NewArena()
	a.Alloc("huge", Activation, 1<<30, 1<<30, 1<<30)
	if err := a.Seal(); err == nil || !strings.Contains(err.Error(), `"huge"`) {
		t.Errorf("overflowing shape: %v", err)
	}
	a = NewArena()
	for i := 0; i < 3; i++ { // 2^39 floats each (less on 32-bit), each under maxFloats, together past it
		a.Alloc(fmt.Sprintf("big%d", i), Activation, 1<<20, maxFloats>>21)
	}
	if err := a.Seal(); err == nil || !strings.Contains(err.Error(), "past") {
		t.Errorf("arena past the float limit: %v", err)
	}
	prev := MaxArenaBytes
	defer func() { MaxArenaBytes = prev }()
	MaxArenaBytes = 1 << 20
	a = NewArena()
	a.Alloc("x", Activation, 1<<19)
	if err := a.Seal(); err == nil || !strings.Contains(err.Error(), "graph.MaxArenaBytes") {
		t.Errorf("arena over MaxArenaBytes: %v", err)
	}
	a = NewArena()
	x := a.Alloc("x", Activation, 1<<19)
	if err := a.SealShared(Schedule{{Name: "s", Run: func() error { return nil }, Writes: []*Buf{x}}}); err == nil || !strings.Contains(err.Error(), "graph.MaxArenaBytes") {
		t.Errorf("shared arena over MaxArenaBytes: %v", err)
	}
	MaxArenaBytes = prev
	a = NewArena()
	a.Alloc("x", Activation, 1<<10)
	if err := a.Seal(); err != nil {
		t.Errorf("small arena refused: %v", err)
	}
}

// TestSizeCheck: SetSizeCheck sees the planned size (the shared plan's,
// smaller than the sum of the buffers) before anything is allocated; its
// error comes back unchanged and leaves the arena unallocated.
func TestSizeCheck(t *testing.T) {
	build := func() (*Arena, Schedule) {
		a := NewArena()
		x := a.Alloc("x", Activation, 1000)
		y := a.Alloc("y", Activation, 1000)
		z := a.Alloc("z", Activation, 1000)
		nop := func() error { return nil }
		return a, Schedule{{Name: "a", Run: nop, Writes: []*Buf{x}}, {Name: "b", Run: nop, Reads: []*Buf{x}, Writes: []*Buf{y}},
			{Name: "c", Run: nop, Reads: []*Buf{y}, Writes: []*Buf{z}}}
	}
	refuse := errors.New("too big for this model")
	for _, shared := range []bool{false, true} {
		a, s := build()
		var seen int64
		a.SetSizeCheck(func(b int64) error { seen = b; return refuse })
		var err error
		if shared {
			err = a.SealShared(s)
		} else {
			err = a.Seal()
		}
		if err != refuse {
			t.Errorf("shared=%v: error %v, want the check's own", shared, err)
		}
		if a.Buf("x").Data() != nil {
			t.Errorf("shared=%v: refused arena was allocated", shared)
		}
		// Unshared: three buffers of 1008 aligned floats; shared: x and z
		// share memory (disjoint lifetimes), so two.
		want := int64(3 * 1008 * 4)
		if shared {
			want = 2 * 1008 * 4
		}
		if seen != want {
			t.Errorf("shared=%v: check saw %d bytes, want %d", shared, seen, want)
		}
		// An accepting check replaces MaxArenaBytes.
		prev := MaxArenaBytes
		MaxArenaBytes = 1024
		a.SetSizeCheck(func(b int64) error { return nil })
		if shared {
			err = a.SealShared(s)
		} else {
			err = a.Seal()
		}
		MaxArenaBytes = prev
		if err != nil || len(a.Buf("z").Data()) != 1000 || a.Bytes() != want {
			t.Errorf("shared=%v: accepted arena: %v, %d bytes", shared, err, a.Bytes())
		}
	}
}

// TestIntegerBuffers checks int8 and int32 buffers: their element counts,
// typed views over their own memory only (an int8 buffer of n elements
// takes ⌈n/4⌉ float slots), 64-byte alignment, and that the shared plan
// keeps live integer buffers apart.
func TestIntegerBuffers(t *testing.T) {
	a := NewArena()
	q := a.AllocI8("q", Activation, 3, 7) // 21 bytes: 6 slots
	acc := a.AllocI32("acc", Scratch, 5)
	f := a.Alloc("f", Activation, 9)
	s := Schedule{{Name: "all", Run: func() error { return nil }, Writes: []*Buf{q, acc, f}}}
	if err := a.SealShared(s); err != nil {
		t.Fatal(err)
	}
	if q.Len() != 21 || len(q.I8()) != 21 || acc.Len() != 5 || len(acc.I32()) != 5 {
		t.Fatalf("lengths: q %d/%d, acc %d/%d", q.Len(), len(q.I8()), acc.Len(), len(acc.I32()))
	}
	if q.Data() != nil || acc.Data() != nil || f.I8() != nil || f.I32() != nil || q.I32() != nil || acc.I8() != nil {
		t.Fatal("a view of the wrong type is not nil")
	}
	if got := a.Plan().Bytes[Activation]; got != 4*(6+9) {
		t.Errorf("activation bytes %d, want %d", got, 4*(6+9))
	}
	for _, b := range []*Buf{q, acc, f} {
		if b.Offset()%16 != 0 {
			t.Errorf("%s at offset %d: not 64-byte aligned", b.Name, b.Offset())
		}
	}
	for i := range q.I8() {
		q.I8()[i] = -1
	}
	for i := range acc.I32() {
		acc.I32()[i] = -1
	}
	for i, v := range f.Data() {
		if v != 0 {
			t.Fatalf("f[%d] = %v after writing the integer buffers: they overlap", i, v)
		}
	}
	// The int8 view ends at the buffer's last element, not at its slot.
	if cap(q.I8()) < 21 || uintptrOf(q.I8()) != uintptrOf(q.data) {
		t.Error("int8 view does not start at the buffer's memory")
	}
	var nilBuf *Buf
	if nilBuf.I8() != nil || nilBuf.I32() != nil {
		t.Error("absent buffer has a view")
	}
}

func uintptrOf[T any](s []T) uintptr {
	if len(s) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(&s[0]))
}

// TestPackedPinned: a Packed buffer (packed weights) that one step lists
// lives for the whole step like a Param, shares memory with nothing, and
// the plan reports its bytes under its own kind.
func TestPackedPinned(t *testing.T) {
	ar := NewArena()
	x := ar.Alloc("x", Activation, 64)
	pk := ar.Alloc("pk", Packed, 48)
	y := ar.Alloc("y", Activation, 64)
	z := ar.Alloc("z", Activation, 64)
	nop := func() error { return nil }
	s := Schedule{
		{Name: "y", Run: nop, Reads: []*Buf{x, pk}, Writes: []*Buf{y}},
		{Name: "z", Run: nop, Reads: []*Buf{y}, Writes: []*Buf{z}},
		{Name: "x", Run: nop, Reads: []*Buf{z}, Writes: []*Buf{x}},
	}
	if err := ar.SealShared(s); err != nil {
		t.Fatal(err)
	}
	if f, l, p := pk.Lifetime(); f != 0 || l != 2 || !p {
		t.Errorf("packed buffer: lifetime %d–%d pinned %v, want 0–2 pinned", f, l, p)
	}
	for _, b := range []*Buf{x, y, z} {
		if b.Offset() < pk.Offset()+pk.Len() && pk.Offset() < b.Offset()+b.Len() {
			t.Errorf("%s shares memory with the packed buffer", b.Name)
		}
	}
	p := ar.Plan()
	if p.Bytes[Packed] != 48*4 || !strings.Contains(p.String(), "packed weights 0.0 MiB") {
		t.Errorf("plan %+v (%s): want %d bytes of packed weights", p, p, 48*4)
	}
}
