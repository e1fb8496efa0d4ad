package train

import (
	"fmt"
	"strconv"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/train/data"
)

// Recipe is what a run trains, as tools/train's flags and a sweep task
// (train/sweep) name it: a model, a data set by name, and the plan. Its
// Options method loads the data and turns it into Options the same way for
// both, so a sweep task trains exactly what tools/train would.
type Recipe struct {
	Model capsnet.Config
	// Data is a data.DataSets name, DataDir where to find it ("": the
	// cache; never for the embedded data).
	Data, DataDir string
	// ValImages is the validation split held out of the training set
	// (0: data.ValidationSize(Data)).
	ValImages int
	// Shift is the random shift of Sabour's augmentation, for models that
	// take the data's own size; DefaultShift when ShiftDefault is set
	// (then ignored for models on a larger canvas, where a shift given
	// explicitly is an error).
	Shift        int
	ShiftDefault bool
	// Epochs and Batch: 0 takes the data set's defaults (DefaultPlan).
	Epochs, Batch int
}

// DefaultShift is the random shift (pixels) of Sabour's augmentation when
// none is given.
const DefaultShift = 2

// DefaultPlan returns the default epochs and batch size for a data set,
// from the data-set table (data.Sets): 5 epochs of 64 for the embedded
// subset (a demonstration that trains in minutes), 30 epochs of the
// paper's 512 otherwise (and for a name not in the table).
func DefaultPlan(dataName string) (epochs, batch int) {
	if s := data.Lookup(dataName); s != nil && s.Epochs > 0 && s.Batch > 0 {
		return s.Epochs, s.Batch
	}
	return 30, 512
}

// Options loads the recipe's data set (its training split without the
// validation images, the validation split, the test split) and returns the
// Options that train the model on it: the placement by the model's input
// size (digits at a random position on the model's larger canvas for
// training and centred for validation, the paper's recipe; else the
// random shift), the epochs and batch (DefaultPlan unless set), and the
// provenance "data" and "val_images". The rest is DefaultOptions'; the
// caller sets Threads, Seed, TargetAcc, OutDir, Resume, Log and more
// provenance. Errors in a field's value are *FieldError ("Data",
// "ValImages" or "Shift").
func (r Recipe) Options() (Options, error) {
	cfg := r.Model
	nVal := r.ValImages
	if nVal == 0 {
		nVal = data.ValidationSize(r.Data)
	}
	splits, err := data.LoadSplits(r.Data, r.DataDir, nVal)
	if err != nil {
		if r.ValImages != 0 { // the split asked for may not fit the data
			return Options{}, &FieldError{"ValImages", r.ValImages, err}
		}
		return Options{}, &FieldError{"Data", r.Data, err}
	}
	tr := splits.Train
	o := DefaultOptions(cfg)
	o.Train, o.Val, o.Test = tr, splits.Val, splits.Test
	shift := r.Shift
	if r.ShiftDefault {
		shift = DefaultShift
	}
	if cfg.Input[1] != tr.H || cfg.Input[2] != tr.W {
		o.TrainPlacement, o.ValPlacement, o.Canvas = data.PlacementRandom, data.PlacementCenter, cfg.Input[1]
		if shift != 0 && !r.ShiftDefault {
			return Options{}, fieldErr("Shift", shift, "model %s takes %d×%d images, %s has %d×%d: its digits are placed at random on the canvas, not shifted (leave the shift unset)",
				cfg.Name, cfg.Input[1], cfg.Input[2], tr.Name, tr.H, tr.W)
		}
	} else if shift != 0 {
		if shift < 0 || shift >= min(tr.H, tr.W) {
			return Options{}, fieldErr("Shift", shift, "want 0 to %d pixels for %d×%d images", min(tr.H, tr.W)-1, tr.H, tr.W)
		}
		o.TrainPlacement, o.MaxShift = data.PlacementShift, shift
	}
	o.Epochs, o.Batch = DefaultPlan(r.Data)
	if r.Epochs != 0 {
		o.Epochs = r.Epochs
	}
	if r.Batch != 0 {
		o.Batch = r.Batch
	}
	o.Provenance = map[string]string{"data": r.Data, "val_images": strconv.Itoa(splits.Val.N)}
	return o, nil
}

// PlacementHint describes how o places its training images (a log line).
func (o Options) PlacementHint() string {
	switch o.TrainPlacement {
	case data.PlacementShift:
		return fmt.Sprintf("shift ±%d px", o.MaxShift)
	case data.PlacementRandom:
		return fmt.Sprintf("random on %d×%d", o.Canvas, o.Canvas)
	}
	return o.TrainPlacement.String()
}
