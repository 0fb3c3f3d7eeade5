#!/usr/bin/env python3
"""A toy of the adaptive capacity's settled loop whose stretch answers late.

The stretch reads target * (c / knee)**e, measured lag windows late, with 15% noise (in
logs). Each window the capacity moves `gain` of the way (in logs) towards where the stretch
would read the target, not at all within 15% of it, at most by half; with damping, a move
against the one before halves the gain (up to 3 times) and each run of 3 more moves the
same way doubles it back once. Prints, for lags of 1, 3 and 5 windows, the capacity's range
over windows 150-400 from a start at 24 (knee 80), and the windows a halved knee (80 to 40)
takes to stay within 1.5x of it (200: never), for seeds 1-5.

Run: python3 toy.py
"""
import math
import random


def run(lag, gain, damped, e=1.0, seed=1, change=None, start=24.0, steps=400):
    random.seed(seed)
    c = start
    hist = [c] * (lag + 1)
    out = []
    damp, last, same = 0, 0, 0
    for t in range(steps):
        knee = 80 if change is None or t < change else 40
        stretch = 2.5 * (hist[-1 - lag] / knee) ** e * math.exp(random.gauss(0, 0.15))
        r = 2.5 / stretch
        d = 0 if abs(math.log(r)) < math.log(1.15) else (1 if r > 1 else -1)
        m = r ** (gain / 2 ** damp)
        if d == 1:
            c *= 1 + min(m - 1, 0.5)
        elif d == -1:
            c /= 1 + min(1 / m - 1, 0.5)
        if damped and d:
            if last and d != last:
                damp, same = min(damp + 1, 3), 0
            else:
                same += 1
                if same >= 3 and damp > 0:
                    damp, same = damp - 1, 0
            last = d
        hist.append(c)
        out.append(c)
    if change:
        off = [i for i, x in enumerate(out) if i >= change and not 40 / 1.5 <= x <= 60]
        return max(off + [change - 1]) - change + 1
    tail = out[150:]
    return round(min(tail)), round(max(tail))


for name, gain, damped in (("half the way", 0.5, False), ("a quarter", 0.25, False), ("a quarter, damped", 0.25, True)):
    for lag in (1, 3, 5):
        settle = [run(lag, gain, damped, seed=s, change=200, start=80) for s in range(1, 6)]
        print(f"{name:18} lag {lag}: range {run(lag, gain, damped)}, halved knee settles in {settle} windows")
