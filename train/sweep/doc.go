// Package sweep runs grids of training runs on a cluster scheduler (issue
// 12): a grid expands into a manifest of tasks in a stable order (Expand,
// WriteManifest), each task trains one model to its target in its own run
// directory and writes one result file (RunTask), the schedulers' job files
// run those tasks as Slurm array jobs or Kubernetes Indexed Jobs
// (SlurmScript, KubernetesJob), and Collect turns the result files into the
// appendix tables of "Why Capsule Neural Networks Do Not Scale".
//
// A task is identified by its index in the manifest. Everything it writes
// lives in its run directory (checkpoint, optimizer state, metrics, lock:
// package train's crash-safe run directory) and in its result file, written
// atomically once the task is done; a task whose result file exists is done
// and is never run again, so rerunning a whole sweep retrains nothing that
// finished, and a task that two workers start at once is trained by one
// (the run directory's lock) while the other exits.
package sweep
