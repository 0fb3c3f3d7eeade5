#!/usr/bin/env python3
"""Report of bench/stepchange.sh: each phase of the adaptive capacity's runs against the best
static capacity's runs over the same seconds of the same schedule.

    bench/stepchange_report.py TRACE PHASE_SECONDS [CLASSES]

TRACE is the script's trace.csv: a row a second of every run (policy auto or a static
capacity, round N). CLASSES, its classes.csv, has the bookstore's completed interactions of
each class in each second of the same runs. Prints the markdown that goes into the result's
README.
"""
import csv
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
    for r in csv.DictReader(open(path)):
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
    for r in csv.DictReader(open(trace)):
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
    """Prints each phase's throughput at the benchmark's median processor speed: a run's
    units/s times that speed over the speed its primary's processor had over the same
    seconds. Nothing when the trace has no speeds."""
    every = [f["speed"] for runs in got.values() for f in runs.values()]
    if not every or min(every) <= 0:
        return
    ref = statistics.median(every)
    norm = {k: {r: f["rate"] * ref / f["speed"] for r, f in runs.items()} for k, runs in got.items()}

    def med(policy, name):
        return statistics.median(norm[(policy, name)].values())

    def spread(values):
        """The ratio of the highest to the lowest."""
        return max(values) / min(values) if min(values) > 0 else float("inf")

    print()
    print(f"The same at the benchmark's median processor speed ({ref:.0f} iterations of cpuspeed's loop a"
          " microsecond): each run's units/s times that speed over the speed the primary's processor had over"
          " the same seconds. The last column is the widest spread, highest over lowest, of one static"
          " capacity's rounds in the phase, as measured and at the median speed.")
    print()
    print("| phase | auto units/s | best static | its units/s | auto / best | within rounds | the primary's speed, auto / best | static spread, measured / at the median speed |")
    print("|---|---:|---|---:|---:|---|---|---:|")
    for _, name in PHASES:
        best = max(statics, key=lambda c: med(c, name))
        auto = norm[("auto", name)]
        within = ", ".join(f"{auto[r] / norm[(best, name)][r]:.2f}" if r in norm[(best, name)] else "—" for r in rounds)
        sp = lambda policy: statistics.median(f["speed"] for f in got[(policy, name)].values())
        raw = max(spread([f["rate"] for f in got[(c, name)].values()]) for c in statics)
        at = max(spread(list(norm[(c, name)].values())) for c in statics)
        print(f"| {name} | {med('auto', name):.1f} ({', '.join(f'{auto[r]:.0f}' for r in rounds)}) | {best} "
              f"| {med(best, name):.1f} | **{med('auto', name) / med(best, name):.2f}** | {within} "
              f"| {sp('auto'):.0f} / {sp(best):.0f} | {raw:.2f} / {at:.2f} |")


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
