"""Einsum over MPI ranks (docs/mpi.md, "From Python").

The application owns MPI, as with the C++ library: mpi4py initialises it
(``from mpi4py import MPI``) and finalises it at exit. Each rank builds one
:class:`Communicator` over an mpi4py communicator; its ``einsum`` splits the
contraction over the ranks (slices of an index, or one range of an index per
rank, whichever leaves the busiest rank less work), contracts this rank's
share in its own CPU domain and sums the shares with one allreduce, so
every rank returns the full result::

    from mpi4py import MPI
    import numpy as np
    import tenferro.mpi

    comm = tenferro.mpi.Communicator(MPI.COMM_WORLD, threads=1)
    y = comm.einsum("ab,bc,cd->ad", a, b, c)   # same operands on every rank

Run with ``mpirun -np 4 python3 script.py``. Every method is collective:
every rank must call it, with the same subscripts, shapes, dtype and
options. An error on any rank (a bad operand, an impossible memory bound)
is raised on every rank, as a ``tenferro.Error`` of the failing rank's
code, instead of leaving the others waiting.
"""

from __future__ import annotations

import sys

from . import _errors, _subscripts_and_operands

try:
    from . import _mpi
except ImportError as e:  # built without MPI
    raise ImportError(
        "tenferro.mpi: this tenferro was built without MPI (install libopenmpi-dev and rebuild; "
        "docs/mpi.md)") from e

__all__ = ["Communicator"]


def _fortran_handle(comm):
    if comm is None:
        try:
            from mpi4py import MPI
        except ImportError as e:
            raise ImportError(
                "tenferro.mpi: comm=None means mpi4py's MPI.COMM_WORLD, but mpi4py is not installed "
                "(Debian: python3-mpi4py)") from e
        comm = MPI.COMM_WORLD
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is None or not isinstance(comm, mpi.Comm):
        # Other mpi4py handles (MPI.INFO_NULL, MPI.SUM, a Group) have a
        # py2f too, whose integer names some other communicator.
        raise TypeError(f"tenferro.mpi.Communicator: expected an mpi4py communicator (MPI.Comm), "
                        f"found {type(comm).__name__}")
    if not mpi.Is_initialized() or mpi.Is_finalized():
        return 0  # py2f would abort the job; the constructor reports MPI's state as an error
    if comm != mpi.COMM_NULL and comm.Is_inter():
        raise _errors.InvalidArgumentError(
            "tenferro.mpi.Communicator: expected an intracommunicator, found an intercommunicator "
            "(use its Merge() to contract over both groups)", code="kInvalidArgument", canonical="kInvalidArgument")
    return comm.py2f()


def _call_form(subscripts, operands):
    # numpy's sublist form (einsum(a, [0, 1], b, [1, 2], [0, 2])) as
    # subscripts; what is not a call form goes to the extension as given,
    # whose error is agreed over the ranks.
    try:
        return _subscripts_and_operands(subscripts, operands, "einsum")
    except Exception:  # noqa: BLE001 - reported on every rank by the extension
        return subscripts, operands


class Communicator:
    """One rank's handle for distributed contractions (collective to create).

    ``comm``: an mpi4py communicator (``None``: ``MPI.COMM_WORLD``), which is
    duplicated, so tenferro's messages never mix with the application's.
    ``threads``: CPUs this rank's contraction uses (default 1: one rank per
    core, as ``mpirun`` places ranks). Ranks sharing a node without binding
    take consecutive CPUs.
    """

    def __init__(self, comm=None, *, threads=1):
        self._impl = _mpi.Communicator(_fortran_handle(comm), threads)

    @property
    def rank(self) -> int:
        return self._impl.rank

    @property
    def size(self) -> int:
        return self._impl.size

    @property
    def threads(self) -> int:
        return self._impl.threads

    def einsum(self, subscripts, *operands, optimize="greedy", max_intermediate_bytes=None, root=None,
               check_operands=False):
        """``numpy.einsum(subscripts, *operands)`` computed by all ranks together.

        Every rank passes the same operands. With ``root=None`` every rank
        receives the whole result (an allreduce of the ranks' shares); with
        ``root=r`` only rank ``r`` does (a reduce, as ``mpi4py``'s
        ``comm.reduce(..., root=r)``) and the other ranks return ``None``.
        ``optimize`` chooses the contraction path as in ``tenferro.einsum``
        (a planner name or an explicit path; planning is reproducible, so
        every rank plans the same one). ``max_intermediate_bytes`` bounds the
        largest intermediate of one slice: indices are sliced until it fits,
        and the slices run in sequence on each rank. ``check_operands=True``
        first checks that every rank passes the same operand values (a hash
        of the values in native byte order, with -0.0 as 0.0, and one small
        allreduce): the ranks' shares are summed,
        so different values would give every rank a wrong result.
        """
        subscripts, operands = _call_form(subscripts, operands)
        if check_operands:
            self._check_same_operands(operands)
        return self._impl.einsum(subscripts, tuple(operands), optimize, max_intermediate_bytes, root)

    def plan(self, subscripts, *operands, optimize="greedy", max_intermediate_bytes=None) -> dict:
        """The split ``einsum`` would run, without contracting: ``split``
        (``"range"`` or ``"round_robin"``), ``range_label``, ``ranges`` (0 for
        a round robin), ``sliced_labels``, ``slices`` (this rank's, over its
        ranges), ``flops`` (unsliced), ``rank_flops``,
        ``overhead`` (all ranks' flops over the unsliced), ``speedup_bound``
        (unsliced flops over the busiest rank's), ``work_speedup_bound`` (the
        same counting 16 flops per element each step moves),
        ``slice_max_intermediate_bytes``, ``path`` and ``explain``."""
        subscripts, operands = _call_form(subscripts, operands)
        return self._impl.plan(subscripts, tuple(operands), optimize, max_intermediate_bytes)

    def _check_same_operands(self, operands):
        import hashlib

        import numpy as np

        failure = None
        fingerprint = 0
        try:
            h = hashlib.blake2b(digest_size=8)
            for op in operands:
                # The values, not their bytes: native byte order, and -0.0
                # as 0.0 (x + 0 is +0.0 for either zero).
                a = np.ascontiguousarray(op)
                if not a.dtype.isnative:
                    a = a.astype(a.dtype.newbyteorder("="))
                if a.dtype.kind in "fc":
                    a = a + a.dtype.type(0)
                h.update(f"{a.dtype.str}{a.shape}".encode())
                h.update(a.reshape(-1).view(np.uint8) if a.size else b"")
            fingerprint = int.from_bytes(h.digest(), "little") >> 2
        except Exception as e:  # noqa: BLE001 - agreed below, raised on this rank
            failure = e
        # Agreed: whether a rank failed (2 for a TypeError, which every
        # rank raises as a DTypeError, as einsum does without the check),
        # the lowest failing rank (as size - rank, for max), the values.
        kind = 0 if failure is None else 2 if isinstance(failure, TypeError) else 1
        lowest = self.size - self.rank if failure is not None else 0
        seen = self._impl.allreduce(np.array([kind, lowest, fingerprint, -fingerprint], np.int64), "max")
        if seen[0]:
            cls, code = (_errors.DTypeError, "kDTypeMismatch") if seen[0] == 2 else (_errors.InvalidArgumentError,
                                                                                     "kInvalidArgument")
            failing, cause = (self.size - int(seen[1]), "") if failure is None else (self.rank, f": {failure}")
            raise cls(f"einsum check_operands=True: rank {failing} could not read its operands{cause}", code=code,
                      canonical="kInvalidArgument") from failure
        if seen[2] != -seen[3]:
            raise _errors.InvalidArgumentError(
                "einsum check_operands=True: expected the same operands on every rank, found different values "
                "(the ranks' shares are summed, so each rank must pass the same data)",
                code="kInvalidArgument", canonical="kInvalidArgument")

    # --- collectives on arrays (docs/mpi.md, "From Python") ---
    # Each takes array-likes and returns a new numpy array (the argument is
    # copied once; dtypes bool, int32, int64, float32, float64, complex64,
    # complex128). Every rank must call it; a bad argument on one rank is an
    # error on every rank (that rank's own exception, the others a
    # tenferro.Error of its code), never a wait.

    def allreduce(self, x, op="sum"):
        """The elementwise ``op`` of every rank's ``x``, on every rank
        (``MPI_Allreduce``): ``"sum"``, ``"prod"`` (numeric dtypes),
        ``"max"``, ``"min"`` (integer and floating), ``"land"``, ``"lor"``
        (bool), or mpi4py's ``MPI.SUM``, ``MPI.PROD``, ``MPI.MAX``,
        ``MPI.MIN``, ``MPI.LAND``, ``MPI.LOR``."""
        return self._impl.allreduce(x, op)

    def reduce(self, x, op="sum", root=0):
        """``allreduce``'s result on rank ``root``; ``None`` on the others."""
        return self._impl.reduce(x, op, root)

    def broadcast(self, x, root=0):
        """Rank ``root``'s ``x`` on every rank. The other ranks may pass
        ``None`` (or any array: the root's dtype and shape win)."""
        return self._impl.broadcast(x, root)

    bcast = broadcast

    def allgather(self, x):
        """Every rank's ``x`` (same shape and dtype on every rank) stacked
        along a new first axis in rank order: shape ``(size, *x.shape)``."""
        return self._impl.allgather(x)

    def reduce_scatter(self, x, op="sum"):
        """``x`` of shape ``(size, ...)``: block ``r`` of the elementwise
        reduction over the ranks goes to rank ``r`` (returns ``x.shape[1:]``)."""
        return self._impl.reduce_scatter(x, op)

    def send(self, x, dest, tag=0):
        """Sends ``x`` to rank ``dest`` (blocking; pair with ``recv``)."""
        self._impl.send(x, dest, tag)

    def recv(self, source, shape, dtype, tag=0):
        """Receives an array of ``shape`` and ``dtype`` sent by rank
        ``source``; a sender of another size or dtype is a typed error here."""
        return self._impl.recv(source, shape, dtype, tag)

    def __repr__(self):
        return f"tenferro.mpi.Communicator(rank={self.rank}, size={self.size}, threads={self.threads})"

