#!/usr/bin/env python3
"""Report of bench/stepchange.sh: each phase of the adaptive capacity's runs against the best
static capacity's runs over the same seconds of the same schedule.

    bench/stepchange_report.py TRACE PHASE_SECONDS [CLASSES]

TRACE is the script's trace.csv: a row a second of every run (policy auto or a static
capacity, round N). CLASSES, its classes.csv, has the bookstore's completed interactions of
each class in each second of the same runs. Prints the markdown that goes into the result's
README. Runs of the same schedule and settings may be pooled: TRACE and CLASSES then list
their files, comma separated and in the same order, and each file's rounds are numbered
after those of the files before it.
"""
import csv
import math
import statistics
import sys

PHASES = [(1, "full"), (2, "half"), (3, "full again")]
# BANDS: the capacity has settled from the second after which it stays within each factor of
# its median over the phase's last half. 1.5 is the controller's own step once settled, so a
# single move reads as unsettled in it; 2 tells a capacity still travelling from one that
# wanders by a step around its level.
BANDS = (1.5, 2)
# HEAVY: the bookstore's heavy interactions; every other class is a short one.
HEAVY = {"best_sellers", "admin_confirm"}


def pooled(paths):
    """The rows of the CSVs in paths (comma separated), each file's rounds numbered after the
    highest round of the files before it."""
    after = 0
    for path in paths.split(","):
        last = 0
        for r in csv.DictReader(open(path)):
            last = max(last, int(r["round"]))
            r["round"] = str(int(r["round"]) + after)
            yield r
        after += last


def measure(rows, phase, p):
    """A phase's figures over its last half: units/s, the capacity's median, when it
    settled, the primary's processors used, units refused a second."""
    a, b = p * phase, (p + 1) * phase - 1
    h = a + phase // 2
    cap = [float(r["capacity_s"]) for r in rows]
    med = statistics.median(cap[h:b + 1])
    settled = []
    for band in BANDS:
        at = a
        for s in range(b, a - 1, -1):
            if cap[s] > band * med or cap[s] < med / band:
                at = s + 1
                break
        settled.append(at - a)
    span = b - h

    def rate(col, cast):
        return (cast(rows[b][col]) - cast(rows[h][col])) / span

    # The primary's processor speed over the same seconds (cpuspeed's loop; 0: not read).
    speeds = [float(r.get("cpu_speed") or 0) for r in rows[h:b + 1]]
    speeds = [v for v in speeds if v > 0]
    return {
        "rate": rate("units", int),
        "cap": med,
        "settled": settled,
        "busy": rate("db_cpu_s", float),
        "refused": rate("refused", int),
        "speed": statistics.mean(speeds) if speeds else 0,
    }


def short_means(path, phase):
    """The short interactions' mean response time (ms) over each phase's last half, by
    (policy, phase name) and round, from classes.csv."""
    sums = {}  # (policy, round, phase number): [completed, ms summed]
    for r in pooled(path):
        if r["class"] in HEAVY:
            continue
        s = int(r["second"])
        p = s // phase
        if s < p * phase + phase // 2:
            continue  # the phase's first half
        acc = sums.setdefault((r["policy"], r["round"], p), [0, 0.0])
        n = int(r["completed"])
        acc[0] += n
        acc[1] += n * float(r["mean_ms"])
    names = dict(PHASES)
    out = {}
    for (policy, rnd, p), (n, total) in sums.items():
        if p in names and n > 0:
            out.setdefault((policy, names[p]), {})[rnd] = total / n
    return out


def seconds(capacity):
    """A static capacity's seconds: 25ms is 0.025, 2s is 2."""
    if capacity.endswith("ms"):
        return float(capacity[:-2]) / 1000
    return float(capacity[:-1])


def main():
    trace, phase = sys.argv[1], int(sys.argv[2])
    runs = {}  # (policy, round): rows in order
    for r in pooled(trace):
        runs.setdefault((r["policy"], r["round"]), []).append(r)
    runs = {k: v for k, v in runs.items() if len(v) >= 4 * phase}  # whole runs only
    got = {}  # (policy, phase name): {round: figures}
    for (policy, rnd), rows in runs.items():
        for p, name in PHASES:
            got.setdefault((policy, name), {})[rnd] = measure(rows, phase, p)
    statics = sorted({k[0] for k in runs if k[0] != "auto"}, key=seconds)
    if ("auto", "full") not in got or not statics:
        sys.exit("stepchange_report: the trace needs whole runs of auto and of a static capacity")

    def med(policy, name, key="rate"):
        return statistics.median(f[key] for f in got[(policy, name)].values())

    rounds = sorted(got[("auto", "full")], key=int)
    # The best static capacity of each phase: the highest median throughput.
    best_of = {name: max(statics, key=lambda c: med(c, name)) for _, name in PHASES}
    print("| phase | state | auto units/s (last half) | auto capacity (median, last half) | "
          + " | ".join(f"settled after, within {b:g}x" for b in BANDS) + " | best static | its units/s | auto / best | within rounds | database busy, auto / best | refused/s, auto / best |")
    print("|---|---|---:|---:|" + "---:|" * len(BANDS) + "---|---:|---:|---|---|---|")
    for p, name in PHASES:
        auto = got[("auto", name)]
        best = best_of[name]
        br = med(best, name)
        def each(key, fmt):
            return ", ".join(format(auto[r][key], fmt) for r in rounds)

        within = ", ".join(
            f"{auto[r]['rate'] / got[(best, name)][r]['rate']:.2f}" if r in got[(best, name)] else "—" for r in rounds)
        rate = med("auto", name)
        caps = ", ".join(f"{auto[r]['cap'] * 1000:.0f}" for r in rounds)
        settled = " | ".join(", ".join(str(auto[r]["settled"][i]) for r in rounds) + " s" for i in range(len(BANDS)))
        print(f"| {p} | {name} | {rate:.1f} ({each('rate', '.0f')}) | {caps} ms | {settled} "
              f"| {best} | {br:.1f} | **{rate / br:.2f}** | {within} "
              f"| {each('busy', '.2f')} / {med(best, name, 'busy'):.2f} "
              f"| {each('refused', '.1f')} / {med(best, name, 'refused'):.1f} |")
    print()
    print(f"{len(rounds)} round(s). A phase's units/s is the median over the rounds, each round's in brackets;"
          " auto / best divides the adaptive capacity's median by the best static capacity's (the highest median"
          " of the phase), and within rounds divides each round's adaptive run by that capacity's run of the same round.")
    print("Database busy is the processors the primary's process used, over the same seconds; refused/s the units"
          " the proxy refused a second (queue timeout, mostly), which did no work and count for nothing.")
    print()
    print("Static capacities, units/s over each phase's last half, median of the rounds (lowest-highest):")
    print()
    print("| phase | " + " | ".join(statics) + " |")
    print("|---|" + "---:|" * len(statics))
    for p, name in PHASES:
        cells = []
        for c in statics:
            rates = [f["rate"] for f in got[(c, name)].values()]
            spread = f" ({min(rates):.0f}-{max(rates):.0f})" if len(rates) > 1 else ""
            cells.append(f"{statistics.median(rates):.0f}{spread}")
        print(f"| {name} | " + " | ".join(cells) + " |")
    speed_table(got, statics, rounds)
    if len(sys.argv) > 3:
        short_table(short_means(sys.argv[3], phase), statics, rounds, best_of)


def speed_table(got, statics, rounds):
    """Prints each phase's throughput at one processor speed. On a shared VM the primary's
    throughput moves with its processor's speed, and far more than in proportion (a fixed
    loop's speed stands for the contention of other tenants, which slows the database's
    memory-bound work more than the loop's arithmetic): within each phase, log units/s is
    fitted as a level of its own for each policy plus a slope, common to all, times log
    speed, over every run (least squares within the policies), and each policy's level is
    read at the benchmark's median speed. Nothing when the trace has no speeds."""
    every = [f["speed"] for runs in got.values() for f in runs.values()]
    if not every or min(every) <= 0:
        return
    ref = math.log(statistics.median(every))
    print()
    print("The same at one processor speed: log units/s fitted, within each phase, as each policy's own level plus"
          " a slope common to all times the log of the speed cpuspeed read over the same seconds; the levels are"
          f" read at the benchmark's median speed ({math.exp(ref):.0f} iterations of cpuspeed's loop a microsecond)."
          " The slope is how many times faster than the loop the throughput moved (1: in proportion). The spread is"
          " the standard deviation of a run's log units/s about its policy's mean, as measured and at one speed.")
    print()
    print("| phase | slope | spread, measured / at one speed | auto units/s | best static | its units/s | auto / best | each round, at one speed |")
    print("|---|---:|---:|---:|---|---:|---:|---|")
    for _, name in PHASES:
        pts = {p: [(math.log(f["speed"]), math.log(f["rate"]), r) for r, f in got[(p, name)].items() if f["rate"] > 0]
               for p in ["auto"] + statics}
        pts = {p: v for p, v in pts.items() if v}
        means = {p: (statistics.mean(x for x, _, _ in v), statistics.mean(y for _, y, _ in v)) for p, v in pts.items()}
        num = sum((x - means[p][0]) * (y - means[p][1]) for p, v in pts.items() for x, y, _ in v)
        den = sum((x - means[p][0]) ** 2 for p, v in pts.items() for x, _, _ in v)
        n = sum(len(v) for v in pts.values())
        if den <= 0 or n <= len(pts) + 1 or "auto" not in pts:
            continue
        slope = num / den
        raw = math.sqrt(sum((y - means[p][1]) ** 2 for p, v in pts.items() for _, y, _ in v) / (n - len(pts)))
        fit = math.sqrt(sum((y - means[p][1] - slope * (x - means[p][0])) ** 2
                            for p, v in pts.items() for x, y, _ in v) / (n - len(pts) - 1))
        at = {p: math.exp(my + slope * (ref - mx)) for p, (mx, my) in means.items()}
        best = max((p for p in pts if p != "auto"), key=lambda p: at[p])
        one = {p: {r: math.exp(y + slope * (ref - x)) for x, y, r in v} for p, v in pts.items()}
        each = ", ".join(f"{one['auto'][r] / one[best][r]:.2f}" if r in one[best] and r in one["auto"] else "—"
                         for r in rounds)
        print(f"| {name} | {slope:.1f} | {raw:.2f} / {fit:.2f} | {at['auto']:.1f} | {best} | {at[best]:.1f} "
              f"| **{at['auto'] / at[best]:.2f}** | {each} |")


def short_table(short, statics, rounds, best_of):
    """Prints the short interactions' means by phase, auto's against the best static
    capacity's (by throughput) and against the static capacity with the lowest."""
    print()
    print("The short interactions (every class but Best Sellers and Admin Confirm), mean response time over each"
          " phase's last half in ms, median of the rounds (auto's rounds in brackets):")
    print()
    print("| phase | auto | " + " | ".join(statics) + " | auto / best static's | auto / the lowest static's |")
    print("|---|---:|" + "---:|" * len(statics) + "---:|---:|")
    for _, name in PHASES:
        def m(policy):
            got = short.get((policy, name), {})
            return statistics.median(got.values()) if got else None

        auto = m("auto")
        if auto is None:
            continue
        each = ", ".join(f"{short[('auto', name)][r]:.0f}" for r in rounds if r in short[("auto", name)])
        cells = [m(c) for c in statics]
        best = m(best_of[name])
        low = min(c for c in cells if c is not None)
        text = " | ".join("—" if c is None else f"{c:.1f}" for c in cells)
        ratio = f"{auto / best:.2f}" if best else "—"
        print(f"| {name} | {auto:.1f} ({each}) | {text} | {ratio} | {auto / low:.2f} |")


if __name__ == "__main__":
    main()
