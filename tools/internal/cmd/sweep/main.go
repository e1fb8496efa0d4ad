// Package sweep is the sweep command: tools/sweep (go run ./tools/sweep) and
// capstan sweep (tools/capstan) are thin wrappers of its Main. See
// tools/sweep for what it does.
package sweep

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/tools/internal/runout"
	"github.com/capstan-ml/capstan/train"
	"github.com/capstan-ml/capstan/train/data"
	"github.com/capstan-ml/capstan/train/sweep"
)

// commands are the subcommands by name; each takes the arguments after
// its name. Files of this package add theirs from their init functions
// (commands["slurm"] = slurm).
var commands = map[string]func(args []string) error{"plan": plan, "run": runCmd}

// ExitTempFail is run's exit status when another worker holds the task's
// run directory (sysexits.h EX_TEMPFAIL): the scheduler may retry.
const ExitTempFail = 75

// Main runs the sweep command with args (the arguments after its name) and
// returns its exit status; it prints on os.Stdout and os.Stderr. tools/sweep
// and capstan sweep both call it.
func Main(args []string) int {
	return exit(os.Stdout, os.Stderr, args)
}

const usage = `sweep: runs grids of training runs on cluster schedulers; usage: sweep COMMAND [flags] (sweep COMMAND -h for its flags)

Commands:
  plan     expand a grid into DIR/manifest.ndjson and estimate its cost
  run      train and analyse one task of a manifest
  slurm    write (and submit) a Slurm array job for a manifest
  k8s      write a Kubernetes Indexed Job for a manifest
  collect  write the appendix tables from the tasks' results
`

// exit runs the command of args and returns the exit status, printing
// an error as one line on stderr.
func exit(stdout, stderr io.Writer, args []string) int {
	name := "sweep"
	if len(args) > 0 && commands[args[0]] != nil {
		name += " " + args[0]
	}
	err := dispatch(stdout, args)
	if errors.Is(err, train.ErrLocked) {
		fmt.Fprintf(stderr, "%s: %s (exit status %d: retry later)\n", name, strings.ReplaceAll(err.Error(), "\n", "; "), ExitTempFail)
		return ExitTempFail
	}
	return cli.Exit(stderr, name, err)
}

func dispatch(stdout io.Writer, args []string) error {
	if len(args) == 0 {
		return cli.Usagef("no command: want one of %s (see -h)", strings.Join(commandNames(), ", "))
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return flag.ErrHelp
	}
	cmd, ok := commands[args[0]]
	if !ok {
		return cli.Usagef("unknown command %q: want one of %s (see -h)", args[0], strings.Join(commandNames(), ", "))
	}
	return cmd(args[1:])
}

func commandNames() []string {
	var names []string
	for k := range commands {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

const planNotes = `Writes DIR/manifest.ndjson (one task per line: model, seed, data, target, run
directory, result file), atomically, and prints the task count and the cost:
every task trained for all its epochs (a task stops at its target, so this
bounds it) at the training speed of -img-per-s, else measured for each model
(a warm-up step and 2 timed steps of at most 8 images per thread: a lower
bound of the speed at the task's batch). Node-hours count each task as one
node of its threads' cores; core-hours weight each task by its threads. A
manifest already in DIR is kept when the grid gives the same tasks and
refused otherwise (-overwrite replaces it). Grid files name models as presets
or config files (relative to the working directory, written relative to the
manifest's directory, where the tasks read them). -routing chooses the routing kinds of the
grid: a preset grid has rba,uniform (the paper's experiment) unless it is
given, a -grid file its own "routing" field (-routing replaces it). The list
must hold the baseline kind uniform, which collect compares every kind with;
its order does not matter (tasks follow the kinds' table order). A kind
other than rba takes each preset's twin NAME-KIND (deep-n16-d8-L4-uniform,
tiny-deep-self-attention). Exit status: 0 done, 1 error, 2 bad flag.
`

func plan(args []string) error {
	fs := flag.NewFlagSet("sweep plan", flag.ContinueOnError)
	cli.SetUsage(fs, "sweep plan: expands a grid into a manifest of tasks; usage: sweep plan -grid GRID.json | -preset NAME -out DIR [-routing KIND,KIND…] [flags]", planNotes)
	gridFile := fs.String("grid", "", "grid JSON file (fields of sweep.Grid: models or depths/capsules/dims, routing, seeds, data, eval, k, target, epochs, batch, threads)")
	preset := fs.String("preset", "", "named grid: "+strings.Join(sweep.PresetNames(), ", "))
	out := fs.String("out", "", "sweep directory: receives manifest.ndjson; the tasks' runs/ and results/ go there")
	ips := fs.Float64("img-per-s", 0, "training speed for the cost estimate, img/s per task (0: measure each model)")
	overwrite := fs.Bool("overwrite", false, "replace a manifest of other tasks in -out")
	routing := fs.String("routing", strings.Join(sweep.PaperRouting(), ","), "routing kinds of the grid, comma-separated, from "+
		strings.Join(capsnet.RoutingNames(), ", ")+"; must include the baseline uniform; replaces a -grid file's routing when given")
	if err := cli.Parse(fs, args, 0, os.Stdout); err != nil {
		return err
	}
	switch {
	case *out == "":
		return cli.Usagef("-out: a sweep directory is required")
	case (*gridFile == "") == (*preset == ""):
		return cli.Usagef("-grid or -preset: give one (presets: %s)", strings.Join(sweep.PresetNames(), ", "))
	}
	if err := cli.Float("img-per-s", *ips, 0, 1e12, false); err != nil {
		return err
	}
	kinds, err := sweep.ParseRouting(*routing)
	if err != nil {
		return cli.Usagef("-routing %w", err)
	}
	g, err := planGrid(*preset, *gridFile)
	if err != nil {
		return err
	}
	given := cli.Given(fs)["routing"]
	if given || *preset != "" {
		g.Routing = kinds
	}
	tasks, err := sweep.Expand(g)
	if err != nil && given {
		return fmt.Errorf("grid %s with -routing %s: %w", g.Name, *routing, err)
	}
	if err != nil {
		return fmt.Errorf("grid %s: %w", g.Name, err)
	}
	path := filepath.Join(*out, sweep.ManifestName)
	if err := cli.CheckOutputs([]cli.Path{{Flag: "-out", Value: path, Note: "its manifest"}}, gridInputs(*gridFile, g)); err != nil {
		return err
	}
	absOut, err := filepath.Abs(*out)
	if err != nil {
		return fmt.Errorf("-out %s: %w", *out, err)
	}
	rel := sweep.RelativeModels(tasks, absOut) // config files named relative to the manifest
	if old, err := sweep.ReadManifest(path); err == nil && !*overwrite && !reflect.DeepEqual(old, rel) {
		return fmt.Errorf("-out %s: %s holds %d other tasks (another grid): choose another -out, or -overwrite to replace it", *out, path, len(old))
	}
	if err := sweep.WriteManifest(path, rel); err != nil {
		return err
	}
	cli.Wrote(os.Stdout, path, fmt.Sprintf("manifest of grid %s, %d tasks", g.Name, len(tasks)))
	if *ips == 0 {
		fmt.Printf("measuring the training speed of each model (a few steps each)…\n")
	}
	c, err := sweep.Estimate(tasks, *ips)
	if err != nil {
		return fmt.Errorf("cost estimate: %w", err)
	}
	if *ips == 0 {
		keys := make([]string, 0, len(c.ImgPerSec))
		for k := range c.ImgPerSec {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Printf("  %-40s %8.1f img/s\n", k, c.ImgPerSec[k])
		}
	}
	fmt.Printf("cost: at most %.3g node-hours (%.3g core-hours, %.3g training images)\n", c.TaskHours, c.CoreHours, c.Images)
	return nil
}

// planGrid returns plan's grid: the named grid preset, else the grid file
// gridFile with its config-file models made absolute.
func planGrid(preset, gridFile string) (sweep.Grid, error) {
	if preset != "" {
		g, ok := sweep.Presets()[preset]
		if !ok {
			return g, cli.Usagef("-preset %q: want one of %s", preset, strings.Join(sweep.PresetNames(), ", "))
		}
		return g, nil
	}
	g, err := sweep.ReadGrid(gridFile)
	if err != nil {
		return g, fmt.Errorf("-grid: %w", err)
	}
	presets := capsnet.Presets()
	for i, m := range g.Models {
		if _, ok := presets[m]; !ok {
			if g.Models[i], err = filepath.Abs(m); err != nil {
				return g, fmt.Errorf("-grid %s: model %s: %w", gridFile, m, err)
			}
		}
	}
	return g, nil
}

// outPath is the -out of a job file: path, the flag's value or, when
// that is empty, the default beside the manifest.
func outPath(value, path string) cli.Path {
	if value == "" {
		return cli.Path{Flag: "-out", Value: path, Note: "default: beside -manifest"}
	}
	return cli.Path{Flag: "-out", Value: path}
}

// gridInputs are the files plan reads: the -grid file (none for a
// preset) and the config files its models name.
func gridInputs(gridFile string, g sweep.Grid) []cli.Path {
	inputs := []cli.Path{{Flag: "-grid", Value: gridFile}}
	for _, m := range g.Models {
		if p := cli.ModelInput(m); p.Value != "" {
			inputs = append(inputs, cli.Path{Flag: "-grid", Value: m, Note: "a model config file it names"})
		}
	}
	return inputs
}

const runNotes = `Trains task N of the manifest in its run directory (resuming from its
checkpoint), analyses it on its evaluation set and writes its result file
atomically; a task whose result file exists is done: run exits 0 at once.
N is -index, else $SLURM_ARRAY_TASK_ID (Slurm array jobs), else
$JOB_COMPLETION_INDEX (Kubernetes Indexed Jobs).
Exit status: 0 done (or done already; also when the task's model cannot be
built: its result says "failed"), 1 error, 2 bad flag or index,
130 (SIGINT) or 143 (SIGTERM) stopped after saving the task's checkpoint (a
rerun, e.g. Slurm's --requeue, resumes it), 75 (EX_TEMPFAIL) another worker
holds the task's run directory (it trains the task; a scheduler retry finds
it done or resumes it).
`

func runCmd(args []string) error {
	fs := flag.NewFlagSet("sweep run", flag.ContinueOnError)
	cli.SetUsage(fs, "sweep run: trains and analyses one task of a manifest; usage: sweep run -manifest DIR/manifest.ndjson [-index N]", runNotes)
	manifest := fs.String("manifest", "", "the sweep's manifest (written by sweep plan)")
	index := fs.Int("index", -1, "task index, from 0 (default: $SLURM_ARRAY_TASK_ID, else $JOB_COMPLETION_INDEX)")
	dataDir := fs.String("data-dir", "", "directory holding the data sets (default: the cache, see ./build.sh data)")
	if err := cli.Parse(fs, args, 0, os.Stdout); err != nil {
		return err
	}
	if *manifest == "" {
		return cli.Usagef("-manifest: the sweep's manifest is required")
	}
	if *dataDir != "" {
		if err := data.CheckDir(*dataDir); err != nil {
			return fmt.Errorf("-data-dir: %w", err)
		}
	}
	given := cli.Given(fs)
	if given["index"] && *index < 0 {
		return cli.Usagef("-index %d: want a task index from 0", *index)
	}
	tasks, err := sweep.ReadManifest(*manifest)
	if err != nil {
		return fmt.Errorf("-manifest: %w", err)
	}
	i, err := sweep.TaskIndex(*index, os.Getenv, len(tasks))
	if err != nil {
		return cli.UsageError{Err: err}
	}
	t := tasks[i]
	dir := filepath.Dir(*manifest)
	ctx, sig, stop := cli.NotifyContext(os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("sweep run: task %d of %d: model %s, seed %d, %s, run directory %s\n", i, len(tasks), t.Model, t.Seed, t.Data, sweep.Path(dir, t.Dir))
	resPath := sweep.Path(dir, t.Result)
	_, statErr := os.Stat(resPath)
	done := statErr == nil // a task done already: RunTask writes nothing
	_, err = sweep.RunTask(ctx, dir, t, sweep.RunOptions{DataDir: *dataDir, Log: os.Stdout})
	if !done && (err == nil || errors.Is(err, sweep.ErrInterrupted)) {
		runout.Wrote(os.Stdout, sweep.Path(dir, t.Dir))
		if err == nil {
			cli.Wrote(os.Stdout, resPath, "task result, JSON")
		}
	}
	if errors.Is(err, sweep.ErrInterrupted) {
		return cli.Interrupted{Signal: sig()}
	}
	return err
}
