"""kevo's FAKE of nrtpy (see ../../README.md): NOT the Neuron runtime.

NrtpyModel loads the fake nki's NEFF-like files; benchmark() returns
durations from a made-up cost model, not measurements: the bytes the
kernel's inputs and outputs move at 400 GB/s, times 1 + 0.15 * (a hash of
its knob values mod 4), so that knob values differ and a search has
something to find.
"""
import json
import os
import zlib

import numpy as np


class NrtError(Exception):
    pass


class NrtpyError(Exception):
    pass


class TensorMetadata:
    def __init__(self, shape, size):
        self.shape, self.size = shape, size


class NrtpyTensor:
    def __init__(self, array, name):
        self.array, self.name = array, name

    @classmethod
    def from_numpy(cls, array, name=None):
        return cls(np.asarray(array), name)

    def numpy(self):
        return self.array


class BenchmarkResult:
    def __init__(self, durations_ms, warmup):
        self.durations_ms = durations_ms
        self.iterations = len(durations_ms)
        self.warmup_iterations = warmup
        self.mean_ms = float(np.mean(durations_ms))
        self.min_ms = float(np.min(durations_ms))
        self.max_ms = float(np.max(durations_ms))
        self.std_dev_ms = float(np.std(durations_ms))


def device_ms(neff):
    """The cost model (also the fake neuron-explorer's)."""
    moved = sum(int(np.prod(t["shape"])) * t["itemsize"] for t in neff["inputs"])
    moved += sum(int(np.prod(t["shape"])) * 2 for t in neff["outputs"])
    knobs = json.dumps(neff["globals"], sort_keys=True).encode()
    return (moved / 400e9 * 1e3 + 0.004) * (1 + 0.15 * (zlib.crc32(knobs) % 4))


class NrtpyModel:
    def __init__(self, neff_path, neff):
        self.path, self.neff = neff_path, neff
        self.input_tensors_info = {t["name"]: TensorMetadata(t["shape"], int(np.prod(t["shape"])) * t["itemsize"])
                                   for t in neff["inputs"]}
        self.output_tensors_info = {t["name"]: TensorMetadata(t["shape"], int(np.prod(t["shape"])) * 2)
                                    for t in neff["outputs"]}

    @classmethod
    def load_from_neff(cls, neff_path, name=None, core_id=0, cc_enabled=False, rank_id=0, world_size=1):
        try:
            neff = json.load(open(neff_path))
        except (OSError, ValueError) as e:
            raise NrtError("NRT Error NRT_INVALID(2): cannot load %s: %s" % (neff_path, e))
        return cls(str(neff_path), neff)

    def _check(self, inputs):
        if sorted(inputs) != sorted(self.input_tensors_info):
            raise NrtpyError("inputs %s, the NEFF's are %s" % (sorted(inputs), sorted(self.input_tensors_info)))
        for name, t in inputs.items():
            if list(t.array.shape) != list(self.input_tensors_info[name].shape):
                raise NrtpyError("input %s has shape %s, the NEFF's is %s"
                                 % (name, list(t.array.shape), self.input_tensors_info[name].shape))

    def __call__(self, inputs, outputs=None, save_trace=False, ntff_name=None):
        self._check(inputs)
        if save_trace:
            path = ntff_name or os.path.splitext(self.path)[0] + ".ntff"
            with open(path, "w") as f:
                json.dump({"fake_ntff": 1, "device_ms": device_ms(self.neff)}, f)
        return {t["name"]: NrtpyTensor(np.zeros(t["shape"], np.float32), t["name"]) for t in self.neff["outputs"]}

    def benchmark(self, inputs, outputs=None, warmup_iter=5, benchmark_iter=5, mode="device"):
        if mode not in ("device", "host"):
            raise ValueError("mode must be 'device' or 'host'")
        if benchmark_iter < 1:
            raise ValueError("benchmark_iter must be at least 1")
        self._check(inputs)
        base = device_ms(self.neff)
        return BenchmarkResult([base * (1 + 0.002 * (i % 5)) for i in range(benchmark_iter)], warmup_iter)
