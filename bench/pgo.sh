#!/usr/bin/env bash
# A profile-guided build of wload: the shipped `dist` profile (fat LTO, one
# codegen unit), compiled a second time with the branch and call counts of
# a training run. Why: an iteration's code does not fit in the instruction
# cache (docs/BENCHMARKS.md, Session 10), and LTO alone took 10% of the
# instructions and 74% of the mispredicted indirect branches; PGO lays the
# hot path out together and inlines by measured counts.
#
#   bench/pgo.sh            builds target/pgo/use/<host>/dist/wload and
#                           prints its path on the last line
#   WLOAD=$(bench/pgo.sh | tail -1) bench/compare.sh   measures it
#
# The training run is what the benches measure and users run most: the
# hello test (GET + check + counter) at 4 and at 100 VUs, and the same
# test idle (SLEEP_MS=1000) at 1,000 VUs, against `wload target` on
# 127.0.0.1 (the server's own counts go into the same profile; they are
# other functions, so they only make those functions hot too). The
# component is compiled afresh (an empty cache) so that Cranelift's
# compile path is trained as well. Everything is bounded and local.
#
# Needs llvm-profdata of the toolchain's own LLVM: `rustup component add
# llvm-tools`, done here when it is missing. Two full builds: about 20
# minutes on 2 cores from cold.
set -euo pipefail
cd "$(dirname "$0")/.."

host=$(rustc -vV | sed -n 's/^host: //p')
profdata=$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata
if [ ! -x "$profdata" ]; then
  rustup component add llvm-tools
fi

dir=${PGO_DIR:-$PWD/target/pgo}
rm -rf "$dir/raw" "$dir/cache"
mkdir -p "$dir/raw" "$dir/cache"

# `--target` keeps RUSTFLAGS off build scripts and proc macros (they run on
# the build machine, not in wload), and the guests' builds drop RUSTFLAGS
# (crates/wload/guests.rs).
build() {
  RUSTFLAGS="$1" cargo build --profile dist --locked -p wload --bin wload \
    --target "$host" --target-dir "$dir/$2" >&2
}

build "-Cprofile-generate=$dir/raw" gen
trained=$dir/gen/$host/dist/wload
guest=target/guests/wasm32-wasip2/release/hello.wasm

# The training target: bench/lib.sh's `wload target` on core 0 (the
# instrumented binary's own server, so its counts land in the profile too).
. bench/lib.sh
WLOAD=$trained
port=$(free_port)
base=http://127.0.0.1:$port
trap stop_server EXIT
serve "$port" 120 "$dir/target.log"

train() {
  echo "training: $*" >&2
  WLOAD_CACHE_DIR=$dir/cache "$trained" run "$guest" --quiet -e "BASE_URL=$base" "$@" >&2
}
train --vus 4 --duration 4s
train --vus 100 --duration 4s
train --vus 1000 --duration 6s -e SLEEP_MS=1000

stop_server
trap - EXIT

"$profdata" merge -o "$dir/wload.profdata" "$dir/raw"
build "-Cprofile-use=$dir/wload.profdata" use
echo "$dir/use/$host/dist/wload"
