package sweep

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/capstan-ml/capstan/capsnet/atomicfile"
	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/train/sweep"
)

func init() { commands["k8s"] = k8sCmd }

const k8sSummary = "sweep k8s: writes the Kubernetes batch/v1 Indexed Job that runs a manifest's tasks (kubectl apply -f FILE); usage: sweep k8s -manifest DIR/manifest.ndjson -image IMAGE [flags]"

const k8sNotes = `The pods mount the PersistentVolumeClaim -claim at the manifest's directory (the
same path on every node), request and are limited to the largest task's memory
plan and threads, and take their task's index from JOB_COMPLETION_INDEX.
Disruptions (preemption, eviction) do not count against -backoff: the task saved
on SIGTERM and its next pod resumes it.
`

func k8sCmd(args []string) error {
	fs := flag.NewFlagSet("sweep k8s", flag.ContinueOnError)
	cli.SetUsage(fs, k8sSummary, k8sNotes)
	manifest := fs.String("manifest", "", "the sweep's manifest (sweep plan's DIR/manifest.ndjson), its absolute path as the pods see it")
	image := fs.String("image", "", "container image holding the sweep command (required)")
	command := fs.String("command", commandName(), "the sweep command in the image; run as capstan sweep, the capstan command, which the pods run as COMMAND sweep run")
	parallel := fs.Int("parallel", 0, "most pods running at once (0: all the tasks)")
	claim := fs.String("claim", sweep.DefaultClaim, "PersistentVolumeClaim holding the manifest's directory")
	name := fs.String("name", "", "the Job's name (default: sweep-DIRNAME)")
	backoff := fs.Int("backoff", sweep.DefaultBackoffPerIndex, "retries of a failed task (backoffLimitPerIndex)")
	out := fs.String("out", "", "Job file, - for standard output (default: DIR/k8s-job.json)")
	if err := cli.Parse(fs, args, 0, os.Stdout); err != nil {
		return err
	}
	switch {
	case *manifest == "":
		return cli.Usagef("-manifest is required (see -h)")
	case *image == "":
		return cli.Usagef("-image is required (see -h)")
	}
	if err := cli.Int("parallel", *parallel, 0, sweep.MaxTasks); err != nil {
		return err
	}
	if err := cli.Int("backoff", *backoff, 1, 1000); err != nil {
		return err
	}
	path := *out
	if path == "" {
		path = filepath.Join(filepath.Dir(*manifest), "k8s-job.json")
	}
	if path != "-" {
		if err := cli.CheckOutputs([]cli.Path{outPath(*out, path)}, []cli.Path{{Flag: "-manifest", Value: *manifest}}); err != nil {
			return err
		}
	}
	tasks, err := sweep.ReadManifest(*manifest)
	if err != nil {
		return err
	}
	job, err := sweep.KubernetesJob(*manifest, tasks, sweep.KubernetesOptions{Image: *image, Command: *command, Args: subcommand(), Parallel: *parallel, Claim: *claim, Name: *name, BackoffLimitPerIndex: *backoff})
	if err != nil {
		return err
	}
	if path == "-" {
		_, err := os.Stdout.Write(job)
		return err
	}
	if err := atomicfile.WriteBytes(path, job); err != nil {
		return err
	}
	cli.Wrote(os.Stdout, path, fmt.Sprintf("Kubernetes Indexed Job, %d tasks", len(tasks)))
	return nil
}

// commandName is the command that runs the sweep in a container: sweep,
// or capstan when this runs as capstan sweep.
func commandName() string {
	if cli.Parent != "" {
		return cli.Parent
	}
	return "sweep"
}

// subcommand is the argument before run that a task's command takes:
// sweep when this runs as a subcommand of cli.Parent (capstan sweep),
// none for the sweep binary.
func subcommand() []string {
	if cli.Parent != "" {
		return []string{"sweep"}
	}
	return nil
}
