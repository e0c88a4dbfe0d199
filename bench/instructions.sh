#!/usr/bin/env bash
# Instructions per iteration of examples/rust/hello (a GET, a check and a
# counter; EXAMPLE=NAME for another example), counted by valgrind's callgrind: the CPU cost of the request
# path without the noise of a shared machine. Timed runs here vary by
# +-10% from one minute to the next; instruction counts repeat within a
# few tenths of a percent, so this is the figure to compare before and
# after a change to the request path (docs/BENCHMARKS.md, Session 4).
#
# wload runs N and 3N iterations (4 VUs) against the built-in target
# server; the difference divided by 2N is what one iteration costs, start
# and teardown cancelled out. Kernel time (the socket calls) is not
# counted: it is the same for every HTTP client. TOP=K also prints the K
# functions with the most instructions of their own per iteration.
#
#   bench/instructions.sh                        # about a minute
#   TOP=30 bench/instructions.sh
#   WLOAD=/tmp/wload-old bench/instructions.sh   # another build, to compare
#   N=4000 VUS=100 bench/instructions.sh
#   EXAMPLE=login WITH=target/guests/wasm32-wasip2/release/session.wasm \
#     bench/instructions.sh   # another example, linked with a library plugin
#   GUEST=hello-js.wasm bench/instructions.sh   # any component: a JS test
#       # from `wload build bench/k6/hello.js -o hello-js.wasm`
#   CACHE=1 bench/instructions.sh  # also simulated L1 and LL misses and
#                                  # branch mispredictions per iteration (slower)
#   SLEEP_MS=1000 VUS=100 CACHE=1 bench/instructions.sh
#       # the idle iteration (GET + sleep): runs of DURATION (default 10)
#       # and 3 × DURATION seconds instead of N and 3N iterations
#   VU_MEMORY=4MiB VUS=2000 N=4000 bench/instructions.sh
#       # many VUs: valgrind cannot reserve thousands of 64 MiB slots
#   LL=1048576,16,64 CACHE=1 bench/instructions.sh
#       # the simulated last level sized as this CPU's L2 (1 MiB), not its
#       # L3: callgrind simulates two levels, and the misses that cost an
#       # idle VU's iteration are L2 misses that hit L3
#
# CACHE=1 matters because an iteration's code does not fit in the L1
# instruction cache (docs/BENCHMARKS.md, Session 10): a change that
# keeps the instruction count but moves code (layout, LTO, inlining) shows
# only in the misses.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${N:-2000}
vus=${VUS:-4}
top=${TOP:-0}
sim=()
[ -n "${CACHE:-}" ] && sim=(--cache-sim=yes --branch-sim=yes)
[ -n "${CACHE:-}" ] && [ -n "${LL:-}" ] && sim+=(--LL="$LL")
. bench/lib.sh
wload_and_guest "${EXAMPLE:-hello}"
with=()
[ -n "${WITH:-}" ] && with=(--with "$WITH")
if ! command -v valgrind >/dev/null; then
  echo "installing valgrind (apt-get)" >&2
  apt-get install -y -q valgrind >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null && apt-get install -y -q valgrind >/dev/null; }
fi
work=$(mktemp -d)
port=$(free_port)
cleanup() {
  stop_server
  rm -rf "$work"
}
trap cleanup EXIT
serve "$port" 1200 "$work/server.log"

# Extra flags: the idle mode's sleep, a smaller instance slot, and a
# guest timeout valgrind's slowness cannot reach.
extra=(--guest-timeout 1h)
[ -n "${VU_MEMORY:-}" ] && extra+=(--vu-memory "$VU_MEMORY")
[ -n "${SLEEP_MS:-}" ] && extra+=(-e SLEEP_MS="$SLEEP_MS")
duration=${DURATION:-10}

count() { # label, how long (--iterations N or --duration Ds): callgrind's file cg.label, the iterations in its.label
  local label=$1
  shift
  # A long output interval: the per-second aggregation would otherwise
  # count in proportion to valgrind's slowness, not to the iterations.
  taskset -c 1 valgrind --tool=callgrind --smc-check=all "${sim[@]}" \
    --callgrind-out-file="$work/cg.$label" "$WLOAD" run "$GUEST" "${with[@]}" -q \
    --vus "$vus" "$@" --out-interval 1h "${extra[@]}" \
    -e BASE_URL="http://127.0.0.1:$port" >"$work/run.$label.log" 2>&1 ||
    { echo "wload failed under valgrind:"; cat "$work/run.$label.log"; exit 1; } >&2
  sed -n 's/^ *iterations\.*: \([0-9]*\) .*/\1/p' "$work/run.$label.log" >"$work/its.$label"
  [ -s "$work/its.$label" ] ||
    { echo "no iteration count in the summary:"; cat "$work/run.$label.log"; exit 1; } >&2
}
if [ -n "${SLEEP_MS:-}" ]; then
  count short --duration "${duration}s" &
  first=$!
  count long --duration "$((3 * duration))s"
else
  count short --iterations "$n" &
  first=$!
  count long --iterations "$((3 * n))"
fi
wait "$first"
if [ -z "${SLEEP_MS:-}" ] &&
  { [ "$(cat "$work/its.short")" != "$n" ] || [ "$(cat "$work/its.long")" != $((3 * n)) ]; }; then
  echo "expected $n and $((3 * n)) iterations:" >&2
  cat "$work/run.short.log" "$work/run.long.log" >&2
  exit 1
fi

python3 - "$work/cg.short" "$work/cg.long" "$(cat "$work/its.short")" "$(cat "$work/its.long")" "$top" "$vus" <<'PY'
import re, subprocess, sys
from collections import Counter

small, large, i1, i3, top, vus = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
its = i3 - i1

def events(path):
    """Every event's program total (Ir, and with CACHE=1 the misses)."""
    names, totals = [], []
    for line in open(path):
        if line.startswith("events:"):
            names = line.split()[1:]
        elif line.startswith("totals:") or line.startswith("summary:"):
            totals = [int(x) for x in line.split()[1:]]
    return dict(zip(names, totals))


def by_function(path):
    out = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", path],
                         capture_output=True, text=True, check=True).stdout
    totals, funcs = 0, Counter()
    for line in out.splitlines():
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$", line)
        if not m:
            continue
        ir = int(m.group(1).replace(",", ""))
        if "PROGRAM TOTALS" in m.group(2):
            totals = ir
            continue
        name = m.group(2)
        if not name.startswith("???"):
            name = name.split(":", 1)[-1]
        funcs[re.sub(r"\s*\[.*\]$", "", name)] += ir
    return totals, funcs

(t1, f1), (t3, f3) = by_function(small), by_function(large)
per = (t3 - t1) / its
print(f"instructions per iteration: {per:,.0f}  ({vus} VUs, {i1} and {i3} iterations)")
e1, e3 = events(small), events(large)
if "I1mr" in e3:
    d = {k: (e3[k] - e1.get(k, 0)) / its for k in e3}
    print(f"L1i misses per iteration: {d['I1mr']:,.0f}  L1d misses: {d['D1mr'] + d['D1mw']:,.0f}  "
          f"LL misses: {d['ILmr'] + d['DLmr'] + d['DLmw']:,.0f}  "
          f"mispredicted branches: {d['Bim']:,.0f} indirect, {d['Bcm']:,.0f} conditional")
if top:
    diff = {k: (v - f1.get(k, 0)) / its for k, v in f3.items()}
    for name, ir in sorted(diff.items(), key=lambda kv: -kv[1])[:top]:
        print(f"{ir:8,.0f}  {name[:140]}")
PY
