#!/usr/bin/env python3
"""cpu / llc / pagecache / net injectors: peak against stress-ng, level accuracy, back-off.

Not a test: prints a table and writes JSON (figures go to docs/performance.md). Memory stays
at or below 512 MiB. Usage: see run_resource_bench.sh.

  * cpu --max vs `stress-ng --cpu N` on the same CPUs (taskset): the comparable figure is CPU
    time per wall second (core-s/s), taken for stress-ng from the children's rusage; bogo-ops
    and our ops count different kernels, so their ratio is informational only.
  * llc --max vs `stress-ng --cache 1`: lines/s vs bogo-ops/s (informational), both pinned.
  * level accuracy (goal |achieved/target - 1| <= 2 %, per-interval CoV <= 5 %) at levels of
    the calibrated peak, for cpu and llc; rate accuracy for pagecache (anon and file).
  * pagecache back-off: a floor just above MemAvailable must release and say so.
  * net: peak to the in-process loopback sink and level accuracy (the iperf3 comparison over
    veth is net_bench.py).
  * llc vs memory bandwidth (--only llc-membw runs just this): two probes on CPU A, each alone
    and next to an antagonist on CPU B: a cache-resident probe (an `llc` chase over 64 MiB,
    read-only: its lines/s is how fast cached data comes back) and a bandwidth probe (`memcpy`
    over 2 x 128 MiB). Antagonists: `llc --max` (one thread), `memcpy` rate-held at the DRAM
    bytes/s that llc run moved (lines x 64 B x 2 with write-back), `memcpy --max`, and
    `stress-ng --cache 1`. Each cell: `rounds` ABBA rounds of alone / next to, the median
    ratio with its 95 % bootstrap CI (bench.py).
"""
import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as BENCH  # noqa: E402  (abba, compare: the ABBA rounds and bootstrap CI)


def run_inject(codl, args, scratch):
    cmd = [codl] + args + ["--json", "--scratch-root", scratch]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    lines = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    summary = [l for l in lines if l.get("summary")][0]
    return summary, [l for l in lines if "t_s" in l]


def stress_ng(args, seconds, cpus):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    cmd = ["taskset", "-c", cpus, "stress-ng"] + args + [
        "--timeout", f"{seconds}s", "--metrics-brief"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    bogo = None
    for line in (res.stdout + res.stderr).splitlines():
        m = re.search(r"stress-ng: (?:info|metrc):\s+\[\d+\]\s+(\w+)\s+(\d+)\s+([\d.]+)\s+"
                      r"([\d.]+)\s+([\d.]+)\s+([\d.]+)", line)
        if m and m.group(1) in ("cpu", "cache"):
            bogo = float(m.group(6))  # bogo ops/s (real time)
    return {"core_s_per_s": cpu / wall, "bogo_ops_per_s": bogo, "wall_s": wall}


def accuracy(codl, name, opts, peak, level, seconds, scratch):
    s, _ = run_inject(codl, [name] + opts + ["--level", str(level), "--peak", str(peak),
                                               "--duration", f"{seconds}s"], scratch)
    return {"level": level, "target": s["target_rate"], "achieved": s["achieved_rate"],
            "error": s["achieved_rate"] / s["target_rate"] - 1, "cov": s["cov"],
            "saturated": s["saturated"]}


def background(argv):
    """An antagonist running until terminated (stdout kept: its summary comes at the end). A
    codl-inject one is returned once it reports its first interval: its Setup (llc writes its
    whole working set, a streaming write) must not overlap the probe. stress-ng gets 1 s."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    proc.early = []
    if "stress-ng" in argv:
        time.sleep(1)
        return proc
    for line in proc.stdout:
        proc.early.append(line)
        if '"t_s"' in line:
            break
    return proc


def stop(proc):
    proc.terminate()
    out, _ = proc.communicate(timeout=20)
    out = "".join(proc.early) + out
    lines = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    return ([l for l in lines if l.get("summary")] or [{}])[-1]


def llc_vs_membw(codl, scratch, seconds, cpu_a, cpu_b, rounds):
    """How the llc thrasher differs from a bandwidth hog: see the module docstring."""
    probes = {
        "cache_resident_chase": ["llc", "--set", "threads=1", "--set", "working_set=64MiB",
                                 "--set", "write=false", "--set", f"cpus={cpu_a}"],
        "dram_copy": ["memcpy", "--set", "threads=1", "--set", "buffer_size=128MiB",
                      "--set", f"pin={cpu_a}"],
    }

    def probe(name):
        s, _ = run_inject(codl, probes[name] + ["--max", "--duration", f"{seconds}s"], scratch)
        return s["achieved_rate"]

    llc_args = ["llc", "--set", "threads=1", "--set", f"cpus={cpu_b}", "--max"]
    llc_ant = [codl] + llc_args + ["--duration", "600s", "--json", "--scratch-root", scratch]
    # The DRAM traffic of llc --max alone, to hold memcpy at the same bytes/s.
    s, _ = run_inject(codl, llc_args + ["--duration", f"{seconds}s"], scratch)
    llc_dram = s["achieved_rate"] * 64 * 2
    memcpy_ant = [codl, "memcpy", "--set", "threads=1", "--set", "buffer_size=128MiB",
                  "--set", f"pin={cpu_b}", "--duration", "600s", "--json"]
    antagonists = {
        "llc --max": llc_ant,
        "memcpy at llc's DRAM bytes/s": memcpy_ant + ["--rate", str(int(llc_dram))],
        "memcpy --max": memcpy_ant + ["--max"],
        "stress-ng --cache 1": ["taskset", "-c", str(cpu_b), "stress-ng", "--cache", "1",
                                "--timeout", "600s"],
    }
    res = {"llc_alone_lines_per_s": s["achieved_rate"], "llc_dram_bytes_per_s": llc_dram,
           "probes": {}}
    for name in probes:
        cells = {}
        for ant, argv in antagonists.items():
            achieved = []

            def next_to():
                bg = background(argv)
                rate = probe(name)
                achieved.append(stop(bg).get("achieved_rate"))
                return rate

            # ABBA rounds (alone, next to; next to, alone; ...): load drift hits both alike.
            alone, beside = BENCH.abba(rounds, lambda: probe(name), next_to)
            cell = BENCH.compare(beside, alone)
            cell.update({"alone": alone, "next_to": beside, "antagonist_achieved": achieved})
            cells[ant] = cell
            print(f"{name:22s} next to {ant:30s}: {cell['ratio']:.3f} of alone "
                  f"[{cell['ratio_ci95'][0]:.2f}, {cell['ratio_ci95'][1]:.2f}] "
                  f"({', '.join(f'{r:.2f}' for r in cell['round_ratios'])})", flush=True)
        res["probes"][name] = cells
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--codl", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--scratch", required=True)
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--cpus", default="0-%d" % (os.cpu_count() - 1))
    ap.add_argument("--only", choices=["llc-membw"], help="run just this part")
    ap.add_argument("--rounds", type=int, default=5, help="llc-membw: ABBA rounds per cell")
    a = ap.parse_args()
    if a.only == "llc-membw":
        res = {"host": {"cpus": os.cpu_count(), "loadavg_start": os.getloadavg()}}
        res["llc_vs_membw"] = llc_vs_membw(a.codl, a.scratch, a.seconds, 0,
                                           1 % os.cpu_count(), a.rounds)
        res["host"]["loadavg_end"] = os.getloadavg()
        with open(a.out, "w") as f:
            json.dump(res, f, indent=1)
        return
    ncpus = sum((int(r.split("-")[-1]) - int(r.split("-")[0]) + 1) for r in a.cpus.split(","))
    sec = a.seconds
    res = {"host": {"cpus": os.cpu_count(), "loadavg_start": os.getloadavg()}}

    # cpu at --max vs stress-ng --cpu N, same CPUs.
    cpu_opts = ["--set", f"threads={ncpus}", "--set", f"cpus={a.cpus}"]
    res["cpu"] = {}
    for mix, method in (("int", "int64"), ("float", "double")):
        ours, _ = run_inject(a.codl, ["cpu"] + cpu_opts + ["--set", f"mix={mix}", "--max",
                                                          "--duration", f"{sec}s"], a.scratch)
        theirs = stress_ng(["--cpu", str(ncpus), "--cpu-method", method], sec, a.cpus)
        res["cpu"][mix] = {
            "codl_core_s_per_s": ours["achieved_rate"], "codl_ops_per_s": ours.get("ops"),
            "stress_ng_core_s_per_s": theirs["core_s_per_s"],
            "stress_ng_bogo_ops_per_s": theirs["bogo_ops_per_s"],
            "ratio_core_s": ours["achieved_rate"] / theirs["core_s_per_s"]}
    peak = res["cpu"]["int"]["codl_core_s_per_s"]
    res["cpu"]["accuracy"] = [accuracy(a.codl, "cpu", cpu_opts + ["--set", "mix=int"], peak, lv,
                                       sec, a.scratch) for lv in (0.25, 0.5, 0.75)]

    # llc at --max vs stress-ng --cache 1 (one thread, one CPU each).
    first = a.cpus.split(",")[0].split("-")[0]
    llc_opts = ["--set", "threads=1", "--set", f"cpus={first}"]
    ours, _ = run_inject(a.codl, ["llc"] + llc_opts + ["--max", "--duration", f"{sec}s"],
                         a.scratch)
    theirs = stress_ng(["--cache", "1"], sec, first)
    res["llc"] = {"codl_lines_per_s": ours["achieved_rate"],
                  "codl_llc_misses_per_s": ours.get("llc_misses"),
                  "codl_notes": ours.get("notes"),
                  "stress_ng_bogo_ops_per_s": theirs["bogo_ops_per_s"],
                  "stress_ng_core_s_per_s": theirs["core_s_per_s"]}
    res["llc"]["accuracy"] = [accuracy(a.codl, "llc", llc_opts, ours["achieved_rate"], lv, sec,
                                       a.scratch) for lv in (0.25, 0.5)]

    # pagecache: hold 256 MiB (anon, file); then a floor 128 MiB above MemAvailable.
    res["pagecache"] = {}
    for kind in ("anon", "file"):
        s, iv = run_inject(a.codl, ["pagecache", "--set", f"kind={kind}", "--set", "limit=512MiB",
                                    "--rate", "256Mi", "--duration", f"{sec}s"], a.scratch)
        reach = next((x["t_s"] for x in iv if x["achieved"] >= 0.98 * 256 * 2**20), None)
        res["pagecache"][kind] = {"target": s["target_rate"], "achieved": s["achieved_rate"],
                                  "error": s["achieved_rate"] / s["target_rate"] - 1,
                                  "cov": s["cov"], "first_interval_at_98pct_s": reach,
                                  "backoffs": s.get("backoffs")}
    avail = [int(l.split()[1]) * 1024 for l in open("/proc/meminfo") if l.startswith("MemAvailable")][0]
    s, iv = run_inject(a.codl, ["pagecache", "--set", f"floor={(avail + 128 * 2**20) // 2**20}MiB",
                                "--set", "limit=256MiB", "--rate", "256Mi", "--duration", "2s"],
                       a.scratch)
    res["pagecache"]["floor_backoff"] = {"achieved": s["achieved_rate"], "backoffs": s.get("backoffs"),
                                         "intervals_backed_off": sum(x.get("backed_off", 0) for x in iv),
                                         "intervals": len(iv), "notes": s.get("notes")}
    # net to its in-process loopback sink: peak, then levels of it.
    ours, _ = run_inject(a.codl, ["net", "--max", "--duration", f"{sec}s"], a.scratch)
    res["net"] = {"codl_loopback_bytes_per_s": ours["achieved_rate"], "cov": ours["cov"]}
    res["net"]["accuracy"] = [accuracy(a.codl, "net", [], ours["achieved_rate"], lv, sec,
                                       a.scratch) for lv in (0.25, 0.5)]
    res["host"]["loadavg_end"] = os.getloadavg()
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    json.dump(res, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
