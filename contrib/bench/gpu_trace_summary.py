#!/usr/bin/env python3
"""Medians of the GPU latency trace (coll_dfccl_gpu_trace / config gpu_trace).

Reads 'dfccl gpu trace:' lines from the files given (or stdin) and prints,
per rank, collective, size and algorithm, the median microseconds of each
step: host steps from the post, kernel steps from the moment the daemon
kernel saw the submission (the two clocks are apart), and the gap since the
previous completion; then the tails of the gap and of the whole call. Where the lines carry the
kernel's cycle counts ("cycles: ..."), a third line gives their medians in ns, at the SM clock
rate that the group's cycles over its kernel time give. The first `--skip` lines of each group
(warm-up) are left out.
"""
import re
import statistics
import sys
from collections import defaultdict

HOST = ["published", "drained", "gap"]          # us from the post; gap: since the previous completion
KERNEL = ["admitted", "first-move", "sent", "last-move", "received", "finished"]   # us from the kernel seeing it
OPTIONAL = {"sent", "received"}   # LL and one-shot only ("none" otherwise)
CYCLES = re.compile(r"; cycles: (.*)$")
PARTS = ["poll", "issue", "copy", "admit", "start", "send", "receive", "first", "lines", "polls", "retry",
         "attempts", "complete", "take", "load", "fill", "store", "total"]
COUNTS = {"polls", "attempts"}   # counts, not cycles: their means are printed
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
    cycles = defaultdict(list)   # per group, the lines' cycle counts (if they have them)
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
            key = (int(nranks), int(rank), coll, int(size), algo)
            groups[key].append(row)
            cycles[key].append(cycle_values(line, values["finished"]))
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
        print_cycles(cycles[key][skip:] or cycles[key])
    return 0


def cycle_values(line, finished):
    """(finished, {part: cycles}) of a line that carries the kernel's cycles,
    else None (an older trace, or a line cut by another process's output)."""
    c = CYCLES.search(line)
    if not c:
        return None
    fields = c.group(1).split()
    try:
        parts = {fields[k]: int(fields[k + 1]) for k in range(0, len(fields) - 1, 2)}
    except ValueError:
        return None
    # a line of this format, or of an older one with fewer parts; a cut line
    # has an unknown or a missing name
    return (finished, parts) if "total" in parts and set(parts) <= set(PARTS) else None


def print_cycles(recs):
    """Medians of the kernel's cycle counts in ns (the COUNTS: their means), at the rate their totals
    over the kernel's time give (the global clock's interval from seeing the
    collective to finishing it), over the lines that carry them."""
    # a total that wrapped or spans a relaunch (clock64 of another SM) gives
    # an impossible rate: such lines do not count
    recs = [r for r in recs if r is not None and r[0] > 0 and 300 <= r[1]["total"] / r[0] <= 5000]
    if not recs:
        return
    names = max({tuple(c) for _, c in recs}, key=len)   # a group's lines share a format
    recs = [r for r in recs if tuple(r[1]) == names]
    mhz = sum(c["total"] for _, c in recs) / sum(finished for finished, _ in recs)
    parts = ["%s %.2f" % (name, statistics.mean(c[name] for _, c in recs)) if name in COUNTS
             else "%s %.0f" % (name, statistics.median(c[name] for _, c in recs) / (mhz / 1e3))
             for name in recs[0][1] if name != "total"]
    print("%53s kernel parts, ns at %.0f MHz: %s" % ("", mhz, " ".join(parts)))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
