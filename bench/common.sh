# Sourced by the bench scripts: where things are, the builds, and starting
# `tern serve` on loopback.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHARED="${SHARED:-$ROOT/../shared}"
LOAD="$SHARED/tools/mrtr-load"
LOAD_TARGET="${LOAD_TARGET:-/tmp/mrtr-load-target}"
TERN="$ROOT/target/release/tern"
BIN="$LOAD_TARGET/release"

# Builds tern (release, the one profile) and the load generator (outside
# the repo).
build_all() {
  [ -d "$LOAD" ] || { echo "bench: no load generator at $LOAD (set SHARED)" >&2; exit 2; }
  (cd "$ROOT" && cargo build --release --quiet --workspace --all-features --bins)
  cargo build --release --quiet --manifest-path "$LOAD/Cargo.toml" --target-dir "$LOAD_TARGET"
}

# serve PORT DATA LOG [WRAPPER...]: starts `tern serve --threads 1` on
# 127.0.0.1:PORT with its data under DATA, run by WRAPPER (taskset,
# valgrind, ...), and waits until it accepts connections; SERVE is its PID.
serve() {
  local port=$1 data=$2 log=$3
  shift 3
  env TERN_LOG=warn XDG_DATA_HOME="$data" "$@" "$TERN" serve --http "127.0.0.1:$port" \
    --threads 1 > "$log" 2>&1 &
  SERVE=$!
  for _ in $(seq 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "bench: tern serve did not start (see $log)" >&2
  exit 1
}

stop_serve() {
  kill "$SERVE"
  wait "$SERVE" 2>/dev/null || true
}
