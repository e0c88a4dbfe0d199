#!/usr/bin/env bash
# What linking a library plugin into a test costs (docs/BENCHMARKS.md,
# "Composition cost"): examples/rust/login linked with plugins/session at
# load time (`--with`), against examples/rust/login_inline, the same test
# with the same flow (the plugin's flow.rs) compiled in.
#
# - start: wall time of a 1-iteration run with an empty compile cache
#   (composition + compilation) and again with the cache filled;
# - peak RSS per VU: (peak RSS at VUS VUs - at 1 VU) / (VUS - 1), 5 s
#   runs against the built-in target server, compiled code from the cache;
# - instructions per iteration: bench/instructions.sh on each.
#
#   bench/compose.sh              # a few minutes
#   VUS=500 bench/compose.sh
#   WLOAD=/path/to/wload bench/compose.sh
set -euo pipefail
cd "$(dirname "$0")/.."
vus=${VUS:-1000}
. bench/lib.sh
wload_and_guest login
composed=$GUEST
wload_and_guest login_inline
inline=$GUEST
session=target/guests/wasm32-wasip2/release/session.wasm
[ -f "$session" ] || cargo build --release --target wasm32-wasip2 -q \
  --manifest-path plugins/Cargo.toml --target-dir target/guests -p session
work=$(mktemp -d)
port=$(free_port)
cleanup() {
  stop_server
  rm -rf "$work"
}
trap cleanup EXIT
serve "$port" 1200 "$work/server.log"
export WLOAD_CACHE_DIR="$work/cache"

run() { # FORMAT TEST ARGS...: time's FORMAT of `wload run TEST ARGS`
  /usr/bin/time -f "$1" -o "$work/time" "$WLOAD" run "$2" "${@:3}" -q \
    -e BASE_URL="http://127.0.0.1:$port" >"$work/run.log" 2>&1 ||
    { echo "wload run $2 ${*:3} failed:"; cat "$work/run.log"; exit 1; } >&2
  cat "$work/time"
}

echo "test              start cold  start cached  RSS 1 VU  RSS $vus VUs  RSS per VU"
for variant in composed inline; do
  if [ "$variant" = composed ]; then
    test=$composed
    with=(--with "$session")
  else
    test=$inline
    with=()
  fi
  rm -rf "$WLOAD_CACHE_DIR"
  cold=$(run %e "$test" "${with[@]}" --vus 1 --iterations 1)
  cached=$(run %e "$test" "${with[@]}" --vus 1 --iterations 1)
  one=$(run %M "$test" "${with[@]}" --vus 1 --duration 5s)
  many=$(run %M "$test" "${with[@]}" --vus "$vus" --duration 5s)
  printf '%-17s %9ss %12ss %7.1f MiB %9.1f MiB %7.1f KiB\n' "$variant" "$cold" "$cached" \
    "$(echo "$one / 1024" | bc -l)" "$(echo "$many / 1024" | bc -l)" \
    "$(echo "($many - $one) / ($vus - 1)" | bc -l)"
done
stop_server
trap 'rm -rf "$work"' EXIT

echo "instructions per iteration, composed:"
EXAMPLE=login WITH=$session bench/instructions.sh
echo "instructions per iteration, inline:"
EXAMPLE=login_inline bench/instructions.sh
