package train

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet/safetensors"
)

// setMeta rewrites the checkpoint of run directory dir with its metadata
// key set to v (deleted when v is "").
func setMeta(t *testing.T, dir, key, v string) {
	t.Helper()
	path := filepath.Join(dir, CheckpointName)
	f, err := safetensors.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if v == "" {
		delete(f.Metadata, key)
	} else {
		f.Metadata[key] = v
	}
	if err := safetensors.Write(path, f.Tensors, f.Metadata); err != nil {
		t.Fatal(err)
	}
}

// exists reports whether path exists (a link included).
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// TestOptimizerMetaWithPathRefused: a checkpoint whose "optimizer"
// metadata is not a plain optimizer-STEP.safetensors name is refused by
// the finished path as by the training path, and no file is deleted.
func TestOptimizerMetaWithPathRefused(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "run")
	o := oneEpoch(t, dir)
	real := filepath.Join(dir, "optimizer-6.safetensors")
	if !exists(real) {
		t.Fatal("no optimizer-6.safetensors after one epoch")
	}
	outside := filepath.Join(base, "optimizer-1.safetensors")
	if err := os.WriteFile(outside, []byte("not the run's"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"../optimizer-1.safetensors", outside, "sub/optimizer-6.safetensors", "optimizer-x.safetensors", "..", "optimizer.safetensors"} {
		setMeta(t, dir, "optimizer", name)
		for _, epochs := range []int{1, 2} { // finished, then training on
			r := o
			r.Epochs, r.Resume = epochs, dir
			_, err := Run(context.Background(), r)
			if err == nil || !strings.Contains(err.Error(), "metadata optimizer") {
				t.Errorf("optimizer %q, %d epochs: %v, want a refusal naming the metadata", name, epochs, err)
			}
			if !exists(real) || !exists(outside) {
				t.Fatalf("optimizer %q, %d epochs: a file was deleted", name, epochs)
			}
		}
	}
}

// TestFinishedResumeKeepsOptimizer: resuming a finished run whose
// checkpoint predates the "optimizer" metadata (a legacy run) deletes no
// optimizer state: a later resume with more epochs may need it.
func TestFinishedResumeKeepsOptimizer(t *testing.T) {
	dir := t.TempDir()
	o := oneEpoch(t, dir)
	legacy := filepath.Join(dir, "optimizer.safetensors")
	if err := os.WriteFile(legacy, []byte("legacy"), 0o644); err != nil {
		t.Fatal(err)
	}
	setMeta(t, dir, "optimizer", "")
	r := o
	r.Resume = dir
	res, err := Run(context.Background(), r)
	if err != nil || res.Done != 1 {
		t.Fatalf("finished legacy run: %+v, %v", res, err)
	}
	for _, n := range []string{"optimizer-6.safetensors", "optimizer.safetensors"} {
		if !exists(filepath.Join(dir, n)) {
			t.Errorf("%s deleted by a resume with nothing to train", n)
		}
	}
}

// TestSameModelNotStartedOver: a fresh run of the same model over a
// finished run is refused without Overwrite (a *FieldError of OutDir
// wrapping ErrOtherRun that says to resume), and the run is untouched.
func TestSameModelNotStartedOver(t *testing.T) {
	dir := t.TempDir()
	o := oneEpoch(t, dir)
	before, err := os.ReadFile(filepath.Join(dir, CheckpointName))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Run(context.Background(), o)
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "OutDir" || !errors.Is(err, ErrOtherRun) || !strings.Contains(err.Error(), "resume it") {
		t.Fatalf("same model over a finished run: %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, CheckpointName))
	if string(after) != string(before) {
		t.Error("the refused run changed the checkpoint")
	}
	o.Overwrite = true
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatalf("with Overwrite: %v", err)
	}
}
