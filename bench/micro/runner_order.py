#!/usr/bin/env python3
"""Time rmsnorm [16384, 4096] bf16 kernels in one kevo-cuda-runner process, job after job,
in the order given, to see whether a candidate's time depends on what the runner did
before it.

Each SEQUENCE is one runner process; it is a comma-separated list of jobs. A job is
LETTER[KIND][SEED]: LETTER names a kernel given with --kernel (e.g. F=fused.so); KIND is
empty (a timed phase only), c (kevo's phases: three small checks, a check at the
task's shape, the timed phase, a check after it), s (the small checks, then the timed
phase) or m (one check at the task's shape, then the timed phase); SEED is the timed
phase's input seed (default 2). Prints each job's median time per call.

Build a kernel as kevo does, e.g.:
  nvcc -arch=sm_90a -O3 -lineinfo -std=c++17 -shared -Xcompiler -fPIC -cudart shared \\
       -Itargets/abi targets/cuda/kernels/rmsnorm/fused.cu -o build/so/fused.so
then: bench/micro/runner_order.py --kernel F=build/so/fused.so F,F,F F,Fc,F,F
Exit status: 0, 1 when a job failed, 2 for bad input or a runner that did not start.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

MAIN = [[16384, 4096], [4096], [16384, 4096]]
SMALL = [[[7, 1003], [1003], [7, 1003]], [[3, 2, 17], [17], [3, 2, 17]], [[5, 1], [1], [5, 1]]]
FAILED = ('setup_error', 'load_error', 'cuda_error', 'kernel_error', 'input_written', 'overrun')


def die(message):
    print(f"runner_order: {message}", file=sys.stderr)
    sys.exit(2)


def phases(kind, seed):
    timed = {"timed": True, "shapes": MAIN, "seed": seed}
    small = [{"timed": False, "shapes": s, "seed": 1} for s in SMALL]
    main = {"timed": False, "shapes": MAIN, "seed": 1 if kind == 'c' else seed}
    return {'': [timed], 's': small + [timed], 'm': [main, timed],
            'c': small + [main, timed, {"timed": False, "shapes": MAIN, "seed": seed + 1}]}[kind]


def job(artifact, kind, seed, output):
    return {"mode": "kernel", "artifact": artifact, "entry": "kevo_launch", "op": "rmsnorm",
            "dtype": "bf16", "dtypes": ["bf16"] * 3, "scalars": [1e-6], "phases": phases(kind, seed),
            "timing": {"min_time_s": 0.1, "min_samples": 10, "max_samples": 20000,
                       "warmup_s": 0.02, "min_warmup": 2},
            "output_bytes": 0, "output_path": output, "points": [], "min_point_s": 0.15}


def parse_sequence(text, kernels):
    jobs = []
    for tok in text.split(','):
        letter, rest = tok[:1], tok[1:]
        kind = rest[:1] if rest[:1] in ('c', 's', 'm') else ''
        digits = rest[len(kind):]
        if letter not in kernels or (digits and not digits.isdigit()):
            raise ValueError(f"job '{tok}': expected LETTER[c|s|m][SEED] with LETTER one of "
                             f"{', '.join(sorted(kernels)) or '(none: give --kernel)'}")
        jobs.append((tok, kernels[letter], kind, int(digits or 2)))
    return jobs


def run_sequence(runner, name, jobs, output):
    r, w = os.pipe()
    # Events come on descriptor 3; the runner's stdout and stderr belong to the kernels.
    p = subprocess.Popen([runner, '--device', '0'], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, pass_fds=(3, w),
                         preexec_fn=lambda: os.dup2(w, 3))
    os.close(w)
    events = os.fdopen(r)

    def next_event():
        line = events.readline()
        if not line:
            raise RuntimeError('the runner ended: ' + p.stderr.read()[-500:].strip())
        return json.loads(line)

    try:
        e = next_event()
        if e.get('event') != 'ready':
            raise RuntimeError(e.get('what', json.dumps(e)))
        out, ok = [], True
        for label, artifact, kind, seed in jobs:
            p.stdin.write(json.dumps(job(artifact, kind, seed, output)) + '\n')
            p.stdin.flush()
            median = None
            while True:
                e = next_event()
                if e.get('event') == 'check':
                    p.stdin.write('continue\n')
                    p.stdin.flush()
                elif e.get('event') == 'timing':
                    median = statistics.median(e['samples']) * 1e6
                elif e.get('event') in FAILED:
                    print(f"{label}: {e.get('event')}: {e.get('what', '')}", file=sys.stderr)
                    ok = False
                if e.get('event') == 'done' or e.get('event') in FAILED:
                    break
            out.append(f"{label}:{median:.2f}" if median is not None else f"{label}:-")
        print(name, ' '.join(out), flush=True)
        return ok
    finally:
        p.stdin.close()
        p.wait(timeout=30)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0],
                                 epilog=__doc__.split('\n\n', 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('sequence', nargs='+', help='jobs of one runner process, e.g. F,Fc,F')
    ap.add_argument('--kernel', action='append', default=[], metavar='LETTER=SO',
                    help='a compiled kernel (kevo_launch entry point) and its letter')
    ap.add_argument('--runner', default='build/bin/kevo-cuda-runner')
    ap.add_argument('--output', default='/dev/shm/kevo-runner-order.out',
                    help="the checks' output file")
    a = ap.parse_args()
    kernels = {}
    for k in a.kernel:
        letter, sep, path = k.partition('=')
        if not sep or len(letter) != 1 or not os.path.isfile(path):
            die(f"--kernel {k}: expected LETTER=FILE with an existing FILE")
        kernels[letter] = os.path.abspath(path)
    if not os.access(a.runner, os.X_OK):
        die(f"no runner at {a.runner} (build kevo first: make)")
    try:
        seqs = [(s, parse_sequence(s, kernels)) for s in a.sequence]
    except ValueError as e:
        die(str(e))
    ok = True
    for name, jobs in seqs:
        try:
            ok = run_sequence(a.runner, name, jobs, a.output) and ok
        except RuntimeError as e:
            die(f"{name}: {e}")
    sys.exit(0 if ok else 1)


if __name__ == '__main__':
    main()
