#!/usr/bin/env python3
"""The kernel's parts of the LL collectives in a GPU trace (the "cycles:" field), split by how
many receive attempts a collective took and whether thread 0 had to load a line again (the
"polls" part, where the trace has it): medians in ns at the SM clock given (default 1980 MHz,
measured by contrib/gpu_latency_probe.cu and nvidia-smi), with percentiles of the receive's
parts. Usage: parts_by_attempts.py [--mhz N] TRACE[.gz]..."""
import gzip
import re
import statistics
import sys
from collections import defaultdict

args, mhz = sys.argv[1:], 1980.0
if args[:1] == ["--mhz"]:
    mhz, args = float(args[1]), args[2:]
for f in args:
    groups = defaultdict(list)
    for line in (gzip.open(f, "rt") if f.endswith(".gz") else open(f)):
        m = re.search(r"dfccl gpu trace: .* B ll: .*; cycles: (.*)$", line)
        if not m:
            continue
        fields = m.group(1).split()
        try:
            d = {fields[k]: int(fields[k + 1]) for k in range(0, len(fields) - 1, 2)}
        except ValueError:
            continue                      # a line cut by another process's output
        if "total" not in d:
            continue
        groups[(min(d["attempts"], 3), d.get("polls", 0) > 0)].append(d)
    print(f)
    for (attempts, polled), recs in sorted(groups.items()):
        names = [k for k in recs[0] if k not in ("attempts", "total")]
        recs = [r for r in recs if all(k in r for k in names)]
        print(" attempts %s%s, %d collectives: " % (attempts if attempts < 3 else "3+",
              ", polled" if polled else "", len(recs)) +
              " ".join("%s %.0f" % (k, statistics.median(r[k] for r in recs) /
                                    (1 if k == "polls" else mhz / 1e3)) for k in names))
        for k in ("first", "lines", "receive"):
            if k in names:
                v = sorted(r[k] / (mhz / 1e3) for r in recs)
                print("    %-8s p10 %.0f p25 %.0f p50 %.0f p75 %.0f p90 %.0f" %
                      ((k,) + tuple(v[int(len(v) * q)] for q in (0.1, 0.25, 0.5, 0.75, 0.9))))
