package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/capstan-ml/capstan/capsnet"
	"github.com/capstan-ml/capstan/capsnet/analysis"
	"github.com/capstan-ml/capstan/train/runfile"
)

// Bounds on the untrusted files Collect reads.
const (
	// MaxResultBytes bounds a result file (the largest grid model's
	// analysis, with its per-coupling statistics, is a few MiB).
	MaxResultBytes = 64 << 20
	// maxLayers bounds the capsule layers of a result's analysis.
	maxLayers = 1024
)

// Problem is a task Collect could not count: its result file is missing,
// says the task failed, or is unreadable or invalid.
type Problem struct {
	Index   int    `json:"index"`
	Model   string `json:"model"`
	Seed    uint64 `json:"seed"`
	Result  string `json:"result"`
	Problem string `json:"problem"`
}

// Accuracy is one routing kind of one architecture over its seeds: the
// mean and population standard deviation over the seeds that are done of
// the evaluation-set, validation and test accuracy (0..1), and how many
// seeds reached the target.
type Accuracy struct {
	Seeds   int            `json:"seeds"`
	Reached int            `json:"reached_target"`
	Eval    analysis.Value `json:"eval_acc"`
	Val     analysis.Value `json:"val_acc"`
	Test    analysis.Value `json:"test_acc"`
}

// Arch is one architecture of the sweep: its grid coordinates, parameter
// count (of the RBA model; another kind's differs by the priors) and
// accuracies under each routing kind: RBA (routing by agreement) and
// Uniform (the baseline), the paper's pair, always; Kinds every kind of
// Summary.Routing by name, those two included (a consumer of the JSON
// that knows only "rba" and "uniform" reads them as before).
type Arch struct {
	Arch     string              `json:"arch"`
	Depth    int                 `json:"depth"`
	Capsules int                 `json:"capsules"`
	Dim      int                 `json:"dim"`
	Params   int64               `json:"params"`
	RBA      Accuracy            `json:"rba"`
	Uniform  Accuracy            `json:"uniform"`
	Kinds    map[string]Accuracy `json:"kinds"`
	// reports are the analyses of the RBA seeds.
	reports []analysis.Report
	// model is the model of its tasks (a preset's name or a config file).
	model string
}

// Of returns the architecture's accuracy under routing kind name: no
// seeds (NaN figures) when it has none.
func (a Arch) Of(kind string) Accuracy {
	if acc, ok := a.Kinds[kind]; ok {
		return acc
	}
	switch kind {
	case rbaKind():
		return a.RBA
	case baselineKind():
		return a.Uniform
	}
	return (&accumulator{}).accuracy()
}

// rbaKind is the name of routing by agreement: the presets' default kind,
// the kind of the best models and of Tables 1 and 2.
func rbaKind() string { return capsnet.DefaultRouting().Name }

// baselineKind is the name of the first baseline kind of
// capsnet.RoutingKinds (uniform routing): Arch.Uniform.
func baselineKind() string {
	for _, k := range capsnet.RoutingKinds {
		if k.Baseline {
			return k.Name
		}
	}
	return ""
}

// Best is a best RBA model (highest mean evaluation accuracy) overall or
// at one depth, with the uniform routing baseline of its architecture in
// Arch.Uniform and Tables 1 and 2 over its seeds' analyses (nil when no
// seed has one; TablesError says why when they disagree).
type Best struct {
	Scope       string           `json:"scope"` // "overall" or "depth N"
	Arch        Arch             `json:"arch"`
	Tables      *analysis.Tables `json:"tables,omitempty"`
	TablesError string           `json:"tables_error,omitempty"`
}

// SummarySchema is the version of the JSON that Summary.WriteJSON
// writes (tools/sweep collect -json), its "schema" key: docs/json.md
// documents it. A change of its keys or their meaning takes the next
// number.
const SummarySchema = "capstan-sweep-collect/2"

// Summary is what Collect makes of a sweep's result files; its JSON keys
// are snake_case.
type Summary struct {
	// Schema is SummarySchema (WriteJSON sets it).
	Schema   string `json:"schema"`
	Manifest string `json:"manifest"`
	// Eval names the evaluation set (of the first task).
	Eval  string `json:"eval"`
	Tasks int    `json:"tasks"`
	Done  int    `json:"done"`
	// Missing tasks have no result file yet; Failed ones a result that
	// says so; Invalid ones a result file that is unreadable, malformed,
	// of another task or out of range.
	Missing []Problem `json:"missing"`
	Failed  []Problem `json:"failed"`
	Invalid []Problem `json:"invalid"`
	// Routing are the routing kinds of the tables' columns, in
	// capsnet.RoutingKinds' order: RBA and uniform always (the paper's
	// pair), every other kind once a task of it is done (no column of a
	// kind without results).
	Routing []string `json:"routing"`
	// Archs are the architectures in manifest order.
	Archs []Arch `json:"archs"`
	// Best are the best RBA models: overall, then per depth (ascending).
	Best []Best `json:"best"`
	// Variants are the done tasks, in manifest order, of a sweep whose
	// tasks have optimizer settings or telemetry (Grid.WeightDecay, …,
	// Grid.Telemetry): the settings, dead capsules and training deaths of
	// each (absent otherwise).
	Variants []Variant `json:"variants,omitempty"`
	// DepthTrend groups the variants with an analysis by depth (routing
	// layers), routing kind and architecture, over their seeds, when they
	// span at least two depths (absent otherwise; issue 28).
	DepthTrend []DepthGroup `json:"depth_trend,omitempty"`
}

// jfloat is a float64 whose JSON null (how a result writes NaN) decodes
// as NaN.
type jfloat float64

func (f *jfloat) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = jfloat(math.NaN())
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = jfloat(v)
	return nil
}

// resultFile is the part of a Result that Collect reads: the analysis
// without its per-capsule and per-coupling arrays (skipped, not decoded).
type resultFile struct {
	Task       Task    `json:"task"`
	Status     string  `json:"status"`
	Error      string  `json:"error"`
	Params     int64   `json:"params"`
	ReachedAcc bool    `json:"reached_target"`
	ValAcc     jfloat  `json:"val_acc"`
	TestAcc    jfloat  `json:"test_acc"`
	EvalAcc    jfloat  `json:"eval_acc"`
	Deaths     *Deaths `json:"deaths"`
	Analysis   *struct {
		Thresholds analysis.Thresholds
		Layers     []struct {
			Name               string
			N, D, K, CDS       int
			CNS, CNM, CAS, CAR jfloat
			CDR                jfloat
		}
		Routing []struct {
			From, To                        string
			K, NIn, NOut, AliveIn, AliveOut int
			DYR, DYS                        jfloat
		}
	} `json:"analysis"`
}

// report converts the analysis read to an analysis.Report (without the
// arrays Summarize does not use), checking its sizes.
func (r *resultFile) report() (*analysis.Report, error) {
	a := r.Analysis
	if a == nil {
		return nil, nil
	}
	if len(a.Layers) == 0 || len(a.Layers) > maxLayers || len(a.Routing) != len(a.Layers)-1 {
		return nil, fmt.Errorf("analysis: %d layers and %d routing layers", len(a.Layers), len(a.Routing))
	}
	if err := a.Thresholds.Validate(); err != nil {
		return nil, fmt.Errorf("analysis: %w", err)
	}
	rep := &analysis.Report{Thresholds: a.Thresholds}
	for i, L := range a.Layers {
		if L.N <= 0 || L.K < 0 || L.CDS < 0 || L.CDS > L.N {
			return nil, fmt.Errorf("analysis: layer %d: %d capsules, %d images, %d dead", i, L.N, L.K, L.CDS)
		}
		rep.Layers = append(rep.Layers, analysis.LayerReport{Name: L.Name, N: L.N, D: L.D, K: L.K, CDS: L.CDS,
			CNS: float64(L.CNS), CNM: float64(L.CNM), CAS: float64(L.CAS), CAR: float64(L.CAR), CDR: float64(L.CDR)})
	}
	for i, R := range a.Routing {
		if R.NIn != a.Layers[i].N || R.NOut != a.Layers[i+1].N || R.AliveIn < 0 || R.AliveIn > R.NIn || R.AliveOut < 0 || R.AliveOut > R.NOut {
			return nil, fmt.Errorf("analysis: routing %d: %d→%d capsules, %d→%d alive, not its layers'", i, R.NIn, R.NOut, R.AliveIn, R.AliveOut)
		}
		rep.Routing = append(rep.Routing, analysis.RoutingReport{From: R.From, To: R.To, K: R.K, NIn: R.NIn, NOut: R.NOut,
			AliveIn: R.AliveIn, AliveOut: R.AliveOut, DYR: float64(R.DYR), DYS: float64(R.DYS)})
	}
	return rep, nil
}

// taskPath resolves a path of a task relative to the manifest's
// directory dir unless absolute.
func taskPath(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// outcome is what reading one task's result gave.
type outcome struct {
	kind   int // done, missing, failed, invalid
	msg    string
	res    *resultFile
	report *analysis.Report
}

const (
	outDone = iota
	outMissing
	outFailed
	outInvalid
)

// readResult reads and checks task t's result file.
func readResult(dir string, t Task) outcome {
	if t.Result == "" {
		return outcome{kind: outInvalid, msg: "no result path in the manifest"}
	}
	path := taskPath(dir, t.Result)
	f, err := runfile.Open(path) // a FIFO or device is refused, not waited on
	if errors.Is(err, fs.ErrNotExist) {
		return outcome{kind: outMissing, msg: "no result file"}
	}
	if err != nil {
		return outcome{kind: outInvalid, msg: oneLine(err.Error())}
	}
	defer f.Close()
	size := int64(512)
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		size = min(st.Size(), MaxResultBytes) + 1
	}
	b, err := readAll(io.LimitReader(f, MaxResultBytes+1), int(size))
	if err != nil {
		return outcome{kind: outInvalid, msg: oneLine(err.Error())}
	}
	if len(b) > MaxResultBytes {
		return outcome{kind: outInvalid, msg: fmt.Sprintf("more than %d MiB", MaxResultBytes>>20)}
	}
	if err := checkNesting(b); err != nil {
		return outcome{kind: outInvalid, msg: "not a result: " + err.Error()}
	}
	var r resultFile
	if err := json.Unmarshal(stripArrays(make([]byte, 0, min(len(b), 1<<16)), b), &r); err != nil {
		return outcome{kind: outInvalid, msg: "not a result: " + oneLine(err.Error())}
	}
	if r.Task.Index != t.Index || r.Task.Arch != t.Arch || r.Task.Routing != t.Routing || r.Task.Seed != t.Seed || r.Task.Model != t.Model {
		return outcome{kind: outInvalid, msg: fmt.Sprintf("the result of another task (%d, %s, %s, seed %d)", r.Task.Index, r.Task.Model, r.Task.Routing, r.Task.Seed)}
	}
	switch r.Status {
	case "failed":
		msg := oneLine(r.Error)
		if msg == "" {
			msg = "failed (no error given)"
		}
		return outcome{kind: outFailed, msg: msg}
	case "done":
	default:
		return outcome{kind: outInvalid, msg: fmt.Sprintf("status %q, want done or failed", r.Status)}
	}
	for _, a := range []struct {
		name string
		v    jfloat
	}{{"eval_acc", r.EvalAcc}, {"val_acc", r.ValAcc}, {"test_acc", r.TestAcc}} {
		if v := float64(a.v); math.IsNaN(v) || v < 0 || v > 1 {
			return outcome{kind: outInvalid, msg: fmt.Sprintf("%s %v: want 0 to 1", a.name, v)}
		}
	}
	if r.Params <= 0 || r.Params > 1<<40 {
		return outcome{kind: outInvalid, msg: fmt.Sprintf("params %d out of range", r.Params)}
	}
	rep, err := r.report()
	if err != nil {
		return outcome{kind: outInvalid, msg: oneLine(err.Error())}
	}
	if r.Deaths != nil {
		if err := r.Deaths.check(); err != nil {
			return outcome{kind: outInvalid, msg: oneLine(err.Error())}
		}
	}
	r.Analysis = nil
	return outcome{kind: outDone, res: &r, report: rep}
}

// readAll reads r to its end into a buffer of capacity size to start
// with (the file's size, so that it needs no growing).
func readAll(r io.Reader, size int) ([]byte, error) {
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// oneLine shortens s to one line of at most 300 bytes.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:297] + "..."
	}
	return s
}

// Collect reads the result file of every task of the manifest at
// manifestPath (in parallel, each bounded by MaxResultBytes) and
// summarizes them: tasks without a result, failed or with an invalid one
// are listed, never an error; accuracies per architecture and routing
// kind over the seeds; the best RBA models overall and per depth with
// Tables 1 and 2 over their seeds. Only an unreadable manifest is an
// error.
func Collect(manifestPath string) (*Summary, error) {
	tasks, err := ReadManifest(manifestPath)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(manifestPath)
	outs := make([]outcome, len(tasks))
	var wg sync.WaitGroup
	next := make(chan int, len(tasks))
	for i := range tasks {
		next <- i
	}
	close(next)
	for w := 0; w < min(runtime.GOMAXPROCS(0)*2, len(tasks)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				outs[i] = readResult(dir, tasks[i])
			}
		}()
	}
	wg.Wait()
	return summarize(manifestPath, tasks, outs), nil
}

// accumulator gathers one routing kind's accuracies over seeds.
type accumulator struct {
	eval, val, test []float64
	reached         int
}

func (a *accumulator) accuracy() Accuracy {
	return Accuracy{Seeds: len(a.eval), Reached: a.reached, Eval: meanStd(a.eval), Val: meanStd(a.val), Test: meanStd(a.test)}
}

// meanStd is the mean and population standard deviation (NaN: none).
func meanStd(xs []float64) analysis.Value {
	if len(xs) == 0 {
		return analysis.Value{Mean: math.NaN(), Std: math.NaN()}
	}
	var m, v float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return analysis.Value{Mean: m, Std: math.Sqrt(v / float64(len(xs)))}
}

// archAcc gathers one architecture's results: its accuracies per
// routing kind.
type archAcc struct {
	arch Arch
	acc  map[string]*accumulator
}

// add counts a done result o of routing kind kind: its accuracies; the
// parameters and the analysis of an RBA result (the parameters of
// another kind when no RBA result has them).
func (a *archAcc) add(kind string, o outcome) {
	acc := a.acc[kind]
	if acc == nil {
		acc = &accumulator{}
		a.acc[kind] = acc
	}
	if kind == rbaKind() {
		a.arch.Params = o.res.Params
		if o.report != nil {
			a.arch.reports = append(a.arch.reports, *o.report)
		}
	} else if a.arch.Params == 0 {
		a.arch.Params = o.res.Params
	}
	acc.eval = append(acc.eval, float64(o.res.EvalAcc))
	acc.val = append(acc.val, float64(o.res.ValAcc))
	acc.test = append(acc.test, float64(o.res.TestAcc))
	if o.res.ReachedAcc {
		acc.reached++
	}
}

// result returns the architecture with its accuracies under the kinds.
func (a *archAcc) result(kinds []string) Arch {
	out := a.arch
	of := func(kind string) Accuracy {
		if acc := a.acc[kind]; acc != nil {
			return acc.accuracy()
		}
		return (&accumulator{}).accuracy()
	}
	out.RBA, out.Uniform = of(rbaKind()), of(baselineKind())
	out.Kinds = make(map[string]Accuracy, len(kinds))
	for _, k := range kinds {
		out.Kinds[k] = of(k)
	}
	return out
}

// columnKinds are the routing kinds of the tables: RBA and the baseline
// always, every other kind of done (a task of it done), in
// capsnet.RoutingKinds' order.
func columnKinds(done map[string]bool) []string {
	var kinds []string
	for _, k := range capsnet.RoutingKinds {
		if k.Name == rbaKind() || k.Name == baselineKind() || done[k.Name] {
			kinds = append(kinds, k.Name)
		}
	}
	return kinds
}

func summarize(manifestPath string, tasks []Task, outs []outcome) *Summary {
	s := &Summary{Schema: SummarySchema, Manifest: manifestPath, Tasks: len(tasks), Eval: tasks[0].Eval}
	var order []*archAcc
	byName := map[string]*archAcc{}
	done := map[string]bool{}
	variants := hasVariants(tasks)
	for i, t := range tasks {
		o := outs[i]
		p := Problem{Index: t.Index, Model: t.Model, Seed: t.Seed, Result: t.Result, Problem: o.msg}
		switch o.kind {
		case outMissing:
			s.Missing = append(s.Missing, p)
		case outFailed:
			s.Failed = append(s.Failed, p)
		case outInvalid:
			s.Invalid = append(s.Invalid, p)
		}
		name := t.Arch
		if name == "" {
			name = t.Model
		}
		a := byName[name]
		if a == nil {
			a = &archAcc{arch: Arch{Arch: name, Depth: t.Depth, Capsules: t.Capsules, Dim: t.Dim, model: t.Model}, acc: map[string]*accumulator{}}
			byName[name] = a
			order = append(order, a)
		}
		if o.kind != outDone {
			continue
		}
		s.Done++
		done[t.Routing] = true
		a.add(t.Routing, o)
		if variants {
			s.Variants = append(s.Variants, variantOf(t, o))
		}
	}
	s.Routing = columnKinds(done)
	for _, a := range order {
		s.Archs = append(s.Archs, a.result(s.Routing))
	}
	s.Best = bestModels(s.Archs)
	s.DepthTrend = depthTrend(s.Variants)
	return s
}

// better reports whether a is a better RBA model than b: a higher mean
// evaluation accuracy, then fewer parameters (then the manifest's order).
func better(a, b *Arch) bool {
	if a.RBA.Eval.Mean != b.RBA.Eval.Mean {
		return a.RBA.Eval.Mean > b.RBA.Eval.Mean
	}
	return a.Params < b.Params
}

// bestModels picks the best RBA architecture overall and per depth (of
// those with at least one RBA seed done) and summarizes its seeds'
// analyses. The best models and Tables 1 and 2 stay RBA's alone, as in
// the paper, whatever other routing kinds the sweep has: the other kinds'
// accuracies stand beside each best model (its Arch), their analyses are
// not summarized (a best model or tables per kind would be another
// appendix; the result files keep every task's analysis).
func bestModels(archs []Arch) []Best {
	var overall *Arch
	perDepth := map[int]*Arch{}
	for i := range archs {
		a := &archs[i]
		if a.RBA.Seeds == 0 {
			continue
		}
		if overall == nil || better(a, overall) {
			overall = a
		}
		if a.Depth > 0 && (perDepth[a.Depth] == nil || better(a, perDepth[a.Depth])) {
			perDepth[a.Depth] = a
		}
	}
	if overall == nil {
		return nil
	}
	best := []Best{newBest("overall", overall)}
	depths := make([]int, 0, len(perDepth))
	for d := range perDepth {
		depths = append(depths, d)
	}
	sort.Ints(depths)
	for _, d := range depths {
		best = append(best, newBest(fmt.Sprintf("depth %d", d), perDepth[d]))
	}
	return best
}

func newBest(scope string, a *Arch) Best {
	b := Best{Scope: scope, Arch: *a}
	if len(a.reports) > 0 {
		t, err := analysis.Summarize(a.reports)
		if err != nil {
			b.TablesError = oneLine(err.Error())
		} else {
			b.Tables = &t
		}
	}
	return b
}

// skipKeys are the analysis' per-capsule and per-coupling arrays, which
// Collect does not use: stripArrays cuts them before decoding, the bulk
// of a result file (a layer of 64 capsules routing into 64 has 2·4096
// coupling figures).
var skipKeys = [][]byte{[]byte("NormMean"), []byte("NormStd"), []byte("Dead"), []byte("CouplingMean"), []byte("CouplingStd")}

// stripArrays appends to dst the JSON text b with the value of every key
// of skipKeys that is an array without strings or nested arrays (numbers,
// booleans, null) replaced by null. It jumps from quote to quote (the
// arrays hold none) and looks at each byte a bounded number of times, so
// it runs at memory speed in linear time; what it leaves is
// decoded, and checked, by encoding/json.
func stripArrays(dst, b []byte) []byte {
	i := 0 // b[:i] is copied to dst
	pos := 0
	for {
		q := bytes.IndexByte(b[pos:], '"')
		if q < 0 {
			break
		}
		start := pos + q + 1
		end := start // the closing quote
		for end < len(b) && b[end] != '"' {
			if b[end] == '\\' {
				end++
			}
			end++
		}
		if end >= len(b) {
			break
		}
		pos = end + 1
		key := b[start:end]
		match := false
		for _, k := range skipKeys {
			if bytes.Equal(key, k) {
				match = true
				break
			}
		}
		if !match {
			continue
		}
		j := pos
		for j < len(b) && isSpace(b[j]) {
			j++
		}
		if j >= len(b) || b[j] != ':' {
			continue
		}
		j++
		for j < len(b) && isSpace(b[j]) {
			j++
		}
		if j >= len(b) || b[j] != '[' {
			continue
		}
		// The body ends at the first quote or bracket: a later key's
		// body starts after it, so no byte is scanned twice.
		close := bytes.IndexAny(b[j+1:], `"[]`)
		if close < 0 {
			break
		}
		if b[j+1+close] != ']' {
			continue
		}
		dst = append(dst, b[i:j]...)
		dst = append(dst, "null"...)
		i = j + 1 + close + 1
		pos = i
	}
	return append(dst, b[i:]...)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
