#!/usr/bin/env bash
# tern serve against the machine's raw HTTP floor, side by side in one run,
# as operators run it: the default configuration (a log line per request at
# info, written to a file; Prometheus metrics on).
#
#   bench/vs-floor.sh
#
# Builds the release binary and the load generator (outside the repo), then
# runs, each server pinned to CPU 0 and mrtr-load to CPU 1:
#   - the shared side-by-side baseline: floor-server and `tern serve
#     --threads 1` on the `deploy` flow (a form and roots in round 1 with
#     sealed state, the answers in round 2);
#   - the single-use `order` flow on the default SQLite replay store, and on
#     Redis when redis-server is installed;
#   - `deploy` through `tern proxy --threads 1` in front of `tern serve`
#     (both on CPU 0; each one's CPU reported);
#   - a 2025-11-25 session's `deploy` and `migrate` as a task with one
#     in-task question, driven by tern-bench (crates/tern-bench);
#   - the peak RSS of `tern serve` under 64 concurrent flows;
# and prints one table with the goals of the performance work checked.
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
REDIS_PID=""
cleanup() {
  [ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null
  rm -rf "$DATA"
}
trap cleanup EXIT
mkdir -p "$OUT"

echo "== side by side: floor-server and tern serve (default configuration)"
# `taskset` execs `env`, which execs tern, so the PID the baseline
# measures is the server's own; its stderr (the request log) goes to
# $OUT/deploy/tern.log.
SERVERS="floor tern" CUSTOM_NAME=tern CUSTOM_PORT=$PORT \
  CUSTOM_CMD="env -u TERN_LOG -u RUST_LOG XDG_DATA_HOME=$DATA $TERN serve --http 127.0.0.1:$PORT --threads 1 --metrics 127.0.0.1:$((PORT + 1))" \
  CARGO_TARGET_DIR="$LOAD_TARGET" OUT="$OUT/deploy" WRK=0 \
  bash "$LOAD/bench/baseline.sh" > "$OUT/baseline.log" 2>&1 \
  || { tail -20 "$OUT/baseline.log" >&2; exit 1; }

# load LABEL PORT TOOL ARGS [ANSWER] [PIDS...]: REPS x CONCS runs of one
# flow kind into $OUT/flows.jsonl, with the CPU of each PID.
load() {
  local label=$1 port=$2 tool=$3 args=$4 answer=$5
  shift 5
  local pids=()
  for p in "$@"; do pids+=(--server-pid "$p"); done
  local extra=()
  [ -n "$answer" ] && extra=(--answer "$answer")
  for rep in $(seq "$REPS"); do
    for c in $CONCS; do
      taskset -c 1 "$BIN/mrtr-load" --threads 1 --url "http://127.0.0.1:$port/mcp" --tool "$tool" \
        --args "$args" "${extra[@]}" --concurrency "$c" --duration "$DUR" --warmup "$WARM" \
        "${pids[@]}" --label "$label c=$c" --quiet >> "$OUT/flows.jsonl"
    done
  done
}
: > "$OUT/flows.jsonl"

echo "== the single-use order flow on the default SQLite replay store"
# Each confirmed flow consumes its state in SQLite (synchronous=FULL) before
# the order is placed.
serve $PORT "$DATA" "$OUT/order-serve.log" taskset -c 0
load order $PORT order '{"item":"book"}' 'confirm_order={"confirm":true}' "$SERVE"
stop_serve

if command -v redis-server >/dev/null; then
  echo "== the single-use order flow on Redis"
  taskset -c 1 redis-server --port $((PORT + 50)) --save '' --appendonly no \
    > "$OUT/redis.log" 2>&1 &
  REDIS_PID=$!
  wait_port $((PORT + 50)) "$OUT/redis.log"
  SERVE_ARGS="--replay redis://127.0.0.1:$((PORT + 50))" \
    serve $PORT "$DATA" "$OUT/order-redis-serve.log" taskset -c 0
  load order-redis $PORT order '{"item":"book"}' 'confirm_order={"confirm":true}' "$SERVE"
  stop_serve
  kill "$REDIS_PID"; wait "$REDIS_PID" 2>/dev/null || true; REDIS_PID=""
else
  echo "== no redis-server: the order flow on Redis is not measured"
fi

echo "== deploy through tern proxy in front of tern serve"
serve $PORT "$DATA" "$OUT/upstream-serve.log" taskset -c 0
PROXY_PORT=$((PORT + 20))
taskset -c 0 env -u TERN_LOG -u RUST_LOG XDG_DATA_HOME="$DATA" "$TERN" proxy \
  --http "127.0.0.1:$PROXY_PORT" --threads 1 --upstream "http://127.0.0.1:$PORT/mcp" \
  > "$OUT/proxy.log" 2>&1 &
PROXY=$!
wait_port $PROXY_PORT "$OUT/proxy.log"
load proxy $PROXY_PORT deploy '{"environment":"prod"}' "" "$PROXY" "$SERVE"
kill "$PROXY"; wait "$PROXY" 2>/dev/null || true
stop_serve

echo "== a 2025-11-25 session's deploy flow, and a task with one in-task question"
# tern-bench (crates/tern-bench) drives these with tern-client: a session
# per worker (the form and roots asked as requests on the call's SSE
# stream), and `migrate` as a task (created, polled, its go-ahead answered
# with tasks/update, polled to its result).
serve $PORT "$DATA" "$OUT/flows-serve.log" taskset -c 0
for rep in $(seq "$REPS"); do
  for c in $CONCS; do
    for flow in legacy task; do
      # One client holds at most 16 unfinished tasks (SECURITY.md): the
      # task flow runs at most 16 at once, reported under the row's c.
      n=$c
      if [ "$flow" = task ] && [ "$n" -gt 16 ]; then n=16; fi
      taskset -c 1 "$ROOT/target/release/tern-bench" --flow "$flow" \
        --url "http://127.0.0.1:$PORT/mcp" --concurrency "$n" --duration "$DUR" \
        --warmup "$WARM" --server-pid "$SERVE" --label "$flow c=$c" >> "$OUT/flows.jsonl"
    done
  done
done
stop_serve

echo "== peak RSS of tern serve under 64 concurrent flows"
serve $PORT "$DATA" "$OUT/rss-serve.log" taskset -c 0
taskset -c 1 "$BIN/mrtr-load" --threads 1 --url "http://127.0.0.1:$PORT/mcp" --tool deploy \
  --args '{"environment":"prod"}' --concurrency 64 --duration 3 --warmup 1 --quiet > /dev/null
RSS_KB="$(awk '/VmHWM/ {print $2}' "/proc/$SERVE/status")"
stop_serve

python3 - "$OUT/deploy/results.jsonl" "$RSS_KB" "$OUT/deploy/meta.txt" "$OUT/flows.jsonl" <<'PY'
import json, statistics, sys
from collections import defaultdict
path, rss_kb, meta, flows = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
runs = defaultdict(list)
for p in (path, flows):
    for line in open(p):
        if line.startswith("{"):
            r = json.loads(line)
            # By the c of the label: the task flow runs at most 16 at once.
            lbl = r["label"]
            c = int(lbl.split("c=")[1]) if "c=" in lbl else r["concurrency"]
            runs[(lbl.split()[0], c)].append(r)
med = lambda xs: statistics.median(xs)
def row(name, c, server=0):
    rs = runs[(name, c)]
    return {
        "fps": med([r["flows_per_s"] for r in rs]),
        "cpu": med([r["cpu"]["servers"][server]["cpu_us_per_flow"] for r in rs]),
        "p99": med([r["flow_latency_ms"]["p99"] for r in rs]),
        "failed": sum(r["flows_failed"] + r["flows_unfinished"] for r in rs),
    }
concs = sorted({c for _, c in runs})
print(open(meta).read().strip())
print()
# The CPU column is at c=8 (else the highest concurrency run), the p99
# column at c=1 (else the lowest): the header says which.
cpu_c = 8 if 8 in concs else concs[-1]
p99_c = 1 if 1 in concs else concs[0]
print("| flow | " + " | ".join(f"flows/s c={c}" for c in concs)
      + f" | server CPU µs/flow (c={cpu_c}) | flow p99 ms (c={p99_c}) | failed |")
print("|---|" + "---:|" * (len(concs) + 3))
names = {
    "floor": "floor",
    "tern": "tern serve: deploy",
    "order": "tern serve: order, single use, SQLite",
    "order-redis": "tern serve: order, single use, Redis",
    "proxy": "tern proxy → tern serve: deploy (the proxy's CPU)",
    "legacy": "tern serve: deploy in a 2025-11-25 session",
    "task": "tern serve: migrate as a task, one in-task question",
}
names = {n: l for n, l in names.items() if (n, concs[0]) in runs}
table = {n: {c: row(n, c) for c in concs} for n in names}
def at8(n, key, server=0):
    return row(n, cpu_c, server)[key]
for n in names:
    t = table[n]
    p99 = t[p99_c]["p99"]
    print(f"| {names[n]} | " + " | ".join(f"{t[c]['fps']:,.0f}" for c in concs)
          + f" | {at8(n, 'cpu'):.1f} | {p99:.3f} | {sum(t[c]['failed'] for c in concs)} |")
    if n == "proxy":
        print(f"| (its upstream tern serve) | " + " | ".join("" for _ in concs)
              + f" | {at8('proxy', 'cpu', 1):.1f} | | |")
# A task is not an HTTP flow (it waits out its poll interval): no ratio.
ratios = {n: {c: table[n][c]["fps"] / table["floor"][c]["fps"] for c in concs}
          for n in names if n not in ("floor", "task")}
for n in ratios:
    print(f"| {n} / floor | " + " | ".join(f"{ratios[n][c]:.2f}" for c in concs) + " | | | |")
print()
goals = []
for c in (8, 64):
    if c in concs:
        r = ratios["tern"][c]
        goals.append((f"deploy at c={c} ≥ 0.7× floor", r >= 0.7, f"{r:.2f}×"))
if 8 in concs:
    cpu = table["tern"][8]["cpu"]
    goals.append(("deploy server CPU ≤ 28 µs per flow (c=8)", cpu <= 28, f"{cpu:.1f} µs"))
if 64 in concs:
    r = ratios["order"][64]
    goals.append(("order on SQLite at c=64 ≥ 0.5× floor", r >= 0.5, f"{r:.2f}×"))
if "proxy" in names:
    p, d = at8("proxy", "cpu"), at8("tern", "cpu")
    goals.append(("proxy CPU per flow ≤ 2× the direct server's (c=8)", p <= 2 * d, f"{p / d:.2f}×"))
if "legacy" in names:
    l, d = at8("legacy", "cpu"), at8("tern", "cpu")
    goals.append(("2025-11-25 session flow CPU ≤ 2× the modern deploy's (c=8)", l <= 2 * d, f"{l / d:.2f}×"))
if "task" in names:
    c = 8 if 8 in concs else concs[-1]
    t = row("task", c)
    goals.append((f"a task with one in-task question (c={c}): CPU per task, p99 to its result",
                  True, f"{t['cpu']:.1f} µs, {t['p99']:.1f} ms"))
goals.append(("peak RSS ≤ 50 MiB at 64 concurrent flows", rss_kb <= 50 * 1024, f"{rss_kb / 1024:.1f} MiB"))
for what, ok, got in goals:
    print(f"- [{'x' if ok else ' '}] {what}: {got}")
PY
echo
echo "full tables: $OUT/deploy/summary.md"
