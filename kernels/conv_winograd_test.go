package kernels

import (
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// winoTestShapes are random shapes the Winograd path can take (strides 1
// and 2, kernels up to 10, paddings, odd outputs that cut the last tiles;
// their few channels run the transforms in Go loops), and shapes whose
// channels are whole column panels of the tiles (the transforms on the
// direct kernels), one of them Sabour's primary capsules on a smaller
// image.
func winoTestShapes() []ConvShape {
	rng := rand.New(rand.NewPCG(7, 26))
	n := 60
	if testing.Short() {
		n = 20
	}
	var out []ConvShape
	for len(out) < n {
		var s ConvShape
		s.Groups = 1
		s.Batch = 1 + rng.IntN(3)
		st := 1 + rng.IntN(2)
		s.StrideH, s.StrideW = st, st
		s.KH, s.KW = 1+rng.IntN(5*st), 1+rng.IntN(5*st)
		s.PadH, s.PadW = rng.IntN(3), rng.IntN(3)
		s.InH = max(1, s.KH-2*s.PadH+rng.IntN(12))
		s.InW = max(1, s.KW-2*s.PadW+rng.IntN(12))
		s.InC, s.OutC = 1+rng.IntN(9), 1+rng.IntN(9)
		if s.Validate() == nil && s.winoOK() {
			out = append(out, s)
		}
	}
	// 192 is a multiple of every tile's nr (8 to 64); 96 of all but 64's.
	return append(out,
		ConvShape{Batch: 2, InC: 192, InH: 13, InW: 11, OutC: 96, KH: 9, KW: 9, StrideH: 2, StrideW: 2, PadH: 1, Groups: 1},
		ConvShape{Batch: 2, InC: 96, InH: 11, InW: 13, OutC: 192, KH: 7, KW: 8, StrideH: 2, StrideW: 2, PadH: 1, PadW: 2, Groups: 1},
		ConvShape{Batch: 3, InC: 192, InH: 9, InW: 10, OutC: 192, KH: 5, KW: 4, StrideH: 1, StrideW: 1, PadH: 2, PadW: 1, Groups: 1})
}

// Tolerances. convCheckClose's bound (2·ε·(L+2)·Σ|terms|) is for a direct
// sum; the Winograd products sum transformed terms whose coefficients
// reach 5·4 on the input side, so the bound is taken 16 times (Lavin and
// Gray 2016; on Sabour's primary capsules the measured error is about 7×
// the direct path's mean and at most 1.4·ε·Σ|terms|). For the gradients,
// an element whose own terms are all zero (an input no tap reaches, past
// the last window or under a phase's zero-padded taps; a weight that only
// meets padding) still receives the rounding of its tile's other terms:
// Winograd's error is a cancellation error of the tile, not of the
// element. Their bound therefore adds the mean of Σ|terms| to each
// element's (about 1e-8 relative was seen there). A missed tap or a wrong
// phase moves an element by whole terms, far above either bound (the
// mutations of the transforms tried while writing them all failed).
const winoTolFactor = 16

// TestWinogradVsRef compares the Winograd forward (with and without the
// ReLU), data gradient and filter gradient with the float64 references on
// every implementation (the references computed once per shape).
func TestWinogradVsRef(t *testing.T) {
	type ref struct {
		s                           ConvShape
		x, w, b, dy, dw0            []float32
		y, absY, dx, absX, dw, absW []float32
	}
	var refs []ref
	for _, s := range winoTestShapes() {
		rng := rand.New(rand.NewPCG(uint64(s.InC), uint64(s.KH*16+s.KW)))
		r := ref{s: s, x: convRand(rng, s.XLen(), 0), w: convRand(rng, s.WLen(), 0), b: convRand(rng, s.OutC, 0),
			dy: convRand(rng, s.YLen(), 0), dw0: convRand(rng, s.WLen(), 0)}
		r.y, r.absY = make([]float32, s.YLen()), make([]float32, s.YLen())
		convRef(s, r.y, r.x, r.w, r.b)
		convRef(s, r.absY, convAbs(r.x), convAbs(r.w), convAbs(r.b))
		r.dx, r.absX = make([]float32, s.XLen()), make([]float32, s.XLen())
		convBackwardDataRef(s, r.dx, r.dy, r.w)
		convBackwardDataRef(s, r.absX, convAbs(r.dy), convAbs(r.w))
		r.dw, r.absW = append([]float32(nil), r.dw0...), convAbs(r.dw0)
		convBackwardFilterRef(s, r.dw, nil, r.x, r.dy)
		convBackwardFilterRef(s, r.absW, nil, convAbs(r.x), convAbs(r.dy))
		r.absY, r.absX, r.absW = scaleAbs(r.absY, winoTolFactor), scaleAbs(withMean(r.absX), winoTolFactor), scaleAbs(withMean(r.absW), winoTolFactor)
		refs = append(refs, r)
	}
	forEachImpl(t, func(t *testing.T, impl string) {
		for _, r := range refs {
			s := r.s
			p := s.winoPlan()
			b := p.bufs(s, convNaN(s.winoWork(), 0))
			u, v := convNaN(s.winoUSize(), 0), convNaN(s.winoVSize(), 0)
			var y []float32
			for _, relu := range []bool{false, true} {
				y = convNaN(s.YLen(), 0)
				p.weights(s, u, r.w, &b)
				if err := p.forward(s, y, r.x, u, v, r.b, relu, &b); err != nil {
					t.Fatal(err)
				}
				want := r.y
				if relu {
					want = make([]float32, len(r.y))
					for i, v := range r.y {
						want[i] = max(v, 0)
					}
				}
				convCheckClose(t, "y", y, want, r.absY, s.InC*s.KH*s.KW)
			}
			// Without keeping V: the same bits.
			y2 := convNaN(s.YLen(), 0)
			if err := p.forward(s, y2, r.x, u, nil, r.b, true, &b); err != nil {
				t.Fatal(err)
			}
			convSameBits(t, "y (V not kept)", y2, y)
			gotX := convNaN(s.XLen(), 0)
			if err := p.backwardData(s, gotX, r.dy, u, &b); err != nil {
				t.Fatal(err)
			}
			convCheckClose(t, "dx", gotX, r.dx, r.absX, s.OutC*s.KH*s.KW)
			// The filter gradient from the kept V and from V made again.
			gotW, gotW2 := append([]float32(nil), r.dw0...), append([]float32(nil), r.dw0...)
			if err := p.backwardFilter(s, gotW, r.x, r.dy, convNaN(s.winoUSize(), 0), v, &b); err != nil {
				t.Fatal(err)
			}
			convCheckClose(t, "dw", gotW, r.dw, r.absW, s.Batch*s.OutH()*s.OutW())
			if err := p.backwardFilter(s, gotW2, r.x, r.dy, u, nil, &b); err != nil {
				t.Fatal(err)
			}
			convSameBits(t, "dw (V made again)", gotW2, gotW)
			if t.Failed() {
				t.Fatalf("%s: shape %+v", impl, s)
			}
		}
	})
}

// TestWinogradTaken checks the training entry points: with
// WinogradSaveSize and WinogradWorkSize floats they take the Winograd
// path on the shapes that pay and an implementation whose direct kernel
// fits (the results are those of the internals TestWinogradVsRef checks,
// and differ from the GEMM path's bits); with no save, or after a
// backward pass consumed the saved weights, they are ConvForward(ReLU)
// and ConvBackward bit for bit; the data and filter gradients alone give
// the bits of both in one call; a second step gives the same bits; and
// nothing allocates.
func TestWinogradTaken(t *testing.T) {
	if !winogradEnvOn() {
		t.Skipf("%s turns the Winograd path off", WinogradEnvVar)
	}
	sabour := ConvShape{Batch: 32, InC: 256, InH: 20, InW: 20, OutC: 256, KH: 9, KW: 9, StrideH: 2, StrideW: 2, Groups: 1}
	if sabour.WinogradSaveSize() == 0 || sabour.WinogradWorkSize() < sabour.ArenaWorkSize() {
		t.Fatal("Sabour's primary capsules do not take the Winograd path")
	}
	for _, s := range []ConvShape{
		{Batch: 2, InC: 32, InH: 34, InW: 34, OutC: 64, KH: 3, KW: 3, StrideH: 1, StrideW: 1, Groups: 1},
		{Batch: 2, InC: 64, InH: 15, InW: 15, OutC: 128, KH: 3, KW: 3, StrideH: 2, StrideW: 2, Groups: 1},
		{Batch: 2, InC: 1, InH: 28, InW: 28, OutC: 256, KH: 9, KW: 9, StrideH: 1, StrideW: 1, Groups: 1},
		{Batch: 2, InC: 256, InH: 20, InW: 20, OutC: 256, KH: 9, KW: 9, StrideH: 2, StrideW: 2, Groups: 2},
	} {
		if s.WinogradSaveSize() != 0 || s.WinogradWorkSize() != s.ArenaWorkSize() {
			t.Errorf("%+v: Winograd's save %d, work %d (ArenaWorkSize %d)", s, s.WinogradSaveSize(), s.WinogradWorkSize(), s.ArenaWorkSize())
		}
	}
	// Sabour's primary capsules on a smaller image (3×3 outputs: cut
	// tiles), with channels every tile's nr divides.
	s := ConvShape{Batch: 3, InC: 192, InH: 13, InW: 13, OutC: 192, KH: 9, KW: 9, StrideH: 2, StrideW: 2, Groups: 1}
	forEachImpl(t, func(t *testing.T, impl string) {
		save, work := make([]float32, s.WinogradSaveSize()), make([]float32, s.WinogradWorkSize())
		taken := s.winoTake(save, work)
		if s.WinogradRuns() != taken {
			t.Fatalf("%s: WinogradRuns %v, the path taken %v", impl, s.WinogradRuns(), taken)
		}
		if f, _ := s.winoKernel(); (f != nil) != taken {
			t.Fatalf("%s: the Winograd path is taken %v, the direct kernel fits %v", impl, taken, f != nil)
		}
		if s.winoTake(nil, work) || s.winoTake(save, work[:s.ArenaWorkSize()]) {
			t.Fatalf("%s: the Winograd path is taken without its save or work", impl)
		}
		if !taken {
			t.Skipf("%s: no direct kernel, no Winograd path", impl)
		}
		rng := rand.New(rand.NewPCG(26, 5))
		x, w, bias := convRand(rng, s.XLen(), 0), convRand(rng, s.WLen(), 0), convRand(rng, s.OutC, 0)
		dy0 := convRand(rng, s.YLen(), 0)
		// step runs a forward with the ReLU and the backward of both
		// gradients (or of one: what 1 data only, 2 filter only, 3 both
		// after data only).
		step := func(save []float32, what int) (y, dx, dw, db []float32) {
			y, dx = make([]float32, s.YLen()), make([]float32, s.XLen())
			dw, db = make([]float32, s.WLen()), make([]float32, s.OutC)
			if err := ConvForwardTrain(s, y, x, w, bias, save, work, true); err != nil {
				t.Fatal(err)
			}
			dy := append([]float32(nil), dy0...)
			var err error
			switch what {
			case 0:
				err = ConvBackwardTrain(s, dw, db, dx, x, dy, w, y, save, work)
			case 1:
				err = ConvBackwardTrain(s, nil, db, dx, x, dy, w, y, save, work)
			case 2:
				err = ConvBackwardTrain(s, dw, db, nil, x, dy, nil, y, save, work)
			}
			if err != nil {
				t.Fatal(err)
			}
			return
		}
		y1, dx1, dw1, db1 := step(save, 0)
		y2, dx2, dw2, db2 := step(save, 0)
		convSameBits(t, "y (again)", y2, y1)
		convSameBits(t, "dx (again)", dx2, dx1)
		convSameBits(t, "dw (again)", dw2, dw1)
		convSameBits(t, "dbias (again)", db2, db1)
		_, dx3, _, _ := step(save, 1)
		_, _, dw3, _ := step(save, 2)
		convSameBits(t, "dx (alone)", dx3, dx1)
		convSameBits(t, "dw (alone)", dw3, dw1)
		// The internals.
		p := s.winoPlan()
		b := p.bufs(s, make([]float32, s.winoWork()))
		u, v := make([]float32, s.winoUSize()), make([]float32, s.winoVSize())
		y5, dx5, dw5 := make([]float32, s.YLen()), make([]float32, s.XLen()), make([]float32, s.WLen())
		p.weights(s, u, w, &b)
		if err := p.forward(s, y5, x, u, v, bias, true, &b); err != nil {
			t.Fatal(err)
		}
		dy := append([]float32(nil), dy0...)
		reluMask(y5, dy, dy)
		if err := p.backwardData(s, dx5, dy, u, &b); err != nil {
			t.Fatal(err)
		}
		if err := p.backwardFilter(s, dw5, x, dy, u, v, &b); err != nil {
			t.Fatal(err)
		}
		convSameBits(t, "y (internals)", y5, y1)
		convSameBits(t, "dx (internals)", dx5, dx1)
		convSameBits(t, "dw (internals)", dw5, dw1)
		// The GEMM path: no save; and a backward after the saved weights
		// were consumed.
		yg, dxg, dwg, dbg := step(nil, 0)
		same := true
		for i := range yg {
			same = same && yg[i] == y1[i]
		}
		if same {
			t.Errorf("%s: the Winograd forward equals the GEMM path's bits", impl)
		}
		dy = append([]float32(nil), dy0...)
		dx6, dw6, db6 := make([]float32, s.XLen()), make([]float32, s.WLen()), make([]float32, s.OutC)
		if err := ConvBackwardTrain(s, dw6, db6, dx6, x, dy, w, yg, save, work); err != nil {
			t.Fatal(err)
		}
		convSameBits(t, "dx (consumed save: GEMM path)", dx6, dxg)
		convSameBits(t, "dw (consumed save: GEMM path)", dw6, dwg)
		convSameBits(t, "dbias (consumed save: GEMM path)", db6, dbg)
		// No allocation once the transforms are made.
		yy := make([]float32, s.YLen())
		dx, dw, db := make([]float32, s.XLen()), make([]float32, s.WLen()), make([]float32, s.OutC)
		var err error
		if a := testing.AllocsPerRun(2, func() {
			if err = ConvForwardTrain(s, yy, x, w, bias, save, work, true); err == nil {
				err = ConvBackwardTrain(s, dw, db, dx, x, dy, w, yy, save, work)
			}
		}); a != 0 || err != nil {
			t.Errorf("%s: %v allocations per step, err %v", impl, a, err)
		}
	})
}

// scaleAbs returns a scaled by f.
func scaleAbs(a []float32, f float32) []float32 {
	out := make([]float32, len(a))
	for i, v := range a {
		out[i] = v * f
	}
	return out
}

// withMean returns a with the mean of a added to every element.
func withMean(a []float32) []float32 {
	var sum float64
	for _, v := range a {
		sum += float64(v)
	}
	m := float32(sum / float64(max(len(a), 1)))
	out := make([]float32, len(a))
	for i, v := range a {
		out[i] = v + m
	}
	return out
}

// TestParseWinogradEnv checks the values of CAPSTAN_WINOGRAD.
func TestParseWinogradEnv(t *testing.T) {
	for v, want := range map[string]bool{"": true, "on": true, " ON ": true, "1": true, "yes": true, "true": true,
		"off": false, "0": false, "False": false, "no": false} {
		if on, err := parseWinogradEnv(v); on != want || err != nil {
			t.Errorf("%q: on %v, err %v; want %v", v, on, err, want)
		}
	}
	if on, err := parseWinogradEnv("sometimes"); !on || err == nil {
		t.Errorf("an unknown value: on %v, err %v; want on and an error", on, err)
	}
}

// TestWinogradEnvVar runs this test binary again with CAPSTAN_WINOGRAD set
// and checks whether Sabour's primary capsules take the Winograd path
// (where the implementation has a direct kernel for them).
func TestWinogradEnvVar(t *testing.T) {
	s := ConvShape{Batch: 2, InC: 256, InH: 20, InW: 20, OutC: 256, KH: 9, KW: 9, StrideH: 2, StrideW: 2, Groups: 1}
	if os.Getenv("CAPSTAN_PRINT_WINOGRAD") == "1" {
		taken := s.winoTake(make([]float32, s.WinogradSaveSize()), make([]float32, s.WinogradWorkSize()))
		os.Stdout.WriteString("winograd=" + strconv.FormatBool(taken) + "\n")
		return
	}
	if testing.Short() {
		t.Skip("spawns the test binary")
	}
	if f, _ := s.winoKernel(); f == nil {
		t.Skipf("%s has no direct kernel for the shape", Impl())
	}
	for v, want := range map[string]string{"off": "winograd=false", "on": "winograd=true", "bogus": "winograd=true"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWinogradEnvVar$")
		cmd.Env = append(os.Environ(), "CAPSTAN_PRINT_WINOGRAD=1", WinogradEnvVar+"="+v)
		out, err := cmd.CombinedOutput()
		if errors.Is(err, syscall.ENOEXEC) {
			t.Skip("cannot re-execute the test binary (running under an emulator without binfmt)")
		}
		if err != nil {
			t.Fatalf("%s=%s: %v\n%s", WinogradEnvVar, v, err, out)
		}
		if !strings.Contains(string(out), want+"\n") || (v == "bogus") != strings.Contains(string(out), `"bogus"`) {
			t.Errorf("%s=%s: output %q, want %s (and a warning for a bad value)", WinogradEnvVar, v, out, want)
		}
	}
}

// TestWinogradErrors checks that the training entry points return errors,
// not panics, for an invalid shape and for short slices on the Winograd
// path, and that a backward pass after a GEMM-path forward needs dw.
func TestWinogradErrors(t *testing.T) {
	s := ConvShape{Batch: 2, InC: 192, InH: 13, InW: 13, OutC: 192, KH: 9, KW: 9, StrideH: 2, StrideW: 2, Groups: 1}
	save, work := make([]float32, s.WinogradSaveSize()), make([]float32, s.WinogradWorkSize())
	x, w, y := make([]float32, s.XLen()), make([]float32, s.WLen()), make([]float32, s.YLen())
	dx, dw, dy := make([]float32, s.XLen()), make([]float32, s.WLen()), make([]float32, s.YLen())
	bad := s
	bad.PadH = -1
	for name, err := range map[string]error{
		"bad shape forward":  ConvForwardTrain(bad, y, x, w, nil, save, work, false),
		"bad shape backward": ConvBackwardTrain(bad, dw, nil, dx, x, dy, w, nil, save, work),
		"short y":            ConvForwardTrain(s, y[:1], x, w, nil, save, work, false),
		"short x":            ConvForwardTrain(s, y, x[:1], w, nil, save, work, false),
		"short w":            ConvForwardTrain(s, y, x, w[:1], nil, save, work, false),
		"short bias":         ConvForwardTrain(s, y, x, w, []float32{1}, save, work, false),
		"no dw, GEMM path":   ConvBackwardTrain(s, nil, nil, dx, x, dy, w, nil, nil, work),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if err := ConvForwardTrain(s, y, x, w, nil, save, work, false); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"short dx": ConvBackwardTrain(s, dw, nil, dx[:1], x, dy, w, nil, save, work),
		"short dy": ConvBackwardTrain(s, dw, nil, dx, x, dy[:1], w, nil, save, work),
		"short dw": ConvBackwardTrain(s, dw[:1], nil, dx, x, dy, w, nil, save, work),
		"short y":  ConvBackwardTrain(s, dw, nil, dx, x, dy, w, y[:1], save, work),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
