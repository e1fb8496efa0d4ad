package train

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progress reports a long loop: a redrawn bar with rate and ETA on a
// terminal, or a plain line every 10 seconds otherwise.
type progress struct {
	w         io.Writer
	bar       bool
	label     string
	total     int
	start     time.Time
	lastPrint time.Time
	lastDrawn int
	everDrawn bool
}

func newProgress(w io.Writer, bar bool, label string, total int) *progress {
	now := time.Now()
	return &progress{w: w, bar: bar, label: label, total: total, start: now, lastPrint: now}
}

func (p *progress) update(done int, extra string) {
	now := time.Now()
	interval := 10 * time.Second
	if p.bar {
		interval = 200 * time.Millisecond
	}
	if now.Sub(p.lastPrint) < interval && done < p.total {
		return
	}
	p.lastPrint = now
	el := now.Sub(p.start).Seconds()
	rate := float64(done) / max(el, 1e-9)
	eta := time.Duration(float64(p.total-done)/max(rate, 1e-9)) * time.Second
	if p.bar {
		const width = 30
		fill := width * done / max(p.total, 1)
		fmt.Fprintf(p.w, "\r%s [%s%s] %3d%% %6.0f img/s ETA %s %s ", p.label, strings.Repeat("=", fill), strings.Repeat(" ", width-fill),
			100*done/max(p.total, 1), rate, eta.Round(time.Second), extra)
		p.everDrawn = true
		return
	}
	fmt.Fprintf(p.w, "%s: %d/%d images (%d%%), %.0f img/s, ETA %s, %s\n", p.label, done, p.total, 100*done/max(p.total, 1), rate, eta.Round(time.Second), extra)
}

func (p *progress) finish() {
	if p.bar && p.everDrawn {
		fmt.Fprintln(p.w)
	}
}
