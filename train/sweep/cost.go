package sweep

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/kernels"
	"github.com/capstan-ml/capstan/train"
	"github.com/capstan-ml/capstan/train/data"
)

// trainImages is the training split of data set name (its training set
// less the validation images held out, data.ValidationSize): what an
// epoch trains on, from the data-set table (data.Sets): the cost estimate
// needs it without reading the data. An unknown name counts 0.
func trainImages(name string) int {
	if s := data.Lookup(name); s != nil && !s.Generated() {
		return s.TrainingImages()
	}
	return 0
}

// Cost is a sweep's estimated cost: every task trained for all its epochs
// (a task that reaches its target stops earlier, so this bounds it).
type Cost struct {
	Tasks int
	// Images is the training images of every task (epochs × training set).
	Images float64
	// TaskHours is the sum over tasks of their training time at the
	// measured (or given) img/s; CoreHours weights each by its threads.
	TaskHours, CoreHours float64
	// ImgPerSec is the training speed used for each model.
	ImgPerSec map[string]float64
}

// Speed measures a model's training speed (img/s) at a task's thread
// count: one warm-up step and steps timed steps of a small batch (at most
// 8 images per thread, random images and labels): cheap enough to run for
// every model of the paper's grid, and a lower bound of the speed at the
// task's larger batch (the per-step overhead weighs more).
func Speed(model string, batch, threads, steps int) (float64, error) {
	cfg, err := capsnet.LoadConfig(model)
	if err != nil {
		return 0, err
	}
	p, err := capsnet.NewParams(cfg)
	if err != nil {
		return 0, err
	}
	p.Init(1)
	b := max(min(batch, 8*threads), threads)
	t, err := train.NewTrainer(p, b, threads, kernels.AdamParams{LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8})
	if err != nil {
		return 0, fmt.Errorf("model %s: %w", model, err)
	}
	defer t.Close()
	in := cfg.Input
	x := make([]float32, b*in[0]*in[1]*in[2])
	labels := make([]int, b)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range x {
		x[i] = rng.Float32()
	}
	for i := range labels {
		labels[i] = rng.IntN(cfg.Classes)
	}
	if _, _, err := t.TrainStep(x, labels, 1e-3); err != nil {
		return 0, fmt.Errorf("model %s: %w", model, err)
	}
	start := time.Now()
	for range steps {
		if _, _, err := t.TrainStep(x, labels, 1e-3); err != nil {
			return 0, fmt.Errorf("model %s: %w", model, err)
		}
	}
	return float64(steps*b) / time.Since(start).Seconds(), nil
}

// Estimate returns the cost of tasks: with imgPerSec > 0 that speed for
// every model, else the speed Speed measures (2 timed steps) once per
// distinct model and thread count.
func Estimate(tasks []Task, imgPerSec float64) (Cost, error) {
	c := Cost{Tasks: len(tasks), ImgPerSec: map[string]float64{}}
	for _, t := range tasks {
		key := fmt.Sprintf("%s/%d", t.Model, t.Threads)
		v, ok := c.ImgPerSec[key]
		if !ok {
			v = imgPerSec
			if v <= 0 {
				var err error
				if v, err = Speed(t.Model, t.Batch, t.Threads, 2); err != nil {
					return c, fmt.Errorf("task %d: %w", t.Index, err)
				}
			}
			c.ImgPerSec[key] = v
		}
		imgs := float64(t.Epochs) * float64(trainImages(t.Data))
		c.Images += imgs
		h := imgs / v / 3600
		c.TaskHours += h
		c.CoreHours += h * float64(t.Threads)
	}
	return c, nil
}
