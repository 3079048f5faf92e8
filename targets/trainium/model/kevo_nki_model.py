"""Runs one NKI kernel of kevo's contract in kevo's NumPy model of NKI.

    python3 kevo_nki_model.py JOB.json
    python3 kevo_nki_model.py --calibrate

JOB: {"candidate": path, "knobs": {name: int}, "scalars": [..],
      "phases": [{"inputs":  [{"path": p, "dtype": "bf16", "shape": [..]}, ...],
                  "outputs": [{"path": p, "dtype": "bf16", "shape": [..]}, ...],
                  "timed": false}, ...],
      "timing": {"min_time_s": s, "min_samples": n, "max_samples": n,
                 "warmup_s": s, "min_warmup": n}}
(or one phase's "inputs" and "outputs" at the top level). Knobs come from
the candidate's last line, "# kevo-globals: {...}", where kevo's compile step
wrote them, else from "knobs". Inputs are raw little-endian arrays (kevo's
generator wrote them); each phase's outputs are written the same way (a
timed phase's: those of its last call). One JSON line per phase on stdout:
{"phase": i, "ok": true, "seconds": s, "samples": [s, ...]} or {"phase": i,
"error": "compile_error" | "exception" | "load_error" | "wrong_output",
"what": "...", "line": n}; the run stops at the first error. --calibrate
prints the rates the model runs at on this CPU (NumPy's copy and float32
matmul), kevo's roof for model runs.

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
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "runner"))

import numpy as np  # noqa: E402

import nki  # noqa: E402  (kevo's model: this directory's nki/)
import nki.language as nl  # noqa: E402
from kevo_nki_job import answer, folded, kernel_line, load, read_raw, write_raw  # noqa: E402


def read_tensor(spec):
    return nl.hbm_tensor(read_raw(spec), nl.DTYPES[spec["dtype"]])


def call(fn, path, inputs, scalars):
    """(outputs, None) or (None, an error result)."""
    try:
        out = fn(*inputs, *scalars)
    except nl.NkiModelError as e:
        return None, {"error": "compile_error", "what": "NKI rule (kevo's model): %s" % e,
                      "line": kernel_line(e, path)}
    except Exception as e:
        return None, {"error": "exception", "what": "%s: %s" % (type(e).__name__, e),
                      "line": kernel_line(e, path)}
    return (out if isinstance(out, tuple) else (out,)), None


def store(specs, outs):
    """Writes the outputs; an error result when they are not the operator's."""
    if len(outs) != len(specs):
        return {"error": "wrong_output", "what": "kevo_nki returned %d outputs, the operator has %d"
                % (len(outs), len(specs))}
    for spec, t in zip(specs, outs):
        want = folded(spec["shape"])
        if not isinstance(t, nl.Tensor) or not t.buffer.endswith("hbm") or list(t.shape) != want:
            return {"error": "wrong_output", "what": "an output must be an nl.ndarray %s in nl.shared_hbm"
                    % want}
        if nl.nki_name(t.dtype) != nl.nki_name(nl.DTYPES[spec["dtype"]]):
            return {"error": "wrong_output", "what": "an output is %s, the task's is %s"
                    % (nl.nki_name(t.dtype), spec["dtype"])}
    for spec, t in zip(specs, outs):
        write_raw(spec, np.asarray(t))
    return None


def run_phase(fn, path, phase, scalars, timing):
    inputs = [read_tensor(s) for s in phase["inputs"]]
    t0 = time.perf_counter()
    outs, err = call(fn, path, inputs, scalars)
    first = time.perf_counter() - t0
    if err:
        return err
    samples = []
    if phase.get("timed"):
        start, warm = time.perf_counter(), 0
        while warm < timing.get("min_warmup", 2) or time.perf_counter() - start < timing.get("warmup_s", 0.02):
            outs, err = call(fn, path, inputs, scalars)
            if err:
                return err
            warm += 1
        start = time.perf_counter()
        while len(samples) < timing.get("max_samples", 20000) and (
                len(samples) < timing.get("min_samples", 10)
                or time.perf_counter() - start < timing.get("min_time_s", 0.1)):
            t = time.perf_counter()
            outs, err = call(fn, path, inputs, scalars)
            if err:
                return err
            samples.append(time.perf_counter() - t)
    err = store(phase["outputs"], outs)
    if err:
        return err
    return {"ok": True, "seconds": first, "samples": samples}


def calibrate():
    """NumPy's copy rate (256 MiB working set) and float32 matmul rate here."""
    a = np.ones(32 << 20, dtype=np.float32)
    b = np.empty_like(a)
    best = None
    for _ in range(5):
        t = time.perf_counter()
        np.copyto(b, a)
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    copy_gbps = 2 * a.nbytes / best / 1e9
    m = np.ones((1024, 1024), dtype=np.float32)
    best = None
    for _ in range(3):
        t = time.perf_counter()
        m @ m
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    return {"copy_gbps": copy_gbps, "copy_bytes": 2 * a.nbytes, "fp32_gflops": 2 * 1024 ** 3 / best / 1e9,
            "numpy": np.__version__}


def main(argv):
    if len(argv) > 1 and argv[1] == "--calibrate":
        print(json.dumps(calibrate()))
        return
    job = json.load(open(argv[1]))
    phases = job.get("phases")
    single = phases is None
    if single:
        phases = [{"inputs": job["inputs"], "outputs": job["outputs"], "timed": False}]
    fn, err = load(job)
    for i, phase in enumerate(phases):
        result = err or run_phase(fn, job["candidate"], phase, job.get("scalars", []), job.get("timing", {}))
        if single:
            print(json.dumps(result), flush=True)
        else:
            answer(result, job, i)
        if "error" in result:
            return


if __name__ == "__main__":
    main(sys.argv)
