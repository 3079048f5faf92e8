"""Runs one NKI kernel of kevo's contract in kevo's NumPy model of NKI.

    python3 kevo_nki_model.py JOB.json

JOB: {"candidate": path, "knobs": {name: int}, "scalars": [..],
      "inputs":  [{"path": p, "dtype": "bf16", "shape": [..]}, ...],
      "outputs": [{"path": p, "dtype": "bf16", "shape": [..]}, ...]}
Inputs are raw little-endian arrays (kevo's generator wrote them); the
outputs are written the same way. One JSON line on stdout says how it went:
{"ok": true, "seconds": s} or {"error": "compile_error" | "exception" |
"load_error" | "wrong_output", "what": "...", "line": n}.

The contract (targets/trainium/kernels/<op>/*.py): the module defines
`kevo_nki(<inputs in the operator's order>, <scalars in order>)`, decorated
@nki.jit, that returns the output (a tuple for several) as
nl.ndarray(shape, dtype, buffer=nl.shared_hbm). Knobs are the module's
globals. Tensors of rank 3 or more arrive as [rows, last] (the leading
dimensions folded).

NOT the Neuron compiler, simulator or hardware (see nki/__init__.py): a
kernel's rule breaks that the model sees are reported as compile errors; the
real compiler may find others.
"""
import json
import linecache
import os
import sys
import time
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import nki  # noqa: E402  (kevo's model: this directory's nki/)
import nki.language as nl  # noqa: E402


def read_tensor(spec):
    shape = [int(d) for d in spec["shape"]]
    n = int(np.prod(shape)) if shape else 1
    dtype = spec["dtype"]
    if dtype == "bf16":
        raw = np.fromfile(spec["path"], dtype="<u2", count=n)
        a = (raw.astype(np.uint32) << 16).view(np.float32)
    else:
        a = np.fromfile(spec["path"], dtype={"f32": "<f4", "f16": "<f2", "i32": "<i4"}[dtype], count=n)
    if len(shape) >= 3:
        shape = [int(np.prod(shape[:-1])), shape[-1]]
    return nl.hbm_tensor(a.reshape(shape), nl.DTYPES[dtype])


def write_tensor(spec, t):
    a = np.ascontiguousarray(np.asarray(t))
    if spec["dtype"] == "bf16":
        bits = nl.round_bf16(a.astype(np.float32)).view(np.uint32) >> 16
        bits.astype("<u2").tofile(spec["path"])
    else:
        a.astype({"f32": "<f4", "f16": "<f2", "i32": "<i4"}[spec["dtype"]]).tofile(spec["path"])


def kernel_line(e, path):
    for frame in reversed(traceback.extract_tb(e.__traceback__)):
        if frame.filename == path:
            return frame.lineno
    return 0


def main(argv):
    job = json.load(open(argv[1]))
    path = job["candidate"]
    text = open(path, encoding="utf-8").read()
    mod = types.ModuleType("kevo_nki_candidate")
    mod.__file__ = path
    mod.__dict__.update(job.get("knobs", {}))
    linecache.checkcache(path)
    try:
        code = compile(text, path, "exec")
    except SyntaxError as e:
        return {"error": "compile_error", "what": "SyntaxError: %s" % e.msg, "line": e.lineno or 0}
    try:
        exec(code, mod.__dict__)
    except Exception as e:
        return {"error": "load_error", "what": "%s: %s" % (type(e).__name__, e), "line": kernel_line(e, path)}
    fn = mod.__dict__.get("kevo_nki")
    if not callable(fn):
        return {"error": "load_error", "what": "no function kevo_nki"}
    inputs = [read_tensor(s) for s in job["inputs"]]
    t0 = time.perf_counter()
    try:
        out = fn(*inputs, *job.get("scalars", []))
    except nl.NkiModelError as e:
        return {"error": "compile_error", "what": "NKI rule (kevo's model): %s" % e, "line": kernel_line(e, path)}
    except Exception as e:
        return {"error": "exception", "what": "%s: %s" % (type(e).__name__, e), "line": kernel_line(e, path)}
    seconds = time.perf_counter() - t0
    outs = out if isinstance(out, tuple) else (out,)
    if len(outs) != len(job["outputs"]):
        return {"error": "wrong_output", "what": "kevo_nki returned %d outputs, the operator has %d"
                % (len(outs), len(job["outputs"]))}
    for spec, t in zip(job["outputs"], outs):
        want = [int(d) for d in spec["shape"]]
        if len(want) >= 3:
            want = [int(np.prod(want[:-1])), want[-1]]
        if not isinstance(t, nl.Tensor) or t.buffer not in ("shared_hbm", "hbm") or list(t.shape) != want:
            return {"error": "wrong_output", "what": "an output must be an nl.ndarray %s in nl.shared_hbm"
                    % want}
        if nl.nki_name(t.dtype) != nl.nki_name(nl.DTYPES[spec["dtype"]]):
            return {"error": "wrong_output", "what": "an output is %s, the task's is %s"
                    % (nl.nki_name(t.dtype), spec["dtype"])}
        write_tensor(spec, t)
    return {"ok": True, "seconds": seconds}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv)))
