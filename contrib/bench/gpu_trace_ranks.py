#!/usr/bin/env python3
"""Lines the ranks of one GPU up against each other in the GPU latency trace.

Reads 'dfccl gpu trace:' lines (coll_dfccl_gpu_trace 1) from the files given
(or stdin). Ranks on one node share the host's monotonic clock and ranks on
one GPU the kernel's, and each line carries both readings ("clocks: post
NS seen NS"), so the same collective (matched by the kernel's clock: the
records that finished nearest to each other) can be compared across ranks:
who posted last, whose kernel made its first move (where an LL or one-shot
send begins) last, and how long every rank's kernel then still took to
finish. Prints, per
group of collectives (ranks, collective, size, algorithm), medians in us
over the calls that every rank traced, after the first `--skip` (warm-up):

  cycle           from one call's first post to the next call's first post
  post            this rank's post after the first rank's (host clock)
  published/drained  this rank's steps after the first rank's post
  seen, first-move, sent, received
                  this rank's kernel steps after the first kernel saw the
                  call (kernel clock; sent and received: LL and one-shot)
  finished        this rank's kernel finishing, after the last rank's first
                  move (the LL send): the wait for the last lines, the
                  reduction and the completion entry
and how often each rank was the last to post and the last to send.
"""
import os
import re
import statistics
import sys
from collections import defaultdict

sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gpu_trace_summary import OPTIONAL, step_values, trace_streams  # noqa: E402  (its neighbour)
LINE = re.compile(r"dfccl gpu trace: rank (\d+) of (\d+) comm (\S+) (\S+) #(\d+) (\d+) B (\S+): (.*?) us;"
                  r".*clocks: post (\d+) seen (\d+)")


def parse(streams):
    records = defaultdict(lambda: defaultdict(list))   # (np, comm, coll, size, algo) -> rank -> records
    for stream in streams:
        for line in stream:
            m = LINE.search(line)
            if not m:
                continue
            rank, nranks, comm, coll, _seq, size, algo, rest, post, seen = m.groups()
            try:
                v = step_values(rest)   # us
                rec = {
                    "post": int(post), "published": int(post) + v["published"] * 1e3,
                    "drained": int(post) + v["drained"] * 1e3, "seen": int(seen),
                    "first": int(seen) + v["first-move"] * 1e3,
                    "finished": int(seen) + v["finished"] * 1e3,
                }
                for step in OPTIONAL:
                    rec[step] = int(seen) + v[step] * 1e3 if v.get(step) is not None else None
            except (ValueError, KeyError):
                continue   # a cut line or a failed collective (a step "none")
            records[(int(nranks), comm, coll, int(size), algo)][int(rank)].append(rec)
    return records


def by_finish(ranks):
    """The calls, by the kernel's clock: each of the lowest rank's records
    with every other rank's record that finished nearest to it, within half
    the usual time between calls (a collective finishes on all ranks within
    microseconds; calls follow tens of microseconds apart). The collectives'
    numbers are not used: a rank's numbering may also count collectives its
    peers do not trace alike. Calls are numbered by the lowest rank's
    finishes, a gap of k usual intervals counting k, so that a record it
    lacks does not join two calls into one cycle."""
    for k in ranks:
        ranks[k].sort(key=lambda x: x["finished"])
    ref = min(ranks)
    gaps = [b["finished"] - a["finished"] for a, b in zip(ranks[ref], ranks[ref][1:])]
    if not gaps:
        return {}
    usual = statistics.median(gaps)
    out, pos, index = {}, {k: 0 for k in ranks}, 0
    for i, x in enumerate(ranks[ref]):
        if i > 0:
            index += max(1, round(gaps[i - 1] / usual)) if usual > 0 else 1
        call = {ref: x}
        for k in ranks:
            if k == ref:
                continue
            recs = ranks[k]
            while pos[k] + 1 < len(recs) and \
                    abs(recs[pos[k] + 1]["finished"] - x["finished"]) <= abs(recs[pos[k]]["finished"] - x["finished"]):
                pos[k] += 1
            if recs and abs(recs[pos[k]]["finished"] - x["finished"]) <= usual / 2:
                call[k] = recs[pos[k]]
        out[index] = call
    return out


def med(xs):
    return statistics.median(xs) / 1e3 if xs else float("nan")


def report(key, ranks, skip):
    np_, comm, coll, size, algo = key
    missing = sorted(set(range(np_)) - set(ranks))
    if missing:
        print("np %d comm %s %s %d B %s: no records of rank%s %s" %
              (np_, comm, coll, size, algo, "s" if len(missing) > 1 else "",
               " ".join(str(r) for r in missing)))
        return
    calls = by_finish(ranks)
    whole = sorted(i for i, r in calls.items() if len(r) == np_)[skip:]   # every rank traced
    if len(whole) < 2:
        print("np %d comm %s %s %d B %s: fewer than 2 calls that every rank traced" %
              (np_, comm, coll, size, algo))
        return
    per_rank = defaultdict(lambda: defaultdict(list))
    last_post, last_send, cycles = defaultdict(int), defaultdict(int), []
    for n, i in enumerate(whole):
        r = calls[i]
        post0 = min(x["post"] for x in r.values())
        seen0 = min(x["seen"] for x in r.values())
        send = max(x["first"] for x in r.values())
        last_post[max(r, key=lambda k: r[k]["post"])] += 1
        last_send[max(r, key=lambda k: r[k]["first"])] += 1
        if n + 1 < len(whole) and whole[n + 1] == i + 1:
            cycles.append(min(x["post"] for x in calls[i + 1].values()) - post0)
        for k, x in r.items():
            d = per_rank[k]
            d["post"].append(x["post"] - post0)
            d["published"].append(x["published"] - post0)
            d["drained"].append(x["drained"] - post0)
            d["seen"].append(x["seen"] - seen0)
            d["first-move"].append(x["first"] - seen0)
            for step in OPTIONAL:
                if x[step] is not None:
                    d[step].append(x[step] - seen0)
            d["finished"].append(x["finished"] - send)
    print("np %d comm %s %s %d B %s: %d calls, cycle median %.2f us" %
          (np_, comm, coll, size, algo, len(whole), med(cycles)))
    names = ["post", "published", "drained", "seen", "first-move", "sent", "received", "finished"]
    print("  rank " + " ".join("%11s" % n for n in names) + "  last-post last-send")
    for k in sorted(per_rank):
        print("  %4d " % k + " ".join("%11.2f" % med(per_rank[k][n]) for n in names) +
              "  %9d %9d" % (last_post[k], last_send[k]))


def main(argv):
    skip, streams = trace_streams(argv)
    calls = parse(streams)
    if not calls:
        print("no trace lines with clocks")
        return 1
    print("medians in us; host steps from the first rank's post, kernel steps from the first"
          " kernel seeing the call, finished from the last rank's first move")
    for key in sorted(calls):
        report(key, calls[key], skip)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
