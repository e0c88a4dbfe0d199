# Shared by the single-purpose bench scripts (sourced, not run): the
# wload binary and a guest example, built when missing.
#
#   wload_and_guest NAME   sets WLOAD (built unless given; WLOAD_PROFILE=dist
#                          for the shipped LTO build) and GUEST
#                          (target/guests/.../NAME.wasm, built if absent;
#                          a GUEST given is kept: any component, such as
#                          `wload build script.js -o x.wasm`'s)
#   serve PORT SECS LOG    starts `wload target` on core 0, bounded to SECS,
#                          sets SERVER (its PID) and returns once it answers
#   stop_server            ends it (by its PID)
#   free_port              prints a port on 127.0.0.1 that nothing holds now
wload_and_guest() {
  if [ -z "${WLOAD:-}" ]; then
    # WLOAD_PROFILE=dist: the shipped build (fat LTO, Cargo.toml).
    cargo build --profile "${WLOAD_PROFILE:-release}" -p wload -q
    WLOAD=target/${WLOAD_PROFILE:-release}/wload
  fi
  if [ -n "${GUEST:-}" ]; then
    [ -f "$GUEST" ] || { echo "GUEST=$GUEST: no such file" >&2; exit 1; }
    return
  fi
  GUEST=target/guests/wasm32-wasip2/release/$1.wasm
  if [ ! -f "$GUEST" ]; then
    rustup target add wasm32-wasip2 >/dev/null
    (cd examples && cargo build --release --target wasm32-wasip2 -q --target-dir ../target/guests -p "$1")
  fi
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

serve() {
  taskset -c 0 "$WLOAD" target --port "$1" --duration "$2s" >"$3" 2>&1 &
  SERVER=$!
  for _ in $(seq 50); do
    curl -sf "http://127.0.0.1:$1/" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "wload target did not answer on port $1: $(cat "$3")" >&2
  return 1
}

stop_server() {
  kill -INT "$SERVER" 2>/dev/null || true
  wait "$SERVER" 2>/dev/null || true
}
