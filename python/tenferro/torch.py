"""tenferro's einsum for PyTorch CPU tensors, differentiable by torch.autograd.

``tenferro.torch.einsum(subscripts, *tensors)`` takes and returns
``torch.Tensor`` and takes part in autograd: the forward pass is
``tenferro.einsum`` (N-ary, with path planning) and the backward pass
``tenferro.einsum_vjp`` (PyTorch's conjugate-Wirtinger convention for
complex tensors). Tensors cross without copies: a CPU tensor is read
through ``Tensor.numpy()`` (any strides), the result is wrapped by
``torch.from_numpy`` over tenferro's storage::

    import torch, tenferro.torch

    a = torch.randn(30, 40, dtype=torch.float64, requires_grad=True)
    b = torch.randn(40, 50, dtype=torch.float64, requires_grad=True)
    c = torch.randn(50, 20, dtype=torch.float64)
    y = tenferro.torch.einsum("ab,bc,cd->ad", a, b, c)
    y.sum().backward()          # a.grad, b.grad as torch.einsum gives them

Import it explicitly (``import tenferro.torch``); ``import tenferro`` does
not import torch. CPU tensors of the dtypes numpy has (not bfloat16) are
accepted; other devices raise ``tenferro.UnsupportedError``. Mixed dtypes
promote as torch promotes them (``torch.promote_types``); an integer or
bool sum within one operand is int64 and an ellipsis the output omits is
summed, as in torch.einsum. Gradients of any order: reverse mode
(``backward``, ``create_graph=True`` for second and higher derivatives:
Note [Einsum gradients of any order]) and forward mode
(``torch.autograd.forward_ad`` dual tensors, in any combination with
reverse mode: Note [Tangents by substitution]). functorch transforms
(``vmap``, ``grad``, ``jacrev``, ``jvp``) are not supported and raise
``tenferro.UnsupportedError``.
"""

from __future__ import annotations

import functools as _functools

import numpy as _np
import torch as _torch
import torch.autograd.forward_ad as _forward_ad

from . import _subscripts_and_operands
from . import einsum as _einsum
from . import einsum_vjp as _einsum_vjp
from ._errors import DTypeError, InvalidArgumentError, UnsupportedError

__all__ = ["einsum"]


def _as_array(t, position):
    if not isinstance(t, _torch.Tensor):
        raise InvalidArgumentError(
            f"tenferro.torch.einsum operand {position}: expected a torch.Tensor, found {type(t).__name__}",
            code="kInvalidArgument", canonical="kInvalidArgument")
    try:  # the common case: a dense CPU tensor without autograd or lazy bits
        return t.numpy()
    except (RuntimeError, TypeError):
        pass
    if t.device.type != "cpu":
        raise UnsupportedError(
            f"tenferro.torch.einsum operand {position}: expected a CPU tensor, found one on {t.device} "
            f"(move it with .cpu(); tenferro's Python module runs on the CPU)",
            code="kUnsupported", canonical="kUnsupported")
    if t.layout != _torch.strided:
        raise UnsupportedError(
            f"tenferro.torch.einsum operand {position}: expected a dense (strided) tensor, found layout {t.layout}",
            code="kUnsupported", canonical="kUnsupported")
    try:
        # resolve_conj/resolve_neg copy only when a lazy conjugate or
        # negation bit is set; numpy() then shares the tensor's memory.
        return t.detach().resolve_conj().resolve_neg().numpy()
    except TypeError as e:  # bfloat16 and other dtypes numpy lacks
        raise DTypeError(
            f"tenferro.torch.einsum operand {position}: expected a dtype numpy has, found {t.dtype} ({e})",
            code="kDTypeMismatch", canonical="kInvalidArgument") from None
    except RuntimeError as e:  # functorch's batched tensors have no storage
        raise UnsupportedError(
            f"tenferro.torch.einsum operand {position}: expected a tensor with storage, found one without "
            f"(functorch transforms such as vmap are not supported; torch said: {e})",
            code="kUnsupported", canonical="kUnsupported") from None


def _to_torch(array, like_dtype=None):
    out = _torch.from_numpy(_np.asarray(array))  # a full contraction is a numpy scalar
    if like_dtype is not None and out.dtype != like_dtype:
        if out.is_complex() and not like_dtype.is_complex:
            out = out.real  # a real operand's gradient is the real part (as torch.autograd)
        out = out.to(like_dtype)
    return out


def _aliased(result, tensors, arrays):
    """The tensor of a relabeling einsum's result (Note [Relabeled results
    in torch]), or None when it shares no operand's memory."""
    if len(arrays) != 1:  # only a one-operand einsum is a view (Note [Relabeling einsums are views])
        return None
    result = _np.asarray(result)
    for t, a in zip(tensors, arrays):
        if isinstance(t, _torch.Tensor) and result.size and _np.may_share_memory(result, a):
            if a.__array_interface__["data"][0] != t.data_ptr():  # a resolved copy (conjugate bit): private
                return _to_torch(result.copy())
            item = result.itemsize
            offset = (result.__array_interface__["data"][0] - t.data_ptr()) // item + t.storage_offset()
            return t.detach().as_strided(result.shape, [st // item for st in result.strides], offset)
    return None


# Note [Relabeled results in torch]
# tenferro.einsum returns a numpy view for an einsum that only relabels one
# operand (ij->ji, ii->i), as numpy does. Wrapped by torch.from_numpy it
# would alias the operand without torch knowing: an in-place edit of the
# result would change the operand behind autograd's version checks (a
# gradient computed from the changed values, silently). Without autograd
# the result is therefore the same view made by torch (as_strided of the
# operand: one version counter, as torch.einsum's permute or diagonal
# gives); under autograd a copy (the custom Function's output owns its
# memory).


def _as_dtype_of(g, like):
    """A gradient in its operand's dtype: the real part for a real operand
    of a complex einsum (as torch.autograd), then a cast (both recorded)."""
    if g.is_complex() and not like.is_complex():
        g = g.real
    return g if g.dtype == like.dtype else g.to(like.dtype)


# Note [Einsum gradients of any order]
# einsum is multilinear: with T(ct, x_1..x_n) = <ct, einsum(x)>, operand i's
# gradient V_i(ct, x) = einsum_vjp(x, ct)[i] does not depend on x_i and is
# linear in ct and in every other x_j (conjugate-linear for complex input,
# under torch's convention). Its own backward, for a cotangent u of x_i's
# shape, is therefore again an einsum and einsum gradients:
#     d<u, V_i>/d ct  = einsum(x with x_i := u)
#     d<u, V_i>/d x_j = V_j(ct, x with x_i := u)          (j != i)
# (the conjugations of torch's complex convention cancel in both). So the
# backward of _Einsum returns _EinsumGrad nodes when create_graph=True, and
# _EinsumGrad's backward returns _Einsum and _EinsumGrad nodes: derivatives
# of any order, every one computed by tenferro.einsum / einsum_vjp. V_i is
# computed in the einsum's dtype (x_i promoted); _as_dtype_of casts it.
class _EinsumGrad(_torch.autograd.Function):
    @staticmethod
    def forward(ctx, subscripts, options, i, ct, *tensors):
        ctx.subscripts, ctx.options, ctx.i = subscripts, options, i
        ctx.save_for_backward(ct, *tensors)
        ctx.save_for_forward(ct, *tensors)
        arrays = [_as_array(t, k) for k, t in enumerate(tensors)]
        computed = _np.result_type(*arrays, _as_array(ct, "cotangent"))
        arrays[i] = arrays[i].astype(computed, copy=False)  # only its shape and dtype matter
        return _to_torch(_einsum_vjp(subscripts, *arrays, cotangent=_as_array(ct, "cotangent"), **options)[i])

    @staticmethod
    def jvp(ctx, _subscripts, _options, _i, ct_tangent, *tangents):
        # V_i is real-linear in ct and in every x_j, j != i (Note [Einsum
        # gradients of any order]), and does not depend on x_i: its tangent
        # is V_i with each tangent substituted in turn (Note [Tangents by
        # substitution]).
        ct, *tensors = ctx.saved_tensors
        i = ctx.i
        out = None
        if ct_tangent is not None:
            out = _EinsumGrad.apply(ctx.subscripts, ctx.options, i, ct_tangent, *tensors)
        for j, tangent in enumerate(tangents):
            if tangent is None or j == i:
                continue
            term = _EinsumGrad.apply(ctx.subscripts, ctx.options, i, ct, *_substituted(tensors, j, tangent))
            out = term if out is None else out + term
        return out

    @staticmethod
    def backward(ctx, u):
        ct, *tensors = ctx.saved_tensors
        i, n = ctx.i, len(tensors)
        swapped = _substituted(tensors, i, u)
        needed = ctx.needs_input_grad
        ct_grad = None
        if needed[3]:
            ct_grad = _as_dtype_of(_Einsum.apply(ctx.subscripts, ctx.options, *swapped), ct)
        x_grads = [None] * n
        for j in range(n):
            if j != i and needed[4 + j]:
                g = _EinsumGrad.apply(ctx.subscripts, ctx.options, j, ct, *swapped)
                x_grads[j] = _as_dtype_of(g, tensors[j])
        return (None, None, None, ct_grad, *x_grads)


def _substituted(tensors, i, value):
    return [*tensors[:i], value, *tensors[i + 1:]]


def _shape_only(shape, dtype):
    """A stand-in of that shape and dtype holding no memory of its own (one
    element broadcast)."""
    return _torch.zeros((), dtype=dtype).expand(shape)


# Note [Tangents by substitution]
# einsum is linear in each operand, so the output's tangent is the sum over
# operands with a tangent of the einsum with that operand replaced by its
# tangent (real-linear suffices: the gradients V_i are conjugate-linear in
# complex operands). The terms are computed by _Einsum / _EinsumGrad
# themselves, not by numpy: they are torch results that record their own
# backward (reverse over forward: a loss of the tangent differentiates
# into the tangent and the operands) and carry their own tangents (forward
# over forward, forward over reverse). A term is never a view of a tangent
# (a relabeling einsum's result is a copy under autograd), so an in-place
# edit of the output's tangent leaves the input's alone.


class _Einsum(_torch.autograd.Function):
    @staticmethod
    def forward(ctx, subscripts, options, *tensors):
        arrays = [_as_array(t, i) for i, t in enumerate(tensors)]
        ctx.subscripts = subscripts
        ctx.options = options
        # Operand j's values matter to the backward only when another
        # operand needs a gradient (Note [Einsum gradients of any order]):
        # saving it otherwise would make an in-place edit of it after the
        # call a false version-counter error (torch.einsum saves no more).
        needed = ctx.needs_input_grad[2:]
        wanted = [any(need for k, need in enumerate(needed) if k != j) for j in range(len(tensors))]
        # (the others are saved as None, their stand-ins made by the backward)
        ctx.save_for_backward(*[t if want else None for t, want in zip(tensors, wanted)])
        ctx.stand_ins = [None if want else (t.shape, t.dtype) for t, want in zip(tensors, wanted)]
        ctx.save_for_forward(*tensors)
        result = _einsum(subscripts, *arrays, **options)
        if _aliased(result, tensors, arrays) is not None:  # Note [Relabeled results in torch]
            result = _np.array(result)
        return _to_torch(result)

    @staticmethod
    def jvp(ctx, _subscripts, _options, *tangents):
        tensors = ctx.saved_tensors  # Note [Tangents by substitution]
        out = None
        for i, tangent in enumerate(tangents):
            if tangent is None:
                continue
            term = _Einsum.apply(ctx.subscripts, ctx.options, *_substituted(tensors, i, tangent))
            out = term if out is None else out + term
        return out

    @staticmethod
    def backward(ctx, grad):
        tensors = [t if t is not None else _shape_only(*meta) for t, meta in zip(ctx.saved_tensors, ctx.stand_ins)]
        needed = ctx.needs_input_grad[2:]
        if not any(needed):
            return (None, None, *[None] * len(tensors))
        if _torch.is_grad_enabled():  # create_graph=True: Note [Einsum gradients of any order]
            return (None, None, *[
                _as_dtype_of(_EinsumGrad.apply(ctx.subscripts, ctx.options, i, grad, *tensors), t) if need else None
                for i, (t, need) in enumerate(zip(tensors, needed))])
        arrays = [_as_array(t, i) for i, t in enumerate(tensors)]
        grads = _einsum_vjp(ctx.subscripts, *arrays, cotangent=_as_array(grad, "cotangent"), **ctx.options)
        return (None, None, *[_to_torch(g, t.dtype) if need else None for g, t, need in zip(grads, tensors, needed)])


def _has_tangent(operands):
    # A forward-mode dual tensor (torch.autograd.forward_ad) inside a
    # dual_level; outside one no tensor carries a tangent.
    if getattr(_forward_ad, "_current_level", 0) < 0:  # torch's private marker; absent: ask every tensor
        return False
    return any(isinstance(t, _torch.Tensor) and _forward_ad.unpack_dual(t).tangent is not None for t in operands)


def _sums_within_an_operand(subscripts, count):
    """Whether an einsum sums an axis that only one operand has (a label of
    that operand alone, absent from the output): torch.einsum sums it with
    torch.sum, which gives int64 for integer and bool tensors. False for
    subscripts this reading does not follow (tenferro's extensions)."""
    text = subscripts.replace(" ", "")
    if any(c in text for c in "()[]"):
        return False
    inputs, arrow, output = text.partition("->")
    terms = [t.replace("...", "") for t in inputs.split(",")]
    if len(terms) != count:
        return False
    labels = "".join(terms)
    if not arrow:  # implicit output: the labels that occur once
        output = "".join(c for c in set(labels) if labels.count(c) == 1)
    return any(c not in output and sum(c in t for t in terms) == 1 for c in labels)


def _ellipsis_summed(subscripts, operands):
    """torch.einsum's "i...->i": the broadcast axes of an ellipsis the
    output omits are summed (numpy refuses it). The ellipses become fresh
    labels (aligned from the right, as broadcasting aligns them) that the
    output does not name."""
    inputs, arrow, output = subscripts.replace(" ", "").partition("->")
    terms = inputs.split(",")
    if not arrow or "..." in output or "(" in inputs or len(terms) != len(operands):
        return subscripts
    ranks = [len(getattr(t, "shape", ())) - len(term.replace("...", "")) if "..." in term else 0
             for term, t in zip(terms, operands)]
    fresh = [c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in subscripts]
    width = max(ranks)
    if width > len(fresh) or min(ranks) < 0:
        return subscripts  # tenferro.einsum reports it
    labels = "".join(fresh[:width])
    return ",".join(term.replace("...", labels[width - rank:]) for term, rank in zip(terms, ranks)) + "->" + output


def einsum(subscripts, *operands, optimize=None, threads=None, runtime=None):
    """``torch.einsum(subscripts, *operands)`` computed by tenferro (also
    ``einsum(subscripts, [a, b])`` and the sublist form
    ``einsum(a, [0, 1], b, [1, 2], [0, 2])``, as torch.einsum takes them).

    ``operands`` are CPU ``torch.Tensor`` (mixed dtypes are promoted as
    torch promotes them; the gradient of each operand has its dtype).
    ``optimize`` chooses the contraction path as in ``tenferro.einsum``
    (a planner name or an explicit path); ``threads`` and ``runtime`` pick
    the runtime as in ``tenferro.einsum`` (the backward pass runs on the
    same one). The result is a ``torch.Tensor``
    over tenferro's storage (a relabeling of one operand: a torch view of
    it, or a copy under autograd); when an operand requires grad, it carries a
    ``grad_fn`` whose backward runs ``tenferro.einsum_vjp``.
    """
    if isinstance(subscripts, (str, bytes)) and len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])  # torch.einsum(eq, [a, b])
    subscripts, operands = _subscripts_and_operands(subscripts, operands, "tenferro.torch.einsum")
    if "..." in subscripts:
        subscripts = _ellipsis_summed(subscripts, operands)
    tensors = [t for t in operands if isinstance(t, _torch.Tensor)]
    if len({t.dtype for t in tensors}) > 1:  # torch's promotion (int64 with float32: float32), recorded
        dtype = _functools.reduce(_torch.promote_types, (t.dtype for t in tensors))
        operands = [t.to(dtype) if isinstance(t, _torch.Tensor) and t.dtype != dtype else t for t in operands]
    promoted = next((t for t in operands if isinstance(t, _torch.Tensor)), None)
    if promoted is not None and not (promoted.is_floating_point() or promoted.is_complex()) and _sums_within_an_operand(
            subscripts, len(operands)):
        # torch.einsum's int64 (torch.sum of integers and bools), not the
        # input's dtype as numpy's einsum keeps it
        operands = [t.to(_torch.int64) if isinstance(t, _torch.Tensor) else t for t in operands]
    options = {"optimize": optimize, "threads": threads, "runtime": runtime}
    recorded = _torch.is_grad_enabled() and any(isinstance(t, _torch.Tensor) and t.requires_grad for t in operands)
    if not recorded and not _has_tangent(operands):
        arrays = [_as_array(t, i) for i, t in enumerate(operands)]
        result = _einsum(subscripts, *arrays, **options)
        view = _aliased(result, operands, arrays)
        return _to_torch(result) if view is None else view
    try:
        return _Einsum.apply(subscripts, options, *operands)
    except RuntimeError as e:  # torch 1.13's functorch refuses every autograd.Function
        if "functorch" not in str(e):
            raise
        raise UnsupportedError(
            f"tenferro.torch.einsum: functorch transforms (vmap, grad, jacrev, jvp) are not supported; use "
            f"torch.autograd (torch said: {e})", code="kUnsupported", canonical="kUnsupported") from None
