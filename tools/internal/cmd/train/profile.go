package train

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/tools/internal/cli"
	"github.com/capstan-ml/capstan/train"
)

// profileBatch is -profile's batch when -batch is not given: the deep
// model's batch of the benchmarks and docs/performance.md.
const profileBatch = 128

// runProfile runs -profile: the per-operation profile of -model at -batch
// and -threads, printed as Markdown, with -cpuprofile's pprof file.
func runProfile(f *flags) error {
	if !f.given["profile"] {
		return cli.Usagef("-cpuprofile %s: needs -profile STEPS (it profiles the -profile run)", *f.cpuprof)
	}
	if err := cli.Int("profile", *f.profile, 1, maxProfileSteps); err != nil {
		return err
	}
	for _, name := range []string{"resume", "data", "data-dir", "out", "overwrite", "telemetry", "target", "epochs", "val"} {
		if f.given[name] {
			return cli.Usagef("-%s: -profile trains no run (it times steps on a synthetic batch); leave -%s out", name, name)
		}
	}
	cfg, err := capsnet.LoadConfig(*f.model)
	if err != nil {
		return fmt.Errorf("-model: %w", err)
	}
	batch := *f.batch
	if !f.given["batch"] {
		batch = profileBatch
	}
	var prof *os.File
	if *f.cpuprof != "" {
		if err := cli.CheckOutputs([]cli.Path{{Flag: "-cpuprofile", Value: *f.cpuprof}}, []cli.Path{cli.ModelInput(*f.model)}); err != nil {
			return err
		}
		w, err := os.Create(*f.cpuprof)
		if err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer w.Close()
		prof = w
		if err := pprof.StartCPUProfile(w); err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	fmt.Fprintf(os.Stderr, "capstan train -profile: %d steps of %s at batch %d on %d thread(s)…\n", *f.profile, cfg.Name, batch, *f.threads)
	p, err := train.ProfileModel(cfg, batch, *f.threads, *f.profile, *f.seed)
	if err != nil {
		return flagError(err, badValue(err))
	}
	if err := p.WriteMarkdown(os.Stdout); err != nil {
		return err
	}
	if *f.cpuprof != "" {
		pprof.StopCPUProfile()
		if err := prof.Close(); err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		cli.Wrote(os.Stderr, *f.cpuprof, "CPU profile: go tool pprof -top "+cli.ShellQuote(*f.cpuprof))
	}
	return nil
}
