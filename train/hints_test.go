package train

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capstan-ml/capstan/capsnet"
)

// TestCheckResumeModel: a resumed run's model must be its checkpoint's;
// the error says which model the checkpoint holds.
func TestCheckResumeModel(t *testing.T) {
	presets := capsnet.Presets()
	ck := &capsnet.Checkpoint{Path: "run/checkpoint.safetensors", Config: presets["tiny-sabour"], Meta: map[string]string{"config": presets["tiny-sabour"].JSON()}}
	if err := CheckResumeModel(ck, presets["tiny-sabour"]); err != nil {
		t.Errorf("the checkpoint's own model: %v", err)
	}
	err := CheckResumeModel(ck, presets["deep"])
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "Model" || !errors.Is(err, ErrResumeModel) || !strings.Contains(err.Error(), "holds model tiny-sabour, not deep") {
		t.Errorf("another model: %v", err)
	}
	changed := presets["tiny-sabour"]
	changed.Loss.Recon = "mean"
	if err := CheckResumeModel(ck, changed); err == nil || !strings.Contains(err.Error(), "another configuration of model tiny-sabour") {
		t.Errorf("another configuration: %v", err)
	}
	if err := CheckResumeModel(&capsnet.Checkpoint{Path: "sd.safetensors", Meta: map[string]string{}}, presets["deep"]); err != nil {
		t.Errorf("a state dict without a config: %v", err)
	}
	// The checkpoint an error suggests is the one a run directory holds.
	if filepath.Base(filepath.Join("d", CheckpointName)) != capsnet.CheckpointFileName {
		t.Errorf("CheckpointName %q, capsnet.CheckpointFileName %q", CheckpointName, capsnet.CheckpointFileName)
	}
}
