#!/usr/bin/env python3
"""A multi-node victim's network phase under a `net` flood, on a link where the network is the
bottleneck. Not a test: prints a table and writes JSON (figures go to docs/performance.md).
Needs root (ip netns, tc). Usage: bench/multinode/run_multinode_bench.sh.

Topology (bench/skew/netns.py, prefix codl-b-mn<pid>; bench/netns_cleanup.sh removes a killed
run's leftovers): c = 10.79.0.1 (codl-controller, codlctl), h1 = 10.79.0.11 and h2 = 10.79.0.12
(one codl-agent each) behind a bridge namespace. Each host's eth0 (inside its own namespace:
the root namespace's qdiscs and routes are never touched) gets a tbf rate limit, so the hosts
talk over a --rate link in each direction.

The experiment: codl-victim as a distributed victim (victim.distributed, one rank per host,
--comm tcp ring allreduce of --allreduce-size per step) against a `net` pair between the same
two hosts at --flood rates (h2 streams into h1), baselines interleaved, randomized. Reported:
the step-time slowdown (codlctl results: median ratio, bootstrap CI) and the comm_s slowdown
(ratio of the median per-trial comm_s medians, two-sample percentile bootstrap CI here), with
`uptime` load before and after.
"""
import argparse
import importlib.util
import json
import os
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


netns = load("skew_netns", os.path.join(HERE, "..", "skew", "netns.py"))  # Topology


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def ratio_ci(interference, baseline, seed=1, resamples=5000, level=0.95):
    """Median(interference) / median(baseline) and a two-sample percentile bootstrap CI."""
    rng = random.Random(seed)
    ratios = sorted(
        statistics.median(rng.choice(interference) for _ in interference) /
        statistics.median(rng.choice(baseline) for _ in baseline) for _ in range(resamples))
    return (statistics.median(interference) / statistics.median(baseline),
            ratios[int((1 - level) / 2 * resamples)], ratios[int((1 + level) / 2 * resamples) - 1])


class Bench:
    def __init__(self, a):
        self.a = a
        self.bin = os.path.join(a.build_dir, "bin")
        self.work = tempfile.mkdtemp(prefix="codl-multinode-")
        self.topo = netns.Topology(f"codl-b-mn{os.getpid()}", 2, subnet="10.79.0")
        self.procs = []
        self.ctl_addr = f"{self.topo.addr('c')}:7700"

    def spawn(self, role, argv, log):
        p = self.topo.spawn(role, argv, os.path.join(self.work, log))
        self.procs.append(p)
        return p

    def ctl(self, *args, timeout=60):
        argv = [f"{self.bin}/codlctl", "--controller", self.ctl_addr,
                *netns.tls_flags(self.work, "codlctl"), *args]
        return netns.run(self.topo.exec_argv("c", argv), check=False, timeout=timeout)

    def setup(self):
        self.topo.build()
        for h in self.topo.hosts:  # the bottleneck, inside each host's own namespace
            netns.run(["tc", "-n", self.topo.ns(h), "qdisc", "replace", "dev", "eth0", "root",
                       "tbf", "rate", self.a.rate, "burst", "64kb", "latency", "50ms"])
        # mTLS, as a real deployment off loopback (plaintext is refused there).
        names = {"controller": self.topo.addr("c"), "codlctl": self.topo.addr("c")}
        for h in self.topo.hosts:
            names[h] = self.topo.addr(h)
        netns.make_certs(self.a.openssl, self.work, names)
        self.spawn("c", [f"{self.bin}/codl-controller", "--listen", self.ctl_addr, "--db",
                         f"{self.work}/mn.db", "--heartbeat-interval", "0.5s",
                         *netns.tls_flags(self.work, "controller")], "controller.log")
        for h in self.topo.hosts:
            self.spawn(h, [f"{self.bin}/codl-agent", "--controller", self.ctl_addr, "--id", h,
                           "--listen", f"{self.topo.addr(h)}:7701", "--scratch-root", self.work,
                           "--state-dir", f"{self.work}/state-{h}",
                           *netns.tls_flags(self.work, h)],
                       f"agent-{h}.log")
        deadline = time.time() + 30
        while time.time() < deadline:
            r = self.ctl("agents", "--json", timeout=10)
            if r.stdout.count('"alive":true') == 2:
                return
            time.sleep(0.5)
        raise RuntimeError("agents did not register; logs in " + self.work)

    def experiment(self):
        data = os.path.join(self.work, "data")
        netns.run([f"{self.bin}/codl-victim", "gen-data", "--dir", data, "--samples", "64",
                   "--sample-size", "64KiB"])
        # Agents running as root run victims as nobody: the dataset must be readable to it.
        os.chmod(self.work, 0o755)
        os.chmod(data, 0o755)
        for name in os.listdir(data):
            os.chmod(os.path.join(data, name), 0o644)
        rates = ", ".join(self.a.flood)
        return f"""name: net-multinode-bench
victim:
  command: [{self.bin}/codl-victim, run, --dir, {data}, --comm, tcp, --allreduce-size,
            {self.a.allreduce}, --samples, "64", --sample-size, 64KiB, --batch-size, "8",
            --gemm-count, "1", --io-mode, buffered, --steps, "{self.a.steps}", --warmup-steps, "2"]
  warmup_steps: 2
  timeout: 300s
  distributed: true
  nodes: [h1, h2]
antagonists:
  - name: flood
    injector: net
    nodes: [h1, h2]
    options: {{bind: 0.0.0.0, connections: 4, receiver: first}}
    rates: [{rates}]
pairings: singles
repetitions: {self.a.repetitions}
order: {{randomize: true, seed: 31}}
settle: 2s
warmup_trials: 1
"""

    def phase_medians(self, experiment_id, phase):
        db = sqlite3.connect(f"file:{self.work}/mn.db?mode=ro", uri=True)
        rows = db.execute(
            "SELECT t.pairing, m.median_s FROM trials t JOIN trial_phase_medians m "
            "ON m.trial_id = t.id WHERE t.experiment_id = ? AND m.phase = ? "
            "AND t.state IN ('done', 'flagged')", (experiment_id, phase)).fetchall()
        out = {}
        for pairing, v in rows:
            out.setdefault(pairing, []).append(v)
        return out

    def run(self):
        load_before = uptime()
        path = os.path.join(self.work, "exp.yaml")
        with open(path, "w") as f:
            f.write(self.experiment())
        sub = self.ctl("submit", path, "--watch", timeout=self.a.timeout)
        if sub.returncode != 0:
            raise RuntimeError(f"submit failed: {sub.stdout}{sub.stderr}; logs in {self.work}")
        res = json.loads(self.ctl("results", "latest", "-o", "json").stdout)
        exp_id = res.get("experiment_id") or res.get("id")
        comm = self.phase_medians(exp_id, "comm_s")
        rows = []
        for p in res["pairings"]:
            row = {"pairing": p["pairing"], "n": p["n"], "n_flagged": p["n_flagged"],
                   "n_failed": p["n_failed"], "median_metric_s": p["median_metric_s"],
                   "step_slowdown": p["slowdown"], "step_ci": [p["ci_low"], p["ci_high"]],
                   "phases": {ph["phase"]: ph["median_s"] for ph in p["phases"]},
                   "achieved": [a["achieved_rate"] for a in p["antagonists"]]}
            if not p["baseline"] and comm.get(p["pairing"]) and comm.get("baseline"):
                r, lo, hi = ratio_ci(comm[p["pairing"]], comm["baseline"])
                row["comm_slowdown"], row["comm_ci"] = r, [lo, hi]
            rows.append(row)
        return {"rate": self.a.rate, "allreduce": self.a.allreduce, "steps": self.a.steps,
                "repetitions": self.a.repetitions, "experiment_id": exp_id,
                "load_before": load_before, "load_after": uptime(), "pairings": rows}

    def teardown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.topo.teardown()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build-dir", default="build")
    ap.add_argument("--rate", default="200mbit", help="tbf rate of each host's link")
    ap.add_argument("--allreduce", default="8MiB")
    ap.add_argument("--flood", nargs="+", default=["5MiB/s", "15MiB/s"])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--repetitions", type=int, default=4)
    ap.add_argument("--timeout", type=int, default=900, help="seconds for the whole experiment")
    ap.add_argument("--out", default="bench/results/multinode.json")
    ap.add_argument("--openssl", default="openssl")
    a = ap.parse_args()
    # timeout(1) sends SIGTERM: leave through `finally`, so the namespaces go too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    b = Bench(a)
    try:
        b.setup()
        result = b.run()
    finally:
        b.teardown()
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"link {a.rate} each way, allreduce {a.allreduce}, {a.steps} steps, "
          f"{a.repetitions} repetitions; load before: {result['load_before']}")
    print(f"{'pairing':<22} {'n':>3} {'step slowdown [95% CI]':>28} {'comm_s slowdown [95% CI]':>28}")
    for r in result["pairings"]:
        step = f"{r['step_slowdown']:.2f}x [{r['step_ci'][0]:.2f}, {r['step_ci'][1]:.2f}]" \
            if None not in (r["step_slowdown"], *r["step_ci"]) else "-"
        comm = f"{r['comm_slowdown']:.2f}x [{r['comm_ci'][0]:.2f}, {r['comm_ci'][1]:.2f}]" \
            if "comm_slowdown" in r else "-"
        print(f"{r['pairing']:<22} {r['n']:>3} {step:>28} {comm:>28}")
    print(f"load after: {result['load_after']}; raw: {a.out}")


if __name__ == "__main__":
    sys.exit(main())
