#!/usr/bin/env python3
"""Summarises scripts/ab.sh output: per workload and protocol, the pairs (same round) of
`new` against `base`: geomean of the pair ratios with a 95 % bootstrap interval, the median
pair ratio, the ratio of medians, and CPU microseconds per transaction on each side.
usage: python3 scripts/ab_summary.py OUT.jsonl [OUT2.jsonl ...]"""
import collections, json, math, os, random, statistics as st, sys

if len(sys.argv) < 2:
    sys.exit(__doc__)
groups = collections.defaultdict(lambda: collections.defaultdict(dict))
for i, path in enumerate(sys.argv[1:]):
    for line in open(path):
        r = json.loads(line)
        r["x"] = r.get("tps", r.get("mqth"))
        groups[(r["workload"], r["commit"])][(i, r["round"])][r["bin"]] = r
random.seed(1)
print(f"{'workload':8} {'protocol':14} {'pairs':>5} {'geomean [95% CI]':>24} {'median pair':>11} {'ratio of medians':>16} {'CPU us/txn base -> new':>24}")
for (w, c), rounds in sorted(groups.items()):
    pairs = [(d["base"], d["new"]) for d in rounds.values() if "base" in d and "new" in d]
    if not pairs:
        continue
    rat = [n["x"] / b["x"] for b, n in pairs]
    gm = lambda s: math.exp(sum(map(math.log, s)) / len(s))
    boot = sorted(gm([random.choice(rat) for _ in rat]) for _ in range(4000))
    rom = st.median(n["x"] for _, n in pairs) / st.median(b["x"] for b, _ in pairs)
    # cpu_util is CPU time over (wall time x cores of the machine that ran it: this one).
    cpu = lambda r: r["cpu_util"] * r.get("cores", os.cpu_count()) * 1e6 / r["x"]
    cb, cn = st.median(cpu(b) for b, _ in pairs), st.median(cpu(n) for _, n in pairs)
    ci = f"{gm(rat):.3f} [{boot[100]:.3f}-{boot[3899]:.3f}]"
    print(f"{w:8} {c:14} {len(pairs):5d} {ci:>24} {st.median(rat):11.3f} {rom:16.3f} {cb:11.1f} -> {cn:8.1f}")
