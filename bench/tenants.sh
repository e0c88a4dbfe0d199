#!/usr/bin/env bash
# Two tenants on one `wload serve`, the service and its workers pinned to
# core 1, `wload target` on core 0:
#
#  1. fairness: both tenants saturate the generator core at once (hello,
#     no think time, 50 VUs each, 10 s); each worker's share of the core's
#     CPU time and of the requests;
#  2. capacity: both run idle VUs at once (GET + sleep 1 s, N each, 20 s;
#     N=5000 unless given); each one's iterations/s against the ideal of
#     N per second, and each worker's RSS per VU.
#
# Usage: bench/tenants.sh [N]
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
wload_and_guest hello
idle_vus=${1:-5000}
work=$(mktemp -d)
port=$(free_port)
serve "$port" 200 "$work/target.log"
api_port=$(free_port)
echo "bench-admin-token" >"$work/admin"
taskset -c 1 "$WLOAD" serve --listen "127.0.0.1:$api_port" --data "$work/data" \
  --admin-token-file "$work/admin" 2>"$work/serve.log" &
service=$!
cleanup() { kill "$service" 2>/dev/null || true; wait "$service" 2>/dev/null || true; stop_server; }
trap cleanup EXIT
api="http://127.0.0.1:$api_port"
for _ in $(seq 100); do curl -sf "$api/healthz" >/dev/null && break; sleep 0.1; done

call() { # METHOD PATH TOKEN [DATA]
  curl -s -X "$1" -H "Authorization: Bearer $3" ${4:+--data-binary "$4"} "$api$2"
}
tenant() {
  call POST /v1/tenants bench-admin-token \
    "{\"name\": \"$1\", \"quotas\": {\"vusPerRun\": 100000, \"vuHoursPerPeriod\": 10000},
      \"egress\": {\"allow\": [\"127.0.0.1:$port\"]}}" | jq -r .token
}
token_a=$(tenant a)
token_b=$(tenant b)
test_a=$(call POST "/v1/tests?name=hello.wasm" "$token_a" "@$GUEST" | jq -r .id)
test_b=$(call POST "/v1/tests?name=hello.wasm" "$token_b" "@$GUEST" | jq -r .id)

start() { # TOKEN TEST VUS SECONDS SLEEP_MS → run id
  call POST /v1/runs "$1" "{\"test\": \"$2\", \"env\": {\"BASE_URL\": \"http://127.0.0.1:$port\", \"SLEEP_MS\": \"$5\"},
    \"options\": {\"scenarios\": {\"s\": {\"executor\": \"constant-vus\", \"vus\": $3, \"duration\": \"${4}s\", \"gracefulStop\": \"2s\"}}}}" | jq -r .id
}
wait_run() { # TOKEN RUN
  while [ "$(call GET "/v1/runs/$2" "$1" | jq -r .status)" = running ]; do sleep 0.5; done
}
workers() { cat /proc/"$service"/task/*/children 2>/dev/null | tr ' ' '\n' | grep -v '^$' || true; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
rss_kib() { awk '/^VmRSS:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }
reqs() { call GET "/v1/runs/$2/summary" "$1" | jq '.metrics.http_reqs.count'; }
iters() { call GET "/v1/runs/$2/summary" "$1" | jq '.metrics.iterations.count'; }

# 1. Fairness.
run_a=$(start "$token_a" "$test_a" 50 10 0)
run_b=$(start "$token_b" "$test_b" 50 10 0)
sleep 2
mapfile -t pids < <(workers)
declare -A before
for p in "${pids[@]}"; do before[$p]=$(cpu_ticks "$p"); done
sleep 6
total=0
declare -A used
for p in "${pids[@]}"; do used[$p]=$(( $(cpu_ticks "$p") - ${before[$p]} )); total=$(( total + ${used[$p]} )); done
wait_run "$token_a" "$run_a"; wait_run "$token_b" "$run_b"
ra=$(reqs "$token_a" "$run_a"); rb=$(reqs "$token_b" "$run_b")
echo "fairness (2 tenants x 50 VUs, no think time, core 1 shared):"
i=0
for p in "${pids[@]}"; do
  i=$((i + 1))
  awk -v i="$i" -v u="${used[$p]}" -v t="$total" 'BEGIN { printf "  worker %d: %.1f%% of the workers'"'"' CPU time\n", i, 100 * u / (t > 0 ? t : 1) }'
done
awk -v a="$ra" -v b="$rb" 'BEGIN { printf "  requests: tenant a %d (%.1f%%), tenant b %d (%.1f%%)\n", a, 100*a/(a+b), b, 100*b/(a+b) }'

# 2. Capacity.
run_a=$(start "$token_a" "$test_a" "$idle_vus" 20 1000)
run_b=$(start "$token_b" "$test_b" "$idle_vus" 20 1000)
sleep 15
mapfile -t pids < <(workers)
rss=""
for p in "${pids[@]}"; do rss="$rss $(rss_kib "$p")"; done
wait_run "$token_a" "$run_a"; wait_run "$token_b" "$run_b"
ia=$(iters "$token_a" "$run_a"); ib=$(iters "$token_b" "$run_b")
echo "capacity (2 tenants x $idle_vus idle VUs, GET + sleep 1 s, 20 s, one generator core):"
awk -v a="$ia" -v b="$ib" -v n="$idle_vus" 'BEGIN {
  ideal = n * 20; printf "  iterations of ideal: tenant a %.1f%%, tenant b %.1f%%\n", 100*a/ideal, 100*b/ideal }'
for r in $rss; do
  awk -v r="$r" -v n="$idle_vus" 'BEGIN { printf "  worker RSS %.1f MiB, %.1f KiB per VU\n", r/1024, r/n }'
done
