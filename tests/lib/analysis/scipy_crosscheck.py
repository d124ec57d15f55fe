#!/usr/bin/env python3
"""CoDL's statistics against SciPy/statsmodels on generated data (issue: statistics must be
cross-checked, not trusted).

  * Mann-Whitney U and two-sided p: scipy.stats.mannwhitneyu (exact without ties, else the
    normal approximation with continuity and tie correction, as CoDL documents).
  * Bootstrap CI of the ratio of medians: for small samples CoDL enumerates every resample;
    here the same distribution is enumerated independently (itertools.product + numpy's
    linear percentile). For larger samples CoDL uses seeded Monte Carlo: compared with
    scipy.stats.bootstrap (percentile method) within a Monte Carlo tolerance.
  * Holm and Benjamini-Hochberg: statsmodels.stats.multitest.multipletests.
  * Interaction S_AB / (S_A S_B): the point figures (slowdowns, multiplicative and additive
    predictions, ratio) from numpy medians; the joint CI, which resamples baseline, singles and
    combination independently, against scipy.stats.bootstrap over the same samples
    (paired=False, percentile) within a Monte Carlo tolerance, and the verdict where SciPy's
    interval is clear of 1.
Usage: scipy_crosscheck.py STATS_TOOL. Exit 77 (skipped) without scipy/statsmodels.
"""
import itertools
import json
import subprocess
import sys

try:
    import numpy as np
    from scipy import stats
    from statsmodels.stats.multitest import multipletests
except ImportError as e:
    print(f"SKIP: {e} (Debian packages python3-scipy python3-statsmodels)")
    sys.exit(77)

rng = np.random.default_rng(20261130)
cases = []  # (name, input, check)
failures = []
passed = 0


def close(a, b, tol):
    return (np.isnan(a) and np.isnan(b)) or abs(a - b) <= tol * max(1.0, abs(b))


def exact_ratio_ci(t, c, level=0.95):
    """Every ordered resample of each side, its median's distribution (value, count), their
    ratio's distribution, then numpy-style linear (type 7) quantiles of the weighted values."""
    def medians(x):
        m = np.array([np.median(s) for s in itertools.product(x, repeat=len(x))])
        return np.unique(m, return_counts=True)
    (vt, nt), (vc, nc) = medians(t), medians(c)
    keep = vc != 0
    vc, nc = vc[keep], nc[keep]
    values = (vt[:, None] / vc[None, :]).ravel()
    counts = (nt[:, None].astype(np.int64) * nc[None, :]).ravel()
    order = np.argsort(values, kind="stable")
    values, counts = values[order], counts[order]
    cum = np.cumsum(counts)
    total = int(cum[-1])

    def kth(k):  # k-th smallest (0-based) of the expanded multiset
        return values[np.searchsorted(cum, k, side="right")]

    def quantile(q):
        h = q * (total - 1)
        lo = int(np.floor(h))
        return kth(lo) + (h - lo) * (kth(min(lo + 1, total - 1)) - kth(lo))
    a = 1 - level
    return quantile(a / 2), quantile(1 - a / 2)


def sample(n, ties):
    x = rng.lognormal(0.0, 0.1, n)
    return list(np.round(x, 1) if ties else x)


# Two-sample data: small (exact bootstrap), medium and large, with and without ties.
for n_t, n_c in [(1, 1), (2, 2), (3, 3), (3, 4), (5, 5), (6, 4), (10, 12), (25, 20), (40, 40)]:
    for ties in (False, True):
        for shift in (1.0, 1.3):
            t = [v * shift for v in sample(n_t, ties)]
            c = sample(n_c, ties)
            cases.append(("two-sample", {"t": t, "c": c}))
# p-value families for the adjustments.
for m in (1, 2, 5, 12, 30):
    p = list(rng.uniform(0, 0.2, m))
    if m > 2:
        p[1] = p[0]  # a tie
    cases.append(("adjust", {"p": p}))

# Interaction: baseline, two singles and their combination, with true ratios 1 (no
# interaction), above and below 1; and one three-antagonist combination.
for n in (6, 10, 20):
    for true_ratio in (0.8, 1.0, 1.25):
        base = sample(n, False)
        a = [v * 1.2 for v in sample(n, False)]
        b = [v * 1.5 for v in sample(n, False)]
        ab = [v * 1.8 * true_ratio for v in sample(n, False)]
        cases.append(("interaction", {"base": base, "singles": [a, b], "combo": ab}))
three = [[v * f for v in sample(12, False)] for f in (1.0, 1.1, 1.2, 1.3, 1.716)]
cases.append(("interaction", {"base": three[0], "singles": three[1:4], "combo": three[4]}))

tool = sys.argv[1]
out = subprocess.run([tool], input="".join(json.dumps(c[1]) + "\n" for c in cases),
                     capture_output=True, text=True, check=True).stdout.splitlines()
assert len(out) == len(cases), "stats_tool answered %d of %d cases" % (len(out), len(cases))


def check(ok, what):
    global passed
    if ok:
        passed += 1
    else:
        failures.append(what)


def check_interaction(data, got):
    base, singles, combo = data["base"], data["singles"], data["combo"]
    label = f"interaction n={len(base)} k={len(singles)}"
    s = [np.median(x) / np.median(base) for x in singles]
    s_ab = np.median(combo) / np.median(base)
    product = float(np.prod(s))
    check(close(got["slowdown"], s_ab, 1e-12), f"{label} S_AB: {got['slowdown']} vs {s_ab}")
    check(all(close(g, r, 1e-12) for g, r in zip(got["singles"], s)),
          f"{label} singles: {got['singles']} vs {s}")
    check(close(got["multiplicative"], product, 1e-12), f"{label} x-pred")
    check(close(got["additive"], 1 + sum(x - 1 for x in s), 1e-12), f"{label} +-pred")
    check(close(got["ratio"], s_ab / product, 1e-12), f"{label} ratio: {got['ratio']}")

    def ratio(*groups, axis):
        b, c = groups[0], groups[-1]
        prod = np.prod([np.median(g, axis=axis) / np.median(b, axis=axis) for g in groups[1:-1]],
                       axis=0)
        return (np.median(c, axis=axis) / np.median(b, axis=axis)) / prod
    samples = tuple(np.array(x) for x in [base, *singles, combo])
    res = stats.bootstrap(samples, ratio, vectorized=True, paired=False, n_resamples=10000,
                          method="percentile", random_state=2)
    lo, hi = res.confidence_interval
    check(close(got["ci_low"], lo, 0.015) and close(got["ci_high"], hi, 0.015),
          f"{label} CI: [{got['ci_low']:.5f}, {got['ci_high']:.5f}] vs [{lo:.5f}, {hi:.5f}]")
    # The verdict where SciPy's interval is clearly on one side of 1 (a bound within the Monte
    # Carlo tolerance of 1 could go either way).
    if lo > 1.02:
        check(got["verdict"] == "super-additive", f"{label} verdict {got['verdict']} (SciPy > 1)")
    elif hi < 0.98:
        check(got["verdict"] == "sub-additive", f"{label} verdict {got['verdict']} (SciPy < 1)")
    elif lo < 0.98 and hi > 1.02:
        check(got["verdict"] == "", f"{label} verdict {got['verdict']} (SciPy spans 1)")


for (kind, data), line in zip(cases, out):
    got = json.loads(line)
    if kind == "adjust":
        p = data["p"]
        holm = multipletests(p, method="holm")[1]
        bh = multipletests(p, method="fdr_bh")[1]
        for i in range(len(p)):
            check(close(got["holm"][i], holm[i], 1e-12), f"holm m={len(p)} [{i}]: {got['holm'][i]} vs {holm[i]}")
            check(close(got["bh"][i], bh[i], 1e-12), f"bh m={len(p)} [{i}]: {got['bh'][i]} vs {bh[i]}")
        continue
    if kind == "interaction":
        check_interaction(data, got)
        continue
    t, c = data["t"], data["c"]
    label = f"n={len(t)}/{len(c)} ties={len(set(t + c)) < len(t + c)}"
    method = "exact" if got["mw_method"] == "exact" else "asymptotic"
    ref = stats.mannwhitneyu(t, c, alternative="two-sided", method=method, use_continuity=True)
    check(close(got["mw_u"], ref.statistic, 1e-12), f"U {label}: {got['mw_u']} vs {ref.statistic}")
    check(close(got["mw_p"], ref.pvalue, 1e-9), f"p {label} ({method}): {got['mw_p']} vs {ref.pvalue}")
    if got["ci_exact"]:
        lo, hi = exact_ratio_ci(t, c)
        check(close(got["ci_low"], lo, 1e-9) and close(got["ci_high"], hi, 1e-9),
              f"exact CI {label}: [{got['ci_low']}, {got['ci_high']}] vs [{lo}, {hi}]")
    else:
        res = stats.bootstrap((np.array(t), np.array(c)),
                              lambda a, b, axis: np.median(a, axis=axis) / np.median(b, axis=axis),
                              vectorized=True, paired=False, n_resamples=10000,
                              method="percentile", random_state=1)
        lo, hi = res.confidence_interval
        # Two independent Monte Carlo runs of 10,000 resamples: bounds agree within ~1%.
        check(close(got["ci_low"], lo, 0.015) and close(got["ci_high"], hi, 0.015),
              f"MC CI {label}: [{got['ci_low']:.5f}, {got['ci_high']:.5f}] vs [{lo:.5f}, {hi:.5f}]")

for f in failures:
    print("FAIL", f)
print(f"{passed} passed, {len(failures)} failed")
sys.exit(1 if failures else 0)
