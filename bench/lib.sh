# Shared by the single-purpose bench scripts (sourced, not run): the
# wload binary and a guest example, built when missing.
#
#   wload_and_guest NAME   sets WLOAD (built unless given) and GUEST
#                          (target/guests/.../NAME.wasm, built if absent)
wload_and_guest() {
  if [ -z "${WLOAD:-}" ]; then
    cargo build --release -p wload -q
    WLOAD=target/release/wload
  fi
  GUEST=target/guests/wasm32-wasip2/release/$1.wasm
  if [ ! -f "$GUEST" ]; then
    rustup target add wasm32-wasip2 >/dev/null
    (cd examples && cargo build --release --target wasm32-wasip2 -q --target-dir ../target/guests -p "$1")
  fi
}
