"""End-to-end checks of `tenferro einsum` on .npy files against numpy.einsum.

Usage: check_einsum_npy.py TENFERRO GROUP   (GROUP: dtypes, layouts, instance, errors)
Exits 77 (ctest SKIP_RETURN_CODE) when numpy is missing.
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
except ImportError:
    print("numpy is not available; skipping")
    sys.exit(77)

TENFERRO = sys.argv[1]
GROUP = sys.argv[2]
RNG = np.random.default_rng(20261201)
TOL = {np.float32: 2e-5, np.float64: 1e-12, np.complex64: 2e-5, np.complex128: 1e-12, np.int32: 0, np.int64: 0}
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL:", what)


def random(shape, dtype):
    a = RNG.uniform(-1, 1, shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * RNG.uniform(-1, 1, shape)
    return a.astype(dtype)


def run(args):
    p = subprocess.run([TENFERRO, "einsum"] + args, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def contract(d, subscripts, arrays, extra=(), name="out.npy"):
    """Writes `arrays` to d, runs the CLI with -o, returns (rc, result or None, stdout, stderr)."""
    files = []
    for i, a in enumerate(arrays):
        files.append(os.path.join(d, f"in{i}.npy"))
        np.save(files[-1], a)
    out = os.path.join(d, name)
    if os.path.exists(out):
        os.remove(out)
    rc, stdout, stderr = run([subscripts] + files + ["-o", out] + list(extra))
    return rc, (np.load(out) if rc == 0 else None), stdout, stderr


def expect_einsum(d, subscripts, arrays, extra=()):
    what = f"{subscripts} {[(a.dtype.str, a.shape) for a in arrays]} {list(extra)}"
    rc, got, stdout, stderr = contract(d, subscripts, arrays, extra)
    if rc != 0:
        check(False, f"{what}: exit {rc}: {stderr}")
        return None
    want = np.einsum(subscripts, *arrays)
    check(got.dtype == want.dtype, f"{what}: dtype {got.dtype}, numpy gives {want.dtype}")
    check(got.shape == want.shape, f"{what}: shape {got.shape}, numpy gives {want.shape}")
    tol = TOL[want.dtype.type]
    if got.shape == want.shape:
        check(np.allclose(got, want, rtol=tol, atol=tol * 10),
              f"{what}: max error {np.max(np.abs(got - want)) if got.size else 0}")
    return stdout


def group_dtypes(d):
    for dtype in (np.float32, np.float64, np.complex64, np.complex128):
        expect_einsum(d, "ij,jk->ik", [random((3, 4), dtype), random((4, 5), dtype)])
        expect_einsum(d, "abc,cd,bde->ae", [random((2, 3, 4), dtype), random((4, 5), dtype),
                                             random((3, 5, 6), dtype)])
    # numpy notation: implicit output, ellipsis, trace to a scalar, outer product.
    expect_einsum(d, "ij,jk", [random((3, 4), np.float64), random((4, 2), np.float64)])
    expect_einsum(d, "...ij,...jk->...ik", [random((2, 3, 4), np.float64), random((2, 4, 5), np.float64)])
    expect_einsum(d, "ii->", [random((4, 4), np.float64)])
    expect_einsum(d, "i,j->ij", [random((3,), np.complex64), random((2,), np.complex64)])
    expect_einsum(d, ",ij->ij", [random((), np.float64), random((2, 3), np.float64)])
    # tenferro's extension: parentheses fix the contraction order.
    x, y, z = random((3, 4), np.float64), random((4, 5), np.float64), random((5, 2), np.float64)
    rc, got, stdout, stderr = contract(d, "(ij,jk),kl->il", [x, y, z])
    check(rc == 0 and np.allclose(got, x @ y @ z, rtol=1e-12), f"nested subscripts: exit {rc}: {stderr}")
    # Zero-size: a zero contracted extent gives zeros, a zero kept extent an empty result.
    expect_einsum(d, "ij,jk->ik", [random((3, 0), np.float64), random((0, 2), np.float64)])
    expect_einsum(d, "ij,jk->ik", [random((0, 4), np.float32), random((4, 2), np.float32)])
    # Integers: int32/int64 contracted exactly (values that wrap too), mixed
    # with floats promoted like numpy.
    for dtype in (np.int32, np.int64, ">i8"):
        info = np.iinfo(np.dtype(dtype))
        big = [RNG.integers(info.min, info.max, size=s, dtype=np.dtype(dtype).newbyteorder("="), endpoint=True).astype(dtype)
               for s in ((5, 300), (300, 7))]
        expect_einsum(d, "ij,jk->ik", big)
    expect_einsum(d, "ij,jk->ik", [RNG.integers(-9, 9, (3, 4)).astype(np.int32), RNG.integers(-9, 9, (4, 2))])
    expect_einsum(d, "ij,jk->ik", [RNG.integers(-9, 9, (3, 4)).astype(np.int32), random((4, 2), np.float32)])
    expect_einsum(d, "ij,jk->ik", [RNG.integers(-9, 9, (3, 4)), random((4, 2), np.complex64)])
    # Mixed dtypes promote like numpy.
    expect_einsum(d, "ij,jk->ik", [random((3, 4), np.float32), random((4, 2), np.float64)])
    expect_einsum(d, "ij,jk,k->i", [random((3, 4), np.float32), random((4, 2), np.complex64),
                                     random((2,), np.float64)])
    # Engine options, the graph mode and the JSON report.
    a, b = random((6, 5), np.float64), random((5, 7), np.float64)
    for extra in (["--threads", "2"], ["--mode", "graph"], ["--path", "optimal", "--runs", "2"]):
        expect_einsum(d, "ij,jk->ik", [a, b], extra)
    rc, got, stdout, stderr = contract(d, "ij,jk->ik", [a, b], ["--json", "--runs", "2"])
    check(rc == 0, f"--json: exit {rc}: {stderr}")
    if rc == 0:
        j = json.loads(stdout)
        check(j["runs"] == 2 and j["median_seconds"] > 0, f"--json runs: {stdout}")
        check(j["dtype"] == "float64" and j["output_shape"] == [6, 7], f"--json dtype/shape: {stdout}")
        check(abs(j["checksum"] - np.einsum("ij,jk->ik", a, b).sum()) < 1e-9, f"--json checksum: {stdout}")
    # Without -o: a summary with the checksum, and one contraction by default.
    np.save(os.path.join(d, "a.npy"), a)
    np.save(os.path.join(d, "b.npy"), b)
    rc, stdout, stderr = run(["ij,jk->ik", os.path.join(d, "a.npy"), os.path.join(d, "b.npy"), "--json"])
    check(rc == 0, f"no -o: exit {rc}: {stderr}")
    if rc == 0:
        j = json.loads(stdout)
        check(j["runs"] == 0 and "output" not in j, f"no -o: {stdout}")
        check(abs(j["checksum"] - np.einsum("ij,jk->ik", a, b).sum()) < 1e-9, f"no -o checksum: {stdout}")
    rc, stdout, stderr = run(["ij,jk->ik", os.path.join(d, "a.npy"), os.path.join(d, "b.npy")])
    check(rc == 0 and "checksum" in stdout and "float64 [6, 7]" in stdout, f"summary: {rc} {stdout} {stderr}")


def group_layouts(d):
    a = np.asfortranarray(random((4, 6), np.float64))
    b = random((6, 3), np.float64)
    expect_einsum(d, "ij,jk->ik", [a, b])
    expect_einsum(d, "ij,jk->ik", [a, b], ["--mode", "graph"])
    expect_einsum(d, "abc,cb->a", [np.asfortranarray(random((2, 3, 4), np.complex128)), random((4, 3), np.complex128)])
    expect_einsum(d, "ij,jk->ki", [random((3, 4), ">f8"), np.asfortranarray(random((4, 2), ">c8"))])


def write_instance(d, subscripts, shapes):
    path = os.path.join(d, "instance.json")
    with open(path, "w") as f:
        json.dump({"name": "cli_test", "format_string": subscripts, "shapes": shapes, "dtype": "float64"}, f)
    return path


def group_instance(d):
    shapes = [[3, 4], [4, 5], [5, 2]]
    instance = write_instance(d, "ab,bc,cd->ad", shapes)
    inputs = os.path.join(d, "inputs")
    os.mkdir(inputs)
    arrays = [random(s, np.float32) for s in shapes]
    for i, a in enumerate(arrays):
        np.save(os.path.join(inputs, f"{i}.npy"), a)
    out = os.path.join(d, "out.npy")
    rc, stdout, stderr = run([instance, "--inputs", inputs, "-o", out, "--runs", "1"])
    check(rc == 0, f"--inputs: exit {rc}: {stderr}")
    if rc == 0:
        got, want = np.load(out), np.einsum("ab,bc,cd->ad", *arrays)
        check(got.dtype == np.float32 and np.allclose(got, want, rtol=2e-5, atol=2e-5), f"--inputs result {got}")
    # The subscripts form reads DIR/i.npy too.
    os.remove(out)
    rc, stdout, stderr = run(["ab,bc,cd->ad", "--inputs", inputs, "-o", out])
    check(rc == 0 and os.path.exists(out), f"subscripts --inputs: exit {rc}: {stderr}")
    # Random data (no --inputs) with -o: the instance's shape, float64.
    os.remove(out)
    rc, stdout, stderr = run([instance, "-o", out, "--runs", "1"])
    check(rc == 0 and np.load(out).shape == (3, 2) and np.load(out).dtype == np.float64,
          f"instance -o: exit {rc}: {stderr}")
    # A shape that disagrees with the instance names the file.
    np.save(os.path.join(inputs, "1.npy"), random((4, 6), np.float32))
    rc, stdout, stderr = run([instance, "--inputs", inputs, "--runs", "1"])
    check(rc != 0 and "shape_mismatch" in stderr and "1.npy" in stderr, f"instance shape: {rc} {stderr}")
    # A missing operand names the file.
    os.remove(os.path.join(inputs, "2.npy"))
    rc, stdout, stderr = run([instance, "--inputs", inputs, "--runs", "1"])
    check(rc != 0 and "not_found" in stderr and "2.npy" in stderr, f"instance missing operand: {rc} {stderr}")
    rc, stdout, stderr = run([instance, os.path.join(inputs, "0.npy")])
    check(rc != 0 and "--inputs" in stderr, f"instance with operand arguments: {rc} {stderr}")


def group_errors(d):
    a, b = random((3, 4), np.float64), random((4, 5), np.float64)
    fa, fb = os.path.join(d, "a.npy"), os.path.join(d, "b.npy")
    np.save(fa, a)
    np.save(fb, b)
    out = os.path.join(d, "out.npy")
    bad = os.path.join(d, "bad.npy")
    text = b"{'descr': '<f8', 'shape': (3, 4)}  \n"
    with open(bad, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text + bytes(96))
    truncated = os.path.join(d, "truncated.npy")
    with open(fb, "rb") as f:
        data = f.read()
    with open(truncated, "wb") as f:
        f.write(data[:-8])
    ints = os.path.join(d, "ints.npy")
    np.save(ints, np.arange(20, dtype=np.int16).reshape(4, 5))
    cases = [
        (["ij,jk->ik", fa, bad], "fortran_order' is missing"),
        (["ij,jk->ik", fa, truncated], "data_loss"),
        (["ij,jk->ik", fa, ints], "descr '<i2' is not supported"),
        (["ij,jk->ik", fa, os.path.join(d, "absent.npy")], "absent.npy"),
        (["ij,jk->ik", fa], "2 operands, found 1"),
        (["ij,jk->ik", fa, fa], "label 'j' has extent 3"),
        (["ij,jk->iq", fa, fb], "invalid_argument"),
        (["ij;jk", fa, fb], "neither einsum subscripts"),
        (["ij,jk->ik", fa, fb, "--plan-only"], "--plan-only"),
        (["ij,jk->ik", fa, fb, "--inputs", d], "not both"),
    ]
    for args, needle in cases:
        # An earlier result under the output name must survive a failed run.
        with open(out, "wb") as f:
            f.write(b"earlier")
        rc, stdout, stderr = run(args + ["-o", out])
        check(rc != 0, f"{args}: expected a failure, exit 0")
        check(needle in stderr, f"{args}: expected '{needle}' in: {stderr}")
        with open(out, "rb") as f:
            check(f.read() == b"earlier", f"{args}: the output file was changed")
        check(sorted(os.listdir(d)) == sorted(["a.npy", "b.npy", "bad.npy", "truncated.npy", "ints.npy", "out.npy"]),
              f"{args}: files left behind: {os.listdir(d)}")
    os.remove(out)
    rc, stdout, stderr = run(["ij,jk->ik", fa, fb, "-o", os.path.join(d, "no_dir", "out.npy")])
    check(rc != 0 and "no_dir" in stderr, f"-o into a missing directory: {rc} {stderr}")
    rc, stdout, stderr = run(["ij,jk->ik", fa, bad, "-o", out])
    check(rc != 0 and not os.path.exists(out), "a failed run created the output file")


GROUPS = {"dtypes": group_dtypes, "layouts": group_layouts, "instance": group_instance, "errors": group_errors}
with tempfile.TemporaryDirectory() as tmp:
    GROUPS[GROUP](tmp)
if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print(f"{GROUP}: all checks passed")
