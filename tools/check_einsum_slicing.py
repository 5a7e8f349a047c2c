"""Checks `tenferro einsum --max-intermediate` and `--slice-over-ranks`
against the unsliced command on the same random data (same seed): the
checksum (sum of the output elements) must agree, the slicing must meet the
bound, and an impossible bound must be a typed error. Over ranks, the MERA
instance (when ../shared has it) must be split as one label range per rank
(Note [Range slicing]) with the unsliced checksum.

usage: check_einsum_slicing.py TENFERRO SHARED_DIR sequential
       check_einsum_slicing.py TENFERRO SHARED_DIR mpi MPIEXEC [MPIEXEC_FLAGS...]
"""
import json
import os
import subprocess
import sys


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=100)
    return p.returncode, p.stdout, p.stderr


def last_json(out):
    lines = [line for line in out.splitlines() if line.startswith("{")]
    return json.loads(lines[-1])


def check(cond, message):
    if not cond:
        print("FAILED: " + message)
        sys.exit(1)


def main():
    tenferro, shared, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    cases = [[]]  # the built-in network (closed: its output is a scalar)
    chain = os.path.join(shared, "bench", "instances", "nary_matmul_chain_64.json")
    if os.path.exists(chain):
        cases.append([chain])  # a matrix output: output labels get sliced too
    for case in cases:
        base_cmd = [tenferro, "einsum", *case, "--runs", "1", "--seed", "7", "--json"]
        rc, out, err = run(base_cmd)
        check(rc == 0, f"{base_cmd}: {err}")
        base = last_json(out)
        bound = 2.0 ** base["log2_size"] * 8 / 16  # a sixteenth of the largest intermediate
        if mode == "sequential":
            cmd = base_cmd + ["--max-intermediate", str(bound)]
        else:
            cmd = [sys.argv[4], *sys.argv[5:], "-np", "2", *base_cmd, "--slice-over-ranks",
                   "--max-intermediate", str(bound)]
        rc, out, err = run(cmd)
        check(rc == 0, f"{cmd}: {err}")
        sliced = last_json(out)
        check(sliced["slices"] > 1, f"{cmd}: expected several slices, found {sliced}")
        check(sliced["slice_max_intermediate_bytes"] <= bound, f"{cmd}: bound {bound} not met: {sliced}")
        check(sliced["overhead"] >= 0.5, f"{cmd}: overhead {sliced['overhead']}")
        a, b = base["checksum"], sliced["checksum"]
        check(abs(a - b) <= 1e-9 * max(1.0, abs(a)), f"{cmd}: checksum {b}, unsliced {a}")
        if mode == "mpi":
            check(sliced["ranks"] == 2, f"{cmd}: expected 2 ranks, found {sliced['ranks']}")
            # Note [Arena slots]: a rank bound to one core asks oneTBB for no worker.
            check("TBB Warning" not in err, f"{cmd}: oneTBB warned: {err}")
        print(f"ok: {' '.join(case) or 'built-in'} {mode}: {sliced['slices']} slices, checksum {b} == {a}")

    # Note [Range slicing]: over two ranks without a bound, the MERA
    # instance is split as one range of a label per rank; same checksum.
    mera = os.path.join(shared, "bench", "instances", "str_nw_mera_closed_120.json")
    if mode == "mpi" and os.path.exists(mera):
        base_cmd = [tenferro, "einsum", mera, "--runs", "0", "--seed", "7", "--json"]
        rc, out, err = run(base_cmd)
        check(rc == 0, f"{base_cmd}: {err}")
        base = last_json(out)
        cmd = [sys.argv[4], *sys.argv[5:], "-np", "2", *base_cmd, "--slice-over-ranks"]
        rc, out, err = run(cmd)
        check(rc == 0, f"{cmd}: {err}")
        split = last_json(out)
        check(split.get("split") == "range", f"{cmd}: expected a range split, found {split}")
        check(split["speedup_bound"] >= 1.85, f"{cmd}: plan bound {split['speedup_bound']}")
        check(1.8 <= split["work_speedup_bound"] <= split["speedup_bound"],
              f"{cmd}: work bound {split['work_speedup_bound']}, flops bound {split['speedup_bound']}")
        a, b = base["checksum"], split["checksum"]
        check(abs(a - b) <= 1e-9 * max(1.0, abs(a)), f"{cmd}: checksum {b}, unsliced {a}")
        print(f"ok: MERA over 2 ranks: range of {split['range_label']}, checksum {b} == {a}")
        # The text report: each range's share, and the overhead over both.
        cmd = [sys.argv[4], *sys.argv[5:], "-np", "2", tenferro, "einsum", mera, "--plan-only", "--slice-over-ranks"]
        rc, out, err = run(cmd)
        check(rc == 0 and "this range:" in out, f"{cmd}: {out}{err}")
        total = [line for line in out.splitlines() if line.startswith("total over the workers: overhead")]
        check(len(total) == 1 and float(total[0].split()[5].rstrip("x")) >= 1.0, f"{cmd}: {out}")

    # An impossible bound: below one element.
    cmd = [tenferro, "einsum", "--max-intermediate", "4", "--runs", "1"]
    if mode == "mpi":
        cmd = [sys.argv[4], *sys.argv[5:], "-np", "2", *cmd, "--slice-over-ranks"]
    # Every rank fails to plan alike: rank 0 alone prints it (Note [One report
    # per job]), before a quiet rank's exit makes mpirun abort the job. That
    # was a race (a CI run printed nothing; 3 of 40 runs on a loaded 2-core
    # machine): a few runs make it likely to show.
    for _ in range(5 if mode == "mpi" else 1):
        rc, out, err = run(cmd)
        check(rc != 0 and "resource_exhausted" in err and "expected" in err, f"{cmd}: rc {rc}, stderr {err}")
        check(err.count("tenferro einsum: ") == 1, f"{cmd}: expected one error line, found: {err}")
    print(f"ok: impossible bound ({mode}) is resource_exhausted")

    if mode == "mpi":
        one_rank_input_errors(tenferro, sys.argv[4], sys.argv[5:])
        shared_cpu_warning(tenferro, sys.argv[4], sys.argv[5:])


def one_rank_input_errors(tenferro, mpiexec, flags):
    """An operand file missing on rank 1 only, and an -o directory missing
    on rank 1 only (where nothing is written): the first is agreed (every
    rank fails, none waits, and rank 0 alone prints it: Note [One report per
    job]), the second is no error. Open MPI does not abort the job on one
    failed rank here, so a rank left waiting would hang until the timeout.
    The same failure on every rank is printed once; different failures are
    each printed."""
    import tempfile

    import numpy as np

    with tempfile.TemporaryDirectory() as d:
        rng = np.random.default_rng(3)
        a, b = os.path.join(d, "a.npy"), os.path.join(d, "b.npy")
        np.save(a, rng.standard_normal((6, 5)))
        np.save(b, rng.standard_normal((5, 4)))
        b2, b32 = os.path.join(d, "b2.npy"), os.path.join(d, "b32.npy")
        np.save(b2, rng.standard_normal((5, 4)))
        np.save(b32, np.load(b).astype(np.float32))
        missing = os.path.join(d, "missing.npy")
        other_missing = os.path.join(d, "other_missing.npy")
        out = os.path.join(d, "out.npy")
        nowhere = os.path.join(d, "no_such_dir", "out.npy")
        # (what, rank 0's arguments, rank 1's, the file written, the text
        # both ranks' errors contain (None: no error)).
        cases = [
            ("operand missing on rank 1", [a, b], [a, missing], None, "cannot open"),
            ("operand missing on every rank", [a, missing], [a, missing], None, "cannot open"),
            ("other operands missing on each rank", [a, missing], [a, other_missing], None, "cannot open"),
            ("-o directory missing on rank 1", [a, b, "-o", out], [a, b, "-o", nowhere], out, None),
            # Options that would leave the ranks in different collectives
            # (a hang) or summing different data: agreed.
            ("--runs differs on rank 1", [a, b, "--runs", "3"], [a, b, "--runs", "1"], None,
             "--runs: expected the same value on every rank"),
            ("--plan-only on rank 1", [a, b], [a, b, "--plan-only"], None,
             "--plan-only: expected the same value on every rank"),
            ("--seed differs on rank 1", [a, b, "--seed", "1"], [a, b, "--seed", "2"], None,
             "--seed: expected the same value on every rank"),
            # Operand files that differ on rank 1 (other values, or the same
            # values as float32) would sum shares of different data.
            ("other operand values on rank 1", [a, b], [a, b2], None,
             "the operands (a hash of --inputs' dtypes, shapes and values): expected the same value on every rank"),
            ("a float32 operand on rank 1", [a, b], [a, b32], None,
             "the operands (a hash of --inputs' dtypes, shapes and values): expected the same value on every rank"),
        ]
        for what, mine, rank1, written, fails in cases:
            script = ('if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then exec "$0" einsum "ij,jk->ik" '
                      + " ".join(rank1) + ' --slice-over-ranks; else exec "$0" einsum "ij,jk->ik" '
                      + " ".join(mine) + " --slice-over-ranks; fi")
            cmd = [mpiexec, *flags, "--mca", "orte_abort_on_non_zero_status", "0", "-np", "2",
                   "sh", "-c", script, tenferro]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            except subprocess.TimeoutExpired:
                check(False, f"{what}: a rank waited forever")
            errors = sum(1 for line in p.stderr.splitlines() if line.startswith("tenferro einsum: ")
                         and not line.startswith(("tenferro einsum: note:", "tenferro einsum: warning:")))
            if what == "operand missing on rank 1":  # (mpirun's own status is 0 without the job abort)
                check(errors == 1 and p.stderr.count(fails) == 1 and p.stderr.count("rank 1 of 2 failed") == 1,
                      f"{what}: expected rank 0's report of rank 1's error, once, found: {p.stderr}")
            elif what == "other operands missing on each rank":  # two errors: each rank prints its own
                # Full paths: ".../missing.npy" is not part of ".../other_missing.npy".
                check(errors == 2 and missing in p.stderr and other_missing in p.stderr,
                      f"{what}: expected each rank's own error, found: {p.stderr}")
            elif fails:  # agreed: rank 0 alone reports it
                check(errors == 1 and p.stderr.count(fails) == 1,
                      f"{what}: expected '{fails}' once, from rank 0, found: {p.stderr}")
            else:
                check(p.returncode == 0 and not p.stderr, f"{what}: rc {p.returncode}: {p.stderr}")
                got = np.load(written)
                check(np.allclose(got, np.load(a) @ np.load(b)), f"{what}: wrong result")
            print(f"ok: {what}")


def shared_cpu_warning(tenferro, mpiexec, flags):
    """Note [Rank CPU domains]: rank 0 warns, once, when the ranks' domains
    pin two ranks' workers to one CPU: more ranks than the CPUs they may use
    together (one rank more than the CPUs, oversubscribed), not -np 2 on two CPUs
    (one core per rank)."""
    cpus = len(os.sched_getaffinity(0))
    runs = [(2, 2 > cpus)]
    if cpus <= 8:  # one rank more than the CPUs (a bigger machine would start too many)
        runs.append((cpus + 1, True))
    for ranks, crowded in runs:
        cmd = [mpiexec, *flags, "-np", str(ranks), tenferro, "einsum", "--runs", "1", "--slice-over-ranks"]
        rc, out, err = run(cmd)
        check(rc == 0, f"{cmd}: {err}")
        warned = err.count("warning: ranks x threads exceed the CPUs the ranks may use")
        check(warned == (1 if crowded else 0), f"{cmd}: {warned} warnings, expected {int(crowded)}: {err}")
        print(f"ok: {ranks} ranks on {cpus} CPUs: {warned} warning")


if __name__ == "__main__":
    main()
