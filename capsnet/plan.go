package capsnet

import (
	"errors"

	"github.com/capstan-ml/capstan/graph"
)

// errPlanned stops an arena's Seal once its plan is made (stopAtPlan), so
// that the plan is known and nothing is allocated.
var errPlanned = errors.New("capsnet: planned, not allocated")

func stopAtPlan(int64) error { return errPlanned }

// TrainingPlan returns the memory plans of cfg's parameters and of one
// Net of batch images over them, a training Net (NewNet) or an inference
// one (NewInferenceNet): the plans NewParams and NewNet would allocate,
// computed without allocating anything and without the memory limit of
// one model (ModelMemoryLimit), so that a machine can size jobs for
// larger ones (tools/sweep's Slurm and Kubernetes jobs).
func TrainingPlan(cfg Config, batch int, inference bool) (params, net graph.Plan, err error) {
	l, err := cfg.Resolve()
	if err != nil {
		return graph.Plan{}, graph.Plan{}, err
	}
	return l.TrainingPlan(batch, inference)
}

// TrainingPlan is the package's TrainingPlan of the layout.
func (l *Layout) TrainingPlan(batch int, inference bool) (params, net graph.Plan, err error) {
	p, err := l.newParams(true)
	if err != nil {
		return graph.Plan{}, graph.Plan{}, err
	}
	n, err := newNet(p, batch, inference, planOnly)
	if err != nil {
		return graph.Plan{}, graph.Plan{}, err
	}
	return p.Arena.Plan(), n.Plan(), nil
}
