"""kevo-triton-runner: the persistent process that runs Triton candidates on one GPU.

kevo starts one per GPU, through kevo-contain (which puts it in its own network
namespace, confines its file system with Landlock and installs a system-call
filter before this interpreter starts), and keeps it for the whole search. It
speaks the protocol of kevo-cuda-runner (targets/runner/protocol.h): one JSON
job per line on stdin, JSON event lines on descriptor 3; stdout and stderr
belong to the kernels.

A job names a candidate file (the .py kevo wrote for it: the candidate's text,
then one last line "# kevo-globals: {...}" with its knob values and the task's
shape constants, which become the module's globals before it runs). The runner

  - runs the module (a Python error there is the candidate's load error; a
    SyntaxError its compile error),
  - takes each input from kevo's own generator (libkevo-inputs.so, the code
    kevo's CPU reference uses), keeps a pristine copy on the device and gives
    the candidate a working copy,
  - poisons the outputs (all bits set: NaN) and puts a canary tail after each,
  - calls kevo_launch(inputs, outputs, scalars) once per check; Triton compiles
    the kernels at their first call, so a Triton compile error (or, under the
    interpreter, an error in a kernel's body) is reported as the candidate's
    compile error with the compiler's message and the line,
  - after each checked call verifies the inputs and the canaries and copies the
    outputs into kevo's output file for its CPU reference check,
  - times as kevo-cuda-runner does: warm-ups, five samples fenced on the whole
    device, then one sample per call, each after an L2 flush (a write of twice
    the L2, as torch's zero_), with a GPU sleep queued as launch cover (always:
    a Python launch's host time would otherwise leave the GPU idle inside the
    sample), between a start and an end event; the last sample's outputs are
    poisoned first and checked,
  - after each job compares torch's, triton's and math's public attributes with
    those it saw at start: a candidate that replaced one (the timer, the
    synchronize) ends the runner, and kevo starts a fresh one.

Under TRITON_INTERPRET=1 (kevo's KEVO_TRITON_INTERPRET=1) the kernels run in
Triton's interpreter on the CPU, and the times are the interpreter's, not a
GPU's: for tests of the protocol and of the kernels' numerics.

--profile JOBFILE runs the job's first phase once for a profiler: one warm-up
call, then one call between cudaProfilerStart and cudaProfilerStop; the
events go to stderr. With --cubins DIR it then writes there the cubin of each
kernel the candidate's Triton functions compiled (their line tables map the
profile to Python source lines; Triton's cache may hold other candidates'
kernels of the same name).
"""

import ctypes
import json
import linecache
import mmap
import os
import sys
import time
import traceback
import types

EVENTS_FD = 3
CANARY = 0xA5
CANARY_BYTES = 4096
STAGES = ("inputs", "hand_over", "check_wait", "timing")  # of a job, for its note
# kevo's DType codes (core/dtype.h) and names.
DTYPE_CODES = {"f32": 0, "f64": 1, "f16": 2, "bf16": 3, "i32": 4, "i8": 5}

_MISSING = object()
_events_fd = EVENTS_FD


def emit(event):
    line = (json.dumps(event, separators=(",", ":")) + "\n").encode()
    try:
        while line:
            n = os.write(_events_fd, line)
            line = line[n:]
    except OSError:
        os._exit(3)  # kevo is gone


def read_line():
    line = sys.stdin.buffer.readline()
    if not line:
        return "quit"
    return line.decode(errors="replace").rstrip("\n")


def quantile(values, q):
    """The value a fraction q of the way up the sorted values (nearest rank); 0 for none."""
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def median(values):
    return quantile(values, 0.5)


# The launch cover: a sample's call is hidden with room to spare when the
# flush and the cover keep the GPU busy for 2 x its host time + 20 us; a
# sample whose call was not is taken again under a cover grown to fit it, at
# most RETAKES times an evaluation and one for every ten samples kept (one to
# begin with), up to MAX_COVER_US (as kevo's cuda runner). The automatic cover
# also rests the GPU: flush + cover at least REST_RATIO times the warm-up's
# median call, so that a long call holds the GPU at most a third of each
# sample and the clock does not sag with a duty cycle that depends on the
# candidate (targets/runner/launch_cover.h says what it was measured to do).
RETAKES = 32
MAX_COVER_US = 2000.0
REST_RATIO = 2.0


def host_state():
    state = {}
    try:
        state["load1"] = os.getloadavg()[0]
    except OSError:
        pass
    return state


class Setup(Exception):
    """The runner cannot do the job (not the candidate's fault)."""


class Runner:
    def __init__(self, device, inputs_lib, containment):
        import torch
        import triton

        self.torch = torch
        self.triton = triton
        self.containment = containment
        self.module = None      # the last candidate's module
        self.cubins_dir = ""    # --cubins
        self.interpret = os.environ.get("TRITON_INTERPRET", "") == "1"
        if self.interpret:
            self.dev = torch.device("cpu")
        else:
            if not torch.cuda.is_available():
                raise Setup("no usable CUDA device for torch (set KEVO_TRITON_INTERPRET=1 to run "
                            "the kernels in Triton's interpreter on the CPU)")
            torch.cuda.set_device(device)
            self.dev = torch.device("cuda", device)
        self.device = device
        self.lib = ctypes.CDLL(inputs_lib)
        self.lib.kevo_generate_input.restype = ctypes.c_int
        self.lib.kevo_generate_input.argtypes = [
            ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
            ctypes.POINTER(ctypes.c_int64), ctypes.c_uint64, ctypes.c_void_p, ctypes.c_char_p,
            ctypes.c_size_t]
        self.dtypes = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16,
                       "bf16": torch.bfloat16, "i32": torch.int32, "i8": torch.int8}
        self.pristine = {}  # (op, dtype, index, seed, shape) -> tensor on the device
        self.pristine_order = []
        # Where a job's seconds go (a note at its end): the inputs made, the
        # outputs handed over for the checks, kevo's checks, the timing.
        self.stage_s = dict.fromkeys(STAGES, 0.0)
        self.jobs = 0
        # The runner's own references to what it times and checks with, taken
        # before any candidate runs.
        self.synchronize = torch.cuda.synchronize if not self.interpret else (lambda: None)
        self.Event = torch.cuda.Event
        self.elapsed = torch.cuda.Event.elapsed_time
        self.perf = time.perf_counter
        self.flush_value = 0
        self.flush = None
        self.flush_us = 0.0
        self.cover_us = -1.0
        cover = os.environ.get("KEVO_CUDA_COVER_US", "")
        if cover and cover != "auto":
            try:
                self.cover_us = float(cover)
            except ValueError:
                raise Setup("KEVO_CUDA_COVER_US: expected auto or microseconds, got " + cover)
        self.clock_khz = 0
        if not self.interpret:
            props = torch.cuda.get_device_properties(device)
            l2 = getattr(props, "L2_cache_size", 50 << 20)
            self.flush = torch.empty(max(2 * l2, 64 << 20) // 4, dtype=torch.int32, device=self.dev)
            self.clock_khz = getattr(props, "clock_rate", 0) or 1980000
            times = []
            for i in range(5):
                a, b = self.Event(enable_timing=True), self.Event(enable_timing=True)
                a.record()
                self.flush.fill_(i)
                b.record()
                b.synchronize()
                times.append(self.elapsed(a, b) * 1e3)
            self.flush_us = median(times)
        self.snapshot = self.take_snapshot()

    # ---- what a candidate must leave alone ------------------------------------------

    def watched_modules(self):
        torch, triton = self.torch, self.triton
        import math
        import triton.language as tl
        mods = {"torch": torch, "torch.cuda": torch.cuda, "torch.Tensor": torch.Tensor,
                "triton": triton, "triton.language": tl, "math": math}
        if not self.interpret:
            mods["torch.cuda.Event"] = torch.cuda.Event
        return mods

    def take_snapshot(self):
        # What each module and class holds itself (its __dict__), by
        # identity. Attributes that appear later are left alone (a module
        # imported lazily becomes an attribute of its package).
        snap = {}
        for name, obj in self.watched_modules().items():
            for attr, value in list(vars(obj).items()):
                snap[name + "." + attr] = value
        return snap

    def tampered(self):
        """The first watched attribute that is no longer what it was, or None."""
        mods = self.watched_modules()
        for key, value in self.snapshot.items():
            name, attr = key.rsplit(".", 1)
            now = vars(mods[name]).get(attr, _MISSING)
            if now is not value:
                return key
        return None

    def info(self):
        torch = self.torch
        info = {"device": self.device, "torch": torch.__version__,
                "triton": self.triton.__version__, "interpreter": self.interpret,
                "python": sys.version.split()[0]}
        if self.interpret:
            info.update({"device_count": 1, "name": "Triton interpreter (CPU)", "cc": "cpu"})
        else:
            p = torch.cuda.get_device_properties(self.device)
            info.update({"device_count": torch.cuda.device_count(), "name": p.name,
                         "cc": "%d.%d" % (p.major, p.minor), "sms": p.multi_processor_count,
                         "l2_bytes": getattr(p, "L2_cache_size", 0),
                         "memory_bytes": p.total_memory, "clock_khz": self.clock_khz})
        return info

    # ---- inputs ----------------------------------------------------------------------

    def pristine_input(self, job, index, shape, seed):
        torch = self.torch
        dtype = job["dtypes"][index]
        key = (job["op"], dtype, index, seed, tuple(shape))
        t = self.pristine.get(key)
        if t is not None:
            return t
        t_gen = self.perf()
        n = 1
        for d in shape:
            n *= d
        tdtype = self.dtypes[dtype]
        host = torch.empty(max(n, 1), dtype=tdtype)
        dims = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        definition = job.get("op_definition")
        err = ctypes.create_string_buffer(512)
        rc = self.lib.kevo_generate_input(
            job["op"].encode(), json.dumps(definition).encode() if definition else None, index,
            DTYPE_CODES[dtype], len(shape), dims, seed, ctypes.c_void_p(host.data_ptr()), err,
            len(err))
        if rc != 0:
            raise Setup("kevo's input generator: " + err.value.decode(errors="replace"))
        host = host[:n].view(*shape) if shape else host[:n].view(())
        while True:
            try:
                t = host.to(self.dev)
                break
            except torch.cuda.OutOfMemoryError:
                if not self.pristine_order:
                    raise Setup("out of device memory for the inputs")
                self.pristine.pop(self.pristine_order.pop(0), None)
        self.pristine[key] = t
        self.pristine_order.append(key)
        self.stage_s["inputs"] += self.perf() - t_gen
        return t

    # ---- one candidate ---------------------------------------------------------------

    def load(self, path):
        """The candidate's module, or an event saying why not."""
        with open(path, encoding="utf-8") as f:
            text = f.read()
        lines = text.splitlines()
        globs = {}
        if lines and lines[-1].startswith("# kevo-globals: "):
            globs = json.loads(lines[-1][len("# kevo-globals: "):])
        self.jobs += 1
        mod = types.ModuleType("kevo_candidate_%d" % self.jobs)
        mod.__file__ = path
        mod.__dict__.update(globs)
        linecache.checkcache(path)
        try:
            code = compile(text, path, "exec")
        except SyntaxError as e:
            return None, {"event": "compile_error", "what": "SyntaxError: %s" % e.msg,
                          "line": e.lineno or 0}
        try:
            exec(code, mod.__dict__)
        except Exception as e:
            return None, {"event": "load_error", "what": describe(e, path)}
        fn = mod.__dict__.get("kevo_launch")
        if not callable(fn):
            return None, {"event": "load_error", "what": "no function kevo_launch"}
        self.module = mod
        return fn, None

    def dump_cubins(self, out_dir):
        """Writes the cubins of the kernels the last candidate's Triton
        functions compiled (Triton's JITFunction.device_caches: per device,
        the compiled kernels first); returns how many. 0 where this Triton
        keeps them otherwise."""
        os.makedirs(out_dir, exist_ok=True)
        n = 0
        jit = getattr(getattr(self.triton, "runtime", None), "JITFunction", None)
        if self.module is None or not isinstance(jit, type):
            return 0
        for obj in list(vars(self.module).values()):
            if not isinstance(obj, jit):
                continue
            caches = vars(obj).get("device_caches")
            if not isinstance(caches, dict):
                continue
            for entry in list(caches.values()):
                kernels = entry[0] if isinstance(entry, tuple) and entry else entry
                if not isinstance(kernels, dict):
                    continue
                for k in list(kernels.values()):
                    try:
                        cubin = k.asm["cubin"]
                    except Exception:
                        continue
                    if isinstance(cubin, (bytes, bytearray)):
                        with open(os.path.join(out_dir, "kernel_%d.cubin" % n), "wb") as f:
                            f.write(cubin)
                        n += 1
        return n

    def run_kernel(self, job, profile_only=False):
        torch = self.torch
        if not profile_only:
            emit({"event": "note", "what": self.containment.get("line", ""),
                  "containment": self.containment.get("layers", [])})
        fn, why = self.load(job["artifact"])
        if why:
            emit(why)
            return
        dtypes = job["dtypes"]
        n_in = job["n_inputs"]
        scalars = tuple(job["scalars"])
        compiled = False
        self.stage_s = dict.fromkeys(STAGES, 0.0)
        for ph, phase in enumerate(job["phases"]):
            shapes = phase["shapes"]
            try:
                pristine = [self.pristine_input(job, i, shapes[i], phase["seed"])
                            for i in range(n_in)]
            except Setup as e:
                emit({"event": "setup_error", "what": str(e)})
                return
            work = [p.clone() for p in pristine]
            outs, bufs, nbytes = [], [], []
            for i in range(n_in, len(shapes)):
                tdtype = self.dtypes[dtypes[i]]
                n = 1
                for d in shapes[i]:
                    n *= d
                size = n * torch.empty((), dtype=tdtype).element_size()
                buf = torch.empty(size + CANARY_BYTES, dtype=torch.uint8, device=self.dev)
                bufs.append(buf)
                nbytes.append(size)
                outs.append(buf[:size].view(tdtype).view(*shapes[i]))

            def poison():
                for buf, size in zip(bufs, nbytes):
                    buf[:size].fill_(0xFF)
                    buf[size:].fill_(CANARY)

            def call():
                rc = fn(tuple(work), tuple(outs), scalars)
                return 0 if rc is None else rc

            def failed(e):
                """Reports an exception from a call; False."""
                if is_compile_error(e):
                    emit({"event": "compile_error", "phase": ph, "what": describe(e, job["artifact"]),
                          "line": error_line(e, job["artifact"])})
                elif is_cuda_error(e):
                    sticky = self.context_lost()
                    emit({"event": "cuda_error", "phase": ph, "what": str(e).strip().splitlines()[0],
                          "sticky": sticky})
                    if sticky:
                        os._exit(3)
                else:
                    emit({"event": "exception", "phase": ph, "what": describe(e, job["artifact"])})
                return False

            def call_and_wait():
                """(ok, wall seconds, host seconds of the call alone)."""
                t0 = self.perf()
                try:
                    rc = call()
                    host = self.perf() - t0
                    self.synchronize()
                except Exception as e:
                    return failed(e), 0.0, 0.0
                if not isinstance(rc, int) or rc != 0:
                    emit({"event": "kernel_error", "phase": ph, "rc": rc if isinstance(rc, int) else -1})
                    return False, 0.0, 0.0
                return True, self.perf() - t0, host

            if not compiled:
                # The first call compiles the kernels (Triton's JIT): timed
                # apart, so that the check's time is not the compiler's.
                poison()
                t0 = self.perf()
                ok, _, _ = call_and_wait()
                if not ok:
                    return
                seconds = self.perf() - t0
                sys.stderr.write("kevo-triton-runner: the first call (Triton compiles the kernels) "
                                 "took %.2f s\n" % seconds)
                emit({"event": "compiled", "seconds": seconds})
                compiled = True

            if profile_only:
                ok, _, _ = call_and_wait()
                if not ok:
                    return
                torch.cuda.cudart().cudaProfilerStart()
                ok, _, _ = call_and_wait()
                torch.cuda.cudart().cudaProfilerStop()
                if ok:
                    if self.cubins_dir:
                        emit({"event": "note", "cubins": self.dump_cubins(self.cubins_dir)})
                    emit({"event": "done"})
                return False

            def hand_over(seconds):
                for i in range(n_in):
                    a, b = work[i].reshape(-1).view(torch.uint8), pristine[i].reshape(-1).view(torch.uint8)
                    if a.numel() % 4 == 0:
                        a, b = a.view(torch.int32), b.view(torch.int32)
                    diff = int((a != b).sum())
                    if diff:
                        emit({"event": "input_written", "phase": ph,
                              "tensor": job["tensor_names"][i], "words": diff})
                        return False
                for i, (buf, size) in enumerate(zip(bufs, nbytes)):
                    bad = (buf[size:] != CANARY).nonzero()
                    if bad.numel():
                        emit({"event": "overrun", "phase": ph,
                              "tensor": job["tensor_names"][n_in + i], "offset": int(bad[0])})
                        return False
                t_hand = self.perf()
                offsets, total = [], 0
                for size in nbytes:
                    offsets.append(total)
                    total += (size + 63) // 64 * 64
                with open(job["output_path"], "r+b") as f:
                    f.truncate(max(total, 1))
                    mm = mmap.mmap(f.fileno(), max(total, 1))
                    base = ctypes.addressof(ctypes.c_char.from_buffer(mm))
                    for out, off, size in zip(bufs, offsets, nbytes):
                        host = out[:size].cpu()
                        ctypes.memmove(base + off, host.data_ptr(), size)
                    del base
                    mm.close()
                emit({"event": "check", "phase": ph, "seconds": seconds, "bytes": total})
                t_wait = self.perf()
                self.stage_s["hand_over"] += t_wait - t_hand
                go_on = read_line() == "continue"
                self.stage_s["check_wait"] += self.perf() - t_wait
                return go_on

            if not phase["timed"]:
                poison()
                self.synchronize()
                ok, seconds, _ = call_and_wait()
                if not ok or not hand_over(seconds):
                    return
                continue

            if not self.time_phase(job, ph, call, poison, failed, hand_over, call_and_wait):
                return
        st = self.stage_s
        sys.stderr.write("kevo-triton-runner: the job's stages: inputs made %.2f s, outputs handed over "
                         "%.2f s, kevo's checks %.2f s, timing %.2f s\n"
                         % (st["inputs"], st["hand_over"], st["check_wait"], st["timing"]))
        sys.stderr.flush()
        return True

    def time_phase(self, job, ph, call, poison, failed, hand_over, call_and_wait):
        torch = self.torch
        tc = job["timing"]
        warm, host, calls, last = 0, [], [], 0.0
        start = self.perf()
        t_timing = start
        while warm < tc["min_warmup"] or self.perf() - start < tc["warmup_s"]:
            ok, last, host_s = call_and_wait()
            if not ok:
                return False
            host.append(host_s)
            calls.append(last)
            warm += 1
        cover = self.cover_us
        auto_cover = cover < 0
        if auto_cover:
            # A Python launch takes tens of microseconds of host time, and
            # before it come the flush's and the start event's own enqueues:
            # together often more than the flush takes on the GPU, which would
            # then idle inside the sample. The cover (a GPU sleep queued before
            # the start event) always hides them; it is not in the samples.
            # The warm-up's slowest tenth of calls sets it (a median hides a
            # slow tail); samples whose call still needed more are taken again.
            cover = min(MAX_COVER_US, 2 * quantile(host, 0.9) * 1e6 + 20)
            # And it rests the GPU after a long call (none after a short one).
            cover = max(cover, min(MAX_COVER_US, REST_RATIO * median(calls) * 1e6 - self.flush_us))
        emit({"event": "timing_start", "phase": ph, "estimate_s": last, "calls_per_sample": 1})

        def sample(fence, poison_first):
            """(event seconds, device busy after the end event, host seconds of the call, host
            seconds between the two events' enqueues); None after a report."""
            self.synchronize()
            if poison_first:
                poison()
            if self.interpret:
                t0 = self.perf()
                try:
                    rc = call()
                except Exception as e:
                    return failed(e) or None
                t = self.perf() - t0
                if rc != 0:
                    emit({"event": "kernel_error", "phase": ph, "rc": rc if isinstance(rc, int) else -1})
                    return None
                return t, 0.0, t, t
            self.flush_value += 1
            self.flush.fill_(self.flush_value)
            if fence:
                self.synchronize()
            elif cover > 0:
                torch.cuda._sleep(int(cover * self.clock_khz / 1e3))
            ev0, ev1 = self.Event(enable_timing=True), self.Event(enable_timing=True)
            try:
                hb = self.perf()
                ev0.record()
                h0 = self.perf()
                rc = call()
                host_s = self.perf() - h0
                ev1.record()
                bracket_s = self.perf() - hb
                ev1.synchronize()
                h1 = self.perf()
                self.synchronize()
                busy = self.perf() - h1
            except Exception as e:
                return failed(e) or None
            if rc != 0:
                emit({"event": "kernel_error", "phase": ph, "rc": rc if isinstance(rc, int) else -1})
                return None
            return self.elapsed(ev0, ev1) * 1e-3, busy, host_s, bracket_s

        # Fenced samples: the device idle before the start event, so the
        # sample holds the kernel and the host time between the two events'
        # enqueues (the call's, and the events' own: tens of microseconds in
        # Python), which the idle device waits for; the evaluator allows the
        # median of that host time (taken from these samples themselves, not
        # the others: a Python launch's host time varies from call to call).
        fenced, fenced_host = [], []
        for _ in range(5):
            s = sample(True, False)
            if s is None:
                return False
            fenced.append(s[0] + s[1])
            fenced_host.append(s[3])
        samples, after_end, host = [], [], []
        timed = 0.0
        retaken, outlasted = 0, 0
        last_sample = False
        while not last_sample:
            last_sample = not ((len(samples) < tc["min_samples"] or timed < tc["min_time_s"])
                               and len(samples) < tc["max_samples"])
            s = sample(False, last_sample)
            if s is None:
                return False
            h_us = s[2] * 1e6
            if not self.interpret and 2 * h_us + 20 > self.flush_us + cover:
                needed = min(MAX_COVER_US, 2 * h_us + 20)
                if auto_cover and retaken < RETAKES and retaken <= len(samples) // 10 and needed > cover:
                    cover = needed
                    retaken += 1
                    last_sample = False  # (a last sample is taken again, poisoned again)
                    continue
                outlasted += 1
            samples.append(s[0])
            after_end.append(s[1])
            host.append(s[2])
            timed += s[0]
        host_us = median(host) * 1e6
        sys.stderr.write(
            "kevo-triton-runner: timing: host time per call %.1f us (median), L2 flush (fill) %.1f us "
            "of GPU time, launch cover %.0f us, device busy after the end event %.1f us (median), "
            "fenced samples %.1f us (median), %d of %d samples' calls outlasted the flush and cover "
            "(host at most %.0f us), %d taken again under a longer cover%s%s\n"
            % (host_us, self.flush_us, cover, median(after_end) * 1e6, median(fenced) * 1e6,
               outlasted, len(host), max(host) * 1e6 if host else 0.0, retaken,
               "; HOST-BOUND: the call's host time exceeds what the flush and cover hide, so the "
               "GPU idles inside each sample" if not self.interpret and host_us > 0.8 * (self.flush_us + cover) else "",
               "; INTERPRETER: Triton's interpreter on the CPU, not a GPU time" if self.interpret else ""))
        sys.stderr.flush()
        self.stage_s["timing"] += self.perf() - t_timing
        emit({"event": "timing", "phase": ph, "samples": samples, "calls_per_sample": 1,
              "warmup_calls": warm, "after_end_s": after_end, "fenced_s": fenced,
              "host_call_s": median(fenced_host), "machine": host_state(),
              "launch": {"host_us": host_us, "cover_us": cover, "outlasted": outlasted,
                         "retaken": retaken}})
        return hand_over(samples[-1])

    # ---- roof calibration ------------------------------------------------------------

    def timed(self, fn, min_s):
        """The best seconds of fn() over at least 5 runs and min_s in all."""
        best, spent, reps = float("inf"), 0.0, 0
        fn()
        self.synchronize()
        while spent < min_s or reps < 5:
            if self.interpret:
                t0 = self.perf()
                fn()
                t = self.perf() - t0
            else:
                a, b = self.Event(enable_timing=True), self.Event(enable_timing=True)
                a.record()
                fn()
                b.record()
                b.synchronize()
                t = self.elapsed(a, b) * 1e-3
            best = min(best, t)
            spent += t
            reps += 1
        return best

    def calibrate(self, job):
        """Copy bandwidth (GB/s, bytes read plus written) at each working set,
        and torch.matmul's bf16 and fp32 rates (GFLOP/s)."""
        torch = self.torch
        self.pristine.clear()
        self.pristine_order.clear()
        for i, p in enumerate(job["points"]):
            value = 0.0
            try:
                if p["kind"] == "copy":
                    half = int(p["bytes"] / 2) // 16 * 16
                    a = torch.ones(half, dtype=torch.uint8, device=self.dev)
                    b = torch.empty_like(a)
                    value = 2.0 * half / self.timed(lambda: b.copy_(a), job["min_point_s"]) / 1e9
                    del a, b
                else:
                    n = int(p["bytes"])
                    dt = torch.bfloat16 if p["kind"] == "bf16_tensor" else torch.float32
                    a = torch.rand(n, n, device=self.dev).to(dt)
                    b = torch.rand(n, n, device=self.dev).to(dt)
                    value = 2.0 * n ** 3 / self.timed(lambda: torch.matmul(a, b), job["min_point_s"]) / 1e9
                    del a, b
            except Exception as e:
                emit({"event": "setup_error", "what": "calibration point %d: %s: %s" % (i, type(e).__name__, e)})
                return
            emit({"event": "point", "index": i, "value": value})
        emit({"event": "done"})

    def context_lost(self):
        try:
            self.synchronize()
            self.torch.zeros(1, device=self.dev).add_(1)
            self.synchronize()
            return False
        except Exception:
            return True


def is_compile_error(e):
    """Triton's compiler refused the kernel, or the kernel it built cannot be
    loaded for what it needs (shared memory, threads) or ptxas failed: a
    property of the source at these knobs, like a compile error in C."""
    mod = type(e).__module__ or ""
    return mod.startswith("triton.compiler") or type(e).__name__ in (
        "CompilationError", "InterpreterError", "OutOfResources", "PTXASError")


def is_cuda_error(e):
    text = str(e)
    return type(e).__name__ in ("AcceleratorError", "OutOfMemoryError") or "CUDA error" in text


def error_line(e, path):
    """The candidate's line the error points at (0: none)."""
    v = getattr(e, "lineno", None)
    if isinstance(v, int) and v > 0:
        return v
    src = getattr(e, "src", None)
    node = getattr(e, "node", None)
    if node is not None and getattr(node, "lineno", None):
        # CompilationError: the node's line is relative to the kernel's source.
        fn = getattr(src, "fn", None) if src is not None else None
        start = getattr(getattr(fn, "fn", fn), "__code__", None)
        if start is not None:
            return start.co_firstlineno + node.lineno - 1
        return node.lineno
    line = 0
    for frame in traceback.extract_tb(e.__traceback__):
        if frame.filename == path:
            line = frame.lineno
    return line


def describe(e, path):
    """One paragraph: the error, its message (the compiler's, for Triton) and the
    candidate's lines the traceback passed through."""
    text = "%s: %s" % (type(e).__name__, str(e).strip())
    if len(text) > 4000:
        text = text[:4000] + " ..."
    lines = [str(f.lineno) for f in traceback.extract_tb(e.__traceback__) if f.filename == path]
    if lines:
        text += " (candidate line %s)" % ", ".join(lines[-3:])
    return text


def main(argv):
    global _events_fd
    device, inputs_lib, profile_job, cubins_dir = 0, "", "", ""
    i = 1
    while i < len(argv):
        a = argv[i]
        if a == "--device" and i + 1 < len(argv):
            device = int(argv[i + 1])
            i += 2
        elif a == "--inputs-lib" and i + 1 < len(argv):
            inputs_lib = argv[i + 1]
            i += 2
        elif a == "--profile" and i + 1 < len(argv):
            profile_job = argv[i + 1]
            i += 2
        elif a == "--cubins" and i + 1 < len(argv):
            cubins_dir = argv[i + 1]
            i += 2
        else:
            sys.stderr.write("usage: kevo_triton_runner.py --inputs-lib LIB [--device N] "
                             "[--profile JOBFILE [--cubins DIR]]\n")
            return 2
    if profile_job:
        _events_fd = 2
    containment = {}
    try:
        containment = json.loads(os.environ.get("KEVO_CONTAINMENT", "{}"))
    except ValueError:
        pass
    os.environ.pop("KEVO_CONTAINMENT", None)
    t_setup = time.perf_counter()
    try:
        runner = Runner(device, inputs_lib, containment)
    except Setup as e:
        emit({"event": "setup_error", "what": str(e)})
        return 4
    except Exception as e:
        emit({"event": "setup_error", "what": "%s: %s" % (type(e).__name__, e)})
        return 4
    runner.cubins_dir = cubins_dir
    if profile_job:
        # What the start cost (torch, the CUDA context) under the profiler.
        emit({"event": "note", "setup_s": time.perf_counter() - t_setup})
        with open(profile_job) as f:
            runner.run_kernel(json.load(f), profile_only=True)
        return 0
    emit({"event": "ready", "pid": os.getpid(), "info": runner.info()})
    while True:
        line = read_line()
        if line == "quit":
            return 0
        try:
            job = json.loads(line)
        except ValueError as e:
            emit({"event": "setup_error", "what": "bad job: %s" % e})
            continue
        if job.get("mode") == "quit":
            return 0
        if job.get("mode") == "calibrate":
            runner.calibrate(job)
            continue
        finished = False
        try:
            finished = runner.run_kernel(job)
        except Setup as e:
            emit({"event": "setup_error", "what": str(e)})
        # Every phase ran: the job is done unless the candidate changed what
        # the runner times and checks with (then this runner's word is no
        # good any more: it ends, and kevo starts a fresh one).
        changed = runner.tampered()
        if changed:
            emit({"event": "tampered", "what": changed})
            return 3
        if finished:
            emit({"event": "done"})


if __name__ == "__main__":
    sys.exit(main(sys.argv))
