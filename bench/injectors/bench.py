#!/usr/bin/env python3
"""Host-injector benchmark (driven by bench/run_injector_bench.sh; not a test).

Measures, on this machine:
  1. io_uring --max vs fio's io_uring engine, same mode / bs / qd / O_DIRECT / file set
     (randread 4KiB qd32, read and write 1MiB qd16, randwrite 4KiB qd32) -> ratio codl/fio;
     --aa puts fio in codl's place (an A/A control: the noise of the device and the schedule)
  2. memcpy --max vs a STREAM-style copy with the same threads and buffer -> ratio codl/stream
  3. level accuracy at 0.25/0.5/0.75 of the calibrated peak, for memcpy and io_uring:
     |achieved/target - 1| and the per-interval CoV (200 ms intervals)
  4. the same io_uring-vs-fio pairs on a memory-backed filesystem (tmpfs with O_DIRECT, Linux
     >= 6.6) when available: there the device costs almost nothing, so the ratio isolates each
     tool's per-I/O software overhead from a noisy (virtual) disk.
A shared 2-core box is noisy, so each A/B pair runs `rounds` times (default 7) in ABBA order
(A B, B A, A B, ...: drift over time hits both sides alike), each round gives one ratio A/B, and
the verdict rests on the median ratio with a 95% bootstrap CI over the rounds: "ahead" when the
CI lies above 1.00, "at parity" when it contains 1.00, "behind" when it lies below.
Prints a table and writes JSON.

Device view (io_uring on a block device): around every run, /sys/class/block/<dev>/stat gives
the device's own mean service time per request and mean request size (reads for read modes,
writes for write modes). When codl and fio differ in throughput but not there, at the same queue
depth, the difference is the device (a shared or virtual disk), not the tool: see
docs/performance.md. --only limits the run to some io_uring configurations and/or `memcpy` (no
level accuracy).
"""
import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

IO_CONFIGS = [
    # name, mode, block size (codl / fio spelling), queue depth
    ("randread 4KiB qd32", "randread", "4KiB", "4k", 32),
    ("read 1MiB qd16", "read", "1MiB", "1m", 16),
    ("write 1MiB qd16", "write", "1MiB", "1m", 16),
    ("randwrite 4KiB qd32", "randwrite", "4KiB", "4k", 32),
]
FIO_MODE = {"randread": "randread", "read": "read", "write": "write", "randwrite": "randwrite"}
BOOTSTRAP_RESAMPLES = 10000


def median_ci(values, seed=1, level=0.95):
    """Percentile bootstrap CI of the median of `values` (seeded: the same rounds give the same
    interval)."""
    rng = random.Random(seed)
    n = len(values)
    meds = sorted(statistics.median(rng.choice(values) for _ in range(n))
                  for _ in range(BOOTSTRAP_RESAMPLES))
    lo = meds[int((1 - level) / 2 * BOOTSTRAP_RESAMPLES)]
    hi = meds[int((1 + level) / 2 * BOOTSTRAP_RESAMPLES) - 1]
    return lo, hi


def verdict(lo, hi):
    if lo > 1.0:
        return "ahead"
    if hi < 1.0:
        return "behind"
    return "at parity"


def abba(rounds, a, b):
    """Runs a() and b() `rounds` times in ABBA order; returns the two lists in round order."""
    ra, rb = [], []
    for i in range(rounds):
        if i % 2 == 0:
            ra.append(a())
            rb.append(b())
        else:
            rb.append(b())
            ra.append(a())
    return ra, rb


def compare(codl_runs, ref_runs):
    """Per-round ratios, their median, its CI and the verdict."""
    ratios = [c / r for c, r in zip(codl_runs, ref_runs)]
    lo, hi = median_ci(ratios)
    return {"round_ratios": ratios, "ratio": statistics.median(ratios), "ratio_ci95": [lo, hi],
            "verdict": verdict(lo, hi)}
LEVELS = [0.25, 0.5, 0.75]


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw)


def codl_summary(codl, args):
    out = run([codl] + args + ["--json"]).stdout
    lines = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    summary = [l for l in lines if l.get("summary")]
    if not summary:
        raise RuntimeError("no summary from codl-inject " + " ".join(args))
    return summary[-1]


def machine_info(scratch):
    info = {"cpus": os.cpu_count(), "kernel": platform.release()}
    try:
        for line in run(["lscpu"]).stdout.splitlines():
            if line.startswith("Model name:"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
    except Exception:
        pass
    try:
        df = run(["df", "-T", scratch]).stdout.splitlines()[1].split()
        info["scratch_fs"] = df[1]
        info["scratch_device"] = df[0]
    except Exception:
        pass
    with open("/proc/meminfo") as f:
        info["mem_total_kib"] = int(f.readline().split()[1])
    try:
        info["fio"] = run(["fio", "--version"]).stdout.strip()
    except Exception:
        info["fio"] = None
    return info


def block_stat_path(device):
    """/sys/class/block/NAME/stat for /dev/NAME (a disk or a partition), or None."""
    if not device or not device.startswith("/dev/"):
        return None
    path = f"/sys/class/block/{os.path.basename(device)}/stat"
    return path if os.path.exists(path) else None


def read_block_stat(path):
    with open(path) as f:
        v = [int(x) for x in f.read().split()]
    # reads, merged, sectors, ms; writes, merged, sectors, ms (Documentation/block/stat.rst)
    return {"read": (v[0], v[2], v[3]), "write": (v[4], v[6], v[7])}


def device_view(path, before, after, direction):
    """Mean service time (ms) and size (KiB) of the device's requests between two samples. The
    setup phases (codl's fill, fio's layout) are writes: for a read mode they do not dilute it;
    other processes' I/O on the same disk does (a loaded build machine: small next to a flood)."""
    n0, s0, t0 = before[direction]
    n1, s1, t1 = after[direction]
    n = n1 - n0
    if n <= 0:
        return None
    return {"requests": n, "mean_ms": round((t1 - t0) / n, 3), "mean_kib": round((s1 - s0) * 512 / n / 1024, 1)}


def quiesce():
    """Before each storage run: the previous run's file set was just deleted, and on a filesystem
    mounted with `discard` the deletion reaches the device as discards when the journal commits
    (ext4: up to 5 s later), i.e. inside the next run's measurement, which one of the two tools
    then pays. sync commits it (and its discards) now; 1 s lets the device settle."""
    os.sync()
    time.sleep(1)


def with_device_view(fn, path, direction):
    """Wraps a run returning (bw, iops) to return (bw, iops, device view or None)."""
    def run_():
        quiesce()
        before = read_block_stat(path) if path else None
        bw, iops = fn()
        view = device_view(path, before, read_block_stat(path), direction) if path else None
        return bw, iops, view
    return run_


# fio_layout: how fio's file set is laid out before its measured job. fio's own layout writes
# zeros (every block of a fresh fio file reads back as 0), while codl fills its file set with random data,
# unique per 4 KiB. A virtual disk that detects zero writes or is thin-provisioned keeps fio's
# zeros as holes, and there 4 KiB random writes into them ran 1.3-2.5x faster than into blocks
# holding data (docs/performance.md, "Host injectors"). "data" (the default) first overwrites fio's
# files with random data, as codl fills its own, in an untimed fio job of the same name, so the
# measured job finds them in place; "zeros" is fio's plain layout (the runs before 2026-12-01).
def fio_run(scratch, mode, bs, qd, nr_files, file_size_mib, seconds, fio_layout="data"):
    d = tempfile.mkdtemp(prefix="fio.", dir=scratch)
    try:
        if fio_layout == "data":
            run(["fio", "--name=bench", "--ioengine=psync", "--rw=write", "--bs=4M", "--direct=1",
                 f"--nrfiles={nr_files}", f"--filesize={file_size_mib}M", f"--directory={d}",
                 "--refill_buffers=1", "--end_fsync=1", "--output-format=json"])
        cmd = ["fio", "--name=bench", "--ioengine=io_uring", f"--rw={FIO_MODE[mode]}", f"--bs={bs}",
               f"--iodepth={qd}", "--direct=1", f"--nrfiles={nr_files}",
               f"--filesize={file_size_mib}M", f"--directory={d}", "--fixedbufs=1",
               "--registerfiles=1", "--ramp_time=1", f"--runtime={seconds}", "--time_based",
               "--output-format=json"]
        job = json.loads(run(cmd).stdout)["jobs"][0]
        bw = (job["read"]["bw_bytes"] + job["write"]["bw_bytes"])
        iops = job["read"]["iops"] + job["write"]["iops"]
        return bw, iops
    finally:
        shutil.rmtree(d, ignore_errors=True)


def odirect_ok(d):
    probe = os.path.join(d, ".codl-odirect-probe")
    try:
        fd = os.open(probe, os.O_RDWR | os.O_CREAT | os.O_DIRECT, 0o600)
        os.close(fd)
        os.unlink(probe)
        return True
    except OSError:
        return False


def bench_io(codl, scratch, rounds, seconds, nr_files, file_size_mib, only=None, device=None,
             fio_layout="data", codl_set=(), aa=False):
    """only: config names to run (None: all); device: /dev/NAME of the scratch filesystem, for
    the device view (None: none); fio_layout: "data" or "zeros" (fio_run); codl_set: extra
    KEY=VALUE io_uring options for codl's runs; aa: an A/A control, fio in codl's place (the
    ratios then show how far two identical runs differ on this device)."""
    codl_extra = [x for kv in codl_set for x in ("--set", kv)]
    results = []
    stat_path = block_stat_path(device)
    for name, mode, bs_codl, bs_fio, qd in IO_CONFIGS:
        if only and name not in only:
            continue
        direction = "read" if mode in ("read", "randread") else "write"
        def codl_run():
            s = codl_summary(codl, ["io_uring", "--set", f"mode={mode}", "--set", f"block_size={bs_codl}",
                                    "--set", f"queue_depth={qd}", "--set", f"nr_files={nr_files}",
                                    "--set", f"file_size={file_size_mib}MiB", "--max",
                                    "--duration", f"{seconds + 1}s", "--scratch-root", scratch]
                             + codl_extra)
            return s["achieved_rate"], s.get("iops", 0)

        def fio():
            return fio_run(scratch, mode, bs_fio, qd, nr_files, file_size_mib, seconds, fio_layout)

        codl_runs, fio_runs = abba(rounds, with_device_view(fio if aa else codl_run, stat_path, direction),
                                   with_device_view(fio, stat_path, direction))
        codl_bw = [bw for bw, _, _ in codl_runs]
        fio_bw = [bw for bw, _, _ in fio_runs]
        r = {"config": name, "scratch": scratch, "file_set": f"{nr_files} x {file_size_mib}MiB",
             "a_side": "fio (A/A control)" if aa else "codl",
             "codl_bytes_per_s": statistics.median(codl_bw),
             "fio_bytes_per_s": statistics.median(fio_bw),
             "codl_iops": statistics.median(i for _, i, _ in codl_runs),
             "fio_iops": statistics.median(i for _, i, _ in fio_runs),
             "codl_runs": codl_bw, "fio_runs": fio_bw}
        if stat_path:
            r["device"] = {"codl_runs": [v for _, _, v in codl_runs], "fio_runs": [v for _, _, v in fio_runs]}
            for who in ("codl", "fio"):
                views = [v for v in r["device"][who + "_runs"] if v]
                if views:
                    r["device"][who + "_median_ms"] = statistics.median(v["mean_ms"] for v in views)
                    r["device"][who + "_median_kib"] = statistics.median(v["mean_kib"] for v in views)
        r.update(compare(codl_bw, fio_bw))
        results.append(r)
        a_name = "fio(A)" if aa else "codl"
        print(f"  io_uring {name}: {a_name} {r['codl_bytes_per_s']/2**20:.0f} MiB/s "
              f"({r['codl_iops']:.0f} IOPS)  fio {r['fio_bytes_per_s']/2**20:.0f} MiB/s "
              f"({r['fio_iops']:.0f} IOPS)  ratio {r['ratio']:.3f} "
              f"[{r['ratio_ci95'][0]:.3f}, {r['ratio_ci95'][1]:.3f}] {r['verdict']}", flush=True)
        d = r.get("device", {})
        if "codl_median_ms" in d and "fio_median_ms" in d:
            print(f"    device {direction}s: {a_name} {d['codl_median_ms']:.2f} ms/request of "
                  f"{d['codl_median_kib']:.0f} KiB, fio {d['fio_median_ms']:.2f} ms/request of "
                  f"{d['fio_median_kib']:.0f} KiB", flush=True)
    return results


def bench_memcpy(codl, streams, rounds, seconds, threads, buffer_bytes):
    """streams: {"memcpy": path, "loop": path}; each round compares with the faster variant of
    that round (the reference a STREAM user would quote)."""
    def codl_run():
        s = codl_summary(codl, ["memcpy", "--set", f"threads={threads}", "--set",
                                f"buffer_size={buffer_bytes}", "--max", "--duration", f"{seconds + 1}s"])
        return s["achieved_rate"]

    def stream_run():
        out = {}
        for k, path in streams.items():
            res = json.loads(run([path, str(threads), str(buffer_bytes), str(seconds), "1"]).stdout)
            out[k] = res["copy_bytes_per_s"]
        return out

    codl_bw, stream_rounds = abba(rounds, codl_run, stream_run)
    best_per_round = [max(r.values()) for r in stream_rounds]
    medians = {k: statistics.median(r[k] for r in stream_rounds) for k in streams}
    r = {"threads": threads, "buffer_bytes": buffer_bytes,
         "codl_bytes_per_s": statistics.median(codl_bw),
         "stream_copy_bytes_per_s": statistics.median(best_per_round),
         "stream_reference": "best of " + "/".join(streams),
         "stream_variants_bytes_per_s": medians,
         "codl_runs": codl_bw, "stream_runs": stream_rounds,
         "note": "bytes copied/s, each byte once; STREAM's own Copy figure is 2x"}
    r.update(compare(codl_bw, best_per_round))
    variants = "  ".join(f"stream-{k} {v/2**30:.2f} GiB/s" for k, v in medians.items())
    print(f"  memcpy: codl {r['codl_bytes_per_s']/2**30:.2f} GiB/s  {variants}  "
          f"ratio vs best {r['ratio']:.3f} [{r['ratio_ci95'][0]:.3f}, {r['ratio_ci95'][1]:.3f}] "
          f"{r['verdict']}", flush=True)
    return r


def bench_levels(codl, name, base_args, seconds):
    cal = codl_summary(codl, base_args + ["--calibrate", "--duration", "3s"])
    peak = cal["peak_rate"]
    rows = []
    for level in LEVELS:
        s = codl_summary(codl, base_args + ["--level", str(level), "--peak", repr(peak),
                                            "--duration", f"{seconds + 1}s"])
        err = abs(s["achieved_rate"] / s["target_rate"] - 1)
        rows.append({"injector": name, "level": level, "peak": peak, "target": s["target_rate"],
                     "achieved": s["achieved_rate"], "abs_error": err, "cov": s["cov"],
                     "saturated": s.get("saturated", False)})
        print(f"  {name} level {level}: target {s['target_rate']:.4g}  achieved "
              f"{s['achieved_rate']:.4g}  |err| {err*100:.2f}%  CoV {s['cov']*100:.2f}%", flush=True)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--codl", required=True)
    ap.add_argument("--stream", required=True, help="stream_copy built as gcc builds STREAM")
    ap.add_argument("--stream-loop", help="stream_copy with -fno-tree-loop-distribute-patterns")
    ap.add_argument("--scratch", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--memcpy-threads", type=int, default=os.cpu_count() and min(os.cpu_count(), 4))
    ap.add_argument("--memcpy-buffer", type=int, default=128 * 2**20)
    ap.add_argument("--nr-files", type=int, default=4)
    ap.add_argument("--file-size-mib", type=int, default=256)
    ap.add_argument("--mem-scratch", default="/dev/shm",
                    help="memory-backed dir for the overhead comparison ('' to skip)")
    ap.add_argument("--fio-layout", choices=["data", "zeros"], default="data",
                    help="fio's file set: overwritten with random data before the measured job, "
                         "as codl fills its own (default), or fio's own layout, which writes zeros")
    ap.add_argument("--only", action="append", choices=[c[0] for c in IO_CONFIGS] + ["memcpy"],
                    help="only this io_uring configuration, or 'memcpy' (repeatable); skips the "
                         "level accuracy")
    ap.add_argument("--aa", action="store_true",
                    help="A/A control: fio against itself in the same ABBA schedule (the 'codl' "
                         "columns are then fio's first side); how far the ratio strays from 1.00 "
                         "is the noise a codl-vs-fio verdict must be read against")
    ap.add_argument("--codl-set", action="append", default=[], metavar="KEY=VALUE",
                    help="an io_uring option for codl's side of every pair (repeatable), e.g. "
                         "submit_batch=0")
    a = ap.parse_args()

    started = time.time()
    result = {"machine": machine_info(a.scratch), "rounds": a.rounds, "seconds": a.seconds,
              "fio_layout": a.fio_layout, "codl_set": a.codl_set, "aa_control": a.aa,
              "goals": {"io_verdict": "at parity or ahead (CI of the median ratio contains or exceeds 1.00)",
                        "memcpy_verdict": "ahead",
                        "level_abs_error": "<= 2%", "level_cov": "<= 5%"}}
    print("machine:", json.dumps(result["machine"]), flush=True)
    io_only = [o for o in a.only or [] if o != "memcpy"]
    if not a.only or "memcpy" in a.only:
        print("memcpy vs STREAM-style copy:", flush=True)
        streams = {"memcpy": a.stream}
        if a.stream_loop:
            streams["loop"] = a.stream_loop
        result["memcpy"] = bench_memcpy(a.codl, streams, a.rounds, a.seconds, a.memcpy_threads,
                                        a.memcpy_buffer)
    run_io = not a.only or bool(io_only)
    result["io_uring"] = []
    if run_io:
        if a.aa:
            print("A/A control: fio against itself (the codl column is fio's first side)", flush=True)
        print("io_uring vs fio (io_uring engine, O_DIRECT, fixedbufs+registerfiles; fio's files: "
              + ("random data" if a.fio_layout == "data" else "fio's zero layout") + "):", flush=True)
        result["io_uring"] = bench_io(a.codl, a.scratch, a.rounds, a.seconds, a.nr_files,
                                      a.file_size_mib, io_only, result["machine"].get("scratch_device"),
                                      a.fio_layout, a.codl_set, a.aa)
    result["io_uring_memory_backed"] = []
    if run_io and a.mem_scratch and os.path.isdir(a.mem_scratch):
        mem = tempfile.mkdtemp(prefix="codl-bench.", dir=a.mem_scratch)
        try:
            if odirect_ok(mem):
                print(f"io_uring vs fio on {a.mem_scratch} (memory-backed: per-I/O software cost):",
                      flush=True)
                result["io_uring_memory_backed"] = bench_io(a.codl, mem, a.rounds, a.seconds, 4, 64, io_only,
                                                            fio_layout=a.fio_layout,
                                                            codl_set=a.codl_set, aa=a.aa)
            else:
                print(f"{a.mem_scratch} refuses O_DIRECT: memory-backed comparison skipped")
        finally:
            shutil.rmtree(mem, ignore_errors=True)
    result["levels"] = []
    if not a.only:
        print("level accuracy:", flush=True)
        result["levels"] = bench_levels(
        a.codl, "memcpy", ["memcpy", "--set", f"threads={a.memcpy_threads}", "--set",
                           f"buffer_size={a.memcpy_buffer}"], a.seconds)
        result["levels"] += bench_levels(
            a.codl, "io_uring", ["io_uring", "--set", "mode=randread", "--set", "block_size=4KiB",
                                 "--set", "queue_depth=32", "--set", f"nr_files={a.nr_files}", "--set",
                                 f"file_size={a.file_size_mib}MiB", "--scratch-root", a.scratch], a.seconds)
    result["elapsed_s"] = time.time() - started

    # The table.
    ok = lambda good: "ok" if good else "MISSED"
    print("\n%-40s %13s %13s %7s %17s  %s" % ("comparison (ABBA, %d rounds)" % a.rounds,
                                               "fio(A)" if a.aa else "codl",
                                               "reference", "ratio", "95% CI", "verdict"))
    m = result.get("memcpy")
    if m:
        print("%-40s %7.2f GiB/s %7.2f GiB/s %7.3f [%6.3f, %6.3f]  %s" % (
            f"memcpy {m['threads']}T {m['buffer_bytes']>>20}MiB vs STREAM-style",
            m["codl_bytes_per_s"] / 2**30, m["stream_copy_bytes_per_s"] / 2**30, m["ratio"],
            m["ratio_ci95"][0], m["ratio_ci95"][1], m["verdict"]))
    for label, rows in (("disk", result["io_uring"]), ("mem", result["io_uring_memory_backed"])):
        for r in rows:
            print("%-40s %7.0f MiB/s %7.0f MiB/s %7.3f [%6.3f, %6.3f]  %-9s  rounds %.2f-%.2f" % (
                f"io_uring {r['config']} ({label})", r["codl_bytes_per_s"] / 2**20,
                r["fio_bytes_per_s"] / 2**20, r["ratio"], r["ratio_ci95"][0], r["ratio_ci95"][1],
                r["verdict"], min(r["round_ratios"]), max(r["round_ratios"])))
    print("\n%-10s %6s %10s %10s  %s" % ("injector", "level", "|err|", "CoV", "goals <= 2% / <= 5%"))
    for r in result["levels"]:
        print("%-10s %6.2f %9.2f%% %9.2f%%  %s / %s%s" % (
            r["injector"], r["level"], r["abs_error"] * 100, r["cov"] * 100,
            ok(r["abs_error"] <= 0.02), ok(r["cov"] <= 0.05),
            "  (saturated)" if r["saturated"] else ""))
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=2)
    print(f"\nwrote {a.out} ({result['elapsed_s']:.0f} s)")


if __name__ == "__main__":
    sys.exit(main())
