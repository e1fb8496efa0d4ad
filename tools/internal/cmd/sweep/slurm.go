package sweep

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/train/sweep"
)

func init() { commands["slurm"] = slurmCmd }

const slurmSummary = "sweep slurm: writes the sbatch script that runs a manifest's tasks as a Slurm array job (and submits it with -submit); usage: sweep slurm -manifest DIR/manifest.ndjson [flags]"

const slurmNotes = `The script asks for the most threads of a task as CPUs and the largest task's
memory plan (parameters, optimizer state, one training graph per thread, the
data sets and a margin) as --mem; --signal=B:TERM@120 makes a task save before
its time limit, --requeue lets Slurm rerun a preempted task, which resumes.
Output goes to DIR/logs/%A_%a.out (made here).
`

func slurmCmd(args []string) error {
	fs := flag.NewFlagSet("sweep slurm", flag.ContinueOnError)
	cli.SetUsage(fs, slurmSummary, slurmNotes)
	manifest := fs.String("manifest", "", "the sweep's manifest (sweep plan's DIR/manifest.ndjson)")
	parallel := fs.Int("parallel", 0, "most tasks running at once, the %K of --array (0: all)")
	limit := fs.String("time", sweep.DefaultTime, "time limit of one task (sbatch --time)")
	partition := fs.String("partition", "", "Slurm partition (default: the cluster's)")
	binary := fs.String("binary", "", "the sweep binary the tasks run, on the compute nodes (default: this one's absolute path); run as capstan sweep, a capstan binary, which the tasks run as BINARY sweep run")
	submit := fs.Bool("submit", false, "submit the script with sbatch and print the job id")
	out := fs.String("out", "", "script file (default: DIR/sweep.sbatch)")
	if err := cli.Parse(fs, args, 0, os.Stdout); err != nil {
		return err
	}
	if *manifest == "" {
		return cli.Usagef("-manifest is required (see -h)")
	}
	if err := cli.Int("parallel", *parallel, 0, sweep.MaxTasks); err != nil {
		return err
	}
	path := *out
	if path == "" {
		path = filepath.Join(filepath.Dir(*manifest), "sweep.sbatch")
	}
	if err := cli.CheckOutputs([]cli.Path{outPath(*out, path)}, []cli.Path{{Flag: "-manifest", Value: *manifest}}); err != nil {
		return err
	}
	tasks, err := sweep.ReadManifest(*manifest)
	if err != nil {
		return err
	}
	script, err := sweep.SlurmScript(*manifest, tasks, sweep.SlurmOptions{Parallel: *parallel, Time: *limit, Partition: *partition, Binary: *binary, Args: subcommand()})
	if err != nil {
		return err
	}
	if err := sweep.WriteSlurm(*manifest, path, script); err != nil {
		return err
	}
	cli.Wrote(os.Stdout, path, fmt.Sprintf("Slurm batch script, %d tasks", len(tasks)))
	if !*submit {
		return nil
	}
	id, err := sweep.SubmitSlurm(path)
	if err != nil {
		return err
	}
	fmt.Println(id)
	return nil
}
