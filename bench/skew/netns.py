"""Network-namespace "hosts" on one machine, for the control-plane benchmarks.

Layout (every interface lives in a namespace created here; the root namespace is untouched):

    PREFIX-sw   br0 + one bridge port "p-<role>" per host (veth end)
    PREFIX-c    eth0 SUBNET.1/24            (controller, codlctl)
    PREFIX-hN   eth0 SUBNET.(10+N)/24       (agent hN)

Deleting the namespaces removes the bridge and every veth. bench/netns_cleanup.sh removes the
leftovers of a killed run (anything named codl-t-* / codl-b-*).
"""
import ctypes
import os
import shutil
import signal
import subprocess


def _die_with_parent():
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def run(argv, check=True, timeout=30, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({r.returncode}): {r.stderr.strip()}")
    return r


class Topology:
    def __init__(self, prefix, hosts, subnet="10.78.0"):
        self.prefix = prefix
        self.hosts = [f"h{i}" for i in range(1, hosts + 1)]
        self.subnet = subnet
        self.created = []
        self.ip = shutil.which("ip") or "/usr/sbin/ip"

    def ns(self, role):
        return f"{self.prefix}-{role}"

    def addr(self, role):
        return f"{self.subnet}.1" if role == "c" else f"{self.subnet}.{10 + int(role[1:])}"

    def _ip(self, *args):
        return run([self.ip, *args])

    def build(self):
        self._add_ns("sw")
        self._ip("-n", self.ns("sw"), "link", "add", "br0", "type", "bridge")
        self._ip("-n", self.ns("sw"), "link", "set", "br0", "up")
        for role in ["c"] + self.hosts:
            self._add_ns(role)
            self._ip("-n", self.ns("sw"), "link", "add", f"p-{role}", "type", "veth", "peer", "name",
                     "eth0", "netns", self.ns(role))
            self._ip("-n", self.ns("sw"), "link", "set", f"p-{role}", "master", "br0", "up")
            self._ip("-n", self.ns(role), "addr", "add", f"{self.addr(role)}/24", "dev", "eth0")
            self._ip("-n", self.ns(role), "link", "set", "eth0", "up")
            self._ip("-n", self.ns(role), "link", "set", "lo", "up")

    def _add_ns(self, role):
        self._ip("netns", "add", self.ns(role))
        self.created.append(self.ns(role))

    def exec_argv(self, role, argv):
        return [self.ip, "netns", "exec", self.ns(role), *argv]

    def spawn(self, role, argv, log_path):
        """Starts argv in role's namespace, both streams appended to log_path; the process is
        killed if this Python process dies (PR_SET_PDEATHSIG), so no daemon outlives a bench."""
        log = open(log_path, "ab")
        return subprocess.Popen(self.exec_argv(role, argv), stdout=log, stderr=subprocess.STDOUT,
                                preexec_fn=_die_with_parent)

    def netem(self, role, delay, side):
        """Adds `delay` on host `role`'s link: side 'host' delays host->switch (its egress),
        'switch' delays switch->host, 'both' both ways."""
        if side in ("host", "both"):
            run(["tc", "-n", self.ns(role), "qdisc", "replace", "dev", "eth0", "root", "netem",
                 "delay", delay])
        if side in ("switch", "both"):
            run(["tc", "-n", self.ns("sw"), "qdisc", "replace", "dev", f"p-{role}", "root", "netem",
                 "delay", delay])

    def clear_netem(self, role):
        run(["tc", "-n", self.ns(role), "qdisc", "del", "dev", "eth0", "root"], check=False)
        run(["tc", "-n", self.ns("sw"), "qdisc", "del", "dev", f"p-{role}", "root"], check=False)

    def teardown(self):
        for name in reversed(self.created):
            run([self.ip, "netns", "del", name], check=False)
        self.created = []


def probe_netns(prefix):
    """None when network namespaces can be created here, else the reason."""
    ip = shutil.which("ip")
    if not ip:
        return "iproute2 'ip' not found"
    r = run([ip, "netns", "add", f"{prefix}-probe"], check=False)
    if r.returncode != 0:
        return f"'ip netns add' not permitted: {r.stderr.strip()} (needs root / CAP_SYS_ADMIN)"
    run([ip, "netns", "del", f"{prefix}-probe"], check=False)
    return None


def role_uri(name):
    """The URI SAN that gives a bench certificate its CoDL role (docs/security.md): the
    controller, codlctl as admin, the load tool's many agents as any agent, a host as that agent."""
    if name == "controller":
        return "codl://controller"
    if name == "codlctl":
        return "codl://admin/codlctl"
    if name == "agents":
        return "codl://agent/*"
    return f"codl://agent/{name}"


def make_certs(openssl, d, ips_by_name):
    """A throwaway CA and one cert per name (server+client auth, SAN = its IP or IPs and its
    role URI)."""
    def ossl(*args):
        run([openssl, *args], cwd=d)

    ossl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=codl-bench-ca",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    for name, ips in ips_by_name.items():
        sans = ",".join(f"IP:{ip}" for ip in ([ips] if isinstance(ips, str) else ips))
        with open(os.path.join(d, f"{name}.ext"), "w") as f:
            f.write("basicConstraints=CA:FALSE\n"
                    "keyUsage=critical,digitalSignature,keyEncipherment\n"
                    "extendedKeyUsage=serverAuth,clientAuth\n"
                    f"subjectAltName={sans},DNS:{name},URI:{role_uri(name)}\n")
        ossl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={name}")
        ossl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", f"{name}.pem", "-days", "2", "-extfile", f"{name}.ext")


def tls_flags(d, name):
    return ["--tls-ca", f"{d}/ca.pem", "--tls-cert", f"{d}/{name}.pem", "--tls-key", f"{d}/{name}.key"]
