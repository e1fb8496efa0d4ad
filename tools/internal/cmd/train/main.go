// Package train is the train command: tools/train (go run ./tools/train) and
// capstan train (tools/capstan) are thin wrappers of its Main. See
// tools/train for what it does. Inside it, train.X names the library package
// train that it imports (a package's own name is not in its scope).
package train

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/kernels"
	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/tools/internal/runout"
	"github.com/capstan-ml/capstan/train"
	"github.com/capstan-ml/capstan/train/data"
	"github.com/capstan-ml/capstan/train/telemetry"
)

// Main runs the train command with args (the arguments after its name) and
// returns its exit status; it prints on os.Stdout and os.Stderr. tools/train
// and capstan train both call it.
func Main(args []string) int {
	return cli.Exit(os.Stderr, "train", run(args))
}

const (
	summary = "train: trains a CapsNet on a data set, writing a checkpoint every epoch; usage: train [flags]"
	notes   = `Ctrl-C or SIGTERM finishes the current step, saves a checkpoint (resume it
with -resume: it goes on from that step) and exits; after kill -9 or a power
loss, -resume goes on from the last completed epoch. A run directory is locked
while a trainer uses it; one holding a run (any model, the same one included) is
refused unless -resume or -overwrite. Exit status: 0 done (or nothing left to train),
1 error (a file, model or data set), 2 bad flag, flag value or argument,
130 stopped by Ctrl-C (SIGINT) after saving, 143 stopped by SIGTERM after saving.
`
	maxEpochs = 1_000_000 // bounds -epochs: a typo, not a run
	// maxProfileSteps bounds -profile: a profile of more steps says no more.
	maxProfileSteps = 10_000
)

func run(args []string) error {
	f := newFlags()
	if err := f.parse(args); err != nil {
		return err
	}
	if f.given["profile"] || f.given["cpuprofile"] {
		return runProfile(f)
	}
	ck, err := f.resumed()
	if err != nil {
		return err
	}
	o, err := f.options(args, ck)
	if err != nil {
		return err
	}
	// Ctrl-C, and SIGTERM (what a cluster scheduler sends before killing a
	// job), stop training after the current step and a checkpoint; the
	// process then exits 128 + the signal's number.
	ctx, sig, stop := cli.NotifyContext(os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("capstan train: model %s on %s, %s (%d training, %d validation images held out, %d test images reported beside), %d epochs, batch %d, placement %s, kernels %s\n",
		o.Model.Name, *f.dataName, dataSource(*f.dataName, *f.dataDir), o.Train.N, o.Val.N, o.Test.N, o.Epochs, o.Batch, o.PlacementHint(), kernels.Impl())
	res, err := train.Run(ctx, o)
	if err != nil {
		return flagError(err, badValue(err))
	}
	if res.Interrupted {
		runout.Wrote(os.Stdout, o.OutDir)
		fmt.Printf("resume with -resume %s\n", cli.ShellQuote(o.OutDir))
		return cli.Interrupted{Signal: sig()}
	}
	report(res, o, *f.dataName)
	if res.Done == 0 { // else nothing was written
		runout.Wrote(os.Stdout, o.OutDir)
	}
	return nil
}

// flags are the command's flags.
type flags struct {
	fs                            *flag.FlagSet
	given                         map[string]bool // set on the command line (or by applyPlan)
	model, dataName, dataDir, out *string
	resume, impl, teleFmt         *string
	nVal, epochs, batch, threads  *int
	shift, profile                *int
	cpuprof                       *string
	lr, decay, wd, target, eps    *float64
	wdForm, wdGroups              *string
	seed                          *uint64
	overwrite, plain, tele        *bool
}

// newFlags defines the command's flags.
func newFlags() *flags {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	cli.SetUsage(fs, summary, notes)
	return &flags{
		fs:        fs,
		model:     fs.String("model", "sabour-small", "model: a preset ("+capsnet.PresetHint()+") or a JSON config file; with -resume the checkpoint's unless given"),
		dataName:  fs.String("data", "embedded", "data set: "+strings.Join(data.DataSets, ", ")),
		nVal:      fs.Int("val", 0, fmt.Sprintf("validation images held out of the training set (its last ones; -target stops on them, never on the test set, which is reported beside), 1 to the training set's size minus one (default: %d, %d for the embedded data; with -resume the checkpoint's)", data.ValidationImages, data.EmbeddedValidationImages)),
		dataDir:   fs.String("data-dir", "", "directory holding the data set, not for embedded (default: the cache, see ./build.sh data)"),
		epochs:    fs.Int("epochs", 0, fmt.Sprintf("epochs, 1 to %d (default: 5 for the embedded data, 30 otherwise)", maxEpochs)),
		batch:     fs.Int("batch", 0, fmt.Sprintf("batch size, 1 to %d (default: 64 for the embedded data, the paper's 512 otherwise)", capsnet.MaxBatch)),
		threads:   fs.Int("threads", min(runtime.NumCPU(), cli.MaxThreads), fmt.Sprintf("data-parallel replicas, 1 to %d (one per core)", cli.MaxThreads)),
		lr:        fs.Float64("lr", 1e-3, "initial learning rate, in (0, 1]"),
		decay:     fs.Float64("decay", 0.97, "learning-rate decay per epoch (the rate is multiplied by it after every epoch), in (0, 1]"),
		wd:        fs.Float64("weight-decay", 1e-6, "Adam weight decay, in [0, 1], for every parameter group -group-weight-decay does not name"),
		wdForm:    fs.String("weight-decay-form", "l2", "how Adam applies the weight decay: l2 (added to the gradient, which Adam then normalises: torch.optim.Adam, a Keras L2 regulariser) or decoupled (the weights shrink by 1 − lr·wd each step: AdamW)"),
		wdGroups:  fs.String("group-weight-decay", "", "weight decay of some parameter groups instead of -weight-decay, as GROUP=VALUE,… with groups "+strings.Join(capsnet.ParamGroups, ", ")+" (e.g. votes=1e-4,decoder=0)"),
		eps:       fs.Float64("adam-eps", train.DefaultAdamEps, "Adam's ε added to sqrt(v̂), in (0, 1] (Keras: 1e-7)"),
		target:    fs.Float64("target", 0, "stop when validation accuracy reaches this, in [0, 1] (e.g. 0.992; 0 = never)"),
		shift:     fs.Int("shift", 2, "random shift of up to this many pixels per axis, below the image size, when the model takes the data's own size (Sabour's augmentation; 0 = none)"),
		seed:      fs.Uint64("seed", 1, "random seed (initialisation, shuffling, placement)"),
		out:       fs.String("out", "runs/default", "output directory for checkpoint.safetensors, optimizer-STEP.safetensors, metrics.ndjson, lock (and telemetry.ndjson.gz); with -resume the resumed run's directory unless given"),
		overwrite: fs.Bool("overwrite", false, "start over in -out even when it holds a run, finished or partial, of any model, the same one included (refused otherwise)"),
		resume:    fs.String("resume", "", "continue from this run directory or checkpoint (with the checkpoint's model unless -model is given)"),
		impl:      fs.String("kernels", "", "force a kernel implementation: "+strings.Join(kernels.Available(), ", ")),
		plain:     fs.Bool("plain", false, "plain progress lines even on a terminal"),
		profile:   fs.Int("profile", 0, fmt.Sprintf("instead of training, time this many training steps (1 to %d) of -model at -batch (default 128) and -threads on a synthetic batch and print the per-operation profile: each step's time per image, MFLOP/img, GFLOP/s and share of the measured FMA peak (docs/performance.md); reads no data, writes nothing", maxProfileSteps)),
		cpuprof:   fs.String("cpuprofile", "", "with -profile: write a CPU profile of the command (pprof format, go tool pprof) to this file"),
		teleFmt:   fs.String("telemetry-format", "gz", "form of a fresh telemetry file: gz (telemetry.ndjson.gz, gzip members, about 2.7× smaller) or ndjson (plain telemetry.ndjson); a resume continues the run's file in the form it has"),
		tele:      fs.Bool("telemetry", false, "write telemetry.ndjson.gz (-telemetry-format) to -out: per step, every capsule's largest norm over the batch and ‖∂L_m/∂W[j,i]‖ of every routing layer (docs/telemetry.md); costs about 1.5% of the deep model's training CPU time (one more margin-only backward pass through the capsule layers per step)"),
	}
}

// parse parses and checks the command line.
func (f *flags) parse(args []string) error {
	if err := cli.Parse(f.fs, args, 0, os.Stdout); err != nil {
		return err
	}
	f.given = cli.Given(f.fs)
	if err := f.check(); err != nil {
		return err
	}
	if f.given["val"] && *f.nVal <= 0 {
		return cli.Usagef("-val %d: want a positive number of validation images", *f.nVal)
	}
	if *f.impl != "" {
		if err := kernels.Use(*f.impl); err != nil {
			return cli.UsageError{Err: fmt.Errorf("-kernels: %w", err)}
		}
	}
	if *f.resume != "" && !f.given["out"] {
		// A resumed run goes on in its own directory, not in the default
		// -out (which would leave it behind and overwrite another run).
		*f.out = train.ResumeDir(*f.resume)
	}
	return nil
}

// check checks the values of the flags (checkFlags).
func (f *flags) check() error {
	if err := checkFlags(f.given, *f.dataName, *f.dataDir, *f.out, *f.epochs, *f.batch, *f.threads, *f.shift, *f.lr, *f.decay, *f.wd, *f.target); err != nil {
		return err
	}
	_, _, err := f.optimizer()
	return err
}

// optimizer parses -weight-decay-form and -group-weight-decay and checks
// -adam-eps: each error is a cli.UsageError naming the flag.
func (f *flags) optimizer() (train.WeightDecayForm, map[string]float64, error) {
	form, err := train.ParseWeightDecayForm(*f.wdForm)
	if err != nil {
		return form, nil, cli.Usagef("-weight-decay-form %v", err)
	}
	groups, err := train.ParseGroupWeightDecay(*f.wdGroups)
	if err != nil {
		return form, nil, cli.Usagef("-group-weight-decay %v", err)
	}
	if err := cli.Float("adam-eps", *f.eps, 0, 1, true); err != nil {
		return form, nil, err
	}
	return form, groups, nil
}

// resumed reads the -resume checkpoint once (nil without -resume): the
// run goes on with its own plan, the flags it was started with (seed,
// batch, epochs, target, …) unless given again.
func (f *flags) resumed() (*capsnet.Checkpoint, error) {
	if *f.resume == "" {
		return nil, nil
	}
	if err := checkResume(*f.resume); err != nil {
		return nil, err
	}
	ck, err := train.ReadResume(*f.resume)
	if err != nil {
		return nil, fmt.Errorf("-resume: %w", err)
	}
	if err := applyPlan(f.fs, f.given, ck); err != nil {
		return nil, err
	}
	if err := f.check(); err != nil {
		return nil, fmt.Errorf("-resume %s: its recorded flags: %w", *f.resume, err)
	}
	return ck, nil
}

// config returns the model: the checkpoint's own unless -model is given.
func (f *flags) config(ck *capsnet.Checkpoint) (capsnet.Config, error) {
	if ck != nil && !f.given["model"] { // continue with the checkpoint's own model
		if !ck.HasConfig() {
			return capsnet.Config{}, fmt.Errorf("-resume: %s has no model config in its metadata: name the model with -model", ck.Path)
		}
		return ck.Config, nil
	}
	cfg, err := capsnet.LoadConfig(*f.model)
	if err != nil {
		return cfg, fmt.Errorf("-model: %w", err)
	}
	return cfg, nil
}

// resumedData sets -data and -val, unless given, to the resumed run's: it
// goes on with its own data and validation split.
func (f *flags) resumedData(ck *capsnet.Checkpoint) error {
	if d := ck.Meta["data"]; d != "" && !f.given["data"] && slices.Contains(data.DataSets, d) {
		*f.dataName = d
	} else if d != "" && f.given["data"] && d != *f.dataName {
		return cli.Usagef("-data %s: the run in %s was trained on %s (leave -data out to go on with it)", *f.dataName, *f.resume, d)
	}
	if v, err := strconv.Atoi(ck.Meta["val_images"]); err == nil && v > 0 && !f.given["val"] {
		*f.nVal = v
	}
	return nil
}

// options loads the data and returns the run's Options (ck: the -resume
// checkpoint, or nil).
func (f *flags) options(args []string, ck *capsnet.Checkpoint) (train.Options, error) {
	cfg, err := f.config(ck)
	if err != nil {
		return train.Options{}, err
	}
	if ck != nil {
		// What the run is comes before how it trains: a -model the run
		// does not hold is said so, not blamed on a recipe detail (-shift).
		if err := resumeModelError(train.CheckResumeModel(ck, cfg), *f.resume, ck.Config.Name, cfg.Name); err != nil {
			return train.Options{}, err
		}
		if err := f.resumedData(ck); err != nil {
			return train.Options{}, err
		}
	}
	if err := cli.CheckDataDir(*f.dataDir, *f.dataName); err != nil {
		return train.Options{}, err
	}
	if err := cli.CheckOutputs(runFiles(*f.out), append([]cli.Path{cli.ModelInput(*f.model)}, cli.DataInputs(*f.dataName, *f.dataDir)...)); err != nil {
		return train.Options{}, err
	}
	// The process's memory at these threads and batch (from the flags or
	// the resumed run's plan) is checked before any data is loaded.
	batch := *f.batch
	if !f.given["batch"] {
		_, batch = train.DefaultPlan(*f.dataName)
	}
	if err := train.CheckMemory(cfg, batch, *f.threads); err != nil {
		return train.Options{}, fmt.Errorf("-threads %d, -batch %d: %w", *f.threads, batch, err)
	}
	rec := train.Recipe{Model: cfg, Data: *f.dataName, DataDir: *f.dataDir, ValImages: *f.nVal, Shift: *f.shift, ShiftDefault: !f.given["shift"]}
	if f.given["epochs"] {
		rec.Epochs = *f.epochs
	}
	if f.given["batch"] {
		rec.Batch = *f.batch
	}
	o, err := rec.Options()
	if err != nil {
		return o, recipeError(err, f.given["val"], *f.dataName)
	}
	o.Threads, o.LR, o.LRDecay, o.WeightDecay, o.AdamEps = *f.threads, *f.lr, *f.decay, *f.wd, *f.eps
	if o.WeightDecayForm, o.GroupWeightDecay, err = f.optimizer(); err != nil {
		return o, err
	}
	o.TargetAcc, o.Seed, o.OutDir, o.Resume, o.ResumeFrom = *f.target, *f.seed, *f.out, *f.resume, ck
	o.Overwrite, o.Telemetry = *f.overwrite, *f.tele
	if o.TelemetryForm, err = telemetry.ParseForm(*f.teleFmt); err != nil {
		return o, cli.Usagef("-telemetry-format %q: want gz or ndjson", *f.teleFmt)
	}
	f.fs.Set("epochs", strconv.Itoa(o.Epochs)) // the plan records the values in effect, not "default"
	f.fs.Set("batch", strconv.Itoa(o.Batch))
	f.fs.Set("shift", strconv.Itoa(o.MaxShift)) // 0 when the images are placed on a canvas
	o.Provenance["command"], o.Provenance["plan"] = commandLine(args), plan(f.fs)
	o.Log = os.Stdout
	o.Progress = !*f.plain && isTerminal(os.Stdout)
	return o, nil
}

// report prints how a run that was not interrupted ended.
func report(res *train.Result, o train.Options, dataName string) {
	if res.Done > 0 && res.ReachedAcc { // a resumed run that had already reached its target
		fmt.Printf("nothing to train: %s already reached the target validation accuracy %.2f%% at epoch %d (%.2f%%); ask for more with a higher -target\n",
			res.Checkpoint, 100*o.TargetAcc, res.Done, 100*res.LastValAcc)
		return
	}
	if len(res.Epochs) == 0 { // a resumed run that had already trained every epoch asked for
		fmt.Printf("nothing to train: %s already holds epoch %d of %d; ask for more with a larger -epochs\n", res.Checkpoint, res.Done, o.Epochs)
		return
	}
	last := res.Epochs[len(res.Epochs)-1]
	fmt.Printf("done: validation accuracy %.2f%% (%s), test accuracy %.2f%% after %d epoch(s), %.0f img/s; checkpoint %s\n", 100*last.ValAcc, o.Val.Name, 100*last.TestAcc, last.Epoch, last.ImgPerSec, res.Checkpoint)
	fmt.Printf("evaluate it: %s -checkpoint %s -data %s\n", cli.Invocation("infer"), cli.ShellQuote(res.Checkpoint), dataName)
}

// flagOf is the flag that sets each field of train.Options and
// train.Recipe that a train.FieldError may name.
var flagOf = map[string]string{
	"Batch": "batch", "Threads": "threads", "Epochs": "epochs", "LR": "lr", "LRDecay": "decay",
	"WeightDecay": "weight-decay", "TargetAcc": "target", "OutDir": "out", "Shift": "shift",
	"ValImages": "val", "Data": "data", "Model": "model", "AdamEps": "adam-eps",
	"WeightDecayForm": "weight-decay-form", "GroupWeightDecay": "group-weight-decay",
}

// runFiles are the files a run writes in its directory out, as outputs
// for cli.CheckOutputs: a -model config file or a data file there under
// one of these names would be replaced.
func runFiles(out string) []cli.Path {
	var files []cli.Path
	for _, name := range []string{capsnet.CheckpointFileName, train.MetricsName, telemetry.FileName, telemetry.GzipName, train.LockName} {
		files = append(files, cli.Path{Flag: "-out", Value: filepath.Join(out, name), Note: "a file of the run"})
	}
	return files
}

// badValue reports whether err is a train.FieldError of a value a flag
// set (a -batch larger than the training data): a usage error (exit 2).
// A run directory's or data set's state (-out, -data, -model) is not.
func badValue(err error) bool {
	var fe *train.FieldError
	if !errors.As(err, &fe) {
		return false
	}
	switch fe.Field {
	case "OutDir", "Data", "Model":
		return false
	}
	return true
}

// flagError returns err, when it is a *train.FieldError of a field a flag
// sets, as an error naming the flag and its value ("-batch 0: must be
// positive"): a cli.UsageError when usage is set. A run directory that
// holds another run says how to go on in flags. Other errors are returned
// as they are.
func flagError(err error, usage bool) error {
	var fe *train.FieldError
	if !errors.As(err, &fe) || err != error(fe) {
		return err
	}
	name, ok := flagOf[fe.Field]
	if !ok {
		return err
	}
	if errors.Is(fe.Err, train.ErrOtherRun) {
		what := strings.TrimSuffix(fe.Err.Error(), train.ErrOtherRun.Error())
		dir := cli.ShellQuote(fmt.Sprint(fe.Value))
		if r, ok := strings.CutSuffix(what, "resume it, "); ok {
			what = r + "resume it with -resume " + dir + ", "
		}
		err = fmt.Errorf("-%s %s: %schoose a fresh -out, or -overwrite to replace it", name, dir, what)
	} else {
		err = fmt.Errorf("-%s %v: %w", name, fe.Value, fe.Err)
	}
	if usage {
		return cli.UsageError{Err: err}
	}
	return err
}

// recipeError names the flags in an error of train.Recipe.Options: a
// -shift that does not apply, a -val given that the data cannot hold out,
// are usage errors; the data set's errors are not (a missing file), and
// name -data.
func recipeError(err error, valGiven bool, dataName string) error {
	var fe *train.FieldError
	switch {
	case !errors.As(err, &fe):
		return err
	case fe.Field == "Shift" || fe.Field == "ValImages" && valGiven:
		return flagError(err, true)
	case fe.Field == "ValImages": // the resumed run's split: its data set does not hold it
		return fmt.Errorf("-data %s: %w", dataName, fe.Err)
	}
	return flagError(err, false)
}

// checkFlags checks the values of the flags that need no file: each error
// is a cli.UsageError naming the flag.
func checkFlags(given map[string]bool, dataName, dataDir, out string, epochs, batch, threads, shift int, lr, decay, wd, target float64) error {
	for _, f := range []struct {
		name     string
		v, limit int
	}{{"epochs", epochs, maxEpochs}, {"batch", batch, capsnet.MaxBatch}} {
		// 0 means "the default" only when the flag is not given: an
		// explicit -epochs 0 or -batch 0 is a mistake, not a default.
		if given[f.name] && f.v == 0 {
			return cli.Usagef("-%s 0: must be positive (leave the flag out for the default)", f.name)
		}
		if err := cli.Int(f.name, f.v, 0, f.limit); err != nil {
			return err
		}
	}
	if err := cli.Threads(threads, batch); err != nil {
		return err
	}
	if shift < 0 {
		return cli.Usagef("-shift %d: must be 0 (none) or a positive number of pixels", shift)
	}
	for _, f := range []struct {
		name   string
		v, lo  float64
		loOpen bool
	}{{"lr", lr, 0, true}, {"decay", decay, 0, true}, {"weight-decay", wd, 0, false}, {"target", target, 0, false}} {
		if err := cli.Float(f.name, f.v, f.lo, 1, f.loOpen); err != nil {
			return err
		}
	}
	if err := cli.OneOf("data", dataName, data.DataSets); err != nil {
		return err
	}
	if !data.ReadsFiles(dataName) && dataDir != "" {
		return cli.Usagef("-data-dir: the %s data set is in the binary, not in a directory", dataName)
	}
	if out == "" {
		return cli.Usagef("-out: an output directory is required")
	}
	return nil
}

// planFlags are the flags a resumed run takes from its checkpoint
// (metadata "plan") unless they are given again: what the run trains, in
// which order, for how long. -seed and -threads matter most: the data
// order depends on the seed, the reduction order (hence every bit) on the
// thread count.
var planFlags = []string{"seed", "batch", "epochs", "target", "lr", "decay", "weight-decay", "weight-decay-form", "group-weight-decay", "adam-eps", "shift", "threads", "telemetry", "telemetry-format"}

// plan returns the values of planFlags as JSON (metadata "plan").
func plan(fs *flag.FlagSet) string {
	m := map[string]string{}
	for _, name := range planFlags {
		m[name] = fs.Lookup(name).Value.String()
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// applyPlan sets the planFlags not given on the command line from the
// checkpoint's "plan" metadata (checkpoints without one keep the flags'
// defaults) and marks them given; the caller checks the values again.
func applyPlan(fs *flag.FlagSet, given map[string]bool, ck *capsnet.Checkpoint) error {
	js, ok := ck.Meta["plan"]
	if !ok {
		return nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		return fmt.Errorf("-resume: %s: metadata plan: %v", ck.Path, err)
	}
	for _, name := range planFlags {
		v, ok := m[name]
		if !ok || given[name] {
			continue
		}
		if err := fs.Set(name, v); err != nil {
			return fmt.Errorf("-resume: %s: metadata plan: -%s %q: %v", ck.Path, name, v, err)
		}
		given[name] = true
	}
	return nil
}

// commandLine is the invocation "train ARGS…" as a shell would take it
// back: arguments quoted where they hold anything but safe characters (the
// binary's own path, often a go run temporary, says nothing).
func commandLine(args []string) string {
	q := []string{"train"}
	for _, a := range args {
		q = append(q, cli.ShellQuote(a))
	}
	return strings.Join(q, " ")
}

// dataSource says where data set name was read from with -data-dir dir:
// "built in" for the embedded set, else "read from DIR".
func dataSource(name, dir string) string {
	d, err := data.Where(name, dir)
	switch {
	case err != nil:
		return "read from an unknown directory"
	case d == data.BuiltIn:
		return d
	}
	return "read from " + d
}

// resumeModelError says, for an error of train.CheckResumeModel (nil:
// nil), that the run in resume holds model held and -model asks for
// asked, and how to go on: without -model, or a fresh run.
func resumeModelError(err error, resume, held, asked string) error {
	if err == nil {
		return nil
	}
	dir := cli.ShellQuote(train.ResumeDir(resume))
	what := fmt.Sprintf("the run in %s holds model %s, -model asks for %s", dir, held, asked)
	if held == asked {
		what = fmt.Sprintf("the run in %s holds another configuration of model %s than -model gives (a changed preset or config file)", dir, held)
	}
	return cli.Usagef("-model %s: %s: drop -model to resume the run with its own model, or train %s afresh without -resume (a fresh -out, or -overwrite to replace the run)", asked, what, asked)
}

// checkResume says, before the checkpoint is read, why a -resume path
// has nothing to resume: no such directory, or no checkpoint yet in it
// (the run had not finished an epoch), and how to start the run. A path
// that may hold a checkpoint is left to train.ReadResume.
func checkResume(path string) error {
	st, err := os.Stat(path)
	if err == nil && !st.IsDir() {
		return nil // a checkpoint file
	}
	dir, ck := path, filepath.Join(path, train.CheckpointName)
	if err != nil && strings.HasSuffix(path, ".safetensors") {
		dir, ck = filepath.Dir(path), path
	}
	if _, err := os.Stat(ck); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	start := fmt.Sprintf("start the run with -out %s, without -resume", cli.ShellQuote(dir))
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("-resume %s: %s does not exist, there is no run to resume: %s", path, dir, start)
	}
	return fmt.Errorf("-resume %s: no checkpoint yet in %s (the run had not finished an epoch): %s", path, dir, start)
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
