#!/usr/bin/env python3
"""A TCP relay that delays each direction by a configurable time: a stand-in for
`tc qdisc ... netem delay` on kernels built without sch_netem. Used by the skew benchmark
(--delay) between one agent and the controller, so that the agent's heartbeats (from which the
controller estimates its clock offset) cross a slow link. Bytes are relayed unchanged (TLS is
end to end); each chunk leaves `delay` after it arrived, in order.

The delays come from --control FILE, "UP_MS DOWN_MS" (client->server, server->client), re-read
every 50 ms, so the benchmark changes them without reconnecting.
"""
import argparse
import os
import queue
import socket
import threading
import time


class Control:
    def __init__(self, path):
        self.path, self.mtime, self.up, self.down, self.checked = path, 0, 0.0, 0.0, 0.0
        self.lock = threading.Lock()

    def delays(self):
        now = time.monotonic()
        with self.lock:
            if now - self.checked > 0.05:
                self.checked = now
                try:
                    m = os.stat(self.path).st_mtime_ns
                    if m != self.mtime:
                        self.mtime = m
                        up, down = open(self.path).read().split()[:2]
                        self.up, self.down = float(up) / 1e3, float(down) / 1e3
                except (OSError, ValueError):
                    pass
            return self.up, self.down


def pump(src, dst, control, upstream):
    """Reads src on this thread; a second thread writes each chunk to dst when it is due."""
    q = queue.Queue()

    def writer():
        while True:
            due, data = q.get()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if not data:
                try:
                    dst.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            try:
                dst.sendall(data)
            except OSError:
                return

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    while True:
        try:
            data = src.recv(65536)
        except OSError:
            data = b""
        up, down = control.delays()
        q.put((time.monotonic() + (up if upstream else down), data))
        if not data:
            break
    t.join()


def serve(a):
    host, port = a.listen.rsplit(":", 1)
    thost, tport = a.target.rsplit(":", 1)
    control = Control(a.control)
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((host, int(port)))
    ls.listen(16)
    while True:
        c, _ = ls.accept()
        try:
            s = socket.create_connection((thost, int(tport)), timeout=5)
            s.settimeout(None)
        except OSError:
            c.close()
            continue
        for sock in (c, s):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def session(c=c, s=s):
            ts = [threading.Thread(target=pump, args=(c, s, control, True), daemon=True),
                  threading.Thread(target=pump, args=(s, c, control, False), daemon=True)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            c.close()
            s.close()

        threading.Thread(target=session, daemon=True).start()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--listen", required=True, help="HOST:PORT")
    ap.add_argument("--target", required=True, help="HOST:PORT")
    ap.add_argument("--control", required=True, help='file holding "UP_MS DOWN_MS"')
    serve(ap.parse_args())


if __name__ == "__main__":
    main()
