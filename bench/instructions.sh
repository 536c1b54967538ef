#!/usr/bin/env bash
# User-space instructions per `deploy` flow of `tern serve`, counted by
# callgrind: a figure that does not move with the machine's noise, so a
# change of a few percent in the request path shows (wall-clock and CPU
# time on a shared machine vary by more than that from run to run).
#
#   bench/instructions.sh [FLOWS]      (default 500; needs valgrind)
#
# The server runs under callgrind with --threads 1; 20 flows warm it up,
# the counters are zeroed, FLOWS flows run at concurrency 4, and the total
# is divided by FLOWS. Kernel time is not counted, and SHA-256 runs its
# portable code under valgrind (no SHA extensions), so hashing weighs more
# here than on the machine: compare this figure only with itself.
set -euo pipefail
source "$(dirname "$0")/common.sh"
FLOWS="${1:-500}"
PORT=18230

command -v valgrind >/dev/null || { echo "instructions: valgrind is needed" >&2; exit 2; }
build_all

DATA="$(mktemp -d)"
trap 'rm -rf "$DATA"' EXIT
serve $PORT "$DATA" "$DATA/valgrind.log" valgrind --tool=callgrind --callgrind-out-file="$DATA/cg.out"
load() {
  "$BIN/mrtr-load" --threads 1 --url "http://127.0.0.1:$PORT/mcp" --tool deploy \
    --args '{"environment":"prod"}' --duration 600 --quiet "$@" > /dev/null
}
load --concurrency 1 --flows 20
callgrind_control -z "$SERVE" > /dev/null 2>&1
load --concurrency 4 --flows "$FLOWS"
callgrind_control -d "$SERVE" > /dev/null 2>&1
sleep 1
stop_serve
# The dump with the most instructions is the measured window.
TOTAL="$(grep -h '^summary:' "$DATA"/cg.out* | awk '{print $2}' | sort -n | tail -1)"
echo "user-space instructions per deploy flow: $((TOTAL / FLOWS))"
