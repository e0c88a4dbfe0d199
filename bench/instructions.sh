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
#   CACHE=1 bench/instructions.sh  # also simulated L1 misses and branch
#                                  # mispredictions per iteration (slower)
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

count() { # iterations: callgrind's output file for that many
  # A long output interval: the per-second aggregation would otherwise
  # count in proportion to valgrind's slowness, not to the iterations.
  taskset -c 1 valgrind --tool=callgrind --smc-check=all "${sim[@]}" \
    --callgrind-out-file="$work/cg.$1" "$WLOAD" run "$GUEST" "${with[@]}" -q \
    --vus "$vus" --iterations "$1" --out-interval 1h \
    -e BASE_URL="http://127.0.0.1:$port" >"$work/run.$1.log" 2>&1 ||
    { echo "wload failed under valgrind:"; cat "$work/run.$1.log"; exit 1; } >&2
  grep -q "iterations.*: $1 " "$work/run.$1.log" ||
    { echo "expected $1 iterations:"; cat "$work/run.$1.log"; exit 1; } >&2
}
count "$n" &
first=$!
count $((3 * n))
wait "$first"

python3 - "$work/cg.$n" "$work/cg.$((3 * n))" "$n" "$top" "$vus" <<'PY'
import re, subprocess, sys
from collections import Counter

small, large, n, top, vus = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]

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
per = (t3 - t1) / (2 * n)
print(f"instructions per iteration: {per:,.0f}  ({vus} VUs, {n} and {3 * n} iterations)")
e1, e3 = events(small), events(large)
if "I1mr" in e3:
    d = {k: (e3[k] - e1.get(k, 0)) / (2 * n) for k in e3}
    print(f"L1i misses per iteration: {d['I1mr']:,.0f}  L1d misses: {d['D1mr'] + d['D1mw']:,.0f}  "
          f"mispredicted branches: {d['Bim']:,.0f} indirect, {d['Bcm']:,.0f} conditional")
if top:
    diff = {k: (v - f1.get(k, 0)) / (2 * n) for k, v in f3.items()}
    for name, ir in sorted(diff.items(), key=lambda kv: -kv[1])[:top]:
        print(f"{ir:8,.0f}  {name[:140]}")
PY
