package train

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/kernels"
	"github.com/capstan-ml/capstan/train/telemetry"
)

// readTelemetry parses a run directory's telemetry file (telemetry.Find)
// and returns it with the file's bytes.
func readTelemetry(t *testing.T, dir string) (*telemetry.Log, []byte) {
	t.Helper()
	path, err := telemetry.Find(dir)
	if err != nil || path == "" {
		t.Fatalf("no telemetry file in %s: %v", dir, err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := telemetry.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return l, raw
}

// TestTelemetryRun: a run with Telemetry writes one record per step with
// the net's shapes, and a run interrupted anywhere and resumed writes the
// same file byte for byte, as does one killed after steps past its
// checkpoint (records after it, a torn line or a truncated gzip member);
// in either form (the gzip file, the default, and the plain one).
func TestTelemetryRun(t *testing.T) {
	for _, form := range []telemetry.Form{telemetry.Gzip, telemetry.Plain} {
		t.Run(form.String(), func(t *testing.T) { testTelemetryRun(t, form) })
	}
}

func testTelemetryRun(t *testing.T, form telemetry.Form) {
	base := t.TempDir()
	ref := filepath.Join(base, "ref")
	o := tinyOptions(t, ref)
	o.Telemetry, o.TelemetryForm = true, form
	if _, err := os.Stat(filepath.Join(ref, form.Name())); err == nil {
		t.Fatal("the run directory exists before the run")
	}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(ref, form.Name())); err != nil {
		t.Fatalf("the %s form: %v", form, err)
	}
	l, refRaw := readTelemetry(t, ref)
	p, _ := capsnet.NewParams(o.Model)
	n, _ := capsnet.NewInferenceNet(p, 1)
	if len(l.Header.Layers) != len(n.Layers()) || l.Header.Model != "tiny-deep" || l.Header.Batch != 16 {
		t.Fatalf("header %+v, want the layers %+v", l.Header, n.Layers())
	}
	for i, L := range n.Layers() {
		if h := l.Header.Layers[i]; h.Name != L.Name || h.N != L.N || h.D != L.D {
			t.Errorf("header layer %d is %+v, the net's %+v", i, h, L)
		}
	}
	if len(l.Records) != 12 { // 2 epochs of 96/16 steps
		t.Fatalf("%d records, want 12", len(l.Records))
	}
	for k, r := range l.Records {
		if r.Step != k+1 || r.Epoch != 1+k/6 {
			t.Errorf("record %d: epoch %d step %d, want %d and %d", k, r.Epoch, r.Step, 1+k/6, k+1)
		}
		nonzero := 0
		for _, row := range append(r.MaxNorm, r.GradW...) {
			for _, v := range row {
				if v > 0 {
					nonzero++
				}
			}
		}
		if nonzero == 0 {
			t.Errorf("record %d holds only zeros", k)
		}
		if len(r.WNorm) != len(r.GradW) {
			t.Errorf("record %d: %d w_norm rows, want %d", k, len(r.WNorm), len(r.GradW))
		}
	}
	for _, k := range []int{1, 6, 8} {
		dir := filepath.Join(base, fmt.Sprint(k))
		io := tinyOptions(t, dir)
		io.Telemetry, io.TelemetryForm = true, form
		runInterrupted(t, io, k)
		io.Resume = dir
		if _, err := Run(context.Background(), io); err != nil {
			t.Fatal(err)
		}
		// The interrupted run's checkpoint closed a gzip member where the
		// uninterrupted run's has none: the same text, in other members.
		if _, raw := readTelemetry(t, dir); string(gunzip(t, raw)) != string(gunzip(t, refRaw)) {
			t.Errorf("interrupted after step %d and resumed: the telemetry file differs from the uninterrupted run's", k)
		}
	}
	// Killed after step 8 with its checkpoint at step 6: records 7 and 8
	// and a torn line are in the file (plain), or a truncated member.
	dir := filepath.Join(base, "killed")
	o1 := tinyOptions(t, dir)
	o1.Telemetry, o1.Epochs, o1.TelemetryForm = true, 1, form
	if _, err := Run(context.Background(), o1); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, form.Name())
	after, _ := os.ReadFile(path)
	extra := refRaw[len(after):]
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(extra[:len(extra)/2])
	f.Close()
	o1.Epochs, o1.Resume = 2, dir
	if _, err := Run(context.Background(), o1); err != nil {
		t.Fatal(err)
	}
	if _, raw := readTelemetry(t, dir); string(raw) != string(refRaw) {
		t.Error("resumed after records past the checkpoint: the telemetry file differs from the uninterrupted run's")
	}
	// A fresh run over the directory (Overwrite) starts a fresh file.
	o1.Resume, o1.Epochs, o1.Overwrite = "", 1, true
	if _, err := Run(context.Background(), o1); err != nil {
		t.Fatal(err)
	}
	if l, _ := readTelemetry(t, dir); len(l.Records) != 6 {
		t.Errorf("a fresh run of one epoch over the directory left %d records, want 6", len(l.Records))
	}
}

// gunzip decompresses b when it is gzip (every member), else returns it.
func gunzip(t *testing.T, b []byte) []byte {
	t.Helper()
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		return b
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return must(io.ReadAll(zr))
}

func oneEpochTelemetry(t *testing.T, dir string) Options {
	t.Helper()
	o := tinyOptions(t, dir)
	o.Telemetry, o.Epochs = true, 1
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestTelemetryValues checks the collected figures against the net's own
// accessors: with one replica, the norms' maxima of Capsules and the
// Frobenius norms of VotesGrad after BackwardMargin, bitwise; with two
// replicas (each the mean over its half of the batch), the same figures
// within rounding: the replicas' margin gradients are combined as the
// whole batch's.
func TestTelemetryValues(t *testing.T) {
	cfg := capsnet.Presets()["tiny-deep"]
	const batch = 8
	x := make([]float32, batch*28*28)
	for i := range x {
		x[i] = float32(i%17) / 17
	}
	labels := []int{0, 1, 2, 0, 1, 2, 1, 0}
	step := func(threads int) telemetry.Record {
		p, _ := capsnet.NewParams(cfg)
		p.Init(3)
		tr, err := NewTrainer(p, batch, threads, kernels.DefaultAdamParams())
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		tr.SetTelemetry(true)
		if _, _, err := tr.TrainStep(x, labels, 1e-3); err != nil {
			t.Fatal(err)
		}
		rec := tr.Telemetry()
		if rec == nil || rec.Step != 1 {
			t.Fatalf("no record after a collecting step: %v", rec)
		}
		tr.SetTelemetry(false)
		if _, _, err := tr.TrainStep(x, labels, 1e-3); err != nil || tr.Telemetry() != nil {
			t.Fatalf("a step without telemetry left a record (%v)", err)
		}
		var out telemetry.Record
		for _, row := range rec.MaxNorm {
			out.MaxNorm = append(out.MaxNorm, append([]float32(nil), row...))
		}
		for _, row := range rec.GradW {
			out.GradW = append(out.GradW, append([]float32(nil), row...))
		}
		return out
	}
	one, two := step(1), step(2)

	// Direct: one net over the whole batch, through the accessors.
	p, _ := capsnet.NewParams(cfg)
	p.Init(3)
	n, err := capsnet.NewNet(p, batch)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Forward(x, labels); err != nil {
		t.Fatal(err)
	}
	for l := range n.Layers() {
		v, sh, _ := n.Capsules(l)
		for i := 0; i < sh.N; i++ {
			m := float32(0)
			for b := 0; b < sh.B; b++ {
				s := float32(0)
				for k := 0; k < sh.D; k++ {
					s += sh.At(v, b, i, k) * sh.At(v, b, i, k)
				}
				m = max(m, s)
			}
			if want := float32(math.Sqrt(float64(m))); one.MaxNorm[l][i] != want || !close32(two.MaxNorm[l][i], want) {
				t.Errorf("max norm of layer %d capsule %d: %v (1 replica), %v (2), want %v", l, i, one.MaxNorm[l][i], two.MaxNorm[l][i], want)
			}
		}
	}
	if err := n.BackwardMargin(); err != nil {
		t.Fatal(err)
	}
	for l := 1; l < len(n.Layers()); l++ {
		g, sh, _ := n.VotesGrad(l)
		norms := matrixNorms(g, sh)
		for j := 0; j < sh.NOut; j++ {
			for i := 0; i < sh.NIn; i++ {
				want := norms[j*sh.NIn+i]
				if got := one.GradW[l-1][j*sh.NIn+i]; got != want || !close32(two.GradW[l-1][j*sh.NIn+i], want) {
					t.Errorf("‖∂L_m/∂W[%d,%d]‖ of layer %d: %v (1 replica), %v (2), want %v", j, i, l, got, two.GradW[l-1][j*sh.NIn+i], want)
				}
			}
		}
	}
}

// TestTelemetryWNorm: w_norm is ‖W[j,i]‖_F of the votes matrices the
// step's forward pass used, computed here from the parameters (Params.List)
// before each step, bitwise; the optimizer has changed them after it.
func TestTelemetryWNorm(t *testing.T) {
	cfg := capsnet.Presets()["tiny-deep"]
	const batch = 8
	x := make([]float32, batch*28*28)
	for i := range x {
		x[i] = float32(i%13) / 13
	}
	labels := []int{0, 1, 2, 0, 1, 2, 1, 0}
	p, _ := capsnet.NewParams(cfg)
	p.Init(5)
	tr, err := NewTrainer(p, batch, 2, kernels.DefaultAdamParams())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	tr.SetTelemetry(true)
	var votes []*capsnet.Param
	for _, q := range p.List {
		if q.Role == capsnet.RoleVotes {
			votes = append(votes, q)
		}
	}
	if len(votes) != len(tr.Reps[0].Layers())-1 {
		t.Fatalf("%d votes parameters for %d routing layers", len(votes), len(tr.Reps[0].Layers())-1)
	}
	norms := func() [][]float32 {
		var out [][]float32
		for l, q := range votes {
			_, sh, _ := tr.Reps[0].Votes(l + 1)
			out = append(out, matrixNorms(q.Buf.Data(), sh))
		}
		return out
	}
	for step := 1; step <= 3; step++ {
		want := norms()
		if _, _, err := tr.TrainStep(x, labels, 1e-2); err != nil {
			t.Fatal(err)
		}
		rec := tr.Telemetry()
		if len(rec.WNorm) != len(want) {
			t.Fatalf("step %d: %d w_norm rows, want %d", step, len(rec.WNorm), len(want))
		}
		changed := false
		after := norms()
		for l := range want {
			for k, v := range want[l] {
				if math.Float32bits(rec.WNorm[l][k]) != math.Float32bits(v) {
					t.Fatalf("step %d: w_norm[%d][%d] = %v, the parameters before the step give %v", step, l, k, rec.WNorm[l][k], v)
				}
				changed = changed || after[l][k] != v
			}
		}
		if !changed {
			t.Fatalf("step %d did not change the votes matrices: the test cannot tell before from after", step)
		}
	}
}

// matrixNorms returns ‖w[j,i]‖_F at j·NIn+i for votes matrices (or their
// gradients) w of layout sh, element by element through sh.At, summed in
// float64.
func matrixNorms(w []float32, sh capsnet.VotesShape) []float32 {
	out := make([]float32, sh.NOut*sh.NIn)
	for j := 0; j < sh.NOut; j++ {
		for i := 0; i < sh.NIn; i++ {
			s := 0.0
			for r := 0; r < sh.DOut; r++ {
				for c := 0; c < sh.DIn; c++ {
					v := float64(sh.At(w, j, i, r, c))
					s += v * v
				}
			}
			out[j*sh.NIn+i] = float32(math.Sqrt(s))
		}
	}
	return out
}

func close32(a, b float32) bool {
	return math.Abs(float64(a-b)) <= 1e-4*math.Abs(float64(b))+1e-9
}

// TestTelemetryStepNoAllocs: a training step that collects telemetry and
// writes its record allocates nothing.
func TestTelemetryStepNoAllocs(t *testing.T) {
	tr, x, labels := tinyTrainer(t)
	defer tr.Close()
	tr.SetTelemetry(true)
	w, err := telemetry.Create(t.TempDir(), telemetryHeader("tiny-deep", 8, tr.Reps[0]), telemetry.Gzip)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	step := func() {
		if _, _, err := tr.TrainStep(x, labels, 1e-3); err != nil {
			t.Fatal(err)
		}
		rec := tr.Telemetry()
		rec.Epoch = 1
		if err := w.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	step()
	if a := testing.AllocsPerRun(5, step); a != 0 {
		t.Errorf("a training step with telemetry allocates %.1f times", a)
	}
}

// TestTelemetryRunID: a run's checkpoints and telemetry header carry the
// same run id (metadata "run"), which its resumes keep and which tells a
// run of another seed apart, so a resume never continues another run's
// records: resuming the first run in a directory whose telemetry file a
// run of another seed has since started gives a fresh file, not the other
// run's records followed by this run's.
func TestTelemetryRunID(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	o := tinyOptions(t, a)
	o.Telemetry, o.Epochs = true, 1
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	ckA, err := ReadResume(a)
	if err != nil {
		t.Fatal(err)
	}
	runA := ckA.Meta["run"]
	if l, _ := readTelemetry(t, a); runA == "" || l.Header.Run != runA {
		t.Fatalf("checkpoint run %q, telemetry header run %q: want the same, not empty", runA, l.Header.Run)
	}
	// Another seed in b: another id.
	ob := tinyOptions(t, b)
	ob.Telemetry, ob.Epochs, ob.Seed = true, 1, 2
	if _, err := Run(context.Background(), ob); err != nil {
		t.Fatal(err)
	}
	lb, _ := readTelemetry(t, b)
	if lb.Header.Run == runA || lb.Header.Run == "" {
		t.Fatalf("seeds 1 and 2 have run ids %q and %q", runA, lb.Header.Run)
	}
	// b's telemetry file in a (a run of seed 2 that started there and
	// was killed before its first checkpoint), then a resumes.
	if err := os.WriteFile(filepath.Join(a, telemetry.GzipName), must(os.ReadFile(filepath.Join(b, telemetry.GzipName))), 0o644); err != nil {
		t.Fatal(err)
	}
	o.Epochs, o.Resume = 2, a
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	l, _ := readTelemetry(t, a)
	if l.Header.Run != runA || len(l.Records) != 6 || l.Records[0].Step != 7 {
		t.Errorf("after resuming over another run's telemetry: run %q (want %q), %d records from step %d (want 6 from step 7)",
			l.Header.Run, runA, len(l.Records), l.Records[0].Step)
	}
	ck, err := ReadResume(a)
	if err != nil {
		t.Fatal(err)
	}
	if ck.Meta["run"] != runA {
		t.Errorf("the resumed run's checkpoint has run %q, want %q", ck.Meta["run"], runA)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestTelemetryResumeGzip: a run directory committed with its telemetry
// compressed as one gzip member (telemetry.ndjson.gz made by gzip from a
// plain file, which is absent: bench/repro's form) resumes in place with
// every record of the steps before the checkpoint: the file decodes to an
// uninterrupted run's.
func TestTelemetryResumeGzip(t *testing.T) {
	base := t.TempDir()
	a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
	o := tinyOptions(t, a)
	o.Telemetry, o.Epochs, o.TelemetryForm = true, 2, telemetry.Plain
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	whole := must(os.ReadFile(filepath.Join(a, telemetry.FileName)))
	ob := tinyOptions(t, b)
	ob.Telemetry, ob.Epochs, ob.TelemetryForm = true, 1, telemetry.Plain
	if _, err := Run(context.Background(), ob); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(b, telemetry.FileName)
	gz := filepath.Join(b, telemetry.GzipName)
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write(must(os.ReadFile(plain)))
	zw.Close()
	if err := os.WriteFile(gz, zb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(plain); err != nil {
		t.Fatal(err)
	}
	ob.Epochs, ob.Resume = 2, b
	if _, err := Run(context.Background(), ob); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(plain); err == nil {
		t.Errorf("the resume unpacked %s", telemetry.GzipName)
	}
	if got := gunzip(t, must(os.ReadFile(gz))); !bytes.Equal(got, whole) {
		t.Errorf("resumed from %s: %d bytes of telemetry, want the uninterrupted run's %d", telemetry.GzipName, len(got), len(whole))
	}
}
