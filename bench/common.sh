# Sourced by the bench scripts: where things are, the builds, and starting
# `tern serve` on loopback.
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SHARED="${SHARED:-$ROOT/../shared}"
LOAD="$SHARED/tools/mrtr-load"
LOAD_TARGET="${LOAD_TARGET:-/tmp/mrtr-load-target}"
TERN="$ROOT/target/release/tern"
BIN="$LOAD_TARGET/release"

# Builds tern (the release profile, which is shipped and measured; tests
# use dev) and the load generator (outside the repo).
build_all() {
  [ -d "$LOAD" ] || { echo "bench: no load generator at $LOAD (set SHARED)" >&2; exit 2; }
  (cd "$ROOT" && cargo build --release --quiet --workspace --all-features --bins)
  cargo build --release --quiet --manifest-path "$LOAD/Cargo.toml" --target-dir "$LOAD_TARGET"
}

# serve PORT DATA LOG [WRAPPER...]: starts `tern serve --threads 1` on
# 127.0.0.1:PORT as operators run it (logging at info into LOG, metrics on
# PORT+1), with its data under DATA, run by WRAPPER (taskset, valgrind,
# ...); extra server options in SERVE_ARGS. Waits until it accepts
# connections; SERVE is its PID.
serve() {
  local port=$1 data=$2 log=$3
  shift 3
  # shellcheck disable=SC2086  # SERVE_ARGS is a list of options
  env -u TERN_LOG -u RUST_LOG XDG_DATA_HOME="$data" "$@" "$TERN" serve --http "127.0.0.1:$port" \
    --threads 1 --metrics "127.0.0.1:$((port + 1))" ${SERVE_ARGS:-} > "$log" 2>&1 &
  SERVE=$!
  wait_port "$port" "$log"
}

# wait_port PORT LOG: until something accepts connections on PORT.
wait_port() {
  for _ in $(seq 300); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "bench: the server on $1 did not start (see $2)" >&2
  exit 1
}

stop_serve() {
  kill "$SERVE"
  wait "$SERVE" 2>/dev/null || true
}
