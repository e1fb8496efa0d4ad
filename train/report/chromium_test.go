package report

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// chromium returns a headless-capable Chromium on PATH, or skips; with
// CAPSTAN_REQUIRE_CHROMIUM set (./build.sh test sets it once it has
// found or installed Chromium; CI must) a missing browser fails instead.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CAPSTAN_REQUIRE_CHROMIUM") != "" {
		t.Fatal("no chromium on PATH, and CAPSTAN_REQUIRE_CHROMIUM is set (apt-get install chromium)")
	}
	t.Skip("no chromium on PATH (apt-get install chromium)")
	return ""
}

// runChromium runs a headless Chromium with args on the page and returns
// its stdout and stderr. The deadline only guards against a hung browser.
func runChromium(t *testing.T, bin, page string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--user-data-dir=" + t.TempDir(),
		"--enable-logging=stderr", "--v=0"}, args...)
	cmd := exec.CommandContext(ctx, bin, append(all, "file://"+page)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %v: %v\n%s", bin, args, err, errb.String())
	}
	return out.String(), errb.String()
}

// TestChromium renders the synthetic report in a headless Chromium: the
// page loads without a console error, its DOM holds every section and
// figure, and the screenshot is not blank. Set CAPSTAN_REPORT_SCREENSHOT
// to a path to keep the screenshot (and the page, as PATH.html).
func TestChromium(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	var b bytes.Buffer
	if err := Write(&b, synthInput(t)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	checkConsole := func(stderr string) {
		for _, line := range strings.Split(stderr, "\n") {
			if strings.Contains(line, "CONSOLE") || strings.Contains(line, "Uncaught") {
				t.Errorf("console: %s", line)
			}
		}
	}
	dom, stderr := runChromium(t, bin, page, "--dump-dom")
	checkConsole(stderr)
	for _, id := range sectionIDs {
		if !strings.Contains(dom, `<section id="`+id+`">`) {
			t.Errorf("rendered DOM lacks section %s", id)
		}
	}
	if n := strings.Count(dom, "<svg"); n != 4+3+2+5+3+5 {
		t.Errorf("rendered DOM has %d svg elements", n)
	}
	shot := filepath.Join(dir, "shot.png")
	_, stderr = runChromium(t, bin, page, "--screenshot="+shot, "--window-size=1400,4000")
	checkConsole(stderr)
	raw, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	r := img.Bounds()
	if r.Dx() != 1400 || r.Dy() != 4000 {
		t.Errorf("screenshot of %v", r)
	}
	ink := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			if cr, cg, cb, _ := img.At(x, y).RGBA(); cr < 0xf000 || cg < 0xf000 || cb < 0xf000 {
				ink++
			}
		}
	}
	// Text, trees and plots cover several percent of the page; a page
	// that failed to render is white.
	if frac := float64(ink) / float64(r.Dx()*r.Dy()); frac < 0.03 {
		t.Errorf("screenshot nearly blank: %.2f%% non-white pixels", 100*frac)
	}
	if keep := os.Getenv("CAPSTAN_REPORT_SCREENSHOT"); keep != "" {
		if err := os.WriteFile(keep, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(keep+".html", b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
