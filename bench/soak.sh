#!/usr/bin/env bash
# Memory of `tern serve` over a long run, as operators run it (default
# configuration: a log line per request at info, metrics on; the log goes
# to /dev/null so ten million flows do not fill the disk, the writer
# thread still formats and writes every line).
#
#   bench/soak.sh
#
# Runs the `deploy` flow (a form and roots in round 1, the answers in
# round 2) in CHUNKS chunks of FLOWS flows at concurrency C, the server on
# CPU 0 and mrtr-load on CPU 1, and prints after each chunk the flows/s,
# the resident set (VmRSS) and its peak (VmHWM). Memory is flat when the
# last chunk's VmRSS is within 10 % of the first's.
#
# Environment (defaults in brackets): CHUNKS [10] FLOWS [1000000] C [64]
# OUT [/tmp/tern-soak] SHARED [../shared beside the repo]
# LOAD_TARGET [/tmp/mrtr-load-target].
set -euo pipefail
source "$(dirname "$0")/common.sh"
OUT="${OUT:-/tmp/tern-soak}"
CHUNKS="${CHUNKS:-10}" FLOWS="${FLOWS:-1000000}" C="${C:-64}"
PORT=18400

command -v taskset >/dev/null || { echo "soak: taskset is needed (util-linux)" >&2; exit 2; }
echo "== building tern (release) and mrtr-load"
build_all
DATA="$(mktemp -d)"
trap 'rm -rf "$DATA"' EXIT
mkdir -p "$OUT"
: > "$OUT/chunks.jsonl"
: > "$OUT/rss.txt"

serve $PORT "$DATA" /dev/null taskset -c 0
status() { awk -v k="$1:" '$1 == k {print $2}' "/proc/$SERVE/status"; }
echo "chunk  flows/s  VmRSS MiB  VmHWM MiB  failed"
for i in $(seq "$CHUNKS"); do
  taskset -c 1 "$BIN/mrtr-load" --threads 1 --url "http://127.0.0.1:$PORT/mcp" --tool deploy \
    --args '{"environment":"prod"}' --concurrency "$C" --duration 0 --flows "$FLOWS" \
    --server-pid "$SERVE" --label "soak $i" --quiet > "$OUT/chunk.json"
  cat "$OUT/chunk.json" >> "$OUT/chunks.jsonl"
  python3 - "$OUT/chunk.json" "$i" "$(status VmRSS)" "$(status VmHWM)" <<'PY'
import json, sys
r = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
failed = r["flows_failed"] + r["flows_unfinished"]
print(f"{sys.argv[2]:>5}  {r['flows_per_s']:>7.0f}  {int(sys.argv[3]) / 1024:>9.1f}  {int(sys.argv[4]) / 1024:>9.1f}  {failed:>6}")
PY
  status VmRSS >> "$OUT/rss.txt"
done
stop_serve
python3 - "$OUT/rss.txt" <<'PY'
import sys
rss = [int(l) for l in open(sys.argv[1]) if l.strip()]
first, last = rss[0], rss[-1]
growth = (last - first) / first * 100
print(f"VmRSS after the first chunk {first / 1024:.1f} MiB, after the last {last / 1024:.1f} MiB: {growth:+.1f} % ({'flat' if abs(growth) <= 10 else 'NOT flat'}, goal within 10 %)")
PY
