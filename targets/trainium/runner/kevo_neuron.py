"""Runs one NKI kernel of kevo's contract with AWS's Neuron tools, on a
Trainium (or Inferentia 2) host, for kevo's trainium target.

    python kevo_neuron.py JOB.json             phases: compile, check, time
    python kevo_neuron.py --profile JOB.json   one phase, traced and profiled
    python kevo_neuron.py --bench REQUEST.json nrtpy's benchmark of a NEFF
    python kevo_neuron.py --probe              what this Python has, as JSON

Run with the Neuron environment's interpreter (KEVO_NEURON_PYTHON: the one
that imports the SDK's `nki`). The job is the one kevo's NumPy model reads
(targets/trainium/model/kevo_nki_model.py: candidate, scalars, nonce,
timing, phases with kevo's input files and the output files to write), plus

    "platform": "trn1" | "trn2" | "trn3"  the compile target
    "check_with": "device" | "simulate"   where check phases run
    "nrtpy_python": path                  nrtpy's interpreter when this one
                                          cannot import nrtpy ("" = this one)
    "explorer": path                      neuron-explorer ("" = none)
    "work": dir                           scratch (NEFFs, compiler logs, traces)

Per phase, the kernel is compiled for the phase's shapes (calling the
@nki.jit kernel with NumPy arrays compiles it to a NEFF, kept through
NKI_ARTIFACTS_DIR, and runs it on the device). A check phase's outputs are
those of that call, or of nki.simulate(kernel) when check_with is
"simulate"; kevo compares them with its CPU reference. A timed phase is
benchmarked by nrtpy on the device (NrtpyModel.benchmark, mode "device":
per-iteration NeuronCore times). One JSON line per phase on stdout, as the
model's: {"phase": i, "nonce": .., "ok": true, "seconds": s, "samples": [..]}
or {"phase": i, "nonce": .., "error": "compile_error" | "exception" |
"load_error" | "wrong_output", "what": .., "line": n, "code": "NCC_...."}.
A failure before a NEFF exists is the compiler's (compile_error, with the
NCC error code found in its message or its log); one after is the runtime's
(NrtError: "exception").

--profile runs the job's first phase once more with nrtpy's trace
(save_trace), asks neuron-explorer for the summary (view --output-format
summary-json) and, where pyarrow imports, for the profile's tables (view
--ingest-only: parquet), and writes kevo's profile document (see
targets/trainium/neuron_profile.h) to WORK/profile.json; it answers
{"profile": path} or {"error": .., "what": ..}.

Not verified on Trainium: written from AWS's documentation (NKI 0.4, SDK
2.30, nrtpy, neuron-explorer schema 7.4.0) and tested against kevo's fake of
these interfaces (tests/targets/trainium_fake).
"""
import ast
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

try:  # --probe answers without them
    import numpy as np
    from kevo_nki_job import answer, folded, kernel_line, load, read_raw, write_raw
except ImportError as e:
    NUMPY_ERROR = "%s: %s" % (type(e).__name__, e)
else:
    NUMPY_ERROR = ""

NCC = re.compile(r"NCC_[A-Z]{4}[0-9]{3}")
PROFILE_TABLES = {  # kevo's document part: the columns it keeps of that table
    "instruction": ("instructions", ["start_ts", "end_ts", "duration_ns", "engine", "opcode",
                                     "tensor_instruction_type", "adjusted_flops",
                                     "nki_source_location", "bir_debug_info_source_location"]),
    "dmapacket": ("dma", ["start_ts", "end_ts", "transfer_bytes", "queue_type"]),
    "tensorinfo": ("tensors", ["variable_name", "type", "size"]),
    "activetime": ("active", ["start_ts", "end_ts", "engine"]),
}


def setup_environment(job):
    """What the SDK reads when `nki` is imported: the compile target, the
    compiler's flags and work directory, where NEFFs are kept."""
    work = job["work"]
    platform = job.get("platform", "trn2")
    os.environ["NKI_ARTIFACTS_DIR"] = os.path.join(work, "artifacts")
    os.environ["NEURON_PLATFORM_TARGET_OVERRIDE"] = platform
    os.environ["NEURON_CC_FLAGS"] = "--target %s --lnc 1 --compile_workdir %s" % (
        platform, os.path.join(work, "compiler"))
    for d in ("artifacts", "compiler"):
        os.makedirs(os.path.join(work, d), exist_ok=True)


def bf16_dtype():
    """The NumPy dtype NKI takes for bfloat16 arrays: ml_dtypes' (what the
    SDK uses), else the one nki.language names."""
    try:
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    except ImportError:
        import nki.language as nl
        return np.dtype(nl.bfloat16)


def device_array(spec):
    """kevo's input as the NumPy array a Neuron kernel takes."""
    a = read_raw(spec)
    if spec["dtype"] == "bf16":
        return a.astype(bf16_dtype())
    return a


def raw_array(spec):
    """kevo's input as the bytes the device takes (bf16 as its 16-bit
    patterns: nrtpy copies bytes, and its interpreter need not know bf16)."""
    if spec["dtype"] == "bf16":
        n = int(np.prod([int(d) for d in spec["shape"]]))
        return np.fromfile(spec["path"], dtype="<u2", count=n).reshape(folded(spec["shape"]))
    return read_raw(spec)


def parameter_names(path, n):
    """kevo_nki's first n parameter names (the NEFF's input names)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "kevo_nki":
            return [a.arg for a in node.args.args[:n]]
    return []


def newest_neff(work):
    found = glob.glob(os.path.join(work, "artifacts", "**", "*.neff"), recursive=True)
    named = [f for f in found if os.path.basename(f) == "kernel.neff"]
    pool = named or found
    return max(pool, key=os.path.getmtime) if pool else None


def compiler_log(work):
    """The tail of the compiler's logs from the last compile."""
    text = ""
    for f in sorted(glob.glob(os.path.join(work, "compiler", "**", "log-neuron-cc.txt"), recursive=True)):
        try:
            text += open(f, errors="replace").read()[-20000:]
        except OSError:
            pass
    return text


def failure(e, path, work, neff_made):
    """A compile error (no NEFF yet, or an NCC code) or a runtime error."""
    text = "%s: %s" % (type(e).__name__, e)
    codes = NCC.findall(text)
    log = "" if codes else compiler_log(work)
    if not codes:
        codes = NCC.findall(log)
    line = kernel_line(e, path)
    if codes or not neff_made:
        what = text
        if codes and codes[0] not in text:  # the code is in the compiler's log only
            what = "%s (compiler log: %s)" % (text, next(ln.strip() for ln in log.splitlines() if codes[0] in ln))
        result = {"error": "compile_error", "what": what[:2000], "line": line}
        if codes:
            result["code"] = codes[0]
        return result
    return {"error": "exception", "what": text[:2000], "line": line}


def clear_artifacts(work):
    for f in glob.glob(os.path.join(work, "artifacts", "**", "*.neff"), recursive=True):
        os.remove(f)
    shutil.rmtree(os.path.join(work, "compiler"), ignore_errors=True)
    os.makedirs(os.path.join(work, "compiler"), exist_ok=True)


def compile_and_run(fn, job, phase, index, simulate):
    """Compiles the kernel for the phase's shapes (and runs it once, on the
    device or in nki.simulate): (outputs, neff, seconds, None) or an error."""
    import nki
    work, path = job["work"], job["candidate"]
    arrays = [device_array(s) for s in phase["inputs"]]
    clear_artifacts(work)
    t0 = time.perf_counter()
    try:
        out = (nki.simulate(fn) if simulate else fn)(*arrays, *job.get("scalars", []))
    except Exception as e:  # the compiler's, the runtime's or the kernel's own
        return None, None, 0, failure(e, path, work, newest_neff(work) is not None)
    seconds = time.perf_counter() - t0
    neff = newest_neff(work)
    if neff:
        kept = os.path.join(work, "p%d.neff" % index)
        shutil.copyfile(neff, kept)
        neff = kept
    return (out if isinstance(out, tuple) else (out,)), neff, seconds, None


def store(specs, outs):
    if len(outs) != len(specs):
        return {"error": "wrong_output", "what": "kevo_nki returned %d outputs, the operator has %d"
                % (len(outs), len(specs))}
    for spec, o in zip(specs, outs):
        a = np.asarray(o)
        if list(a.shape) != folded(spec["shape"]):
            return {"error": "wrong_output", "what": "an output has shape %s, the task's is %s"
                    % (list(a.shape), folded(spec["shape"]))}
    for spec, o in zip(specs, outs):
        write_raw(spec, np.asarray(o))
    return None


def bench_request(job, phase, neff, warmup, iters, trace=None):
    names = parameter_names(job["candidate"], len(phase["inputs"]))
    return {"neff": neff, "names": names, "inputs": phase["inputs"], "warmup": warmup,
            "iters": iters, "trace": trace}


def bench(request):
    """nrtpy's benchmark of the NEFF on NeuronCore 0: per-iteration device
    times in seconds, or with "trace", one traced execution."""
    from nrtpy import NrtpyModel, NrtpyTensor
    model = NrtpyModel.load_from_neff(request["neff"], core_id=0)
    expected = list(model.input_tensors_info)
    names = request["names"] if sorted(request["names"]) == sorted(expected) else expected
    if len(names) != len(request["inputs"]):
        return {"error": "exception", "what": "the NEFF takes %d inputs (%s), the operator has %d"
                % (len(expected), ", ".join(expected), len(request["inputs"]))}
    inputs = {n: NrtpyTensor.from_numpy(raw_array(s), name=n) for n, s in zip(names, request["inputs"])}
    if request.get("trace"):
        model(inputs=inputs)  # warm: the traced execution is the second
        model(inputs=inputs, save_trace=True, ntff_name=request["trace"])
        return {"ok": True, "trace": request["trace"]}
    stats = model.benchmark(inputs=inputs, warmup_iter=int(request["warmup"]),
                            benchmark_iter=int(request["iters"]), mode="device")
    return {"ok": True, "samples": [float(d) / 1e3 for d in stats.durations_ms]}


def bench_anywhere(job, request):
    """bench() here when nrtpy imports, else in nrtpy's own interpreter."""
    python = job.get("nrtpy_python") or ""
    if not python:
        try:
            import nrtpy  # noqa: F401
        except ImportError as e:
            return {"error": "exception", "what": "nrtpy does not import in %s (%s) and the task names no "
                    "other interpreter for it (KEVO_NRTPY_PYTHON)" % (sys.executable, e)}
        try:
            return bench(request)
        except Exception as e:
            return {"error": "exception", "what": "%s: %s" % (type(e).__name__, e)}
    req = os.path.join(job["work"], "bench-request.json")
    with open(req, "w") as f:
        json.dump(request, f)
    r = subprocess.run([python, "-B", os.path.abspath(__file__), "--bench", req],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in reversed(r.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    return {"error": "exception", "what": "nrtpy's interpreter %s gave no result (exit %d): %s"
            % (python, r.returncode, r.stderr[-600:])}


def time_phase(job, phase, neff):
    """Samples of the NEFF's device time: at least min_samples, more until
    min_time_s of samples, at most max_samples."""
    timing = job.get("timing", {})
    first = max(int(timing.get("min_samples", 10)), 10)
    warmup = max(int(timing.get("min_warmup", 2)), 2)
    res = bench_anywhere(job, bench_request(job, phase, neff, warmup, first))
    if "error" in res:
        return res
    samples = res["samples"]
    total = sum(samples)
    want = float(timing.get("min_time_s", 0.1))
    cap = int(timing.get("max_samples", 20000))
    if samples and total < want and len(samples) < cap:
        more = min(cap - len(samples), int(np.ceil((want - total) / max(total / len(samples), 1e-9))))
        if more > 0:
            res = bench_anywhere(job, bench_request(job, phase, neff, warmup, more))
            if "error" in res:
                return res
            samples += res["samples"]
    return {"ok": True, "samples": samples}


def run(job):
    setup_environment(job)
    fn, err = load(job)
    simulate = job.get("check_with", "device") == "simulate"
    for i, phase in enumerate(job["phases"]):
        if err:
            answer(err, job, i)
            return
        timed = phase.get("timed")
        outs, neff, seconds, err = compile_and_run(fn, job, phase, i, simulate and not timed)
        if err:
            answer(err, job, i)
            return
        result = {"ok": True, "seconds": seconds, "samples": []}
        if timed:
            if not neff:
                err = {"error": "exception", "what": "the compile left no NEFF in NKI_ARTIFACTS_DIR"}
            else:
                res = time_phase(job, phase, neff)
                err = res if "error" in res else None
                result["samples"] = res.get("samples", [])
        else:
            err = store(phase["outputs"], outs)
        answer(err or result, job, i)
        if err:
            return


def explorer_view(job, neff, ntff, *args):
    r = subprocess.run([job["explorer"], "view", "-n", neff, "-s", ntff] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return r


def table_rows(path, columns):
    import pyarrow.parquet as pq
    table = pq.read_table(path)
    keep = [c for c in columns if c in table.column_names]
    return table.select(keep).to_pylist()


def document_from_tables(summary, tables):
    """kevo's profile document from the summary and the profile's tables
    (name -> rows): the columns the bounds need, Metadata as one object."""
    doc = {"summary": summary}
    for name, rows in tables.items():
        key = re.sub(r"[^a-z]", "", name.lower())
        if key == "metadata":
            meta = {}
            for row in rows:  # one row of fields, or rows of key/value pairs
                if "key" in row and "value" in row:
                    meta[str(row["key"])] = row["value"]
                else:
                    meta.update(row)
            doc["metadata"] = meta
        elif key in PROFILE_TABLES:
            part, columns = PROFILE_TABLES[key]
            doc[part] = [{c: r[c] for c in columns if c in r and r[c] is not None} for r in rows]
    return doc


def profile(job):
    """The first phase traced on the device and read by neuron-explorer."""
    setup_environment(job)
    work = job["work"]
    if not job.get("explorer"):
        return {"error": "exception", "what": "no neuron-explorer (KEVO_NEURON_EXPLORER)"}
    fn, err = load(job)
    if err:
        return err
    phase = job["phases"][0]
    _, neff, _, err = compile_and_run(fn, job, phase, 0, False)
    if err:
        return err
    ntff = os.path.join(work, "profile.ntff")
    os.environ["NEURON_RT_ENABLE_DGE_NOTIFICATIONS"] = "1"
    res = bench_anywhere(job, bench_request(job, phase, neff, 1, 1, trace=ntff))
    if "error" in res:
        return res
    r = explorer_view(job, neff, ntff, "--output-format", "summary-json")
    start = r.stdout.find("{") if "{" in r.stdout else r.stdout.find("[")
    if r.returncode != 0 or start < 0:
        return {"error": "exception", "what": "neuron-explorer view gave no summary (exit %d): %s"
                % (r.returncode, (r.stderr or r.stdout)[-600:])}
    summary = json.loads(r.stdout[start:])
    tables, note = {}, ""
    try:
        import pyarrow.parquet  # noqa: F401
        data = os.path.join(work, "explorer")
        r = explorer_view(job, neff, ntff, "--data-path", data, "--display-name", "kevo", "--ingest-only")
        for f in sorted(glob.glob(os.path.join(data, "profiles", "global", "kevo@latest", "*.parquet"))):
            name = os.path.splitext(os.path.basename(f))[0]
            key = re.sub(r"[^a-z]", "", name.lower())
            if key == "metadata":
                tables[name] = table_rows(f, [])  # every column
            elif key in PROFILE_TABLES:
                tables[name] = table_rows(f, PROFILE_TABLES[key][1])
        if not tables:
            note = "neuron-explorer wrote no tables (exit %d)" % r.returncode
    except ImportError:
        note = "pyarrow does not import: the summary only"
    doc = document_from_tables(summary, tables)
    if note:
        doc["note"] = note
    out = os.path.join(work, "profile.json")
    with open(out, "w") as f:
        json.dump(doc, f)
    return {"profile": out}


def probe():
    """What this interpreter has of the Neuron SDK."""
    found = {"python": sys.executable,
             "dirs": sorted(set([sys.prefix, sys.base_prefix, sys.exec_prefix, HERE] + [p for p in sys.path if p]))}
    if NUMPY_ERROR:
        found["numpy_error"] = NUMPY_ERROR
    for name in ("nki", "neuronxcc", "nrtpy", "pyarrow", "ml_dtypes"):
        try:
            mod = __import__(name)
            found[name] = str(getattr(mod, "__version__", "unknown version"))
            if getattr(mod, "MODEL", False):
                found[name + "_is_kevo_model"] = True
        except Exception as e:
            found[name + "_error"] = "%s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0])
    return found


def main(argv):
    if len(argv) > 1 and argv[1] == "--probe":
        print(json.dumps(probe()))
    elif len(argv) > 2 and argv[1] == "--bench":
        try:
            print(json.dumps(bench(json.load(open(argv[2])))))
        except Exception as e:
            print(json.dumps({"error": "exception", "what": "%s: %s" % (type(e).__name__, e)}))
    elif len(argv) > 2 and argv[1] == "--profile":
        job = json.load(open(argv[2]))
        answer(profile(job), job, 0)
    else:
        run(json.load(open(argv[1])))


if __name__ == "__main__":
    main(sys.argv)
