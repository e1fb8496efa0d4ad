#!/usr/bin/env bash
# budget.sh BASE counts what a submission of the commits BASE..HEAD costs
# against the workplace's limits (docs/reproduction.md, "The recipe"):
#   - diffs: the diffs of all the commits added up, a text file's as its
#     patch text, a binary file's whole, counted here as its old blob plus
#     its new one (an upper bound: a run's checkpoint rewritten costs
#     both), so that a file added in one commit and changed or removed in
#     a later one counts more than once, as it does; limit 256 MiB;
#   - packed: the commits packed as git sends them (a bundle); 512 MiB;
#   - the largest file of HEAD; 50 MB.
# BASE is the last commit that landed (the HEAD a session started from).
# Exits 1 when a limit is passed, so it can guard a push.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -eq 1 ] || { echo "usage: $0 BASE (the commit the session started from)" >&2; exit 2; }
base=$(git rev-parse --verify "$1^{commit}")
limit_diff=$((256 << 20))
limit_pack=$((512 << 20))
limit_file=50000000
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
total=0
for c in $(git rev-list --reverse "$base..HEAD"); do
	text=$(git show --format= --no-renames --no-ext-diff "$c" | wc -c)
	bin=0
	while IFS=$'\t' read -r added deleted path; do
		[ "$added" = "-" ] || continue
		for rev in "$c^" "$c"; do
			if s=$(git cat-file -s "$rev:$path" 2>/dev/null); then
				bin=$((bin + s))
			fi
		done
	done < <(git show --format= --no-renames --numstat "$c")
	total=$((total + text + bin))
	printf '%s %8s MiB text %8s MiB binary  %s\n' "${c:0:9}" "$(mib "$text")" "$(mib "$bin")" "$(git log -1 --format=%s "$c" | cut -c1-60)"
done
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
packed=0
if [ "$(git rev-parse HEAD)" != "$base" ]; then
	git bundle create "$tmp" "$base..HEAD" 2>/dev/null
	packed=$(stat -c %s "$tmp")
fi
largest=$(git ls-tree -r -l HEAD | sort -k4 -n | tail -n 1)
lsize=$(echo "$largest" | awk '{print $4}')
fail=0
printf 'diffs  %8s MiB of %d MiB\n' "$(mib "$total")" $((limit_diff >> 20))
printf 'packed %8s MiB of %d MiB\n' "$(mib "$packed")" $((limit_pack >> 20))
printf 'largest file %s bytes (%s), limit %s\n' "$lsize" "$(echo "$largest" | cut -f 2)" "$limit_file"
[ "$total" -le "$limit_diff" ] || { echo "$0: the diffs are over the limit: the submission would be refused whole" >&2; fail=1; }
[ "$packed" -le "$limit_pack" ] || { echo "$0: the pack is over the limit" >&2; fail=1; }
[ "$lsize" -le "$limit_file" ] || { echo "$0: a file is over 50 MB" >&2; fail=1; }
exit $fail
