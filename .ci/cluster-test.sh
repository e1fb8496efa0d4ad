#!/usr/bin/env bash
# The CI cluster test: the tiny sweep as a Slurm array job on a real single-node cluster
# (.ci/slurm-cluster.sh), one task preempted mid-run (SIGTERM to its batch step, which is `exec sweep
# run`: it saves and exits 143) and requeued; then `sweep collect`; then every task run again one by
# one without Slurm in a second directory: each result must be present, done, and have the same
# params_sha256 (same seeds, same threads: bitwise-identical parameters).
#
#   .ci/cluster-test.sh    exit 0: passed; 3: skipped (one "SKIP: ..." line: not root, no apt-get,
#                          or ./tools/sweep not there yet); 1: failed
#
# The grid is the tiny preset with CAPSTAN_CLUSTER_EPOCHS epochs (default 8) instead of 2: on a fast
# CPU a 2-epoch tiny task ends within 2 s of its start, before the test can signal it (a CI run on
# 2026-11-23 failed so). The preempted task gets SIGTERM as soon as its first checkpoint exists, with
# the rest of its epochs (several seconds) as the margin; no fixed sleep.
#
# CAPSTAN_CLUSTER_TIMEOUT (s, default 1800) bounds each wait; CAPSTAN_SLURM_KEEP=1 leaves the cluster up;
# CAPSTAN_SWEEP_BIN=FILE uses FILE as the sweep binary instead of building ./tools/sweep (to test this
# script with a stand-in).
set -euo pipefail
cd "$(dirname "$0")/.."

TIMEOUT="${CAPSTAN_CLUSTER_TIMEOUT:-1800}"
EPOCHS="${CAPSTAN_CLUSTER_EPOCHS:-8}"
case "$EPOCHS" in [2-9] | [1-9][0-9]) ;; *)
	printf 'cluster-test: FAIL: CAPSTAN_CLUSTER_EPOCHS=%s: want 2 to 99\n' "$EPOCHS" >&2
	exit 1
	;;
esac
PREEMPT=1 # the array index that gets SIGTERM and is requeued

say() { printf 'cluster-test: %s\n' "$*" >&2; }
die() {
	printf 'cluster-test: FAIL: %s\n' "$*" >&2
	exit 1
}

if [ -z "${CAPSTAN_SWEEP_BIN:-}" ] && [ ! -d tools/sweep ]; then
	echo "SKIP: ./tools/sweep is missing : no sweep to run on the cluster"
	exit 3
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/capstan-cluster-test.XXXXXX")
chmod 755 "$tmp" # slurmd runs the tasks as root, but keep it readable for a non-root SlurmUser too
cluster=0
cleanup() {
	local st=$?
	if [ "$st" != 0 ] && [ "$st" != 3 ]; then
		say "task logs of the failed run:"
		tail -n 20 "$tmp"/slurm/logs/*.out >&2 2>/dev/null || true
		squeue -r >&2 2>/dev/null || true
	fi
	if [ "$cluster" = 1 ] && [ "$st" != 3 ] && [ "${CAPSTAN_SLURM_KEEP:-}" != 1 ]; then .ci/slurm-cluster.sh down || true; fi
	rm -rf "$tmp"
	exit "$st"
}
trap cleanup EXIT

mkdir -p "$tmp/bin"
if [ -n "${CAPSTAN_SWEEP_BIN:-}" ]; then # a stand-in, to test this script itself
	cp "$CAPSTAN_SWEEP_BIN" "$tmp/bin/sweep"
else
	command -v go >/dev/null 2>&1 || die "go is not on PATH: cannot build ./tools/sweep"
	say "go build -o $tmp/bin/sweep ./tools/sweep"
	go build -o "$tmp/bin/sweep" ./tools/sweep || die "go build ./tools/sweep failed"
fi
export PATH="$tmp/bin:$PATH" # sbatch exports the environment: the batch script's `sweep` is this one

rc=0
cluster=1 # from here on, cleanup takes down whatever up started, even when up fails half-way
.ci/slurm-cluster.sh up || rc=$?
[ "$rc" = 0 ] || exit "$rc" # 3: skipped, its SKIP line printed

# field FILE KEY: the string value of "KEY" in a JSON line or file (Go's encoding/json output).
field() { { grep -o "\"$2\": *\"[^\"]*\"" "$1" || true; } | head -n 1 | sed 's/.*: *"\(.*\)"$/\1/'; }
# task LINE: line LINE (1-based) of the first manifest, to a temp file for field.
task() { sed -n "$1p" "$dir/manifest.ndjson" >"$tmp/task.json"; }
# abs BASE PATH: PATH, relative to BASE unless absolute (the manifest's rule).
abs() { case "$2" in /*) echo "$2" ;; *) echo "$1/$2" ;; esac; }

# The tiny preset (train/sweep.Presets) with more epochs: see the header.
grid="$tmp/grid.json"
cat >"$grid" <<EOF
{"name": "tiny-ci", "models": ["tiny-deep"], "routing": ["rba", "uniform"], "seeds": [1, 2],
 "data": "embedded", "eval": "embedded", "k": 200, "target": 0, "epochs": $EPOCHS, "batch": 64, "threads": 1}
EOF

dir="$tmp/slurm"
t0=$SECONDS
sweep plan -grid "$grid" -out "$dir" || die "sweep plan -grid $grid -out $dir failed"
n=$(wc -l <"$dir/manifest.ndjson")
[ "$n" -ge 4 ] || die "sweep plan -grid $grid: $n tasks in $dir/manifest.ndjson, want at least 4"
say "planned $n tasks in $dir/manifest.ndjson"

out=$(sweep slurm -manifest "$dir/manifest.ndjson" -parallel 2 -submit) || die "sweep slurm -submit failed: $out"
job=$(printf '%s\n' "$out" | grep -oE '[0-9]+' | tail -n 1 || true)
{ [ -n "$job" ] && squeue -h -r -j "$job" >/dev/null 2>&1; } || die "no job id in the output of sweep slurm -submit: $out"
say "submitted array job $job ($n tasks, 2 at a time)"

# The preempted task: wait until it runs and has saved its first checkpoint (end of epoch 1), then
# SIGTERM its batch step (the sweep process) at once: its other epochs are the margin.
task $((PREEMPT + 1))
rundir=$(abs "$dir" "$(field "$tmp/task.json" dir)")
result=$(abs "$dir" "$(field "$tmp/task.json" result)")
{ [ -n "$rundir" ] && [ -n "$result" ]; } || die "manifest line $((PREEMPT + 1)): no dir or result field"
short="task ${job}_$PREEMPT finished before it could be preempted: raise CAPSTAN_CLUSTER_EPOCHS (now $EPOCHS)"
until [ "$(squeue -h -j "${job}_$PREEMPT" -o %T 2>/dev/null)" = RUNNING ] && [ -s "$rundir/checkpoint.safetensors" ]; do
	((SECONDS - t0 < TIMEOUT)) || die "task ${job}_$PREEMPT did not save a checkpoint within ${TIMEOUT}s"
	[ ! -e "$result" ] || die "$short"
	sleep 0.2
done
[ ! -e "$result" ] || die "$short"
# shellcheck disable=SC2012 # ls only to show the run dir's files
say "task ${job}_$PREEMPT running in $rundir ($(ls "$rundir" | tr '\n' ' ')): scancel --signal=TERM --batch ${job}_$PREEMPT"
# 22.05's scancel may return 229 (ESLURM_ALREADY_DONE) when the task saved and exited while it retried
scancel --signal=TERM --batch "${job}_$PREEMPT" || say "scancel exited $? (229: the task ended meanwhile)"
until [ "$(squeue -h -j "${job}_$PREEMPT" -o %T 2>/dev/null)" != RUNNING ]; do
	((SECONDS - t0 < TIMEOUT)) || die "task ${job}_$PREEMPT still running ${TIMEOUT}s after SIGTERM"
	sleep 0.5
done
exitcode=$(scontrol show job "${job}_$PREEMPT" 2>/dev/null | grep -o 'ExitCode=[0-9:]*' | head -n 1 || true)
[ ! -e "$result" ] || die "task ${job}_$PREEMPT wrote its result despite SIGTERM ($exitcode): not preempted (it may have ended first: raise CAPSTAN_CLUSTER_EPOCHS, now $EPOCHS)"
# shellcheck disable=SC2012
say "task ${job}_$PREEMPT stopped ($exitcode); run dir now: $(ls "$rundir" | tr '\n' ' ')"
until scontrol requeue "${job}_$PREEMPT" 2>"$tmp/requeue.err"; do
	((SECONDS - t0 < TIMEOUT)) || die "scontrol requeue ${job}_$PREEMPT: $(cat "$tmp/requeue.err")"
	sleep 0.5
done
say "task ${job}_$PREEMPT requeued at $((SECONDS - t0))s"

while [ -n "$(squeue -h -r -j "$job" 2>/dev/null)" ]; do
	((SECONDS - t0 < TIMEOUT)) || die "array job $job not finished within ${TIMEOUT}s: $(squeue -h -r -j "$job" -o '%i %T %r' | tr '\n' ' ')"
	sleep 2
done
wall=$((SECONDS - t0))
say "array job $job finished: $n tasks in ${wall}s wall (plan to last task, one preempted and requeued)"
grep -qi 'resum' "$dir/logs/${job}_$PREEMPT.out" 2>/dev/null ||
	say "note: no line mentioning a resume in $dir/logs/${job}_$PREEMPT.out"

sweep collect -manifest "$dir/manifest.ndjson" -markdown "$dir/appendix.md" || die "sweep collect failed"
[ -s "$dir/appendix.md" ] || die "sweep collect wrote no $dir/appendix.md"

# The same tasks one by one without Slurm (no SLURM_* in the environment), in a second directory.
dir2="$tmp/local"
sweep plan -grid "$grid" -out "$dir2" >/dev/null || die "sweep plan -grid $grid -out $dir2 failed"
[ "$(wc -l <"$dir2/manifest.ndjson")" = "$n" ] || die "the second plan has another task count than the first"
t1=$SECONDS
for ((i = 0; i < n; i++)); do
	env -u SLURM_ARRAY_TASK_ID -u SLURM_JOB_ID -u JOB_COMPLETION_INDEX \
		sweep run -manifest "$dir2/manifest.ndjson" -index "$i" >"$tmp/local-$i.log" 2>&1 ||
		die "sweep run -index $i without Slurm failed: $(tail -n 3 "$tmp/local-$i.log" | tr '\n' ' ')"
done
say "the $n tasks one by one without Slurm: $((SECONDS - t1))s"

fails=0
for ((i = 0; i < n; i++)); do
	task $((i + 1))
	r1=$(abs "$dir" "$(field "$tmp/task.json" result)")
	sed -n "$((i + 1))p" "$dir2/manifest.ndjson" >"$tmp/task2.json"
	r2=$(abs "$dir2" "$(field "$tmp/task2.json" result)")
	[ -s "$r1" ] || { say "task $i: no result $r1 from the Slurm run"; fails=$((fails + 1)); continue; }
	[ -s "$r2" ] || { say "task $i: no result $r2 from the run without Slurm"; fails=$((fails + 1)); continue; }
	s1=$(field "$r1" status) s2=$(field "$r2" status)
	h1=$(field "$r1" params_sha256) h2=$(field "$r2" params_sha256)
	if [ "$s1" != "done" ] || [ "$s2" != "done" ]; then
		say "task $i: status $s1 (Slurm) / $s2 (without): want done"
		fails=$((fails + 1))
	elif [ -z "$h1" ] || [ "$h1" != "$h2" ]; then
		say "task $i: params_sha256 ${h1:-none} (Slurm) != ${h2:-none} (without Slurm)"
		fails=$((fails + 1))
	else
		say "task $i: done, params_sha256 $h1 identical$([ "$i" = "$PREEMPT" ] && echo ' (preempted and requeued)')"
	fi
done
[ "$fails" = 0 ] || die "$fails of $n tasks differ or are missing"
say "PASS: $n tasks on Slurm (task $PREEMPT preempted and requeued) identical to the runs without Slurm; sweep wall ${wall}s"
