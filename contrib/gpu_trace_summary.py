#!/usr/bin/env python3
"""Medians of the GPU latency trace (coll_dfccl_gpu_trace / config gpu_trace).

Reads 'dfccl gpu trace:' lines from the files given (or stdin) and prints,
per rank, collective, size and algorithm, the median microseconds of each
step: host steps from the post, kernel steps from the moment the daemon
kernel saw the submission (the two clocks are apart), and the gap since the
previous completion; then the tails of the gap and of the whole call. The first `--skip` lines of
each group (warm-up) are left out.
"""
import re
import statistics
import sys
from collections import defaultdict

HOST = ["published", "drained", "gap"]          # us from the post; gap: since the previous completion
KERNEL = ["admitted", "first-move", "sent", "last-move", "received", "finished"]   # us from the kernel seeing it
OPTIONAL = {"sent", "received"}   # LL and one-shot only ("none" otherwise)
LINE = re.compile(r"dfccl gpu trace: rank (\d+) of (\d+) comm \S+ (\S+) #\d+ (\d+) B (\S+): (.*?) us(?:;|$)")


def trace_streams(argv):
    """The options both trace scripts take: [--skip N] [FILE...]; returns
    the warm-up lines to skip per group and the streams (stdin without
    files)."""
    skip, files, i = 5, [], 0
    while i < len(argv):
        if argv[i] == "--skip":
            skip = int(argv[i + 1])
            i += 2
        else:
            files.append(argv[i])
            i += 1
    return skip, [open(f) for f in files] if files else [sys.stdin]


def step_values(rest):
    """A trace line's "name value" pairs after the algorithm, in us; None for
    an OPTIONAL step the collective has not ("none"). Raises ValueError or
    KeyError for a cut line or a failed collective (another step "none")."""
    fields = rest.replace("kernel:", "").split()
    return {fields[k]: None if fields[k + 1] == "none" and fields[k] in OPTIONAL
            else float(fields[k + 1]) for k in range(0, len(fields) - 1, 2)}


def main(argv):
    skip, streams = trace_streams(argv)
    groups = defaultdict(list)
    for stream in streams:
        for line in stream:
            m = LINE.search(line)
            if not m:
                continue
            rank, nranks, coll, size, algo, rest = m.groups()
            try:
                values = step_values(rest)
                row = [values.get(s) if s in OPTIONAL else values[s] for s in HOST + KERNEL]
            except (ValueError, KeyError):
                continue   # a line cut by another process's output, or a failed collective (none)
            groups[(int(nranks), int(rank), coll, int(size), algo)].append(row)
    if not groups:
        print("no trace lines")
        return 1
    print("medians in us: host steps from the post, kernel steps from the kernel seeing the"
          " submission (own share in brackets)")
    names = HOST + KERNEL
    print("%-3s %-4s %-15s %10s %-8s %5s  " % ("np", "rank", "collective", "bytes", "algo", "n") +
          " ".join("%16s" % s for s in names))
    for key in sorted(groups):
        rows = groups[key][skip:] or groups[key]
        cells = []
        for k in range(len(names)):
            present = [r for r in rows if r[k] is not None]
            if not present:
                cells.append("%16s" % "none")
                continue
            share = []
            for r in present:
                # from the latest earlier kernel step this row reached before
                # this one: an LL collective whose first attempt succeeds
                # begins its last move (that attempt) before it has sent
                earlier = [r[j] for j in range(len(HOST), k) if r[j] is not None and r[j] <= r[k]]
                share.append(r[k] - (max(earlier) if earlier else 0.0))
            cells.append("%7.2f (%6.2f)" % (statistics.median(r[k] for r in present),
                                            statistics.median(share)))
        print("%-3d %-4d %-15s %10d %-8s %5d  " % (key + (len(rows),)) + " ".join(cells))
        gaps = sorted(r[2] for r in rows)
        print("%53s gap p90 %.2f p99 %.2f max %.2f; drained p90 %.2f max %.2f" % (
            "", gaps[int(len(gaps) * 0.9)], gaps[int(len(gaps) * 0.99)], gaps[-1],
            sorted(r[1] for r in rows)[int(len(rows) * 0.9)], max(r[1] for r in rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
