#!/usr/bin/env python3
"""bed_planner_table.py OUT...: the tables of bed_planner_compare.sh runs.

For each OUT (a run's folder) prints, per collective and size, the modelled
finish of the ring, the hierarchical schedule and the planned one (from
OUT/model.txt, dfccl_plan's own figures), the measured times of the three
configurations and measured / modelled for each, as Markdown. A measured time
is the median call of a job (OUT/NAME.json: a slow spell of the shared
machine within a job moves the mean, not the median) and, where the
configurations ran in rounds (ring_2 and so on), the median over the rounds.
A size whose plan file could not be written shows "-" in the planned columns.
"""
import glob
import json
import os
import re
import statistics
import sys

COLL = {"allgather": "allgather", "allreduce": "allreduce",
        "reducescatter": "reduce_scatter_block"}


def parse_model(path):
    """{(perf collective, bytes asked): {'planned', 'ring', 'hier'} in us}."""
    model, key = {}, None
    with open(path) as f:
        for line in f:
            m = re.match(r"== (\w+) (\d+)(Ki|Mi|Gi)?", line)
            if m:
                mult = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, None: 1}[m.group(3)]
                key = (COLL[m.group(1)], int(m.group(2)) * mult)
                model[key] = {}
                continue
            m = re.match(r"(modelled|ring|hier) finish:\s+([\d.]+) us", line)
            if m and key is not None:
                model[key][{"modelled": "planned"}.get(m.group(1), m.group(1))] = float(m.group(2))
            if key is not None and line.startswith("(no plan file"):
                model[key].pop("planned", None)
    return model


def parse_measured(out):
    """[(collective, bytes, ring, hier, planned)] in us: per configuration
    the median over its rounds of each job's median call."""
    calls = {}
    for path in sorted(glob.glob(out + "/*.json")):
        m = re.match(r"(ring|hier|planned)(_\d+)?\.json$", os.path.basename(path))
        if not m:
            continue
        with open(path) as f:
            for row in json.load(f)["rows"]:
                key = (row["collective"], row["size"])
                calls.setdefault(key, {}).setdefault(m.group(1), []).append(row["median_us"])
    return [(c, b, statistics.median(v["ring"]), statistics.median(v["hier"]),
             statistics.median(v["planned"])) for (c, b), v in calls.items()]


def near(model, coll, size):
    """dfccl_perf rounds sizes down to whole elements: the model's nearest."""
    best = None
    for (c, b), v in model.items():
        if c == coll and (best is None or abs(b - size) < abs(best[0] - size)):
            best = (b, v)
    return best[1] if best else {}


def table(out):
    model = parse_model(out + "/model.txt")
    print("| collective | MiB | modelled ring / hier / planned (ms) | measured ring / hier / "
          "planned (ms) | measured / modelled: ring, hier, planned | ring / planned: "
          "modelled, measured |")
    print("|---|---|---|---|---|---|")
    for coll, size, ring, hier, planned in parse_measured(out):
        m = near(model, coll, size)
        mp = m.get("planned")
        fmt = lambda v: "-" if v is None else "%.1f" % (v / 1000)
        rat = lambda a, b: "-" if a is None or b is None else "%.2f" % (a / b)
        print("| %s | %.0f | %s / %s / %s | %.1f / %.1f / %s | %s, %s, %s | %s, %s |" % (
            coll, size / (1 << 20), fmt(m.get("ring")), fmt(m.get("hier")), fmt(mp),
            ring / 1000, hier / 1000, fmt(planned if mp is not None else None),
            rat(ring, m.get("ring")), rat(hier, m.get("hier")),
            rat(planned if mp is not None else None, mp),
            rat(m.get("ring"), mp), rat(ring, planned if mp is not None else None)))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: bed_planner_table.py OUT...")
    for out in sys.argv[1:]:
        print("\n%s\n" % out)
        table(out)
