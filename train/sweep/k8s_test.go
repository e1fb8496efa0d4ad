package sweep

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestKubernetesJob decodes the Job into the real batch/v1 type, unknown
// fields refused, and checks every field.
func TestKubernetesJob(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "Paper_Grid")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	tasks := tinyTasks()
	mp := writeManifest(t, dir, tasks)
	out, err := KubernetesJob(mp, tasks, KubernetesOptions{Image: "ghcr.io/capstan-ml/capstan:v1", Parallel: 3, Claim: "sweep-data"})
	if err != nil {
		t.Fatal(err)
	}
	var job batchv1.Job
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&job); err != nil {
		t.Fatalf("decoding into batch/v1 Job: %v\n%s", err, out)
	}
	var most Memory
	for _, task := range tasks {
		m, err := (&Planner{Dir: dir}).TaskMemory(task)
		if err != nil {
			t.Fatal(err)
		}
		if m.Total() > most.Total() {
			most = m
		}
	}
	if job.APIVersion != "batch/v1" || job.Kind != "Job" || job.Name != "sweep-paper-grid" {
		t.Errorf("apiVersion %q, kind %q, name %q", job.APIVersion, job.Kind, job.Name)
	}
	s := job.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("completionMode %v", s.CompletionMode)
	}
	if s.Completions == nil || *s.Completions != 4 || s.Parallelism == nil || *s.Parallelism != 3 {
		t.Errorf("completions %v, parallelism %v; want 4, 3", s.Completions, s.Parallelism)
	}
	if s.BackoffLimitPerIndex == nil || *s.BackoffLimitPerIndex != DefaultBackoffPerIndex || s.BackoffLimit != nil || s.MaxFailedIndexes != nil {
		t.Errorf("backoffLimitPerIndex %v, backoffLimit %v, maxFailedIndexes %v", s.BackoffLimitPerIndex, s.BackoffLimit, s.MaxFailedIndexes)
	}
	if p := s.PodFailurePolicy; p == nil || len(p.Rules) != 1 || p.Rules[0].Action != batchv1.PodFailurePolicyActionIgnore ||
		len(p.Rules[0].OnPodConditions) != 1 || p.Rules[0].OnPodConditions[0].Type != corev1.DisruptionTarget {
		t.Errorf("podFailurePolicy %+v", p)
	}
	ps := s.Template.Spec
	if ps.RestartPolicy != corev1.RestartPolicyNever || ps.TerminationGracePeriodSeconds == nil || *ps.TerminationGracePeriodSeconds != SignalSeconds {
		t.Errorf("restartPolicy %q, grace %v", ps.RestartPolicy, ps.TerminationGracePeriodSeconds)
	}
	if len(ps.Containers) != 1 || len(ps.Volumes) != 1 {
		t.Fatalf("%d containers, %d volumes", len(ps.Containers), len(ps.Volumes))
	}
	c, v := ps.Containers[0], ps.Volumes[0]
	if c.Image != "ghcr.io/capstan-ml/capstan:v1" || strings.Join(c.Command, " ") != "sweep run -manifest "+mp || c.WorkingDir != dir {
		t.Errorf("image %q, command %q, workingDir %q", c.Image, c.Command, c.WorkingDir)
	}
	for _, e := range c.Env {
		if e.Name == "JOB_COMPLETION_INDEX" {
			t.Errorf("JOB_COMPLETION_INDEX set: the controller sets it")
		}
	}
	for what, rl := range map[string]corev1.ResourceList{"requests": c.Resources.Requests, "limits": c.Resources.Limits} {
		cpu, mem := rl[corev1.ResourceCPU], rl[corev1.ResourceMemory]
		if len(rl) != 2 || cpu.Value() != 2 || mem.Value() != most.MiB()<<20 {
			t.Errorf("%s: cpu %s, memory %s; want 2, %dMi", what, cpu.String(), mem.String(), most.MiB())
		}
	}
	if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "sweep-data" {
		t.Errorf("volume %+v", v)
	}
	if len(c.VolumeMounts) != 1 || c.VolumeMounts[0].Name != v.Name || c.VolumeMounts[0].MountPath != dir {
		t.Errorf("volume mounts %+v, volume %q at %s", c.VolumeMounts, v.Name, dir)
	}
	if job.Labels["capstan.sweep/job"] != job.Name || s.Template.Labels["capstan.sweep/job"] != job.Name {
		t.Errorf("labels %v, pod labels %v", job.Labels, s.Template.Labels)
	}
	// The capstan binary runs the sweep as its subcommand.
	out, err = KubernetesJob(mp, tasks, KubernetesOptions{Image: "ghcr.io/capstan-ml/capstan:v1", Command: "capstan", Args: []string{"sweep"}})
	if err != nil {
		t.Fatal(err)
	}
	var cj batchv1.Job
	if err := json.Unmarshal(out, &cj); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cj.Spec.Template.Spec.Containers[0].Command, " "); got != "capstan sweep run -manifest "+mp {
		t.Errorf("capstan: command %q", got)
	}
}

func TestKubernetesJobErrors(t *testing.T) {
	dir := t.TempDir()
	tasks := tinyTasks()
	mp := writeManifest(t, dir, tasks)
	for _, c := range []struct {
		opts KubernetesOptions
		want string
	}{
		{KubernetesOptions{}, "image"},
		{KubernetesOptions{Image: "a b"}, "image"},
		{KubernetesOptions{Image: "i", Name: "Bad_Name"}, "job name"},
		{KubernetesOptions{Image: "i", Claim: "x/y"}, "claim"},
		{KubernetesOptions{Image: "i", Parallel: -2}, "parallel"},
		{KubernetesOptions{Image: "i", BackoffLimitPerIndex: -1}, "backoff"},
	} {
		if _, err := KubernetesJob(mp, tasks, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.opts, err, c.want)
		}
	}
	if got := dnsLabel("--Héllo__World--", 63); got != "h-llo-world" {
		t.Errorf("dnsLabel: %q", got)
	}
}
