"""tenferro's exceptions: one class per error family, each carrying the
tenferro ErrorCode (``.code``, e.g. ``"kShapeMismatch"``), its canonical
class (``.canonical``), the stage (``.stage``) and the message.

The classes also derive from the builtin exception a numpy user would catch:
ValueError for invalid arguments, TypeError for unsupported dtypes,
numpy.linalg.LinAlgError for singular / non positive definite matrices,
numpy.AxisError (an IndexError and a ValueError) for an axis out of range,
NotImplementedError for unsupported features, MemoryError for exhausted
resources, RuntimeError otherwise.
"""

from numpy import AxisError as _NumpyAxisError
from numpy.linalg import LinAlgError as _NumpyLinAlgError


class Error(Exception):
    """Base class of every tenferro error."""

    def __init__(self, text, code="kUnknown", canonical="kUnknown", stage="none", message=None):
        super().__init__(text)
        self.code = code
        self.canonical = canonical
        self.stage = stage
        self.message = text if message is None else message


class InvalidArgumentError(Error, ValueError):
    """Bad input: subscripts, shapes, operand counts, options."""


class DTypeError(InvalidArgumentError, TypeError):
    """An unsupported or mismatched dtype (code kDTypeMismatch)."""


class LinAlgError(Error, _NumpyLinAlgError):
    """Singular, not positive definite or non-finite input, no convergence."""


class OutOfRangeError(Error, ValueError, IndexError):
    """An axis or size out of range."""


class AxisError(OutOfRangeError, _NumpyAxisError):
    """An axis out of range for the array's dimension (code kAxisOutOfRange);
    ``except numpy.AxisError`` catches it, as numpy's own."""

    def __init__(self, text, code="kAxisOutOfRange", canonical="kOutOfRange", stage="none", message=None):
        super().__init__(text, code=code, canonical=canonical, stage=stage, message=message)


class UnsupportedError(Error, NotImplementedError):
    """Not supported by this build or engine (kUnsupported, kUnimplemented)."""


class ResourceExhaustedError(Error, MemoryError):
    """Memory or a workspace limit exhausted."""


class RuntimeFailure(Error, RuntimeError):
    """Any other failure (preconditions, internal errors)."""


_LINALG_CODES = {"kSingularMatrix", "kNotPositiveDefinite", "kNonFiniteInput", "kNoConvergence"}
_BY_CANONICAL = {
    "kInvalidArgument": InvalidArgumentError,
    "kOutOfRange": OutOfRangeError,
    "kUnsupported": UnsupportedError,
    "kUnimplemented": UnsupportedError,
    "kResourceExhausted": ResourceExhaustedError,
}


def _class_for(code, canonical):
    if code == "kDTypeMismatch":
        return DTypeError
    if code in _LINALG_CODES:
        return LinAlgError
    if code == "kAxisOutOfRange":
        return AxisError
    return _BY_CANONICAL.get(canonical, RuntimeFailure)


def _make(code, canonical, stage, message, text):
    """Builds the exception for a tenferro error (called by the extension)."""
    return _class_for(code, canonical)(text, code=code, canonical=canonical, stage=stage, message=message)
