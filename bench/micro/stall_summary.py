#!/usr/bin/env python3
"""Where a kernel's warps wait, from ncu's per-instruction stall samples.

A diagnostic for the CPU machine: reads the source page ncu writes for a
report taken with --section SourceCounters

  ncu --import R.ncu-rep --page source --print-source sass --csv > source.csv

(one block per kernel profiled, each opened by a "Kernel Name" row) and
prints, for each kernel, its warp stall samples by kind of instruction and
the instructions that hold the most of them, each with its leading stall
reasons. Where two kernels do the same work (kevo's decode GEMM and cuBLAS's
at one shape) the kinds side by side say which part of the kernel takes the
samples one of them has more of: the wgmma issue (mma), the waits on the
ring's mbarriers (mbarrier), the TMA instructions (tma), the epilogue's stores
(store) and so on. The branch that loops back on an mbarrier's try-wait
(SYNCS.PHASECHK ... P1, then @!P1 BRA) holds that wait's samples (long_sb,
waiting for the try-wait's predicate), so it counts as mbarrier, not
control. A sample is a warp seen in a state at a moment, so
shares compare kernels, not times: a kernel with more warps has more samples
in the same time.

Usage:
  stall_summary.py SOURCE.csv[.gz]... [--top 12] [--json OUT]

Exit status: 0; 1 when a file holds no kernel's samples; 2 for bad input.
"""
from __future__ import annotations

import argparse
import csv
import gzip
import io
import json
import re
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"
# Each instruction's kind, by its opcode (the text before the first '.').
KINDS = {
    "mma": ("HGMMA", "WARPGROUP", "HMMA", "IMMA"),
    "mbarrier": ("SYNCS",),
    "tma": ("UTMALDG", "UTMASTG", "UBLKCP", "UTMACMDFLUSH", "UTMACCTL", "UTMAPF", "UTMAREDG", "UBLKRED",
            "UBLKPF"),
    "store": ("STG", "STS", "STSM", "ST", "STL", "RED", "REDG", "ATOM", "ATOMG", "ATOMS"),
    "load": ("LDG", "LDS", "LDSM", "LD", "LDL", "LDGSTS", "LDC", "ULDC"),
    "sync": ("BAR", "WARPSYNC", "NANOSLEEP", "DEPBAR", "MEMBAR", "FENCE", "ERRBAR", "CCTL", "CCTLL",
             "USETMAXREG", "ELECT", "VOTEU", "VOTE"),
    "control": ("BRA", "BRX", "JMP", "BSSY", "BSYNC", "EXIT", "RET", "CALL", "YIELD", "BREAK", "NOP"),
}
KIND_OF = {op: kind for kind, ops in KINDS.items() for op in ops}
ORDER = list(KINDS) + ["other"]
PREDICATE = re.compile(r"^@!?U?P[0-9T]+\s+")


class BadInput(Exception):
    pass


def opcode(source):
    """'@!P0 HGMMA.64x64x16.F32.BF16 gdesc[UR4], ...' -> 'HGMMA'."""
    text = PREDICATE.sub("", source.strip())
    return text.split(None, 1)[0].split(".", 1)[0] if text else ""


PHASECHK = re.compile(r"SYNCS\.PHASECHK\S*\s+(U?P[0-9]+)")
BRANCH_ON = re.compile(r"^@!?(U?P[0-9]+)\s+BRA\b")


def kind_of(source, before=""):
    """The kind of an instruction; `before`, the instruction ahead of it, makes
    a branch on a try-wait's predicate an mbarrier wait."""
    b = BRANCH_ON.match(source.strip())
    if b:
        c = PHASECHK.search(before)
        if c and c.group(1) == b.group(1):
            return "mbarrier"
    return KIND_OF.get(opcode(source), "other")


def read_rows(path):
    opener = gzip.open if path.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8", newline="") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError, EOFError) as e:
        raise BadInput(f"{path}: {e}") from e
    return list(csv.reader(io.StringIO(text)))


def kernels(path):
    """[{name, instructions: [{address, source, samples, stalls: {reason: n}}]}] of one
    source-page CSV, one entry per "Kernel Name" block."""
    out, header, cur = [], None, None
    for row in read_rows(path):
        if not row:
            continue
        if row[0] == "Kernel Name":
            cur = {"name": row[1] if len(row) > 1 else "?", "instructions": []}
            out.append(cur)
            header = None
            continue
        if cur is None:
            continue  # ncu's own lines before the first kernel
        if header is None:
            if "Source" in row and SAMPLES in row:
                header = {name: i for i, name in enumerate(row)}
                reasons = [(name, i) for name, i in header.items()
                           if name.startswith("stall_") and not name.endswith("(Not Issued)")]
            continue
        if len(row) < len(header):
            continue

        def num(i):
            try:
                return float(row[i])
            except ValueError:
                return 0.0
        stalls = {name[len("stall_"):]: num(i) for name, i in reasons if num(i) > 0}
        cur["instructions"].append({"address": row[header["Address"]] if "Address" in header else "",
                                    "source": row[header["Source"]].strip(),
                                    "samples": num(header[SAMPLES]), "stalls": stalls})
    return [k for k in out if k["instructions"]]


def top_reasons(stalls, n=2):
    total = sum(stalls.values())
    if total <= 0:
        return ""
    best = sorted(stalls.items(), key=lambda kv: -kv[1])[:n]
    return ", ".join(f"{r} {100 * v / total:.0f}%" for r, v in best)


def summarize(kernel, top):
    ins = kernel["instructions"]
    total = sum(i["samples"] for i in ins)
    kinds = {k: {"samples": 0.0, "stalls": {}} for k in ORDER}
    for n, i in enumerate(ins):
        k = kinds[kind_of(i["source"], ins[n - 1]["source"] if n else "")]
        k["samples"] += i["samples"]
        for r, v in i["stalls"].items():
            k["stalls"][r] = k["stalls"].get(r, 0.0) + v
    first = None
    try:
        first = int(ins[0]["address"], 16)
    except (ValueError, IndexError):
        pass
    hot = sorted(ins, key=lambda i: -i["samples"])[:top]
    return {
        "name": kernel["name"],
        "samples": total,
        "instructions": len(ins),
        "kinds": {k: {"samples": v["samples"], "share": v["samples"] / total if total else 0.0,
                      "reasons": top_reasons(v["stalls"], 3)} for k, v in kinds.items()},
        "hot": [{"offset": (f"+{int(i['address'], 16) - first:#x}" if first is not None and
                            re.fullmatch(r"0x[0-9a-fA-F]+", i["address"]) else i["address"]),
                 "samples": i["samples"], "share": i["samples"] / total if total else 0.0,
                 "source": i["source"], "reasons": top_reasons(i["stalls"])} for i in hot if i["samples"] > 0],
    }


def short(name, n=60):
    return name if len(name) <= n else name[: n - 3] + "..."


def render(summaries):
    lines = []
    for s in summaries:
        lines.append(f"== {short(s['name'], 100)}: {s['samples']:.0f} samples over {s['instructions']} instructions")
        for k in ORDER:
            v = s["kinds"][k]
            if v["samples"]:
                lines.append(f"   {k:9s} {100 * v['share']:5.1f}%  {v['samples']:8.0f}   {v['reasons']}")
        lines.append("   hottest instructions:")
        for h in s["hot"]:
            lines.append(f"   {h['offset']:>8s} {100 * h['share']:5.1f}%  {short(h['source'], 56):56s}  {h['reasons']}")
    if len(summaries) > 1:
        lines.append("== side by side (share of each kernel's samples)")
        lines.append("   " + " " * 9 + "".join(f"  {'#' + str(i + 1):>7s}" for i in range(len(summaries))))
        for k in ORDER:
            if any(s["kinds"][k]["samples"] for s in summaries):
                lines.append(f"   {k:9s}" + "".join(f"  {100 * s['kinds'][k]['share']:6.1f}%" for s in summaries))
        for i, s in enumerate(summaries):
            lines.append(f"   #{i + 1} {short(s['name'], 90)}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+", help="ncu --page source --print-source sass --csv output (.gz too)")
    ap.add_argument("--top", type=int, default=12, help="hottest instructions listed per kernel")
    ap.add_argument("--json")
    o = ap.parse_args(argv)
    try:
        if o.top < 0:
            raise BadInput("--top must be >= 0")
        found, empty = [], []
        for path in o.csv:
            ks = kernels(path)
            if not ks:
                empty.append(path)
            found += [summarize(k, o.top) for k in ks]
    except BadInput as e:
        print(f"stall_summary: {e}", file=sys.stderr)
        return 2
    if found:
        print(render(found))
    for path in empty:
        print(f"stall_summary: {path}: no kernel's stall samples (was SourceCounters collected?)",
              file=sys.stderr)
    if o.json:
        with open(o.json, "w", encoding="utf-8") as fh:
            json.dump(found, fh, indent=1)
    return 1 if empty else 0


if __name__ == "__main__":
    sys.exit(main())
