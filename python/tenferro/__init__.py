"""tenferro: tensor-network contraction (N-ary einsum with path planning),
dense linear algebra, FFTs and automatic differentiation on numpy arrays.

Quick start (docs/python.md)::

    import numpy as np
    import tenferro

    a = np.random.rand(3, 4)
    b = np.random.rand(4, 5)
    c = tenferro.einsum("ij,jk->ik", a, b)        # a numpy array over tenferro's storage
    path, info = tenferro.contract_path("ij,jk,kl->il", a, b, np.random.rand(5, 2))
    u, s, vh = tenferro.linalg.svd(a, full_matrices=False)
    spectrum = tenferro.fft.rfft(a, axis=-1)
    ga, gb = tenferro.einsum_vjp("ij,jk->ik", a, b, np.ones((3, 5)))
"""

import operator as _operator
import os as _os
import string as _string
import collections as _collections
import threading as _threading
import weakref as _weakref

import numpy as _np

from . import _tenferro
from ._errors import (
    AxisError,
    DTypeError,
    Error,
    InvalidArgumentError,
    LinAlgError,
    OutOfRangeError,
    ResourceExhaustedError,
    RuntimeFailure,
    UnsupportedError,
)
from ._tenferro import Runtime, Traced, default_runtime, einsum
from ._version import __version__
from . import _traced

__all__ = [
    "__version__",
    "Runtime",
    "default_runtime",
    "jit",
    "vmap",
    "einsum",
    "contract_path",
    "einsum_path",
    "contract_expression",
    "ContractExpression",
    "PathInfo",
    "einsum_vjp",
    "vjp",
    "jvp",
    "hvp",
    "jacobian",
    "hessian",
    "grad",
    "value_and_grad",
    "Traced",
    "linalg",
    "fft",
    "Error",
    "InvalidArgumentError",
    "DTypeError",
    "LinAlgError",
    "OutOfRangeError",
    "AxisError",
    "UnsupportedError",
    "ResourceExhaustedError",
    "RuntimeFailure",
    "show_config",
]


def _shape_of(operand, position, shapes=False, who="contract_path"):
    """The shape of an operand given as an array, a shape tuple of ints,
    a Python scalar or (nested) lists or tuples of numbers (data, as numpy
    reads them); with `shapes` (opt_einsum's shapes=True) every operand is
    a shape, a tuple or list of ints."""
    shape = getattr(operand, "shape", None)
    if shape is not None and not shapes:
        return [int(d) for d in shape]
    if isinstance(operand, tuple if not shapes else (tuple, list)) and all(
            isinstance(d, (int, _np.integer)) and not isinstance(d, bool) for d in operand):
        for d in operand:
            if d >= 2**63:
                raise OutOfRangeError(f"{who} operand {position}: extent {d} does not fit in int64 (at most "
                                      f"2**63 - 1)", code="kSizeOverflow", canonical="kOutOfRange")
        return [int(d) for d in operand]
    if not shapes and isinstance(operand, (int, float, complex, list, tuple)):
        try:
            return list(_np.shape(operand))
        except ValueError:  # ragged nested lists
            pass
    expected = "a shape (a tuple or list of ints)" if shapes else "an array, a shape tuple of ints, a scalar or nested lists"
    raise InvalidArgumentError(
        f"{who} operand {position}: expected {expected}, found {type(operand).__name__}",
        code="kInvalidArgument",
        canonical="kInvalidArgument",
    )


def _label_text(label, where):
    if label is Ellipsis:
        return "..."
    try:
        i = _operator.index(label)
    except TypeError:
        raise InvalidArgumentError(
            f"einsum {where}: expected integer labels or Ellipsis, found {type(label).__name__}",
            code="kInvalidArgument", canonical="kInvalidArgument") from None
    if i < 0 or i >= 52 + 0xD700 - 0x100:
        raise InvalidArgumentError(f"einsum {where}: label {i}: expected a non-negative integer below 55040",
                                   code="kInvalidArgument", canonical="kInvalidArgument")
    # opt_einsum's symbols: letters, then code points from U+0100 (labels).
    return _string.ascii_letters[i] if i < 52 else chr(0x100 + i - 52)


def _sublist_form(args):
    """numpy's sublist form (op0, labels0, op1, labels1, ..., [output
    labels]) as (subscripts, operands)."""
    pairs = len(args) // 2
    operands = list(args[0:2 * pairs:2])
    terms = []
    for k in range(pairs):
        labels = args[2 * k + 1]
        if isinstance(labels, str) or not hasattr(labels, "__iter__"):
            raise InvalidArgumentError(
                f"einsum: argument {2 * k + 1} should be a sublist of integer labels, found {type(labels).__name__}",
                code="kInvalidArgument", canonical="kInvalidArgument")
        terms.append("".join(_label_text(x, f"sublist {k}") for x in labels))
    subscripts = ",".join(terms)
    if len(args) % 2:
        subscripts += "->" + "".join(_label_text(x, "output sublist") for x in args[-1])
    return subscripts, operands


def _subscripts_and_operands(subscripts, operands, what):
    """(subscripts, operands) of a call in either numpy form."""
    if isinstance(subscripts, bytes):
        subscripts = subscripts.decode("ascii")
    if isinstance(subscripts, str):
        try:
            subscripts.encode("utf-8")
        except UnicodeEncodeError as e:  # a lone surrogate: einsum's typed error, not the codec's
            raise InvalidArgumentError(
                f"{what}: expected subscripts of Unicode characters, found the lone surrogate "
                f"U+{ord(subscripts[e.start]):04X} at index {e.start}", code="kInvalidArgument",
                canonical="kInvalidArgument") from None
        return subscripts, list(operands)
    if subscripts is None:
        raise TypeError(f"{what}(): expected subscripts (a str) or the sublist form (operand, labels, ...), found None")
    return _sublist_form((subscripts, *operands))


class PathInfo:
    """What contract_path planned (opt_einsum's PathInfo, tenferro's costs).

    Attributes: path (list of index pairs), eq (canonical subscripts),
    opt_cost / flops (flop count of the path, opt_einsum's convention),
    naive_cost, speedup, log10_flops, largest_intermediate (elements),
    log2_size, multiply_adds, workspace_bytes, planner, planning_seconds,
    steps (one dict per pairwise contraction), explain (tenferro's text);
    opt_einsum's input_subscripts, output_subscript, indices (the set of
    labels), size_dict (label: extent), shapes, scale_list, size_list and
    contraction_list ((positions, labels removed, "lhs,rhs->result",
    remaining subscripts, False) per step; tenferro does not name a BLAS
    kind); with a memory bound, what einsum slices: sliced_labels, slices,
    slice_largest_intermediate (elements), slicing_overhead (flops of
    all slices over the unsliced flops), and range_label and ranges when
    one label is cut into ranges run in turn (None and 1 otherwise).
    """

    def __init__(self, raw, shapes=None):
        self._raw = raw
        self.path = raw["path"]
        self.eq = raw["eq"]
        self.flops = raw["flops"]
        self.opt_cost = raw["flops"]
        self.multiply_adds = raw["multiply_adds"]
        self.log10_flops = raw["log10_flops"]
        self.largest_intermediate = raw["largest_intermediate"]
        self.log2_size = raw["log2_size"]
        self.workspace_bytes = raw["workspace_bytes"]
        self.planner = raw["planner"]
        self.planning_seconds = raw["planning_seconds"]
        self.steps = raw["steps"]
        self.explain = raw["explain"]
        self.sliced_labels = raw["sliced_labels"]
        self.slices = raw["slices"]
        self.slice_largest_intermediate = raw["slice_largest_intermediate"]
        self.slicing_overhead = raw["slicing_overhead"]
        self.range_label = raw["range_label"]
        self.ranges = raw["ranges"]
        num_operands = len(raw["operand_labels"])
        # opt_einsum's naive cost: every label's extent multiplied, times
        # (operands - 1), plus one when something is summed.
        inner = raw["num_labels"] > len(raw["output_labels"])
        factor = max(1, num_operands - 1) + (1 if inner else 0)
        self.naive_cost = raw["naive_size"] * factor
        if num_operands == 1:  # the one step is the naive contraction (opt_einsum counts it so: speedup 1)
            self.opt_cost = self.flops = self.naive_cost
        self.speedup = self.naive_cost / max(self.opt_cost, 1.0)
        self.naive_scaling = raw["num_labels"]
        self.scale_list = [len(set(s["lhs"]) | set(s["rhs"])) for s in self.steps]
        self.size_list = [s["result_elements"] for s in self.steps]
        self.input_subscripts = ",".join("".join(labels) for labels in raw["operand_labels"])
        self.output_subscript = "".join(raw["output_labels"])
        self.size_dict = dict(raw["size_dict"])
        self.indices = set(self.size_dict)
        self.shapes = [tuple(shape) for shape in shapes] if shapes is not None else None
        self.contraction_list = []
        remaining = ["".join(labels) for labels in raw["operand_labels"]]
        if num_operands == 1:  # opt_einsum's one entry for the path [(0,)]
            self.contraction_list.append(((0,), frozenset(remaining[0]) - frozenset(self.output_subscript),
                                          f"{remaining[0]}->{self.output_subscript}", [self.output_subscript], False))
        for (i, j), step in zip(self.path if len(remaining) > 1 else [], self.steps):
            lhs, rhs, result = ("".join(step[k]) for k in ("lhs", "rhs", "result"))
            for k in sorted((i, j), reverse=True):
                del remaining[k]
            remaining.append(result)
            removed = frozenset(step["lhs"]) | frozenset(step["rhs"])
            self.contraction_list.append((tuple(sorted((i, j), reverse=True)),
                                          removed - frozenset(step["result"]),
                                          f"{lhs},{rhs}->{result}", list(remaining), False))

    def __repr__(self):
        return str(self)

    def __str__(self):
        lines = [
            f"  Complete contraction:  {self.input_subscripts}->{self.output_subscript}",
            f"         Naive scaling:  {self.naive_scaling}",
            f"     Optimized scaling:  {max(self.scale_list, default=0)}",
            f"      Naive FLOP count:  {self.naive_cost:.3e}",
            f"  Optimized FLOP count:  {self.opt_cost:.3e} (log10 {self.log10_flops:.3f})",
            f"   Theoretical speedup:  {self.speedup:.3e}",
            f"  Largest intermediate:  {self.largest_intermediate:.3e} elements (log2 {self.log2_size:.2f})",
            f"               Planner:  {self.planner} ({self.planning_seconds * 1e3:.3f} ms)",
            "-" * 80,
            f"{'scaling':>8}  {'flops':>10}  contraction",
            "-" * 80,
        ]
        for scale, step in zip(self.scale_list, self.steps):
            eq = f"{''.join(step['lhs'])},{''.join(step['rhs'])}->{''.join(step['result'])}"
            lines.append(f"{scale:>8}  {step['flops']:>10.3e}  {eq}")
        return "\n".join(lines)


def contract_path(subscripts, *operands, optimize="auto", max_intermediate_bytes=None, memory_limit=None,
                  shapes=False):
    """Plans `subscripts` over `operands` (arrays or shape tuples; with
    shapes=True, as in opt_einsum, every operand is a shape) like
    opt_einsum.contract_path: returns (path, PathInfo), the path as a list of
    index pairs in opt_einsum's format (pass it back as optimize=path).
    optimize: "auto" (the default, as in opt_einsum and tenferro.einsum),
    "greedy", "optimal", "treesa", "nested", "left_to_right", opt_einsum's
    names ("dp", "branch-2", "random-greedy", ... run the nearest of
    those), a bool, numpy's (name, memory_limit) pair or an explicit path.
    max_intermediate_bytes / memory_limit (elements, or "max_input"): also
    plan the slicing einsum runs under that bound (Note [Memory limits]; in
    the arrays' result dtype, float64 for shapes).
    """
    subscripts, operands = _subscripts_and_operands(subscripts, operands, "contract_path")
    return _planned("contract_path", subscripts, operands, optimize, max_intermediate_bytes, memory_limit, shapes)


def _planned(who, subscripts, operands, optimize, max_intermediate_bytes=None, memory_limit=None, shapes=False):
    """contract_path's (path, PathInfo) for the function `who` (named in
    errors); subscripts and operands as _subscripts_and_operands gives
    them."""
    arrays = [] if shapes else [op for op in operands if hasattr(op, "dtype")]
    shapes = [_shape_of(op, i, shapes, who) for i, op in enumerate(operands)]
    # The bound is in bytes of the arrays' result dtype (8 bytes an element
    # for shapes alone), as einsum counts it.
    itemsize = _np.result_type(*arrays).itemsize if arrays else 8
    info = PathInfo(_tenferro._plan(subscripts, shapes, optimize, max_intermediate_bytes, memory_limit, who, itemsize),
                    shapes)
    return info.path, info


def einsum_path(subscripts, *operands, optimize="greedy"):
    """numpy.einsum_path's form of contract_path: returns (path, report),
    the path as numpy writes it (["einsum_path", (0, 1), ...], accepted by
    numpy.einsum and tenferro.einsum as optimize=) and the report as a
    string. Operands are arrays, as numpy reads them (a tuple of ints is
    data here, not a shape)."""
    subscripts, operands = _subscripts_and_operands(subscripts, operands, "einsum_path")
    arrays = [op if hasattr(op, "shape") else _np.asarray(op) for op in operands]
    path, info = _planned("einsum_path", subscripts, arrays, optimize)
    return ["einsum_path", *path], str(info)


class ContractExpression(_tenferro._Contraction):
    """An einsum whose path is planned once (opt_einsum's ContractExpression),
    made by contract_expression. Call it with the arrays (the constants
    excluded): ``expr(*arrays, out=None, threads=None, runtime=None,
    dtype=None, casting="safe", order="K", max_intermediate_bytes=None)``,
    with tenferro.einsum's meaning of each. A call parses nothing and plans
    nothing (Note [Contract expressions] in python/src/module.cpp); the
    path stays the one planned for the expression's shapes.

    Attributes: contraction (the subscripts), path (opt_einsum's format),
    path_info (contract_path's PathInfo), shapes, num_args (arrays a call
    takes), constants (their positions), contraction_list.
    """

    def __init__(self, subscripts, shapes, optimize="auto", memory_limit=None, max_intermediate_bytes=None,
                 constants=None):
        subscripts, operands = _subscripts_and_operands(subscripts, shapes, "contract_expression")
        try:
            constants = sorted({_operator.index(position) for position in (constants or ())})
        except TypeError:
            raise TypeError(f"contract_expression: constants must be operand positions (ints), found "
                            f"{list(constants)!r}") from None
        for position in constants:
            if not 0 <= position < len(operands):
                raise OutOfRangeError(
                    f"contract_expression: constant position {position} is not an operand position "
                    f"(expected 0 to {len(operands) - 1})",
                    code="kOutOfRange", canonical="kOutOfRange")
            if not hasattr(operands[position], "shape"):
                raise InvalidArgumentError(
                    f"contract_expression: operand {position} is a constant and must be an array, "
                    f"found {type(operands[position]).__name__}",
                    code="kInvalidArgument", canonical="kInvalidArgument")
        path, info = _planned("contract_expression", subscripts, operands, optimize, max_intermediate_bytes,
                              memory_limit)
        super().__init__(subscripts, path, memory_limit, max_intermediate_bytes,
                         {i: operands[i] for i in constants})
        self.contraction = subscripts
        self.path = path
        self.path_info = info
        self.shapes = [tuple(s) for s in info.shapes]
        self.constants = constants
        self._operands = operands  # shapes and the constant arrays, for pickling
        self._limits = (memory_limit, max_intermediate_bytes)

    def __reduce__(self):
        # Pickled and copied as what made it, with its planned path: the
        # copy runs the same path (constant arrays are pickled with it).
        memory_limit, max_intermediate_bytes = self._limits
        return (_rebuild_expression,
                (self.contraction, tuple(self._operands), self.path, memory_limit, max_intermediate_bytes,
                 self.constants))

    @property
    def contraction_list(self):
        """opt_einsum's contraction_list of the planned path."""
        return self.path_info.contraction_list

    def __repr__(self):
        if self.constants:
            return f"<ContractExpression('{self.contraction}', constants={self.constants})>"
        return f"<ContractExpression('{self.contraction}')>"

    def __str__(self):
        lines = [repr(self)]
        for i, (_, _, eq, _, _) in enumerate(self.contraction_list):
            lines.append(f"  {i + 1}.  '{eq}'")
        return "\n".join(lines)


def _rebuild_expression(subscripts, operands, path, memory_limit, max_intermediate_bytes, constants):
    return ContractExpression(subscripts, operands, optimize=path, memory_limit=memory_limit,
                              max_intermediate_bytes=max_intermediate_bytes, constants=constants)


def contract_expression(subscripts, *shapes, optimize="auto", memory_limit=None, max_intermediate_bytes=None,
                        constants=None):
    """Like opt_einsum.contract_expression: plans `subscripts` once for
    `shapes` (shape tuples, or arrays) and returns a ContractExpression to
    call with arrays of those shapes, as many times as needed::

        expr = tenferro.contract_expression("ab,bc,cd->ad", (8, 64), (64, 64), (64, 8))
        for a, b, c in batches:
            out = expr(a, b, c)

    optimize / memory_limit / max_intermediate_bytes: as in contract_path
    and einsum, fixed for every call. constants: positions whose entry in
    `shapes` is an array that the expression keeps (held, not copied); a
    call then passes only the other arrays, in order. Unlike opt_einsum,
    constant sub-networks are not contracted ahead of the calls.
    """
    return ContractExpression(subscripts, shapes, optimize=optimize, memory_limit=memory_limit,
                              max_intermediate_bytes=max_intermediate_bytes, constants=constants)


def einsum_vjp(subscripts, *operands, cotangent=None, optimize=None, threads=None, runtime=None):
    """Gradients of einsum(subscripts, *operands) pulled back from
    `cotangent` (the output's shape): one array per operand, as
    torch.autograd.grad(einsum(...), operands, cotangent) computes them
    (complex operands: the conjugate-Wirtinger convention PyTorch uses).
    The cotangent is the last positional argument unless given as
    cotangent=. Takes einsum's sublist form too
    (einsum_vjp(a, [0, 1], b, [1, 2], [0, 2], cotangent)). Each gradient
    has its operand's dtype (a real operand of a complex einsum gets the
    real part); integer operands get the einsum's computed dtype.
    """
    if cotangent is None:
        if not operands:
            raise InvalidArgumentError(
                "einsum_vjp: expected the operands and a cotangent",
                code="kInvalidArgument",
                canonical="kInvalidArgument",
            )
        operands, cotangent = operands[:-1], operands[-1]
    subscripts, operands = _subscripts_and_operands(subscripts, operands, "einsum_vjp")
    if any(isinstance(v, Traced) for v in (*operands, cotangent)):
        # Inside tenferro.grad: the pullback of a nested vjp, recorded on the
        # enclosing tape and so differentiable again.
        options = {} if optimize is None else {"optimize": optimize}
        _, pullback = vjp(lambda *ops: einsum(subscripts, *ops, **options), *operands, runtime=runtime)
        return pullback(cotangent)
    return _tenferro._einsum_vjp(runtime, threads, subscripts, list(operands), cotangent, optimize)


# --- define-by-run gradients (docs/python.md, "Gradients") ---

_traced._install()


# The tapes whose functions are running on this thread, innermost last: a
# tenferro.grad called inside another's function nests its tape in the
# innermost one (Note [Nested Traced values], python/src/tape.cpp), also
# when only a value the function closes over is traced, as in jax.
_running = _threading.local()


def _run(tape, fun, *args, **kwargs):
    """fun(*args, **kwargs) with `tape` the innermost running tape; the tape
    is closed when fun returns, so that a Traced value used after its call
    is an error instead of a recording that nothing reads (and that grows)."""
    stack = _running.__dict__.setdefault("tapes", [])
    stack.append(tape)
    try:
        out = fun(*args, **kwargs)
        if not tape.jit and tape.nested:  # index guards, to the enclosing recording (Note [Traced indices])
            for lo, hi, n, axis in getattr(tape, "guards", ()):
                _traced._index_guard(tape.value_onto(lo), tape.value_onto(hi), n, axis)
        return out
    finally:
        stack.pop()
        tape.close()


from . import _jit as _jit_module  # noqa: E402 (it uses _run and _running)
from ._jit import jit, vmap  # noqa: E402


# Note [Differentiated containers]
# grad, value_and_grad, vjp, jvp and hvp take a differentiated argument that
# is a tuple, named tuple, list or dict, nested (the containers jit and vmap
# flatten, Note [Jit signatures]), as jax takes a pytree: each leaf is a
# variable of its own, fun receives the container with Traced leaves, and
# the gradient (vjp's gradients, hvp's products) comes back in the same
# structure; jvp's tangents and hvp's vectors have the primal's structure
# (None: zeros for the whole primal). Before, numpy read the container as
# one array: equal-shaped leaves were stacked, so fun saw one (2, n) array
# where it indexed a pair (`p + p` concatenated nothing and gave another
# value), and other containers failed with numpy's messages. jacobian and
# hessian, whose results are blocks per pair of arguments, refuse a
# container with an InvalidArgumentError naming it rather than stack it.


def _tree(value, leaves, where):
    """The structure of a differentiated argument (Note [Differentiated
    containers]) in _jit._rebuild's form, its leaves appended to `leaves`
    as (value, where it is, for messages)."""
    t = type(value)
    if t is list or t is tuple or (isinstance(value, tuple) and hasattr(t, "_make")):
        return (t, tuple(_tree(v, leaves, f"{where}[{i}]") for i, v in enumerate(value)))
    if t is dict:
        return (dict, tuple((k, _tree(v, leaves, f"{where}[{k!r}]")) for k, v in value.items()))
    leaves.append((value, where))
    return ("a",)


def _per_primal(trees, flat):
    """The values `flat` (one per leaf, in order) in the primals' structures."""
    it = iter(flat)
    return [_jit_module._rebuild(tree, it) for tree in trees]


def _start(primals, runtime, what, positions=None):
    """A tape, the leaves of the primals as its variables (Note
    [Differentiated containers]) and each primal's structure; `positions`
    name the primals' argument positions in errors (default 0, 1, ...)."""
    leaves, trees = [], []
    for k, p in enumerate(primals):
        trees.append(_tree(p, leaves, f"argument {k if positions is None else positions[k]}"))
    rt = default_runtime() if runtime is None else runtime
    # Inside another call's function (grad of grad) the tape is nested in
    # the innermost running one or in that of a Traced primal; its results
    # are recorded there.
    stack = getattr(_running, "tapes", None)
    tape = _tenferro._tape_for(rt, [v for v, _ in leaves], stack[-1] if stack else None)
    xs = []
    for value, where in leaves:
        try:
            xs.append(tape.variable(value))
        except DTypeError as e:
            raise DTypeError(
                f"{what}: {where}: expected a float32, float64, complex64 or complex128 array to "
                f"differentiate, found {getattr(_np.asarray(value), 'dtype', type(value).__name__)} (convert it, "
                f"e.g. x.astype(float), or leave it out of the differentiated arguments)",
                code=e.code, canonical=e.canonical, stage=e.stage) from None
    return tape, xs, trees


def _matched(trees, given, xs, who, what):
    """jvp's tangents or hvp's vectors (`what`), one per primal in its
    structure (Note [Differentiated containers]), as one per variable
    (None: zero). A tangent with a dtype (an array, a numpy scalar, a
    Traced value) must have its primal's, as in jax (a silent cast would
    hide a float32 tangent of a float64 primal, or an integer one); Python
    numbers and nested lists are cast to it, as weak scalars are."""
    if len(given) != len(trees):
        raise InvalidArgumentError(f"{who}: expected one {what} per primal ({len(trees)}), found {len(given)}",
                                   code="kInvalidArgument", canonical="kInvalidArgument")
    flat, variables = [], iter(xs)

    def match(tree, value, where):
        kind = tree[0]
        if kind == "a":
            x = next(variables)
            if value is not None and isinstance(value, (_np.ndarray, _np.generic, Traced)):
                dtype = _np.dtype(value.dtype)
                if dtype != _np.dtype(x.dtype):
                    real = "real " if dtype.kind == "c" and _np.dtype(x.dtype).kind != "c" else ""
                    raise DTypeError(f"{who}: {what} {where}: expected a {real}{what} of the primal's dtype "
                                     f"{_np.dtype(x.dtype)}, found {dtype} (convert it with .astype)",
                                     code="kDTypeMismatch", canonical="kInvalidArgument")
            flat.append(value)
            return
        items = tree[1]
        if value is None:  # zeros for every leaf
            for item in items:
                match(item[1] if kind is dict else item, None, where)
            return
        if kind is dict:
            if type(value) is not dict or list(value) != [k for k, _ in items]:
                raise InvalidArgumentError(f"{who}: {what} {where}: expected a dict with the primal's keys "
                                           f"{[k for k, _ in items]}, found {_found(value)}",
                                           code="kInvalidArgument", canonical="kInvalidArgument")
            for k, item in items:
                match(item, value[k], f"{where}[{k!r}]")
            return
        if not isinstance(value, (tuple, list)) or len(value) != len(items):
            raise InvalidArgumentError(f"{who}: {what} {where}: expected a {kind.__name__} of {len(items)} like its "
                                       f"primal, found {_found(value)}", code="kInvalidArgument",
                                       canonical="kInvalidArgument")
        for i, (item, v) in enumerate(zip(items, value)):
            match(item, v, f"{where}[{i}]")

    for k, (tree, value) in enumerate(zip(trees, given)):
        match(tree, value, str(k))
    return flat


def _zeros_if_none(g, like):
    return _np.zeros(like.shape, dtype=like.dtype) if g is None else g


def _found(out):
    """What a function returned, for messages."""
    if isinstance(out, (tuple, list, dict)):
        return f"a {type(out).__name__} of {len(out)} value{'' if len(out) == 1 else 's'}"
    if isinstance(out, (Traced, _np.ndarray)):
        return f"an array of shape {tuple(out.shape)} and dtype {out.dtype}"
    return f"a {type(out).__name__}"


def _traced_output(tape, out, who, scalar=False):
    """fun's output as a Traced value (a real scalar one with `scalar`;
    InvalidArgumentError naming what fun returned otherwise). A plain number
    or array computed without the arguments (a constant function) becomes a
    constant of `tape`: its derivatives are zeros, as jax gives them (also
    for a piecewise constant function, whose comparisons and bool() are
    control flow). A plain one returned after a floating or complex value
    was read (float(), .item(), .numpy(), a math function) was taken off
    the tape: an error, as in jax, since its derivative would silently be
    zero.
    An integer or bool output has no derivative: a DTypeError, as an
    integer output among several is (return it as aux)."""
    if not isinstance(out, (Traced, tuple, list, dict)):
        try:
            value = _np.asarray(out)
        except Exception:  # noqa: BLE001 (anything numpy cannot read: named below)
            value = None
        if value is not None and value.dtype.kind in "biufc":
            _check_inexact(value.dtype, who)
            if tape.value_escaped:
                raise InvalidArgumentError(
                    f"{who}: fun returned a plain value computed from its traced arguments (float(), .item() or a "
                    f"math function took it off the tape, so its derivative would be zero); return the traced "
                    f"value itself and use numpy functions (np.exp, not math.exp)",
                    code="kInvalidArgument", canonical="kInvalidArgument")
            out = tape.constant(value)
    elif isinstance(out, Traced):
        _check_inexact(_np.dtype(out.dtype), who)
    _check_output(out, who, scalar)
    return out


def _check_inexact(dtype, who):
    if dtype.kind not in "fc":
        raise DTypeError(f"{who}: expected fun to return a floating or complex array, found {dtype} (an integer "
                         f"or bool output has no derivative: return it as aux with has_aux=True)",
                         code="kDTypeMismatch", canonical="kInvalidArgument")


def _check_output(out, who, scalar=False):
    """InvalidArgumentError unless fun returned a Traced value (a real scalar
    one with `scalar`), naming what it returned."""
    if isinstance(out, Traced) and scalar and out.ndim == 0 and out.dtype.kind == "c":
        raise DTypeError(  # jax's TypeError; a DTypeError is an InvalidArgumentError too
            f"{who}: expected fun to return a real scalar, found a {out.dtype} one (differentiate its .real, "
            f"abs(...) ** 2 or another real function of it)", code="kDTypeMismatch", canonical="kInvalidArgument")
    if isinstance(out, Traced) and (not scalar or out.ndim == 0):
        return
    found = _found(out)
    expected = "a real scalar" if scalar else (
        "one array computed from its arguments (tenferro calls and numpy operations on them)")
    raise InvalidArgumentError(f"{who}: expected fun to return {expected}, found {found}",
                               code="kInvalidArgument", canonical="kInvalidArgument")


def _sequences(primals, others, who, name):
    """`primals` and `others` as tuples; a bare array for either is a
    TypeError (its iteration would split it into scalars), as in jax."""
    for value, what in ((primals, "primals"), (others, name)):
        if not isinstance(value, (tuple, list)):
            raise TypeError(f"{who}: expected {what} as a tuple or list (one entry per argument of fun), found "
                            f"{type(value).__name__}; write ({what[:-1]},) for one argument")
    return tuple(primals), tuple(others)


def _split_aux(tape, out, has_aux, who):
    """(fun's output, its auxiliary value): with has_aux (jax's) fun returns
    the pair (output, aux), aux as _aux gives it; without it, aux is None."""
    if not has_aux:
        return out, None
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        raise InvalidArgumentError(f"{who}(has_aux=True): expected fun to return a pair (output, aux), found "
                                   f"{_found(out)}", code="kInvalidArgument", canonical="kInvalidArgument")
    return out[0], _aux(tape, out[1])


class _Outputs:
    """Several outputs of fun (a tuple, list or named tuple of arrays, as
    jax.vjp / jax.jvp take them) as one flat recorded output: each ravelled
    and cast to their common dtype, concatenated (a real output cast to a
    complex one takes the real part of its cotangent, the adjoint of the
    cast). `split` gives the values, tangents or cotangents back in fun's
    structure, each output's own shape and dtype."""

    def __init__(self, outs, who):
        if not outs:
            raise InvalidArgumentError(f"{who}: expected fun to return at least one array, found an empty "
                                       f"{type(outs).__name__}", code="kInvalidArgument", canonical="kInvalidArgument")
        self.kind = type(outs)
        self.shapes, self.dtypes = [], []
        for i, o in enumerate(outs):
            dtype = _np.dtype(o.dtype) if isinstance(o, Traced) else _np.asarray(o).dtype
            if dtype.kind not in "fc":
                raise DTypeError(f"{who}: expected every output of fun to be a floating or complex array, found "
                                 f"{dtype} for output {i} (return it as aux with has_aux=True)",
                                 code="kDTypeMismatch", canonical="kInvalidArgument")
            self.shapes.append(tuple(_np.shape(o)))
            self.dtypes.append(dtype)
        self.dtype = _np.result_type(*self.dtypes)
        self.flat = _np.concatenate([self._ravel(o) for o in outs])

    def _ravel(self, v):
        """v flattened in the common dtype (recorded when it is Traced)."""
        return v.reshape(-1).astype(self.dtype) if isinstance(v, Traced) else _np.ravel(_np.asarray(v, self.dtype))

    def split(self, flat):
        parts, start = [], 0
        for shape, dtype in zip(self.shapes, self.dtypes):
            size = int(_np.prod(shape))
            part = flat[start:start + size].reshape(shape)
            if dtype.kind != "c" and self.dtype.kind == "c":
                part = part.real
            parts.append(part.astype(dtype) if dtype != self.dtype else part)
            start += size
        if hasattr(self.kind, "_fields"):  # a named tuple (SVDResult, ...)
            return self.kind(*parts)
        return self.kind(parts)

    def join(self, cotangents, who):
        """One flat cotangent from one per output (checked as one output's)."""
        if not isinstance(cotangents, (tuple, list)) or len(cotangents) != len(self.shapes):
            raise InvalidArgumentError(f"{who}: expected {len(self.shapes)} cotangents, one per output of fun, found "
                                       f"{_found(cotangents)}", code="kShapeMismatch", canonical="kInvalidArgument")
        flat = []
        for i, (ct, shape, dtype) in enumerate(zip(cotangents, self.shapes, self.dtypes)):
            ct = ct if isinstance(ct, Traced) else _np.asarray(ct)
            if tuple(ct.shape) != shape:
                raise InvalidArgumentError(f"{who}: expected a cotangent of shape {shape} for output {i}, found "
                                           f"{tuple(ct.shape)}", code="kShapeMismatch", canonical="kInvalidArgument")
            if _np.dtype(ct.dtype).kind == "c" and dtype.kind != "c":
                raise DTypeError(f"{who}: expected a real cotangent for fun's real output {i} ({dtype}), found "
                                 f"{ct.dtype}", code="kDTypeMismatch", canonical="kInvalidArgument")
            flat.append(self._ravel(ct))
        return _np.concatenate(flat)


def _flattening(fun, has_aux, who, found):
    """fun, its several outputs (if it returns them) flattened into one
    while it runs (the tape records only then); `found` gets the _Outputs."""

    def several(out):
        return isinstance(out, tuple) or (isinstance(out, list) and any(isinstance(o, Traced) for o in out))

    def run(*xs):
        r = fun(*xs)
        paired = has_aux and isinstance(r, (tuple, list)) and len(r) == 2
        out = r[0] if paired else r
        if has_aux and not paired or not several(out):
            return r
        found.append(_Outputs(out, who))
        return (found[0].flat, r[1]) if paired else found[0].flat

    return run


def vjp(fun, *primals, runtime=None, has_aux=False):
    """Runs fun(*primals) with every primal traced (fun may use tenferro
    calls and numpy operations on the values, docs/python.md) and returns
    (output, vjp_fn): output a numpy array, vjp_fn(ct)
    the tuple of gradients J* ct, one per primal, as torch.autograd.grad
    (output, primals, ct) gives them. vjp_fn may be called repeatedly.
    fun may return several arrays (a tuple, list or named tuple, as jax):
    output has that structure and vjp_fn takes one cotangent per output.
    has_aux (jax's): fun returns (output, aux) and the result is (output,
    vjp_fn, aux)."""
    tape, xs, trees = _start(primals, runtime, "vjp")
    found = []
    out, aux = _split_aux(tape, _run(tape, _flattening(fun, has_aux, "vjp", found), *_per_primal(trees, xs)),
                          has_aux, "vjp")
    several = found[0] if found else None
    out = _traced_output(tape, out, "vjp")
    # One backward at a time: every call resets, seeds and reads the same
    # tape (a pullback shared by threads gave mixed gradients).
    lock = _threading.Lock()

    def vjp_fn(cotangent):
        if several is not None:
            cotangent = several.join(cotangent, "vjp")
        ct = cotangent if isinstance(cotangent, Traced) else _np.asarray(cotangent)
        if ct.shape != out.shape:
            raise InvalidArgumentError(
                f"vjp: expected a cotangent of shape {out.shape}, found {ct.shape}",
                code="kShapeMismatch",
                canonical="kInvalidArgument",
            )
        if ct.dtype.kind == "c" and out.dtype.kind != "c":
            raise DTypeError(
                f"vjp: expected a real cotangent for fun's real output ({out.dtype}), found {ct.dtype}",
                code="kDTypeMismatch",
                canonical="kInvalidArgument",
            )
        if tape.nested:  # recorded on the enclosing tape, which differentiates it again
            return tuple(_per_primal(trees, tape.vjp_onto(out, cotangent)[1:]))
        if not tape.requires_grad(out):  # fun does not depend on its arguments
            return tuple(_per_primal(trees, [_np.zeros(x.shape, x.dtype) for x in xs]))
        with lock:
            tape.zero_grad()
            # J* ct straight from the tape: nothing is recorded, so every call
            # after the first reuses the compiled backward program.
            tape.backward(out, ct)
            return tuple(_per_primal(trees, [_zeros_if_none(tape.grad(x), x) for x in xs]))

    value = tape.value_onto(out) if tape.nested else _jit_module._value(out)
    if several is not None:
        value = several.split(value)
    return (value, vjp_fn, aux) if has_aux else (value, vjp_fn)


def jvp(fun, primals, tangents, runtime=None, has_aux=False):
    """Forward mode: (fun(*primals), J tangents) as jax.jvp and
    torch.func.jvp give them; `primals` and `tangents` are sequences of the
    same length (a tangent of None is zero), `fun` as for vjp (several
    outputs give the output and its tangent in fun's structure). has_aux
    (jax's): fun returns (output, aux) and the result is (output, tangent,
    aux)."""
    primals, tangents = _sequences(primals, tangents, "jvp", "tangents")
    tape, xs, trees = _start(primals, runtime, "jvp")
    tangents = _matched(trees, tangents, xs, "jvp", "tangent")
    found = []
    out, aux = _split_aux(tape, _run(tape, _flattening(fun, has_aux, "jvp", found), *_per_primal(trees, xs)),
                          has_aux, "jvp")
    several = found[0] if found else None
    out = _traced_output(tape, out, "jvp")
    result = tuple(tape.jvp_onto(out, xs, tangents)) if tape.nested else (_jit_module._value(out), tape.jvp(out, xs, tangents))
    if several is not None:
        result = tuple(several.split(r) for r in result)
    return result + (aux,) if has_aux else result


def hvp(fun, primals, vectors, runtime=None):
    """The Hessian of fun's real scalar output times `vectors` (one per
    primal), forward over reverse: one array per primal, as
    torch.autograd.functional.hvp gives it."""
    primals, vectors = _sequences(primals, vectors, "hvp", "vectors")
    tape, xs, trees = _start(primals, runtime, "hvp")
    vectors = _matched(trees, vectors, xs, "hvp", "vector")
    out = _traced_output(tape, _run(tape, fun, *_per_primal(trees, xs)), "hvp", scalar=True)
    products = (tape.hvp_onto if tape.nested else tape.hvp)(out, xs, vectors)
    return tuple(_per_primal(trees, products))


def _aux(tape, value):
    """A function's auxiliary output (has_aux) with every Traced leaf of
    `tape` (in tuples, lists and dicts) as its numpy value, or inside an
    enclosing call (tape.nested) as a Traced value of the enclosing tape,
    so that the enclosing call differentiates through it too, as jax."""
    if isinstance(value, Traced):
        if tape.nested:
            return tape.value_onto(value)
        return value.numpy()
    if isinstance(value, (tuple, list)):
        return type(value)(_aux(tape, v) for v in value)
    if isinstance(value, dict):
        return {k: _aux(tape, v) for k, v in value.items()}
    return value


def _argnums(argnums, who):
    """(whether argnums is one int, argnums as a tuple of ints)."""
    single = not isinstance(argnums, (tuple, list))
    try:
        return single, ((_operator.index(argnums),) if single else tuple(_operator.index(i) for i in argnums))
    except TypeError:
        raise TypeError(f"{who}: expected argnums as an int or a tuple of ints, found {argnums!r}") from None


def _trace_call(fun, args, kwargs, nums, runtime, who, containers=True):
    """Runs fun(*args, **kwargs) with the arguments `nums` traced: (tape,
    the variables (one per leaf, Note [Differentiated containers]), their
    arguments' positions, fun's result, each argument's structure).
    Without `containers`, a container argument is an InvalidArgumentError."""
    for i in nums:
        if not -len(args) <= i < len(args):
            raise InvalidArgumentError(
                f"{who}: argnums {i} is out of range for a call with {len(args)} positional argument"
                f"{'' if len(args) == 1 else 's'}",
                code="kInvalidArgument",
                canonical="kInvalidArgument",
            )
    # One variable per argument, however often argnums names it (a
    # repeated argnums gets the same gradient twice, as torch gives it).
    positions = list(dict.fromkeys(i % len(args) for i in nums))
    if not containers:
        for i in positions:
            if isinstance(args[i], (tuple, list, dict)):
                raise InvalidArgumentError(
                    f"{who}: argument {i}: expected an array to differentiate, found {_found(args[i])} ({who} "
                    f"does not take containers: pass their arrays as separate arguments and name them in "
                    f"argnums, or use tenferro.vjp / tenferro.jvp, which do)",
                    code="kInvalidArgument", canonical="kInvalidArgument")
    tape, xs, trees = _start([args[i] for i in positions], runtime, who, positions)
    traced_args = list(args)
    for i, traced in zip(positions, _per_primal(trees, xs)):
        traced_args[i] = traced
    return tape, xs, positions, _run(tape, fun, *traced_args, **kwargs), trees


def value_and_grad(fun, argnums=0, runtime=None, has_aux=False):
    """A function returning (fun(*args, **kwargs), gradient of fun's real
    scalar output with respect to the positional arguments `argnums` (an
    int or a tuple)); keyword arguments are passed to fun and not
    differentiated. has_aux (jax's): fun returns (value, aux), and the
    result is ((value, aux), gradient), aux's traced values as numpy
    arrays."""

    single, nums = _argnums(argnums, "grad")

    def wrapped(*args, **kwargs):
        tape, xs, positions, out, trees = _trace_call(fun, args, kwargs, nums, runtime, "grad")
        out, aux = _split_aux(tape, out, has_aux, "grad")
        if not has_aux and isinstance(out, (tuple, list, dict)):
            raise InvalidArgumentError(
                f"grad: expected fun to return a real scalar, found {_found(out)} (for fun returning "
                f"(value, aux), pass has_aux=True)", code="kInvalidArgument", canonical="kInvalidArgument")
        out = _traced_output(tape, out, "grad", scalar=True)
        if tape.nested:  # the value and gradients as Traced values of the enclosing tape
            value, *gradients = tape.vjp_onto(out)
            by_variable = {id(x): g for x, g in zip(xs, gradients)}
            grad_of = lambda x: by_variable[id(x)]  # noqa: E731
        elif tape.requires_grad(out):
            tape.backward(out)
            value, grad_of = _jit_module._value(out), tape.grad
        else:  # no dependence on the arguments (a constant, or derivative-0 operations): zeros, as jax
            value, grad_of = _jit_module._value(out), lambda x: None
        of_position = dict(zip(positions, _per_primal(trees, [_zeros_if_none(grad_of(x), x) for x in xs])))
        grads = tuple(of_position[i % len(args)] for i in nums)
        return (value, aux) if has_aux else value, (grads[0] if single else grads)

    return wrapped


def grad(fun, argnums=0, runtime=None, has_aux=False):
    """A function returning the gradient of fun's real scalar output with
    respect to argument `argnums` (an int, or a tuple for several);
    keyword arguments are passed to fun. has_aux (jax's): fun returns
    (value, aux) and the result is (gradient, aux)."""
    vg = value_and_grad(fun, argnums, runtime, has_aux)

    def gradient(*args, **kwargs):
        value, g = vg(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return gradient


def _real_only(out, xs, positions, who):
    """DTypeError unless fun's output and the differentiated arguments are
    real (a Jacobian of complex values needs a convention, jax's
    holomorphic= or torch's conjugates; use vjp / jvp for those)."""
    if out.dtype.kind != "f":
        raise DTypeError(f"{who}: expected fun to return a real floating array, found {out.dtype} (use tenferro.vjp "
                         f"or tenferro.jvp for complex values)", code="kDTypeMismatch", canonical="kInvalidArgument")
    for x, position in zip(xs, positions):
        if x.dtype.kind != "f":
            raise DTypeError(f"{who}: argument {position}: expected a real floating array, found {x.dtype} (use "
                             f"tenferro.vjp or tenferro.jvp for complex values)", code="kDTypeMismatch",
                             canonical="kInvalidArgument")


# Note [Batched Jacobians]
# Outside other transforms, jacobian and hessian remember per argument
# signature (Note [Jit signatures]) which mode a call takes, and from the
# second call of a signature on compute every row or column in one run: a
# tenferro.vmap call of the vjp, jvp or hvp over the unit basis, recorded
# again on every call (Note [Vmap calls]: arrays fun reads from closures or
# objects are read afresh) and run as one program over the basis (Note
# [Batching transform]; the forward pass, which the basis does not change,
# runs once), in chunks whose values take at most kBatchedBytes. The first
# call of a signature, calls inside other transforms, arguments vmap cannot
# key and functions vmap cannot record run one vjp / jvp / hvp per element
# on one tape (a signature whose function could not be batched stays there).
_BATCHED_BYTES = 256 << 20


def _identity(shape, dtype):
    """The unit basis of `shape`: n arrays of `shape` stacked, n its size."""
    n = int(_np.prod(shape))
    return _np.eye(n, dtype=dtype).reshape((n,) + tuple(shape))


class _BatchedDerivatives:
    """The per-signature plans of a jacobian or hessian object (Note
    [Batched Jacobians]); the objects made for one function on the default
    runtime share them (`tenferro.hessian(f)(x)` in a loop makes a new
    object per call)."""

    _of = _weakref.WeakKeyDictionary()  # fun -> {(kind, argnums): _BatchedDerivatives}

    @classmethod
    def shared(cls, fun, kind, nums, runtime):
        if runtime is None:
            try:
                per_fun = cls._of.setdefault(fun, {})
            except TypeError:  # not weakly referenceable
                per_fun = None
            if per_fun is not None:
                if (kind, nums) not in per_fun:
                    per_fun[(kind, nums)] = cls(runtime)
                return per_fun[(kind, nums)]
        return cls(runtime)

    def __init__(self, runtime):
        self.runtime = runtime
        self.plans = _collections.OrderedDict()  # signature -> plan, at most 64 (least recently used dropped)
        self.lock = _threading.Lock()  # one jacobian may be called from several threads
        self.batched_runs = 0

    def plan(self, args, kwargs):
        """(the call's signature or None for the traced path, its plan or None)."""
        if getattr(_running, "tapes", None):
            return None, None
        try:
            key = _jit_module._signature(args, kwargs, lambda k, n: False)[0]
        except (_jit_module._Eager, TypeError):
            return None, None
        with self.lock:
            plan = self.plans.get(key)
            if plan is not None:
                self.plans.move_to_end(key)
        return key, plan

    def remember(self, key, plan):
        with self.lock:
            self.plans[key] = plan
            if len(self.plans) > 64:
                self.plans.popitem(last=False)

    def remember_once(self, key, plan):
        """remember, unless the signature has a plan already (a "traced" one stays)."""
        with self.lock:
            if key in self.plans:
                return
        self.remember(key, plan)

    def mapped(self, key, body, basis, args):
        """vmap of body(v, *args) over the rows of `basis`, or None (and the
        signature marked for the traced path) when it did not run as a batch."""
        result, how = _jit_module._vmap_call(body, (0,) + (None,) * len(args), 0, self.runtime, (basis,) + tuple(args),
                                             {}, _BATCHED_BYTES, examples=False)
        if how == "examples":
            self.remember(key, "traced")
            return None
        self.batched_runs += 1
        return result


def _substituted(args, positions, values):
    """args with the values at `positions`."""
    out = list(args)
    for i, v in zip(positions, values):
        out[i] = v
    return out


def _basis(shape, dtype, k):
    """The k-th unit array of `shape` (row-major order)."""
    e = _np.zeros(int(_np.prod(shape)), dtype=dtype)
    e[k] = 1
    return e.reshape(shape)


# Note [Jacobians of containers]
# fun may return a tuple, named tuple, list or dict of arrays (nested), as
# jax.jacrev and torch.autograd.functional.jacobian allow: the Jacobian is
# then that structure with each leaf's block (leaf.shape + x.shape; a tuple
# of blocks for a tuple of argnums), as jax returns it. It is computed as
# the Jacobian of one flat output, the leaves' values concatenated, so the
# batched program and the traced path stay those of one array; the blocks
# are split off its rows afterwards and keep their leaf's dtype. The
# structure is remembered with the signature's batched plan (a batched run
# replays the program without calling fun).


_UNCALLED = object()  # _flat_output has not run in this call


def _flat_output(out, structure):
    """fun's output as one array (Note [Jacobians of containers]): a
    container's leaves concatenated, its tree and leaf shapes and dtypes put
    in structure.value; a single value unchanged (structure.value None)."""
    if not isinstance(out, (tuple, list, dict)):
        structure.value = None
        return out
    leaves = []
    tree = _tree(out, leaves, "output")
    dtypes = []  # None for a None leaf: an empty subtree, None in the Jacobian (as jax)
    for v, where in leaves:
        dtype = None if v is None else v.dtype if isinstance(v, Traced) else _np.asarray(v).dtype
        if dtype is not None and dtype.kind not in "biufc":
            raise DTypeError(f"jacobian: expected fun's {where} to be an array, found {type(v).__name__}",
                             code="kDTypeMismatch", canonical="kInvalidArgument")
        dtypes.append(dtype)
    structure.value = (tree, [(_np.shape(v), dtype) for (v, _), dtype in zip(leaves, dtypes)])
    values = [_np.reshape(v, (-1,)) for v, _ in leaves if v is not None]
    return _np.concatenate(values) if values else _np.zeros(0)


def _split_output(block, structure, arg_shape):
    """A Jacobian block of the flat output (rows first) as fun's structure
    with one block per leaf."""
    tree, leaves = structure
    parts, start = [], 0
    for shape, dtype in leaves:
        if dtype is None:
            parts.append(None)
            continue
        size = int(_np.prod(shape))
        part = _np.reshape(block[start:start + size], shape + arg_shape)
        parts.append(part if part.dtype == dtype else part.astype(dtype))
        start += size
    return _jit_module._rebuild(tree, iter(parts))


def jacobian(fun, argnums=0, runtime=None):
    """A function returning the Jacobian of fun's output with respect to
    the positional argument `argnums` (an int, or a tuple for several): an
    array of shape ``out.shape + x.shape``, as ``jax.jacrev`` /
    ``jax.jacfwd`` and ``torch.autograd.functional.jacobian`` give it.
    fun may return a (nested) tuple, list or dict of arrays: the Jacobian
    has that structure, one block per leaf (Note [Jacobians of containers]).
    Reverse mode (one vjp per output element) when the output has fewer
    elements than the arguments, else forward mode (one jvp per argument
    element); from the second call of an argument signature on, all of
    them in one batched program (Note [Batched Jacobians]). Real values only;
    keyword arguments are passed to fun. Inside tenferro.grad (and the
    other transforms) the Jacobian is differentiable again."""
    single, nums = _argnums(argnums, "jacobian")
    batched = _BatchedDerivatives.shared(fun, "jacobian", nums, runtime)
    structure = _threading.local()  # fun's output structure in this thread's call

    def flat_fun(*args, **kwargs):
        return _flat_output(fun(*args, **kwargs), structure)

    def jac(*args, **kwargs):
        structure.value = _UNCALLED
        key, plan = batched.plan(args, kwargs)
        result = batched_jacobian(key, plan, args, kwargs) if plan not in (None, "traced") else None
        if result is None:
            result, positions = traced(key, *args, **kwargs)
        else:
            positions = plan[0]
        # A batched run may replay its program without calling fun: the structure its plan recorded.
        tree = structure.value if structure.value is not _UNCALLED else plan[4]
        if tree is not None:
            result = [_split_output(r, tree, _np.shape(args[i])) for r, i in zip(result, positions)]
        of = dict(zip(positions, result))
        picked = tuple(of[i % len(args)] for i in nums)
        if single or tree is None:
            return picked[0] if single else picked
        # one structure of fun's output whose leaves are the tuples of blocks, as jax gives them
        leaves = [[] for _ in picked]
        for k, block in enumerate(picked):
            _tree(block, leaves[k], "")
        return _jit_module._rebuild(tree[0], iter(None if leaves[0][k][0] is None else tuple(b[k][0] for b in leaves)
                                                  for k in range(len(leaves[0]))))

    def batched_jacobian(key, plan, args, kwargs):
        """Every row or column in one batched run (Note [Batched Jacobians]), or None."""
        positions, reverse, out_shape, out_dtype, _ = plan

        def at(a, p):
            return flat_fun(*_substituted(a, positions, p), **kwargs)

        if reverse:
            def pull(ct, *a):
                return tuple(vjp(lambda *p: at(a, p), *[a[i] for i in positions], runtime=runtime)[1](ct))

            rows = batched.mapped(key, pull, _identity(out_shape, out_dtype), args)
            return None if rows is None else [_np.reshape(r, out_shape + _np.shape(args[i]))
                                              for r, i in zip(rows, positions)]
        result = []
        for k, i in enumerate(positions):
            def push(t, *a, k=k):
                tangents = [None] * len(positions)
                tangents[k] = t
                return jvp(lambda *p: at(a, p), tuple(a[j] for j in positions), tangents, runtime=runtime)[1]

            x = _np.asarray(args[i])
            columns = batched.mapped(key, push, _identity(x.shape, x.dtype), args)
            if columns is None:
                return None
            # fun's output shape as this call computed it (it may differ from the plan's)
            result.append(_np.moveaxis(columns, 0, -1).reshape(columns.shape[1:] + x.shape))
        return result

    def traced(key, *args, **kwargs):
        tape, xs, positions, out, _ = _trace_call(flat_fun, args, kwargs, nums, runtime, "jacobian", containers=False)
        out = _traced_output(tape, out, "jacobian")
        _real_only(out, xs, positions, "jacobian")
        n_out = int(_np.prod(out.shape))
        n_in = sum(int(_np.prod(x.shape)) for x in xs)
        if key is not None and not tape.nested and tape.requires_grad(out):
            batched.remember_once(key, (positions, n_out <= n_in, tuple(out.shape), out.dtype, structure.value))
        if n_out <= n_in:  # rows: J^T e_o
            rows = [[] for _ in xs]
            for o in range(n_out):
                ct = _basis(out.shape, out.dtype, o)
                if tape.nested:
                    gs = tape.vjp_onto(out, ct)[1:]
                elif not tape.requires_grad(out):
                    gs = [_np.zeros(x.shape, x.dtype) for x in xs]
                else:
                    tape.zero_grad()
                    tape.backward(out, ct)
                    gs = [_zeros_if_none(tape.grad(x), x) for x in xs]
                for r, g in zip(rows, gs):
                    r.append(g)
            result = [_np.reshape(_np.stack(r), out.shape + x.shape) if r else _np.zeros(out.shape + x.shape, x.dtype)
                      for r, x in zip(rows, xs)]
        else:  # columns: J e_i
            result = []
            for k, x in enumerate(xs):
                columns = []
                for i in range(int(_np.prod(x.shape))):
                    tangents = [None] * len(xs)
                    tangents[k] = _basis(x.shape, x.dtype, i)
                    columns.append(tape.jvp_onto(out, xs, tangents)[1] if tape.nested
                                   else tape.jvp(out, xs, tangents))
                result.append(_np.reshape(_np.stack(columns, axis=-1), out.shape + x.shape) if columns
                              else _np.zeros(out.shape + x.shape, out.dtype))
        return result, positions

    return jac


def hessian(fun, argnums=0, runtime=None):
    """A function returning the Hessian of fun's real scalar output with
    respect to the positional argument `argnums`: an array of shape
    ``x.shape + x.shape``, as ``jax.hessian`` and
    ``torch.autograd.functional.hessian`` give it; for a tuple of argnums,
    the tuple of tuples ``H[i][j]`` of shape ``x_i.shape + x_j.shape``. One
    Hessian-vector product (forward over reverse) per argument element,
    all in one batched program from the second call of an argument
    signature on (Note [Batched Jacobians]). Real values only; keyword arguments are passed to
    fun. Inside tenferro.grad the Hessian is differentiable again."""
    single, nums = _argnums(argnums, "hessian")
    batched = _BatchedDerivatives.shared(fun, "hessian", nums, runtime)

    def hess(*args, **kwargs):
        key, positions = batched.plan(args, kwargs)
        blocks = batched_hessian(key, positions, args, kwargs) if positions not in (None, "traced") else None
        if blocks is None:
            blocks, positions = traced(key, *args, **kwargs)
        at = {p: k for k, p in enumerate(positions)}
        index = [at[i % len(args)] for i in nums]
        if single:
            return blocks[index[0]][index[0]]
        return tuple(tuple(blocks[a][b] for b in index) for a in index)

    def batched_hessian(key, positions, args, kwargs):
        """Every Hessian-vector product in one batched run per argument
        (Note [Batched Jacobians]), or None."""
        blocks = [[None] * len(positions) for _ in positions]
        for j, pj in enumerate(positions):
            def product(v, *a, j=j):
                vectors = [None] * len(positions)  # zeros
                vectors[j] = v
                return tuple(hvp(lambda *p: fun(*_substituted(a, positions, p), **kwargs),
                                 tuple(a[i] for i in positions), vectors, runtime=runtime))

            x = _np.asarray(args[pj])
            columns = batched.mapped(key, product, _identity(x.shape, x.dtype), args)
            if columns is None:
                return None
            for i, pi in enumerate(positions):
                blocks[i][j] = _np.moveaxis(columns[i], 0, -1).reshape(_np.shape(args[pi]) + x.shape)
        return blocks

    def traced(key, *args, **kwargs):
        tape, xs, positions, out, _ = _trace_call(fun, args, kwargs, nums, runtime, "hessian", containers=False)
        out = _traced_output(tape, out, "hessian", scalar=True)
        _real_only(out, xs, positions, "hessian")
        if key is not None and not tape.nested and tape.requires_grad(out):
            batched.remember_once(key, positions)
        blocks = [[None] * len(xs) for _ in xs]  # blocks[i][j]: d2 / dx_i dx_j
        for j, x in enumerate(xs):
            columns = [[] for _ in xs]
            for b in range(int(_np.prod(x.shape))):
                vectors = [None] * len(xs)
                vectors[j] = _basis(x.shape, x.dtype, b)
                hv = (tape.hvp_onto if tape.nested else tape.hvp)(out, xs, vectors)
                for c, h in zip(columns, hv):
                    c.append(h)
            for i, xi in enumerate(xs):
                blocks[i][j] = (_np.reshape(_np.stack(columns[i], axis=-1), xi.shape + x.shape) if columns[i]
                                else _np.zeros(xi.shape + x.shape, out.dtype))
        return blocks, positions

    return hess


def show_config(mode="stdout"):
    """What this tenferro is and which kernels it runs, as ``numpy.show_config``.

    The document of the ``tenferro info`` command: version and build
    (compiler, flags, ``-march`` target), ``kernels`` (the instruction set the
    CPU offers, the ``TENFERRO_CPU_ISA`` cap, and what the native GEMM, layout
    transposes, vector math and integer contractions run: ``avx512``,
    ``avx2`` or ``portable``), the CPU topology and the domains tenferro
    builds on it, the CPU engine's providers for each GEMM choice (native,
    OpenBLAS, BLIS; a missing library says why), the FFT providers, the
    linalg provider table in use and the kernels of the LAPACK provider's
    OpenBLAS (``linalg.lapack``); and a ``python`` section (this module's
    file, numpy's version, whether ``tenferro.mpi`` is built).

    ``mode="stdout"`` prints it as indented text; ``mode="dicts"`` returns
    it as a dict.
    """
    import importlib.util
    import json

    if mode not in ("stdout", "dicts"):
        raise ValueError(f'show_config: expected mode "stdout" or "dicts", found {mode!r}')
    document = json.loads(_tenferro._config())
    document["python"] = {
        "module": _tenferro.__file__,
        "numpy": _np.__version__,
        "mpi_built": importlib.util.find_spec("tenferro._mpi") is not None,
    }
    if mode == "dicts":
        return document
    print(_tenferro._config_text(json.dumps(document)), end="")
    return None


# Note [Runtimes across fork]
# A runtime's worker threads and oneTBB arena slots do not survive fork():
# a child that calls into a runtime another thread of the parent was using
# at fork time blocks forever (the arena's slot belongs to a thread the
# child does not have). In the child the module's runtimes (the default one
# and those of threads=) are set aside -- kept referenced, never used nor
# destroyed, since destroying one would join threads that do not exist --
# and the next call creates new ones, as multiprocessing's fork start
# method needs. So are what was prepared on them: the recordings of every
# tenferro.jit function (_jit._after_fork_in_child) and the shared plans of
# jacobian / hessian; those record again on first use. A tenferro.Runtime
# the program created itself belongs to the parent: create a new one in the
# child.
_pre_fork_runtimes = []


def _after_fork_in_child():
    _pre_fork_runtimes.append((_tenferro._default_runtime, dict(_tenferro._runtimes_by_threads),
                               _BatchedDerivatives._of))
    _tenferro._default_runtime = None
    _tenferro._runtimes_by_threads.clear()
    _BatchedDerivatives._of = _weakref.WeakKeyDictionary()  # plans prepared on the parent's runtimes
    _jit_module._after_fork_in_child()


_os.register_at_fork(after_in_child=_after_fork_in_child)

from . import fft, linalg  # noqa: E402  (need the names above)
