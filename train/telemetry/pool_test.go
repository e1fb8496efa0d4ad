package telemetry

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPoolValues checks every pooled value against the maximum over its
// window, and the header's Pooling, for windows that divide the log and
// windows that leave a short last one.
func TestPoolValues(t *testing.T) {
	h := testHeader()
	recs := testRecords(h, 23, 5)
	g := &Log{Header: h, Records: recs}
	for _, w := range []int{2, 3, 5, 23, 40} {
		p, err := g.Pool(w)
		if err != nil {
			t.Fatal(err)
		}
		want := (len(recs) + w - 1) / w
		if len(p.Records) != want || p.Header.Pool == nil || *p.Header.Pool != (Pooling{Window: w, First: recs[0].Step, Last: recs[len(recs)-1].Step, Records: len(recs)}) {
			t.Fatalf("window %d: %d records, pool %+v; want %d records", w, len(p.Records), p.Header.Pool, want)
		}
		if g.Header.Pool != nil {
			t.Fatal("Pool changed its source's header")
		}
		for k, r := range p.Records {
			win := recs[k*w : min(k*w+w, len(recs))]
			if r.Step != win[0].Step || r.Epoch != win[0].Epoch {
				t.Fatalf("window %d record %d: step %d epoch %d, want %d %d", w, k, r.Step, r.Epoch, win[0].Step, win[0].Epoch)
			}
			for l := range r.MaxNorm {
				for i, v := range r.MaxNorm[l] {
					m := float32(0)
					for _, s := range win {
						m = max(m, s.MaxNorm[l][i])
					}
					if v != m {
						t.Fatalf("window %d record %d max_norm[%d][%d] = %g, want %g", w, k, l, i, v, m)
					}
				}
			}
			for l := range r.GradW {
				for i, v := range r.GradW[l] {
					m := float32(0)
					for _, s := range win {
						m = max(m, s.GradW[l][i])
					}
					if v != m {
						t.Fatalf("window %d record %d grad_w[%d][%d] = %g, want %g", w, k, l, i, v, m)
					}
				}
			}
		}
	}
	if p, err := g.Pool(1); err != nil || p != g {
		t.Fatalf("Pool(1) = %p, %v; want the log itself", p, err)
	}
	if _, err := g.Pool(0); err == nil {
		t.Fatal("Pool(0): no error")
	}
	p, _ := g.Pool(2)
	if _, err := p.Pool(2); err == nil {
		t.Fatal("pooling a pooled log: no error")
	}
}

// TestPoolDark checks on random logs that the dark capsules of a pooled log
// are exactly those of its source whose dark stretch covers the last
// minRecords windows, with Since the first step of the earliest window the
// stretch covers whole.
func TestPoolDark(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	const theta = 0.1
	for trial := 0; trial < 200; trial++ {
		n, caps := 1+rng.IntN(60), 1+rng.IntN(6)
		series := make([][]float32, caps)
		for i := range series {
			darkFrom := rng.IntN(n + 1) // dark from record darkFrom on, with noise before
			for k := 0; k < n; k++ {
				v := 0.05 + 0.9*rng.Float32()
				if k >= darkFrom || rng.IntN(3) == 0 {
					v = 0.099 * rng.Float32()
				}
				series[i] = append(series[i], v)
			}
		}
		g := darkLog(series)
		w := 2 + rng.IntN(7)
		p, err := g.Pool(w)
		if err != nil {
			t.Fatal(err)
		}
		m := 1 + rng.IntN(3)
		got, err := p.DarkCapsules(theta, m)
		if err != nil {
			t.Fatal(err)
		}
		var want []Dark
		for i, s := range series {
			k := n // the source's dark stretch is records k..n-1
			for k > 0 && s[k-1] < theta {
				k--
			}
			first := (k + w - 1) / w // first window entirely in the stretch
			windows := len(p.Records) - first
			if windows < m {
				continue
			}
			peak := float32(0)
			for _, v := range s[first*w:] {
				peak = max(peak, v)
			}
			want = append(want, Dark{Layer: 0, Capsule: i, Since: g.Records[first*w].Step, Epoch: g.Records[first*w].Epoch, Records: windows, Peak: peak})
		}
		if len(got) != len(want) {
			t.Fatalf("trial %d (n %d, window %d, min %d): %d dark, want %d: %+v vs %+v", trial, n, w, m, len(got), len(want), got, want)
		}
		for j := range got {
			if got[j] != want[j] {
				t.Fatalf("trial %d: dark %d = %+v, want %+v", trial, j, got[j], want[j])
			}
		}
	}
}

// TestPoolFile pools a file into a gzip file both parsers read back with
// the pooling in its header, refuses to pool a file into itself, and a
// pooled log refuses to be resumed.
func TestPoolFile(t *testing.T) {
	dir := t.TempDir()
	h := testHeader()
	recs := testRecords(h, 50, 3)
	writeFile(t, dir, h, recs)
	src := filepath.Join(dir, FileName)
	before, _ := os.ReadFile(src)
	if _, err := PoolFile(src, src, 10); err == nil || !strings.Contains(err.Error(), "is the file to pool") {
		t.Fatalf("pooling a file into itself: %v", err)
	}
	out := t.TempDir()
	dst := filepath.Join(out, GzipName)
	p, err := PoolFile(src, dst, 12)
	if err != nil {
		t.Fatal(err)
	}
	if p.Header.Pool.Window != 5 || len(p.Records) != 10 {
		t.Fatalf("pooled into %d records of window %d, want 10 of 5", len(p.Records), p.Header.Pool.Window)
	}
	back, err := ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if !bitsEqual(back, p) {
		t.Fatal("the pooled file does not read back as the pooled log")
	}
	var buf bytes.Buffer
	if err := p.Write(&buf); err != nil {
		t.Fatal(err)
	}
	j, s, ej, es := readBoth(buf.Bytes())
	if ej != nil || es != nil || !bitsEqual(j, p) || !bitsEqual(s, p) {
		t.Fatalf("the parsers disagree on a pooled log: %v, %v", ej, es)
	}
	if after, _ := os.ReadFile(src); !bytes.Equal(before, after) {
		t.Fatal("PoolFile changed its source")
	}
	// A pooled log in a run directory is not continued, nor replaced.
	if err := os.WriteFile(filepath.Join(out, FileName), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Resume(out, h, 100, Plain); !errors.Is(err, errPooled) {
		t.Fatalf("Resume of a pooled log: %v, want errPooled", err)
	}
	if after, _ := os.ReadFile(filepath.Join(out, FileName)); !bytes.Equal(after, buf.Bytes()) {
		t.Fatal("Resume changed a pooled log")
	}
}

// TestPoolHostileHeader: a pooling out of range is a one-line error.
func TestPoolHostileHeader(t *testing.T) {
	for _, pool := range []string{`{"window":0,"first":1,"last":3,"records":3}`, `{"window":2,"first":0,"last":3,"records":3}`, `{"window":2,"first":1,"last":3,"records":-1}`, `{"window":1e30,"first":1,"last":3,"records":3}`, `{"window":2,"first":1,"last":3,"records":3,"x":1}`, `{"window":2,"first":5,"last":3,"records":3}`, `{"window":2,"first":1,"records":3}`} {
		line := `{"format":"capstan-telemetry/1","model":"m","batch":1,"layers":[{"name":"primary","n":1,"d":1},{"name":"caps.0","n":1,"d":1}],"pool":` + pool + "}\n"
		j, s, ej, es := readBoth([]byte(line))
		if ej == nil || es == nil || j != nil || s != nil || strings.Contains(ej.Error(), "\n") {
			t.Errorf("pool %s: read without error (%v, %v)", pool, ej, es)
		}
	}
}
