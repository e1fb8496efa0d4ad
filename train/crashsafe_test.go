package train

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/safetensors"
)

// TestInterruptMidEpochResumesExactly cancels the run (Ctrl-C, SIGTERM)
// after step k of an epoch, for several k: the checkpoint records the
// position and the resumed run ends bit-identical to an uninterrupted one,
// with each epoch once in metrics.ndjson.
func TestInterruptMidEpochResumesExactly(t *testing.T) {
	base := t.TempDir()
	ref := filepath.Join(base, "ref")
	o := tinyOptions(t, ref)
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	refP := paramsOf(t, ref)
	for _, k := range []int{1, 5, 6, 8} { // 6 steps per epoch: inside epoch 1, its last step, inside epoch 2
		dir := filepath.Join(base, fmt.Sprint(k))
		res := runInterrupted(t, tinyOptions(t, dir), k)
		if !res.Interrupted {
			t.Fatalf("k=%d: not interrupted", k)
		}
		ck, err := ReadResume(dir)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprint(k % 6); ck.Meta["batch"] != want {
			t.Errorf("k=%d: checkpoint after batch %q of its epoch, want %s", k, ck.Meta["batch"], want)
		}
		ro := tinyOptions(t, dir)
		ro.Resume = dir
		if _, err := Run(context.Background(), ro); err != nil {
			t.Fatal(err)
		}
		if name, ok := sameTensors(refP, paramsOf(t, dir)); !ok {
			t.Fatalf("interrupted after step %d and resumed: %s differs from the uninterrupted run", k, name)
		}
		raw, _ := os.ReadFile(filepath.Join(dir, MetricsName))
		if n := strings.Count(string(raw), "\n"); n != 2 || strings.Contains(string(raw), "interrupted") {
			t.Errorf("k=%d: metrics.ndjson after resume:\n%s", k, raw)
		}
	}
}

// runInterrupted runs o and cancels it (as Ctrl-C does) after its k-th
// training step.
func runInterrupted(t *testing.T, o Options, k int) *Result {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	steps := 0
	faultHook = func(p string) {
		if p == "step" {
			if steps++; steps == k {
				cancel()
			}
		}
	}
	defer func() { faultHook = nil }()
	res, err := Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestRunDirLocked: a second trainer on a directory in use is refused,
// with the holder's process id, and the directory is usable again once
// the holder is gone.
func TestRunDirLocked(t *testing.T) {
	dir := t.TempDir()
	held, err := openRunDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), tinyOptions(t, dir))
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "in use by another trainer") || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Fatalf("second trainer on a locked directory: %v", err)
	}
	held.close()
	oneEpoch(t, dir)
}

// TestStaleFilesRemoved: temporary files of killed writes and optimizer
// states no checkpoint names are removed when a run starts or resumes.
func TestStaleFilesRemoved(t *testing.T) {
	dir := t.TempDir()
	o := oneEpoch(t, dir)
	for _, n := range []string{".checkpoint.safetensors.tmp-123", ".optimizer-7.safetensors.tmp-9", "optimizer-999.safetensors"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("junk"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	o.Epochs, o.Resume = 2, dir
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	got := strings.Join(names, " ")
	if want := "checkpoint.safetensors lock metrics.ndjson optimizer-12.safetensors"; got != want {
		t.Errorf("run directory holds %q, want %q", got, want)
	}
}

// TestOtherModelRefused: a fresh run over a directory holding another
// model's run is refused (the message says how to proceed) unless
// Overwrite; so is the same model (TestSameModelNotStartedOver).
func TestOtherModelRefused(t *testing.T) {
	dir := t.TempDir()
	oneEpoch(t, dir)
	other := tinyOptions(t, dir)
	other.Epochs = 1
	other.Model = capsnet.Presets()["tiny-deep-uniform"]
	_, err := Run(context.Background(), other)
	if err == nil || !strings.Contains(err.Error(), "holds a run of model tiny-deep (epoch 1), not of tiny-deep-uniform") || !errors.Is(err, ErrOtherRun) {
		t.Fatalf("other model over a run: %v", err)
	}
	changed := tinyOptions(t, dir)
	changed.Epochs = 1
	changed.Model.Caps[0].Iters++
	if _, err := Run(context.Background(), changed); err == nil || !strings.Contains(err.Error(), "another configuration of model tiny-deep") {
		t.Fatalf("changed configuration over a run: %v", err)
	}
	junk := t.TempDir()
	if err := os.WriteFile(filepath.Join(junk, CheckpointName), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), tinyOptions(t, junk))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "OutDir" || fe.Value != junk || !errors.Is(err, ErrOtherRun) || !strings.Contains(err.Error(), "cannot be read") {
		t.Fatalf("a run over an unreadable checkpoint: %v", err)
	}
	other.Overwrite = true
	if _, err := Run(context.Background(), other); err != nil {
		t.Fatalf("with Overwrite: %v", err)
	}
	ck, err := ReadResume(dir)
	if err != nil || ck.Config.Name != "tiny-deep-uniform" {
		t.Fatalf("after overwrite: %v, model %q", err, ck.Config.Name)
	}
	again := other
	again.Overwrite = false
	if _, err := Run(context.Background(), again); !errors.Is(err, ErrOtherRun) || !strings.Contains(err.Error(), "holds a run of the same model tiny-deep-uniform (epoch 1): resume it") {
		t.Fatalf("same model again: %v", err)
	}
}

// TestBadOptimizerState: an optimizer file with NaN, negative second
// moments, a wrong step or a foreign tensor is refused on resume, naming
// the file and the tensor.
func TestBadOptimizerState(t *testing.T) {
	dir := t.TempDir()
	oneEpoch(t, dir)
	ck, err := ReadResume(dir)
	if err != nil {
		t.Fatal(err)
	}
	optPath := filepath.Join(dir, ck.Meta["optimizer"])
	good, err := safetensors.Read(optPath)
	if err != nil {
		t.Fatal(err)
	}
	name := "adam.v." + capsnet.Presets()["tiny-deep"].Caps[0].Name + ".W"
	for _, tc := range []struct {
		mod  func(f *safetensors.File)
		want string
	}{
		{func(f *safetensors.File) { f.Tensors[name].Data[3] = float32(math.NaN()) }, name + " element 3 is NaN"},
		{func(f *safetensors.File) { f.Tensors[name].Data[0] = -1 }, name + " element 0 is -1"},
		{func(f *safetensors.File) { f.Tensors[name].Data[1] = float32(math.Inf(1)) }, "element 1 is +Inf"},
		{func(f *safetensors.File) { f.Metadata["step"] = "5" }, "is from step 5 but the checkpoint from step 6"},
		{func(f *safetensors.File) {
			f.Tensors["adam.m.bogus"] = safetensors.Tensor{Shape: []int{1}, Data: []float32{0}}
		}, `unexpected tensor "adam.m.bogus"`},
		{func(f *safetensors.File) { delete(f.Tensors, name) }, name + " missing"},
	} {
		f := &safetensors.File{Tensors: map[string]safetensors.Tensor{}, Metadata: map[string]string{}}
		for k, v := range good.Tensors {
			f.Tensors[k] = safetensors.Tensor{Shape: v.Shape, Data: append([]float32{}, v.Data...)}
		}
		for k, v := range good.Metadata {
			f.Metadata[k] = v
		}
		tc.mod(f)
		if err := safetensors.Write(optPath, f.Tensors, f.Metadata); err != nil {
			t.Fatal(err)
		}
		r := tinyOptions(t, dir)
		r.Epochs, r.Resume = 2, dir
		_, err := Run(context.Background(), r)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), optPath) {
			t.Errorf("resume with a bad optimizer state: %v, want %q naming %s", err, tc.want, optPath)
		}
	}
}

// TestDiskFullKeepsCheckpoint trains into a small tmpfs, fills it, and
// checks that the next checkpoint fails with an error while the previous
// one stays intact and resumable; once space is back the run finishes
// bit-identical to an uninterrupted one. It needs root to mount a tmpfs
// and is skipped otherwise.
func TestDiskFullKeepsCheckpoint(t *testing.T) {
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs for the disk-full test (needs root): %v %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	dir := filepath.Join(mnt, "run")
	oneEpoch(t, dir)
	ck, err := ReadResume(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, ck.Meta["optimizer"]))
	if err != nil {
		t.Fatal(err)
	}
	// Fill the disk, then free room for the optimizer state only: the
	// checkpoint that would commit it cannot be written.
	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<16)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	size, _ := f.Seek(0, io.SeekCurrent)
	if err := f.Truncate(size - st.Size() - 64<<10); err != nil {
		t.Fatal(err)
	}
	f.Close()
	r := tinyOptions(t, dir)
	r.Epochs, r.Resume = 2, dir
	_, err = Run(context.Background(), r)
	if err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("checkpoint on a full disk: %v, want an error", err)
	}
	if ck2, err := ReadResume(dir); err != nil || ck2.Meta["epoch"] != "1" {
		t.Fatalf("previous checkpoint after the failed write: %v (epoch %q)", err, ck2.Meta["epoch"])
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temporary file left on the full disk: %s", e.Name())
		}
	}
	os.Remove(filler)
	if _, err := Run(context.Background(), r); err != nil {
		t.Fatalf("resume once space is back: %v", err)
	}
	ref := filepath.Join(t.TempDir(), "ref")
	if _, err := Run(context.Background(), tinyOptions(t, ref)); err != nil {
		t.Fatal(err)
	}
	if name, ok := sameTensors(paramsOf(t, ref), paramsOf(t, dir)); !ok {
		t.Fatalf("after the disk-full failure and resume: %s differs", name)
	}
}

// oneEpoch trains tinyOptions for one epoch into dir and returns the
// options it used.
func oneEpoch(t *testing.T, dir string) Options {
	t.Helper()
	o := tinyOptions(t, dir)
	o.Epochs = 1
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	return o
}
