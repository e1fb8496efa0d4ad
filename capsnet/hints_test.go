package capsnet

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet/safetensors"
)

// TestUnknownModelHint checks that the error of an unknown model lists
// every named preset and the values of n, d and L the grid presets
// deep-nN-dD-LL take, as the presets table holds them.
func TestUnknownModelHint(t *testing.T) {
	_, err := LoadConfig("no-such-model")
	if err == nil {
		t.Fatal("LoadConfig(no-such-model) succeeded")
	}
	msg := err.Error()
	grid := regexp.MustCompile(`^deep-n(\d+)-d(\d+)-L(\d+)(-[a-z-]+)?$`)
	vals := [3][]int{}
	for _, name := range PresetNames() {
		m := grid.FindStringSubmatch(name)
		if m == nil {
			if !regexp.MustCompile(`(^|[ (])` + regexp.QuoteMeta(name) + `[,;)]`).MatchString(msg) {
				t.Errorf("preset %s missing from %q", name, msg)
			}
			continue
		}
		for i := range vals {
			v, _ := strconv.Atoi(m[i+1])
			if !slices.Contains(vals[i], v) {
				vals[i] = append(vals[i], v)
			}
		}
	}
	for i, axis := range []string{"n", "d", "L"} {
		slices.Sort(vals[i])
		s := make([]string, len(vals[i]))
		for k, v := range vals[i] {
			s[k] = strconv.Itoa(v)
		}
		list := axis + " " + strings.Join(s, ", ")
		span := fmt.Sprintf("%s %d to %d", axis, vals[i][0], vals[i][len(vals[i])-1])
		if !strings.Contains(msg, list) && !strings.Contains(msg, span) {
			t.Errorf("grid values %q missing from %q", list, msg)
		}
	}
}

// TestCheckpointNotAFile checks that a directory given as a checkpoint is
// refused as a directory (naming the run's checkpoint for a run
// directory), not read as a truncated file, and that an optimizer state
// is refused as one, not as a state dict without a model.
func TestCheckpointNotAFile(t *testing.T) {
	run := t.TempDir()
	p, err := NewParams(Presets()["tiny-sabour"])
	if err != nil {
		t.Fatal(err)
	}
	p.Init(1)
	ckPath := filepath.Join(run, "checkpoint.safetensors")
	if err := p.SaveCheckpoint(ckPath, nil); err != nil {
		t.Fatal(err)
	}
	opt := map[string]safetensors.Tensor{}
	for _, q := range p.List {
		opt["adam.m."+q.Name] = safetensors.Tensor{Shape: []int{q.Buf.Len()}, Data: make([]float32, q.Buf.Len())}
		opt["adam.v."+q.Name] = safetensors.Tensor{Shape: []int{q.Buf.Len()}, Data: make([]float32, q.Buf.Len())}
	}
	optPath := filepath.Join(run, "optimizer-12.safetensors")
	if err := safetensors.Write(optPath, opt, map[string]string{"epoch": "1", "step": "12", "batch": "0"}); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	for _, tc := range []struct {
		path string
		want []string
	}{
		{run, []string{run + " is a directory", "give " + ckPath}},
		{empty, []string{empty + " is a directory"}},
		{optPath, []string{"is an optimizer state", "step 12", "not a checkpoint", ckPath}},
	} {
		_, err := ReadCheckpoint(tc.path)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("ReadCheckpoint(%s) = %v; want %q", tc.path, err, w)
			}
		}
		if err != nil && strings.Contains(err.Error(), "truncated") {
			t.Errorf("ReadCheckpoint(%s) = %v: not truncated", tc.path, err)
		}
	}
	if _, err := ReadCheckpoint(ckPath); err != nil {
		t.Errorf("ReadCheckpoint(%s) = %v", ckPath, err)
	}
	if _, err := os.Stat(ckPath); err != nil {
		t.Fatal(err)
	}
}
