package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestUpToDate regenerates every file twice and requires identical output
// (determinism) equal to the committed files of package asm, so a template
// edited without go generate ./asm/ fails here.
func TestUpToDate(t *testing.T) {
	a, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	b, err := generate()
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 6 {
		t.Errorf("%d files generated, want 6", len(a))
	}
	for name, content := range a {
		if !bytes.Equal(content, b[name]) {
			t.Errorf("%s: two runs differ", name)
		}
		committed, err := os.ReadFile(filepath.Join("..", "..", name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(content, committed) {
			t.Errorf("asm/%s is stale: run go generate ./asm/", name)
		}
	}
}

// TestTiles checks the register plan of every tile the template accepts
// and the refusal of the others.
func TestTiles(t *testing.T) {
	for mr := 4; mr <= 16; mr += 4 {
		for nr := 4; nr <= 16; nr += 4 {
			tl, err := newTile(mr, nr)
			fits := mr*nr/4+mr/4+nr/4 <= 29
			if (err == nil) != fits {
				t.Errorf("%d×%d: err = %v, want fits = %v", mr, nr, err, fits)
				continue
			}
			if err != nil {
				continue
			}
			if len(tl.Acc) != mr*nr/4 || len(tl.Rows) != mr {
				t.Errorf("%d×%d: %d accumulators, %d rows", mr, nr, len(tl.Acc), len(tl.Rows))
			}
		}
	}
	if _, err := newTile(6, 16); err == nil {
		t.Error("6×16 accepted (mr not a multiple of 4)")
	}
}

// TestByElement checks the FMLA/FMUL-by-element encoder against words of
// the hand-verified 8×12 kernel (llvm-mc disassembles them to the
// mnemonics in their comments).
func TestByElement(t *testing.T) {
	for _, c := range []struct {
		base          uint32
		d, n, m, lane int
		want          string
	}{
		{0x4f801000, 0, 26, 24, 0, "0x4f981340"},  // fmla v0.4s, v26.4s, v24.s[0]
		{0x4f801000, 3, 26, 24, 1, "0x4fb81343"},  // fmla v3.4s, v26.4s, v24.s[1]
		{0x4f801000, 6, 26, 24, 2, "0x4f981b46"},  // fmla v6.4s, v26.4s, v24.s[2]
		{0x4f801000, 23, 28, 25, 3, "0x4fb91b97"}, // fmla v23.4s, v28.4s, v25.s[3]
		{0x4f801000, 0, 26, 30, 0, "0x4f9e1340"},  // fmla v0.4s, v26.4s, v30.s[0]
		{0x4f809000, 0, 0, 29, 0, "0x4f9d9000"},   // fmul v0.4s, v0.4s, v29.s[0]
	} {
		if got := byElement(c.base, c.d, c.n, c.m, c.lane); got != c.want {
			t.Errorf("byElement(%#x, %d, %d, %d, %d) = %s, want %s", c.base, c.d, c.n, c.m, c.lane, got, c.want)
		}
	}
}

// TestUnexport checks the body names of exported kernels, a leading
// acronym included.
func TestUnexport(t *testing.T) {
	for export, want := range map[string]string{
		"GemvNNEON":           "gemvNNEON",
		"ExpNEON":             "expNEON",
		"FMAPeakNEON":         "fmaPeakNEON",
		"SgemmKernel8x12NEON": "sgemmKernel8x12NEON",
		"GemmI8SDOTNEON":      "gemmI8SDOTNEON",
		"X":                   "x",
		"AB":                  "ab",
	} {
		if got := unexport(export); got != want {
			t.Errorf("unexport(%q) = %q, want %q", export, got, want)
		}
	}
}
