"""kevo's FAKE of the Neuron SDK's nki (see ../../README.md): NOT the SDK.

The arithmetic is kevo's NumPy model of NKI (targets/trainium/model/nki),
loaded under another name; this module adds what the SDK's nki does around
it that kevo's runner relies on: a call with NumPy arrays compiles (here:
writes a NEFF-like JSON file to NKI_ARTIFACTS_DIR) and runs the kernel;
nki.simulate runs it without a NEFF; failures as the SDK reports them.
"""
import functools
import importlib.util
import inspect
import json
import os
import sys

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
_MODEL = os.path.normpath(os.path.join(_HERE, "..", "..", "..", "..", "..", "targets", "trainium", "model", "nki"))
_spec = importlib.util.spec_from_file_location("kevo_fake_model_nki", os.path.join(_MODEL, "__init__.py"),
                                               submodule_search_locations=[_MODEL])
_model = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _model
_spec.loader.exec_module(_model)
language = _model.language
isa = _model.isa
sys.modules["nki.language"] = language
sys.modules["nki.isa"] = isa

__version__ = "0.4.0+kevo-fake"
PLATFORMS = ("trn1", "trn2", "trn3")


class NrtError(Exception):
    """The runtime's error, as nrtpy names it."""


def _tensor(a):
    a = np.asarray(a)
    md = getattr(a.dtype, "metadata", None) or {}
    if "nki" in md:
        dtype = a.dtype
    else:
        dtype = {"float32": language.DTYPES["f32"], "float16": language.DTYPES["f16"],
                 "int32": language.DTYPES["i32"]}[a.dtype.name]
    return language.hbm_tensor(a.astype(np.float32) if dtype.kind == "f" else a, dtype)


def execute(fn, args):
    """Runs the kernel in kevo's model on NumPy arrays; NumPy outputs."""
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    scalars = [a for a in args if not isinstance(a, np.ndarray)]
    out = fn(*[_tensor(a) for a in arrays], *scalars)
    if isinstance(out, tuple):
        return tuple(np.array(o) for o in out)
    return np.array(out)


def _compile_workdir():
    flags = os.environ.get("NEURON_CC_FLAGS", "").split()
    if "--compile_workdir" in flags:
        return flags[flags.index("--compile_workdir") + 1]
    return os.getcwd()


def _compile(fn, args):
    platform = os.environ.get("NEURON_PLATFORM_TARGET_OVERRIDE", "")
    if platform not in PLATFORMS:
        raise RuntimeError("fake nki: NEURON_PLATFORM_TARGET_OVERRIDE is %r, not one of %s"
                           % (platform, ", ".join(PLATFORMS)))
    g = fn.__globals__
    code = g.get("FAKE_NCC")
    if code:
        if g.get("FAKE_NCC_MESSAGE"):
            raise RuntimeError("[%s] the fake compiler refuses this kernel" % code)
        work = _compile_workdir()
        os.makedirs(work, exist_ok=True)
        with open(os.path.join(work, "log-neuron-cc.txt"), "w") as f:
            f.write("INFO: fake neuronx-cc for %s\nERROR 70 [%s] the fake compiler refuses this kernel\n"
                    % (platform, code))
        raise RuntimeError("neuronx-cc terminated with exit code 70 (see log-neuron-cc.txt)")
    out = execute(fn, args)  # tracing: the model's NKI rules are compile errors here too
    names = list(inspect.signature(fn).parameters)
    arrays = [a for a in args if isinstance(a, np.ndarray)]
    neff = {"fake_neff": 1, "candidate": fn.__code__.co_filename, "platform": platform,
            "globals": {k: v for k, v in g.items() if k.isupper() and isinstance(v, (int, float, str))},
            "inputs": [{"name": n, "shape": list(a.shape), "itemsize": int(a.dtype.itemsize)}
                       for n, a in zip(names, arrays)],
            "outputs": [{"name": "output_%d" % i, "shape": list(np.shape(o))}
                        for i, o in enumerate(out if isinstance(out, tuple) else (out,))],
            "scalars": [a for a in args if not isinstance(a, np.ndarray)]}
    artifacts = os.environ.get("NKI_ARTIFACTS_DIR") or os.getcwd()
    os.makedirs(artifacts, exist_ok=True)
    with open(os.path.join(artifacts, "kernel.neff"), "w") as f:
        json.dump(neff, f)
    if g.get("FAKE_NRT"):
        raise NrtError("NRT Error NRT_EXEC_OOB(1006): Failed to execute model")
    return out


class _Kernel:
    def __init__(self, fn):
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args):
        return _compile(self.fn, args)


def jit(fn=None, **_options):
    if fn is None:
        return lambda f: _Kernel(f)
    return _Kernel(fn)


def simulate(kernel):
    fn = kernel.fn if isinstance(kernel, _Kernel) else kernel
    return lambda *args: execute(fn, args)
