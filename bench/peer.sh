#!/usr/bin/env bash
# bench/peer.sh: Capstan against its peers on this machine, in one command
# (./build.sh bench-peer; docs/benchmarks.md, "Against the peers in one
# command"). COUNT rounds (default 6), each: Capstan's BenchmarkTrainStep and
# BenchmarkInfer (train/), the PyTorch peer on the same cases, Capstan's
# BenchmarkSgemm at n = 128 and 512 (one thread, the default kernels) and the
# OpenBLAS peer at the same sizes (OPENBLAS_NUM_THREADS=1). Running them
# alternately makes drift in load or clock hit both sides alike. Then one
# Markdown table of medians, min–max ranges and the ratio of the medians.
#
# Environment:
#   CAPSTAN_PEERS  the peers' directory, holding torch_capsnet.py and
#                  sgemm_openblas.py (default ../shared/peers from the repository root)
#   COUNT          rounds (default 6; 1 with QUICK)
#   BENCHTIME      -test.benchtime of the Capstan benchmarks (default Go's 1s; 1x with QUICK)
#   THREADS        threads of the batched cases, both sides (default 2)
#   PYTHON         the Python with Debian's python3-torch and python3-numpy (default /usr/bin/python3)
#   QUICK=1        a smoke run: COUNT=1, BENCHTIME=1x, output directory suffixed -quick
#
# Writes bench/peer-<cpu family>-<model>-<date>[-quick]/ (or, when a run of
# the same day and CPU is there, the first free of <date>b, <date>c, …): capstan.txt and
# capstan-sgemm.txt (benchstat-ready, every round), pytorch.jsonl,
# openblas.txt, samples.tsv (case, side, value per round) and table.md.
# A missing peer (no script, no python3-torch, no python3-numpy) is named
# with where it was looked for and skipped; Capstan always runs.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '== %s\n' "$*"; }
die() { printf 'bench/peer.sh: %s\n' "$*" >&2; exit 1; }

command -v go >/dev/null 2>&1 || die "go not found on PATH (Go 1.26 or newer is needed: https://go.dev/dl)"

quick=${QUICK:-}
count=${COUNT:-6}
benchtime=${BENCHTIME:-}
if [ -n "$quick" ]; then
	count=${COUNT:-1}
	benchtime=${BENCHTIME:-1x}
fi
threads=${THREADS:-2}
[[ $count =~ ^[1-9][0-9]*$ ]] || die "COUNT=$count: want a positive number of rounds"
[[ $threads =~ ^[1-9][0-9]*$ ]] || die "THREADS=$threads: want a positive number"
python=${PYTHON:-/usr/bin/python3}
[ -x "$python" ] || python=$(command -v python3 || echo python3)
peers=${CAPSTAN_PEERS:-../shared/peers}
peers_abs=$(realpath -m "$peers" 2>/dev/null || echo "$PWD/$peers")
[ -d "$peers" ] || peers_abs="$peers_abs (which does not exist)"

# The CPU as /proc/cpuinfo names it (as ./build.sh tiles does).
cpu_name=$(grep -m1 '^model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ //') || true
fam=$(grep -m1 '^cpu family' /proc/cpuinfo 2>/dev/null | awk '{print $NF}') || true
model=$(grep -m1 '^model[[:space:]]' /proc/cpuinfo 2>/dev/null | awk '{print $NF}') || true
rev=$(git rev-parse --short HEAD 2>/dev/null || echo worktree)
git diff --quiet HEAD 2>/dev/null || rev="$rev-dirty"
stem="bench/peer-${fam:-unknown}-${model:-unknown}-$(date -u +%Y-%m-%d)"
out="$stem${quick:+-quick}"
# A run of the same day and CPU is kept (a second run used to overwrite it):
# this one goes to the first free of <date>b, <date>c, …
for s in b c d e f g h i j k l m n o p q r s t u v w x y z; do
	[ -e "$out" ] || break
	out="$stem$s${quick:+-quick}"
done
[ -e "$out" ] && die "$out: every directory $stem[b-z] is taken; move some away"
mkdir -p "$out"
for f in capstan.txt capstan-sgemm.txt pytorch.jsonl pytorch.err openblas.txt samples.tsv table.md; do
	: >"$out/$f"
done

# Which peers can run. Each skip is one line saying what is missing and
# where it was looked for.
torch=
torch_skip=
if [ ! -f "$peers/torch_capsnet.py" ]; then
	torch_skip="no torch_capsnet.py in $peers_abs; set CAPSTAN_PEERS to the peers' directory"
elif ! "$python" -c 'import torch' >/dev/null 2>&1; then
	torch_skip="$python cannot import torch: Debian's python3-torch is missing (apt-get install -y python3-torch)"
else
	torch=$("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null)
fi
blas=
blas_skip=
if [ ! -f "$peers/sgemm_openblas.py" ]; then
	blas_skip="no sgemm_openblas.py in $peers_abs; set CAPSTAN_PEERS to the peers' directory"
elif ! "$python" -c 'import numpy' >/dev/null 2>&1; then
	blas_skip="$python cannot import numpy (apt-get install -y python3-numpy libopenblas0-pthread)"
else
	blas="libblas.so.3 $(readlink -f /etc/alternatives/libblas.so.3-"$(uname -m)"-linux-gnu 2>/dev/null || echo '(alternative unknown)')"
	v=$(dpkg-query -W -f '${Version}' libopenblas0-pthread 2>/dev/null) && blas="$blas, libopenblas0-pthread $v"
	case $blas in *openblas*) ;; *) blas="$blas (not OpenBLAS: apt-get install -y libopenblas0-pthread)" ;; esac
	[ -z "${OPENBLAS_CORETYPE:-}" ] || blas="$blas, OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE"
fi
[ -z "$torch_skip" ] || say "PyTorch peer skipped: $torch_skip"
[ -z "$blas_skip" ] || say "OpenBLAS peer skipped: $blas_skip"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/capstan-peer.XXXXXX")
# shellcheck disable=SC2064 # expand $tmp now
trap "rm -rf '$tmp'" EXIT
say "building the train and kernels test binaries"
go test -c -o "$tmp/train.test" ./train/
go test -c -o "$tmp/kernels.test" ./kernels/
# The kernels Capstan uses here, and their SGEMM tile (the test binaries
# print them on request: kernels/dispatch_test.go, sgemm_tiles_test.go).
impl=$(cd kernels && CAPSTAN_PRINT_IMPL=1 "$tmp/kernels.test" -test.run '^TestEnvVarForcesImpl$' 2>/dev/null | sed -n 's/^impl=//p')
[ -n "$impl" ] || die "cannot tell which kernels the test binary uses"
tile=$(cd kernels && CAPSTAN_PRINT_TILE=1 "$tmp/kernels.test" -test.run '^TestSgemmTileEnvVar$' 2>/dev/null |
	awk -v impl="$impl" '$1 == "impl=" impl { sub(/^tile=/, "", $2); print $2 }')

header="Capstan $rev vs peers on ${cpu_name:-unknown CPU} (cpu family ${fam:-?}, model ${model:-?}), $(nproc) cores;"
header="$header kernels $impl${tile:+ (SGEMM tile $tile)}${CAPSTAN_KERNELS:+, CAPSTAN_KERNELS=$CAPSTAN_KERNELS};"
header="$header PyTorch ${torch:-skipped}; OpenBLAS ${blas:-skipped}; $(go env GOVERSION);"
header="$header COUNT $count, BENCHTIME ${benchtime:-1s}; $(date -u +%Y-%m-%dT%H:%MZ)"
load0=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')
say "$header"
say "$count alternating round(s) -> $out/"

# capstan_samples turns benchmark lines into samples.tsv rows: the batched
# cases in img/s, batch 1 as latency in ms (ns/op), SGEMM in GFLOP/s.
capstan_samples() {
	awk -v OFS='\t' '
	/^Benchmark/ {
		name = $1; sub(/-[0-9]+$/, "", name)
		n = split(name, p, "/")
		ns = img = gf = ""
		for (i = 3; i <= NF; i++) {
			if ($i == "ns/op") ns = $(i - 1)
			if ($i == "img/s") img = $(i - 1)
			if ($i == "GFLOP/s") gf = $(i - 1)
		}
		if (p[1] == "BenchmarkSgemm") { sub(/^n=/, "", p[2]); print "sgemm-" p[2], "capstan", gf; next }
		kind = p[1] == "BenchmarkTrainStep" ? "train" : "infer"
		m = p[2]; sub(/^model=/, "", m)
		b = p[3]; sub(/^batch=/, "", b)
		t = p[4]; sub(/^threads=/, "", t)
		if (b == 1) print "lat-" m "-" t "t", "capstan", ns / 1e6
		else print kind "-" m, "capstan", img
	}'
}

# torch_run MODEL BATCH THREADS: one PyTorch peer run, its JSON line kept
# in pytorch.jsonl and turned into samples; a failure is reported, not fatal.
torch_run() {
	local line
	if ! line=$("$python" "$peers/torch_capsnet.py" bench "$1" "$2" "$3" 2>>"$out/pytorch.err" | tail -1); then
		say "PyTorch peer failed: bench $1 $2 $3 (see $out/pytorch.err)"
		return 0
	fi
	echo "$line" >>"$out/pytorch.jsonl"
	echo "$line" | awk -v OFS='\t' -v m="$1" -v b="$2" -v t="$3" '
	function num(key,   s) {
		if (!match($0, "\"" key "\": *[0-9.eE+-]+")) return ""
		s = substr($0, RSTART, RLENGTH); sub(/^[^:]*: */, "", s); return s
	}
	{
		if (b == 1) { s = num("infer_batch_s"); if (s != "") print "lat-" m "-" t "t", "pytorch", s * 1000; next }
		s = num("train_img_per_s"); if (s != "") print "train-" m, "pytorch", s
		s = num("infer_img_per_s"); if (s != "") print "infer-" m, "pytorch", s
	}' >>"$out/samples.tsv"
}

for ((i = 1; i <= count; i++)); do
	say "round $i/$count: Capstan train and infer ($threads threads; batch 1 with 1 and 2)"
	(cd train && "$tmp/train.test" -test.run '^$' -test.bench '^Benchmark(TrainStep|Infer)$/^model=(sabour|deep)$/^batch=(1|32|128)$' \
		-test.benchmem -test.count 1 -test.cpu "$threads" ${benchtime:+-test.benchtime "$benchtime"}) >"$tmp/round.txt" ||
		{ cat "$tmp/round.txt" >&2; die "the Capstan model benchmarks failed"; }
	cat "$tmp/round.txt" >>"$out/capstan.txt"
	capstan_samples <"$tmp/round.txt" >>"$out/samples.tsv"
	if [ -n "$torch" ]; then
		say "round $i/$count: PyTorch peer"
		torch_run deep 128 "$threads"
		torch_run sabour 32 "$threads"
		for t in 1 2; do
			torch_run deep 1 $t
			torch_run sabour 1 $t
		done
	fi
	say "round $i/$count: Capstan SGEMM ($impl, one thread)"
	(cd kernels && "$tmp/kernels.test" -test.run '^$' -test.bench "^BenchmarkSgemm\$/^n=(128|512)\$/^impl=$impl\$" \
		-test.count 1 -test.cpu 1 ${benchtime:+-test.benchtime "$benchtime"}) >"$tmp/round.txt" ||
		{ cat "$tmp/round.txt" >&2; die "the Capstan SGEMM benchmark failed"; }
	cat "$tmp/round.txt" >>"$out/capstan-sgemm.txt"
	capstan_samples <"$tmp/round.txt" >>"$out/samples.tsv"
	if [ -n "$blas" ]; then
		say "round $i/$count: OpenBLAS peer (one thread)"
		if OPENBLAS_NUM_THREADS=1 "$python" "$peers/sgemm_openblas.py" 128 512 >"$tmp/blas.txt" 2>>"$out/pytorch.err"; then
			cat "$tmp/blas.txt" >>"$out/openblas.txt"
			awk -v OFS='\t' '/^sgemm n=/ { n = $2; sub(/^n=/, "", n); sub(/:$/, "", n); print "sgemm-" n, "openblas", $3 }' \
				"$tmp/blas.txt" >>"$out/samples.tsv"
		else
			say "OpenBLAS peer failed (see $out/pytorch.err)"
		fi
	fi
done
[ -s "$out/pytorch.err" ] || rm -f "$out/pytorch.err"
[ -s "$out/pytorch.jsonl" ] || rm -f "$out/pytorch.jsonl"
[ -s "$out/openblas.txt" ] || rm -f "$out/openblas.txt"

# The table: per case and side the median (the mean of the two middle
# samples for an even count), the range and the number of samples; the
# ratio is Capstan's median over the peer's (img/s and GFLOP/s: > 1 means
# Capstan is faster; ms: < 1 means Capstan is faster). The batch-1 "best"
# rows take, on each side, the lower of the medians with one and two threads.
{
	echo "$header; load average $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?') at the end"
	echo
	sort -t"$(printf '\t')" -k1,1 -k2,2 -k3,3g "$out/samples.tsv" | awk -F'\t' -v count="$count" -v thr="$threads" -v torch_skip="$torch_skip" -v blas_skip="$blas_skip" '
	{ k = $1 SUBSEP $2; v[k, ++n[k]] = $3 }
	function med(k,   c) { c = n[k]; return c % 2 ? v[k, (c + 1) / 2] : (v[k, c / 2] + v[k, c / 2 + 1]) / 2 }
	function cell(c, s, f,   k) {
		k = c SUBSEP s
		if (!(k in n)) return "—"
		if (n[k] == count) return sprintf(f " (" f "–" f ")", med(k), v[k, 1], v[k, n[k]])
		return sprintf(f " (" f "–" f ", %d of %d rounds)", med(k), v[k, 1], v[k, n[k]], n[k], count)
	}
	function ratio(c, s, p) {
		if (!((c SUBSEP s) in n) || !((c SUBSEP p) in n) || med(c SUBSEP p) == 0) return "—"
		return sprintf("%.2f", med(c SUBSEP s) / med(c SUBSEP p))
	}
	function row(label, c, peer, f) {
		printf "| %s | %s | %s | %s |\n", label, cell(c, "capstan", f), cell(c, peer, f), ratio(c, "capstan", peer)
	}
	# best(m, s): the better batch-1 latency of side s for model m, over 1
	# and 2 threads, in bestv (ms) and bestt (threads; 0 if neither ran).
	function best(m, s,   k1, k2) {
		k1 = "lat-" m "-1t" SUBSEP s; k2 = "lat-" m "-2t" SUBSEP s
		bestt = 0
		if (k1 in n) { bestv = med(k1); bestt = 1 }
		if ((k2 in n) && (bestt == 0 || med(k2) < bestv)) { bestv = med(k2); bestt = 2 }
	}
	function bestcell() { return bestt == 0 ? "—" : sprintf("%.2f (%d thread%s)", bestv, bestt, bestt == 1 ? "" : "s") }
	function bestrow(m,   c, cv, p, pv) {
		best(m, "capstan"); c = bestcell(); cv = bestt ? bestv : 0
		best(m, "pytorch"); p = bestcell(); pv = bestt ? bestv : 0
		printf "| batch-1 latency %s, best of 1 or 2 threads (ms) | %s | %s | %s |\n", m, c, p,
			(cv > 0 && pv > 0 ? sprintf("%.2f", cv / pv) : "—")
	}
	END {
		print "| case | Capstan, median (min–max) | PyTorch, median (min–max) | Capstan / PyTorch |"
		print "|---|---|---|---|"
		row("train deep b128, " thr " threads (img/s)", "train-deep", "pytorch", "%.1f")
		row("train sabour b32, " thr " threads (img/s)", "train-sabour", "pytorch", "%.1f")
		row("infer deep b128, " thr " threads (img/s)", "infer-deep", "pytorch", "%.1f")
		row("infer sabour b32, " thr " threads (img/s)", "infer-sabour", "pytorch", "%.1f")
		row("batch-1 latency deep, 1 thread (ms)", "lat-deep-1t", "pytorch", "%.2f")
		row("batch-1 latency sabour, 1 thread (ms)", "lat-sabour-1t", "pytorch", "%.2f")
		row("batch-1 latency deep, 2 threads (ms)", "lat-deep-2t", "pytorch", "%.2f")
		row("batch-1 latency sabour, 2 threads (ms)", "lat-sabour-2t", "pytorch", "%.2f")
		bestrow("deep")
		bestrow("sabour")
		print ""
		print "| SGEMM, one thread | Capstan, median (min–max) | OpenBLAS, median (min–max) | Capstan / OpenBLAS |"
		print "|---|---|---|---|"
		row("n = 128 (GFLOP/s)", "sgemm-128", "openblas", "%.1f")
		row("n = 512 (GFLOP/s)", "sgemm-512", "openblas", "%.1f")
		print ""
		print "Ratios of medians: above 1 in img/s and GFLOP/s, below 1 in ms, Capstan is ahead."
		if (torch_skip != "") print "PyTorch peer skipped: " torch_skip "."
		if (blas_skip != "") print "OpenBLAS peer skipped: " blas_skip "."
	}'
} >"$out/table.md"
echo
cat "$out/table.md"
echo
say "table in $out/table.md, raw outputs beside it (benchstat-ready: $out/capstan.txt, $out/capstan-sgemm.txt)"
