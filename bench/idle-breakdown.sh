#!/usr/bin/env bash
# Where an idle VU's memory goes (issue 6: the ≤ 32 KiB per idle VU target).
#
# The built-in target server runs on core 0; wload on core 1 runs VUS
# (default 2000) VUs of examples/rust/hello (EXAMPLE=idle for
# examples/rust/idle) doing GET + sleep 1 s. After WARMUP seconds (default
# 8) the script reads /proc/PID/smaps of wload and of a 1-VU run, groups
# the mappings (malloc heaps, guest linear memory, its copy-on-write
# image, fiber stacks, the binary), and prints each group's RSS per VU
# over the 1-VU run; with gdb installed, also the bytes malloc has in use
# against what it holds from the system (glibc's malloc_stats, which
# pauses the process for a moment), the difference being free chunks
# between live ones. Nothing is asserted: the figures go to
# docs/BENCHMARKS.md ("Session 3", "Session 10"). Below ~1,000 VUs the
# worker arenas are too small to tell from other anonymous mappings.
#
#   bench/idle-breakdown.sh
#   VUS=10000 EXAMPLE=idle bench/idle-breakdown.sh
#   WLOAD=/path/to/wload bench/idle-breakdown.sh   # skip the build
set -euo pipefail
cd "$(dirname "$0")/.."
vus=${VUS:-2000}
warmup=${WARMUP:-8}
. bench/lib.sh
port=${PORT:-$(free_port)}
wload_and_guest "${EXAMPLE:-hello}"
hello=$GUEST
work=$(mktemp -d)

trap 'stop_server; rm -rf "$work"' EXIT
serve "$port" $((2 * warmup + 60)) "$work/serve.log"

# snapshot N FILE: run N idle VUs, copy their smaps to FILE once warm.
snapshot() {
  taskset -c 1 "$WLOAD" run "$hello" --vus "$1" --duration $((warmup + 3))s --quiet \
    -e BASE_URL="http://127.0.0.1:$port" -e SLEEP_MS=1000 >"$work/run-$1.log" 2>&1 &
  local pid=$!
  sleep "$warmup"
  cp "/proc/$pid/smaps" "$2"
  # malloc_stats() prints to the process's stderr (its log).
  if command -v gdb >/dev/null; then
    gdb -p "$pid" -batch -ex 'call (void)malloc_stats()' >/dev/null 2>&1 || true
  fi
  wait "$pid"
}
snapshot 1 "$work/one.smaps"
snapshot "$vus" "$work/many.smaps"

python3 - "$work/one.smaps" "$work/many.smaps" "$vus" "$work/run-1.log" "$work/run-$vus.log" <<'PY'
import re, sys, collections

def groups(path):
    """RSS in KiB by kind of mapping."""
    maps = []
    for line in open(path):
        m = re.match(r'^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ \S+\s*(.*)$', line)
        if m:
            size = (int(m.group(2), 16) - int(m.group(1), 16)) // 1024
            maps.append({'start': int(m.group(1), 16), 'size': size, 'perms': m.group(3),
                         'name': m.group(4).strip(), 'rss': 0})
        elif line.startswith('Rss:'):
            maps[-1]['rss'] = int(line.split()[1])
    # A guest's linear memory is its image with the anonymous parts of
    # the same slot on either side (shadow stack below, heap above).
    for i, m in enumerate(maps):
        if 'wasm-memory-image' in m['name']:
            m['kind'] = 'guest memory: copy-on-write data image'
            for j in (i - 1, i + 1):
                if 0 <= j < len(maps) and not maps[j]['name'] and maps[j]['perms'] == 'rw-p':
                    maps[j]['kind'] = 'guest memory: stack and heap'
    rss = collections.Counter()
    for m in maps:
        kind = m.get('kind')
        if kind is None:
            if m['name'] == '[heap]':
                kind = 'malloc: main heap'
            elif m['name']:
                kind = 'binary, libraries, stack, vdso'
            elif m['size'] == 512:
                kind = 'fiber stacks (512 KiB each)'
            elif m['perms'] == 'rw-p' and m['size'] >= 8192 and m['start'] % (64 << 20) == 0:
                # glibc maps a thread arena's heaps at 64 MiB boundaries.
                kind = 'malloc: worker-thread arenas'
            elif m['perms'] == 'rw-p' and m['size'] >= 8192:
                kind = "wasmtime's table pool (and thread stacks)"
            else:
                kind = 'other anonymous'
        rss[kind] += m['rss']
    return rss

one, many, vus = groups(sys.argv[1]), groups(sys.argv[2]), int(sys.argv[3])
total = (sum(many.values()) - sum(one.values())) / (vus - 1)
print(f"{vus} idle VUs: {sum(many.values()) / 1024:.1f} MiB RSS, "
      f"{total:.1f} KiB per VU over the 1-VU run")
for kind, kib in sorted(many.items(), key=lambda kv: -kv[1]):
    per_vu = (kib - one.get(kind, 0)) / (vus - 1)
    print(f"  {per_vu:6.1f} KiB/VU  {kind}")

def heap(log):
    """(in use, from the system) bytes of malloc_stats' total, if printed."""
    text = open(log, errors="replace").read()
    m = re.search(r'Total \(incl\. mmap\):\s*system bytes\s*=\s*(\d+)\s*in use bytes\s*=\s*(\d+)', text)
    return (int(m.group(2)), int(m.group(1))) if m else None

h1, hn = heap(sys.argv[4]), heap(sys.argv[5])
if h1 and hn:
    use, held = ((hn[i] - h1[i]) / 1024 / (vus - 1) for i in (0, 1))
    print(f"  malloc per VU: {use:.1f} KiB in use, {held:.1f} KiB held from the system "
          f"({held - use:.1f} KiB free between live chunks)")
PY
