#!/usr/bin/env python3
"""Verdicts from one or more calls of the peers' harness: is kevo's kernel
faster than each peer, and does that hold when the same thing is timed again?

    bench/peers_verdict.py [--threshold PCT] [--markdown] CALL.json [CALL.json ...]

Each CALL.json is one run of bench/peers/torch_peers.py --json (one device
call). Rows are a task at one L2 flush and one kevo kernel: calls that
flushed differently are never pooled, nor calls that timed different kevo
kernels (the harness records the SHA-256 of the kernel's source; a row names
the first 12 hex digits of it as "kernel ..."; files from before it did are
pooled by task and flush alone). For kevo's kernel (in each call its peer
"kevo_cuda", else "kevo") against each other timed peer (eager, compile),
every round of the peer is paired with every round of kevo's kernel *of the
same call* (the harness alternates them), and the ratio peer / kevo (above 1:
kevo faster) of each pair makes the range. The verdict:

  kevo faster   every pairing, in every call, above 1 + PCT/100
  kevo slower   every pairing below 1 - PCT/100
  level         every pairing within 1 +- PCT/100
  inconclusive  the range straddles a bound: the noise is larger than the effect

This is the rule `kevo compare` applies to two exports of kevo's own runs
(a range over every pairing of rounds, judged against a threshold), here for
the peers' harness, whose JSON kevo does not read.
From one call a verdict is marked "(one call)": it has not been repeated.
The yardsticks (read, copy) get no verdict: "floor / kevo" is the
yardstick's time over kevo's, per call (median of round medians). A kernel
that takes less time than the read yardstick (beyond PCT) beat a stream that
only reads the same bytes: its verdict says so, for the timing let it defer
work past the end event or the yardstick missed a faster stream.
Exit status: 0, or 2 for bad input (a file that is not the harness's JSON).
"""
import argparse
import json
import statistics
import sys

KEVO_SIDES = ("kevo_cuda", "kevo")
YARDSTICKS = ("read", "copy")


def fail(msg):
    print(f"peers_verdict: {msg}", file=sys.stderr)
    sys.exit(2)


def round_medians(peer):
    """The peer's round medians (µs), or [] when it did not run."""
    if not isinstance(peer, dict) or peer.get("status", "ok") != "ok":
        return []
    if peer.get("round_medians_us"):
        return [float(x) for x in peer["round_medians_us"]]
    rounds = [r.get("median_us") for r in peer.get("rounds", []) if isinstance(r, dict)]
    rounds = [float(x) for x in rounds if x]
    if rounds:
        return rounds
    return [float(peer["median_us"])] if peer.get("median_us") else []


def kernel_of(peers, sides=KEVO_SIDES):
    """The SHA-256 of the source of the kevo kernel a call timed (the first of
    `sides` it timed), or None where the file does not say."""
    for side in sides:
        p = peers.get(side)
        if isinstance(p, dict) and round_medians(p):
            sha = p.get("source_sha256")
            return sha if isinstance(sha, str) and sha else None
    return None


def add_call(rows, doc, where, on_error=fail):
    """Adds one call (a parsed torch_peers.py --json document) to rows:
    {(task, flush, kernel): [{peer: [round medians]} per call]}, in first-seen
    order; kernel is kernel_of the call's kevo peer (None when unknown)."""
    tasks = doc.get("tasks") if isinstance(doc, dict) else None
    if not isinstance(tasks, list):
        return on_error(f"{where}: not the JSON of torch_peers.py --json (no list of tasks)")
    for t in tasks:
        if not isinstance(t, dict) or "name" not in t:
            return on_error(f"{where}: a task without a name")
        if not isinstance(t.get("peers", {}), dict):
            return on_error(f"{where}: task {t['name']}: 'peers' is not an object")
    for t in tasks:
        raw = t.get("peers") or {}
        peers = {name: round_medians(p) for name, p in raw.items()}
        rows.setdefault((t["name"], t.get("flush", "?"), kernel_of(raw)), []).append(peers)
    return rows


def load_calls(paths):
    rows = {}
    for path in paths:
        try:
            with open(path) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            fail(f"{path}: not the JSON of torch_peers.py --json ({e})")
        add_call(rows, doc, path)
    return rows


def judge(lo, hi, threshold):
    if lo > 1 + threshold:
        return "kevo faster"
    if hi < 1 - threshold:
        return "kevo slower"
    if lo >= 1 - threshold and hi <= 1 + threshold:
        return "level"
    return "inconclusive"


def verdicts(rows, threshold, sides=KEVO_SIDES):
    """One dict per (task, flush, peer): per-call ratios, pooled range, verdict,
    for the first of `sides` (kevo's kernel as a peer) that was timed."""
    out = []
    for (task, flush, kernel), calls in rows.items():
        # each call's own kevo side (kevo_cuda, else kevo): a call that timed
        # only the other one is judged too, not dropped
        mine = [next((s for s in sides if c.get(s)), None) for c in calls]
        side = "/".join(dict.fromkeys(s for s in mine if s))
        if not side:
            out.append({"task": task, "flush": flush, "peer": "-", "verdict": "no kevo kernel timed"})
            continue
        base = {"task": task, "flush": flush, "kevo": side, "kernel": kernel}
        floor = []
        for c, s in zip(calls, mine):
            k = c.get(s) if s else None
            for y in YARDSTICKS:
                if k and c.get(y):
                    floor.append((y, statistics.median(c[y]) / statistics.median(k)))
        names = sorted({p for c in calls for p in c if p not in KEVO_SIDES + YARDSTICKS})
        for peer in names:
            per_call, pairs = [], []
            for c, s in zip(calls, mine):
                k, p = (c.get(s) if s else None), c.get(peer)
                if not k or not p:
                    continue
                per_call.append(statistics.median(p) / statistics.median(k))
                pairs += [pr / kr for pr in p for kr in k]
            if not pairs:
                out.append(dict(base, peer=peer, verdict="not timed beside kevo's kernel"))
                continue
            v = judge(min(pairs), max(pairs), threshold)
            if len(per_call) < 2:
                v += " (one call)"
            if any(y == "read" and r > 1 + threshold for y, r in floor):
                v += "; UNDER THE READ FLOOR: suspect the timing (README, timing.l2)"
            out.append(dict(base, peer=peer, calls=len(per_call), ratios=per_call,
                            range=[min(pairs), max(pairs)], verdict=v,
                            of_floor=[(y, r) for y, r in floor]))
    return out


def main(argv):
    ap = argparse.ArgumentParser(description="\n\n".join(__doc__.split("\n\n", 2)[::2]),
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 usage="%(prog)s [--threshold PCT] [--markdown] CALL.json [CALL.json ...]")
    ap.add_argument("calls", nargs="+", metavar="CALL.json")
    ap.add_argument("--threshold", type=float, default=1.0, metavar="PCT",
                    help="the smallest difference that counts, in percent (default 1)")
    ap.add_argument("--markdown", action="store_true", help="a Markdown table instead of lines")
    opts = ap.parse_args(argv)
    if not 0 <= opts.threshold < 100:
        ap.error(f"--threshold expects a percentage in [0, 100), got {opts.threshold}")
    rows = load_calls(opts.calls)
    if not rows:
        fail("no tasks in the files given")
    res = verdicts(rows, opts.threshold / 100)
    if opts.markdown:
        print("| task | flush | peer / kevo, per call | range over round pairs | verdict | floor / kevo |")
        print("|---|---|---|---|---|---|")
    for r in res:
        ratios = " · ".join(f"{x:.3f}" for x in r.get("ratios", [])) or "—"
        rng = f"{r['range'][0]:.3f}–{r['range'][1]:.3f}" if "range" in r else "—"
        floor = ", ".join(f"{y} {100 * x:.0f}%" for y, x in r.get("of_floor", [])) or "—"
        kernel = f" (kernel {r['kernel'][:12]})" if r.get("kernel") else ""
        if opts.markdown:
            print(f"| {r['task']}{kernel} | {r['flush']} | {r['peer']}: {ratios} | {rng} | {r['verdict']} | {floor} |")
        else:
            print(f"{r['task']} [{r['flush']} flush] {r['peer']} / {r.get('kevo', 'kevo')}{kernel}: "
                  f"{ratios} (pairs {rng}): {r['verdict']}; floor / kevo: {floor}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
