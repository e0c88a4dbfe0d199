#!/usr/bin/env python3
"""The tables of bench/compare.sh, in markdown, from its run directories.

Usage: report.py MACHINE RUNS.tsv

MACHINE holds key=value lines (machine and versions); RUNS.tsv one line per
run: scenario, tool, VUs, and the run's directory (or "skipped"). Each
directory holds `time` ("elapsed user sys maxrss_kb" from /usr/bin/time),
`stdout`, `stderr` and, for wload and k6, `summary.json` (k6's
--summary-export layout, which wload also writes). Every ratio compares
figures of the same run of compare.sh; wload's mixed runs are repeated
(BENCH_MIXED_REPEATS) and their targets take the medians.
"""

import json
import re
import statistics
import sys

IDLE_VU_TARGET_KIB = 32
# Issue 20's goals (docs/BENCHMARKS.md, "Session 9").
SCALE_FLAT = 1.20          # CPU per idle iteration at N VUs ≤ 1.2× the 1,000-VU run's
SCALE_VUS = 19_000         # ... up to this many VUs, at ≥ this share of the ideal rate:
SCALE_IDEAL = 0.95
MIXED_FLOOR = 1.10         # mixed-50 peak RSS ≤ 1.1× (baseline + bytes the test holds)
MIXED_VS_K6 = 2.5          # mixed-50 iterations/s ≥ 2.5× k6's


def mixed_held_bytes(json_bytes):
    """Bytes one VU of examples/rust/mixed holds at the end of an iteration:
    every response it fetched (5 B, 100 KB, 1 MB, the decoded JSON, the
    chain's 5 B, and the batch's 5 B + 100 KB + JSON)."""
    return 5 + 102_400 + 1_048_576 + json_bytes + 5 + (5 + 102_400 + json_bytes)


def load_time(d):
    """(CPU seconds, wall seconds, peak RSS bytes) of the generator."""
    try:
        elapsed, user, sys_, rss = open(f"{d}/time").read().split()[-4:]
        return float(user) + float(sys_), float(elapsed), int(rss) * 1024
    except (OSError, ValueError):
        return None, None, None


def tail(d, name, lines=3):
    try:
        text = open(f"{d}/{name}", errors="replace").read()
    except OSError:
        return ""
    # Progress lines end in carriage returns; keep what a terminal would show.
    rows = [r.split("\r")[-1].strip() for r in text.splitlines()]
    return " / ".join(r for r in rows if r)[-400:] if lines else text


def parse_summary(d):
    """wload and k6: figures from summary.json, None when the run failed."""
    try:
        m = json.load(open(f"{d}/summary.json"))["metrics"]
    except (OSError, ValueError, KeyError):
        return None
    reqs = m.get("http_reqs", {})
    dur = m.get("http_req_duration", {})
    checks = m.get("checks", {})
    it = m.get("iterations", {})
    return {
        "requests": reqs.get("count", 0),
        "rps": reqs.get("rate", 0),
        "p50_ms": dur.get("med"),
        "p99_ms": dur.get("p(99)"),
        "iterations": it.get("count", 0),
        "its": it.get("rate", 0),
        "checks_ok": checks.get("passes", 0),
        "checks_failed": checks.get("fails", 0),
        "failed_rate": m.get("http_req_failed", {}).get("value"),
    }


def parse_wrk(d):
    for line in open(f"{d}/stdout", errors="replace"):
        if line.startswith("WRK_JSON "):
            w = json.loads(line[len("WRK_JSON "):])
            secs = w["duration_us"] / 1e6
            return {
                "requests": w["requests"],
                "rps": w["requests"] / secs if secs else 0,
                "p50_ms": w["p50_us"] / 1e3,
                "p99_ms": w["p99_us"] / 1e3,
                "errors": w["errors"],
            }
    return None


def parse_oha(d):
    try:
        o = json.load(open(f"{d}/stdout"))
    except (OSError, ValueError):
        return None
    s = o["summary"]
    statuses = o.get("statusCodeDistribution", {})
    # oha aborts the requests in flight at the deadline and lists them as
    # errors; the other generators simply do not count them.
    errors = sum(n for e, n in o.get("errorDistribution", {}).items() if "deadline" not in e)
    lat = o.get("latencyPercentiles", {})
    requests = sum(statuses.values()) + errors
    return {
        "requests": requests,
        "rps": s.get("requestsPerSec") or requests / s["total"],
        "p50_ms": lat["p50"] * 1e3 if lat.get("p50") is not None else None,
        "p99_ms": lat["p99"] * 1e3 if lat.get("p99") is not None else None,
        "errors": errors,
    }


PARSERS = {"wrk": parse_wrk, "oha": parse_oha, "k6": parse_summary, "wload": parse_summary}


def started_in(d):
    """wload's own "initialized N VUs in T" line, in seconds."""
    m = re.search(r"initialized \d+ VUs in ([\d.]+) ?(µs|us|ms|s)\b", tail(d, "stderr", 0))
    if not m:
        return None
    return float(m.group(1)) * {"µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1}[m.group(2)]


def load(runs_path):
    runs = []
    for line in open(runs_path):
        scenario, tool, vus, d = line.rstrip("\n").split("\t")
        r = {"scenario": scenario, "tool": tool, "vus": int(vus), "dir": d}
        if d == "skipped":
            r["skipped"] = True
        else:
            r["cpu"], r["wall"], r["rss"] = load_time(d)
            r["fig"] = PARSERS[tool](d)
            if r["fig"] and r["cpu"]:
                r["fig"]["per_cpu"] = r["fig"]["requests"] / r["cpu"]
            if tool == "wload":
                r["start"] = started_in(d)
            for key, name in (("overflows", "listen_overflows"), ("short", "connections_short")):
                try:
                    r[key] = int(open(f"{d}/{name}").read())
                except (OSError, ValueError):
                    r[key] = None
        runs.append(r)
    return runs


def num(x, digits=0):
    if x is None:
        return "–"
    return f"{x:,.{digits}f}"


def size(b):
    if b is None:
        return "–"
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= div:
            return f"{b / div:,.1f} {unit}"
    return f"{b} B"


def micros(s):
    return "–" if s is None else f"{s * 1e6:,.1f} µs"


def secs(s):
    if s is None:
        return "–"
    return f"{s * 1e3:,.0f} ms" if s < 10 else f"{s:,.1f} s"


def ratio(x, ref):
    if x is None or not ref:
        return "–"
    return f"{x / ref:.2f}"


def cell(x, fmt, refs):
    return f"{fmt(x)} ({' / '.join(ratio(x, r) for r in refs)})"


def throughput(runs, scenario):
    rows = [r for r in runs if r["scenario"] == scenario]
    if not rows:
        return []
    get = {r["tool"]: r for r in rows}

    def ref(tool, key):
        r = get.get(tool)
        if not r or not r.get("fig"):
            return None
        return r["rss"] if key == "rss" else r["fig"].get(key)

    keys = ("rps", "per_cpu", "p50_ms", "p99_ms", "rss")
    refs = {k: (ref("wrk", k), ref("k6", k)) for k in keys}
    out = []
    for r in rows:
        f = r.get("fig")
        head = f"| {scenario} | {r['tool']} | {num(r['vus'])}"
        if not f:
            out.append(f"{head} | failed: {tail(r['dir'], 'stderr')} | | | | | | |")
            continue
        ms = lambda x: "–" if x is None else f"{x:.2f} ms"  # noqa: E731
        errors = f.get("errors", f.get("checks_failed", 0))
        out.append(
            f"{head} | {cell(f['rps'], num, refs['rps'])} "
            f"| {cell(f.get('per_cpu'), num, refs['per_cpu'])} "
            f"| {cell(f['p50_ms'], ms, refs['p50_ms'])} | {cell(f['p99_ms'], ms, refs['p99_ms'])} "
            f"| {cell(r['rss'], size, refs['rss'])} | {num(r['cpu'], 1)} | {num(errors)} |"
        )
    return out


THROUGHPUT_HEADER = [
    "| scenario | tool | connections/VUs | req/s | req per CPU-s | p50 | p99 | peak RSS | CPU s "
    "| errors / failed checks |",
    "|---|---|---|---|---|---|---|---|---|---|",
]


def skip_reason(r, per_vu, machine):
    """Why k6 was not run at this size, in figures of this run."""
    why = [f"above BENCH_K6_MAX_VUS={machine.get('k6_max_vus', '?')}"]
    nofile = int(machine["nofile"]) if machine.get("nofile", "").isdigit() else None
    if nofile and r["vus"] > nofile:
        why.append(f"more VUs than the {num(nofile)} open files allowed")
    if per_vu:
        why.append(f"~{size(per_vu * r['vus'])} at k6's {size(per_vu)} per VU measured above")
    return "skipped: " + "; ".join(why)


def steady(runs, r, seconds):
    """The steady state of an idle wload run: its difference with the run
    of the same VUs twice as long ("sleep2x-N"), so that what the VUs'
    start costs (instances, connections) cancels. (iterations/s, CPU s per
    iteration), or None without the longer run."""
    long = next((x for x in runs if x["scenario"] == f"sleep2x-{r['vus']}" and x["tool"] == r["tool"]), None)
    a, b = r.get("fig"), (long or {}).get("fig")
    if not (a and b and r.get("cpu") and long.get("cpu") and r.get("wall") and long.get("wall")):
        return None
    its = b["iterations"] - a["iterations"]
    if its <= 0:
        return None
    # The longer run is `seconds` (the configured duration) longer.
    return its / seconds, (long["cpu"] - r["cpu"]) / its


def idle(runs, machine):
    rows = [r for r in runs if r["scenario"].startswith("sleep-")]
    if not rows:
        return []
    base = {r["tool"]: r["rss"] for r in rows if r["vus"] == 1 and not r.get("skipped")}
    out = [
        "| tool | VUs | started in | iterations/s (ideal) | of ideal | p99 | peak RSS | RSS per VU over 1 VU "
        "| CPU s / wall s | CPU per iteration (× 1,000 VUs) | steady state: iterations/s (of ideal), CPU per "
        "iteration (× 1,000 VUs) | failed checks | accept-queue overflows "
        "| seconds nginx was short of connections |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        f = r.get("fig")
        if f and f.get("iterations") and r.get("cpu"):
            r["cpu_per_it"] = r["cpu"] / f["iterations"]
        r["steady"] = steady(runs, r, float(machine.get("duration") or 0) or 1)
    per_it_ref = {r["tool"]: r.get("cpu_per_it") for r in rows if r["vus"] == 1000}
    steady_ref = {r["tool"]: r["steady"][1] for r in rows if r["vus"] == 1000 and r.get("steady")}
    for r in rows:
        if r.get("skipped"):
            measured = [x.get("per_vu") for x in rows if x["tool"] == r["tool"] and x.get("per_vu")]
            reason = skip_reason(r, measured[-1] if measured else None, machine)
            out.append(f"| {r['tool']} | {num(r['vus'])} | {reason} | | | | | | | | | | | |")
            continue
        f = r.get("fig")
        if not f:
            out.append(f"| {r['tool']} | {num(r['vus'])} | refused or failed: {tail(r['dir'], 'stderr')} | | | | | | | | | | | |")
            continue
        per_vu = None
        if r["vus"] > 1 and base.get(r["tool"]) and r["rss"]:
            per_vu = (r["rss"] - base[r["tool"]]) / (r["vus"] - 1)
        r["per_vu"] = per_vu
        start = secs(r.get("start")) if r["tool"] == "wload" else "not reported"
        p99 = "–" if f["p99_ms"] is None else f"{f['p99_ms']:,.1f} ms"
        out.append(
            f"| {r['tool']} | {num(r['vus'])} | {start} | {num(f['its'])} ({num(r['vus'])}) "
            f"| {100 * f['its'] / r['vus']:.0f}% | {p99} | {size(r['rss'])} | {size(per_vu)} "
            f"| {num(r['cpu'], 1)} / {num(r['wall'], 1)} "
            f"| {micros(r.get('cpu_per_it'))} ({ratio(r.get('cpu_per_it'), per_it_ref.get(r['tool']))}) "
            f"| {steady_cell(r, steady_ref.get(r['tool']))} "
            f"| {num(f['checks_failed'])} | {num(r['overflows'])} | {num(r['short'])} |"
        )
    return out + [""]


def steady_cell(r, ref):
    if not r.get("steady"):
        return "–"
    rate, per_it = r["steady"]
    return f"{num(rate)} ({100 * rate / r['vus']:.0f}%), {micros(per_it)} ({ratio(per_it, ref)})"


def mixed_runs(runs, scenario, tool="wload"):
    return [r for r in runs if r["scenario"] == scenario and r["tool"] == tool]


def figure(r, key):
    """A run's figure (peak RSS, CPU s or a summary key), None when the run
    is missing or failed."""
    f = r.get("fig") if r else None
    if not f:
        return None
    return r.get(key) if key in ("rss", "cpu") else f.get(key)


def median(rs, key):
    """The median of a figure over the runs that have it, and each run's
    figure in run order (None where it failed)."""
    each = [figure(r, key) for r in rs]
    have = [x for x in each if x is not None]
    return (statistics.median(have) if have else None), each


def each_run(rs, key, fmt):
    """Each run's figure in run order ("a / b / c"): the spread beside a median."""
    return " / ".join("failed" if x is None else fmt(x) for x in median(rs, key)[1])


def mixed(runs):
    k6 = mixed_runs(runs, "mixed-50", "k6")
    groups = [k6, mixed_runs(runs, "mixed-50"), mixed_runs(runs, "mixed-1")]
    if not any(groups):
        return []
    ref = next((r for r in k6 if r.get("fig")), None)
    out = [
        "| tool | VUs | run | iterations/s (×k6) | req/s | p99 | peak RSS (×k6) | CPU s | checks passed / failed |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def line(r, run, get, checks):
        def vs(key):
            # k6 runs 50 VUs only: a 1-VU run has nothing to compare with.
            return f" ({ratio(get(key), figure(ref, key))})" if ref and r["vus"] == 50 else ""

        p99 = "–" if get("p99_ms") is None else f"{get('p99_ms'):,.1f} ms"
        out.append(
            f"| {r['tool']} | {num(r['vus'])} | {run} | {num(get('its'), 1)}{vs('its')} | {num(get('rps'))} | {p99} "
            f"| {size(get('rss'))}{vs('rss')} | {num(get('cpu'), 1)} | {checks} |"
        )

    for rs in groups:
        for i, r in enumerate(rs, 1):
            f = r.get("fig")
            if not f:
                out.append(f"| {r['tool']} | {num(r['vus'])} | {i} | failed: {tail(r['dir'], 'stderr')} | | | | | |")
                continue
            line(r, i, lambda key, r=r: figure(r, key), f"{num(f['checks_ok'])} / {num(f['checks_failed'])}")
        if len(rs) > 1:
            line(rs[0], "median", lambda key, rs=rs: median(rs, key)[0], "–")
    if any(len(rs) > 1 for rs in groups):
        out += ["", "median: each column's median over the runs above it (the targets use these)."]
    return out + [""]


def targets(runs, machine):
    def find(scenario, tool):
        return next((r for r in runs if r["scenario"] == scenario and r["tool"] == tool), None)

    out = ["| target (issue 20) | measured in this run | holds |", "|---|---|---|"]

    def row(name, measured, ok):
        out.append(f"| {name} | {measured} | {'yes' if ok else 'no' if ok is not None else '–'} |")

    for sc in ("tiny-4", "tiny-100"):
        w, ref, k = find(sc, "wload"), find(sc, "wrk"), find(sc, "k6")
        a, b, c = figure(w, "per_cpu"), figure(ref, "per_cpu"), figure(k, "per_cpu")
        if a and b:
            k6_said = f" (k6: {c / b:.2f}×)" if c else ""
            row(f"{sc}: req per CPU-s ≥ 1.0× wrk", f"{a / b:.2f}× wrk{k6_said}", a / b >= 1.0)
    idle_rows = [r for r in runs if r["scenario"].startswith("sleep-") and r["tool"] == "wload" and r["vus"] > 1]

    # The steady state (start-up cancelled) where the longer runs exist;
    # the whole run's figures beside it, which include the VUs' start.
    def per_it(r):
        return r["steady"][1] if r.get("steady") else r.get("cpu_per_it")

    what = "steady state" if any(r.get("steady") for r in idle_rows) else "whole run"
    ref_row = next((r for r in idle_rows if r["vus"] == 1000), None)
    ref = per_it(ref_row) if ref_row else None
    for r in idle_rows:
        if ref and per_it(r) and 1000 < r["vus"] <= SCALE_VUS:
            x = per_it(r) / ref
            whole = f"; whole run {ratio(r.get('cpu_per_it'), ref_row.get('cpu_per_it'))}" if r.get("steady") else ""
            row(f"CPU per idle iteration at {num(r['vus'])} VUs ≤ {SCALE_FLAT:.1f}× 1,000 VUs'",
                f"{what}: {micros(per_it(r))} = {x:.2f}× ({micros(ref)}){whole}", x <= SCALE_FLAT)
    scale = next((r for r in idle_rows if r["vus"] == SCALE_VUS and r.get("fig")), None)
    if scale:
        whole = scale["fig"]["its"] / scale["vus"]
        share = scale["steady"][0] / scale["vus"] if scale.get("steady") else whole
        failed = scale["fig"]["checks_failed"]
        longer = next((x for x in runs if x["scenario"] == f"sleep2x-{SCALE_VUS}" and x.get("fig")), None)
        if longer:
            failed += longer["fig"]["checks_failed"]
        row(f"{num(SCALE_VUS)} VUs at ≥ {SCALE_IDEAL:.0%} of the ideal rate, no failed check",
            f"{what}: {share:.0%} (whole run {whole:.0%}), {num(failed)} failed", share >= SCALE_IDEAL and failed == 0)
    for r in idle_rows:
        if r.get("per_vu") is not None:
            row(f"≤ {IDLE_VU_TARGET_KIB} KiB RSS per idle VU ({num(r['vus'])} VUs)",
                size(r["per_vu"]), r["per_vu"] <= IDLE_VU_TARGET_KIB * 1024)
    big = next((r for r in idle_rows if r["vus"] == 100_000), None)
    measured = [(r["vus"], r["rss"]) for r in idle_rows if r.get("fig") and r["rss"] and r["vus"] >= 1000]
    if big:
        ok = bool(big.get("fig")) and big["fig"]["iterations"] > 0
        if ok:
            row("100,000 VUs", "ran", ok)
        elif len(measured) >= 2:
            # Least squares over the sizes that ran: RSS = base + per_vu × VUs.
            n = len(measured)
            mx = sum(v for v, _ in measured) / n
            my = sum(m for _, m in measured) / n
            slope = sum((v - mx) * (m - my) for v, m in measured) / sum((v - mx) ** 2 for v, _ in measured)
            at = my + slope * (100_000 - mx)
            row("100,000 VUs", f"did not run ({tail(big['dir'], 'stderr', 1)}); extrapolated from "
                f"{', '.join(num(v) for v, _ in measured)} VUs: {size(at)} ({size(slope)} per VU)", None)
        else:
            row("100,000 VUs", f"did not run: {tail(big['dir'], 'stderr')}", False)
    # The baseline is the same test at 1 VU: its code, its metric series
    # (a dozen URL and status series of eight trends each, ~20 MiB of
    # histograms for this test, none of it per VU) and one VU's bodies;
    # the idle test's 1-VU run has one series and would count those
    # histograms as overhead of the bodies. Its peak moves by 14 MiB
    # between identical runs (docs/BENCHMARKS.md, Session 13): medians of
    # both sizes, each run's figure beside them.
    w, one = mixed_runs(runs, "mixed-50"), mixed_runs(runs, "mixed-1")
    rss, base = median(w, "rss")[0], median(one, "rss")[0]
    json_bytes = int(machine.get("json_bytes", "0") or 0)
    if rss and base and json_bytes:
        floor = base + 49 * mixed_held_bytes(json_bytes)
        spread = (f"; runs at 50 VUs {each_run(w, 'rss', size)}, at 1 VU {each_run(one, 'rss', size)}"
                  if len(w) > 1 or len(one) > 1 else "")
        row(f"mixed: peak RSS ≤ {MIXED_FLOOR:.1f}× floor (the test at 1 VU + 49 VUs × "
            f"{size(mixed_held_bytes(json_bytes))} held)",
            f"{size(rss)} = {rss / floor:.2f}× {size(floor)} (1 VU: {size(base)}){spread}",
            rss <= MIXED_FLOOR * floor)
    its, k6_its = median(w, "its")[0], figure(find("mixed-50", "k6"), "its")
    if its and k6_its:
        spread = f"; wload's runs {each_run(w, 'its', lambda x: num(x, 1))}" if len(w) > 1 else ""
        row(f"mixed: throughput ≥ {MIXED_VS_K6:.1f}× k6",
            f"{its / k6_its:.2f}× k6 (iterations/s: {num(its, 1)} against {num(k6_its, 1)}){spread}",
            its >= MIXED_VS_K6 * k6_its)
    return out + [""]


def main():
    machine = dict(line.rstrip("\n").split("=", 1) for line in open(sys.argv[1]) if "=" in line)
    runs = load(sys.argv[2])
    out = [
        f"## bench/compare.sh, {machine.get('date')}",
        "",
        f"Machine: {machine.get('nproc')} cores ({machine.get('cpu')}), {machine.get('mem')}, "
        f"{machine.get('kernel')}; open files {machine.get('nofile')}, "
        f"vm.max_map_count {machine.get('max_map_count')}; load average "
        f"{machine.get('loadavg')} (other work competes for both cores); "
        f"net.ipv4.ip_local_port_range {machine.get('local_port_range')}.",
        f"Tools: wload {machine.get('wload')}, {machine.get('wrk')}, {machine.get('oha')}, "
        f"{machine.get('k6')}, nginx {machine.get('nginx')}.",
        f"nginx on core 0 (1 worker; 2 for the idle VUs, reuseport), each generator on core 1, {machine.get('duration')} s per run. "
        "Cells: value (ratio to wrk / ratio to k6, same run).",
        "",
    ]
    rows = [row for sc in ("tiny-4", "tiny-100", "100k-4") for row in throughput(runs, sc)]
    if rows:
        out += ["**Throughput** (tiny: 5-byte body; 100k: 100 KB body)", ""] + THROUGHPUT_HEADER + rows + [""]
    sleep_rows = idle(runs, machine)
    if sleep_rows:
        out += ["**Idle VUs** (GET + sleep 1 s; ideal iterations/s = VUs)", ""] + sleep_rows
    mixed_rows = mixed(runs)
    if mixed_rows:
        out += ["**mixed** (per iteration: 5 B, 100 KB, 1 MB, gzip JSON, /r/3 redirect chain, batch of 3; "
                "wload also at 1 VU, the memory floor's baseline, its runs alternating 50 and 1 VU)",
                ""] + mixed_rows
    out += ["**Targets**", ""] + targets(runs, machine)
    print("\n".join(out))


if __name__ == "__main__":
    sys.exit(main())
