"""What kevo's two NKI drivers share: the job file, kevo's raw tensors, the
candidate module with its knobs, and where in the candidate an error arose.

The drivers: targets/trainium/model/kevo_nki_model.py (kevo's NumPy model of
NKI) and targets/trainium/runner/kevo_neuron.py (AWS's Neuron tools). Both
read the same job and answer one JSON line per phase (see either's
docstring). No NKI import here: each driver brings its own `nki`.
"""
import importlib.util
import json
import sys
import traceback

import numpy as np

RAW = {"f32": "<f4", "f16": "<f2", "i32": "<i4"}


def folded(shape):
    """The shape kevo_nki sees: rank 3 or more folded to [rows, last]."""
    shape = [int(d) for d in shape]
    if len(shape) >= 3:
        return [int(np.prod(shape[:-1])), shape[-1]]
    return shape


def read_raw(spec):
    """A tensor kevo's generator wrote, as float32 (bf16 widened) or its own
    dtype, in the folded shape."""
    shape = [int(d) for d in spec["shape"]]
    n = int(np.prod(shape)) if shape else 1
    if spec["dtype"] == "bf16":
        bits = np.fromfile(spec["path"], dtype="<u2", count=n)
        a = (bits.astype(np.uint32) << 16).view(np.float32)
    else:
        a = np.fromfile(spec["path"], dtype=RAW[spec["dtype"]], count=n)
    return a.reshape(folded(shape))


def bf16_bits(a):
    """float32 values as bfloat16 bit patterns, rounded to nearest even."""
    a = np.ascontiguousarray(a, dtype=np.float32)
    u = a.view(np.uint32).astype(np.uint64)
    bits = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(a), np.uint16(0x7FC0), bits)


def write_raw(spec, values):
    """Writes an output as kevo reads it (bf16 from its float values)."""
    a = np.ascontiguousarray(np.asarray(values))
    if spec["dtype"] == "bf16":
        if a.dtype.itemsize == 2 and a.dtype.kind not in "fiu":  # ml_dtypes' bfloat16
            a.view("<u2").tofile(spec["path"])
        else:
            bf16_bits(a.astype(np.float32)).astype("<u2").tofile(spec["path"])
    else:
        a.astype(RAW[spec["dtype"]]).tofile(spec["path"])


def knobs_of(job, text):
    """The knobs kevo's compile step wrote on the candidate's last line
    ("# kevo-globals: {...}"), over the job's own."""
    knobs = dict(job.get("knobs", {}))
    lines = text.splitlines()
    if lines and lines[-1].startswith("# kevo-globals: "):
        knobs.update(json.loads(lines[-1][len("# kevo-globals: "):]))
    return knobs


def kernel_line(e, path):
    """The candidate's innermost line in the exception's traceback, or 0."""
    for frame in reversed(traceback.extract_tb(e.__traceback__)):
        if frame.filename == path:
            return frame.lineno
    return 0


def load(job):
    """(kevo_nki, None), or (None, an error result). The candidate is
    imported from its file as a module whose globals start as its knobs."""
    path = job["candidate"]
    text = open(path, encoding="utf-8").read()
    try:
        compile(text, path, "exec")
    except SyntaxError as e:
        return None, {"error": "compile_error", "what": "SyntaxError: %s" % e.msg, "line": e.lineno or 0}
    spec = importlib.util.spec_from_file_location("kevo_nki_candidate", path)
    mod = importlib.util.module_from_spec(spec)
    mod.__dict__.update(knobs_of(job, text))
    sys.modules["kevo_nki_candidate"] = mod
    try:
        spec.loader.exec_module(mod)
    except Exception as e:
        return None, {"error": "load_error", "what": "%s: %s" % (type(e).__name__, e),
                      "line": kernel_line(e, path)}
    fn = mod.__dict__.get("kevo_nki")
    if not callable(fn):
        return None, {"error": "load_error", "what": "no function kevo_nki"}
    return fn, None


def answer(result, job, phase):
    """Prints one phase's result line, with the job's nonce."""
    print(json.dumps(dict(result, phase=phase, nonce=job.get("nonce", ""))), flush=True)
