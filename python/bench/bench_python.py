#!/usr/bin/python3
"""Benchmark of the tenferro Python module (docs/python.md, "Performance").

(a) Per-call overhead: tenferro.einsum("ij,jk->ik") on 2x2 float64 from
    Python against numpy.einsum of the same product, in the same run
    (interleaved rounds, median time per call).
(b) Instances: tenferro.einsum from Python on the shared instance files
    (bin_*.json and str_matrix_chain*.json by default) against the CLI's
    own timing of the same contraction (`tenferro einsum FILE --json`,
    median_seconds), same path (the instance's opt_flops path, else greedy),
    same thread count and GEMM, random float64 data; rounds interleave the
    two. The ratio is CLI time / Python time (>= 1: Python is as fast).
(c) Gradients of numpy code (when torch is installed): tenferro.grad of
    (tanh(x @ y) ** 2).mean() written with numpy against the same loss in
    torch (forward + backward), n x n float64, interleaved batches, median
    time per gradient.
(d) Integer contractions: tenferro.einsum of int32/int64 matrix products
    (values in [-5, 5): the int64 products then run narrow, Note [Narrow
    int64 products]) and a batched int64 product against numpy.einsum
    (up to n = 256; it takes seconds beyond) and torch.einsum, at
    --threads threads (torch too), interleaved, median per call.

(e) tenferro.jit: small numpy functions (a tanh layer on n x n, a chain
    of ten elementwise operations on 1000 values, the gradient of a tanh
    layer's loss) run through tenferro.jit against the same code in numpy,
    in torch eagerly and through torch.jit.trace, and for the gradient
    tenferro.grad without jit and torch autograd; one thread, interleaved
    batches, median time per call.

(f) Batched derivatives and vmap: a tenferro.hessian object of
    sum(sin(x) * cumsum(x)) and a forward tenferro.jacobian object of
    tanh(A @ x) (A 3n x n), called repeatedly, against
    torch.autograd.functional.hessian / jacobian (plain and vectorize=True);
    tenferro.vmap of a tanh layer over 256 rows against a numpy loop over
    the rows; one thread, interleaved, median per call.

Usage (from the repository root, after building the module):
    PYTHONPATH=build/<dir>/python /usr/bin/python3 python/bench/bench_python.py \
        --cli build/<dir>/tenferro [--threads 1] [--rounds 3] [--json]
"""

import argparse
import functools
import glob
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

import tenferro


def interleaved(fns, rounds, calls):
    """Seconds per call of each callable in `fns` (name -> callable), one
    sample per round, the callables interleaved round by round."""
    samples = {k: [] for k in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            samples[name].append((time.perf_counter() - t0) / calls)
    return samples


def overhead_case(batches, batch_calls, runtime):
    """Per-call seconds of each callable: batches of `batch_calls` calls,
    the three callables interleaved batch by batch; the median and the 10th
    percentile of the per-batch means (the latter filters preemption on a
    loaded machine)."""
    rng = np.random.default_rng(0)
    a = rng.uniform(size=(2, 2))
    b = rng.uniform(size=(2, 2))
    cases = {
        "tenferro": lambda: tenferro.einsum("ij,jk->ik", a, b),
        "tenferro_runtime": lambda: runtime.einsum("ij,jk->ik", a, b),
        "numpy": lambda: np.einsum("ij,jk->ik", a, b),
    }
    for fn in cases.values():  # warm: plans, op cache, allocator
        for _ in range(1000):
            fn()
    samples = interleaved(cases, batches, batch_calls)
    out = {}
    for name, v in samples.items():
        v.sort()
        out[name] = (statistics.median(v), v[len(v) // 10])
    return out


def grad_case(n, batches):
    """Median seconds per gradient of tenferro.grad (numpy code on Traced
    values) and torch autograd, interleaved batch by batch; None without
    torch."""
    try:
        import torch
    except ImportError:
        return None
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    ours = tenferro.grad(lambda w: (np.tanh(w @ y) ** 2).mean())
    ty = torch.from_numpy(y)

    def theirs():
        tx = torch.from_numpy(x).requires_grad_(True)
        (torch.tanh(tx @ ty) ** 2).mean().backward()
        return tx.grad

    if not np.allclose(ours(x), theirs().numpy()):
        sys.exit(f"bench_python: grad case n={n}: tenferro and torch disagree")
    calls = max(1, int(2e5 // (n * n * n // 64 + 1000)))
    samples = interleaved({"tenferro": lambda: ours(x), "torch": theirs}, batches, calls)
    return {k: statistics.median(v) for k, v in samples.items()}


def one_thread_peers():
    """(torch on one thread or None, a one-thread tenferro runtime)."""
    try:
        import torch
    except ImportError:
        return None, tenferro.Runtime(threads=1)
    torch.set_num_threads(1)
    return torch, tenferro.Runtime(threads=1)


def timed_cases(cases, batches, warm, calls):
    """{case: {name: median seconds per call}} of {case: {name: callable}},
    after checking that the callables of a case agree."""
    out = {}
    for case, fns in cases.items():
        results = {name: np.asarray(fn()) for name, fn in fns.items()}
        first = next(iter(results.values()))
        for name, r in results.items():
            if not np.allclose(r, first, rtol=1e-10, atol=1e-12):
                sys.exit(f"bench_python: {case}: {name} disagrees")
        for fn in fns.values():  # warm: recordings, plans, the batched paths
            for _ in range(warm):
                fn()
        samples = interleaved(fns, batches, calls)
        out[case] = {k: statistics.median(v) for k, v in samples.items()}
    return out


def jit_case(batches):
    """Median seconds per call of each case of (e): {case: {name: s}}."""
    torch, rt = one_thread_peers()
    rng = np.random.default_rng(0)

    def layer(x, w, b):
        return np.tanh(x @ w + b).sum(axis=1)

    def chain(x):
        y = np.exp(-x * x) * np.sin(3.0 * x) + np.sqrt(x + 1.0)
        return np.maximum(y * y - 0.5, 0.0) / (1.0 + x)

    def loss(w, x):
        return (np.tanh(x @ w) ** 2).mean()

    cases = {}
    for n in (8, 64):
        x, w, b = rng.standard_normal((n, n)), rng.standard_normal((n, n)), rng.standard_normal(n)
        fns = {"numpy": functools.partial(layer, x, w, b),
               "tenferro.jit": functools.partial(tenferro.jit(layer, runtime=rt), x, w, b)}
        if torch is not None:
            targs = tuple(torch.from_numpy(v) for v in (x, w, b))

            def tlayer(p, q, r):
                return torch.tanh(p @ q + r).sum(dim=1)

            fns["torch"] = functools.partial(tlayer, *targs)
            fns["torch.jit.trace"] = functools.partial(torch.jit.trace(tlayer, targs), *targs)
        cases[f"jit_tanh_layer_n{n}"] = fns
    v = rng.random(1000)
    fns = {"numpy": lambda: chain(v), "tenferro.jit": functools.partial(tenferro.jit(chain, runtime=rt), v)}
    if torch is not None:
        tv = torch.from_numpy(v)

        def tchain(t):
            y = torch.exp(-t * t) * torch.sin(3.0 * t) + torch.sqrt(t + 1.0)
            return torch.clamp(y * y - 0.5, min=0.0) / (1.0 + t)

        fns["torch"] = lambda: tchain(tv)
        traced_chain = torch.jit.trace(tchain, (tv,))
        fns["torch.jit.trace"] = lambda: traced_chain(tv)
    cases["jit_elementwise_chain_1000"] = fns
    x, w = rng.standard_normal((16, 8)), rng.standard_normal((8, 8))
    fns = {"tenferro.grad": functools.partial(tenferro.grad(loss, runtime=rt), w, x),
           "tenferro.jit(grad)": functools.partial(tenferro.jit(tenferro.grad(loss, runtime=rt), runtime=rt), w, x)}
    if torch is not None:
        tx = torch.from_numpy(x)

        def tgrad():
            tw = torch.from_numpy(w).requires_grad_(True)
            (torch.tanh(tx @ tw) ** 2).mean().backward()
            return tw.grad

        fns["torch"] = tgrad
    cases["jit_grad_tanh_loss_16x8"] = fns
    return timed_cases(cases, batches, warm=200, calls=200)


def batched_case(batches):
    """Median seconds per call of each case of (f): {case: {name: s}}."""
    torch, rt = one_thread_peers()
    rng = np.random.default_rng(0)
    cases = {}
    for n in (30, 64):
        x = rng.random(n)
        a = rng.random((3 * n, n))
        hess = tenferro.hessian(lambda v: np.sum(np.sin(v) * np.cumsum(v)), runtime=rt)
        jac = tenferro.jacobian(lambda v, a=a: np.tanh(a @ v), runtime=rt)
        h = {"tenferro": functools.partial(hess, x)}
        j = {"tenferro": functools.partial(jac, x)}
        if torch is not None:
            tx, ta = torch.from_numpy(x), torch.from_numpy(a)

            def g(v):
                return (torch.sin(v) * torch.cumsum(v, 0)).sum()

            def f(v, ta=ta):
                return torch.tanh(ta @ v)

            h["torch"] = functools.partial(torch.autograd.functional.hessian, g, tx)
            h["torch_vectorized"] = functools.partial(torch.autograd.functional.hessian, g, tx, vectorize=True)
            j["torch"] = functools.partial(torch.autograd.functional.jacobian, f, tx)
            j["torch_vectorized"] = functools.partial(torch.autograd.functional.jacobian, f, tx, vectorize=True)
        cases[f"hessian_n{n}"] = h
        cases[f"jacobian_forward_n{n}"] = j
    rows, w = rng.standard_normal((256, 16)), rng.standard_normal((16, 16))
    mapped = tenferro.vmap(lambda r, m: np.tanh(r @ m).sum(), in_axes=(0, None), runtime=rt)
    cases["vmap_tanh_layer_256_rows"] = {"tenferro.vmap": functools.partial(mapped, rows, w),
                                         "numpy_loop": lambda: np.array([np.tanh(r @ w).sum() for r in rows])}
    return timed_cases(cases, batches, warm=3, calls=5)


def integer_case(threads, rounds):
    """Median seconds per call of each available implementation, for each
    integer product; results checked equal first."""
    try:
        import torch

        torch.set_num_threads(threads)
    except ImportError:
        torch = None
    rng = np.random.default_rng(0)
    out = []
    for dtype, subscripts, shapes in (
        (np.int32, "ij,jk->ik", [(64, 64), (64, 64)]),
        (np.int64, "ij,jk->ik", [(64, 64), (64, 64)]),
        (np.int32, "ij,jk->ik", [(256, 256), (256, 256)]),
        (np.int64, "ij,jk->ik", [(256, 256), (256, 256)]),
        (np.int64, "bij,bjk->bik", [(64, 32, 32), (64, 32, 32)]),
        (np.int32, "ij,jk->ik", [(1024, 1024), (1024, 1024)]),
        (np.int64, "ij,jk->ik", [(1024, 1024), (1024, 1024)]),
    ):
        ops = [rng.integers(-5, 5, size=s).astype(dtype) for s in shapes]
        flops = 2.0 * np.prod(shapes[0]) * shapes[1][-1]
        fns = {"tenferro": lambda: tenferro.einsum(subscripts, *ops, threads=threads)}
        if flops <= 2 * 256**3:
            fns["numpy"] = lambda: np.einsum(subscripts, *ops)
        if torch is not None:
            tops = [torch.from_numpy(o) for o in ops]
            fns["torch"] = lambda: torch.einsum(subscripts, *tops)
        want = np.einsum(subscripts, *[o.astype(np.int64) for o in ops]).astype(dtype)
        for name, fn in fns.items():
            if not np.array_equal(np.asarray(fn()), want):
                sys.exit(f"bench_python: integer case {subscripts} {dtype.__name__}: {name} disagrees")
        calls = max(1, int(2e8 // flops))
        samples = interleaved(fns, rounds, calls)
        row = {"case": f"int_{subscripts.replace(',', '_').replace('->', '_to_')}_{'x'.join(map(str, shapes[0]))}"
                       f"_{np.dtype(dtype).name}", "threads": threads}
        for name, v in samples.items():
            row[f"{name}_ms"] = statistics.median(v) * 1e3
        out.append(row)
    return out


def load_instance(path):
    with open(path) as f:
        inst = json.load(f)
    ref = (inst.get("paths") or {}).get("opt_flops")
    optimize = [tuple(p) for p in ref["path"]] if ref else "greedy"
    return inst, optimize


def python_seconds(inst, optimize, runtime, runs, seed, tenferro_memory=False):
    """(median wall, median process CPU) seconds of the timed calls, after
    one call that plans, as the CLI times its runs. With `tenferro_memory`
    the operands are first copied into tenferro storage (where the CLI's
    random operands live, huge-page advised), so that both sides read the
    same kind of memory and the difference is the call path alone."""
    rng = np.random.default_rng(seed)
    ops = [rng.uniform(-1, 1, size=s) for s in inst["shapes"]]
    if tenferro_memory:
        ops = [runtime.einsum("...->...", o) for o in ops]
    out = runtime.einsum(inst["format_string"], *ops, optimize=optimize)  # first call plans
    wall, cpu = [], []
    for _ in range(runs):
        c0 = time.process_time()
        t0 = time.perf_counter()
        out = runtime.einsum(inst["format_string"], *ops, optimize=optimize)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    del out
    return statistics.median(wall), statistics.median(cpu)


def cli_seconds(cli, path, runs, threads, gemm):
    """(median_seconds, median_cpu_seconds) the CLI reports."""
    cmd = [cli, "einsum", path, "--json", "--runs", str(runs), "--threads", str(threads), "--gemm", gemm]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    j = json.loads(proc.stdout.strip().splitlines()[-1])
    return j["median_seconds"], j["median_cpu_seconds"]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(os.path.dirname(here))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cli", default=os.environ.get("TENFERRO_CLI", os.path.join(repo, "build/release/tenferro")))
    parser.add_argument("--instances", default=os.path.join(repo, "..", "shared", "bench", "instances"))
    parser.add_argument("--patterns", default="bin_*.json,str_matrix_chain*.json")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--gemm", default="native")
    parser.add_argument(
        "--domain", default="managed", help="Runtime domain for (b): managed (as the CLI builds it) or inline"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--batches", type=int, default=1000)
    parser.add_argument("--batch-calls", type=int, default=200)
    parser.add_argument("--skip-instances", action="store_true")
    parser.add_argument("--json", action="store_true", help="one JSON object per case")
    args = parser.parse_args()

    runtime = tenferro.Runtime(threads=args.threads, gemm=args.gemm)
    results = []
    o = overhead_case(args.batches, args.batch_calls, runtime)
    results.append(
        {
            "case": "einsum_2x2_per_call",
            "tenferro_us": o["tenferro"][0] * 1e6,
            "tenferro_p10_us": o["tenferro"][1] * 1e6,
            "tenferro_runtime_us": o["tenferro_runtime"][0] * 1e6,
            "tenferro_runtime_p10_us": o["tenferro_runtime"][1] * 1e6,
            "numpy_us": o["numpy"][0] * 1e6,
            "numpy_p10_us": o["numpy"][1] * 1e6,
            "default_threads": tenferro.default_runtime().threads,
            "runtime_threads": args.threads,
            "target_us": 3.0,
        }
    )

    for n in (4, 64, 256):
        g = grad_case(n, 15)
        if g is not None:
            results.append({"case": f"grad_numpy_loss_n{n}", "tenferro_us": g["tenferro"] * 1e6,
                            "torch_us": g["torch"] * 1e6, "ratio_torch_over_tenferro": g["torch"] / g["tenferro"]})

    results += integer_case(args.threads, 7)
    for case, times in jit_case(15).items():
        results.append({"case": case, **{f"{k}_us": t * 1e6 for k, t in times.items()}})
    for case, times in batched_case(15).items():
        results.append({"case": "batched_" + case, **{f"{k}_us": t * 1e6 for k, t in times.items()}})

    if not args.skip_instances:
        if not os.path.exists(args.cli):
            sys.exit(f"bench_python: CLI {args.cli} not found (pass --cli build/<dir>/tenferro)")
        files = []
        for pattern in args.patterns.split(","):
            files += sorted(glob.glob(os.path.join(args.instances, pattern)))
        for path in files:
            inst, optimize = load_instance(path)
            # Enough timed runs that a round covers ~0.2 s: medians of 7 runs
            # of a 0.3 ms contraction move by 10 % between rounds.
            probe_rt = tenferro.Runtime(threads=args.threads, gemm=args.gemm, domain=args.domain)
            once, _ = python_seconds(inst, optimize, probe_rt, 3, 0)
            del probe_rt
            runs = max(args.runs, min(2000, int(0.2 / max(once, 1e-6))))
            py, py_tf, cli = [], [], []
            for r in range(args.rounds):
                # A fresh runtime per round, as each CLI run is a fresh process
                # (its memory pool starts empty too).
                rt = tenferro.Runtime(threads=args.threads, gemm=args.gemm, domain=args.domain)
                py.append(python_seconds(inst, optimize, rt, runs, r))
                py_tf.append(python_seconds(inst, optimize, rt, runs, r, tenferro_memory=True))
                del rt
                cli.append(cli_seconds(args.cli, path, runs, args.threads, args.gemm))
            p = statistics.median(w for w, _ in py)
            pc = statistics.median(c for _, c in py)
            pt = statistics.median(w for w, _ in py_tf)
            c = statistics.median(w for w, _ in cli)
            cc = statistics.median(c for _, c in cli)
            # The machine's speed drifts between rounds (a sub-ms instance
            # moved by 2x over minutes on the 2-core VM, the CLI and Python
            # alike), so each round's CLI time is also compared with the
            # Python time of the same round, minutes apart at most.
            paired = statistics.median(cw / pw for (pw, _), (cw, _) in zip(py, cli))
            results.append(
                {
                    "case": inst["name"],
                    "python_s": p,
                    "cli_s": c,
                    "ratio_cli_over_python": c / p,
                    "ratio_cli_over_python_paired": paired,
                    "python_tenferro_memory_s": pt,
                    "ratio_cli_over_python_tenferro_memory": c / pt,
                    "python_cpu_s": pc,
                    "cli_cpu_s": cc,
                    "cpu_ratio_cli_over_python": cc / pc if pc > 0 else float("nan"),
                    "threads": args.threads,
                    "gemm": args.gemm,
                    "domain": args.domain,
                }
            )
            if not args.json:
                print(f"  {inst['name']}: python {p * 1e3:.3f} ms, cli {c * 1e3:.3f} ms", file=sys.stderr)

    if args.json:
        for r in results:
            print(json.dumps(r))
        return
    r0 = results[0]
    print("einsum 2x2 per call (median / 10th percentile of batch means; target <= 3 us):")
    print(
        f"  tenferro.einsum (default runtime, {r0['default_threads']} threads)  "
        f"{r0['tenferro_us']:.2f} / {r0['tenferro_p10_us']:.2f} us"
    )
    print(
        f"  Runtime(threads={r0['runtime_threads']}).einsum              "
        f"{r0['tenferro_runtime_us']:.2f} / {r0['tenferro_runtime_p10_us']:.2f} us"
    )
    print(f"  numpy.einsum                                 {r0['numpy_us']:.2f} / {r0['numpy_p10_us']:.2f} us")
    for r in results[1:]:
        if r["case"].startswith("grad_"):
            print(f"{r['case']}: tenferro.grad {r['tenferro_us']:.1f} us, torch {r['torch_us']:.1f} us "
                  f"(torch / tenferro {r['ratio_torch_over_tenferro']:.2f})")
    for r in results[1:]:
        if r["case"].startswith("int_"):
            peers = ", ".join(f"{k[:-3]} {r[k]:.3f} ms ({r[k] / r['tenferro_ms']:.1f}x)" for k in ("numpy_ms", "torch_ms")
                              if k in r)
            print(f"{r['case']} (threads {r['threads']}): tenferro {r['tenferro_ms']:.3f} ms, {peers}")
    for r in results[1:]:
        if r["case"].startswith(("jit_", "batched_")):
            print(f"{r['case']} (1 thread): " + ", ".join(f"{k[:-3]} {v:.2f} us" for k, v in r.items() if k != "case"))
    results = [r for r in results if not r["case"].startswith(("grad_", "int_", "jit_", "batched_"))] if not args.json \
        else results
    if len(results) > 1:
        print(f"instances: threads={args.threads}, gemm={args.gemm}, Runtime domain={args.domain}; wall and CPU medians")
        print("(py tf: the same call on operands copied into tenferro storage, as the CLI's are;")
        print(" paired: median over rounds of that round's CLI time / its Python time)")
        print(
            f"{'instance':<54} {'py ms':>9} {'cli ms':>9} {'cli/py':>7} {'py cpu':>9} {'cli cpu':>9} {'cli/py':>7}"
            f" {'py tf ms':>9} {'cli/py tf':>9} {'paired':>7}"
        )
        for r in results[1:]:
            print(
                f"{r['case']:<54} {r['python_s'] * 1e3:>9.3f} {r['cli_s'] * 1e3:>9.3f} "
                f"{r['ratio_cli_over_python']:>7.3f} {r['python_cpu_s'] * 1e3:>9.3f} {r['cli_cpu_s'] * 1e3:>9.3f} "
                f"{r['cpu_ratio_cli_over_python']:>7.3f} {r['python_tenferro_memory_s'] * 1e3:>9.3f} "
                f"{r['ratio_cli_over_python_tenferro_memory']:>9.3f} {r['ratio_cli_over_python_paired']:>7.3f}"
            )


if __name__ == "__main__":
    main()
