#!/usr/bin/env python3
"""net injector vs iperf3 over veth between two network namespaces created here (never any
address outside this machine). Not a test: prints a table and writes JSON (figures go to
docs/performance.md). Needs root (ip netns) and iperf3 (Debian package). Usage: see
run_resource_bench.sh --net.

Topology (bench/skew/netns.py, prefix codl-b-<pid>; bench/netns_cleanup.sh removes a killed
run's leftovers): h1 = 10.78.0.11 receives, h2 = 10.78.0.12 sends, through a bridge namespace.

  * peak: `net` as a pair (ranks=2: rank 0 receives in h1 and publishes its endpoint, rank 1 in
    h2 is given it, exactly as the agents relay it) at --max vs `iperf3 -c -P N` with the same
    message size, N = connections; ABBA rounds, median ratio with a bootstrap CI (bench.py).
    Both count payload bytes per second at the sender, the first second excluded (iperf3 -O 1;
    codl's summary leaves out its settle second).
  * level accuracy of the pair over the veth at 0.25 / 0.5 of the peak just measured.
"""
import argparse
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name, path):
    """Imports a sibling bench module by path: bench/skew has a bench.py of its own."""
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


bench = load("injector_bench", os.path.join(HERE, "bench.py"))  # abba, compare (ABBA, bootstrap)
netns = load("skew_netns", os.path.join(HERE, "..", "skew", "netns.py"))  # Topology

MESSAGE = "128KiB"  # codl's default message_size; iperf3 -l 128K


def summary_of(out):
    lines = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    return [l for l in lines if l.get("summary")][-1]


class Pair:
    """One codl net pair in the two namespaces; the receiver outlives the sender by a margin."""

    def __init__(self, topo, codl, connections):
        self.topo, self.codl, self.connections = topo, codl, connections

    def run(self, intensity, seconds):
        common = ["--set", "ranks=2", "--set", f"connections={self.connections}",
                  "--set", f"message_size={MESSAGE}"]
        recv = subprocess.Popen(
            self.topo.exec_argv("h1", [self.codl, "net"] + common + [
                "--set", "rank=0", "--set", "rendezvous_key=bench", "--set",
                f"bind={self.topo.addr('h1')}", "--max", "--duration", f"{seconds + 10}s",
                "--json"]),
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            publish = json.loads(recv.stdout.readline())["rendezvous_publish"]
            send = subprocess.run(
                self.topo.exec_argv("h2", [self.codl, "net"] + common + [
                    "--set", "rank=1", "--set", f"endpoint={publish['value_hex']}"] + intensity +
                    ["--duration", f"{seconds}s", "--json"]),
                capture_output=True, text=True, check=True)
            return summary_of(send.stdout)
        finally:
            recv.send_signal(signal.SIGTERM)
            recv.communicate(timeout=10)


def iperf3(topo, connections, seconds):
    server = subprocess.Popen(
        topo.exec_argv("h1", ["iperf3", "-s", "-1", "-B", topo.addr("h1"), "-p", "5201"]),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(50):  # the server is up once a client can connect; iperf3 -c retries not
            r = subprocess.run(topo.exec_argv("h2", [
                "iperf3", "-c", topo.addr("h1"), "-p", "5201", "-P", str(connections), "-l",
                "128K", "-t", str(int(seconds)), "-O", "1", "-J"]), capture_output=True, text=True)
            j = json.loads(r.stdout) if r.stdout.startswith("{") else {"error": r.stderr}
            if "error" not in j:
                return j["end"]["sum_sent"]["bytes"] / j["end"]["sum_sent"]["seconds"]
            if "Connection refused" not in j["error"]:
                raise RuntimeError("iperf3: " + j["error"])
            time.sleep(0.1)
        raise RuntimeError("iperf3 server did not come up")
    finally:
        server.kill()
        server.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--codl", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--connections", default="1,4")
    a = ap.parse_args()
    why = netns.probe_netns(f"codl-b-{os.getpid()}")
    if why:
        sys.exit("net bench: " + why)
    topo = netns.Topology(f"codl-b-{os.getpid()}", 2)
    res = {"host": {"cpus": os.cpu_count(), "loadavg_start": os.getloadavg()},
           "seconds": a.seconds, "rounds": a.rounds, "message_size": MESSAGE, "pairs": {}}
    try:
        topo.build()
        for n in [int(x) for x in a.connections.split(",")]:
            pair = Pair(topo, a.codl, n)
            codl, ref = bench.abba(
                a.rounds, lambda: pair.run(["--max"], a.seconds)["achieved_rate"],
                lambda: iperf3(topo, n, a.seconds))
            r = bench.compare(codl, ref)
            r.update({"codl_bytes_per_s": codl, "iperf3_bytes_per_s": ref,
                      "loadavg_after": os.getloadavg()})
            peak = sorted(codl)[len(codl) // 2]
            r["accuracy"] = []
            for level in (0.25, 0.5):
                s = pair.run(["--rate", str(level * peak)], a.seconds)
                r["accuracy"].append({"level": level, "target": s["target_rate"],
                                      "achieved": s["achieved_rate"],
                                      "error": s["achieved_rate"] / s["target_rate"] - 1,
                                      "cov": s["cov"], "saturated": s["saturated"]})
            res["pairs"][str(n)] = r
            print(f"connections={n}: codl/iperf3 {r['ratio']:.2f} "
                  f"[{r['ratio_ci95'][0]:.2f}, {r['ratio_ci95'][1]:.2f}] {r['verdict']}; "
                  f"codl median {peak / 1e9:.2f} GB/s, iperf3 median "
                  f"{sorted(ref)[len(ref) // 2] / 1e9:.2f} GB/s; levels "
                  + ", ".join(f"{x['level']}: {x['error'] * 100:+.2f} % cov {x['cov'] * 100:.1f} %"
                              for x in r["accuracy"]), flush=True)
    finally:
        topo.teardown()
    res["host"]["loadavg_end"] = os.getloadavg()
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
