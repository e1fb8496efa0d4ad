package sweep

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// KubernetesOptions are the settings of a Kubernetes Indexed Job.
type KubernetesOptions struct {
	// Image is the container image holding the sweep command (required).
	Image string
	// Command is the sweep command in the image; "": "sweep".
	Command string
	// Args are the arguments before run when Command holds the sweep
	// command as a subcommand (["sweep"] for the capstan binary); nil for
	// the sweep binary itself.
	Args []string
	// Parallel is the most pods running at once; 0: all the tasks.
	Parallel int
	// Claim is the PersistentVolumeClaim holding the manifest's directory
	// (mounted at that same path, so that the manifest's paths hold);
	// "": DefaultClaim.
	Claim string
	// Name is the Job's name; "": "sweep-" and the manifest directory's
	// name, made a DNS label.
	Name string
	// BackoffLimitPerIndex is how often a failed task is retried; 0:
	// DefaultBackoffPerIndex.
	BackoffLimitPerIndex int
}

// Defaults of KubernetesOptions.
const (
	DefaultClaim           = "sweep"
	DefaultBackoffPerIndex = 3
)

// The batch/v1 Job's fields KubernetesJob writes, named as in the API
// (k8s.io/api/batch/v1 and core/v1; the test decodes the JSON into those
// types, unknown fields refused).
type (
	k8sJob struct {
		APIVersion string  `json:"apiVersion"`
		Kind       string  `json:"kind"`
		Metadata   k8sMeta `json:"metadata"`
		Spec       k8sSpec `json:"spec"`
	}
	k8sMeta struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels,omitempty"`
	}
	k8sSpec struct {
		CompletionMode       string           `json:"completionMode"`
		Completions          int              `json:"completions"`
		Parallelism          int              `json:"parallelism"`
		BackoffLimitPerIndex int              `json:"backoffLimitPerIndex"`
		PodFailurePolicy     k8sFailurePolicy `json:"podFailurePolicy"`
		Template             k8sPodTemplate   `json:"template"`
	}
	k8sFailurePolicy struct {
		Rules []k8sFailureRule `json:"rules"`
	}
	k8sFailureRule struct {
		Action          string            `json:"action"`
		OnPodConditions []k8sPodCondition `json:"onPodConditions"`
	}
	k8sPodCondition struct {
		Type string `json:"type"`
	}
	k8sPodTemplate struct {
		Metadata k8sMeta    `json:"metadata"`
		Spec     k8sPodSpec `json:"spec"`
	}
	k8sPodSpec struct {
		RestartPolicy                 string         `json:"restartPolicy"`
		TerminationGracePeriodSeconds int            `json:"terminationGracePeriodSeconds"`
		Containers                    []k8sContainer `json:"containers"`
		Volumes                       []k8sVolume    `json:"volumes"`
	}
	k8sContainer struct {
		Name         string       `json:"name"`
		Image        string       `json:"image"`
		Command      []string     `json:"command"`
		WorkingDir   string       `json:"workingDir"`
		Resources    k8sResources `json:"resources"`
		VolumeMounts []k8sMount   `json:"volumeMounts"`
	}
	k8sResources struct {
		Requests map[string]string `json:"requests"`
		Limits   map[string]string `json:"limits"`
	}
	k8sMount struct {
		Name      string `json:"name"`
		MountPath string `json:"mountPath"`
	}
	k8sVolume struct {
		Name                  string   `json:"name"`
		PersistentVolumeClaim k8sClaim `json:"persistentVolumeClaim"`
	}
	k8sClaim struct {
		ClaimName string `json:"claimName"`
	}
)

// dnsLabel makes s a DNS-1123 label (lower case letters, digits and '-',
// starting and ending alphanumeric, at most max characters).
func dnsLabel(s string, max int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	out := b.String()
	if len(out) > max {
		out = out[:max]
	}
	return strings.Trim(out, "-")
}

// validLabel reports whether s is a DNS-1123 label of at most max
// characters.
func validLabel(s string, max int) bool {
	return s != "" && len(s) <= max && dnsLabel(s, max) == s
}

// KubernetesJob returns a batch/v1 Job (JSON, for kubectl apply -f) that
// runs tasks, the manifest's tasks in index order: completionMode
// Indexed, completions N, parallelism K, backoffLimitPerIndex, a pod
// failure policy that does not count disruptions (preemption, eviction,
// node drain: the task saved on SIGTERM and resumes) against it, a
// termination grace period for the save, restartPolicy Never, one
// container running `SWEEP run -manifest ABS` (the index from the
// JOB_COMPLETION_INDEX the Job controller sets) with CPU and memory
// requests and limits from the tasks' memory plans (as SlurmScript), and
// the PersistentVolumeClaim mounted at the manifest's directory.
func KubernetesJob(manifestPath string, tasks []Task, opts KubernetesOptions) ([]byte, error) {
	abs, err := absManifest(manifestPath)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(abs)
	if opts.Image == "" || strings.ContainsAny(opts.Image, " \t\r\n") {
		return nil, fmt.Errorf("image %q: want a container image reference", opts.Image)
	}
	for i, t := range tasks {
		if t.Index != i {
			return nil, fmt.Errorf("manifest %s: line %d holds task %d: not in index order", abs, i+1, t.Index)
		}
	}
	k, err := parallelism(opts.Parallel, len(tasks))
	if err != nil {
		return nil, err
	}
	mem, threads, err := maxMemory(dir, tasks)
	if err != nil {
		return nil, fmt.Errorf("manifest %s: %w", abs, err)
	}
	name := opts.Name
	if name == "" {
		// An Indexed Job's pods are named NAME-INDEX-xxxxx: room for them.
		name = dnsLabel("sweep-"+filepath.Base(dir), 47)
	}
	if !validLabel(name, 63) {
		return nil, fmt.Errorf("job name %q: want a DNS label (lower case letters, digits, '-'; at most 63)", name)
	}
	claim := opts.Claim
	if claim == "" {
		claim = DefaultClaim
	}
	if !validLabel(claim, 253) {
		return nil, fmt.Errorf("claim %q: want a DNS name (lower case letters, digits, '-')", claim)
	}
	backoff := opts.BackoffLimitPerIndex
	if backoff == 0 {
		backoff = DefaultBackoffPerIndex
	}
	if backoff < 0 {
		return nil, fmt.Errorf("backoff limit per index %d must be positive", backoff)
	}
	command := opts.Command
	if command == "" {
		command = "sweep"
	}
	res := map[string]string{"cpu": strconv.Itoa(threads), "memory": strconv.FormatInt(mem.MiB(), 10) + "Mi"}
	labels := map[string]string{"app.kubernetes.io/name": "capstan-sweep", "capstan.sweep/job": name}
	job := k8sJob{
		APIVersion: "batch/v1",
		Kind:       "Job",
		Metadata:   k8sMeta{Name: name, Labels: labels},
		Spec: k8sSpec{
			CompletionMode:       "Indexed",
			Completions:          len(tasks),
			Parallelism:          k,
			BackoffLimitPerIndex: backoff,
			PodFailurePolicy: k8sFailurePolicy{Rules: []k8sFailureRule{
				{Action: "Ignore", OnPodConditions: []k8sPodCondition{{Type: "DisruptionTarget"}}},
			}},
			Template: k8sPodTemplate{
				Metadata: k8sMeta{Labels: labels},
				Spec: k8sPodSpec{
					RestartPolicy:                 "Never",
					TerminationGracePeriodSeconds: SignalSeconds,
					Containers: []k8sContainer{{
						Name:         "sweep",
						Image:        opts.Image,
						Command:      append(append([]string{command}, opts.Args...), "run", "-manifest", abs),
						WorkingDir:   dir,
						Resources:    k8sResources{Requests: res, Limits: res},
						VolumeMounts: []k8sMount{{Name: "sweep", MountPath: dir}},
					}},
					Volumes: []k8sVolume{{Name: "sweep", PersistentVolumeClaim: k8sClaim{ClaimName: claim}}},
				},
			},
		},
	}
	b, err := json.MarshalIndent(job, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("kubernetes job: %w", err)
	}
	return append(b, '\n'), nil
}
