#!/usr/bin/env python3
"""Control-plane scale benchmark: one real codl-controller, N emulated agents (codl-load-agents,
real protocol: register, heartbeat at the controller's interval, the Agent service on N ports).

Per N (default 100 and 1000), with a fresh controller and database:
  * controller CPU = (utime + stime) from /proc/PID/stat over a steady window (only heartbeats
    and the controller's own housekeeping), in cores; RSS = VmRSS at the end of the window;
  * at the largest N, the fan-out of a start command to 256 agents: an experiment whose
    antagonist (noop, rate 100) runs on `nodes: {count: 256}`, victim on one agent, R trials.

Fan-out latency, precisely: the runner computes the trial's common start as
start_at = now + start_delay (0.25 s, RunnerOptions) and then issues the 256 StartAntagonist
calls. The load tool records, per call, the wall-clock time its handler ran (arrival). So
    dispatch  = start_at - 0.25 s            (when the controller began the fan-out)
    latency_i = arrival_i - dispatch          (per agent: command issued -> agent has it)
    spread    = max(arrival) - min(arrival)  (per trial)
Controller and load tool share one clock (same host; the agent-clock start_at is converted back
with the agent's own offset estimate, which is ~0 here). Arrivals after start_at would be late
starts; none should be. Everything runs on loopback, the load tool sharing the 2 CPUs.

--tls runs controller, load tool and codlctl with mTLS (throwaway CA, SAN 127.0.0.1).

Registration storms, from the load tool's own timestamps of every RegisterAgent attempt and
success: "cold" = N fresh agents (each channel's first connection: the client side also builds
its TLS context then) from the first attempt to the last agent's success; --restart-storm =
the controller is killed (SIGKILL) and started again on the same address and database under N
registered agents, which re-register as a real agent does (its heartbeat is answered
`reregister`): from the restart to the last agent's success, with both processes' CPU.
The JSON's db_abs_start_skew_ms (start_skew_s of the fan-out trials) is NOT a skew figure: one
timer thread of the load tool emulates the wake-up of all 256 agents. Real skew: run_skew_bench.sh.
"""
import argparse
import ctypes
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "skew"))
import netns  # noqa: E402  (certificates only; this benchmark runs on loopback)

PR_SET_PDEATHSIG = 1
START_DELAY_S = 0.25  # controller/experiment_runner.h RunnerOptions::start_delay_s


def die_with_parent():
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def pct(values, p):
    if not values:
        return None
    v = sorted(values)
    k = max(0, min(len(v) - 1, int(round(p / 100.0 * len(v) + 0.5)) - 1))
    return v[k]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def proc_cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tck = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tck  # utime, stime (stat fields 14, 15)


def proc_status(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM", "Threads"):
                out[k] = int(v.split()[0])
    out["fds"] = len(os.listdir(f"/proc/{pid}/fd"))
    return out


# Descriptors one load tool may use here (RLIMIT_NOFILE's hard limit, 20,000 on the build box;
# not raisable in its container): each emulated agent takes two (its listening port and its
# channel to the controller) plus one per connection the controller opens to it.
FDS_PER_AGENT = 2


def agents_per_load_tool():
    import resource
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard == resource.RLIM_INFINITY:
        hard = 1 << 20
    return max(100, (hard - 2000) // (FDS_PER_AGENT + 0.2))


class LoadTools:
    """codl-load-agents as K processes when one cannot hold N agents' descriptors (ids
    load-K-NNNN then; one process: load-NNNN). Counters, CPU and reports are summed over them."""

    def __init__(self, run, n):
        self.run, self.n = run, n
        per = int(agents_per_load_tool())
        k = max(1, -(-n // per))
        self.counts = [n // k + (1 if i < n % k else 0) for i in range(k)]
        self.procs, self.outs, self.logs = [], [], []
        for i, count in enumerate(self.counts):
            tag = f"{n}" if k == 1 else f"{n}-{i}"
            self.outs.append(os.path.join(run.work, f"load-{tag}.json"))
            self.logs.append(os.path.join(run.work, f"load-{tag}.log"))
            a = run.a
            self.procs.append(run.spawn(
                [f"{run.bin}/codl-load-agents", "--controller", run.addr, "--agents", str(count),
                 "--id-prefix", "load-" if k == 1 else f"load-{i}-",
                 "--register-spread", str(a.register_spread), "--out", self.outs[-1],
                 "--victim-time", "0.05", "--min-connect-timeout-ms", str(a.min_connect_timeout_ms),
                 "--setup-estimate", str(a.setup_estimate), *run.tls("agents")],
                os.path.basename(self.logs[-1])))

    def registered(self):
        """The load tools' own count of successful registrations (each one's last "registered N")."""
        total = 0
        for log in self.logs:
            n = 0
            try:
                with open(log, errors="replace") as f:
                    for line in f:
                        if line.startswith("registered "):
                            n = int(line.split()[1])
            except (OSError, ValueError):
                pass
            total += n
        return total

    def cpu_s(self):
        return sum(proc_cpu_s(p.pid) for p in self.procs if p.poll() is None)

    def exited(self):
        return [p.returncode for p in self.procs if p.poll() is not None]

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            p.wait(timeout=60)

    def report(self):
        """The reports merged: counters summed, records concatenated (agent indices made global),
        heartbeat round trips as the largest p50/p99 of the processes. None when one is missing."""
        merged, offset = None, 0
        for out, count in zip(self.outs, self.counts):
            if not os.path.exists(out):
                return None
            with open(out) as f:
                rep = json.load(f)
            for key in ("register_attempts_ns", "registered_ns"):
                rep[key] = [[a + offset, t] for a, t in rep.get(key, [])]
            offset += count
            if merged is None:
                merged = rep
                continue
            for k, v in rep.items():
                if isinstance(v, list):
                    merged[k] = merged.get(k, []) + v
                elif isinstance(v, (int, float)) and not isinstance(v, bool):
                    merged[k] = merged.get(k, 0) + v
            r0, r1 = merged["heartbeat_rtt_ms"], rep["heartbeat_rtt_ms"]
            merged["heartbeat_rtt_ms"] = {"p50": max(r0["p50"], r1["p50"]), "p99": max(r0["p99"], r1["p99"]),
                                          "n": r0["n"] + r1["n"]}
        merged["load_tools"] = len(self.counts)
        return merged


class Run:
    def __init__(self, a, n, work):
        self.a, self.n, self.work = a, n, work
        self.bin = os.path.join(a.build_dir, "bin")
        self.addr = f"127.0.0.1:{free_port()}"
        self.db = os.path.join(work, f"scale-{n}.db")
        self.procs = []

    def spawn(self, argv, log):
        f = open(os.path.join(self.work, log), "ab")
        p = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
        self.procs.append(p)
        return p

    def tls(self, who):
        return netns.tls_flags(self.work, who) if self.a.tls else []

    def ctl(self, *args, timeout=120):
        return subprocess.run([f"{self.bin}/codlctl", "--controller", self.addr, *self.tls("codlctl"), *args],
                              capture_output=True, text=True, timeout=timeout)

    def alive(self, timeout=30):
        """The controller's count of live agents (codlctl agents); -1 when codlctl did not answer
        in time (10,000 agents on a loaded 2-core box)."""
        try:
            r = self.ctl("agents", "--json", timeout=timeout)
        except subprocess.TimeoutExpired:
            return -1
        return sum(1 for line in r.stdout.splitlines() if '"alive":true' in line)

    def window(self, seconds, cpus):
        """Cores used over `seconds` by each of `cpus` (name -> function returning CPU seconds)."""
        c0 = {k: f() for k, f in cpus.items()}
        t0 = time.monotonic()
        time.sleep(seconds)
        dt = time.monotonic() - t0
        return {k: (f() - c0[k]) / dt for k, f in cpus.items()}, dt

    def start_controller(self):
        # The emulated agents all dial from 127.0.0.1, under --tls with one pool certificate
        # (codl://agent/*, counted per address): the connection caps meant for callers on the
        # network (docs/security.md, "Connection limits") would count them as one caller.
        config = os.path.join(self.work, "controller.yaml")
        with open(config, "w") as f:
            f.write("max_connections_per_caller: 1048576\nmax_connections: 1048576\n"
                    "max_unauthenticated_connections: 1048576\n"
                    "max_unauthenticated_connections_per_ip: 1048576\n")
        # Plaintext loopback needs the explicit --insecure (docs/security.md).
        return self.spawn([f"{self.bin}/codl-controller", "--config", config, "--listen", self.addr,
                           "--db", self.db, *(self.tls("controller") or ["--insecure"])],
                          f"controller-{self.n}.log")

    def restart_storm(self, ctl, load):
        """Kills the controller under N registered agents and starts a new one on the same address
        and database; samples both processes' CPU every 50 ms for --storm-wait seconds. Returns
        the new controller and what analyze_storm needs."""
        load_cpu0 = load.cpu_s()
        ctl.send_signal(signal.SIGKILL)  # a crash or an upgrade: no drain
        ctl.wait(timeout=30)
        restart_ns = time.time_ns()
        new = self.start_controller()
        samples = []
        end = time.monotonic() + self.a.storm_wait
        while time.monotonic() < end:
            samples.append((time.time_ns(), proc_cpu_s(new.pid), load.cpu_s() - load_cpu0))
            time.sleep(0.05)
        return new, {"restart_ns": restart_ns, "samples": samples, "loadavg": os.getloadavg()}

    def go(self, fanout):
        res = {"agents": self.n, "loadavg_at_start": os.getloadavg()}
        ctl = self.start_controller()
        time.sleep(0.5)
        load = LoadTools(self, self.n)
        res["load_tools"] = len(load.procs)
        t0 = time.monotonic()
        # Registered as the load tools see it (cheap), then confirmed by the controller.
        while load.registered() < self.n or self.alive(timeout=60) < self.n:
            if time.monotonic() - t0 > self.a.register_timeout or load.exited():
                # Recorded, not raised: e.g. a TLS registration storm that never converges.
                res["error"] = (f"only {load.registered()}/{self.n} agents registered after "
                                f"{time.monotonic() - t0:.0f} s")
                exited = load.exited()
                if exited:  # one died (see its log): say so instead of losing the run
                    res["load_tool_exit"] = exited
                res["load_tool_cpu_s_total"] = round(load.cpu_s(), 1)
                load.stop()
                rep = load.report()
                if rep is None:
                    ctl.send_signal(signal.SIGTERM)
                    ctl.wait(timeout=30)
                    return res
                res["heartbeats_ok"], res["heartbeats_failed"] = rep["heartbeats_ok"], rep["heartbeats_failed"]
                res["registrations"] = rep["registrations"]
                res["register_failures"] = rep["register_failures"]
                res["controller_cpu_s_total"] = round(proc_cpu_s(ctl.pid), 1)
                res["elapsed_s"] = round(time.monotonic() - t0, 1)
                res["loadavg_1m"] = os.getloadavg()[0]
                ctl.send_signal(signal.SIGTERM)
                ctl.wait(timeout=30)
                print(f"N = {self.n}: {res['error']} ({rep['register_failures']} failed registrations)",
                      file=sys.stderr)
                return res
            time.sleep(1)
        res["all_registered_after_s"] = round(time.monotonic() - t0, 1)
        # What registering cost, and how busy the machine was meanwhile: on a shared box a slow
        # storm is often CPU starvation (other processes' load), not the protocol.
        res["register_cpu_s"] = {"controller": round(proc_cpu_s(ctl.pid), 2), "load_tool": round(load.cpu_s(), 2)}
        res["loadavg_1m_at_registered"] = os.getloadavg()[0]
        res["loadavg_at_registered"] = os.getloadavg()
        time.sleep(self.a.warmup)
        cpu, dt = self.window(self.a.window, {"controller": lambda: proc_cpu_s(ctl.pid), "load": load.cpu_s})
        st = proc_status(ctl.pid)
        res["idle_window_s"] = round(dt, 1)
        res["controller_cpu_cores"] = round(cpu["controller"], 4)
        res["load_tool_cpu_cores"] = round(cpu["load"], 4)
        res["controller_rss_mib"] = round(st["VmRSS"] / 1024, 1)
        res["controller_threads"] = st["Threads"]
        res["controller_fds"] = st["fds"]
        res["loadavg_after_window"] = os.getloadavg()
        res["alive_after_window"] = self.alive(timeout=120)
        if fanout:
            res["fanout"] = self.fanout(ctl.pid, load)
            res["controller_rss_after_fanout_mib"] = round(proc_status(ctl.pid)["VmRSS"] / 1024, 1)
            res["controller_hwm_mib"] = round(proc_status(ctl.pid)["VmHWM"] / 1024, 1)
            res["fanout"]["loadavg_after"] = os.getloadavg()
        if self.a.concurrent and self.n >= self.a.concurrent * self.a.concurrent_nodes:
            res["concurrent"] = self.concurrent(ctl.pid, load)
            res["controller_hwm_mib"] = round(proc_status(ctl.pid)["VmHWM"] / 1024, 1)
        storm = None
        if self.a.restart_storm:
            ctl, storm = self.restart_storm(ctl, load)
        load.stop()
        rep = load.report()
        if rep is None:
            res["error"] = "a load tool wrote no report (see its log)"
            ctl.send_signal(signal.SIGTERM)
            ctl.wait(timeout=30)
            return res
        res["heartbeats"] = {k: rep[k] for k in ("heartbeats_ok", "heartbeats_failed", "reregisters",
                                                   "register_failures", "misrouted")}
        res["heartbeats"]["rtt_ms"] = rep["heartbeat_rtt_ms"]
        for k in ("streams", "telemetry_events", "estimates"):
            res["heartbeats"][k] = rep.get(k)
        res["cold_registration"] = analyze_registrations(rep, 0, self.n, storm["restart_ns"] if storm else None)
        if storm:
            res["restart_storm"] = analyze_storm(rep, storm, self.n)
        if fanout:
            # Only its own starts: the concurrent experiments' are in the same report.
            fid = res["fanout"].get("experiment_id", "")
            res["fanout"].update(analyze_fanout(
                [x for x in rep["start_records"] if x["antagonist_id"].startswith(fid + "-")], self.a.fanout))
        ctl.send_signal(signal.SIGTERM)
        ctl.wait(timeout=30)
        return res

    def fanout(self, ctl_pid, load):
        yaml = ("name: fanout\n"
                "victim: {command: [true], progress: {format: wall}, timeout: 30s}\n"
                "antagonists:\n"
                f"  - {{name: tick, injector: noop, rates: ['100'], nodes: {{count: {self.a.fanout}}}}}\n"
                "pairings: singles\n"
                f"repetitions: {self.a.fanout_trials}\n"
                "settle: 0s\n")
        path = os.path.join(self.work, "fanout.yaml")
        with open(path, "w") as f:
            f.write(yaml)
        c0 = {"controller": proc_cpu_s(ctl_pid), "load": load.cpu_s()}
        t0 = time.monotonic()
        r = self.ctl("submit", path, "--watch", timeout=600)
        dt = time.monotonic() - t0
        if r.returncode != 0:
            raise RuntimeError(f"fan-out experiment failed: {r.stdout}{r.stderr}")
        out = {"nodes": self.a.fanout, "trials_with_antagonists": self.a.fanout_trials, "wall_s": round(dt, 1),
               "controller_cpu_cores_during": round((proc_cpu_s(ctl_pid) - c0["controller"]) / dt, 3),
               "load_tool_cpu_cores_during": round((load.cpu_s() - c0["load"]) / dt, 3)}
        db = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        skews = [s for (s,) in db.execute(
            "SELECT a.start_skew_s FROM trial_antagonists a JOIN trials t ON t.id = a.trial_id "
            "WHERE t.state IN ('done','flagged') AND a.start_skew_s IS NOT NULL")]
        states = dict(db.execute("SELECT state, COUNT(*) FROM trials GROUP BY state").fetchall())
        row = db.execute("SELECT id FROM experiments WHERE name = 'fanout' ORDER BY created_unix_ms DESC").fetchone()
        out["experiment_id"] = row[0] if row else ""
        db.close()
        absv = [abs(s) for s in skews]
        out["trial_states"] = states
        out["db_abs_start_skew_ms"] = {"p50": ms(pct(absv, 50)), "p99": ms(pct(absv, 99)), "n": len(absv)}
        return out


    def concurrent(self, ctl_pid, load):
        """K experiments at once, each on `count: M` agents (victim and antagonist): node
        reservations must give each its own M agents and run them side by side."""
        k, m = self.a.concurrent, self.a.concurrent_nodes
        ids = []
        c0 = {"controller": proc_cpu_s(ctl_pid), "load": load.cpu_s()}
        t0 = time.monotonic()
        for i in range(k):
            yaml = (f"name: share{i}\n"
                    f"nodes: {{count: {m}}}\n"
                    "victim: {command: [sleep, '0.2'], progress: {format: wall}, timeout: 30s}\n"
                    "antagonists:\n"
                    f"  - {{name: tick, injector: noop, rates: ['100'], nodes: {{count: {m}}}}}\n"
                    "pairings: singles\n"
                    f"repetitions: {self.a.concurrent_trials}\n"
                    "settle: 0s\n")
            path = os.path.join(self.work, f"share{i}.yaml")
            with open(path, "w") as f:
                f.write(yaml)
            r = self.ctl("submit", path)
            if r.returncode != 0:
                raise RuntimeError(f"submitting {path} failed: {r.stdout}{r.stderr}")
            ids.append(r.stdout.split("\n", 1)[0].strip())
        submitted_s = time.monotonic() - t0
        marks = ",".join("?" * len(ids))
        final = ("done", "failed", "cancelled", "interrupted")
        while True:
            db = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
            states = dict(db.execute(f"SELECT id, state FROM experiments WHERE id IN ({marks})", ids).fetchall())
            db.close()
            if len(states) == k and all(v in final for v in states.values()):
                break
            if time.monotonic() - t0 > 900:
                raise RuntimeError(f"concurrent experiments not finished after 900 s: {states}")
            time.sleep(0.5)
        dt = time.monotonic() - t0
        db = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        nodes, spans, trials = {}, {}, {}
        for eid in ids:
            ns = {n for (n,) in db.execute(
                "SELECT a.node FROM trial_antagonists a JOIN trials t ON t.id = a.trial_id WHERE t.experiment_id = ?",
                (eid,))}
            ns |= {n for (n,) in db.execute("SELECT victim_node FROM trials WHERE experiment_id = ?", (eid,))}
            nodes[eid] = ns
            spans[eid] = db.execute("SELECT MIN(started_unix_ms), MAX(finished_unix_ms), COUNT(*) FROM trials "
                                    "WHERE experiment_id = ?", (eid,)).fetchone()
            trials[eid] = dict(db.execute("SELECT state, COUNT(*) FROM trials WHERE experiment_id = ? GROUP BY state",
                                          (eid,)).fetchall())
        db.close()
        shared = sum(len(nodes[x] & nodes[y]) for i, x in enumerate(ids) for y in ids[i + 1:])
        # The most experiments running at one instant (a sweep over their trial spans).
        edges = sorted([(s0, 1) for s0, _, _ in spans.values() if s0] + [(s1, -1) for _, s1, _ in spans.values() if s1],
                       key=lambda e: (e[0], e[1]))
        most = cur = 0
        for _, d in edges:
            cur += d
            most = max(most, cur)
        total = {}
        for t in trials.values():
            for st, c in t.items():
                total[st] = total.get(st, 0) + c
        return {"experiments": k, "nodes_each": m, "trials_each": spans[ids[0]][2], "wall_s": round(dt, 1),
                "submit_s": round(submitted_s, 1),
                "experiment_states": {st: list(states.values()).count(st) for st in set(states.values())},
                "trial_states": total, "nodes_per_experiment": sorted({len(v) for v in nodes.values()}),
                "nodes_in_two_experiments": shared, "most_running_at_once": most,
                "controller_cpu_cores_during": round((proc_cpu_s(ctl_pid) - c0["controller"]) / dt, 3),
                "load_tool_cpu_cores_during": round((load.cpu_s() - c0["load"]) / dt, 3),
                "controller_rss_after_mib": round(proc_status(ctl_pid)["VmRSS"] / 1024, 1)}


def agent_footprint(a, work):
    """One real codl-agent, registered and heartbeating (1 s) to a real controller, nothing to
    run: its RSS (VmRSS at the end, VmHWM) and CPU (utime+stime) over the window, sampled every
    second. Goal: < 30 MiB and < 1 % of a core."""
    r = Run(a, 1, work)
    try:
        ctl = r.spawn([f"{r.bin}/codl-controller", "--listen", r.addr, "--db", os.path.join(work, "idle.db"),
                       *(r.tls("controller") or ["--insecure"])], "controller-idle.log")
        time.sleep(0.5)
        agent = r.spawn([f"{r.bin}/codl-agent", "--controller", r.addr, "--id", "idle-agent",
                         "--listen", f"127.0.0.1:{free_port()}", "--scratch-root", work,
                         "--state-dir", os.path.join(work, "idle-state"),
                         *(r.tls("agents") or ["--insecure"])], "agent-idle.log")
        t0 = time.monotonic()
        while r.alive() < 1:
            if time.monotonic() - t0 > 30:
                return {"error": "the agent did not register within 30 s"}
            time.sleep(0.5)
        time.sleep(a.warmup)
        rss = []
        c0, w0 = proc_cpu_s(agent.pid), time.monotonic()
        while time.monotonic() - w0 < a.agent_footprint:
            time.sleep(1)
            rss.append(proc_status(agent.pid)["VmRSS"])
        cpu = (proc_cpu_s(agent.pid) - c0) / (time.monotonic() - w0)
        st = proc_status(agent.pid)
        out = {"window_s": a.agent_footprint, "cpu_cores": round(cpu, 5),
               "rss_mib": {"min": round(min(rss) / 1024, 1), "max": round(max(rss) / 1024, 1)},
               "hwm_mib": round(st["VmHWM"] / 1024, 1), "threads": st["Threads"], "fds": st["fds"],
               "controller_cpu_cores_total": round(proc_cpu_s(ctl.pid) / (time.monotonic() - t0), 5)}
        print(f"idle codl-agent over {a.agent_footprint:.0f} s: CPU {cpu * 100:.3f} % of a core, RSS "
              f"{out['rss_mib']['min']}-{out['rss_mib']['max']} MiB (HWM {out['hwm_mib']} MiB), "
              f"{st['Threads']} threads", file=sys.stderr, flush=True)
        return out
    finally:
        for p in r.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


def ms(v):
    return None if v is None else round(v * 1e3, 3)


def analyze_registrations(rep, since_ns, n, until_ns=None):
    """From the load tool's timestamps: attempts and successes in [since_ns, until_ns); the first
    attempt, and when the last of the N agents had registered (its first success since then)."""
    def inside(t):
        return t >= since_ns and (until_ns is None or t < until_ns)
    attempts = [(a, t) for a, t in rep.get("register_attempts_ns", []) if inside(t)]
    successes = [(a, t) for a, t in rep.get("registered_ns", []) if inside(t)]
    done = {}
    for a, t in successes:
        done.setdefault(a, t)
    out = {"attempts": len(attempts), "agents_registered": len(done),
           "failed_attempts": len(attempts) - len(successes)}
    if attempts:
        first = min(t for _, t in attempts)
        out["first_attempt_ns"] = first
        if len(done) == n:
            last = max(done.values())
            out["last_registered_ns"] = last
            out["all_registered_s_after_first_attempt"] = round((last - first) / 1e9, 3)
            if since_ns:
                out["all_registered_s_after_since"] = round((last - since_ns) / 1e9, 3)
    return out


def analyze_storm(rep, storm, n):
    """The restart storm: analyze_registrations since the restart, plus the CPU both processes
    used from the restart until the last agent had registered (the first 50 ms sample after)."""
    out = analyze_registrations(rep, storm["restart_ns"], n)
    out["loadavg_after"] = storm["loadavg"]
    last = out.get("last_registered_ns")
    if last:
        after = [s for s in storm["samples"] if s[0] >= last]
        if after:
            out["cpu_s_until_all_registered"] = {"controller": round(after[0][1], 2),
                                                 "load_tool": round(after[0][2], 2),
                                                 "sampled_at_s": round((after[0][0] - storm["restart_ns"]) / 1e9, 3)}
    return out


def analyze_fanout(records, nodes):
    trials = {}
    for r in records:
        key = r["antagonist_id"][: -(len(r["agent"]) + 1)]  # "<exp>-t<i>-<name>" (one trial)
        trials.setdefault(key, []).append(r)
    lat, spreads, lasts, late, lateness = [], [], [], 0, []
    first_trial = None
    ordered = sorted(trials.values(), key=lambda rs: min(x["arrival_ns"] for x in rs))
    per_trial = []
    for rs in ordered:
        arr = [x["arrival_ns"] for x in rs]
        l = []
        for x in rs:
            start_at_ctrl = x["start_at_ns"] - x["offset_s"] * 1e9
            dispatch = start_at_ctrl - START_DELAY_S * 1e9
            l.append((x["arrival_ns"] - dispatch) / 1e9)
            late += x["arrival_ns"] > start_at_ctrl
            lateness.append((x["replied_ns"] - x["start_at_ns"]) / 1e9)
        per_trial.append({"n": len(rs), "last_s": max(l), "spread_s": (max(arr) - min(arr)) / 1e9, "lat": l})
    if not per_trial:
        return {"error": "no StartAntagonist arrivals recorded"}
    first_trial = per_trial[0]
    for t in per_trial:
        lat += t["lat"]
        spreads.append(t["spread_s"])
        lasts.append(t["last_s"])
    rest = [x for t in per_trial[1:] for x in t["lat"]]
    return {
        "trials_seen": len(per_trial),
        "starts_per_trial": sorted({t["n"] for t in per_trial}),
        "latency_ms": {"p50": ms(pct(lat, 50)), "p99": ms(pct(lat, 99)), "max": ms(max(lat)), "n": len(lat)},
        "latency_ms_without_first_trial": {"p50": ms(pct(rest, 50)), "p99": ms(pct(rest, 99))},
        "first_trial_last_arrival_ms": ms(first_trial["last_s"]),
        "per_trial_last_arrival_ms": {"p50": ms(pct(lasts, 50)), "p99": ms(pct(lasts, 99)), "max": ms(max(lasts))},
        "per_trial_spread_ms": {"p50": ms(pct(spreads, 50)), "p99": ms(pct(spreads, 99)), "max": ms(max(spreads))},
        "arrivals_after_start_at": late,
        "reply_vs_start_at_ms": {"p50": ms(pct(lateness, 50)), "p99": ms(pct(lateness, 99))},
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
    mem = 0
    for line in open("/proc/meminfo"):
        if line.startswith("MemTotal"):
            mem = int(line.split()[1]) // (1024 * 1024)
    return {"kernel": f"{u.sysname} {u.release}", "cpus": os.cpu_count(), "cpu_model": cpu, "memory_gib": mem}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", required=True)
    ap.add_argument("--agents", default="100,1000", help="comma-separated N values")
    ap.add_argument("--window", type=float, default=30, help="seconds of the CPU window")
    ap.add_argument("--warmup", type=float, default=5, help="seconds after all registered")
    ap.add_argument("--register-spread", type=float, default=2)
    ap.add_argument("--register-timeout", type=float, default=90, help="seconds for all N to register")
    ap.add_argument("--fanout", type=int, default=256, help="nodes the start command fans out to")
    ap.add_argument("--fanout-trials", type=int, default=20)
    ap.add_argument("--concurrent", type=int, default=0, metavar="K",
                    help="at the largest N, also run K experiments at once on disjoint agents (0: skip)")
    ap.add_argument("--concurrent-nodes", type=int, default=50, metavar="M", help="agents each of them reserves")
    ap.add_argument("--concurrent-trials", type=int, default=5, help="repetitions of each (trials: 2x this)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--tls", action="store_true", help="mTLS everywhere (throwaway CA, SAN 127.0.0.1)")
    ap.add_argument("--min-connect-timeout-ms", type=int, default=2000,
                    help="the agents' GRPC_ARG_MIN_RECONNECT_BACKOFF_MS (2000 as in rpc::MakeChannel; 0: gRPC default)")
    ap.add_argument("--restart-storm", action="store_true",
                    help="after the window (and fan-out), kill and restart the controller under the N "
                         "agents and measure their re-registration storm")
    ap.add_argument("--storm-wait", type=float, default=15, help="seconds the restart storm is watched")
    ap.add_argument("--setup-estimate", type=float, default=0,
                    help="the load tool's EstimateSetup answer (0: what a real agent says for noop)")
    ap.add_argument("--agent-footprint", type=float, default=0, metavar="S",
                    help="also sample one real, idle codl-agent's RSS and CPU over S seconds (0: skip)")
    a = ap.parse_args()
    ns = [int(x) for x in a.agents.split(",") if x]
    work = tempfile.mkdtemp(prefix="codl-scale-")
    if a.tls:
        netns.make_certs("openssl", work, {n: "127.0.0.1" for n in ("controller", "agents", "codlctl")})
    result = {"benchmark": "control_plane_scale", "machine": machine(),
              "transport": "loopback, " + ("mTLS" if a.tls else "plaintext"),
              "heartbeat_interval_s": 1.0, "register_spread_s": a.register_spread,
              "agents_min_connect_timeout_ms": a.min_connect_timeout_ms, "runs": []}
    try:
        if a.agent_footprint > 0:
            result["agent_idle"] = agent_footprint(a, work)
        for n in ns:
            r = Run(a, n, work)
            print(f"N = {n} ...", file=sys.stderr, flush=True)
            try:
                result["runs"].append(r.go(fanout=(n == max(ns) and n >= a.fanout)))
            finally:
                for p in r.procs:
                    if p.poll() is None:
                        p.kill()
                        p.wait()
    finally:
        if not a.keep:
            subprocess.run(["rm", "-rf", work])
        else:
            print(f"work dir kept: {work}", file=sys.stderr)
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=2)
        f.write("\n")
    m = result["machine"]
    print(f"control-plane scale, {m['kernel']}, {m['cpus']} CPUs, {m['memory_gib']} GiB; heartbeats every 1 s; "
          f"{result['transport']}")
    hdr = f"{'agents':>7}{'ctl CPU (cores)':>17}{'ctl RSS':>11}{'threads':>9}{'fds':>7}{'load CPU':>10}{'hb ok/failed':>15}"
    print(hdr)
    print("-" * len(hdr))
    for r in result["runs"]:
        if "error" in r:
            print(f"{r['agents']:>7}  {r['error']}; {r['register_failures']} failed registration attempts")
            continue
        hb = r["heartbeats"]
        print(f"{r['agents']:>7}{r['controller_cpu_cores']:>17.4f}{r['controller_rss_mib']:>8.1f}MiB"
              f"{r['controller_threads']:>9}{r['controller_fds']:>7}{r['load_tool_cpu_cores']:>10.3f}"
              f"{hb['heartbeats_ok']:>9}/{hb['heartbeats_failed']}")
    for r in result["runs"]:
        if "all_registered_after_s" in r:
            print(f"{r['agents']} agents all registered after {r['all_registered_after_s']} s "
                  f"(spread {a.register_spread} s; {r['heartbeats']['register_failures']} failed attempts; "
                  f"CPU until then: controller {r['register_cpu_s']['controller']} s, load tool "
                  f"{r['register_cpu_s']['load_tool']} s; load average {r['loadavg_1m_at_registered']:.1f})")
    ai = result.get("agent_idle")
    if ai and "cpu_cores" in ai:
        print(f"idle codl-agent: CPU {ai['cpu_cores'] * 100:.3f} % of a core, RSS {ai['rss_mib']['max']} MiB "
              f"(goal < 1 %, < 30 MiB)")
    for r in result["runs"]:
        for key, what in (("cold_registration", "fresh agents"), ("restart_storm", "controller restart")):
            g = r.get(key)
            if not g:
                continue
            took = g.get("all_registered_s_after_since", g.get("all_registered_s_after_first_attempt"))
            print(f"{r['agents']} agents, registration storm ({what}): {g['agents_registered']} registered, "
                  f"all after {took} s ({g['attempts']} attempts, {g['failed_attempts']} not successful); "
                  f"CPU {g.get('cpu_s_until_all_registered')}")
    for r in result["runs"]:
        f = r.get("fanout")
        if not f or "latency_ms" not in f:
            continue
        print(f"fan-out to {f['nodes']} of {r['agents']} agents, {f['trials_seen']} trials: latency p50 "
              f"{f['latency_ms']['p50']} ms, p99 {f['latency_ms']['p99']} ms (max {f['latency_ms']['max']}); "
              f"per-trial spread p50 {f['per_trial_spread_ms']['p50']} ms, p99 {f['per_trial_spread_ms']['p99']} ms; "
              f"first trial last arrival {f['first_trial_last_arrival_ms']} ms; late {f['arrivals_after_start_at']}; "
              f"controller {f['controller_cpu_cores_during']} cores during the experiment")
    for r in result["runs"]:
        c = r.get("concurrent")
        if not c:
            continue
        print(f"{c['experiments']} experiments at once on {c['nodes_each']} agents each of {r['agents']}: "
              f"{c['experiment_states']}, trials {c['trial_states']} in {c['wall_s']} s; at most "
              f"{c['most_running_at_once']} running at one time; {c['nodes_in_two_experiments']} agents in two "
              f"experiments; heartbeats failed in the whole run {r['heartbeats']['heartbeats_failed']} of "
              f"{r['heartbeats']['heartbeats_ok'] + r['heartbeats']['heartbeats_failed']}; controller "
              f"{c['controller_cpu_cores_during']} cores, RSS {c['controller_rss_after_mib']} MiB")
    print(f"written {a.out}")


if __name__ == "__main__":
    main()
