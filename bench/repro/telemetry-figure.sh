#!/usr/bin/env bash
# telemetry-figure.sh OUT.png RUN_DIR... draws the max-norm heatmaps of
# caps.0–caps.2 (the paper's layers 2–4) over each run's whole training,
# one row of panels per run, from the runs' telemetry.ndjson (or its
# committed form telemetry.ndjson.gz): each run's
# tools/analyze -html report gives the panels (inline SVG), which are put
# on one page and rendered by headless Chromium. The figure of
# docs/reproduction.md:
#
#   bench/repro/telemetry-figure.sh docs/deep-s123-telemetry.png bench/repro/deep-s1 bench/repro/deep-s2 bench/repro/deep-s3
#
# Needs chromium (apt-get install chromium) and python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 2 ] || { echo "usage: $0 OUT.png RUN_DIR..." >&2; exit 2; }
out=$1
shift
command -v chromium >/dev/null || { echo "$0: chromium is missing (apt-get install chromium)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/analyze" ./tools/analyze
reports=()
for d in "$@"; do
	[ -f "$d/telemetry.ndjson" ] || [ -f "$d/telemetry.ndjson.gz" ] || { echo "$0: $d has no telemetry.ndjson(.gz)" >&2; exit 1; }
	r="$tmp/$(basename "$d").html"
	# The tables do not matter here: a few images, one parse tree.
	"$tmp/analyze" -checkpoint "$d/checkpoint.safetensors" -data embedded -k 8 -batch 8 -samples 1 -html "$r" >/dev/null
	reports+=("$(basename "$d")=$r")
done
python3 - "$tmp/page.html" "${reports[@]}" <<'EOF'
import html, re, sys
page, runs = sys.argv[1], sys.argv[2:]
rows = []
for arg in runs:
    name, path = arg.split("=", 1)
    h = open(path, encoding="utf-8").read()
    style = re.search(r"<style>.*?</style>", h, re.S).group(0)
    i = h.index("Largest capsule norm over the batch")
    figs = re.findall(r"<figure>(.*?)<figcaption>", h[i:], re.S)
    note = re.findall(r'<p class="note">(.*?)</p>', h[:i], re.S)
    steps = re.search(r"(\d+) training step\(s\)[^<]*?\(steps ([^,]*), epochs ([^,]*),", h[i - 2000:i])
    label = name + (f": steps {steps.group(2)}, epochs {steps.group(3)}" if steps else "")
    # figures 1-3 of the max-norm row: caps.0, caps.1, caps.2
    rows.append(f"<h2>{html.escape(label)}</h2><div class='r'>" + "".join(f"<div>{f}</div>" for f in figs[1:4]) + "</div>")
open(page, "w", encoding="utf-8").write(
    "<!DOCTYPE html><html><head><meta charset='utf-8'>" + style +
    "<style>body{margin:8px;background:#fff}.r{display:flex;gap:6px}.r svg{width:520px;height:auto}h2{font:16px 'Liberation Sans',sans-serif;margin:4px 0}</style>"
    "</head><body>" + "".join(rows) + "</body></html>")
EOF
height=$((20 + 190 * $#))
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
	--disable-component-update --disable-sync --user-data-dir="$tmp/profile" --hide-scrollbars \
	--window-size=1600,"$height" --screenshot="$out" "file://$tmp/page.html" 2>"$tmp/chromium.log" ||
	{ cat "$tmp/chromium.log" >&2; exit 1; }
echo "wrote $out"
