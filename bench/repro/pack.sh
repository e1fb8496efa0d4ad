#!/usr/bin/env bash
# pack.sh [-finished] RUN_DIR... stages training run directories for a
# commit in their compact form (docs/reproduction.md, "The recipe": a
# session's submission has a size budget):
#   - checkpoint.safetensors and metrics.ndjson;
#   - the optimizer-STEP.safetensors there (after a SIGTERM stop only the
#     one the checkpoint names is left), or, with -finished (the run reached
#     its target or its last epoch: resuming it trains nothing and needs no
#     optimizer state), none: tracked ones are removed from the index;
#   - the telemetry as telemetry.ndjson.gz, which tools/analyze reads:
#     with -finished max-pooled into at most 1,000 records (go run
#     ./tools/pool, from telemetry.ndjson or, as runs write it by default,
#     telemetry.ndjson.gz; the pooling is recorded in the file's header,
#     and a pooled log cannot be continued; a pooled one is kept) when git
#     does not track the log yet; a log committed earlier (a run that
#     trained over several sessions) is kept whole with its parts, as the
#     run wrote them: pooling it would add a new file and delete the
#     committed ones, which costs the submission more than the new parts
#     and saves nothing (the history keeps them); else
#     whole: a plain telemetry.ndjson (runs with -telemetry-format ndjson,
#     and those before gzip was the default) compressed (gzip -9, through
#     a temporary file and a rename), a telemetry.ndjson.gz as the run
#     wrote it (gzip members); train -resume continues either in place;
#     the plain file is not staged;
#   - the deletion of tracked files that are gone (an earlier optimizer
#     state).
# Stop the run first (kill -TERM: it saves its position inside the epoch).
# Prints the size of what is staged per directory.
set -euo pipefail
cd "$(dirname "$0")/../.."
finished=0
if [ "${1:-}" = "-finished" ]; then
	finished=1
	shift
fi
[ $# -ge 1 ] || { echo "usage: $0 [-finished] RUN_DIR..." >&2; exit 2; }
for d in "$@"; do
	d=${d%/}
	[ -f "$d/checkpoint.safetensors" ] || { echo "$0: $d has no checkpoint.safetensors" >&2; exit 1; }
	if [ -e "$d/lock" ] && command -v fuser >/dev/null && fuser -s "$d/lock" 2>/dev/null; then
		echo "$0: $d is in use by a running trainer; stop it first (kill -TERM)" >&2
		exit 1
	fi
	files=("$d/checkpoint.safetensors" "$d/metrics.ndjson")
	if [ -f "$d/telemetry.ndjson" ] && [ "$finished" = 1 ]; then
		go run ./tools/pool -max 1000 "$d/telemetry.ndjson" "$d/telemetry.ndjson.gz"
		files+=("$d/telemetry.ndjson.gz")
	elif [ -f "$d/telemetry.ndjson" ]; then
		tmp=$(mktemp "$d/.telemetry.ndjson.gz.tmp-XXXXXX")
		gzip -9 -c "$d/telemetry.ndjson" >"$tmp"
		sync "$tmp"
		chmod 644 "$tmp"
		mv "$tmp" "$d/telemetry.ndjson.gz"
		files+=("$d/telemetry.ndjson.gz")
	elif [ -f "$d/telemetry.ndjson.gz" ] && [ "$finished" = 1 ] &&
		! git ls-files --error-unmatch "$d/telemetry.ndjson.gz" >/dev/null 2>&1 &&
		! { gzip -dc "$d/telemetry.ndjson.gz" 2>/dev/null || true; } | head -n 1 | grep -q '"pool":'; then
		shopt -s nullglob
		parts=("$d"/telemetry.ndjson.gz.part[0-9]*)
		shopt -u nullglob
		echo "$d: the whole telemetry log (${#parts[@]} parts after the file) has SHA-256 $(cat "$d/telemetry.ndjson.gz" "${parts[@]}" | sha256sum | cut -c1-64)"
		tmp=$(mktemp "$d/.telemetry.ndjson.gz.tmp-XXXXXX")
		go run ./tools/pool -max 1000 "$d/telemetry.ndjson.gz" "$tmp"
		chmod 644 "$tmp"
		mv "$tmp" "$d/telemetry.ndjson.gz"
		for p in "${parts[@]}"; do
			git rm -q --cached --ignore-unmatch -- "$p"
			rm -f -- "$p"
		done
		files+=("$d/telemetry.ndjson.gz")
	elif [ -f "$d/telemetry.ndjson.gz" ]; then
		shopt -s nullglob
		files+=("$d/telemetry.ndjson.gz" "$d"/telemetry.ndjson.gz.part[0-9]*)
		shopt -u nullglob
	fi
	for f in "${files[@]}"; do
		size=$(stat -c %s "$f")
		[ "$size" -le 50000000 ] || { echo "$0: $f is $size bytes, over the 50 MB a tracked file may have (a log written before its parts existed: split it at the committed size, docs/telemetry.md)" >&2; exit 1; }
	done
	shopt -s nullglob
	opts=("$d"/optimizer-*.safetensors)
	shopt -u nullglob
	if [ "$finished" = 1 ]; then
		for o in "${opts[@]}"; do
			git rm -q --cached --ignore-unmatch -- "$o"
		done
	else
		[ ${#opts[@]} -le 1 ] || { echo "$0: $d holds ${#opts[@]} optimizer states; resume or stop the run so that only the checkpoint's is left" >&2; exit 1; }
		files+=("${opts[@]}")
	fi
	git add -u -- "$d"
	if git ls-files --error-unmatch "$d/telemetry.ndjson" >/dev/null 2>&1 && [ -f "$d/telemetry.ndjson.gz" ]; then
		git rm -q --cached -- "$d/telemetry.ndjson"
	fi
	git add -f -- "${files[@]}"
	bytes=$(du -cb "${files[@]}" | tail -n 1 | cut -f 1)
	echo "$d: staged ${files[*]#"$d/"} ($((bytes / 1048576)) MiB)"
done
