#!/usr/bin/env bash
# tern serve against the machine's raw HTTP floor, side by side in one run.
#
#   bench/vs-floor.sh
#
# Builds the release binary and the load generator (outside the repo), runs
# the shared side-by-side baseline (floor-server and `tern serve --threads 1`
# pinned to CPU 0, mrtr-load pinned to CPU 1, the `deploy` flow: a form and
# roots in round 1 with sealed state, the answers in round 2), then the
# single-use `order` flow on the default SQLite replay store, then measures
# the peak RSS of `tern serve` under 64 concurrent flows, and prints the
# ratio table with the goals of the performance work checked.
#
# Environment (defaults in brackets): DUR [5] WARM [1] REPS [2] CONCS ["1 8 64"]
# OUT [/tmp/tern-vs-floor] SHARED [../shared beside the repo]
# LOAD_TARGET [/tmp/mrtr-load-target]. The machine is shared and noisy:
# compare ratios within one run, never absolute figures across runs.
set -euo pipefail
source "$(dirname "$0")/common.sh"
OUT="${OUT:-/tmp/tern-vs-floor}"
export DUR="${DUR:-5}" WARM="${WARM:-1}" REPS="${REPS:-2}" CONCS="${CONCS:-1 8 64}"
PORT=18200

command -v taskset >/dev/null || { echo "vs-floor: taskset is needed (util-linux)" >&2; exit 2; }

echo "== building tern (release) and mrtr-load"
build_all

DATA="$(mktemp -d)"
trap 'rm -rf "$DATA"' EXIT
mkdir -p "$OUT"

echo "== side by side: floor-server and tern serve"
# `env` execs tern, so the PID the baseline measures is the server's own.
SERVERS="floor tern" CUSTOM_NAME=tern CUSTOM_PORT=$PORT \
  CUSTOM_CMD="env TERN_LOG=warn XDG_DATA_HOME=$DATA $TERN serve --http 127.0.0.1:$PORT --threads 1" \
  CARGO_TARGET_DIR="$LOAD_TARGET" OUT="$OUT/deploy" WRK=0 \
  bash "$LOAD/bench/baseline.sh" > "$OUT/baseline.log" 2>&1 \
  || { tail -20 "$OUT/baseline.log" >&2; exit 1; }

echo "== the single-use order flow on the default SQLite replay store"
# Each confirmed flow consumes its state in SQLite (synchronous=FULL) before
# the order is placed; the same server, pinned the same way.
serve $PORT "$DATA" "$OUT/order-serve.log" taskset -c 0
: > "$OUT/order.jsonl"
for rep in $(seq "$REPS"); do
  for c in $CONCS; do
    taskset -c 1 "$BIN/mrtr-load" --threads 1 --url "http://127.0.0.1:$PORT/mcp" --tool order \
      --args '{"item":"book"}' --answer 'confirm_order={"confirm":true}' --concurrency "$c" \
      --duration "$DUR" --warmup "$WARM" --server-pid "$SERVE" --label "order c=$c" --quiet \
      >> "$OUT/order.jsonl"
  done
done
stop_serve

echo "== peak RSS of tern serve under 64 concurrent flows"
serve $PORT "$DATA" "$OUT/rss-serve.log" taskset -c 0
taskset -c 1 "$BIN/mrtr-load" --threads 1 --url "http://127.0.0.1:$PORT/mcp" --tool deploy \
  --args '{"environment":"prod"}' --concurrency 64 --duration 3 --warmup 1 --quiet > /dev/null
RSS_KB="$(awk '/VmHWM/ {print $2}' "/proc/$SERVE/status")"
stop_serve

python3 - "$OUT/deploy/results.jsonl" "$RSS_KB" "$OUT/deploy/meta.txt" "$OUT/order.jsonl" <<'PY'
import json, statistics, sys
from collections import defaultdict
path, rss_kb, meta, order = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
runs = defaultdict(list)
for p in (path, order):
    for line in open(p):
        if line.startswith("{"):
            r = json.loads(line)
            runs[(r["label"].split()[0], r["concurrency"])].append(r)
med = lambda xs: statistics.median(xs)
def row(name, c):
    rs = runs[(name, c)]
    return {
        "fps": med([r["flows_per_s"] for r in rs]),
        "cpu": med([r["cpu"]["servers"][0]["cpu_us_per_flow"] for r in rs]),
        "p99": med([r["flow_latency_ms"]["p99"] for r in rs]),
        "failed": sum(r["flows_failed"] + r["flows_unfinished"] for r in rs),
    }
concs = sorted({c for _, c in runs})
print(open(meta).read().strip())
print()
print("| server | " + " | ".join(f"flows/s c={c}" for c in concs)
      + " | server CPU µs/flow (c=8) | flow p99 ms (c=1) | failed |")
print("|---|" + "---:|" * (len(concs) + 3))
names = {"floor": "floor", "tern": "tern (deploy)", "order": "tern (order, single use, SQLite)"}
table = {n: {c: row(n, c) for c in concs} for n in names}
for n in names:
    t = table[n]
    cpu = t[8]["cpu"] if 8 in t else t[concs[-1]]["cpu"]
    p99 = t[1]["p99"] if 1 in t else t[concs[0]]["p99"]
    print(f"| {names[n]} | " + " | ".join(f"{t[c]['fps']:,.0f}" for c in concs)
          + f" | {cpu:.1f} | {p99:.3f} | {sum(t[c]['failed'] for c in concs)} |")
ratios = {n: {c: table[n][c]["fps"] / table["floor"][c]["fps"] for c in concs}
          for n in ("tern", "order")}
for n, label in (("tern", "deploy"), ("order", "order")):
    print(f"| {label} / floor | " + " | ".join(f"{ratios[n][c]:.2f}" for c in concs) + " | | | |")
ratio = ratios["tern"]
print()
goals = []
for c in (8, 64):
    if c in ratio:
        goals.append((f"flows/s at c={c} ≥ 0.5× floor", ratio[c] >= 0.5, f"{ratio[c]:.2f}×"))
if 8 in concs:
    cpu = table["tern"][8]["cpu"]
    goals.append(("server CPU ≤ 50 µs per flow (c=8)", cpu <= 50, f"{cpu:.1f} µs"))
if 1 in concs:
    p = table["tern"][1]["p99"] / table["floor"][1]["p99"]
    goals.append(("flow p99 at c=1 ≤ 2× floor", p <= 2, f"{p:.2f}×"))
goals.append(("peak RSS ≤ 50 MiB at 64 concurrent flows", rss_kb <= 50 * 1024, f"{rss_kb / 1024:.1f} MiB"))
for what, ok, got in goals:
    print(f"- [{'x' if ok else ' '}] {what}: {got}")
PY
echo
echo "full tables: $OUT/deploy/summary.md"
