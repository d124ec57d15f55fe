#!/usr/bin/env python3
"""Start-skew benchmark: how closely antagonists on several hosts start at the common time.

N agent "hosts" are network namespaces on a bridge (bench/skew/netns.py), the controller has
its own namespace, and everything speaks mTLS (throwaway CA made with openssl). One experiment
runs many short trials: victim `true` on h1, one `noop` antagonist (rate 100) on every agent.
For each antagonist instance the controller records

    start_skew_s = (started_unix_ns reported by the agent - the agent's estimated clock offset)
                   - the trial's common start time            (all in controller time)

i.e. the error of the synchronized start as the controller sees it: timer wake-up and
fork/exec of codl-inject on the agent (started_unix_ns is stamped after the spawn). It is read
from the results database (trial_antagonists.start_skew_s). All namespaces share one kernel
clock, so the true offset is 0: the bench also reports the *true* start error, recorded skew +
the offset estimate (read with `codlctl agents --json` after each phase). The recorded skew
cannot show an error of the estimate, because the same estimate converts the time both ways.

Each phase also reads the runner's `start_account` log lines (controller/settle.h), one per
antagonist start: when codl-inject's wait ended (= the skew above), when its preparation was
done (ready: a late start with ready after the common start is a setup overrun, one with ready
before it a late wake-up), its setup measured vs the agent's estimate, and, for io_uring, when
its first I/O was submitted and completed. A thread of the bench itself sleeps to absolute 5 ms
deadlines meanwhile (WakeProbe): the box's own wake-up lateness, with no CoDL code involved;
the load average (`uptime`) is recorded before and after each phase.

Optional phases, all with a delay on h2's path to the controller:
  --netem DELAY   tc netem on h2's link, both ways, then h2 -> switch only (skipped, with the
                  reason, on kernels without sch_netem);
  --delay MS      the same through bench/skew/delay_proxy.py, a user-space relay on h2's
                  controller link (its heartbeats); the controller still dials h2 directly.
A symmetric delay should leave the offset estimate unchanged; a one-way delay biases it by half
(NTP's assumption of symmetric paths).
Ablation: --stub-injector runs bench/skew/stub_inject.c instead of codl-inject.
"""
import argparse
import json
import os
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netns  # noqa: E402


def pct(values, p):
    """Nearest-rank percentile."""
    if not values:
        return None
    v = sorted(values)
    k = max(0, min(len(v) - 1, int(round(p / 100.0 * len(v) + 0.5)) - 1))
    return v[k]


class Bench:
    def __init__(self, args):
        self.a = args
        self.bin = os.path.join(args.build_dir, "bin")
        self.work = tempfile.mkdtemp(prefix="codl-skew-")
        self.topo = netns.Topology(f"codl-b-{os.getpid()}", args.agents)
        self.procs = []
        self.agent_procs = {}
        self.inject_binary = None
        if args.inject_binary:
            # A/B: another codl-inject build (e.g. one from before a change).
            self.inject_binary = os.path.abspath(args.inject_binary)
        elif args.stub_injector:
            # Ablation: a stand-in that starts in ~0.3 ms instead of codl-inject's ~4.5 ms.
            self.inject_binary = os.path.join(self.work, "stub_inject")
            here = os.path.dirname(os.path.abspath(__file__))
            netns.run([os.environ.get("CC", "cc"), "-O2", "-static", "-o", self.inject_binary,
                       f"{here}/stub_inject.c"])
        self.ctl_addr = None

    def spawn(self, role, argv, log):
        p = self.topo.spawn(role, argv, os.path.join(self.work, log))
        self.procs.append(p)
        return p

    def ctl(self, *args, timeout=600):
        argv = [f"{self.bin}/codlctl", "--controller", self.ctl_addr, *netns.tls_flags(self.work, "codlctl"), *args]
        return netns.run(self.topo.exec_argv("c", argv), check=False, timeout=timeout)

    def agents_json(self):
        r = self.ctl("agents", "--json", timeout=20)
        out = []
        for line in r.stdout.splitlines():
            line = line.strip()
            if line.startswith("{"):
                out.append(json.loads(line))
        return out

    def setup(self):
        self.topo.build()
        # The controller's certificate also names 127.0.0.1: with --delay, agent h2 dials it
        # through a relay on its own loopback.
        names = {"controller": [self.topo.addr("c"), "127.0.0.1"], "codlctl": self.topo.addr("c")}
        for h in self.topo.hosts:
            names[h] = self.topo.addr(h)
        netns.make_certs(self.a.openssl, self.work, names)
        self.ctl_addr = f"{self.topo.addr('c')}:7700"
        self.spawn("c", [f"{self.bin}/codl-controller", "--listen", self.ctl_addr, "--db",
                         f"{self.work}/skew.db", "--heartbeat-interval", f"{self.a.heartbeat_interval}s",
                         *netns.tls_flags(self.work, "controller")], "controller.log")
        for h in self.topo.hosts:
            self.start_agent(h, self.ctl_addr)
        self.wait_alive()

    def start_agent(self, h, controller):
        self.agent_procs[h] = self.spawn(
            h, [f"{self.bin}/codl-agent", "--controller", controller, "--id", h,
                "--listen", f"{self.topo.addr(h)}:7701", "--scratch-root", self.work,
                "--state-dir", f"{self.work}/state-{h}", *netns.tls_flags(self.work, h),
                *(["--inject-binary", self.inject_binary] if self.inject_binary else [])],
            f"agent-{h}.log")

    def wait_alive(self):
        deadline = time.time() + 30
        while time.time() < deadline:
            if sum(1 for a in self.agents_json() if a.get("alive")) == len(self.topo.hosts):
                return
            time.sleep(0.5)
        raise RuntimeError("agents did not register; logs in " + self.work)

    def put_h2_behind_relay(self):
        """Restarts agent h2 with its controller link through delay_proxy.py (on h2's loopback);
        the controller still dials h2 directly. Only h2's heartbeats cross the delay."""
        self.control = os.path.join(self.work, "delay.control")
        with open(self.control, "w") as f:
            f.write("0 0\n")
        p = self.agent_procs["h2"]
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=15)
        here = os.path.dirname(os.path.abspath(__file__))
        self.spawn("h2", [sys.executable, f"{here}/delay_proxy.py", "--listen", "127.0.0.1:7700",
                          "--target", self.ctl_addr, "--control", self.control], "delay-proxy.log")
        time.sleep(0.5)
        self.start_agent("h2", "127.0.0.1:7700")
        time.sleep(3)  # the old registration must time out or be replaced
        self.wait_alive()

    def set_delay(self, up_ms, down_ms):
        with open(self.control + ".tmp", "w") as f:
            f.write(f"{up_ms} {down_ms}\n")
        os.replace(self.control + ".tmp", self.control)

    def antagonist_yaml(self):
        if not self.a.io_uring:
            return "  - {name: tick, injector: noop, rates: ['100'], nodes: all}\n"
        # A real flood: each agent writes its own file set first (the setup the controller
        # waits for: Injector::SetupEstimateS), then reads it at a paced rate.
        return ("  - {name: flood, injector: io_uring, rates: ['" + self.a.io_rate + "'], nodes: all,\n"
                "     options: {mode: read, block_size: 64KiB, queue_depth: 4, nr_files: 2,\n"
                f"               file_size: {self.a.io_file_size}, dir: {self.work}}}}}\n")

    def run_experiment(self, name, trials):
        yaml = (f"name: {name}\n"
                "victim: {command: [true], progress: {format: wall}, timeout: 30s, nodes: {hosts: [h1]}}\n"
                "antagonists:\n" + self.antagonist_yaml() +
                "pairings: singles\n"
                f"repetitions: {trials}\n"
                f"settle: {self.a.settle}\n"
                "lease: 10s\n")
        path = os.path.join(self.work, f"{name}.yaml")
        with open(path, "w") as f:
            f.write(yaml)
        load_before = loadavg()
        probe = WakeProbe()
        t0 = time.time()
        r = self.ctl("submit", path, "--watch", timeout=60 + 10 * trials)
        if r.returncode != 0:
            raise RuntimeError(f"experiment {name} failed: {r.stdout}{r.stderr}")
        took = time.time() - t0
        db = sqlite3.connect(f"file:{self.work}/skew.db?mode=ro", uri=True)
        rows = db.execute(
            "SELECT t.idx, a.node, a.start_skew_s FROM trial_antagonists a "
            "JOIN trials t ON t.id = a.trial_id JOIN experiments e ON e.id = t.experiment_id "
            "WHERE e.name = ? AND t.state IN ('done', 'flagged') ORDER BY t.idx, a.node", (name,)).fetchall()
        states = dict(db.execute(
            "SELECT t.state, COUNT(*) FROM trials t JOIN experiments e ON e.id = t.experiment_id "
            "WHERE e.name = ? GROUP BY t.state", (name,)).fetchall())
        db.close()
        offsets = {a["agent_id"]: a.get("clock_offset_s", 0.0) for a in self.agents_json()}
        r = summarize(name, rows, states, offsets, took, len(self.topo.hosts))
        r["settle_to_victim_ms"] = self.settle_to_victim(len(rows) // max(1, len(self.topo.hosts)))
        r["start_account"] = self.start_accounts(len(rows))
        r["box_wakeup_late_ms"] = probe.stop()
        r["loadavg_before"], r["loadavg_after"] = load_before, loadavg()
        return r

    def start_accounts(self, n):
        """The runner logs one `start_account` line per antagonist per trial (controller/settle.h,
        FormatStartAccount): the wait's end (skew_ms), when its preparation was done (ready_ms),
        setup measured vs the agent's estimate, and the load's first submit / first completion
        (first_load_ms / first_done_ms), all relative to the common start. The last `n` lines
        are this phase's."""
        recs = []
        with open(os.path.join(self.work, "controller.log"), errors="replace") as f:
            for line in f:
                m = re.search(r"trial (\d+): start_account (.*)$", line.strip())
                if m:
                    kv = dict(p.split("=", 1) for p in m.group(2).split())
                    kv["trial"] = m.group(1)
                    recs.append(kv)
        recs = recs[-n:] if n else []
        return account_summary(recs)

    def settle_to_victim(self, trials):
        """The runner logs, per trial, the time from the sample that completed the settle window
        ("all antagonists at target") to the victim's start: settle_to_victim_ms=X (older
        controllers add " (stream|polling)"). The last `trials` such lines are this phase's."""
        vals, how = [], set()
        with open(os.path.join(self.work, "controller.log"), errors="replace") as f:
            for line in f:
                m = re.search(r"settle_to_victim_ms=(-?[0-9.]+)(?: \((\w+)\))?", line)
                if m:
                    vals.append(float(m.group(1)))
                    how.add(m.group(2) or "stream")
        vals = vals[-trials:] if trials else []
        return {"n": len(vals), "via": sorted(how), "p50": pct(vals, 50), "p99": pct(vals, 99),
                "max": max(vals) if vals else None}

    def wait_for_estimator(self):
        # The controller keeps the 16 most recent heartbeat samples and uses the least delayed:
        # after a change of the link, wait until the window holds only new samples.
        time.sleep(17 * self.a.heartbeat_interval + 1)

    def close(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.topo.teardown()
        if not self.a.keep:
            subprocess.run(["rm", "-rf", self.work])


def loadavg():
    """`uptime`'s load averages (1, 5, 15 min): other work on this shared box."""
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


class WakeProbe:
    """The box's own wake-up lateness, independent of CoDL: a thread in the bench sleeps to
    absolute deadlines every 5 ms through the phase and records how late it woke. If the box
    stalls, this sees it too (Python adds ~0.1 ms of its own)."""

    def __init__(self):
        self.late = []
        self.done = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        nxt = time.monotonic()
        while not self.done:
            nxt += 0.005
            d = nxt - time.monotonic()
            if d > 0:
                time.sleep(d)
            self.late.append(max(0.0, time.monotonic() - nxt))
            if time.monotonic() - nxt > 0.005:
                nxt = time.monotonic()  # after a stall, do not replay the missed ticks

    def stop(self):
        self.done = True
        self.thread.join()
        ms = [x * 1e3 for x in self.late]
        r = lambda v: None if v is None else round(v, 3)  # noqa: E731
        return {"ticks": len(ms), "p50": r(pct(ms, 50)), "p99": r(pct(ms, 99)),
                "p999": r(pct(ms, 99.9)), "max": r(max(ms) if ms else None),
                "over_2ms": sum(1 for x in ms if x > 2)}


def account_summary(recs):
    """Late wake-up vs preparation overrun vs the load's own first-I/O latency, per antagonist
    start (see Bench.start_accounts)."""
    def num(r, k):
        v = r.get(k, "-")
        return None if v == "-" else float(v)
    r3 = lambda v: None if v is None else round(v, 3)  # noqa: E731

    def dist(vals):
        vals = [v for v in vals if v is not None]
        if not vals:
            return None
        return {"n": len(vals), "p50": r3(pct(vals, 50)), "p99": r3(pct(vals, 99)),
                "max": r3(max(vals)), "min": r3(min(vals))}
    skew = [num(r, "skew_ms") for r in recs]
    ready = [num(r, "ready_ms") for r in recs]
    first = [num(r, "first_load_ms") for r in recs]
    done = [num(r, "first_done_ms") for r in recs]
    # No ready time: a codl-inject without the account, whose setup_s (0) means "not reported".
    setup = [num(r, "setup_s") if num(r, "ready_ms") is not None else None for r in recs]
    est = [num(r, "setup_estimate_s") for r in recs]
    late = [(s, rd) for s, rd in zip(skew, ready) if s is not None and s > 2]
    overrun = sum(1 for s, rd in late if rd is not None and rd > 0)
    wakeups = sum(1 for s, rd in late if rd is not None and rd <= 0)
    # Common mode: per trial, the earliest start of its antagonists is the part every agent
    # shared (a box-wide stall); the spread above it is each agent's own.
    by_trial = {}
    for r in recs:
        by_trial.setdefault(r["trial"], []).append(num(r, "first_load_ms") if num(r, "first_load_ms") is not None else num(r, "skew_ms"))
    common = [min(v) for v in by_trial.values() if v and None not in v]
    spread = [max(v) - min(v) for v in by_trial.values() if len(v) > 1 and None not in v]
    return {
        "starts": len(recs),
        "wait_end_ms": dist(skew),                 # = start_skew_s, what the bench reports as skew
        "first_submit_ms": dist(first),            # the load really began (io_uring: first submit)
        "wait_end_to_first_submit_ms": dist([f - s for s, f in zip(skew, first) if s is not None and f is not None]),
        "first_completion_ms": dist(done),
        "first_io_latency_ms": dist([d - f for f, d in zip(first, done) if f is not None and d is not None]),
        "ready_ms": dist(ready),                   # < 0: prepared before the common start
        "setup_s": dist(setup),
        "setup_estimate_s": dist(est),
        "setup_over_estimate": sum(1 for a, b in zip(setup, est) if a is not None and b is not None and a > b),
        "late_over_2ms": len(late),
        "late_because_preparation_overran": overrun,
        "late_wakeups": wakeups,
        "late_ready_unknown": len(late) - overrun - wakeups,  # a codl-inject without the account
        "per_trial_common_ms": dist(common),
        "per_trial_spread_ms": dist(spread),
    }


def summarize(name, rows, states, offsets, took, hosts):
    skews = [s for _, _, s in rows if s is not None]
    # All namespaces share one clock (true offset 0), so the true start error is the recorded
    # skew plus the offset estimate the controller used (the recorded skew cannot show an error
    # of the estimate: the same estimate converts the start time both ways). The estimate is
    # read once, after the phase; it moves by a few us between heartbeats.
    true = [s + offsets.get(n, 0.0) for _, n, s in rows if s is not None]
    by_trial, by_node = {}, {}
    for idx, node, s in rows:
        if s is None:
            continue
        by_trial.setdefault(idx, []).append(s)
        by_node.setdefault(node, []).append(s)
    spreads = [max(v) - min(v) for v in by_trial.values() if len(v) == hosts]
    ms = lambda v: None if v is None else round(v * 1e3, 4)  # noqa: E731
    absv = [abs(s) for s in skews]
    return {
        "phase": name,
        "trials_with_antagonists": len(by_trial),
        "trial_states": states,
        "samples": len(skews),
        "wall_s": round(took, 1),
        "abs_skew_ms": {"p50": ms(pct(absv, 50)), "p99": ms(pct(absv, 99)), "max": ms(max(absv) if absv else None)},
        "signed_skew_ms": {"p1": ms(pct(skews, 1)), "p50": ms(pct(skews, 50)), "p99": ms(pct(skews, 99)),
                           "mean": ms(statistics.fmean(skews) if skews else None)},
        "true_abs_skew_ms": {"p50": ms(pct([abs(x) for x in true], 50)), "p99": ms(pct([abs(x) for x in true], 99))},
        "per_trial_spread_ms": {"p50": ms(pct(spreads, 50)), "p99": ms(pct(spreads, 99)),
                                "max": ms(max(spreads) if spreads else None)},
        "per_node": {n: {"median_ms": ms(statistics.median(v)), "p99_abs_ms": ms(pct([abs(x) for x in v], 99)),
                         "offset_estimate_ms": ms(offsets.get(n)),
                         "true_median_ms": ms(statistics.median(v) + offsets.get(n, 0.0))}
                     for n, v in sorted(by_node.items())},
    }


def machine():
    u = os.uname()
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"kernel": f"{u.sysname} {u.release}", "cpus": os.cpu_count(), "cpu_model": cpu}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--agents", type=int, default=4)
    ap.add_argument("--trials", type=int, default=100, help="interference trials (as many baselines run too)")
    ap.add_argument("--netem", default="", help="e.g. 1ms: also run with this delay on h2's link")
    ap.add_argument("--netem-trials", type=int, default=40, help="trials per netem / relay phase")
    ap.add_argument("--delay", type=float, default=0,
                    help="ms: also run with h2's heartbeats through a delaying relay (works without netem)")
    ap.add_argument("--heartbeat-interval", type=float, default=1.0, help="seconds (the controller default is 1)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--openssl", default="openssl")
    ap.add_argument("--keep", action="store_true", help="keep the work dir (logs, database)")
    ap.add_argument("--io-uring", action="store_true",
                    help="a real io_uring read flood on every agent (file set written at setup) instead of noop")
    ap.add_argument("--io-rate", default="20MiB/s", help="--io-uring: each agent's paced rate")
    ap.add_argument("--io-file-size", default="32MiB", help="--io-uring: size of each of the 2 files per agent")
    ap.add_argument("--settle", default="0s", help="settle window of the trials (e.g. 0.5s)")
    ap.add_argument("--inject-binary", default="",
                    help="A/B: the agents run this codl-inject instead of the build's")
    ap.add_argument("--stub-injector", action="store_true",
                    help="ablation: agents run bench/skew/stub_inject.c instead of codl-inject")
    a = ap.parse_args()
    if a.agents < 2:
        sys.exit("--agents must be >= 2")
    reason = netns.probe_netns(f"codl-b-{os.getpid()}")
    if reason:
        print(f"skew benchmark skipped: {reason}", file=sys.stderr)
        sys.exit(3)
    b = Bench(a)
    result = {"benchmark": "start_skew", "agents": a.agents, "machine": machine(),
              "inject_binary": a.inject_binary or "build's codl-inject",
              "injector": ("stub_inject.c (ablation)" if a.stub_injector else
                           f"codl-inject io_uring read 64KiB qd4, 2 x {a.io_file_size} per agent, {a.io_rate}"
                           if a.io_uring else "codl-inject noop"),
              "settle": a.settle,
              "netns": f"{a.agents} agent namespaces + controller namespace, veth pairs to a bridge in a "
                       f"switch namespace, {b.topo.subnet}.0/24, mTLS", "heartbeat_interval_s": a.heartbeat_interval,
              "phases": []}
    try:
        b.setup()
        time.sleep(6)  # a few heartbeats for the offset estimates
        result["phases"].append(b.run_experiment("skew-base", a.trials))
        if a.netem:
            try:
                b.topo.netem("h2", a.netem, "both")
            except RuntimeError as e:  # e.g. a kernel without CONFIG_NET_SCH_NETEM
                result["netem"] = f"not run: {e}"
                print(f"netem phases skipped: {e}", file=sys.stderr)
            else:
                result["netem"] = f"{a.netem} on h2's link: both ways, then h2 -> switch only"
                b.wait_for_estimator()
                result["phases"].append(b.run_experiment("skew-netem-both", a.netem_trials))
                b.topo.clear_netem("h2")
                b.topo.netem("h2", a.netem, "host")
                b.wait_for_estimator()
                result["phases"].append(b.run_experiment("skew-netem-h2-egress", a.netem_trials))
                b.topo.clear_netem("h2")
        if a.delay > 0:
            result["relay_delay"] = (f"{a.delay} ms added by bench/skew/delay_proxy.py on h2's controller "
                                     "link (heartbeats): none, both ways, then h2 -> controller only")
            b.put_h2_behind_relay()
            for name, up, down in (("relay-h2-0ms", 0, 0), ("relay-h2-both", a.delay, a.delay),
                                   ("relay-h2-up-only", a.delay, 0)):
                b.set_delay(up, down)
                b.wait_for_estimator()
                result["phases"].append(b.run_experiment(name, a.netem_trials))
    finally:
        b.close()
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    print(f"start skew, {a.agents} agent hosts (netns + bridge, mTLS), {result['machine']['kernel']}, "
          f"{result['machine']['cpus']} CPUs, injector: {result['injector']}")
    hdr = (f"{'phase':<22}{'samples':>8}{'|skew| p50':>12}{'|skew| p99':>12}{'max':>9}"
           f"{'true p50':>11}{'true p99':>11}{'spread p50':>12}{'spread p99':>12}")
    print(hdr)
    print("-" * len(hdr))
    for p in result["phases"]:
        s, sp, t = p["abs_skew_ms"], p["per_trial_spread_ms"], p["true_abs_skew_ms"]
        print(f"{p['phase']:<22}{p['samples']:>8}{s['p50']:>10.3f}ms{s['p99']:>10.3f}ms{s['max']:>7.2f}ms"
              f"{t['p50']:>9.3f}ms{t['p99']:>9.3f}ms{sp['p50']:>10.3f}ms{sp['p99']:>10.3f}ms")
    for p in result["phases"]:
        st = p.get("settle_to_victim_ms") or {}
        if st.get("n"):
            print(f"{p['phase']}: all at target -> victim start ({'/'.join(st['via'])}) "
                  f"p50 {st['p50']:.2f} ms, p99 {st['p99']:.2f} ms, max {st['max']:.2f} ms ({st['n']} trials)")
    for p in result["phases"]:
        acc, w = p.get("start_account") or {}, p.get("box_wakeup_late_ms") or {}
        f = lambda d: "n/a" if not d else f"{d['p50']:.3f}/{d['p99']:.3f}/{d['max']:.3f}"  # noqa: E731
        print(f"{p['phase']}: start account ({acc.get('starts', 0)} starts), p50/p99/max ms after the common start:")
        print(f"    wait ended {f(acc.get('wait_end_ms'))}; first submit {f(acc.get('first_submit_ms'))}; "
              f"wait end -> first submit {f(acc.get('wait_end_to_first_submit_ms'))}; "
              f"first I/O latency {f(acc.get('first_io_latency_ms'))}")
        print(f"    ready (negative: before the start) {f(acc.get('ready_ms'))}; setup s {f(acc.get('setup_s'))} "
              f"vs estimate s {f(acc.get('setup_estimate_s'))} ({acc.get('setup_over_estimate')} over)")
        print(f"    late > 2 ms: {acc.get('late_over_2ms')} ({acc.get('late_because_preparation_overran')} preparation "
              f"overran, {acc.get('late_wakeups')} late wake-ups, {acc.get('late_ready_unknown')} unknown); per trial common part {f(acc.get('per_trial_common_ms'))}, "
              f"spread {f(acc.get('per_trial_spread_ms'))}")
        print(f"    box wake-up probe (5 ms ticks, {w.get('ticks')}): late p50 {w.get('p50')} p99 {w.get('p99')} "
              f"p99.9 {w.get('p999')} max {w.get('max')} ms, {w.get('over_2ms')} ticks > 2 ms; "
              f"load average {p.get('loadavg_before')} -> {p.get('loadavg_after')}")
    if result.get("netem"):
        print(f"netem: {result['netem']}")
    for p in result["phases"]:
        print(f"  {p['phase']}: per node median recorded skew / offset estimate / true skew (ms): " +
              ", ".join(f"{n} {v['median_ms']:+.3f}/{(v['offset_estimate_ms'] or 0):+.3f}/{v['true_median_ms']:+.3f}"
                        for n, v in p["per_node"].items()))
    print(f"written {a.out}")


if __name__ == "__main__":
    main()
