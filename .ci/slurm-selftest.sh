#!/usr/bin/env bash
# Self-test of the CI Slurm cluster (.ci/slurm-cluster.sh), and the template of .ci/cluster-test.sh:
# a 4-task array job (2 at a time) of a resumable shell task; task 1 gets SIGTERM mid-run
# (scancel --signal=TERM --batch: the batch script itself, which traps it, saves and exits 143),
# is requeued (scontrol requeue) and resumes from its saved step; every task must finish.
#
#   .ci/slurm-selftest.sh     exit 0: passed; 3: skipped (not root / no apt-get); 1: failed
#
# Brings the cluster up and always takes it down again (unless CAPSTAN_SLURM_KEEP=1).
set -euo pipefail
cd "$(dirname "$0")/.."

STEPS="${CAPSTAN_SELFTEST_STEPS:-20}" # seconds of work per task
TIMEOUT="${CAPSTAN_SELFTEST_TIMEOUT:-300}"

say() { printf 'slurm-selftest: %s\n' "$*" >&2; }
die() {
	printf 'slurm-selftest: FAIL: %s\n' "$*" >&2
	exit 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/capstan-slurm-selftest.XXXXXX")
cleanup() {
	local st=$?
	if [ "$st" != 0 ] && [ "$st" != 3 ]; then
		say "logs of the failed run:"
		tail -n 30 "$work"/logs/*.out >&2 2>/dev/null || true
		squeue -r >&2 2>/dev/null || true
	fi
	if [ "$st" != 3 ] && [ "${CAPSTAN_SLURM_KEEP:-}" != 1 ]; then .ci/slurm-cluster.sh down || true; fi # 3: up skipped, started nothing
	rm -rf "$work"
	exit "$st"
}
trap cleanup EXIT # also after a failed up: down stops whatever it started
rc=0
.ci/slurm-cluster.sh up || rc=$?
[ "$rc" = 0 ] || exit "$rc" # 3: skipped (the SKIP line is printed)
mkdir -p "$work/logs"

# The task: STEPS one-second steps; the step count is its checkpoint, saved on SIGTERM; a task that
# finds its "done" marker exits 0 at once (like sweep run finding its result file).
cat >"$work/task.sh" <<'EOF'
#!/bin/bash
set -u
i=${SLURM_ARRAY_TASK_ID:?no SLURM_ARRAY_TASK_ID}
d="$WORK/t$i"
mkdir -p "$d"
if [ -e "$d/done" ]; then echo "task $i: already done"; exit 0; fi
n=0
if [ -e "$d/saved" ]; then n=$(cat "$d/saved"); echo "task $i: resumed from step $n"; fi
echo "task $i: start job=$SLURM_JOB_ID array_job=$SLURM_ARRAY_JOB_ID restart=${SLURM_RESTART_COUNT:-0} at $(date +%s)"
save() {
	echo "$n" >"$d/saved.tmp" && mv "$d/saved.tmp" "$d/saved"
	echo "task $i: SIGTERM at step $n: saved"
	exit 143
}
trap save TERM
while [ "$n" -lt "$STEPS" ]; do
	sleep 1 & wait $! # a foreground sleep would delay the trap until it ends
	n=$((n + 1))
	echo "$n" >"$d/progress"
done
echo "$n" >"$d/done"
echo "task $i: finished at step $n at $(date +%s)"
EOF
chmod +x "$work/task.sh"

t0=$SECONDS
job=$(WORK="$work" STEPS="$STEPS" sbatch --parsable --export=ALL --array=0-3%2 --requeue --signal=B:TERM@60 \
	--open-mode=append --time=10:00 --cpus-per-task=1 --mem=100M --job-name=capstan-selftest \
	--chdir="$work" --output="$work/logs/%A_%a.out" "$work/task.sh")
job=${job%%;*}
say "submitted array job $job (4 tasks, 2 at a time, $STEPS s each)"

# until task 1 runs and has done a few steps
until [ "$(cat "$work/t1/progress" 2>/dev/null || echo 0)" -ge 3 ]; do
	((SECONDS - t0 < TIMEOUT)) || die "task ${job}_1 did not start within ${TIMEOUT}s"
	sleep 0.5
done
say "task ${job}_1 running ($(squeue -h -r -j "$job" -o '%i %T' | tr '\n' ' ')): scancel --signal=TERM --batch ${job}_1"
# scancel delivers the signal, then (22.05) retries while the task is exiting and returns
# ESLURM_ALREADY_DONE (exit 229) when the trap was quick: judge by the task's saved marker instead
scancel --signal=TERM --batch "${job}_1" 2>"$work/scancel.err" || say "scancel exited $? (229: ESLURM_ALREADY_DONE, the task ended meanwhile) $(tail -n 1 "$work/scancel.err")"
until [ -e "$work/t1/saved" ]; do
	((SECONDS - t0 < TIMEOUT)) || die "task ${job}_1 did not save after SIGTERM"
	sleep 0.2
done
saved=$(cat "$work/t1/saved")
# scontrol requeue refuses a job that is still completing: retry until it is pending again
until scontrol requeue "${job}_1" 2>"$work/requeue.err"; do
	((SECONDS - t0 < TIMEOUT)) || die "scontrol requeue ${job}_1: $(cat "$work/requeue.err")"
	sleep 0.5
done
say "task ${job}_1 saved at step $saved and was requeued ($(squeue -h -r -j "${job}_1" -o '%T %r' || true)) at $((SECONDS - t0))s"

while [ -n "$(squeue -h -r -j "$job" 2>/dev/null)" ]; do
	((SECONDS - t0 < TIMEOUT)) || die "array job $job not finished within ${TIMEOUT}s: $(squeue -h -r -j "$job" -o '%i %T %r' | tr '\n' ' ')"
	sleep 1
done
say "array job $job finished in $((SECONDS - t0))s"

for i in 0 1 2 3; do
	out="$work/logs/${job}_$i.out"
	[ -s "$out" ] || die "task $i: no output file $out"
	[ "$(cat "$work/t$i/done" 2>/dev/null)" = "$STEPS" ] || die "task $i: not finished ($out: $(tail -n 3 "$out" | tr '\n' ' '))"
	grep -q "task $i: finished at step $STEPS" "$out" || die "task $i: no finish line in $out"
done
out1="$work/logs/${job}_1.out"
grep -q "task 1: SIGTERM at step $saved: saved" "$out1" || die "task 1: no save line in $out1"
grep -q "task 1: resumed from step $saved" "$out1" || die "task 1: the requeued run did not resume from step $saved ($out1)"
[ "$(grep -c 'task 1: start' "$out1")" = 2 ] || die "task 1: expected 2 runs in $out1"
{ [ "$saved" -gt 0 ] && [ "$saved" -lt "$STEPS" ]; } || die "task 1: saved step $saved is not mid-run"
say "task 1's log:"
sed 's/^/    /' "$out1" >&2
say "PASS: 4 tasks finished; task 1 was stopped at step $saved, requeued and resumed; $((SECONDS - t0))s"
