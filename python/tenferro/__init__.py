"""tenferro: tensor-network contraction (N-ary einsum with path planning),
dense linear algebra and automatic differentiation on numpy arrays.

Quick start (docs/python.md)::

    import numpy as np
    import tenferro

    a = np.random.rand(3, 4)
    b = np.random.rand(4, 5)
    c = tenferro.einsum("ij,jk->ik", a, b)        # a numpy array over tenferro's storage
    path, info = tenferro.contract_path("ij,jk,kl->il", a, b, np.random.rand(5, 2))
    u, s, vh = tenferro.linalg.svd(a, full_matrices=False)
    ga, gb = tenferro.einsum_vjp("ij,jk->ik", a, b, np.ones((3, 5)))
"""

from . import _tenferro
from ._errors import (
    DTypeError,
    Error,
    InvalidArgumentError,
    LinAlgError,
    OutOfRangeError,
    ResourceExhaustedError,
    RuntimeFailure,
    UnsupportedError,
)
from ._tenferro import Runtime, default_runtime, einsum

__all__ = [
    "Runtime",
    "default_runtime",
    "einsum",
    "contract_path",
    "PathInfo",
    "einsum_vjp",
    "linalg",
    "Error",
    "InvalidArgumentError",
    "DTypeError",
    "LinAlgError",
    "OutOfRangeError",
    "UnsupportedError",
    "ResourceExhaustedError",
    "RuntimeFailure",
]


def _shape_of(operand, position):
    """The shape of an operand given as an array or as a shape tuple."""
    shape = getattr(operand, "shape", None)
    if shape is not None:
        return [int(d) for d in shape]
    if isinstance(operand, (tuple, list)) and all(isinstance(d, int) for d in operand):
        return [int(d) for d in operand]
    raise InvalidArgumentError(
        f"contract_path operand {position}: expected an array or a shape tuple, found {type(operand).__name__}",
        code="kInvalidArgument",
        canonical="kInvalidArgument",
    )


class PathInfo:
    """What contract_path planned (opt_einsum's PathInfo, tenferro's costs).

    Attributes: path (list of index pairs), eq (canonical subscripts),
    opt_cost / flops (flop count of the path, opt_einsum's convention),
    naive_cost, speedup, log10_flops, largest_intermediate (elements),
    log2_size, multiply_adds, workspace_bytes, planner, planning_seconds,
    steps (one dict per pairwise contraction), explain (tenferro's text).
    """

    def __init__(self, raw):
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
        num_operands = len(raw["operand_labels"])
        # opt_einsum's naive cost: every label's extent multiplied, times
        # (operands - 1), plus one when something is summed.
        inner = raw["num_labels"] > len(raw["output_labels"])
        factor = max(1, num_operands - 1) + (1 if inner else 0)
        self.naive_cost = raw["naive_size"] * factor
        self.speedup = self.naive_cost / max(self.opt_cost, 1.0)
        self.naive_scaling = raw["num_labels"]
        self.scale_list = [len(set(s["lhs"]) | set(s["rhs"])) for s in self.steps]
        self.size_list = [s["result_elements"] for s in self.steps]
        self.input_subscripts = ",".join("".join(labels) for labels in raw["operand_labels"])
        self.output_subscript = "".join(raw["output_labels"])

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


def contract_path(subscripts, *operands, optimize="greedy"):
    """Plans `subscripts` over `operands` (arrays or shape tuples) like
    opt_einsum.contract_path: returns (path, PathInfo), the path as a list of
    index pairs in opt_einsum's format (pass it back as optimize=path).
    optimize: "greedy", "optimal", "treesa", "auto", "nested",
    "left_to_right", a bool, or an explicit path.
    """
    if not isinstance(subscripts, str):
        raise InvalidArgumentError(
            f"contract_path: expected subscripts as a string, found {type(subscripts).__name__}",
            code="kInvalidArgument",
            canonical="kInvalidArgument",
        )
    shapes = [_shape_of(op, i) for i, op in enumerate(operands)]
    info = PathInfo(_tenferro._plan(subscripts, shapes, optimize))
    return info.path, info


def einsum_vjp(subscripts, *operands, cotangent=None, optimize="greedy", threads=None, runtime=None):
    """Gradients of einsum(subscripts, *operands) pulled back from
    `cotangent` (the output's shape): one array per operand, as
    torch.autograd.grad(einsum(...), operands, cotangent) computes them
    (complex operands: the conjugate-Wirtinger convention PyTorch uses).
    The cotangent is the last positional argument unless given as
    cotangent=.
    """
    if cotangent is None:
        if not operands:
            raise InvalidArgumentError(
                "einsum_vjp: expected the operands and a cotangent",
                code="kInvalidArgument",
                canonical="kInvalidArgument",
            )
        operands, cotangent = operands[:-1], operands[-1]
    if not isinstance(subscripts, str):
        raise InvalidArgumentError(
            f"einsum_vjp: expected subscripts as a string, found {type(subscripts).__name__}",
            code="kInvalidArgument",
            canonical="kInvalidArgument",
        )
    return _tenferro._einsum_vjp(runtime, threads, subscripts, list(operands), cotangent, optimize)


from . import linalg  # noqa: E402  (needs the names above)
