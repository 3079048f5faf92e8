"""Kernel Tuner's strategies on a search space kevo recorded, replayed in
Kernel Tuner's simulation mode, for `kevo bench strategies --peers kernel_tuner`.

    python kernel_tuner_peer.py SPACE.json --strategies a,b,... --repeats N
                                --budget B --out CURVES.json [--time-limit S]

Run with the virtual environment `scripts/setup.sh peers` makes
(kernel_tuner from PyPI). SPACE is written by kevo:

    {"name": "...", "params": ["family", "KC", ...],      (Kernel Tuner's order)
     "values": {"family": [0, 1], "KC": [-1, 128, 256], ...},
     "points": [{"key": [0, 128, ...], "time_s": 1.2e-3},
                {"key": [1, -1, ...], "time_s": null, "error": "RuntimeFailedConfig"}, ...]}

A space of several kernel families is one Kernel Tuner space with a
`family` parameter (the family's index); a knob a family lacks takes the
value -1 there. Only recorded points are configurations: a restriction
(a python-constraint FunctionConstraint) admits exactly them, so Kernel
Tuner never asks for a point kevo did not measure, and points outside it
cost nothing, as restrictions do in Kernel Tuner. Failed points are in the
cache as Kernel Tuner's own error configurations: they cost an evaluation.

Each strategy runs --repeats times with max_fevals = --budget (unique
evaluations, as Kernel Tuner counts them: a revisit is free). Its curve is
the best time after each unique evaluation, in the order Kernel Tuner asked
for them (null before the first correct one); a run that stops before the
budget (by its own rules, or after --time-limit seconds of wall time, which
bounds strategies that loop on revisits) has a shorter curve. Each repeat
seeds Python's and NumPy's generators with its number, and scipy's Latin
hypercube (bayes_opt's initial sample and the search space's LHS sample that
diff_evo starts from, both of which Kernel Tuner leaves unseeded);
kevo starts this script with PYTHONHASHSEED=0 (Kernel Tuner iterates sets),
so that a run repeats exactly.

CURVES: {"kernel_tuner": version, "strategies": {name: {"curves": [[...], ...],
         "stopped_early": n, "timed_out": n, "errors": ["..."]}}}
"""
import argparse
import functools
import json
import os
import random
import signal
import sys
import tempfile
import time
import warnings

import numpy as np


class _TimeUp(BaseException):
    """Raised in a strategy that ran past --time-limit (not an Exception:
    Kernel Tuner's own handlers must not swallow it)."""


def write_cache(space, path):
    params = space["params"]
    tune_params = {p: list(space["values"][p]) for p in params}
    cache = {}
    for pt in space["points"]:
        key = ",".join(str(v) for v in pt["key"])
        entry = dict(zip(params, pt["key"]))
        if pt.get("time_s") is None:
            entry["time"] = pt.get("error") or "RuntimeFailedConfig"
        else:
            entry["time"] = float(pt["time_s"]) * 1e3  # Kernel Tuner's unit: ms
            entry["times"] = [entry["time"]]
        cache[key] = entry
    doc = {"device_name": "kevo-replay", "kernel_name": "kevo_space", "problem_size": [1],
           "tune_params_keys": params, "tune_params": tune_params, "objective": "time", "cache": cache}
    with open(path, "w") as f:
        json.dump(doc, f)
    return tune_params, set(cache)


class Recorded:
    """The restriction: a configuration is one kevo recorded."""

    def __init__(self, keys):
        self.keys = keys

    def __call__(self, *values):
        return ",".join(str(v) for v in values) in self.keys


_LHS = None  # scipy's LatinHypercube class, before seeding wraps it


def seed_everything(rep):
    global _LHS
    random.seed(rep)
    np.random.seed(rep)
    try:
        import scipy.stats.qmc as qmc
        import kernel_tuner.strategies.bayes_opt as bo
        if _LHS is None:
            _LHS = qmc.LatinHypercube
        try:
            _LHS(d=1, rng=0)
            seeded = functools.partial(_LHS, rng=rep)
        except TypeError:
            seeded = functools.partial(_LHS, seed=rep)
        # bayes_opt imported the class at load; the search space's LHS sample
        # (diff_evo's first population, constraint-aware strategies) imports
        # it from scipy when it draws: both get the seeded one.
        bo.LatinHypercube = seeded
        qmc.LatinHypercube = seeded
    except ImportError:
        pass


def run_strategy(kernel_tuner, strategy, tune_params, keys, cache_path, budget, time_limit, seen):
    """One run; `seen` gets every result the simulation runner returned, in order."""
    from constraint import FunctionConstraint

    def on_alarm(_signum, _frame):
        raise _TimeUp()

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, time_limit)
    timed_out = False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kernel_tuner.tune_kernel("kevo_space", "simulated", [1], [], tune_params,
                                     restrictions=[FunctionConstraint(Recorded(keys))], cache=cache_path,
                                     simulation_mode=True, strategy=strategy,
                                     strategy_options={"max_fevals": budget}, quiet=True, verbose=False)
    except _TimeUp:
        timed_out = True
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return timed_out


def curve_of(results, params, budget):
    """Best time (s) after each unique evaluation, null before the first correct one."""
    curve, best, visited = [], None, set()
    for r in results:
        if not r:
            continue
        key = ",".join(str(r[p]) for p in params)
        if key in visited:
            continue
        visited.add(key)
        t = r.get("time")
        if isinstance(t, (int, float)) and not isinstance(t, bool) and "__error__" not in r:
            best = t / 1e3 if best is None else min(best, t / 1e3)
        curve.append(best)
        if len(curve) == budget:
            break
    return curve


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("space")
    ap.add_argument("--strategies", required=True)
    ap.add_argument("--repeats", type=int, default=50)
    ap.add_argument("--budget", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--time-limit", type=float, default=60.0)
    a = ap.parse_args(argv[1:])
    import kernel_tuner
    from kernel_tuner.runners import simulation

    space = json.load(open(a.space))
    params = space["params"]
    seen = []
    original_run = simulation.SimulationRunner.run

    def recording_run(self, parameter_space, tuning_options):
        results = original_run(self, parameter_space, tuning_options)
        seen.extend(results)
        return results

    simulation.SimulationRunner.run = recording_run
    out = {"kernel_tuner": getattr(kernel_tuner, "__version__", "?"), "strategies": {}}
    with tempfile.TemporaryDirectory() as tmp:
        cache_path = os.path.join(tmp, "cache.json")
        tune_params, keys = write_cache(space, cache_path)
        for strategy in [s for s in a.strategies.split(",") if s]:
            entry = {"curves": [], "stopped_early": 0, "timed_out": 0, "errors": [], "wall_s": 0.0}
            t0 = time.monotonic()
            for rep in range(1, a.repeats + 1):
                seed_everything(rep)
                del seen[:]
                try:
                    timed_out = run_strategy(kernel_tuner, strategy, tune_params, keys, cache_path, a.budget,
                                             a.time_limit, seen)
                except Exception as e:  # a strategy that cannot run on this space
                    entry["errors"].append("%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else ""))
                    break
                curve = curve_of(seen, params, a.budget)
                entry["timed_out"] += int(timed_out)
                entry["stopped_early"] += int(len(curve) < a.budget)
                entry["curves"].append(curve)
            entry["wall_s"] = time.monotonic() - t0
            out["strategies"][strategy] = entry
            print("kernel_tuner_peer: %s: %d runs, %d stopped early, %d timed out%s" % (
                strategy, len(entry["curves"]), entry["stopped_early"], entry["timed_out"],
                "; " + entry["errors"][0] if entry["errors"] else ""), file=sys.stderr, flush=True)
    with open(a.out, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main(sys.argv)
