#!/usr/bin/env python3
"""Prints the GPU benchmark's table from the JSON files bench/gpu_lanes.sh
left in a folder: per task, the median over rounds of kevo's best kernel and
of each peer, the ratios peer / kevo (above 1: kevo is faster), and kevo's
bandwidth or FLOP rate against the measured roof.

When torch_peers.py also timed kevo's kernel (--kevo-dir: peer "kevo"), the
ratios are taken from that one harness, call for call alike; kevo's own
measurement (kevo eval, kevo-cuda-runner) is shown beside it. When it also
timed kevo's CUDA kernel for the task (--kevo-cuda-dir: peer "kevo_cuda"),
two last columns put kevo's two targets side by side.

The last column is the verdict of bench/peers_verdict.py (1%) against each
peer, from the rounds of that one harness (each peers file one call): kevo
faster, slower or level only where every round agrees, "(one call)" when
there was one, and "—" where the harness did not time kevo's kernel (a ratio
against kevo's own runner compares two harnesses and gets no verdict).

    bench/gpu_table.py OUT_DIR
"""
import glob
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import peers_verdict  # noqa: E402


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def peer_docs(out, task):
    """The peers files that timed `task`: its per-round files (TASK.peers.R.json),
    or the files that ran every task (all.peers[.R].json)."""
    docs = [load(p) for p in sorted(glob.glob(os.path.join(out, f"{task}.peers.*.json")))]
    if not any(docs):
        docs = [load(p) for p in sorted(glob.glob(os.path.join(out, "all.peers*.json")))]
    return [d for d in docs if d]


def verdict(docs, task):
    """peers_verdict's word for kevo's kernel in the peers' harness against each peer."""
    rows = {}
    for d in docs:
        peers_verdict.add_call(rows, d, "peers file", on_error=lambda msg: None)
    mine = {key: calls for key, calls in rows.items() if key[0] == task}
    flushes = {key[1] for key in mine}
    kernels = {key[2] for key in mine}
    words = []
    for r in peers_verdict.verdicts(mine, 0.01, sides=("kevo",)):
        if "ratios" in r:
            at = f" [{r['flush']} flush]" if len(flushes) > 1 else ""
            if len(kernels) > 1:   # the peers files timed more than one kevo kernel: never pooled
                at += f" [kernel {(r.get('kernel') or '?')[:12]}]"
            words.append(f"{r['peer']}{at}: {r['verdict']}")
    return "; ".join(words) or "—"


def peer_medians(docs, task):
    """Each peer's medians for `task` over its peers files (peer_docs)."""
    found = {"eager": [], "compile": [], "kevo": [], "kevo_cuda": []}
    for j in docs:
        for t in j.get("tasks", []):
            if t.get("name") != task:
                continue
            peers = t.get("peers", {})
            for name, values in found.items():
                if peers.get(name, {}).get("median_us"):
                    values.append(peers[name]["median_us"])
    return found


def main(out):
    names = sorted({os.path.basename(p).split(".")[0]
                    for pat in ("*.kevo.*.json", "*.run.json")
                    for p in glob.glob(os.path.join(out, pat))})
    rows = []
    for task in names:
        kevo = []
        frac, bound, status = [], "", ""
        for p in sorted(glob.glob(os.path.join(out, f"{task}.kevo.*.json"))):
            j = load(p)
            if not j:
                continue
            r = j.get("result", {})
            status = r.get("status", "?")
            if r.get("timing"):
                kevo.append(r["timing"]["median_s"] * 1e6)
            d = r.get("diagnosis") or {}
            if d:
                frac.append(d.get("roof_fraction", 0))
                bound = d.get("bound", "")
        run = load(os.path.join(out, f"{task}.run.json")) or {}
        best = run.get("best") or {}
        if not kevo and best.get("median_s"):
            # The search's best as re-measured at its end (confirmation).
            kevo.append(best["median_s"] * 1e6)
            frac.append(best.get("roof_fraction", 0))
            bound = best.get("bound", "")
            status = "ok"
        docs = peer_docs(out, task)
        peers = peer_medians(docs, task)
        med = lambda v: statistics.median(v) if v else None
        k, e, c, kp = med(kevo), med(peers["eager"]), med(peers["compile"]), med(peers["kevo"])
        found = f"{best.get('family', '?')} after {run.get('evaluations', '?')} evaluations" if best else "—"
        rows.append((task, status, k, kp, e, c, med(frac), bound, len(kevo), found,
                     med(peers["kevo_cuda"]), verdict(docs, task)))
    cuda = any(r[10] for r in rows)
    print("| task | kevo best, same harness as the peers (us) | kevo best, kevo's runner (us) "
          "| eager (us) | torch.compile (us) | eager / kevo | compile / kevo "
          "| kevo vs measured roof | kevo timings | kevo's best |"
          + (" kevo CUDA best, same harness (us) | kevo CUDA / kevo |" if cuda else "")
          + " verdict, same harness (bench/peers_verdict.py, 1%) |")
    print("|---|---|---|---|---|---|---|---|---|---|" + ("---|---|" if cuda else "") + "---|")
    f = lambda v: f"{v:.1f}" if v else "—"
    for task, status, k, kp, e, c, fr, bound, n, found, kc, word in rows:
        base = kp or k  # the ratios: one harness for both when it timed kevo's kernel too
        ratio = lambda p: f"**{p / base:.2f}x**" if p and base else "—"
        roof = f"{100 * fr:.0f}% of {'copy bandwidth' if bound == 'memory' else 'bf16 rate'}" if fr else "—"
        print(f"| {task}{'' if status in ('ok', '') else f' ({status})'} | {f(kp)} | {f(k)} | {f(e)} "
              f"| {f(c)} | {ratio(e)} | {ratio(c)} | {roof} | {n} | {found} |"
              + (f" {f(kc)} | {ratio(kc)} |" if cuda else "") + f" {word} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
