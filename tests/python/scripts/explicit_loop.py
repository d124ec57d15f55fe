"""A custom loop (no torch) timed with codl's explicit API."""

import sys
import time

import codl


def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


n = int(sys.argv[1])
codl.step_end()  # the first step starts here
for i in range(n - 1):
    with codl.phase("decode"):
        spin(0.003)
    with codl.phase("compute"):
        spin(0.005)
    codl.step_end(samples=8)
print("loop done")
