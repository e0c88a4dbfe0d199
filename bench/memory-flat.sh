#!/usr/bin/env bash
# Flat memory (issue 4, item 8): a long run at full speed must not grow
# beyond what its VUs and connections need.
#
# The built-in target server runs on core 0, wload on core 1 with 50 VUs
# of examples/rust/hello for DURATION (default 10m) and --out json= and
# --out hdr= streaming to files. wload's RSS (VmRSS of /proc/PID/status) is
# sampled every 10 s and printed; the last line compares the RSS at 1 min
# with the RSS at the end. Nothing is asserted: the figures go to
# docs/BENCHMARKS.md.
#
#   bench/memory-flat.sh            # 10 minutes
#   DURATION=2m bench/memory-flat.sh
#   WLOAD=/path/to/wload bench/memory-flat.sh   # skip the build
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${DURATION:-10m}
vus=${VUS:-50}
. bench/lib.sh
port=${PORT:-$(free_port)}
wload_and_guest hello
hello=$GUEST
work=${WORK:-$(mktemp -d)}
mkdir -p "$work"

secs() { # 10m -> 600, 90s -> 90, 1h -> 3600
  case $1 in
    *h) echo $(( ${1%h} * 3600 )) ;;
    *m) echo $(( ${1%m} * 60 )) ;;
    *s) echo "${1%s}" ;;
    *) echo "$1" ;;
  esac
}
total=$(secs "$duration")

serve "$port" $(( total + 60 )) "$work/server.log"

taskset -c 1 "$WLOAD" run "$hello" -q --vus "$vus" --duration "$duration" \
  -e BASE_URL="http://127.0.0.1:$port" \
  --out json="$work/out.jsonl" --out hdr="$work/out.hlog" \
  --summary-export "$work/summary.json" >"$work/summary.txt" 2>"$work/run.log" &
run=$!

echo "seconds rss_kib  (wload run, $vus VUs, $duration, --out json + hdr; files in $work)"
: >"$work/rss.txt"
elapsed=0
while kill -0 "$run" 2>/dev/null; do
  sleep 10
  elapsed=$(( elapsed + 10 ))
  rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$run/status" 2>/dev/null || true)
  [ -n "$rss" ] || break
  echo "$elapsed $rss" | tee -a "$work/rss.txt"
done
wait "$run" || echo "wload exited with $?"
stop_server

at_1m=$(awk '$1 == 60 {print $2}' "$work/rss.txt")
last=$(tail -1 "$work/rss.txt")
max=$(awk 'BEGIN {m = 0} $2 > m {m = $2} END {print m}' "$work/rss.txt")
reqs=$(python3 -c "import json,sys; print(int(json.load(open(sys.argv[1]))['metrics']['http_reqs']['count']))" "$work/summary.json" 2>/dev/null || echo "?")
echo "requests: $reqs; json lines: $(wc -l <"$work/out.jsonl"); hdr log: $(du -k "$work/out.hlog" | cut -f1) KiB"
echo "RSS at 60 s: ${at_1m:-?} KiB; at ${last% *} s: ${last#* } KiB; max: $max KiB"
