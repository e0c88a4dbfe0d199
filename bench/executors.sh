#!/usr/bin/env bash
# Executor precision (issue 3): how exactly wload shapes load.
#
#   1. constant-arrival-rate at 5,000 iterations/s for 10 s against the
#      built-in target server: iterations counted at the server, against
#      the 50,000 planned.
#   2. ramping-vus 0 → 50 → 50 → 0 (10 s each): active VUs sampled every
#      100 ms (WLOAD_VUS_TRACE) against the plan.
#
# The server runs on core 0, wload on core 1. Prints one line per check.
set -euo pipefail
cd "$(dirname "$0")/.."
rustup target add wasm32-wasip2 >/dev/null
cargo build --release -p wload -q
(cd examples && cargo build --release --target wasm32-wasip2 -q --target-dir ../target/guests -p hello)
wload=target/release/wload
hello=target/guests/wasm32-wasip2/release/hello.wasm
work=$(mktemp -d)
port=18790

taskset -c 0 "$wload" target --port $port --duration 60s 2>"$work/server.log" &
server=$!
sleep 0.5

cat >"$work/car.json" <<JSON
{"scenarios": {"car": {"executor": "constant-arrival-rate", "rate": 5000, "timeUnit": "1s",
  "duration": "10s", "preAllocatedVUs": 50, "maxVUs": 200}}}
JSON
taskset -c 1 "$wload" run "$hello" -q --config "$work/car.json" -e BASE_URL=http://127.0.0.1:$port \
  --summary-export "$work/car-summary.json" >/dev/null
cat >"$work/ramp.json" <<JSON
{"scenarios": {"ramp": {"executor": "ramping-vus", "startVUs": 0, "gracefulRampDown": "0s",
  "stages": [{"duration": "10s", "target": 50}, {"duration": "10s", "target": 50},
             {"duration": "10s", "target": 0}]}}}
JSON
WLOAD_VUS_TRACE="$work/ramp.trace" taskset -c 1 "$wload" run "$hello" -q --no-summary \
  --config "$work/ramp.json" -e BASE_URL=http://127.0.0.1:$port
kill -INT $server
wait $server || true

python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
m = json.load(open(f"{work}/car-summary.json"))["metrics"]
done = m["iterations"]["count"]
dropped = m.get("dropped_iterations", {}).get("count", 0)
print(f"constant-arrival-rate 5000/s x 10s: {done:.0f} iterations run, {dropped:.0f} dropped, "
      f"{100 * done / 50000:.2f}% of 50,000 planned; "
      f"iteration_duration_corrected p(99) {m['iteration_duration_corrected']['p(99)']:.2f} ms")

def plan(ms):
    t = ms / 1000
    if t < 10: return int(50 * t / 10)
    if t < 20: return 50
    if t < 30: return 50 - int(50 * (t - 20) / 10)
    return 0
rows = [tuple(map(int, l.split())) for l in open(f"{work}/ramp.trace")]
off = [abs(v - plan(ms)) for ms, v in rows if ms < 30000]
within = sum(1 for d in off if d <= 1)
print(f"ramping-vus 0→50→50→0: {len(off)} samples at 100 ms, {within} within one VU of plan "
      f"({100 * within / len(off):.1f}%), worst {max(off)} VUs off")
PY
rm -rf "$work"
